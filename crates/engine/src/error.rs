//! The engine's error enum. Each variant maps to one row of the server's code table.

use protocol::RequestError;

use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The request is malformed or breaks a rule (400 `invalid_request`).
    #[error("{0}")]
    InvalidRequest(RequestError),
    /// The model id cannot be served (400 `invalid_model`).
    #[error("{message}")]
    InvalidModel { message: String, param: String },
    /// An MCP server could not be reached or listed when the run started (424
    /// `external_connector_error`).
    #[error("{0}")]
    ExternalConnector(String),
    /// No such response in this project (404 `not_found`).
    #[error("{0}")]
    NotFound(String),
    /// The capability is not built yet (501 `not_implemented`).
    #[error("{0}")]
    NotImplemented(String),
    /// The run has ended and cannot be cancelled (400 `invalid_request`).
    #[error("{0}")]
    NotCancellable(String),
    /// Too many background runs are waiting (429 `request_rate_limit_exceeded`).
    #[error("{0}")]
    QueueFull(String),
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
}

impl From<crate::run::StartError> for EngineError {
    fn from(err: crate::run::StartError) -> Self {
        match err {
            crate::run::StartError::Connector(message) => EngineError::ExternalConnector(message),
            crate::run::StartError::Invalid(err) => EngineError::InvalidRequest(err),
        }
    }
}

impl From<RequestError> for EngineError {
    fn from(err: RequestError) -> Self {
        EngineError::InvalidRequest(err)
    }
}
