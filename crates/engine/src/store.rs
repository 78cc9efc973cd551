//! The storage ports, split by concern. The `store` crate implements them on SQLite.
//!
//! Records carry wire types (`protocol`) because that is what is persisted and served back;
//! secrets are removed by the engine before a record reaches a store.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

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
    /// The first response of this response's `previous_response_id` chain (`None`: itself).
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// What `end_run` indexes with the response: this request's input items and the response's
    /// output items, in their wire form (`item_reference` and `input_items` read them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<StoredItem>,
    /// The OpenAI conversation (`conv_…`) `end_run` appends the response's items to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append_to: Option<String>,
    /// The run's model turns, in the order they ran (stored with the record: no write of
    /// their own; empty until the run ends).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<protocol::listing::ModelTurn>,
    /// `response` already serialized (compact JSON, as `serde_json::to_string` writes it), when
    /// the engine has it: the store writes these bytes instead of serializing the response
    /// again (a run's final response is serialized once for the row, the terminal event and
    /// the HTTP body). Must be `response`'s own JSON; `None` in a record read back.
    #[serde(skip)]
    pub response_json: Option<std::sync::Arc<str>>,
    /// The JSON of `transcript`'s first items, when the engine has it: a continuation's
    /// transcript as the store read it for the response it continues, which a run only
    /// appends to; or, for a transcript that begins with the request's input, those items'
    /// JSON as written for `items`. The store writes these bytes and serializes only the
    /// items after them (a deep turn of a conversation serialized the whole transcript again
    /// at every turn; a stateless client's history was written twice). Must be those items'
    /// JSON; `None` in a record read back.
    #[serde(skip)]
    pub transcript_prefix: Option<TranscriptPrefix>,
}

/// A transcript's first `items` items as a JSON list (`json`), as stored
/// ([`ResponseRecord::transcript_prefix`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptPrefix {
    pub json: std::sync::Arc<str>,
    pub items: usize,
}

/// Whether a stored item came with a request or out of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    Input,
    Output,
}

/// One item as stored: its id and its wire JSON, as text (serialized from the typed item once,
/// when a response is indexed; the store writes and reads these bytes as they are).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredItem {
    pub id: String,
    pub kind: ItemKind,
    pub item: ItemJson,
}

impl StoredItem {
    /// The item's JSON as a value (the item routes and a few look-ups read it so).
    pub fn value(&self) -> serde_json::Value {
        serde_json::from_str(self.item.get()).unwrap_or(serde_json::Value::Null)
    }

    /// The item as an input item: input items as they were, output items as their replay (an
    /// assistant message, a function call, an MCP item). `None` for items that are no input
    /// (built-in tools' results: what the model read of them stays in the response's
    /// transcript).
    pub fn to_input(&self) -> Option<protocol::input::InputItem> {
        serde_json::from_str(self.item.get()).ok()
    }
}

/// An item's JSON text: one JSON value, shared (the store binds these very bytes). Text from
/// outside agentd's own writers is checked ([`ItemJson::parse`], [`ItemJson::of`]); what the
/// engine's item writers produce is taken as it is (checking it again cost a full parse of
/// every item of every request: docs/benchmarks.md, "Issue 18, twenty-seventh pass").
/// (De)serialized as the JSON value itself, as `RawValue` is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemJson(Arc<str>);

impl ItemJson {
    /// `text`, checked to be one JSON value (what a store reads back).
    pub fn parse(text: impl Into<Arc<str>>) -> Result<ItemJson, serde_json::Error> {
        let text = text.into();
        serde_json::from_str::<serde::de::IgnoredAny>(&text)?;
        Ok(ItemJson(text))
    }

    /// `value` written as JSON.
    pub fn of(value: &impl Serialize) -> Result<ItemJson, serde_json::Error> {
        serde_json::to_string(value).map(|text| ItemJson(Arc::from(text)))
    }

    /// Text one of the engine's item writers produced (`to_json`, serde's bytes).
    pub(crate) fn written(text: String) -> ItemJson {
        ItemJson(Arc::from(text))
    }

    pub fn get(&self) -> &str {
        &self.0
    }

    /// The text, shared.
    pub fn text(&self) -> &Arc<str> {
        &self.0
    }
}

impl Serialize for ItemJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw: &serde_json::value::RawValue =
            serde_json::from_str(&self.0).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ItemJson {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(deserializer)?;
        Ok(ItemJson(Arc::from(raw.get())))
    }
}

/// Items are equal when their ids, kinds and JSON values are (whatever the key order or
/// spacing of their text).
impl PartialEq for StoredItem {
    fn eq(&self, other: &StoredItem) -> bool {
        self.id == other.id
            && self.kind == other.kind
            && (self.item.get() == other.item.get() || self.value() == other.value())
    }
}

/// An OpenAI conversation (`/v1/conversations`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationRecord {
    /// `conv_…`.
    pub id: String,
    pub project_id: String,
    /// Unix seconds.
    pub created_at: i64,
    pub metadata: std::collections::BTreeMap<String, String>,
}

/// Stored items and conversations.
#[async_trait::async_trait]
pub trait ItemStore: Send + Sync {
    /// The project's items with these ids (the latest stored of each), in no order.
    async fn find_items(
        &self,
        project_id: &str,
        ids: &[String],
    ) -> Result<Vec<StoredItem>, StoreError>;
    /// A response's items of one kind, in order.
    async fn response_items(
        &self,
        project_id: &str,
        response_id: &str,
        kind: ItemKind,
    ) -> Result<Vec<StoredItem>, StoreError>;
    /// Deletes a response of this project with its events, items, files and job; `false` when
    /// there is none.
    async fn delete_response(&self, project_id: &str, id: &str) -> Result<bool, StoreError>;
    /// Creates a conversation with its first items.
    async fn create_conversation(
        &self,
        record: &ConversationRecord,
        items: &[StoredItem],
    ) -> Result<(), StoreError>;
    async fn get_conversation(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ConversationRecord>, StoreError>;
    /// Replaces a conversation's metadata; `false` when there is none.
    async fn update_conversation(&self, record: &ConversationRecord) -> Result<bool, StoreError>;
    /// Deletes a conversation and its items; `false` when there is none.
    async fn delete_conversation(&self, project_id: &str, id: &str) -> Result<bool, StoreError>;
    /// A conversation's items, in order (empty for an unknown conversation).
    async fn conversation_items(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Vec<StoredItem>, StoreError>;
    /// A conversation's items as a run continuing it takes them, in order: each input item,
    /// and each output item as its replay; the rest (built-in tools' results) left out; empty
    /// for an unknown conversation. By default [`ItemStore::conversation_items`], each read
    /// as an input item ([`StoredItem::to_input`]); a store may read each item once instead
    /// of checking it, then reading it again.
    async fn conversation_input(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Vec<protocol::input::InputItem>, StoreError> {
        Ok(self
            .conversation_items(project_id, id)
            .await?
            .iter()
            .filter_map(StoredItem::to_input)
            .collect())
    }
    /// [`ItemStore::conversation_input`], with the items' JSON as a list when the store has it
    /// at hand (as it read them: a run continuing the conversation then takes it as its
    /// record's [`ResponseRecord::transcript_prefix`]). By default without it.
    async fn conversation_input_json(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<(Vec<protocol::input::InputItem>, Option<std::sync::Arc<str>>), StoreError> {
        Ok((self.conversation_input(project_id, id).await?, None))
    }
    /// Appends items to a conversation of this project; `false` when there is none.
    async fn append_conversation_items(
        &self,
        project_id: &str,
        id: &str,
        items: &[StoredItem],
    ) -> Result<bool, StoreError>;
    /// Removes one item of a conversation; `false` when there is no such item.
    async fn delete_conversation_item(
        &self,
        project_id: &str,
        id: &str,
        item_id: &str,
    ) -> Result<bool, StoreError>;
}

impl ResponseRecord {
    /// The conversation this response belongs to.
    pub fn conversation(&self) -> &str {
        self.conversation_id.as_deref().unwrap_or(&self.id)
    }
}

/// What a continuation (`previous_response_id`) takes from the response it continues: no
/// more of the response object than its status and its `mcp` tools.
#[derive(Debug, Clone, PartialEq)]
pub struct ContinuationSource {
    pub status: protocol::response::ResponseStatus,
    /// The response's `mcp` tools, as it echoes them (secrets removed).
    pub mcp_tools: Vec<protocol::request::McpTool>,
    /// The conversation it belongs to ([`ResponseRecord::conversation`]).
    pub conversation: String,
    /// Its continuation transcript ([`ResponseRecord::transcript`]).
    pub transcript: Vec<protocol::input::InputItem>,
    /// `transcript`'s JSON as stored, when the store has it at hand (the continuation's
    /// record then takes it as its [`ResponseRecord::transcript_prefix`]).
    pub transcript_json: Option<std::sync::Arc<str>>,
}

impl From<ResponseRecord> for ContinuationSource {
    fn from(record: ResponseRecord) -> ContinuationSource {
        let conversation = record.conversation().to_owned();
        ContinuationSource {
            status: record.response.status,
            mcp_tools: record
                .response
                .tools
                .into_iter()
                .filter_map(|tool| match tool {
                    protocol::request::Tool::Mcp(mcp) => Some(mcp),
                    _ => None,
                })
                .collect(),
            conversation,
            transcript: record.transcript,
            transcript_json: None,
        }
    }
}

/// A file a response shared (its bytes travel separately).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// `file_…`, unique within the response.
    pub id: String,
    pub response_id: String,
    pub project_id: String,
    pub filename: String,
    pub content_type: String,
    pub bytes: u64,
    /// Unix seconds.
    pub created_at: i64,
}

#[async_trait::async_trait]
pub trait FileStore: Send + Sync {
    async fn put_file(&self, record: &FileRecord, data: &[u8]) -> Result<(), StoreError>;
    /// The files of a response of this project, oldest first.
    async fn list_files(
        &self,
        project_id: &str,
        response_id: &str,
    ) -> Result<Vec<FileRecord>, StoreError>;
    /// Deletes files created before `created_before` (unix seconds); returns how many.
    async fn purge_files(&self, created_before: i64) -> Result<u64, StoreError>;
    /// One file with its bytes.
    async fn get_file(
        &self,
        project_id: &str,
        response_id: &str,
        file_id: &str,
    ) -> Result<Option<(FileRecord, Vec<u8>)>, StoreError>;
}

/// One stored stream event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRecord {
    pub sequence_number: u64,
    /// The complete wire event as one line of JSON, serialized once and shared (not copied) by
    /// the run's event log, its readers (the SSE writer) and the rows written to the store.
    pub data: Arc<str>,
}

#[async_trait::async_trait]
pub trait ResponseStore: Send + Sync {
    /// Insert or replace a response record.
    async fn put_response(&self, record: &ResponseRecord) -> Result<(), StoreError>;
    /// Starts a run that holds a job row, in one transaction: inserts or replaces its first
    /// record and adds its job (a background run's queued job, or, with replicas, a foreground
    /// run's job leased to its process). Neither is ever stored without the other.
    async fn start_run(&self, record: &ResponseRecord, job: &JobRecord) -> Result<(), StoreError>;
    /// Ends a run, in one transaction: inserts or replaces its record, appends the rest of its
    /// event log (the terminal event last), indexes its items, appends them to its OpenAI
    /// conversation (`append_to`) and removes its background job row, if any. The one way every
    /// run ends: foreground, background, and runs ended by crash recovery.
    async fn end_run(
        &self,
        record: &ResponseRecord,
        events: &[EventRecord],
    ) -> Result<(), StoreError>;
    /// [`ResponseStore::end_run`] for a caller done with the record's transcript: a store that
    /// keeps a likely continuation's transcript at hand may take it from the record (leaving
    /// it empty) rather than copy it. Written, the record is otherwise as given.
    async fn end_run_taking_transcript(
        &self,
        record: &mut ResponseRecord,
        events: &[EventRecord],
    ) -> Result<(), StoreError> {
        self.end_run(record, events).await
    }
    /// Fetch a response of this project (hidden ones included; callers check `visible`).
    async fn get_response(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ResponseRecord>, StoreError>;
    /// What a continuation takes from a response of this project (hidden ones included), as
    /// [`ContinuationSource::from`] its [`ResponseStore::get_response`] record. A store may
    /// read less of the response object to answer it.
    async fn continuation_source(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ContinuationSource>, StoreError> {
        Ok(self
            .get_response(project_id, id)
            .await?
            .map(ContinuationSource::from))
    }
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
    /// The engine's count of runs executing now, given once when the engine starts: a store
    /// whose writer can gather the run-path writes of many runs into one transaction may go by
    /// it (a file-backed SQLite store's does, `sqlite_writer.rs`). Ignored by default.
    fn follow_active_runs(&self, _runs: crate::metrics::ActiveRuns) {}
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

/// Where a background job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Waiting for a worker.
    Queued,
    /// Claimed by a worker that holds a lease.
    Running,
}

/// A background run waiting for, or held by, a worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    pub response_id: String,
    pub project_id: String,
    /// What the worker needs to run it (the engine's own JSON; opaque to stores).
    pub payload: String,
    pub state: JobState,
    /// The worker holding the lease (`None` while queued).
    pub lease_owner: Option<String>,
    /// Epoch milliseconds until which the lease holds (0 while queued).
    pub lease_until_ms: i64,
    /// Epoch milliseconds; claims go oldest first.
    pub created_at_ms: i64,
}

/// A claimed job and the state it was in before the claim: a job claimed from `Running` lost
/// its worker (a crash or a stop) and must not simply run again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedJob {
    pub job: JobRecord,
    pub previous_state: JobState,
}

#[async_trait::async_trait]
pub trait JobStore: Send + Sync {
    /// Adds a queued job.
    async fn insert_job(&self, job: &JobRecord) -> Result<(), StoreError>;
    /// Atomically claims the oldest job that is queued or whose lease expired before `now_ms`:
    /// sets it `Running` with `owner` and `lease_until_ms`. Two claimers never get the same job.
    async fn claim_job(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
    ) -> Result<Option<ClaimedJob>, StoreError>;
    /// Claims one given job if it is still queued (used to end a cancelled queued job at once).
    async fn claim_queued_job(
        &self,
        response_id: &str,
        owner: &str,
        lease_until_ms: i64,
    ) -> Result<Option<JobRecord>, StoreError>;
    /// Extends a lease; `false` when `owner` no longer holds the job.
    async fn renew_lease(
        &self,
        response_id: &str,
        owner: &str,
        lease_until_ms: i64,
    ) -> Result<bool, StoreError>;
    /// Removes a finished job.
    async fn delete_job(&self, response_id: &str) -> Result<(), StoreError>;
    /// How many jobs of this project are queued (not yet claimed).
    async fn count_queued(&self, project_id: &str) -> Result<u64, StoreError>;
    /// How many jobs are queued in all projects.
    async fn count_all_queued(&self) -> Result<u64, StoreError>;
    /// Asks whoever holds the running job `response_id` to stop it (a cancel that reached
    /// another replica); `false` when no running job has this id. Only a store that several
    /// processes share needs it: the default does nothing.
    async fn request_cancel(&self, _response_id: &str) -> Result<bool, StoreError> {
        Ok(false)
    }
    /// The running jobs `owner` holds that someone asked to stop ([`Self::request_cancel`]).
    async fn cancel_requests(&self, _owner: &str) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }
}

#[async_trait::async_trait]
pub trait MaintenanceStore: Send + Sync {
    /// Responses whose status is `queued` or `in_progress` but that no job row holds: runs
    /// whose process died. Only meaningful while no run of this store is executing (start-up).
    async fn orphaned_responses(&self) -> Result<Vec<(String, String)>, StoreError>;
    /// Deletes the event logs of responses created before `created_before` (unix seconds);
    /// returns how many events were deleted.
    async fn purge_events(&self, created_before: i64) -> Result<u64, StoreError>;
}

/// Everything the engine and server need from storage.
pub trait Store:
    ResponseStore + EventStore + KeyStore + JobStore + MaintenanceStore + FileStore + ItemStore
{
}
impl<T: ResponseStore + EventStore + KeyStore + JobStore + MaintenanceStore + FileStore + ItemStore>
    Store for T
{
}

#[cfg(test)]
mod tests {
    use super::ItemJson;

    /// Text from outside is checked to be one JSON value; an item's JSON reads and writes as
    /// that value, not as a string holding it.
    #[test]
    fn item_json_is_one_json_value_and_serializes_as_itself() {
        for bad in ["", "{", "{\"a\":1} {}", "nul", "\"open"] {
            assert!(ItemJson::parse(bad).is_err(), "{bad:?}");
        }
        let item = ItemJson::parse("{\"type\":\"message\",\"content\":\"hé\\n\"}").unwrap();
        let wrapped = serde_json::to_string(&[&item]).unwrap();
        assert_eq!(wrapped, "[{\"type\":\"message\",\"content\":\"hé\\n\"}]");
        let back: Vec<ItemJson> = serde_json::from_str(&wrapped).unwrap();
        assert_eq!(back, [item]);
        assert_eq!(
            ItemJson::of(&serde_json::json!({"b": 1})).unwrap().get(),
            "{\"b\":1}"
        );
        assert!(serde_json::from_str::<ItemJson>("{").is_err());
    }
}
