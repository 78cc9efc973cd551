//! Built-in tool calls: their items go into the output, their text to the model, their
//! invocations into `usage.tool_calls_details`, and their sources join the run's numbering for
//! citations. Calls run one after another (each may work concurrently inside).

use crate::hosted::ToolOutcome;
use crate::model::ToolCall;

use super::state::Machine;

impl Machine {
    /// One built-in call ended.
    pub(super) fn hosted_done(&mut self, call: ToolCall, outcome: ToolOutcome) {
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
        let last = outcome.sources.iter().map(|s| s.number).max();
        if let Some(last) = last.max(outcome.last_number) {
            self.next_source = self.next_source.max(last + 1);
        }
        self.sources.extend(outcome.sources);
        self.push_call_result(call, outcome.model_text);
    }
}
