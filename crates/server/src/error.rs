//! The single code table: every error of every layer maps to one HTTP status, `type` and
//! message, on the one JSON envelope of spec §6.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use engine::EngineError;
use protocol::RequestError;
use protocol::error::{ErrorBody, ErrorEnvelope};

/// An error answered over HTTP.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error("missing or invalid API key")]
    Unauthorized,
    #[error("request body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    NotImplemented(String),
    #[error("{message}")]
    InvalidQuery { message: String, param: String },
    #[error("{0}")]
    Internal(String),
}

/// What the logging middleware reports about an error answer (never secrets: messages are
/// built from our own text and field names).
#[derive(Debug, Clone)]
pub struct ErrorLog(pub String);

impl ApiError {
    /// (status, type, param, public message). The `Display` text is what gets logged.
    fn parts(&self) -> (StatusCode, &'static str, Option<String>, String) {
        match self {
            ApiError::Engine(EngineError::InvalidRequest(err)) | ApiError::Request(err) => (
                StatusCode::BAD_REQUEST,
                err.kind.unwrap_or("invalid_request"),
                err.param.clone(),
                err.message.clone(),
            ),
            ApiError::Engine(EngineError::InvalidModel { message, param }) => (
                StatusCode::BAD_REQUEST,
                "invalid_model",
                Some(param.clone()),
                message.clone(),
            ),
            ApiError::Engine(EngineError::ExternalConnector(message)) => (
                StatusCode::FAILED_DEPENDENCY,
                "external_connector_error",
                None,
                message.clone(),
            ),
            ApiError::Engine(EngineError::NotFound(message)) | ApiError::NotFound(message) => {
                (StatusCode::NOT_FOUND, "not_found", None, message.clone())
            }
            ApiError::Engine(EngineError::NotImplemented(message))
            | ApiError::NotImplemented(message) => (
                StatusCode::NOT_IMPLEMENTED,
                "not_implemented",
                None,
                message.clone(),
            ),
            ApiError::Engine(EngineError::NotCancellable(message)) => (
                StatusCode::BAD_REQUEST,
                "invalid_request",
                None,
                message.clone(),
            ),
            ApiError::Engine(EngineError::QueueFull(message)) => (
                StatusCode::TOO_MANY_REQUESTS,
                "request_rate_limit_exceeded",
                None,
                message.clone(),
            ),
            ApiError::Engine(EngineError::Internal(_)) | ApiError::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                None,
                "internal error".to_owned(),
            ),
            ApiError::Engine(EngineError::Store(_)) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                None,
                "internal error: the store failed; the request may be retried".to_owned(),
            ),
            ApiError::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                None,
                "missing or invalid API key: send Authorization: Bearer <key>".to_owned(),
            ),
            ApiError::PayloadTooLarge { .. } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                None,
                self.to_string(),
            ),
            ApiError::InvalidQuery { message, param } => (
                StatusCode::BAD_REQUEST,
                "invalid_request",
                Some(param.clone()),
                message.clone(),
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, kind, param, message) = self.parts();
        let body = ErrorEnvelope {
            error: ErrorBody {
                message,
                kind: kind.to_owned(),
                code: status.as_u16(),
                param,
            },
        };
        let mut response = (status, axum::Json(body)).into_response();
        response.extensions_mut().insert(ErrorLog(self.to_string()));
        response
    }
}
