//! One run: the step loop of design.md §2.
//!
//! Each step asks the model (streaming) with the transcript and the tools visible now, forwards
//! text deltas as they arrive, and collects tool calls. Custom function calls end the run with
//! status `completed` and `function_call` items for the caller to execute; calls that fail the
//! checks (unknown tool, `strict` schema mismatch) go back to the model as errors within the step
//! budget. The last step is asked with tools disabled so the run ends with an answer.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt as _;
use protocol::RequestError;
use protocol::events::EventData;
use protocol::input::{
    FunctionCallInput, FunctionCallOutput, FunctionOutput, InputItem, InputMessage, MessageContent,
    Role,
};
use protocol::output::{
    Annotation, FunctionCall, FunctionType, McpApprovalRequest, McpCall, McpListTools,
    McpToolAnnotations, McpToolDef, NamespaceTool, NamespaceToolDef, NamespaceType, OutputContent,
    OutputItem, OutputMessage, OutputStatus, OutputText, ToolSearchOutput,
};
use protocol::request::{CreateRequest, ToolChoice, ToolChoiceMode};
use protocol::response::{ErrorInfo, IncompleteDetails, Response, ResponseStatus, Usage};
use tokio_util::sync::CancellationToken;

use crate::approvals;
use crate::engine::{new_id, now_secs};
use crate::events::EventLog;
use crate::hosted::{CallContext, FileSink, HostedTool, SharedFile, Source};
use crate::mcp::{McpCallResult, McpConnector, McpError, McpSession, McpToolInfo};
use crate::model::{
    FinishReason, JsonSchemaFormat, ModelError, ModelEvent, ModelRequest, ModelToolChoice,
    ResolvedModel, ToolCall,
};
use crate::store::{FileRecord, ResponseRecord, Store};
use crate::tools::{Registry, Target};
use crate::transcript;

/// Longest MCP tool output kept on an `mcp_call` item and given to the model.
const MAX_MCP_OUTPUT_BYTES: usize = 100_000;

/// MCP calls of one turn that run at once.
const MAX_PARALLEL_MCP_CALLS: usize = 8;

/// How often a turn in progress writes its new events to the store.
const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// Everything a run needs, resolved before it starts.
pub struct RunPlan {
    pub project_id: String,
    pub request: CreateRequest,
    /// The models to use, in order (`models` is a fallback chain; never empty).
    pub models: Vec<(String, ResolvedModel)>,
    /// The operator's prices (`usage.cost`).
    pub prices: Arc<crate::engine::Prices>,
    /// `response_format.json_schema`, compiled: the final answer must match it.
    pub output_schema: Option<jsonschema::Validator>,
    pub registry: Registry,
    /// The transcript the run starts from (previous transcript + this request's input).
    pub transcript: Vec<InputItem>,
    /// Index in `transcript` of the first item of this request's `input`.
    pub new_from: usize,
    /// The `mcp` servers of the previous response (label -> URL and `allowed_tools`): where
    /// they match this request, the transcript's tool list is reused without listing again.
    pub previous_servers: HashMap<String, (String, Option<Vec<String>>)>,
    /// The conversation of the previous response (`None`: this response starts one).
    pub conversation: Option<String>,
    pub mcp: Arc<dyn McpConnector>,
    pub max_steps: u32,
}

/// A failure found when the run starts, before the model is asked: a plain request answers it
/// as an HTTP error, a stream or background run as status `failed` (spec §8.3).
#[derive(Debug, Clone)]
pub enum StartError {
    /// An MCP server could not be reached or listed (424 `external_connector_error`).
    Connector(String),
    /// The continuation does not fit the previous response (400 `invalid_request`).
    Invalid(RequestError),
}

impl StartError {
    fn info(&self) -> ErrorInfo {
        match self {
            StartError::Connector(message) => ErrorInfo {
                message: message.clone(),
                kind: Some("external_connector_error".to_owned()),
                code: Some("external_connector_error".to_owned()),
            },
            StartError::Invalid(err) => ErrorInfo {
                message: match &err.param {
                    Some(param) => format!("{} (param: {param})", err.message),
                    None => err.message.clone(),
                },
                kind: Some("invalid_request".to_owned()),
                code: Some("invalid_request".to_owned()),
            },
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct Finished {
    pub response: Response,
    /// Set when the run failed before the model was asked.
    pub start_error: Option<StartError>,
}

/// The stored record of a response.
pub fn record(plan: &RunPlan, response: &Response, transcript: Vec<InputItem>) -> ResponseRecord {
    ResponseRecord {
        id: response.id.clone(),
        project_id: plan.project_id.clone(),
        created_at: response.created_at,
        visible: response.store,
        response: response.clone(),
        transcript,
        conversation_id: plan.conversation.clone(),
    }
}

pub struct Run {
    plan: RunPlan,
    response: Response,
    /// Grows as the model works: the continuation transcript stored at the end.
    transcript: Vec<InputItem>,
    log: Arc<EventLog>,
    store: Arc<dyn Store>,
    usage: Usage,
    /// Events already written to the store.
    flushed: usize,
    /// Set by a cancel request: the run stops at the next event or step boundary.
    cancel: CancellationToken,
    /// One MCP session per server of the registry (by index), opened at discovery.
    sessions: Vec<Option<Arc<dyn McpSession>>>,
    start_error: Option<StartError>,
    /// Sources built-in tools returned, which the answer may cite as `[n]`.
    sources: Vec<Source>,
    /// The number the next source gets.
    next_source: u64,
    /// The model of `plan.models` in use: the one that answered last.
    active_model: usize,
}

/// How the step loop ended (failures are `Err(ErrorInfo)`).
enum Outcome {
    Completed,
    /// Stopped for MCP approvals.
    RequiresAction,
    Incomplete(&'static str),
    Cancelled,
}

/// Why the step loop stopped early.
enum Stop {
    Failed(ErrorInfo),
    Cancelled,
}

impl From<ErrorInfo> for Stop {
    fn from(error: ErrorInfo) -> Self {
        Stop::Failed(error)
    }
}

/// Largest file a tool may share, and how many files one response may hold.
const MAX_SHARED_FILE_BYTES: usize = 25 << 20;
const MAX_SHARED_FILES: usize = 100;

/// Stores the files tools share, attached to the response being run.
struct RunFiles {
    store: Arc<dyn Store>,
    project_id: String,
    response_id: String,
}

#[async_trait::async_trait]
impl FileSink for RunFiles {
    async fn share(
        &self,
        filename: &str,
        content_type: &str,
        bytes: Vec<u8>,
    ) -> Result<SharedFile, String> {
        if bytes.len() > MAX_SHARED_FILE_BYTES {
            return Err(format!(
                "the file is {} bytes; at most {MAX_SHARED_FILE_BYTES} bytes can be shared",
                bytes.len()
            ));
        }
        let existing = self
            .store
            .list_files(&self.project_id, &self.response_id)
            .await
            .map_err(|err| format!("the file could not be stored: {err}"))?;
        if existing.len() >= MAX_SHARED_FILES {
            return Err(format!(
                "a response can share at most {MAX_SHARED_FILES} files"
            ));
        }
        let record = FileRecord {
            id: new_id("file"),
            response_id: self.response_id.clone(),
            project_id: self.project_id.clone(),
            filename: filename.to_owned(),
            content_type: content_type.to_owned(),
            bytes: bytes.len() as u64,
            created_at: now_secs(),
        };
        self.store
            .put_file(&record, &bytes)
            .await
            .map_err(|err| format!("the file could not be stored: {err}"))?;
        Ok(SharedFile {
            url: format!(
                "/v1/responses/{}/files/{}/content",
                self.response_id, record.id
            ),
            id: record.id,
            bytes: record.bytes,
        })
    }
}

/// An MCP call whose item is open, waiting to run.
struct PendingMcpCall {
    output_index: usize,
    server: usize,
}

/// The last `mcp_list_tools` of a server in the transcript.
fn last_list(transcript: &[InputItem], label: &str) -> Option<McpListTools> {
    transcript.iter().rev().find_map(|item| match item {
        InputItem::McpListTools(list) if list.server_label == label => Some(list.clone()),
        _ => None,
    })
}

fn server_allowed(server: &crate::tools::ServerDef) -> Option<Vec<String>> {
    server.allowed_tools().map(<[String]>::to_vec)
}

fn tool_info(def: &McpToolDef) -> McpToolInfo {
    McpToolInfo {
        name: def.name.clone(),
        description: def.description.clone(),
        input_schema: def.input_schema.clone(),
        read_only: def.annotations.as_ref().and_then(|a| a.read_only),
    }
}

/// The model's arguments as the object an MCP call takes.
fn parse_arguments(arguments: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    if arguments.trim().is_empty() {
        return Ok(serde_json::Map::new());
    }
    match serde_json::from_str(arguments) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(_) => Err("the arguments must be a JSON object".to_owned()),
        Err(err) => Err(format!("the arguments are not valid JSON: {err}")),
    }
}

/// Caps a tool output, saying how much was cut.
fn truncate(mut text: String) -> String {
    if text.len() <= MAX_MCP_OUTPUT_BYTES {
        return text;
    }
    let mut cut = MAX_MCP_OUTPUT_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let omitted = text.len() - cut;
    text.truncate(cut);
    text.push_str(&format!("\n[output truncated: {omitted} more bytes]"));
    text
}

/// Why one attempt at a model turn ended without a turn.
enum TurnError {
    /// The model failed before producing any output: another attempt may answer.
    BeforeOutput(ModelError),
    /// The run stops (cancelled, or a failure after output).
    Stop(Stop),
}

/// What one model turn produced.
struct Turn {
    /// Reasoning blocks of the turn, kept in the transcript ahead of its text and calls.
    reasoning: Vec<crate::model::Reasoning>,
    text: Option<String>,
    calls: Vec<ToolCall>,
    finish: Option<FinishReason>,
}

#[derive(Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
    thought_signature: Option<String>,
}

impl Run {
    pub fn new(
        plan: RunPlan,
        response: Response,
        log: Arc<EventLog>,
        store: Arc<dyn Store>,
        cancel: CancellationToken,
    ) -> Run {
        let transcript = plan.transcript.clone();
        Run {
            plan,
            response,
            transcript,
            log,
            store,
            usage: Usage::default(),
            flushed: 0,
            cancel,
            sessions: Vec::new(),
            start_error: None,
            sources: Vec::new(),
            next_source: 1,
            active_model: 0,
        }
    }

    /// Runs to the end, stores the result and returns the final response.
    pub async fn execute(mut self) -> Finished {
        self.emit(EventData::ResponseCreated {
            response: Box::new(self.response.clone()),
        });
        self.response.status = ResponseStatus::InProgress;
        self.emit(EventData::ResponseInProgress {
            response: Box::new(self.response.clone()),
        });
        let outcome = match self.prepare().await {
            Ok(()) => self.steps().await,
            Err(stop) => Err(stop),
        };
        self.close_sessions().await;
        let outcome = match outcome {
            Ok(outcome) => Ok(outcome),
            Err(Stop::Cancelled) => Ok(Outcome::Cancelled),
            Err(Stop::Failed(error)) => Err(error),
        };
        self.finish(outcome).await
    }

    fn emit(&self, data: EventData) {
        self.log.push(data);
    }

    async fn flush_events(&mut self) {
        let records = self.log.records_from(self.flushed);
        if records.is_empty() {
            return;
        }
        match self.store.append_events(&self.response.id, &records).await {
            Ok(()) => self.flushed += records.len(),
            Err(err) => {
                tracing::error!(response_id = %self.response.id, error = %err, "event log write failed")
            }
        }
    }

    async fn steps(&mut self) -> Result<Outcome, Stop> {
        let max_steps = self.plan.max_steps.max(1);
        let budget = self.response.max_output_tokens;
        for step in 1..=max_steps {
            if self.cancel.is_cancelled() {
                return Err(Stop::Cancelled);
            }
            self.refresh_changed_tools().await;
            let last = step == max_steps;
            let remaining = match budget {
                Some(cap) => {
                    let left = u64::from(cap).saturating_sub(self.usage.output_tokens);
                    if left == 0 {
                        return Ok(Outcome::Incomplete("max_output_tokens"));
                    }
                    Some(u32::try_from(left).unwrap_or(u32::MAX))
                }
                None => None,
            };
            let request = self.model_request(!last, remaining);
            let turn = self.model_turn(request).await?;
            self.flush_events().await;

            self.transcript.extend(
                turn.reasoning
                    .iter()
                    .map(|block| InputItem::Reasoning(transcript::reasoning_item(block))),
            );
            if let Some(text) = &turn.text {
                self.transcript.push(InputItem::Message(InputMessage {
                    role: Role::Assistant,
                    content: MessageContent::Text(text.clone()),
                    id: None,
                    status: None,
                }));
            }
            if matches!(turn.finish, Some(FinishReason::Length)) {
                return Ok(Outcome::Incomplete("max_output_tokens"));
            }
            if turn.calls.is_empty() {
                self.check_structured_output(turn.text.as_deref())?;
                return Ok(Outcome::Completed);
            }
            let mut handed_back = 0;
            let mut approvals = 0;
            let mut mcp_calls: Vec<PendingMcpCall> = Vec::new();
            let mut hosted_calls = Vec::new();
            for call in turn.calls {
                match self.plan.registry.resolve(&call.name) {
                    Some(Target::Mcp { server, tool }) => {
                        let server_index = self.plan.registry.server_index(&server.label);
                        let (label, tool_name) = (server.label.clone(), tool.name.clone());
                        if server.needs_approval(tool) {
                            self.request_approval(label, tool_name, call);
                            approvals += 1;
                        } else if let Some(server_index) = server_index {
                            let index =
                                self.open_mcp_call(&label, &tool_name, &call.arguments, None);
                            mcp_calls.push(PendingMcpCall {
                                output_index: index,
                                server: server_index,
                            });
                        }
                    }
                    Some(Target::ToolSearch) => self.tool_search(call),
                    Some(Target::Hosted(tool)) => hosted_calls.push((call, tool)),
                    Some(Target::Function) | None => {
                        match self.plan.registry.check_call(&call.name, &call.arguments) {
                            Ok(()) => {
                                self.push_function_call(&call);
                                self.hand_back(call);
                                handed_back += 1;
                            }
                            Err(problem) => self.refuse_call(call, problem),
                        }
                    }
                }
            }
            self.run_mcp_calls(mcp_calls).await?;
            self.run_hosted_calls(hosted_calls).await?;
            self.flush_events().await;
            if approvals > 0 {
                // The caller decides; a continuation runs the approved calls.
                return Ok(Outcome::RequiresAction);
            }
            if handed_back > 0 {
                // The caller runs the functions and continues the conversation.
                return Ok(Outcome::Completed);
            }
        }
        Ok(Outcome::Incomplete("max_steps"))
    }

    fn model_request(&self, tools_on: bool, max_output_tokens: Option<u32>) -> ModelRequest {
        build_request(&self.plan, &self.transcript, tools_on, max_output_tokens)
    }

    /// One model turn on the active model of the chain. A model that fails before producing
    /// any output hands the turn to the next model of `models`; the model that answers becomes
    /// the run's model (`response.model`). A failure after output ends the run.
    async fn model_turn(&mut self, request: ModelRequest) -> Result<Turn, Stop> {
        let mut index = self.active_model;
        loop {
            let (id, model) = &self.plan.models[index];
            let (id, client) = (id.clone(), model.client.clone());
            let mut attempt = request.clone();
            attempt.model = model.upstream_model.clone();
            match self.try_turn(client, attempt).await {
                Ok(turn) => {
                    self.active_model = index;
                    self.response.model = id;
                    return Ok(turn);
                }
                Err(TurnError::Stop(stop)) => return Err(stop),
                Err(TurnError::BeforeOutput(err)) => {
                    if index + 1 < self.plan.models.len() {
                        tracing::warn!(response_id = %self.response.id, model = %id, error = %err, "model failed before answering; trying the next model of the chain");
                        index += 1;
                        continue;
                    }
                    return Err(Stop::Failed(provider_error(err)));
                }
            }
        }
    }

    /// Streams one model turn, forwarding text as it arrives.
    async fn try_turn(
        &mut self,
        client: Arc<dyn crate::model::ModelClient>,
        request: ModelRequest,
    ) -> Result<Turn, TurnError> {
        let mut stream = tokio::select! {
            started = client.stream(request) => started.map_err(TurnError::BeforeOutput)?,
            () = self.cancel.cancelled() => return Err(TurnError::Stop(Stop::Cancelled)),
        };
        // (output index, item id, text so far) of the message being streamed.
        let mut message: Option<(usize, String, String)> = None;
        let mut calls: Vec<PartialCall> = Vec::new();
        let mut reasoning = Vec::new();
        let mut finish = None;
        let mut failure = None;
        // A long turn still reaches the store regularly: a crash loses at most this much of
        // the event log.
        let mut flush = tokio::time::interval(FLUSH_EVERY);
        flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        flush.tick().await;
        loop {
            let event = tokio::select! {
                event = stream.next() => event,
                _ = flush.tick() => {
                    self.flush_events().await;
                    continue;
                }
                () = self.cancel.cancelled() => {
                    failure = Some(Stop::Cancelled);
                    break;
                }
            };
            let Some(event) = event else { break };
            match event {
                Ok(ModelEvent::TextDelta(delta)) => {
                    if delta.is_empty() {
                        continue;
                    }
                    let (index, item_id, text) = message.get_or_insert_with(|| self.open_message());
                    text.push_str(&delta);
                    let (index, item_id) = (*index, item_id.clone());
                    self.emit(EventData::OutputTextDelta {
                        item_id,
                        output_index: index,
                        content_index: 0,
                        delta,
                        logprobs: Vec::new(),
                    });
                }
                Ok(ModelEvent::ToolCallDelta {
                    index,
                    id,
                    name,
                    arguments,
                    thought_signature,
                }) => {
                    if calls.len() <= index {
                        calls.resize_with(index + 1, PartialCall::default);
                    }
                    let call = &mut calls[index];
                    if let Some(id) = id.filter(|id| !id.is_empty()) {
                        call.id = Some(id);
                    }
                    if let Some(name) = name {
                        call.name.push_str(&name);
                    }
                    call.arguments.push_str(&arguments);
                    if thought_signature.is_some() {
                        call.thought_signature = thought_signature;
                    }
                }
                Ok(ModelEvent::Usage(usage)) => {
                    self.usage.input_tokens += usage.input_tokens;
                    self.usage.output_tokens += usage.output_tokens;
                    self.usage.input_tokens_details.cached_tokens += usage.cached_input_tokens;
                    self.usage.input_tokens_details.cache_read_input_tokens +=
                        usage.cached_input_tokens;
                    self.usage.input_tokens_details.cache_creation_input_tokens +=
                        usage.cache_write_tokens;
                    self.usage.input_tokens_details.cache_write_tokens += usage.cache_write_tokens;
                    self.usage.output_tokens_details.reasoning_tokens += usage.reasoning_tokens;
                }
                Ok(ModelEvent::Reasoning(block)) => reasoning.push(block),
                Ok(ModelEvent::Finish(reason)) => finish = Some(reason),
                Err(err) if message.is_none() && calls.is_empty() => {
                    return Err(TurnError::BeforeOutput(err));
                }
                Err(err) => {
                    failure = Some(Stop::Failed(provider_error(err)));
                    break;
                }
            }
        }
        let text = message.map(|(index, item_id, text)| {
            let status = if failure.is_some() || matches!(finish, Some(FinishReason::Length)) {
                OutputStatus::Incomplete
            } else {
                OutputStatus::Completed
            };
            self.close_message(index, item_id, &text, status);
            text
        });
        if let Some(failure) = failure {
            return Err(TurnError::Stop(failure));
        }
        let calls = calls
            .into_iter()
            .filter(|c| !c.name.is_empty())
            .map(|c| ToolCall {
                id: c
                    .id
                    .unwrap_or_else(|| format!("call_{}", uuid::Uuid::new_v4().simple())),
                name: c.name,
                arguments: if c.arguments.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    c.arguments
                },
                thought_signature: c.thought_signature,
            })
            .collect();
        Ok(Turn {
            reasoning,
            text,
            calls,
            finish,
        })
    }

    fn open_message(&mut self) -> (usize, String, String) {
        let index = self.response.output.len();
        let id = new_id("msg");
        let item = OutputItem::Message(OutputMessage {
            id: id.clone(),
            status: OutputStatus::InProgress,
            role: "assistant".to_owned(),
            content: Vec::new(),
        });
        self.response.output.push(item.clone());
        self.emit(EventData::OutputItemAdded {
            output_index: index,
            item,
        });
        self.emit(EventData::ContentPartAdded {
            item_id: id.clone(),
            output_index: index,
            content_index: 0,
            part: text_part(""),
        });
        (index, id, String::new())
    }

    fn close_message(&mut self, index: usize, item_id: String, text: &str, status: OutputStatus) {
        let part = OutputContent::OutputText(OutputText {
            text: text.to_owned(),
            annotations: citations(text, &self.sources),
            logprobs: Vec::new(),
        });
        self.emit(EventData::OutputTextDone {
            item_id: item_id.clone(),
            output_index: index,
            content_index: 0,
            text: text.to_owned(),
            logprobs: Vec::new(),
        });
        self.emit(EventData::ContentPartDone {
            item_id: item_id.clone(),
            output_index: index,
            content_index: 0,
            part: part.clone(),
        });
        let item = OutputItem::Message(OutputMessage {
            id: item_id,
            status,
            role: "assistant".to_owned(),
            content: vec![part],
        });
        self.response.output[index] = item.clone();
        self.emit(EventData::OutputItemDone {
            output_index: index,
            item,
        });
    }

    /// Adds a finished item to the output (`output_item.added` then `.done`).
    fn emit_item(&mut self, item: OutputItem) -> usize {
        let index = self.response.output.len();
        self.response.output.push(item.clone());
        self.emit(EventData::OutputItemAdded {
            output_index: index,
            item: item.clone(),
        });
        self.emit(EventData::OutputItemDone {
            output_index: index,
            item,
        });
        index
    }

    fn start_failure(&mut self, error: StartError) -> Stop {
        let info = error.info();
        self.start_error = Some(error);
        Stop::Failed(info)
    }

    /// What happens before the first model turn: the approval decisions of a continuation
    /// are checked, MCP servers are discovered, and approved calls run.
    async fn prepare(&mut self) -> Result<(), Stop> {
        let approved = match approvals::approved_to_run(&self.transcript, self.plan.new_from) {
            Ok(approved) => approved,
            Err(err) => return Err(self.start_failure(StartError::Invalid(err))),
        };
        for request in &approved {
            if self
                .plan
                .registry
                .server_index(&request.server_label)
                .is_none()
            {
                return Err(self.start_failure(StartError::Connector(format!(
                    "the approved call \"{}\" is for MCP server \"{}\", which this request does not include: send the same mcp tool again to continue",
                    request.id, request.server_label
                ))));
            }
        }
        if !self.plan.registry.servers().is_empty() {
            self.discover().await?;
        }
        let mut calls = Vec::new();
        for request in approved {
            let Some(server) = self.plan.registry.server_index(&request.server_label) else {
                continue;
            };
            let index = self.open_mcp_call(
                &request.server_label,
                &request.name,
                &request.arguments,
                Some(request.id.clone()),
            );
            calls.push(PendingMcpCall {
                output_index: index,
                server,
            });
        }
        self.run_mcp_calls(calls).await
    }

    /// Connects to every MCP server at once and lists its tools (or reuses the transcript's
    /// list when the previous response used the same server), emitting one `mcp_list_tools`
    /// item per server whose list is new or changed. Any failure fails the run.
    async fn discover(&mut self) -> Result<(), Stop> {
        let connector = self.plan.mcp.clone();
        let mut jobs = Vec::new();
        for (index, server) in self.plan.registry.servers().iter().enumerate() {
            let previous = last_list(&self.transcript, &server.label);
            let reuse = previous.is_some()
                && self.plan.previous_servers.get(&server.label)
                    == Some(&(server.url.clone(), server_allowed(server)));
            let endpoint = server.endpoint();
            let connector = connector.clone();
            jobs.push(async move {
                let session: Arc<dyn McpSession> = Arc::from(connector.connect(&endpoint).await?);
                let listed = if reuse {
                    None
                } else {
                    match session.list_tools().await {
                        Ok(tools) => Some(tools),
                        Err(err) => {
                            session.close().await;
                            return Err(err);
                        }
                    }
                };
                Ok::<_, McpError>((index, session, listed, previous))
            });
        }
        let results = tokio::select! {
            results = futures::future::join_all(jobs) => results,
            () = self.cancel.cancelled() => return Err(Stop::Cancelled),
        };
        self.sessions = vec![None; self.plan.registry.servers().len()];
        let mut failure = None;
        let mut found = Vec::new();
        for (index, result) in results.into_iter().enumerate() {
            match result {
                Ok((server, session, listed, previous)) => {
                    self.sessions[server] = Some(session);
                    found.push((server, listed, previous));
                }
                Err(err) if failure.is_none() => {
                    let server = &self.plan.registry.servers()[index];
                    failure = Some(format!(
                        "MCP server \"{}\" ({}) failed during tool discovery: {err}",
                        server.label,
                        server.host()
                    ));
                }
                Err(_) => {}
            }
        }
        if let Some(message) = failure {
            return Err(self.start_failure(StartError::Connector(message)));
        }
        for (server, listed, previous) in found {
            let tools = match listed {
                Some(tools) => tools,
                None => previous
                    .as_ref()
                    .map(|p| p.tools.iter().map(tool_info).collect())
                    .unwrap_or_default(),
            };
            self.plan.registry.set_server_tools(server, tools);
            let list = self.list_item(server);
            if previous.as_ref().map(|p| &p.tools) != Some(&list.tools) {
                self.transcript.push(InputItem::McpListTools(list.clone()));
                self.emit_item(OutputItem::McpListTools(list));
            }
        }
        // Tools an earlier search loaded stay loaded.
        let loaded: Vec<(String, String)> = self
            .transcript
            .iter()
            .filter_map(|item| match item {
                InputItem::ToolSearchOutput(search) => Some(search),
                _ => None,
            })
            .flat_map(|search| {
                search.tools.iter().flat_map(|namespace| {
                    namespace
                        .tools
                        .iter()
                        .map(|tool| (namespace.name.clone(), tool.name.clone()))
                })
            })
            .collect();
        for (label, tool) in loaded {
            self.plan.registry.load(&label, &tool);
        }
        Ok(())
    }

    /// The `mcp_list_tools` item for what the registry holds of one server.
    fn list_item(&self, server: usize) -> McpListTools {
        McpListTools {
            id: new_id("mcpl"),
            server_label: self.plan.registry.servers()[server].label.clone(),
            tools: self
                .plan
                .registry
                .server_tools(server)
                .map(|tool| McpToolDef {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    input_schema: tool.input_schema.clone(),
                    annotations: tool.read_only.map(|read_only| McpToolAnnotations {
                        read_only: Some(read_only),
                    }),
                })
                .collect(),
            error: None,
            connector_id: None,
        }
    }

    /// Lists again the servers that announced a changed tool list; a list that really changed
    /// is a new `mcp_list_tools` item.
    async fn refresh_changed_tools(&mut self) {
        for server in 0..self.sessions.len() {
            let Some(session) = self.sessions[server].clone() else {
                continue;
            };
            if !session.tools_changed() {
                continue;
            }
            let listed = tokio::select! {
                listed = session.list_tools() => listed,
                () = self.cancel.cancelled() => return,
            };
            match listed {
                Ok(tools) => {
                    self.plan.registry.set_server_tools(server, tools);
                    let list = self.list_item(server);
                    let label = &self.plan.registry.servers()[server].label;
                    if last_list(&self.transcript, label).map(|l| l.tools)
                        != Some(list.tools.clone())
                    {
                        self.transcript.push(InputItem::McpListTools(list.clone()));
                        self.emit_item(OutputItem::McpListTools(list));
                    }
                }
                Err(err) => {
                    tracing::warn!(response_id = %self.response.id, server = %self.plan.registry.servers()[server].label, error = %err, "listing a changed MCP tool list failed; the old list stays");
                }
            }
        }
    }

    async fn close_sessions(&mut self) {
        let sessions: Vec<Arc<dyn McpSession>> = self.sessions.drain(..).flatten().collect();
        futures::future::join_all(sessions.iter().map(|s| s.close())).await;
    }

    /// Emits an `mcp_approval_request` item: the call waits for the caller's decision.
    fn request_approval(&mut self, label: String, tool: String, call: ToolCall) {
        let request = McpApprovalRequest {
            id: new_id("mcpr"),
            server_label: label,
            name: tool,
            arguments: call.arguments,
            connector_id: None,
            thought_signature: call.thought_signature,
        };
        self.transcript
            .push(InputItem::McpApprovalRequest(request.clone()));
        self.emit_item(OutputItem::McpApprovalRequest(request));
    }

    /// Emits `output_item.added` for an MCP call about to run; returns its output index.
    fn open_mcp_call(
        &mut self,
        label: &str,
        tool: &str,
        arguments: &str,
        approval_request_id: Option<String>,
    ) -> usize {
        let item = OutputItem::McpCall(McpCall {
            id: new_id("mcp"),
            server_label: label.to_owned(),
            name: tool.to_owned(),
            arguments: arguments.to_owned(),
            output: None,
            error: None,
            approval_request_id,
            connector_id: None,
        });
        let index = self.response.output.len();
        self.response.output.push(item.clone());
        self.emit(EventData::OutputItemAdded {
            output_index: index,
            item,
        });
        index
    }

    /// Runs opened MCP calls at once (bounded) and completes their items in the model's order.
    /// A failing call is a result the model sees; only a cancel stops the run here.
    async fn run_mcp_calls(&mut self, calls: Vec<PendingMcpCall>) -> Result<(), Stop> {
        if calls.is_empty() {
            return Ok(());
        }
        let mut work = Vec::new();
        for call in &calls {
            let Some(OutputItem::McpCall(item)) = self.response.output.get(call.output_index)
            else {
                continue;
            };
            let session = self.sessions.get(call.server).cloned().flatten();
            let (name, arguments) = (item.name.clone(), item.arguments.clone());
            work.push(async move {
                let Some(session) = session else {
                    return Err("the MCP session is closed".to_owned());
                };
                let arguments = parse_arguments(&arguments)?;
                session
                    .call_tool(&name, arguments)
                    .await
                    .map_err(|err| err.to_string())
            });
        }
        let results: Vec<Result<McpCallResult, String>> = tokio::select! {
            results = futures::stream::iter(work).buffered(MAX_PARALLEL_MCP_CALLS).collect() => results,
            () = self.cancel.cancelled() => return Err(Stop::Cancelled),
        };
        for (call, result) in calls.iter().zip(results) {
            let Some(OutputItem::McpCall(item)) = self.response.output.get(call.output_index)
            else {
                continue;
            };
            let mut item = item.clone();
            match result {
                Ok(result) if !result.is_error => item.output = Some(truncate(result.output)),
                Ok(result) => item.error = Some(truncate(result.output)),
                Err(error) => item.error = Some(error),
            }
            self.transcript.push(InputItem::McpCall(item.clone()));
            let item = OutputItem::McpCall(item);
            self.response.output[call.output_index] = item.clone();
            self.emit(EventData::OutputItemDone {
                output_index: call.output_index,
                item,
            });
        }
        Ok(())
    }

    /// Runs built-in tool calls one after another (each may work concurrently inside), adds
    /// their items, gives the model their text and counts them in the usage.
    async fn run_hosted_calls(
        &mut self,
        calls: Vec<(ToolCall, Arc<dyn HostedTool>)>,
    ) -> Result<(), Stop> {
        let files = RunFiles {
            store: self.store.clone(),
            project_id: self.plan.project_id.clone(),
            response_id: self.response.id.clone(),
        };
        for (call, tool) in calls {
            let log = self.log.clone();
            let context = CallContext {
                events: log.as_ref(),
                next_source: self.next_source,
                call_id: &call.id,
                conversation: self
                    .plan
                    .conversation
                    .as_deref()
                    .unwrap_or(&self.response.id),
                project_id: &self.plan.project_id,
                files: &files,
            };
            let outcome = tokio::select! {
                outcome = tool.call(&call.arguments, context) => outcome,
                () = self.cancel.cancelled() => return Err(Stop::Cancelled),
            };
            for item in outcome.items {
                self.emit_item(item);
            }
            for (key, count) in outcome.invocations {
                self.usage
                    .tool_calls_details
                    .entry(key)
                    .or_default()
                    .invocation += count;
            }
            if let Some(last) = outcome.sources.iter().map(|s| s.number).max() {
                self.next_source = self.next_source.max(last + 1);
            }
            self.sources.extend(outcome.sources);
            self.push_function_call(&call);
            self.transcript
                .push(InputItem::FunctionCallOutput(FunctionCallOutput {
                    call_id: call.id,
                    output: FunctionOutput::Text(outcome.model_text),
                    name: Some(call.name),
                    id: None,
                    status: None,
                    thought_signature: None,
                }));
        }
        Ok(())
    }

    /// Runs a catalog search of the deferred servers and loads what it found.
    fn tool_search(&mut self, call: ToolCall) {
        #[derive(serde::Deserialize)]
        struct Args {
            query: String,
            #[serde(default)]
            server_label: Option<String>,
        }
        let args: Args = match serde_json::from_str(&call.arguments) {
            Ok(args) => args,
            Err(err) => {
                let problem = format!(
                    "error: tool_search needs {{\"query\": string, \"server_label\"?: string}}: {err}"
                );
                self.refuse_call(call, problem);
                return;
            }
        };
        let found = self
            .plan
            .registry
            .search(&args.query, args.server_label.as_deref());
        let mut namespaces: Vec<NamespaceTool> = Vec::new();
        for (server, tool) in found {
            let def = &self.plan.registry.servers()[server];
            let entry = NamespaceToolDef {
                kind: FunctionType::Function,
                name: tool.name,
                description: tool.description,
                parameters: Some(tool.input_schema),
            };
            match namespaces.iter_mut().find(|n| n.name == def.label) {
                Some(namespace) => namespace.tools.push(entry),
                None => namespaces.push(NamespaceTool {
                    kind: NamespaceType::Namespace,
                    name: def.label.clone(),
                    description: def.description.clone().unwrap_or_default(),
                    tools: vec![entry],
                }),
            }
        }
        let output = ToolSearchOutput {
            id: new_id("tso"),
            call_id: Some(call.id),
            status: "completed".to_owned(),
            execution: "server".to_owned(),
            arguments: Some(call.arguments),
            tools: namespaces,
        };
        self.transcript
            .push(InputItem::ToolSearchOutput(output.clone()));
        self.emit_item(OutputItem::ToolSearchOutput(output));
    }

    /// With `response_format.json_schema`, the final answer must be JSON matching the schema,
    /// whatever the upstream promised; otherwise the run fails `upstream_structured_output_failed`.
    fn check_structured_output(&self, text: Option<&str>) -> Result<(), Stop> {
        let Some(validator) = &self.plan.output_schema else {
            return Ok(());
        };
        let failed = |message: String| {
            Stop::Failed(ErrorInfo {
                message: format!("the model's answer does not match response_format: {message}"),
                kind: Some("upstream_structured_output_failed".to_owned()),
                code: Some("upstream_structured_output_failed".to_owned()),
            })
        };
        let value: serde_json::Value = serde_json::from_str(text.unwrap_or_default().trim())
            .map_err(|err| failed(format!("it is not JSON ({err})")))?;
        let problems: Vec<String> = validator
            .iter_errors(&value)
            .take(5)
            .map(|err| {
                let path = err.instance_path().to_string();
                if path.is_empty() {
                    err.to_string()
                } else {
                    format!("{path}: {err}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(failed(problems.join("; ")))
        }
    }

    /// Records a call of the model in the transcript.
    fn push_function_call(&mut self, call: &ToolCall) {
        self.transcript
            .push(InputItem::FunctionCall(FunctionCallInput {
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                id: None,
                status: None,
                thought_signature: call.thought_signature.clone(),
            }));
    }

    /// A call that cannot run (unknown tool, arguments that do not fit): the model is told why
    /// and may try again within the step budget.
    fn refuse_call(&mut self, call: ToolCall, problem: String) {
        tracing::debug!(response_id = %self.response.id, tool = %call.name, "tool call refused; the model is told");
        self.push_function_call(&call);
        self.transcript
            .push(InputItem::FunctionCallOutput(FunctionCallOutput {
                call_id: call.id,
                output: FunctionOutput::Text(problem),
                name: Some(call.name),
                id: None,
                status: None,
                thought_signature: None,
            }));
    }

    /// Emits a `function_call` item for the caller to execute.
    fn hand_back(&mut self, call: ToolCall) {
        let index = self.response.output.len();
        let mut item = FunctionCall {
            id: new_id("fc"),
            call_id: call.id,
            name: call.name,
            arguments: call.arguments,
            status: OutputStatus::InProgress,
            thought_signature: call.thought_signature,
        };
        self.emit(EventData::OutputItemAdded {
            output_index: index,
            item: OutputItem::FunctionCall(item.clone()),
        });
        item.status = OutputStatus::Completed;
        let item = OutputItem::FunctionCall(item);
        self.response.output.push(item.clone());
        self.emit(EventData::OutputItemDone {
            output_index: index,
            item,
        });
    }

    /// Sets the final state, stores it, emits the terminal event and closes the log.
    async fn finish(mut self, outcome: Result<Outcome, ErrorInfo>) -> Finished {
        self.usage.total_tokens = self.usage.input_tokens + self.usage.output_tokens;
        price_usage(&mut self.usage, &self.response.model, &self.plan.prices);
        self.response.usage = Some(self.usage.clone());
        self.response.completed_at = Some(now_secs());
        match &outcome {
            Ok(Outcome::Completed) => self.response.status = ResponseStatus::Completed,
            Ok(Outcome::RequiresAction) => self.response.status = ResponseStatus::RequiresAction,
            Ok(Outcome::Cancelled) => self.response.status = ResponseStatus::Cancelled,
            Ok(Outcome::Incomplete(reason)) => {
                self.response.status = ResponseStatus::Incomplete;
                self.response.incomplete_details = Some(IncompleteDetails {
                    reason: (*reason).to_owned(),
                });
            }
            Err(error) => {
                tracing::warn!(response_id = %self.response.id, code = ?error.code, error = %error.message, "run failed");
                self.response.status = ResponseStatus::Failed;
                self.response.error = Some(error.clone());
            }
        }
        let mut snapshot = self.response.clone();
        let include_usage = self
            .plan
            .request
            .stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(true);
        if !include_usage {
            snapshot.usage = None;
        }
        let snapshot = Box::new(snapshot);
        let terminal = self.log.prepare(match outcome {
            Ok(Outcome::Completed | Outcome::RequiresAction) => {
                EventData::ResponseCompleted { response: snapshot }
            }
            Ok(Outcome::Incomplete(_)) => EventData::ResponseIncomplete { response: snapshot },
            Ok(Outcome::Cancelled) => EventData::ResponseCancelled { response: snapshot },
            Err(error) => EventData::ResponseFailed {
                error,
                response: snapshot,
            },
        });
        // One transaction stores the final response with the rest of the event log, before
        // the terminal event is published: a client that reads the end of a stream and then
        // retrieves the response sees the final object.
        let mut events = self.log.records_from(self.flushed);
        events.push(terminal.clone());
        let record = record(
            &self.plan,
            &self.response,
            std::mem::take(&mut self.transcript),
        );
        if let Err(err) = self.store.put_response_with_events(&record, &events).await {
            tracing::error!(response_id = %self.response.id, error = %err, "final response write failed");
        }
        self.flushed += events.len();
        self.log.publish(&terminal);
        self.log.close();
        Finished {
            response: self.response,
            start_error: self.start_error,
        }
    }
}

/// Fills `cost` (when the model has a price) and each tool's `cost_usd` (when the tool has
/// one) from the operator's price table.
pub(crate) fn price_usage(usage: &mut Usage, model: &str, prices: &crate::engine::Prices) {
    let mut tools_cost = 0.0;
    let mut any_tool_price = false;
    for (key, details) in &mut usage.tool_calls_details {
        if let Some(price) = prices.tools.get(key) {
            let cost = price * details.invocation as f64;
            details.cost_usd = Some(cost);
            tools_cost += cost;
            any_tool_price = true;
        }
    }
    let Some(price) = prices.models.get(model) else {
        return;
    };
    let per_token = |per_million: f64| per_million / 1_000_000.0;
    let cached = usage
        .input_tokens_details
        .cached_tokens
        .min(usage.input_tokens);
    let written = usage
        .input_tokens_details
        .cache_write_tokens
        .min(usage.input_tokens - cached);
    let input_cost =
        per_token(price.input_per_million) * (usage.input_tokens - cached - written) as f64;
    let cache_read_cost = per_token(
        price
            .cache_read_per_million
            .unwrap_or(price.input_per_million),
    ) * cached as f64;
    let cache_creation_cost = per_token(
        price
            .cache_write_per_million
            .unwrap_or(price.input_per_million),
    ) * written as f64;
    let output_cost = per_token(price.output_per_million) * usage.output_tokens as f64;
    usage.cost = Some(protocol::response::Cost {
        currency: "USD".to_owned(),
        input_cost,
        output_cost,
        cache_creation_cost: Some(cache_creation_cost),
        cache_read_cost: Some(cache_read_cost),
        tool_calls_cost: any_tool_price.then_some(tools_cost),
        total_cost: input_cost + cache_creation_cost + cache_read_cost + output_cost + tools_cost,
        tool_calls_cost_details: None,
    });
}

/// `url_citation` annotations for the `[n]` markers of an answer whose `n` names a source.
/// Offsets count characters (Unicode scalar values), like the SDKs' string indices; a marker
/// like `[1][2]` or `[1, 2]` cites each number.
pub(crate) fn citations(text: &str, sources: &[Source]) -> Vec<Annotation> {
    if sources.is_empty() {
        return Vec::new();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut annotations = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '[' {
            i += 1;
            continue;
        }
        let Some(close) = chars[i + 1..]
            .iter()
            .position(|c| *c == ']')
            .map(|p| i + 1 + p)
        else {
            break;
        };
        let inner: String = chars[i + 1..close].iter().collect();
        let numbers: Option<Vec<u64>> = inner
            .split(',')
            .map(|n| n.trim().parse::<u64>().ok())
            .collect();
        match numbers {
            Some(numbers) if !inner.is_empty() && close - i <= 24 => {
                for number in numbers {
                    if let Some(source) = sources.iter().find(|s| s.number == number) {
                        annotations.push(Annotation::UrlCitation {
                            url: source.url.clone(),
                            title: Some(source.title.clone()),
                            start_index: i as u64,
                            end_index: (close + 1) as u64,
                        });
                    }
                }
                i = close + 1;
            }
            _ => i += 1,
        }
    }
    annotations
}

fn text_part(text: &str) -> OutputContent {
    OutputContent::OutputText(OutputText {
        text: text.to_owned(),
        annotations: Vec::new(),
        logprobs: Vec::new(),
    })
}

/// A provider failure as the run's error. Adapters keep secrets out of their messages.
/// The model request of one step: the transcript as messages, the tools (unless `tools_on` is
/// false or there are none) and the request's parameters. `model` is left empty: each attempt of
/// the models chain sets its own.
pub(crate) fn build_request(
    plan: &RunPlan,
    transcript: &[InputItem],
    tools_on: bool,
    max_output_tokens: Option<u32>,
) -> ModelRequest {
    let request = &plan.request;
    let tool_choice = match &request.tool_choice {
        None | Some(ToolChoice::Mode(ToolChoiceMode::Auto)) => ModelToolChoice::Auto,
        Some(ToolChoice::Mode(ToolChoiceMode::None)) => ModelToolChoice::None,
        Some(ToolChoice::Mode(ToolChoiceMode::Required)) => ModelToolChoice::Required,
        Some(ToolChoice::Object(object)) => match (&object.kind, &object.name) {
            (_, Some(name)) => ModelToolChoice::Function(name.clone()),
            (Some(kind), None) if kind == "required" => ModelToolChoice::Required,
            (Some(kind), None) => ModelToolChoice::Function(kind.clone()),
            (None, None) => ModelToolChoice::Auto,
        },
    };
    let tools_on = tools_on && !plan.registry.is_empty() && tool_choice != ModelToolChoice::None;
    ModelRequest {
        model: String::new(), // set per attempt by `model_turn`
        messages: transcript::to_model_messages(request.instructions.as_deref(), transcript),
        tools: if tools_on {
            plan.registry.specs()
        } else {
            Vec::new()
        },
        tool_choice: if tools_on {
            tool_choice
        } else {
            ModelToolChoice::None
        },
        parallel_tool_calls: if tools_on {
            request.parallel_tool_calls
        } else {
            None
        },
        temperature: request.temperature,
        top_p: request.top_p,
        max_output_tokens,
        response_format: request
            .response_format
            .as_ref()
            .and_then(|f| f.json_schema.as_ref())
            .map(|schema| JsonSchemaFormat {
                name: schema.name.clone().unwrap_or_else(|| "response".to_owned()),
                schema: schema.schema.clone(),
                description: schema.description.clone(),
                strict: schema.strict,
            }),
        reasoning_effort: request
            .reasoning
            .as_ref()
            .and_then(|r| r.effort)
            .map(|e| e.as_str().to_owned()),
        prompt_cache_key: request.prompt_cache_key.clone(),
    }
}

fn provider_error(err: ModelError) -> ErrorInfo {
    // Codes from OpenAI's `ResponseError` list, so its SDK accepts them; the message says more.
    let code = match &err {
        ModelError::Upstream { status: 429, .. } => "rate_limit_exceeded",
        _ => "server_error",
    };
    ErrorInfo {
        message: format!("model provider error: {err}"),
        kind: Some("bad_gateway".to_owned()),
        code: Some(code.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(number: u64, url: &str) -> Source {
        Source {
            number,
            url: url.to_owned(),
            title: format!("title {number}"),
        }
    }

    fn spans(text: &str, sources: &[Source]) -> Vec<(String, u64, u64)> {
        citations(text, sources)
            .into_iter()
            .map(|a| match a {
                Annotation::UrlCitation {
                    url,
                    start_index,
                    end_index,
                    ..
                } => (url, start_index, end_index),
            })
            .collect()
    }

    #[test]
    fn usage_is_priced_from_the_table() {
        let mut prices = crate::engine::Prices::default();
        prices.models.insert(
            "openai/gpt-x".to_owned(),
            crate::engine::ModelPrice {
                input_per_million: 2.0,
                output_per_million: 8.0,
                cache_read_per_million: Some(0.5),
                cache_write_per_million: Some(2.5),
            },
        );
        prices.tools.insert("search_web".to_owned(), 0.005);
        let mut usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 500_000,
            ..Usage::default()
        };
        usage.input_tokens_details.cached_tokens = 200_000;
        usage.input_tokens_details.cache_write_tokens = 100_000;
        usage
            .tool_calls_details
            .entry("search_web".to_owned())
            .or_default()
            .invocation = 2;
        usage
            .tool_calls_details
            .entry("fetch_url".to_owned())
            .or_default()
            .invocation = 1;
        price_usage(&mut usage, "openai/gpt-x", &prices);
        let cost = usage.cost.clone().expect("priced");
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // 700k plain input at $2, 200k cache reads at $0.5, 100k cache writes at $2.5.
        assert!(close(cost.input_cost, 1.4), "{cost:?}");
        assert!(close(cost.cache_read_cost.unwrap_or_default(), 0.1));
        assert!(close(cost.cache_creation_cost.unwrap_or_default(), 0.25));
        assert!(close(cost.output_cost, 4.0));
        assert!(close(cost.tool_calls_cost.unwrap_or_default(), 0.01));
        assert!(close(cost.total_cost, 5.76));
        assert_eq!(usage.tool_calls_details["search_web"].cost_usd, Some(0.01));
        assert_eq!(usage.tool_calls_details["fetch_url"].cost_usd, None);
        let mut unpriced = Usage::default();
        price_usage(&mut unpriced, "openai/other", &prices);
        assert!(unpriced.cost.is_none());
    }

    #[test]
    fn markers_that_name_a_source_become_citations_at_character_offsets() {
        let sources = [source(1, "https://a"), source(2, "https://b")];
        let text = "Größe ist wichtig [1]. Beides [1][2], auch [2, 1]; nicht [3] oder [x] [].";
        let found = spans(text, &sources);
        let at = |needle: &str| text[..text.find(needle).unwrap()].chars().count() as u64;
        assert_eq!(
            found,
            [
                ("https://a".to_owned(), at("[1]."), at("[1].") + 3),
                ("https://a".to_owned(), at("[1][2]"), at("[1][2]") + 3),
                ("https://b".to_owned(), at("[2],"), at("[2],") + 3),
                ("https://b".to_owned(), at("[2, 1]"), at("[2, 1]") + 6),
                ("https://a".to_owned(), at("[2, 1]"), at("[2, 1]") + 6),
            ]
        );
        // The span is the marker itself.
        let chars: Vec<char> = text.chars().collect();
        let (_, start, end) = &found[0];
        assert_eq!(
            chars[*start as usize..*end as usize]
                .iter()
                .collect::<String>(),
            "[1]"
        );
        assert!(citations(text, &[]).is_empty());
    }
}
