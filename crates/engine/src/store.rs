//! The storage ports, split by concern. The `store` crate implements them on SQLite.
//!
//! Records carry wire types (`protocol`) because that is what is persisted and served back;
//! secrets are removed by the engine before a record reaches a store.

use serde::{Deserialize, Serialize};

/// Errors of any store adapter.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("storage failure: {0}")]
    Backend(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("already exists: {0}")]
    Conflict(String),
}

/// A response with what is needed to continue it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseRecord {
    pub id: String,
    pub project_id: String,
    /// Unix seconds.
    pub created_at: i64,
    /// The caller's `store` flag: `false` hides the response from retrieve (404), but it still
    /// serves as a `previous_response_id` source.
    pub visible: bool,
    /// The response object as served (secrets removed).
    pub response: protocol::response::Response,
    /// The continuation transcript: every item the model saw, in order, ending with this run's
    /// output (instructions excluded: they are per request).
    pub transcript: Vec<protocol::input::InputItem>,
}

/// One stored stream event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRecord {
    pub sequence_number: u64,
    /// The complete wire event as one line of JSON.
    pub data: String,
}

#[async_trait::async_trait]
pub trait ResponseStore: Send + Sync {
    /// Insert or replace a response record.
    async fn put_response(&self, record: &ResponseRecord) -> Result<(), StoreError>;
    /// Fetch a response of this project (hidden ones included; callers check `visible`).
    async fn get_response(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ResponseRecord>, StoreError>;
}

#[async_trait::async_trait]
pub trait EventStore: Send + Sync {
    /// Append events of a run (a batch; sequence numbers increase).
    async fn append_events(
        &self,
        response_id: &str,
        events: &[EventRecord],
    ) -> Result<(), StoreError>;
    /// Events of a run with `sequence_number > after` (all when `after` is `None`), in order.
    async fn events_after(
        &self,
        response_id: &str,
        after: Option<u64>,
    ) -> Result<Vec<EventRecord>, StoreError>;
}

/// An API key as stored: only its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    pub id: String,
    pub project_id: String,
    /// Lower-case hex SHA-256 of the key.
    pub key_hash: String,
    pub created_at: i64,
}

#[async_trait::async_trait]
pub trait KeyStore: Send + Sync {
    /// The id of the project with this name, created when missing.
    async fn ensure_project(&self, name: &str) -> Result<String, StoreError>;
    async fn insert_key(&self, key: &KeyRecord) -> Result<(), StoreError>;
    /// The key with this hash, if any.
    async fn find_key(&self, key_hash: &str) -> Result<Option<KeyRecord>, StoreError>;
    /// Whether any key exists (no key = open mode).
    async fn has_keys(&self) -> Result<bool, StoreError>;
}

/// Everything the engine and server need from storage.
pub trait Store: ResponseStore + EventStore + KeyStore {}
impl<T: ResponseStore + EventStore + KeyStore> Store for T {}
