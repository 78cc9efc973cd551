//! The engine's errors: [`EngineError`] for calls that are answered at once (HTTP errors), and
//! [`RunFailure`] for what ends a run `failed` in-band. Both map to one row of [`Code`].

use protocol::RequestError;
use protocol::response::ErrorInfo;

use crate::code::Code;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The request is malformed or breaks a rule (400; `type` from the request error's kind).
    #[error("{0}")]
    InvalidRequest(RequestError),
    /// The model id cannot be served (400 `invalid_model`).
    #[error("{message}")]
    InvalidModel { message: String, param: String },
    /// No such response in this project (404 `not_found`).
    #[error("{0}")]
    NotFound(String),
    /// The key's role may not do this (403 `permission_denied`).
    #[error("{0}")]
    PermissionDenied(String),
    /// The object already exists (409 `conflict`).
    #[error("{0}")]
    Conflict(String),
    /// The capability is not built yet (501 `not_implemented`).
    #[error("{0}")]
    NotImplemented(String),
    /// The run has ended and cannot be cancelled (400 `invalid_request`).
    #[error("{0}")]
    NotCancellable(String),
    /// Too many background runs are waiting (429 `request_rate_limit_exceeded`).
    #[error("{0}")]
    QueueFull(String),
    /// The run failed before the model was asked (MCP discovery, a continuation that does not
    /// fit): a plain request answers it as an HTTP error (spec §8.3).
    #[error("{0}")]
    Run(RunFailure),
    /// Something that should not fail did (500 `internal_error`).
    #[error("{0}")]
    Internal(String),
    /// Storage failed (500 `internal_error`).
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl EngineError {
    pub(crate) fn invalid(param: impl Into<String>, message: impl Into<String>) -> EngineError {
        EngineError::InvalidRequest(RequestError::new(param, message))
    }

    /// The row of the code table this error answers with.
    pub fn code(&self) -> Code {
        match self {
            EngineError::InvalidRequest(err) => Code::of_request_kind(err.kind),
            EngineError::InvalidModel { .. } => Code::InvalidModel,
            EngineError::NotFound(_) => Code::NotFound,
            EngineError::NotImplemented(_) => Code::NotImplemented,
            EngineError::PermissionDenied(_) => Code::PermissionDenied,
            EngineError::Conflict(_) => Code::Conflict,
            EngineError::NotCancellable(_) => Code::InvalidRequest,
            EngineError::QueueFull(_) => Code::RateLimited,
            EngineError::Run(failure) => failure.code,
            EngineError::Internal(_) | EngineError::Store(_) => Code::Internal,
        }
    }

    /// The request field at fault, when one is known.
    pub fn param(&self) -> Option<&str> {
        match self {
            EngineError::InvalidRequest(err) => err.param.as_deref(),
            EngineError::InvalidModel { param, .. } => Some(param),
            EngineError::Run(failure) => failure.param.as_deref(),
            _ => None,
        }
    }

    /// The message answered to the caller. Internal failures answer a fixed text (the details
    /// are logged, never answered).
    pub fn public_message(&self) -> String {
        match self {
            EngineError::Internal(_) => "internal error".to_owned(),
            EngineError::Store(_) => {
                "internal error: the store failed; the request may be retried".to_owned()
            }
            EngineError::InvalidRequest(err) => err.message.clone(),
            EngineError::Run(failure) => failure.message.clone(),
            other => other.to_string(),
        }
    }
}

impl From<RequestError> for EngineError {
    fn from(err: RequestError) -> Self {
        EngineError::InvalidRequest(err)
    }
}

/// Why a run ended `failed`: the code, the message, and (for request problems found when the
/// run started) the field at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct RunFailure {
    pub code: Code,
    pub message: String,
    pub param: Option<String>,
}

impl RunFailure {
    pub fn new(code: Code, message: impl Into<String>) -> RunFailure {
        RunFailure {
            code,
            message: message.into(),
            param: None,
        }
    }

    /// The in-band error object (`response.error`); a param is named in the message.
    pub fn info(&self) -> ErrorInfo {
        self.code.error_info(match &self.param {
            Some(param) => format!("{} (param: {param})", self.message),
            None => self.message.clone(),
        })
    }
}

impl From<RequestError> for RunFailure {
    fn from(err: RequestError) -> Self {
        RunFailure {
            code: Code::of_request_kind(err.kind),
            message: err.message,
            param: err.param,
        }
    }
}

impl From<EngineError> for RunFailure {
    /// A request error found when a background run is planned ends the run with that error.
    fn from(err: EngineError) -> Self {
        match err {
            EngineError::Run(failure) => failure,
            other => RunFailure {
                code: other.code(),
                message: other.public_message(),
                param: other.param().map(str::to_owned),
            },
        }
    }
}
