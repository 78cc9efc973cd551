//! The record of each model turn (one call to the model): when it was sent, how long it took,
//! when the first output came, the model and the tokens the upstream reported. The turns go
//! into the final record (`finish.rs`) and reach the store with the write that ends the run:
//! recording them costs no write of its own.

use protocol::listing::{ModelTurn, ModelTurnStatus, ModelTurnUsage};

use crate::model::TokenUsage;

use super::state::{Machine, Phase, TurnState};

impl Machine {
    /// The driver is about to send the turn's request: the turn starts now (not when the
    /// machine asked for it, which may be before a flush of the event log).
    pub(crate) fn turn_sent(&mut self) {
        let now = self.clock.now_ms();
        if let Phase::Asking { turn, .. } = &mut self.phase {
            turn.started_ms = now;
        }
    }

    /// Notes the time of the turn's first output (text, a tool call, reasoning).
    pub(super) fn first_output(&self, turn: &mut TurnState) {
        if turn.first_ms.is_none() {
            turn.first_ms = Some(self.clock.now_ms());
        }
    }

    /// Records a turn that ended (on `plan.models[attempt]`).
    pub(super) fn record_turn(
        &mut self,
        attempt: usize,
        turn: &TurnState,
        status: ModelTurnStatus,
        error: Option<String>,
    ) {
        let now = self.clock.now_ms();
        let since_start = |at: i64| u64::try_from(at.saturating_sub(turn.started_ms)).unwrap_or(0);
        let model = self
            .plan
            .models
            .get(attempt)
            .map(|(id, _)| id.clone())
            .unwrap_or_default();
        self.turns.push(ModelTurn {
            step: self.step,
            model,
            started_at_ms: turn.started_ms,
            duration_ms: since_start(now),
            time_to_first_token_ms: turn.first_ms.map(since_start),
            status,
            usage: turn.usage.map(|usage| ModelTurnUsage {
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                cached_tokens: usage.cached_input_tokens,
                cache_write_tokens: usage.cache_write_tokens,
                reasoning_tokens: usage.reasoning_tokens,
            }),
            error,
        });
    }
}

/// Adds reported tokens to the turn's.
pub(super) fn add_usage(turn: &mut TurnState, usage: &TokenUsage) {
    let sum = turn.usage.get_or_insert_with(TokenUsage::default);
    sum.input_tokens += usage.input_tokens;
    sum.output_tokens += usage.output_tokens;
    sum.cached_input_tokens += usage.cached_input_tokens;
    sum.reasoning_tokens += usage.reasoning_tokens;
    sum.cache_write_tokens += usage.cache_write_tokens;
}
