//! One model turn: text deltas forwarded as they arrive (one `message` item per turn), tool-call
//! pieces assembled, reasoning blocks and usage kept, and the `models` fallback chain (a model
//! that fails before producing any output hands the turn to the next one; the model that
//! answers becomes the run's model).

use protocol::events::EventData;
use protocol::input::{InputItem, InputMessage, MessageContent, Role};
use protocol::output::{OutputContent, OutputItem, OutputMessage, OutputStatus, OutputText};

use crate::citations::citations;
use crate::code::Code;
use crate::error::RunFailure;
use crate::ids::{new_call_id, new_id};
use crate::model::{FinishReason, ModelError, ModelEvent, ToolCall};
use crate::transcript;

use super::effects::Effect;
use super::state::{Machine, PartialCall, TurnState};

/// What a finished turn asks for.
pub(super) enum TurnEnd {
    /// The output token cap cut the turn.
    OutOfTokens,
    /// A final answer (its text, if any).
    Answer(Option<String>),
    /// Tool calls, in the model's order.
    Calls(Vec<ToolCall>),
}

impl Machine {
    pub(super) fn model_event(&mut self, turn: &mut TurnState, event: ModelEvent) {
        match event {
            ModelEvent::TextDelta(delta) => {
                if delta.is_empty() {
                    return;
                }
                if turn.message.is_none() {
                    turn.message = Some(self.open_message());
                }
                if let Some((index, item_id, text)) = &mut turn.message {
                    text.push_str(&delta);
                    let (output_index, item_id) = (*index, item_id.clone());
                    self.emit(EventData::OutputTextDelta {
                        item_id,
                        output_index,
                        content_index: 0,
                        delta,
                        logprobs: Vec::new(),
                    });
                }
            }
            ModelEvent::ToolCallDelta {
                index,
                id,
                name,
                arguments,
                thought_signature,
            } => {
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
            }
            ModelEvent::Usage(usage) => {
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
            ModelEvent::Reasoning(block) => turn.reasoning.push(block),
            ModelEvent::Finish(reason) => turn.finish = Some(reason),
        }
    }

    /// The turn's stream ended: the model that answered becomes the run's model, the turn's
    /// reasoning and text go into the transcript, and what the turn asks for is returned.
    pub(super) fn end_turn(&mut self, attempt: usize, turn: TurnState) -> TurnEnd {
        let status = if matches!(turn.finish, Some(FinishReason::Length)) {
            OutputStatus::Incomplete
        } else {
            OutputStatus::Completed
        };
        let TurnState {
            message,
            calls,
            reasoning,
            finish,
        } = turn;
        let text = message.map(|message| self.close_open(message, status));
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
            }));
        }
        if matches!(finish, Some(FinishReason::Length)) {
            return TurnEnd::OutOfTokens;
        }
        let calls: Vec<ToolCall> = calls
            .into_iter()
            .filter(|c| !c.name.is_empty())
            .map(assemble)
            .collect();
        if calls.is_empty() {
            TurnEnd::Answer(text)
        } else {
            TurnEnd::Calls(calls)
        }
    }

    /// Closes the turn's message, if it has one, with `status`.
    pub(super) fn close_message(&mut self, turn: TurnState, status: OutputStatus) {
        if let Some(message) = turn.message {
            self.close_open(message, status);
        }
    }

    /// Opens the turn's `message` item (`output_item.added`, `content_part.added`).
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

    /// Completes a message item with its text and citations; returns the text.
    fn close_open(
        &mut self,
        (index, item_id, text): (usize, String, String),
        status: OutputStatus,
    ) -> String {
        let part = OutputContent::OutputText(OutputText {
            text: text.clone(),
            annotations: citations(&text, &self.sources),
            logprobs: Vec::new(),
        });
        self.emit(EventData::OutputTextDone {
            item_id: item_id.clone(),
            output_index: index,
            content_index: 0,
            text: text.clone(),
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

/// A call as the model made it; an upstream that gave no id gets one, empty arguments are `{}`.
fn assemble(call: PartialCall) -> ToolCall {
    ToolCall {
        id: call.id.unwrap_or_else(new_call_id),
        name: call.name,
        arguments: if call.arguments.trim().is_empty() {
            "{}".to_owned()
        } else {
            call.arguments
        },
        thought_signature: call.thought_signature,
    }
}

/// A provider failure as the run's error. Adapters keep secrets out of their messages.
pub(super) fn provider_failure(err: ModelError) -> RunFailure {
    let code = match &err {
        ModelError::Upstream { status: 429, .. } => Code::ProviderRateLimited,
        _ => Code::Provider,
    };
    RunFailure::new(code, format!("model provider error: {err}"))
}
