//! The run's state: the [`Machine`] and what it holds between inputs (where the run is, the
//! calls of a step still running, the turn being streamed), with the primitives every part of
//! the machine uses to ask for effects.

use std::collections::VecDeque;
use std::sync::Arc;

use protocol::events::EventData;
use protocol::input::InputItem;
use protocol::output::{McpApprovalRequest, OutputItem};
use protocol::response::{Response, Usage};

use crate::clock::Clock;
use crate::error::RunFailure;
use crate::hosted::{HostedTool, Source};
use crate::model::{FinishReason, ModelRequest, Reasoning, TokenLogprob, TokenUsage, ToolCall};
use crate::plan::RunPlan;

use super::effects::{Effect, MessageHead};

/// How a run ends.
pub(super) enum Outcome {
    Completed,
    /// Stopped for MCP approvals.
    RequiresAction,
    Incomplete(&'static str),
    Cancelled,
    Failed(RunFailure),
}

/// Where the run is. A few words (the turn and the calls boxed): the machine moves the phase
/// out and back for every input, one per token of a streamed turn.
pub(super) enum Phase {
    /// Not started.
    Created,
    /// Waiting for discovery; these approved calls run after it.
    Discovering(Vec<McpApprovalRequest>),
    /// Running calls (a continuation's approved calls, or a turn's).
    Calling(Box<StepCalls>),
    /// Waiting for changed tool lists before the step's model turn.
    Refreshing,
    /// A model turn is streaming on `plan.models[attempt]`.
    Asking {
        attempt: usize,
        /// The step's request, kept for the next model of the chain when there is one (`None`
        /// on the chain's last model: a deep conversation's request is large, and copying it
        /// for nothing cost 6% of a turn).
        request: Option<Box<ModelRequest>>,
        turn: Box<TurnState>,
    },
    /// Finished; every further input is ignored.
    Ended,
}

/// The calls of one step (or a continuation's approved calls) still to finish.
#[derive(Default)]
pub(super) struct StepCalls {
    /// Output indices of opened `mcp_call` items not yet sent to the driver.
    pub(super) mcp: Vec<(usize, usize)>,
    /// Output indices of `mcp_call` items the driver is running.
    pub(super) mcp_running: Vec<usize>,
    /// Built-in calls still to run, one after another, in the model's order.
    pub(super) hosted: VecDeque<(ToolCall, Arc<dyn HostedTool>)>,
    /// The built-in call the driver is running.
    pub(super) hosted_running: Option<ToolCall>,
    /// Calls that wait for the caller's approval.
    pub(super) approvals: usize,
    /// Custom function calls handed back to the caller.
    pub(super) handed_back: usize,
    /// Whether these are a continuation's approved calls (the first step follows them).
    pub(super) before_first_step: bool,
}

/// One run's state. Each [`Machine::on`] applies one input and returns the effects to carry out.
pub(crate) struct Machine {
    pub(super) plan: RunPlan,
    pub(super) response: Response,
    /// Grows as the model works: the continuation transcript stored at the end. The plan's
    /// transcript, taken over (not copied): the run only appends to it, so its first
    /// `input_end` items are the plan's.
    pub(super) transcript: Vec<InputItem>,
    /// Where this request's input ends in `transcript` (the plan's transcript's length).
    pub(super) input_end: usize,
    pub(super) usage: Usage,
    /// Sources built-in tools returned, which the answer may cite as `[n]`.
    pub(super) sources: Vec<Source>,
    /// The number the next source gets.
    pub(super) next_source: u64,
    /// The model of `plan.models` in use: the one that answered last.
    pub(super) active_model: usize,
    /// Steps begun so far.
    pub(super) step: u32,
    /// Tool calls of every kind made so far (`max_tool_calls` caps them).
    pub(super) tool_calls: u32,
    /// The model turns ended so far, stored with the final record (`turns.rs`).
    pub(super) turns: Vec<protocol::listing::ModelTurn>,
    pub(super) phase: Phase,
    /// Set when the run failed before the model was asked (a plain request answers it as an
    /// HTTP error).
    pub(super) start_error: Option<RunFailure>,
    pub(super) clock: Arc<dyn Clock>,
    /// The effects of the input being applied.
    pub(super) effects: Vec<Effect>,
    /// The initial response's JSON, shared with its stored row: `response.created` and
    /// `response.in_progress` are written around it (see [`Machine::share_initial`]).
    pub(super) initial_json: Option<Arc<str>>,
}

/// What a turn has produced so far.
#[derive(Default)]
pub(super) struct TurnState {
    /// The message being streamed.
    pub(super) message: Option<OpenMessage>,
    pub(super) calls: Vec<PartialCall>,
    /// Reasoning blocks, kept in the transcript ahead of the turn's text and calls.
    pub(super) reasoning: Vec<Reasoning>,
    pub(super) finish: Option<FinishReason>,
    /// Logprobs the upstream sent for the text delta that comes next.
    pub(super) pending_logprobs: Vec<TokenLogprob>,
    /// When the request went to the model (Unix milliseconds; set again by the driver just
    /// before it sends the request).
    pub(super) started_ms: i64,
    /// When the first text, tool call or reasoning arrived (Unix milliseconds).
    pub(super) first_ms: Option<i64>,
    /// The turn's reported tokens, summed (`None`: the upstream reported none).
    pub(super) usage: Option<TokenUsage>,
}

/// The turn's `message` item while it streams.
pub(super) struct OpenMessage {
    pub(super) index: usize,
    /// Its id and its delta lines' head, shared by every delta of the message.
    pub(super) head: Arc<MessageHead>,
    pub(super) text: String,
    /// The logprobs of `text`, when the request asked for them.
    pub(super) logprobs: Vec<serde_json::Value>,
}

/// A call's `function_call` item opened while the model streams its arguments.
#[derive(Debug, Clone)]
pub(super) struct OpenCall {
    pub(super) index: usize,
    pub(super) item_id: String,
}

impl TurnState {
    /// Whether the caller has seen any of this turn (text or calls): past that point another
    /// model of the chain can no longer take the turn over.
    pub(super) fn produced_output(&self) -> bool {
        self.message.is_some() || !self.calls.is_empty()
    }
}

#[derive(Default)]
pub(super) struct PartialCall {
    pub(super) id: Option<String>,
    pub(super) name: String,
    pub(super) arguments: String,
    pub(super) thought_signature: Option<String>,
    /// Its item, when it was opened as the arguments streamed.
    pub(super) open: Option<OpenCall>,
}

impl Machine {
    pub(crate) fn new(mut plan: RunPlan, response: Response, clock: Arc<dyn Clock>) -> Machine {
        let transcript = std::mem::take(&mut plan.transcript);
        Machine {
            plan,
            response,
            input_end: transcript.len(),
            transcript,
            usage: Usage::default(),
            sources: Vec::new(),
            next_source: 1,
            active_model: 0,
            step: 0,
            tool_calls: 0,
            turns: Vec::new(),
            phase: Phase::Created,
            start_error: None,
            clock,
            effects: Vec::new(),
            initial_json: None,
        }
    }

    /// `json` is the response given to [`Machine::new`], serialized: the run's first two
    /// events (a foreground run's, whose status is `in_progress` in both) are written around
    /// it instead of serializing the response twice more.
    pub(crate) fn share_initial(&mut self, json: Option<Arc<str>>) {
        self.initial_json = json;
    }

    /// The run's response id.
    pub(crate) fn response_id(&self) -> &str {
        &self.response.id
    }

    /// The run's project.
    pub(crate) fn project_id(&self) -> &str {
        &self.plan.project_id
    }

    /// The secret values the request's connectors lent to the sandbox.
    pub(crate) fn lent(&self) -> &[secrecy::SecretString] {
        self.plan.registry.lent()
    }

    /// The conversation the run belongs to: the first response of its chain.
    pub(crate) fn conversation(&self) -> &str {
        self.plan
            .conversation
            .as_deref()
            .unwrap_or(&self.response.id)
    }

    pub(super) fn effect(&mut self, effect: Effect) {
        self.effects.push(effect);
    }

    pub(super) fn emit(&mut self, data: EventData) {
        self.effects.push(Effect::Emit(Box::new(data)));
    }

    /// Whether `max_tool_calls` leaves room for another tool call.
    pub(super) fn tool_calls_left(&self) -> bool {
        self.response
            .max_tool_calls
            .is_none_or(|cap| self.tool_calls < cap)
    }

    /// Adds a finished item to the output (`output_item.added` then `.done`).
    pub(super) fn emit_item(&mut self, item: OutputItem) -> usize {
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
}

#[cfg(test)]
mod tests {
    /// The phase stays a few words: it is moved out and back for every input (it was 256
    /// bytes with the turn inline).
    #[test]
    fn a_phase_is_small() {
        assert!(std::mem::size_of::<super::Phase>() <= 40);
    }
}
