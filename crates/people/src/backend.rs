//! The back-end port of `people_search`: one search in, [`Person`] records out.

use crate::query::Search;
use crate::record::Person;

/// Why a back end could not answer. Messages never carry keys, passwords or query text.
#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    /// The operator's settings cannot work (a bad base URL, an empty key).
    #[error("invalid people_search configuration: {0}")]
    Config(String),
    /// The network guard refused the destination.
    #[error("refused by the network guard: {0}")]
    Blocked(String),
    /// The request did not get an answer (connect error, timeout, reset).
    #[error("request failed: {0}")]
    Transport(String),
    /// The service refused for its rate limit or quota.
    #[error("rate limited by the service{}", retry(.retry_after))]
    RateLimited { retry_after: Option<u64> },
    /// The service answered with an error status.
    #[error("the service answered HTTP {status}{}", detail(.message))]
    Status { status: u16, message: String },
    /// The answer was not what the service documents.
    #[error("unexpected answer from the service: {0}")]
    Decode(String),
    /// The embedded directory (SQLite) failed.
    #[error("people directory: {0}")]
    Store(String),
    /// The LDAP server failed or refused.
    #[error("LDAP: {0}")]
    Ldap(String),
}

fn detail(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}

fn retry(after: &Option<u64>) -> String {
    match after {
        Some(seconds) => format!(" (retry after {seconds} s)"),
        None => String::new(),
    }
}

/// A people source `people_search` can query.
#[async_trait::async_trait]
pub trait Directory: Send + Sync {
    /// A short name for logs, error texts and `Person::source` (`pdl`, `github`, …).
    fn name(&self) -> &'static str;

    /// Runs one search; at most `search.limit` people, best first.
    async fn search(&self, search: &Search) -> Result<Vec<Person>, DirectoryError>;
}
