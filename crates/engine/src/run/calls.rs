//! Where each call of a turn goes, in the model's order: an MCP tool (run now, or an approval
//! request), `tool_search`, a built-in tool (run after the MCP calls), or a custom function
//! (handed back to the caller, or refused back to the model when it fails the checks).

use protocol::events::EventData;
use protocol::input::{FunctionCallInput, FunctionCallOutput, FunctionOutput, InputItem};
use protocol::output::{FunctionCall, OutputItem, OutputStatus};

use crate::ids::new_id;
use crate::model::ToolCall;
use crate::tools::Target;

use super::state::{Machine, StepCalls};

impl Machine {
    /// Routes a turn's calls; returns what is left to run.
    pub(super) fn route_calls(&mut self, calls: Vec<ToolCall>) -> StepCalls {
        let mut step = StepCalls::default();
        for call in calls {
            match self.plan.registry.resolve(&call.name) {
                Some(Target::Mcp { server, tool }) => {
                    let needs_approval = server.needs_approval(tool);
                    let (label, tool_name) = (server.label.clone(), tool.name.clone());
                    let server_index = self.plan.registry.server_index(&label);
                    if needs_approval {
                        self.request_approval(label, tool_name, call);
                        step.approvals += 1;
                    } else if let Some(server_index) = server_index {
                        let index = self.open_mcp_call(&label, &tool_name, &call.arguments, None);
                        step.mcp.push((index, server_index));
                    }
                }
                Some(Target::ToolSearch) => self.tool_search(call),
                Some(Target::Hosted(tool)) => step.hosted.push_back((call, tool)),
                Some(Target::Function) | None => {
                    match self.plan.registry.check_call(&call.name, &call.arguments) {
                        Ok(()) => {
                            self.push_function_call(&call);
                            self.hand_back(call);
                            step.handed_back += 1;
                        }
                        Err(problem) => self.refuse_call(call, problem),
                    }
                }
            }
        }
        step
    }

    /// Records a call of the model in the transcript.
    pub(super) fn push_function_call(&mut self, call: &ToolCall) {
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

    /// Records a call and the text the model gets as its result.
    pub(super) fn push_call_result(&mut self, call: ToolCall, result: String) {
        self.push_function_call(&call);
        self.transcript
            .push(InputItem::FunctionCallOutput(FunctionCallOutput {
                call_id: call.id,
                output: FunctionOutput::Text(result),
                name: Some(call.name),
                id: None,
                status: None,
                thought_signature: None,
            }));
    }

    /// A call that cannot run (unknown tool, arguments that do not fit): the model is told why
    /// and may try again within the step budget.
    pub(super) fn refuse_call(&mut self, call: ToolCall, problem: String) {
        tracing::debug!(response_id = %self.response.id, tool = %call.name, "tool call refused; the model is told");
        self.push_call_result(call, problem);
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
}
