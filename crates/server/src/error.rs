//! HTTP errors: every error of every layer is a row of the one code table ([`engine::Code`]),
//! answered on the JSON envelope of spec §6. This file only maps a code's status to HTTP.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use engine::{Code, EngineError};
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
    /// Refused for where the request comes from (open mode's web-page guard).
    #[error("{0}")]
    Forbidden(String),
    #[error("request body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("{0}")]
    NotFound(String),
    #[error("the request body did not arrive within {seconds} s")]
    RequestTimeout { seconds: u64 },
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// A path segment that is not what the route takes (not valid UTF-8 once decoded, …).
    #[error("{0}")]
    InvalidPath(String),
    /// An error answer of another layer (an axum rejection, …), put on the envelope with its
    /// status's code.
    #[error("{message}")]
    Other { code: Code, message: String },
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
    /// (code, param, public message). The `Display` text is what gets logged.
    pub(crate) fn parts(&self) -> (Code, Option<String>, String) {
        match self {
            ApiError::Engine(err) => (
                err.code(),
                err.param().map(str::to_owned),
                err.public_message(),
            ),
            ApiError::Request(err) => (
                Code::of_request_kind(err.kind),
                err.param.clone(),
                err.message.clone(),
            ),
            ApiError::Unauthorized => (
                Code::Unauthorized,
                None,
                "missing or invalid API key: send Authorization: Bearer <key>".to_owned(),
            ),
            ApiError::Forbidden(message) => (Code::Forbidden, None, message.clone()),
            ApiError::PayloadTooLarge { .. } => (Code::PayloadTooLarge, None, self.to_string()),
            ApiError::NotFound(message) => (Code::NotFound, None, message.clone()),
            ApiError::RequestTimeout { .. } => (Code::RequestTimeout, None, self.to_string()),
            ApiError::UnsupportedMediaType(message) => {
                (Code::UnsupportedMediaType, None, message.clone())
            }
            ApiError::InvalidPath(message) => (Code::InvalidRequest, None, message.clone()),
            ApiError::Other { code, message } => (*code, None, message.clone()),
            ApiError::NotImplemented(message) => (Code::NotImplemented, None, message.clone()),
            ApiError::InvalidQuery { message, param } => {
                (Code::InvalidRequest, Some(param.clone()), message.clone())
            }
            ApiError::Internal(_) => (Code::Internal, None, "internal error".to_owned()),
        }
    }
}

/// The HTTP status of a code.
pub fn status(code: Code) -> StatusCode {
    StatusCode::from_u16(code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// The code of an error status some other layer answered: the row with that status, else
/// `invalid_request` (4xx) or `internal_error` (5xx).
pub fn code_of_status(status: StatusCode) -> Code {
    let generic = if status.is_server_error() {
        Code::Internal
    } else {
        Code::InvalidRequest
    };
    // The first row with the status is its generic one (e.g. `invalid_request` for 400).
    Code::ALL
        .iter()
        .copied()
        .find(|code| code.status() == status.as_u16())
        .unwrap_or(generic)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (code, param, message) = self.parts();
        let status = status(code);
        let body = ErrorEnvelope {
            error: ErrorBody {
                message,
                kind: code.kind().to_owned(),
                code: status.as_u16(),
                param,
            },
        };
        let mut response = (status, axum::Json(body)).into_response();
        response.extensions_mut().insert(ErrorLog(self.to_string()));
        response
    }
}
