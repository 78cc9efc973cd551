//! MCP in a run: the approval decisions of a continuation, discovery when the run starts (one
//! `mcp_list_tools` item per server whose list is new or changed), lists refreshed when a server
//! announces a change, approval requests, and `mcp_call` items (opened when a call starts,
//! completed in the model's order when the calls of a turn end).

use protocol::events::EventData;
use protocol::input::InputItem;
use protocol::output::{
    McpApprovalRequest, McpCall, McpListTools, McpToolAnnotations, McpToolDef, OutputItem,
};
use protocol::written::Written;

use crate::approvals;
use crate::code::Code;
use crate::error::RunFailure;
use crate::ids::new_id;
use crate::mcp::{McpCallResult, McpError, McpToolInfo};
use crate::model::ToolCall;
use crate::tools::ServerDef;

use super::effects::{CallBound, DiscoverJob, McpJob};
use super::state::{Machine, StepCalls};

/// What `prepare` found: the approved calls to run, and the discovery to do first.
pub(super) struct Prepared {
    pub(super) approved: Vec<McpApprovalRequest>,
    pub(super) discover: Option<Vec<DiscoverJob>>,
}

/// Longest MCP tool output kept on an `mcp_call` item and given to the model.
const MAX_MCP_OUTPUT_BYTES: usize = 100_000;

impl Machine {
    /// Before the first model turn: checks the approval decisions of a continuation and
    /// returns the approved calls to run, with the discovery to do first (`None`: the request
    /// has no MCP server).
    pub(super) fn prepare(&mut self) -> Result<Prepared, RunFailure> {
        let approved = approvals::approved_to_run(&self.transcript, self.plan.new_from)?;
        if let Some(request) = approved.iter().find(|request| {
            self.plan
                .registry
                .server_index(&request.server_label)
                .is_none()
        }) {
            let message = format!(
                "the approved call \"{}\" is for MCP server \"{}\", which this request does not include: send the same mcp tool again to continue",
                request.id, request.server_label
            );
            return Err(RunFailure::new(Code::ExternalConnector, message));
        }
        if self.plan.registry.servers().is_empty() {
            return Ok(Prepared {
                approved,
                discover: None,
            });
        }
        let jobs = self
            .plan
            .registry
            .servers()
            .iter()
            .enumerate()
            .map(|(server, def)| {
                let reuse = last_list(&self.transcript, &def.label).is_some()
                    && self.plan.previous_servers.get(&def.label)
                        == Some(&(def.url.clone(), server_allowed(def)));
                DiscoverJob {
                    server,
                    endpoint: def.endpoint(),
                    transport: def
                        .connector
                        .as_ref()
                        .map(|c| c.transport)
                        .unwrap_or_default(),
                    timeout: def.connector.as_ref().and_then(|c| c.timeout),
                    list: !reuse,
                    oauth: def.connector.as_ref().and_then(|c| c.oauth.clone()),
                }
            })
            .collect();
        Ok(Prepared {
            approved,
            discover: Some(jobs),
        })
    }

    /// Discovery answered: any failure fails the run; otherwise each server's tools are set (or
    /// reused from the transcript) and a new or changed list becomes an `mcp_list_tools` item.
    pub(super) fn discovered(
        &mut self,
        results: Vec<Result<Option<Vec<McpToolInfo>>, McpError>>,
    ) -> Result<(), RunFailure> {
        let mut listed = Vec::new();
        for (server, result) in results.into_iter().enumerate() {
            match result {
                Ok(tools) => listed.push((server, tools)),
                Err(err) => {
                    let (label, host, connector_id) = match self.plan.registry.servers().get(server)
                    {
                        Some(def) => (def.label.clone(), def.host(), def.connector_id()),
                        None => (String::new(), String::new(), None),
                    };
                    let message = format!(
                        "MCP server \"{label}\" ({host}) failed during tool discovery: {err}"
                    );
                    self.emit_list(
                        McpListTools {
                            id: new_id("mcpl"),
                            server_label: label,
                            tools: Vec::new().into(),
                            error: Some(message.clone()),
                            connector_id,
                        },
                        false,
                    );
                    return Err(RunFailure::new(Code::ExternalConnector, message));
                }
            }
        }
        for (server, tools) in listed {
            let label = self.plan.registry.servers()[server].label.clone();
            let previous = last_list(&self.transcript, &label);
            let tools = match tools {
                Some(tools) => tools,
                None => previous
                    .as_ref()
                    .map(|p| p.tools.iter().map(tool_info).collect())
                    .unwrap_or_default(),
            };
            self.set_tools(server, tools, previous.map(|p| p.tools));
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

    /// Changed lists arrived: a list that really changed is a new `mcp_list_tools` item; a
    /// server that failed to answer keeps its old list.
    pub(super) fn relisted(&mut self, lists: Vec<(usize, Result<Vec<McpToolInfo>, McpError>)>) {
        for (server, result) in lists {
            let Some(label) = self
                .plan
                .registry
                .servers()
                .get(server)
                .map(|s| s.label.clone())
            else {
                continue;
            };
            match result {
                Ok(tools) => {
                    let previous = last_list(&self.transcript, &label).map(|l| l.tools);
                    self.set_tools(server, tools, previous);
                }
                Err(err) => {
                    tracing::warn!(response_id = %self.response.id, server = %label, error = %err, "listing a changed MCP tool list failed; the old list stays");
                }
            }
        }
    }

    /// Sets a server's tools in the registry; emits its list when it differs from `previous`.
    fn set_tools(
        &mut self,
        server: usize,
        tools: Vec<McpToolInfo>,
        previous: Option<Written<Vec<McpToolDef>>>,
    ) {
        self.plan.registry.set_server_tools(server, tools);
        let list = self.list_item(server);
        if previous.as_ref() != Some(&list.tools) {
            self.transcript.push(InputItem::McpListTools(list.clone()));
            self.emit_list(list, true);
        }
    }

    /// Emits an `mcp_list_tools` item: added, in progress, completed (or failed), done.
    fn emit_list(&mut self, list: McpListTools, listed: bool) {
        let index = self.response.output.len();
        let item_id = list.id.clone();
        let item = OutputItem::McpListTools(list);
        self.response.output.push(item.clone());
        self.emit(EventData::OutputItemAdded {
            output_index: index,
            item: item.clone(),
        });
        self.emit(EventData::McpListToolsInProgress {
            item_id: item_id.clone(),
            output_index: index,
        });
        self.emit(if listed {
            EventData::McpListToolsCompleted {
                item_id,
                output_index: index,
            }
        } else {
            EventData::McpListToolsFailed {
                item_id,
                output_index: index,
            }
        });
        self.emit(EventData::OutputItemDone {
            output_index: index,
            item,
        });
    }

    /// Opens the approved calls of a continuation, to run before the first step.
    pub(super) fn open_approved(&mut self, approved: Vec<McpApprovalRequest>) -> StepCalls {
        let mut calls = StepCalls {
            before_first_step: true,
            ..StepCalls::default()
        };
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
            calls.mcp.push((index, server));
        }
        calls
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
                .collect::<Vec<_>>()
                .into(),
            error: None,
            connector_id: self.plan.registry.servers()[server].connector_id(),
        }
    }

    /// The saved connector behind a server label, if it is one.
    fn connector_id(&self, label: &str) -> Option<String> {
        let server = self.plan.registry.server_index(label)?;
        self.plan.registry.servers().get(server)?.connector_id()
    }

    /// Emits an `mcp_approval_request` item: the call waits for the caller's decision.
    pub(super) fn request_approval(&mut self, label: String, tool: String, call: ToolCall) {
        let connector_id = self.connector_id(&label);
        let request = McpApprovalRequest {
            id: new_id("mcpr"),
            server_label: label,
            name: tool,
            arguments: call.arguments,
            connector_id,
            thought_signature: call.thought_signature,
        };
        self.transcript
            .push(InputItem::McpApprovalRequest(request.clone()));
        self.emit_item(OutputItem::McpApprovalRequest(request));
    }

    /// Emits `output_item.added` for an MCP call about to run, then its progress and arguments
    /// (`mcp_call.in_progress`, `mcp_call_arguments.delta` and `.done`); returns its output
    /// index.
    pub(super) fn open_mcp_call(
        &mut self,
        label: &str,
        tool: &str,
        arguments: &str,
        approval_request_id: Option<String>,
    ) -> usize {
        let item_id = new_id("mcp");
        let item = OutputItem::McpCall(McpCall {
            id: item_id.clone(),
            server_label: label.to_owned(),
            name: tool.to_owned(),
            arguments: arguments.to_owned(),
            output: None,
            error: None,
            approval_request_id,
            connector_id: self.connector_id(label),
        });
        let index = self.response.output.len();
        self.response.output.push(item.clone());
        self.emit(EventData::OutputItemAdded {
            output_index: index,
            item,
        });
        self.emit(EventData::McpCallInProgress {
            item_id: item_id.clone(),
            output_index: index,
        });
        self.emit(EventData::McpCallArgumentsDelta {
            item_id: item_id.clone(),
            output_index: index,
            delta: arguments.to_owned(),
        });
        self.emit(EventData::McpCallArgumentsDone {
            item_id,
            output_index: index,
            arguments: arguments.to_owned(),
        });
        index
    }

    /// The calls of opened `mcp_call` items, for the driver.
    pub(super) fn mcp_jobs(&self, calls: &[(usize, usize)]) -> Vec<McpJob> {
        calls
            .iter()
            .filter_map(|(index, server)| match self.response.output.get(*index) {
                Some(OutputItem::McpCall(item)) => Some(McpJob {
                    server: *server,
                    tool: item.name.clone(),
                    arguments: parse_arguments(&item.arguments),
                    bound: self
                        .plan
                        .registry
                        .servers()
                        .get(*server)
                        .and_then(|def| def.connector.as_ref())
                        .and_then(|connector| {
                            connector.timeout.map(|timeout| CallBound {
                                connector: connector.id.clone(),
                                timeout,
                            })
                        }),
                }),
                _ => None,
            })
            .collect()
    }

    /// Completes the running `mcp_call` items in the model's order. A failing call is a result
    /// the model sees.
    pub(super) fn mcp_done(
        &mut self,
        calls: &mut StepCalls,
        results: Vec<Result<McpCallResult, String>>,
    ) {
        let running = std::mem::take(&mut calls.mcp_running);
        for (index, result) in running.into_iter().zip(results) {
            let Some(OutputItem::McpCall(item)) = self.response.output.get(index) else {
                continue;
            };
            let mut item = item.clone();
            match result {
                Ok(result) if !result.is_error => item.output = Some(truncate(result.output)),
                Ok(result) => item.error = Some(truncate(result.output)),
                Err(error) => item.error = Some(error),
            }
            self.transcript.push(InputItem::McpCall(item.clone()));
            let (item_id, failed) = (item.id.clone(), item.error.is_some());
            let item = OutputItem::McpCall(item);
            self.response.output[index] = item.clone();
            self.emit(if failed {
                EventData::McpCallFailed {
                    item_id,
                    output_index: index,
                }
            } else {
                EventData::McpCallCompleted {
                    item_id,
                    output_index: index,
                }
            });
            self.emit(EventData::OutputItemDone {
                output_index: index,
                item,
            });
        }
    }
}

/// The last `mcp_list_tools` of a server in the transcript.
fn last_list(transcript: &[InputItem], label: &str) -> Option<McpListTools> {
    transcript.iter().rev().find_map(|item| match item {
        InputItem::McpListTools(list) if list.server_label == label => Some(list.clone()),
        _ => None,
    })
}

fn server_allowed(server: &ServerDef) -> Option<Vec<String>> {
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
