//! Where each call of a turn goes, in the model's order: an MCP tool (run now, or an approval
//! request), `tool_search`, a built-in tool (run after the MCP calls), or a custom function
//! (handed back to the caller, or refused back to the model when it fails the checks). Calls
//! beyond `max_tool_calls` are refused back to the model, whatever their kind.

use protocol::events::EventData;
use protocol::input::{FunctionCallInput, FunctionCallOutput, FunctionOutput, InputItem};
use protocol::output::{FunctionCall, OutputItem, OutputStatus};

use crate::ids::new_id;
use crate::model::ToolCall;
use crate::tools::Target;

use super::state::{Machine, OpenCall, StepCalls};

impl Machine {
    /// Routes a turn's calls; returns what is left to run.
    pub(super) fn route_calls(&mut self, calls: Vec<(ToolCall, Option<OpenCall>)>) -> StepCalls {
        let mut step = StepCalls::default();
        for (call, open) in calls {
            if !self.tool_calls_left() {
                let cap = self.response.max_tool_calls.unwrap_or_default();
                self.refuse_call(
                    call,
                    format!(
                        "error: this response allows at most {cap} tool calls (max_tool_calls) and they are used up; answer without calling tools"
                    ),
                );
                continue;
            }
            self.tool_calls += 1;
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
                            self.hand_back(call, open);
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

    /// Completes a `function_call` item for the caller to execute: the one opened while its
    /// arguments streamed, or a new one with its arguments in one piece.
    fn hand_back(&mut self, call: ToolCall, open: Option<OpenCall>) {
        let open = match open {
            Some(open) => open,
            None => {
                let open = OpenCall {
                    index: self.response.output.len(),
                    item_id: new_id("fc"),
                };
                let item = OutputItem::FunctionCall(FunctionCall {
                    id: open.item_id.clone(),
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: String::new(),
                    status: OutputStatus::InProgress,
                    thought_signature: call.thought_signature.clone(),
                });
                self.response.output.push(item.clone());
                self.emit(EventData::OutputItemAdded {
                    output_index: open.index,
                    item,
                });
                self.emit(EventData::FunctionCallArgumentsDelta {
                    item_id: open.item_id.clone(),
                    output_index: open.index,
                    delta: call.arguments.clone(),
                });
                open
            }
        };
        self.emit(EventData::FunctionCallArgumentsDone {
            item_id: open.item_id.clone(),
            output_index: open.index,
            arguments: call.arguments.clone(),
        });
        let item = OutputItem::FunctionCall(FunctionCall {
            id: open.item_id,
            call_id: call.id,
            name: call.name,
            arguments: call.arguments,
            status: OutputStatus::Completed,
            thought_signature: call.thought_signature,
        });
        if let Some(slot) = self.response.output.get_mut(open.index) {
            *slot = item.clone();
        }
        self.emit(EventData::OutputItemDone {
            output_index: open.index,
            item,
        });
    }
}
