//! One model turn: text deltas forwarded as they arrive (one `message` item per turn, with
//! logprobs when asked for), tool-call pieces assembled (a custom function's arguments stream
//! as `response.function_call_arguments.delta` when nothing needs the whole call first),
//! reasoning blocks and usage kept. The message's phase is known at the end: `commentary` when
//! the turn also called tools, `final_answer` otherwise.

use std::sync::Arc;

use protocol::events::EventData;
use protocol::input::{InputItem, InputMessage, MessageContent, Role};
use protocol::output::{
    FunctionCall, MessagePhase, OutputContent, OutputItem, OutputMessage, OutputStatus, OutputText,
};

use crate::citations::citations;
use crate::code::Code;
use crate::error::RunFailure;
use crate::ids::{new_call_id, new_id};
use crate::model::{FinishReason, ModelError, ModelEvent, TokenLogprob, ToolCall};
use crate::transcript;

use super::effects::{Effect, MessageHead, TextDelta};
use super::state::{Machine, OpenCall, OpenMessage, PartialCall, Phase, TurnState};
use super::turns::add_usage;

/// The first capacity of a streamed message's text: a short answer's without growing it
/// token by token (it grew 8, 16, …, 512, copying it each time).
const MESSAGE_CAPACITY: usize = 512;

/// What a finished turn asks for.
pub(super) enum TurnEnd {
    /// The output token cap cut the turn.
    OutOfTokens,
    /// A final answer (its text, if any).
    Answer(Option<String>),
    /// Tool calls, in the model's order, with the items opened while they streamed.
    Calls(Vec<(ToolCall, Option<OpenCall>)>),
}

impl Machine {
    pub(super) fn model_event(&mut self, turn: &mut TurnState, event: ModelEvent) {
        match event {
            ModelEvent::TextDelta(delta) => {
                if !delta.is_empty() {
                    self.first_output(turn);
                }
                self.text_delta(turn, delta);
            }
            ModelEvent::Logprobs(tokens) => {
                if self.plan.request.wants_logprobs() {
                    turn.pending_logprobs.extend(tokens);
                }
            }
            ModelEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments,
                thought_signature,
            } => {
                self.first_output(turn);
                if turn.calls.len() <= index {
                    turn.calls.resize_with(index + 1, PartialCall::default);
                }
                let call = &mut turn.calls[index];
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
                self.stream_call(&mut turn.calls[index], &arguments);
            }
            ModelEvent::Usage(usage) => {
                add_usage(turn, &usage);
                let total = &mut self.usage;
                total.input_tokens += usage.input_tokens;
                total.output_tokens += usage.output_tokens;
                let input = &mut total.input_tokens_details;
                input.cached_tokens += usage.cached_input_tokens;
                input.cache_read_input_tokens += usage.cached_input_tokens;
                input.cache_creation_input_tokens += usage.cache_write_tokens;
                input.cache_write_tokens += usage.cache_write_tokens;
                total.output_tokens_details.reasoning_tokens += usage.reasoning_tokens;
            }
            ModelEvent::Reasoning(block) => {
                self.first_output(turn);
                turn.reasoning.push(block);
            }
            ModelEvent::Finish(reason) => turn.finish = Some(reason),
        }
    }

    /// The event of almost every token, taken where the turn is (the machine's step moves
    /// the phase out and back for every input): the text of the turn's message once it is
    /// open, with no logprobs waiting for it. Exactly what [`Machine::model_event`] does with
    /// it then; any other event (or state) is handed back for the step.
    pub(super) fn text_delta_in_place(&mut self, event: ModelEvent) -> Result<(), ModelEvent> {
        let ModelEvent::TextDelta(delta) = event else {
            return Err(event);
        };
        let Phase::Asking { turn, .. } = &mut self.phase else {
            return Err(ModelEvent::TextDelta(delta));
        };
        match &mut turn.message {
            // The message opens at the turn's first output: `first_output` has nothing to do.
            Some(message)
                if !delta.is_empty()
                    && turn.first_ms.is_some()
                    && turn.pending_logprobs.is_empty() =>
            {
                message.text.push_str(&delta);
                let head = Arc::clone(&message.head);
                self.effects.push(Effect::TextDelta(TextDelta {
                    head,
                    delta,
                    logprobs: Vec::new(),
                }));
                Ok(())
            }
            _ => Err(ModelEvent::TextDelta(delta)),
        }
    }

    fn text_delta(&mut self, turn: &mut TurnState, delta: String) {
        if delta.is_empty() {
            return;
        }
        if turn.message.is_none() {
            turn.message = Some(self.open_message());
        }
        let logprobs = if turn.pending_logprobs.is_empty() {
            Vec::new()
        } else {
            logprob_values(std::mem::take(&mut turn.pending_logprobs))
        };
        if let Some(message) = &mut turn.message {
            message.text.push_str(&delta);
            message.logprobs.extend(logprobs.iter().cloned());
            let delta = TextDelta {
                head: Arc::clone(&message.head),
                delta,
                logprobs,
            };
            self.effect(Effect::TextDelta(delta));
        }
    }

    /// Streams a custom function call's arguments as they arrive: its item opens once its name
    /// is known to be a function whose arguments need no check first (no `strict` schema) and
    /// no `max_tool_calls` cap may refuse it.
    fn stream_call(&mut self, call: &mut PartialCall, piece: &str) {
        if let Some(open) = &call.open {
            if !piece.is_empty() {
                self.emit(EventData::FunctionCallArgumentsDelta {
                    item_id: open.item_id.clone(),
                    output_index: open.index,
                    delta: piece.to_owned(),
                });
            }
            return;
        }
        if call.name.is_empty()
            || self.response.max_tool_calls.is_some()
            || !self.plan.registry.is_unchecked_function(&call.name)
        {
            return;
        }
        let call_id = call.id.get_or_insert_with(new_call_id).clone();
        let open = OpenCall {
            index: self.response.output.len(),
            item_id: new_id("fc"),
        };
        let item = OutputItem::FunctionCall(FunctionCall {
            id: open.item_id.clone(),
            call_id,
            name: call.name.clone(),
            arguments: String::new(),
            status: OutputStatus::InProgress,
            thought_signature: None,
        });
        self.response.output.push(item.clone());
        self.emit(EventData::OutputItemAdded {
            output_index: open.index,
            item,
        });
        if !call.arguments.is_empty() {
            self.emit(EventData::FunctionCallArgumentsDelta {
                item_id: open.item_id.clone(),
                output_index: open.index,
                delta: call.arguments.clone(),
            });
        }
        call.open = Some(open);
    }

    /// The turn's stream ended: the model that answered becomes the run's model, the turn's
    /// reasoning and text go into the transcript, and what the turn asks for is returned.
    pub(super) fn end_turn(&mut self, attempt: usize, turn: TurnState) -> TurnEnd {
        let cut = matches!(turn.finish, Some(FinishReason::Length));
        let TurnState {
            message,
            calls,
            reasoning,
            ..
        } = turn;
        let calls: Vec<PartialCall> = calls.into_iter().filter(|c| !c.name.is_empty()).collect();
        let (status, phase) = match (cut, calls.is_empty()) {
            (true, _) => (OutputStatus::Incomplete, None),
            (false, true) => (OutputStatus::Completed, Some(MessagePhase::FinalAnswer)),
            (false, false) => (OutputStatus::Completed, Some(MessagePhase::Commentary)),
        };
        let text = message.map(|message| self.close_open(message, status, phase));
        self.active_model = attempt;
        if let Some((id, _)) = self.plan.models.get(attempt) {
            self.response.model = id.clone();
        }
        self.effect(Effect::Flush);
        self.transcript.extend(
            reasoning
                .iter()
                .map(|block| InputItem::Reasoning(transcript::reasoning_item(block))),
        );
        if let Some(text) = &text {
            self.transcript.push(InputItem::Message(InputMessage {
                role: Role::Assistant,
                content: MessageContent::Text(text.clone()),
                id: None,
                status: None,
                phase,
            }));
        }
        if cut {
            self.close_calls(calls);
            return TurnEnd::OutOfTokens;
        }
        if calls.is_empty() {
            TurnEnd::Answer(text)
        } else {
            TurnEnd::Calls(calls.into_iter().map(assemble).collect())
        }
    }

    /// Ends a turn that will not go on (cancelled, failed): its message and the calls opened
    /// while they streamed are closed `incomplete`.
    pub(super) fn abandon_turn(&mut self, turn: TurnState) {
        if let Some(message) = turn.message {
            self.close_open(message, OutputStatus::Incomplete, None);
        }
        self.close_calls(turn.calls);
    }

    /// Closes the items of calls that will not be handed back, `incomplete`.
    fn close_calls(&mut self, calls: Vec<PartialCall>) {
        for call in calls {
            let Some(open) = call.open else { continue };
            if let Some(OutputItem::FunctionCall(item)) = self.response.output.get_mut(open.index) {
                item.arguments = call.arguments;
                item.status = OutputStatus::Incomplete;
                let item = OutputItem::FunctionCall(item.clone());
                self.emit(EventData::OutputItemDone {
                    output_index: open.index,
                    item,
                });
            }
        }
    }

    /// Opens the turn's `message` item (`output_item.added`, `content_part.added`).
    fn open_message(&mut self) -> OpenMessage {
        let index = self.response.output.len();
        let id = new_id("msg");
        let item = OutputItem::Message(OutputMessage {
            id: id.clone(),
            status: OutputStatus::InProgress,
            role: "assistant".to_owned(),
            content: Vec::new(),
            phase: None,
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
        OpenMessage {
            index,
            head: Arc::new(MessageHead::new(id, index)),
            text: String::with_capacity(MESSAGE_CAPACITY),
            logprobs: Vec::new(),
        }
    }

    /// Completes a message item with its text, citations and phase; returns the text.
    fn close_open(
        &mut self,
        message: OpenMessage,
        status: OutputStatus,
        phase: Option<MessagePhase>,
    ) -> String {
        let OpenMessage {
            index,
            head,
            text,
            logprobs,
        } = message;
        let id = &head.id;
        let part = OutputContent::OutputText(OutputText {
            text: text.clone(),
            annotations: citations(&text, &self.sources),
            logprobs: logprobs.clone(),
        });
        self.emit(EventData::OutputTextDone {
            item_id: id.clone(),
            output_index: index,
            content_index: 0,
            text: text.clone(),
            logprobs,
        });
        self.emit(EventData::ContentPartDone {
            item_id: id.clone(),
            output_index: index,
            content_index: 0,
            part: part.clone(),
        });
        let item = OutputItem::Message(OutputMessage {
            id: id.clone(),
            status,
            role: "assistant".to_owned(),
            content: vec![part],
            phase,
        });
        if let Some(slot) = self.response.output.get_mut(index) {
            *slot = item.clone();
        }
        self.emit(EventData::OutputItemDone {
            output_index: index,
            item,
        });
        text
    }
}

fn text_part(text: &str) -> OutputContent {
    OutputContent::OutputText(OutputText {
        text: text.to_owned(),
        annotations: Vec::new(),
        logprobs: Vec::new(),
    })
}

/// Logprobs as the wire carries them (OpenAI's `{token, logprob, bytes, top_logprobs}`).
fn logprob_values(tokens: Vec<TokenLogprob>) -> Vec<serde_json::Value> {
    tokens
        .into_iter()
        .filter_map(|token| serde_json::to_value(token).ok())
        .collect()
}

/// A call as the model made it; an upstream that gave no id gets one, empty arguments are `{}`.
fn assemble(call: PartialCall) -> (ToolCall, Option<OpenCall>) {
    let tool_call = ToolCall {
        id: call.id.unwrap_or_else(new_call_id),
        name: call.name,
        arguments: if call.arguments.trim().is_empty() {
            "{}".to_owned()
        } else {
            call.arguments
        },
        thought_signature: call.thought_signature,
    };
    (tool_call, call.open)
}

/// A provider failure as the run's error. Adapters keep secrets out of their messages.
pub(crate) fn provider_failure(err: ModelError) -> RunFailure {
    let code = match &err {
        ModelError::Upstream { status: 429, .. } => Code::ProviderRateLimited,
        _ => Code::Provider,
    };
    RunFailure::new(code, format!("model provider error: {err}"))
}
