//! The one error type of this crate: what can go wrong while building the providers.
//!
//! Errors of a running model turn are [`engine::model::ModelError`] (the engine's port type) and
//! errors of resolving a model id are [`engine::model::ResolveError`]; this enum covers only
//! configuration and construction. No variant carries an API key.

/// Why the providers could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ProvidersError {
    /// A provider name is empty or contains a character a model id cannot carry.
    #[error("invalid provider name {0:?}: use letters, digits, '-', '_' or '.'")]
    InvalidProviderName(String),

    /// Two providers have the same name.
    #[error("provider \"{0}\" is configured twice")]
    DuplicateProvider(String),

    /// A base URL is not an absolute `http://` or `https://` URL.
    #[error("provider \"{provider}\": invalid base_url: {reason}")]
    InvalidBaseUrl { provider: String, reason: String },

    /// The API key cannot be sent in an HTTP header (control characters, line breaks…).
    #[error(
        "provider \"{provider}\": the API key contains characters not allowed in an HTTP header"
    )]
    InvalidApiKey { provider: String },

    /// An `api = "…"` value names no known wire API.
    #[error(
        "unknown wire API {0:?}: expected \"chat_completions\", \"responses\", \"anthropic_messages\" or \"gemini\""
    )]
    UnknownWireApi(String),

    /// The HTTP client could not be built (TLS set-up).
    #[error("could not build the HTTP client: {0}")]
    HttpClient(#[source] reqwest::Error),
}
