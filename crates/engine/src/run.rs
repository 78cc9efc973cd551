//! One run: the step loop of design.md §2.
//!
//! Each step asks the model (streaming) with the transcript and the tools visible now, forwards
//! text deltas as they arrive, and collects tool calls. Custom function calls end the run with
//! status `completed` and `function_call` items for the caller to execute; calls that fail the
//! checks (unknown tool, `strict` schema mismatch) go back to the model as errors within the step
//! budget. The last step is asked with tools disabled so the run ends with an answer.

use std::sync::Arc;

use futures::StreamExt as _;
use protocol::events::EventData;
use protocol::input::{
    FunctionCallInput, FunctionCallOutput, FunctionOutput, InputItem, InputMessage, MessageContent,
    Role,
};
use protocol::output::{
    FunctionCall, OutputContent, OutputItem, OutputMessage, OutputStatus, OutputText,
};
use protocol::request::{CreateRequest, ToolChoice, ToolChoiceMode};
use protocol::response::{ErrorInfo, IncompleteDetails, Response, ResponseStatus, Usage};
use tokio_util::sync::CancellationToken;

use crate::engine::{new_id, now_secs};
use crate::events::EventLog;
use crate::model::{
    FinishReason, JsonSchemaFormat, ModelError, ModelEvent, ModelRequest, ModelToolChoice,
    ResolvedModel, ToolCall,
};
use crate::store::{ResponseRecord, Store};
use crate::tools::Registry;
use crate::transcript;

/// How often a turn in progress writes its new events to the store.
const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// Everything a run needs, resolved before it starts.
pub struct RunPlan {
    pub project_id: String,
    pub request: CreateRequest,
    pub model: ResolvedModel,
    pub registry: Registry,
    /// The transcript the run starts from (previous transcript + this request's input).
    pub transcript: Vec<InputItem>,
    pub max_steps: u32,
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
}

/// How the step loop ended (failures are `Err(ErrorInfo)`).
enum Outcome {
    Completed,
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

/// What one model turn produced.
struct Turn {
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
        }
    }

    /// Runs to the end, stores the result and returns the final response.
    pub async fn execute(mut self) -> Response {
        self.emit(EventData::ResponseCreated {
            response: Box::new(self.response.clone()),
        });
        self.response.status = ResponseStatus::InProgress;
        self.emit(EventData::ResponseInProgress {
            response: Box::new(self.response.clone()),
        });
        let outcome = match self.steps().await {
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
                return Ok(Outcome::Completed);
            }
            let mut handed_back = 0;
            for call in turn.calls {
                self.transcript
                    .push(InputItem::FunctionCall(FunctionCallInput {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                        id: None,
                        status: None,
                        thought_signature: call.thought_signature.clone(),
                    }));
                match self.plan.registry.check_call(&call.name, &call.arguments) {
                    Ok(()) => {
                        self.hand_back(call);
                        handed_back += 1;
                    }
                    Err(problem) => {
                        tracing::debug!(response_id = %self.response.id, tool = %call.name, "tool call refused; the model is told");
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
                }
            }
            if handed_back > 0 {
                // The caller runs the functions and continues the conversation.
                return Ok(Outcome::Completed);
            }
        }
        Ok(Outcome::Incomplete("max_steps"))
    }

    fn model_request(&self, tools_on: bool, max_output_tokens: Option<u32>) -> ModelRequest {
        let request = &self.plan.request;
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
        let tools_on =
            tools_on && !self.plan.registry.is_empty() && tool_choice != ModelToolChoice::None;
        ModelRequest {
            model: self.plan.model.upstream_model.clone(),
            messages: transcript::to_model_messages(
                request.instructions.as_deref(),
                &self.transcript,
            ),
            tools: if tools_on {
                self.plan.registry.specs()
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

    /// Streams one model turn, forwarding text as it arrives.
    async fn model_turn(&mut self, request: ModelRequest) -> Result<Turn, Stop> {
        let client = self.plan.model.client.clone();
        let mut stream = tokio::select! {
            started = client.stream(request) => started.map_err(provider_error)?,
            () = self.cancel.cancelled() => return Err(Stop::Cancelled),
        };
        // (output index, item id, text so far) of the message being streamed.
        let mut message: Option<(usize, String, String)> = None;
        let mut calls: Vec<PartialCall> = Vec::new();
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
                    self.usage.output_tokens_details.reasoning_tokens += usage.reasoning_tokens;
                }
                Ok(ModelEvent::Finish(reason)) => finish = Some(reason),
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
            return Err(failure);
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
            part: text_part(text),
        });
        let item = OutputItem::Message(OutputMessage {
            id: item_id,
            status,
            role: "assistant".to_owned(),
            content: vec![text_part(text)],
        });
        self.response.output[index] = item.clone();
        self.emit(EventData::OutputItemDone {
            output_index: index,
            item,
        });
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
    async fn finish(mut self, outcome: Result<Outcome, ErrorInfo>) -> Response {
        self.usage.total_tokens = self.usage.input_tokens + self.usage.output_tokens;
        self.response.usage = Some(self.usage.clone());
        self.response.completed_at = Some(now_secs());
        match &outcome {
            Ok(Outcome::Completed) => self.response.status = ResponseStatus::Completed,
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
            Ok(Outcome::Completed) => EventData::ResponseCompleted { response: snapshot },
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
        self.response
    }
}

fn text_part(text: &str) -> OutputContent {
    OutputContent::OutputText(OutputText {
        text: text.to_owned(),
        annotations: Vec::new(),
        logprobs: Vec::new(),
    })
}

/// A provider failure as the run's error. Adapters keep secrets out of their messages.
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
