//! The engine's test harness: the engine over in-memory adapters of its ports, without HTTP.
//!
//! - [`MemoryStore`]: every storage port over one mutex (inspectable by tests);
//! - [`Models`]: a router of scripted models (`fake/<name>`), each answering a queue of turns
//!   and recording the requests it got;
//! - [`FakeMcp`]: MCP servers by URL, with tools, results, failures and a call log;
//! - [`Harness`]: the engine built over them with a [`TokioClock`], so `tokio::time::pause`
//!   controls leases, flushes and timestamps.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use engine::mcp::{McpCallResult, McpConnector, McpError, McpServer, McpSession, McpToolInfo};
use engine::metrics::ActiveRuns;
use engine::model::{
    FinishReason, ModelClient, ModelError, ModelEvent, ModelInfo, ModelRequest, ModelRouter,
    ModelStream, ResolveError, ResolvedModel, TokenUsage,
};
use engine::store::{
    ClaimedJob, ContinuationSource, ConversationRecord, EventRecord, EventStore, FileRecord,
    FileStore, ItemKind, ItemStore, JobRecord, JobState, JobStore, KeyRecord, KeyStore,
    MaintenanceStore, ResponseRecord, ResponseStore, StoreError, StoredItem,
};
use engine::{Engine, EngineConfig, Ports, TokioClock};
use futures::StreamExt as _;
use protocol::request::CreateRequest;
use protocol::response::ResponseStatus;
use serde_json::{Value, json};
use tokio::sync::Notify;

// ---------------------------------------------------------------------------------------------
// Store

#[derive(Default)]
pub struct StoreState {
    pub responses: HashMap<String, ResponseRecord>,
    pub events: HashMap<String, Vec<EventRecord>>,
    pub jobs: BTreeMap<String, JobRecord>,
    pub keys: Vec<KeyRecord>,
    pub projects: HashMap<String, String>,
    pub files: Vec<(FileRecord, Vec<u8>)>,
    /// Indexed items by response: (project, response, item).
    pub items: Vec<(String, String, StoredItem)>,
    pub conversations: HashMap<String, (ConversationRecord, Vec<StoredItem>)>,
    /// How many `append_events` calls (flushes) each response got.
    pub flushes: HashMap<String, usize>,
    /// How many writes of any kind (`put_response`, `append_events`, `end_run`: each a
    /// transaction of its own in a real store) each response got.
    pub writes: HashMap<String, usize>,
    /// When set, those three writes fail (a store that cannot write).
    pub fail_writes: bool,
    /// The engine's count of runs executing, as each `end_run` found it.
    pub runs_at_end: Vec<u64>,
}

impl StoreState {
    /// Counts a write of `id`, or fails it when the store fails writes.
    fn write(&mut self, id: &str) -> Result<(), StoreError> {
        if self.fail_writes {
            return Err(StoreError::Backend("the disk is full".to_owned()));
        }
        *self.writes.entry(id.to_owned()).or_default() += 1;
        Ok(())
    }
}

/// Every storage port in memory.
#[derive(Default)]
pub struct MemoryStore {
    pub state: Mutex<StoreState>,
    /// When set, `end_run` waits for this gate (a slow final write).
    pub end_gate: Mutex<Option<Arc<Notify>>>,
    /// The engine's count of runs executing (`follow_active_runs`).
    pub active_runs: Mutex<Option<ActiveRuns>>,
}

impl MemoryStore {
    pub fn lock(&self) -> std::sync::MutexGuard<'_, StoreState> {
        self.state.lock().unwrap()
    }

    pub fn events_of(&self, id: &str) -> Vec<Value> {
        self.lock()
            .events
            .get(id)
            .map(|events| {
                events
                    .iter()
                    .map(|e| serde_json::from_str(&e.data).unwrap())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn status_of(&self, id: &str) -> Option<ResponseStatus> {
        self.lock().responses.get(id).map(|r| r.response.status)
    }
}

#[async_trait]
impl ResponseStore for MemoryStore {
    async fn put_response(&self, record: &ResponseRecord) -> Result<(), StoreError> {
        let mut state = self.lock();
        state.write(&record.id)?;
        state.responses.insert(record.id.clone(), record.clone());
        Ok(())
    }

    async fn start_run(&self, record: &ResponseRecord, job: &JobRecord) -> Result<(), StoreError> {
        let mut state = self.lock();
        state.write(&record.id)?;
        state.responses.insert(record.id.clone(), record.clone());
        state.jobs.insert(job.response_id.clone(), job.clone());
        Ok(())
    }

    async fn end_run(
        &self,
        record: &ResponseRecord,
        events: &[EventRecord],
    ) -> Result<(), StoreError> {
        let gate = self.end_gate.lock().unwrap().clone();
        if let Some(gate) = gate {
            gate.notified().await;
        }
        let runs = self
            .active_runs
            .lock()
            .unwrap()
            .as_ref()
            .map(ActiveRuns::get);
        let mut state = self.lock();
        state.write(&record.id)?;
        state.runs_at_end.extend(runs);
        state
            .events
            .entry(record.id.clone())
            .or_default()
            .extend_from_slice(events);
        state.responses.insert(record.id.clone(), record.clone());
        state.jobs.remove(&record.id);
        for item in &record.items {
            state
                .items
                .push((record.project_id.clone(), record.id.clone(), item.clone()));
        }
        if let Some(conversation) = &record.append_to
            && let Some((found, items)) = state.conversations.get_mut(conversation)
            && found.project_id == record.project_id
        {
            items.extend(record.items.iter().cloned());
        }
        Ok(())
    }

    async fn get_response(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ResponseRecord>, StoreError> {
        Ok(self
            .lock()
            .responses
            .get(id)
            .filter(|r| r.project_id == project_id)
            .cloned())
    }

    /// With its transcript's JSON at hand, as a real store has it.
    async fn continuation_source(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ContinuationSource>, StoreError> {
        let Some(record) = self.get_response(project_id, id).await? else {
            return Ok(None);
        };
        let json = serde_json::to_string(&record.transcript)
            .map_err(|e| StoreError::Backend(e.to_string()))?;
        let mut source = ContinuationSource::from(record);
        source.transcript_json = Some(json.into());
        Ok(Some(source))
    }
}

#[async_trait]
impl EventStore for MemoryStore {
    async fn append_events(
        &self,
        response_id: &str,
        events: &[EventRecord],
    ) -> Result<(), StoreError> {
        let mut state = self.lock();
        state.write(response_id)?;
        *state.flushes.entry(response_id.to_owned()).or_default() += 1;
        state
            .events
            .entry(response_id.to_owned())
            .or_default()
            .extend_from_slice(events);
        Ok(())
    }

    fn follow_active_runs(&self, runs: ActiveRuns) {
        *self.active_runs.lock().unwrap() = Some(runs);
    }

    async fn events_after(
        &self,
        response_id: &str,
        after: Option<u64>,
    ) -> Result<Vec<EventRecord>, StoreError> {
        Ok(self
            .lock()
            .events
            .get(response_id)
            .map(|events| {
                events
                    .iter()
                    .filter(|e| after.is_none_or(|a| e.sequence_number > a))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default())
    }
}

#[async_trait]
impl KeyStore for MemoryStore {
    async fn ensure_project(&self, name: &str) -> Result<String, StoreError> {
        Ok(self
            .lock()
            .projects
            .entry(name.to_owned())
            .or_insert_with(|| format!("proj_{name}"))
            .clone())
    }

    async fn insert_key(&self, key: &KeyRecord) -> Result<(), StoreError> {
        self.lock().keys.push(key.clone());
        Ok(())
    }

    async fn find_key(&self, key_hash: &str) -> Result<Option<KeyRecord>, StoreError> {
        Ok(self
            .lock()
            .keys
            .iter()
            .find(|k| k.key_hash == key_hash)
            .cloned())
    }

    async fn has_keys(&self) -> Result<bool, StoreError> {
        Ok(!self.lock().keys.is_empty())
    }
}

#[async_trait]
impl JobStore for MemoryStore {
    async fn insert_job(&self, job: &JobRecord) -> Result<(), StoreError> {
        self.lock()
            .jobs
            .insert(job.response_id.clone(), job.clone());
        Ok(())
    }

    async fn claim_job(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
    ) -> Result<Option<ClaimedJob>, StoreError> {
        let mut state = self.lock();
        let candidate = state
            .jobs
            .values()
            .filter(|j| {
                j.state == JobState::Queued
                    || (j.state == JobState::Running && j.lease_until_ms < now_ms)
            })
            .min_by_key(|j| j.created_at_ms)
            .map(|j| j.response_id.clone());
        let Some(id) = candidate else {
            return Ok(None);
        };
        let Some(job) = state.jobs.get_mut(&id) else {
            return Ok(None);
        };
        let previous_state = job.state;
        job.state = JobState::Running;
        job.lease_owner = Some(owner.to_owned());
        job.lease_until_ms = lease_until_ms;
        Ok(Some(ClaimedJob {
            job: job.clone(),
            previous_state,
        }))
    }

    async fn claim_queued_job(
        &self,
        response_id: &str,
        owner: &str,
        lease_until_ms: i64,
    ) -> Result<Option<JobRecord>, StoreError> {
        let mut state = self.lock();
        match state.jobs.get_mut(response_id) {
            Some(job) if job.state == JobState::Queued => {
                job.state = JobState::Running;
                job.lease_owner = Some(owner.to_owned());
                job.lease_until_ms = lease_until_ms;
                Ok(Some(job.clone()))
            }
            _ => Ok(None),
        }
    }

    async fn renew_lease(
        &self,
        response_id: &str,
        owner: &str,
        lease_until_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        match state.jobs.get_mut(response_id) {
            Some(job) if job.lease_owner.as_deref() == Some(owner) => {
                job.lease_until_ms = lease_until_ms;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn delete_job(&self, response_id: &str) -> Result<(), StoreError> {
        self.lock().jobs.remove(response_id);
        Ok(())
    }

    async fn count_queued(&self, project_id: &str) -> Result<u64, StoreError> {
        Ok(self
            .lock()
            .jobs
            .values()
            .filter(|j| j.project_id == project_id && j.state == JobState::Queued)
            .count() as u64)
    }

    async fn count_all_queued(&self) -> Result<u64, StoreError> {
        Ok(self
            .lock()
            .jobs
            .values()
            .filter(|j| j.state == JobState::Queued)
            .count() as u64)
    }
}

#[async_trait]
impl MaintenanceStore for MemoryStore {
    async fn orphaned_responses(&self) -> Result<Vec<(String, String)>, StoreError> {
        let state = self.lock();
        Ok(state
            .responses
            .values()
            .filter(|r| {
                matches!(
                    r.response.status,
                    ResponseStatus::Queued | ResponseStatus::InProgress
                ) && !state.jobs.contains_key(&r.id)
            })
            .map(|r| (r.project_id.clone(), r.id.clone()))
            .collect())
    }

    async fn purge_events(&self, created_before: i64) -> Result<u64, StoreError> {
        let mut state = self.lock();
        let old: Vec<String> = state
            .responses
            .values()
            .filter(|r| r.created_at < created_before)
            .map(|r| r.id.clone())
            .collect();
        let mut purged = 0;
        for id in old {
            purged += state.events.remove(&id).map_or(0, |e| e.len() as u64);
        }
        Ok(purged)
    }
}

#[async_trait]
impl FileStore for MemoryStore {
    async fn put_file(&self, record: &FileRecord, data: &[u8]) -> Result<(), StoreError> {
        self.lock().files.push((record.clone(), data.to_vec()));
        Ok(())
    }

    async fn list_files(
        &self,
        project_id: &str,
        response_id: &str,
    ) -> Result<Vec<FileRecord>, StoreError> {
        Ok(self
            .lock()
            .files
            .iter()
            .filter(|(f, _)| f.project_id == project_id && f.response_id == response_id)
            .map(|(f, _)| f.clone())
            .collect())
    }

    async fn purge_files(&self, created_before: i64) -> Result<u64, StoreError> {
        let mut state = self.lock();
        let before = state.files.len();
        state.files.retain(|(f, _)| f.created_at >= created_before);
        Ok((before - state.files.len()) as u64)
    }

    async fn get_file(
        &self,
        project_id: &str,
        response_id: &str,
        file_id: &str,
    ) -> Result<Option<(FileRecord, Vec<u8>)>, StoreError> {
        Ok(self
            .lock()
            .files
            .iter()
            .find(|(f, _)| {
                f.project_id == project_id && f.response_id == response_id && f.id == file_id
            })
            .cloned())
    }
}

#[async_trait]
impl ItemStore for MemoryStore {
    async fn find_items(
        &self,
        project_id: &str,
        ids: &[String],
    ) -> Result<Vec<StoredItem>, StoreError> {
        let state = self.lock();
        Ok(ids
            .iter()
            .filter_map(|id| {
                state
                    .items
                    .iter()
                    .rev()
                    .find(|(project, _, item)| project == project_id && item.id == *id)
                    .map(|(_, _, item)| item.clone())
            })
            .collect())
    }

    async fn response_items(
        &self,
        project_id: &str,
        response_id: &str,
        kind: ItemKind,
    ) -> Result<Vec<StoredItem>, StoreError> {
        Ok(self
            .lock()
            .items
            .iter()
            .filter(|(p, r, item)| p == project_id && r == response_id && item.kind == kind)
            .map(|(_, _, item)| item.clone())
            .collect())
    }

    async fn delete_response(&self, project_id: &str, id: &str) -> Result<bool, StoreError> {
        let mut state = self.lock();
        if state
            .responses
            .get(id)
            .is_none_or(|r| r.project_id != project_id)
        {
            return Ok(false);
        }
        state.responses.remove(id);
        state.events.remove(id);
        state.items.retain(|(_, r, _)| r != id);
        Ok(true)
    }

    async fn create_conversation(
        &self,
        record: &ConversationRecord,
        items: &[StoredItem],
    ) -> Result<(), StoreError> {
        self.lock()
            .conversations
            .insert(record.id.clone(), (record.clone(), items.to_vec()));
        Ok(())
    }

    async fn get_conversation(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ConversationRecord>, StoreError> {
        Ok(self
            .lock()
            .conversations
            .get(id)
            .filter(|(c, _)| c.project_id == project_id)
            .map(|(c, _)| c.clone()))
    }

    async fn update_conversation(&self, record: &ConversationRecord) -> Result<bool, StoreError> {
        let mut state = self.lock();
        match state.conversations.get_mut(&record.id) {
            Some((c, _)) if c.project_id == record.project_id => {
                *c = record.clone();
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn delete_conversation(&self, project_id: &str, id: &str) -> Result<bool, StoreError> {
        let mut state = self.lock();
        if state
            .conversations
            .get(id)
            .is_some_and(|(c, _)| c.project_id == project_id)
        {
            state.conversations.remove(id);
            return Ok(true);
        }
        Ok(false)
    }

    async fn conversation_items(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Vec<StoredItem>, StoreError> {
        Ok(self
            .lock()
            .conversations
            .get(id)
            .filter(|(c, _)| c.project_id == project_id)
            .map(|(_, items)| items.clone())
            .unwrap_or_default())
    }

    /// With the items' JSON at hand, as a real store has it.
    async fn conversation_input_json(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<(Vec<protocol::input::InputItem>, Option<Arc<str>>), StoreError> {
        let items = self.conversation_input(project_id, id).await?;
        let json = serde_json::to_string(&items).map_err(|e| StoreError::Backend(e.to_string()))?;
        Ok((items, Some(json.into())))
    }

    async fn append_conversation_items(
        &self,
        project_id: &str,
        id: &str,
        items: &[StoredItem],
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        match state.conversations.get_mut(id) {
            Some((c, list)) if c.project_id == project_id => {
                list.extend(items.iter().cloned());
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn delete_conversation_item(
        &self,
        project_id: &str,
        id: &str,
        item_id: &str,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        match state.conversations.get_mut(id) {
            Some((c, list)) if c.project_id == project_id => {
                let before = list.len();
                list.retain(|item| item.id != item_id);
                Ok(list.len() < before)
            }
            _ => Ok(false),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Models

/// One scripted piece of a model turn.
#[derive(Clone)]
pub enum Step {
    Event(ModelEvent),
    /// The stream fails here.
    Fail(ModelError),
    /// Nothing more until the gate opens.
    Wait(Arc<Notify>),
    /// Runs this (a test's look at what the run did so far) when the stream gets here, in the
    /// same poll as the next event.
    Call(Arc<dyn Fn() + Send + Sync>),
}

/// One scripted turn: the stream's pieces, or a failure before any.
#[derive(Clone)]
pub enum Turn {
    Stream(Vec<Step>),
    Refuse(ModelError),
}

impl Turn {
    /// A text answer in two deltas, with usage and a stop.
    pub fn text(text: &str) -> Turn {
        let (a, b) = text.split_at(text.len() / 2);
        Turn::Stream(vec![
            Step::Event(ModelEvent::TextDelta(a.to_owned())),
            Step::Event(ModelEvent::TextDelta(b.to_owned())),
            Step::Event(ModelEvent::Usage(TokenUsage {
                input_tokens: 10,
                output_tokens: 5,
                ..TokenUsage::default()
            })),
            Step::Event(ModelEvent::Finish(FinishReason::Stop)),
        ])
    }

    /// Tool calls `(call id, name, arguments)` in one turn.
    pub fn calls(calls: &[(&str, &str, &str)]) -> Turn {
        let mut steps: Vec<Step> = calls
            .iter()
            .enumerate()
            .map(|(index, (id, name, arguments))| {
                Step::Event(ModelEvent::ToolCallDelta {
                    index,
                    id: Some((*id).to_owned()),
                    name: Some((*name).to_owned()),
                    arguments: (*arguments).to_owned(),
                    thought_signature: None,
                })
            })
            .collect();
        steps.push(Step::Event(ModelEvent::Finish(FinishReason::ToolCalls)));
        Turn::Stream(steps)
    }
}

/// A scripted model: answers its queue of turns in order; records every request.
#[derive(Default)]
pub struct ScriptedModel {
    turns: Mutex<VecDeque<Turn>>,
    pub requests: Mutex<Vec<ModelRequest>>,
}

impl ScriptedModel {
    pub fn push(&self, turn: Turn) {
        self.turns.lock().unwrap().push_back(turn);
    }

    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl ModelClient for ScriptedModel {
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        self.requests.lock().unwrap().push(request);
        let turn = self.turns.lock().unwrap().pop_front();
        let steps = match turn {
            Some(Turn::Stream(steps)) => steps,
            Some(Turn::Refuse(err)) => return Err(err),
            None => {
                return Err(ModelError::Protocol(
                    "the script has no more turns".to_owned(),
                ));
            }
        };
        let stream = futures::stream::unfold(steps.into_iter(), |mut steps| async move {
            loop {
                match steps.next()? {
                    Step::Event(event) => return Some((Ok(event), steps)),
                    Step::Fail(err) => return Some((Err(err), Vec::new().into_iter())),
                    Step::Wait(gate) => gate.notified().await,
                    Step::Call(call) => call(),
                }
            }
        });
        Ok(stream.boxed())
    }
}

/// Routes `fake/<name>` to scripted models (created on first use).
#[derive(Default)]
pub struct Models {
    models: Mutex<HashMap<String, Arc<ScriptedModel>>>,
}

impl Models {
    pub fn get(&self, name: &str) -> Arc<ScriptedModel> {
        self.models
            .lock()
            .unwrap()
            .entry(name.to_owned())
            .or_default()
            .clone()
    }
}

#[async_trait]
impl ModelRouter for Models {
    fn resolve(&self, model_id: &str) -> Result<ResolvedModel, ResolveError> {
        let Some(name) = model_id.strip_prefix("fake/") else {
            return Err(ResolveError::Malformed(model_id.to_owned()));
        };
        Ok(ResolvedModel {
            client: self.get(name),
            upstream_model: name.to_owned(),
        })
    }

    async fn list_models(&self) -> Vec<ModelInfo> {
        Vec::new()
    }
}

// ---------------------------------------------------------------------------------------------
// MCP

/// One fake MCP server.
#[derive(Default)]
pub struct FakeServer {
    pub tools: Vec<McpToolInfo>,
    /// Connecting fails with this error.
    pub refuse: Option<McpError>,
    /// Calls made: (tool, arguments).
    pub calls: Mutex<Vec<(String, Value)>>,
    /// Calls wait for this gate when set.
    pub gate: Option<Arc<Notify>>,
}

impl FakeServer {
    pub fn with_tools(names: &[&str]) -> FakeServer {
        FakeServer {
            tools: names
                .iter()
                .map(|name| tool(name, "does a thing"))
                .collect(),
            ..FakeServer::default()
        }
    }

    pub fn calls(&self) -> Vec<(String, Value)> {
        self.calls.lock().unwrap().clone()
    }
}

pub fn tool(name: &str, description: &str) -> McpToolInfo {
    McpToolInfo {
        name: name.to_owned(),
        description: Some(description.to_owned()),
        input_schema: json!({"type": "object", "properties": {"q": {"type": "string"}}}).into(),
        read_only: Some(true),
    }
}

/// MCP servers by URL.
#[derive(Default)]
pub struct FakeMcp {
    pub servers: Mutex<HashMap<String, Arc<FakeServer>>>,
    /// Every connection asked for, with the credentials it carried.
    pub connects: Mutex<Vec<McpServer>>,
}

impl FakeMcp {
    pub fn add(&self, url: &str, server: FakeServer) -> Arc<FakeServer> {
        let server = Arc::new(server);
        self.servers
            .lock()
            .unwrap()
            .insert(url.to_owned(), server.clone());
        server
    }
}

struct FakeSession(Arc<FakeServer>);

#[async_trait]
impl McpConnector for FakeMcp {
    async fn connect(&self, server: &McpServer) -> Result<Box<dyn McpSession>, McpError> {
        self.connects.lock().unwrap().push(server.clone());
        let found = self.servers.lock().unwrap().get(&server.url).cloned();
        let Some(found) = found else {
            return Err(McpError::Unreachable("connection refused".to_owned()));
        };
        if let Some(err) = &found.refuse {
            return Err(err.clone());
        }
        Ok(Box::new(FakeSession(found)))
    }
}

#[async_trait]
impl McpSession for FakeSession {
    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError> {
        Ok(self.0.tools.clone())
    }

    async fn call_tool(
        &self,
        name: &str,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<McpCallResult, McpError> {
        self.0
            .calls
            .lock()
            .unwrap()
            .push((name.to_owned(), Value::Object(arguments.clone())));
        if let Some(gate) = &self.0.gate {
            gate.notified().await;
        }
        Ok(McpCallResult {
            output: format!("{name} says {}", Value::Object(arguments)),
            is_error: false,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Sealing

/// A sealer for tests: hex of the bytes, bound to the context (no cryptography: the engine's
/// part is what is sealed and when; the `secrets` crate tests the cipher).
pub struct TestSealer;

impl engine::secrets::Sealer for TestSealer {
    fn seal(&self, context: &str, plaintext: &[u8]) -> Result<String, engine::secrets::SealError> {
        let hex: String = plaintext.iter().map(|b| format!("{b:02x}")).collect();
        Ok(format!("sealed:{context}:{hex}"))
    }

    fn open(&self, context: &str, sealed: &str) -> Result<Vec<u8>, engine::secrets::SealError> {
        let hex = sealed
            .strip_prefix(&format!("sealed:{context}:"))
            .ok_or_else(|| engine::secrets::SealError::Broken("wrong context".to_owned()))?;
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| engine::secrets::SealError::Broken("not hex".to_owned()))
    }
}

// ---------------------------------------------------------------------------------------------
// The engine

pub const PROJECT: &str = "proj_test";

/// Built-in tools for the engine's tests: `finance_search` is a [`NumberingTool`].
#[derive(Default)]
pub struct FakeHosted {
    pub numbering: Arc<NumberingTool>,
}

impl engine::hosted::HostedTools for FakeHosted {
    fn build(
        &self,
        _index: usize,
        tool: &protocol::request::Tool,
    ) -> Result<Vec<Arc<dyn engine::hosted::HostedTool>>, engine::hosted::HostedError> {
        Ok(match tool {
            protocol::request::Tool::FinanceSearch(_) => vec![self.numbering.clone()],
            _ => Vec::new(),
        })
    }
}

/// A built-in tool (`finance_search`) whose each call shows the model three numbered results,
/// only the middle one with a page (citable). Records the first number each call was given.
#[derive(Default)]
pub struct NumberingTool {
    pub first_numbers: Mutex<Vec<u64>>,
}

#[async_trait]
impl engine::hosted::HostedTool for NumberingTool {
    fn spec(&self) -> engine::model::ToolSpec {
        engine::model::ToolSpec {
            name: "finance_search".to_owned(),
            description: Some("numbers".to_owned()),
            parameters: json!({"type": "object"}).into(),
            strict: false,
        }
    }

    async fn call(
        &self,
        _arguments: &str,
        context: engine::hosted::CallContext<'_>,
    ) -> engine::hosted::ToolOutcome {
        let first = context.next_source;
        self.first_numbers.lock().unwrap().push(first);
        let page = first + 1;
        let sources = vec![engine::hosted::Source {
            number: page,
            url: format!("https://example.com/{page}"),
            title: format!("result {page}"),
        }];
        engine::hosted::ToolOutcome {
            model_text: format!(
                "[{first}] no page; [{page}] a page; [{}] no page",
                first + 2
            ),
            sources,
            last_number: Some(first + 2),
            ..engine::hosted::ToolOutcome::default()
        }
    }
}

pub struct Harness {
    pub engine: Engine,
    pub store: Arc<MemoryStore>,
    pub models: Arc<Models>,
    pub mcp: Arc<FakeMcp>,
    pub hosted: Arc<FakeHosted>,
    pub clock: TokioClock,
}

impl Harness {
    pub fn new() -> Harness {
        Harness::with_config(EngineConfig::default())
    }

    pub fn with_config(config: EngineConfig) -> Harness {
        Harness::on_store(Arc::new(MemoryStore::default()), config)
    }

    /// An engine without a secret key.
    pub fn without_sealer() -> Harness {
        Harness::build(
            Arc::new(MemoryStore::default()),
            EngineConfig::default(),
            None,
        )
    }

    /// An engine over an existing store (a second process sharing it).
    pub fn on_store(store: Arc<MemoryStore>, config: EngineConfig) -> Harness {
        Harness::build(store, config, Some(Arc::new(TestSealer)))
    }

    fn build(
        store: Arc<MemoryStore>,
        config: EngineConfig,
        sealer: Option<Arc<dyn engine::secrets::Sealer>>,
    ) -> Harness {
        let models = Arc::new(Models::default());
        let mcp = Arc::new(FakeMcp::default());
        let hosted = Arc::new(FakeHosted::default());
        let clock = TokioClock::new();
        let engine = Engine::new(
            Ports {
                models: models.clone(),
                store: store.clone(),
                mcp: mcp.clone(),
                hosted: hosted.clone(),
                clock: Arc::new(clock),
                sealer,
                admin: None,
            },
            config,
        );
        Harness {
            engine,
            store,
            models,
            mcp,
            hosted,
            clock,
        }
    }

    pub fn model(&self, name: &str) -> Arc<ScriptedModel> {
        self.models.get(name)
    }

    /// Runs a plain (foreground) request to its end; returns the final response as JSON and
    /// the run's failure code when it failed before the model was asked.
    pub async fn run(&self, body: Value) -> (Value, Option<engine::Code>) {
        let handle = self
            .engine
            .start(PROJECT, request(body))
            .await
            .expect("the request starts");
        let finished = handle.finish().await.expect("a foreground run finishes");
        (
            serde_json::to_value(&finished.response).unwrap(),
            finished.start_error.as_ref().map(|f| f.code),
        )
    }

    /// Starts a run and collects its whole event stream.
    pub async fn stream(&self, body: Value) -> Vec<Value> {
        let handle = self
            .engine
            .start(PROJECT, request(body))
            .await
            .expect("the request starts");
        collect(handle.events()).await
    }

    /// Starts a run (model `m`) whose streamed answer is held mid-way (`paused`): `before`
    /// as a delta, then a wait on the returned gate, then `after`.
    pub async fn start_paused(
        &self,
        body: Value,
        before: &str,
        after: &str,
    ) -> (engine::RunHandle, Arc<Notify>) {
        let (steps, gate) = paused(before, after);
        self.model("m").push(Turn::Stream(steps));
        let handle = self
            .engine
            .start(PROJECT, request(body))
            .await
            .expect("the request starts");
        (handle, gate)
    }

    /// Waits (bounded, in the test's time) until the response has a terminal status.
    pub async fn wait_terminal(&self, id: &str) -> ResponseStatus {
        for _ in 0..10_000 {
            if let Some(status) = self.store.status_of(id)
                && status.is_terminal()
            {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("response {id} never ended");
    }
}

/// The steps of a streamed answer held mid-way: `before` as a delta, then a wait until the
/// returned gate is notified, then `after`.
pub fn paused(before: &str, after: &str) -> (Vec<Step>, Arc<Notify>) {
    let gate = Arc::new(Notify::new());
    let steps = vec![
        Step::Event(ModelEvent::TextDelta(before.to_owned())),
        Step::Wait(gate.clone()),
        Step::Event(ModelEvent::TextDelta(after.to_owned())),
    ];
    (steps, gate)
}

/// Reads a run's event lines up to and including its first text delta; how many were read.
pub async fn read_to_first_delta(
    events: &mut (impl futures::Stream<Item = Arc<str>> + Unpin),
) -> usize {
    let mut read = 0;
    while let Some(line) = events.next().await {
        read += 1;
        if line.contains("response.output_text.delta") {
            break;
        }
    }
    read
}

pub fn request(body: Value) -> CreateRequest {
    CreateRequest::parse(body.to_string().as_bytes()).expect("a valid request")
}

pub async fn collect(events: impl futures::Stream<Item = Arc<str>>) -> Vec<Value> {
    events
        .map(|line| serde_json::from_str::<Value>(&line).unwrap())
        .collect()
        .await
}

/// The `type`s of a list of events.
pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Output items of one type.
pub fn items<'a>(response: &'a Value, kind: &str) -> Vec<&'a Value> {
    response["output"]
        .as_array()
        .map(|output| output.iter().filter(|i| i["type"] == kind).collect())
        .unwrap_or_default()
}
