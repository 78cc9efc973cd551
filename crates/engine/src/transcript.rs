//! The continuation transcript: the input items a run is built on, and their translation into
//! the messages a model sees.
//!
//! A run's transcript is the previous response's transcript (if `previous_response_id` is given)
//! followed by this request's `input` items. Replaying the whole conversation in `input` and
//! continuing with `previous_response_id` give the same transcript, hence the same model messages.

use std::collections::{HashMap, HashSet};

use protocol::input::{
    ContentPart, FunctionOutput, InputItem, InputMessage, ItemStatus, McpApprovalResponse,
    MessageContent, ReasoningInput, ReasoningText, Role,
};
use protocol::output::{McpApprovalRequest, McpCall, ToolSearchOutput};

use crate::compaction;
use crate::error::EngineError;
use crate::model::{self, ModelMessage, ToolCall};
use crate::tools;

/// Checks that function results answer calls and that every call has its result.
///
/// `new_from` is the index of the first item that came with this request, for error paths.
pub fn check_function_calls(items: &[InputItem], new_from: usize) -> Result<(), EngineError> {
    let mut calls: HashSet<&str> = HashSet::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for (index, item) in items.iter().enumerate() {
        match item {
            InputItem::FunctionCall(call) => {
                calls.insert(call.call_id.as_str());
            }
            InputItem::FunctionCallOutput(out) => {
                if !calls.contains(out.call_id.as_str()) {
                    let param = if index >= new_from {
                        format!("input[{}].call_id", index - new_from)
                    } else {
                        "previous_response_id".to_owned()
                    };
                    return Err(EngineError::invalid(
                        param,
                        format!(
                            "no function_call found for function_call_output with call_id \"{}\"",
                            out.call_id
                        ),
                    ));
                }
                answered.insert(out.call_id.as_str());
            }
            _ => {}
        }
    }
    let mut pending: Vec<&str> = calls.difference(&answered).copied().collect();
    pending.sort_unstable();
    if let Some(call_id) = pending.first() {
        return Err(EngineError::invalid(
            "input",
            format!("no function_call_output found for function_call with call_id \"{call_id}\""),
        ));
    }
    Ok(())
}

/// Translates instructions and transcript items into model messages.
///
/// MCP history becomes tool calls and results under the names the model saw
/// ([`tools::mcp_model_name`]): an `mcp_call` answers at its own place, or at the place of its
/// `mcp_approval_request` when it ran after an approval (so the result follows the turn that
/// asked for it); a denied request becomes a call whose result says so, with the reason; a
/// `tool_search_output` becomes the `tool_search` call and the list of tools it loaded. Images
/// in function results follow that turn's results as a user message; reasoning items go with
/// the assistant turn after them.
pub fn to_model_messages(instructions: Option<&str>, items: &[InputItem]) -> Vec<ModelMessage> {
    let mut messages = Vec::with_capacity(items.len() + 1);
    if let Some(text) = instructions.filter(|t| !t.is_empty()) {
        messages.push(ModelMessage::System {
            content: text.to_owned(),
        });
    }
    let mut names: HashMap<&str, &str> = HashMap::new();
    let mut approved_calls: HashMap<&str, &McpCall> = HashMap::new();
    let mut denials: HashMap<&str, &McpApprovalResponse> = HashMap::new();
    let mut requests: HashSet<&str> = HashSet::new();
    // Images of function results, shown after the run of results they came with.
    let mut images: Vec<(&str, Vec<model::ContentPart>)> = Vec::new();
    for item in items {
        match item {
            InputItem::FunctionCall(call) => {
                names.insert(call.call_id.as_str(), call.name.as_str());
            }
            InputItem::McpCall(call) => {
                if let Some(id) = &call.approval_request_id {
                    approved_calls.insert(id.as_str(), call);
                }
            }
            InputItem::McpApprovalResponse(response) if !response.approve => {
                denials.insert(response.approval_request_id.as_str(), response);
            }
            InputItem::McpApprovalRequest(request) => {
                requests.insert(request.id.as_str());
            }
            _ => {}
        }
    }
    for item in items {
        if !matches!(item, InputItem::FunctionCallOutput(_)) {
            push_result_images(&mut messages, &mut images);
        }
        match item {
            InputItem::Message(message) => messages.push(message_to_model(message)),
            InputItem::FunctionCall(call) => push_call(
                &mut messages,
                ToolCall {
                    id: call.call_id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    thought_signature: call.thought_signature.clone(),
                },
            ),
            InputItem::FunctionCallOutput(out) => {
                messages.push(ModelMessage::Tool {
                    call_id: out.call_id.clone(),
                    name: out
                        .name
                        .clone()
                        .or_else(|| names.get(out.call_id.as_str()).map(|n| (*n).to_owned())),
                    content: out.output.to_text(),
                });
                if let FunctionOutput::Parts(parts) = &out.output {
                    let shown: Vec<model::ContentPart> = parts
                        .iter()
                        .filter(|part| matches!(part, ContentPart::InputImage { .. }))
                        .map(part_to_model)
                        .collect();
                    if !shown.is_empty() {
                        images.push((out.call_id.as_str(), shown));
                    }
                }
            }
            InputItem::McpApprovalRequest(request) => {
                let result = if let Some(call) = approved_calls.get(request.id.as_str()) {
                    mcp_result_text(call)
                } else if let Some(denial) = denials.get(request.id.as_str()) {
                    denial_text(request, denial.reason.as_deref())
                } else {
                    // Still pending (or approved and about to run): nothing to show yet.
                    continue;
                };
                push_call_and_result(
                    &mut messages,
                    ToolCall {
                        id: request.id.clone(),
                        name: tools::mcp_model_name(&request.server_label, &request.name),
                        arguments: request.arguments.clone(),
                        thought_signature: request.thought_signature.clone(),
                    },
                    result,
                );
            }
            InputItem::McpCall(call) => {
                if call
                    .approval_request_id
                    .as_deref()
                    .is_some_and(|id| requests.contains(id))
                {
                    continue; // shown at its approval request
                }
                push_call_and_result(
                    &mut messages,
                    ToolCall {
                        id: call.id.clone(),
                        name: tools::mcp_model_name(&call.server_label, &call.name),
                        arguments: call.arguments.clone(),
                        thought_signature: None,
                    },
                    mcp_result_text(call),
                );
            }
            InputItem::ToolSearchOutput(search) => push_call_and_result(
                &mut messages,
                ToolCall {
                    id: search.call_id.clone().unwrap_or_else(|| search.id.clone()),
                    name: tools::TOOL_SEARCH.to_owned(),
                    arguments: search.arguments.clone().unwrap_or_else(|| "{}".to_owned()),
                    thought_signature: None,
                },
                search_result_text(search),
            ),
            InputItem::Reasoning(reasoning) => {
                messages.push(ModelMessage::Reasoning(reasoning_block(reasoning)));
            }
            // The summary stands for the history it replaced (checked when it came in).
            InputItem::Compaction(item) => {
                if let Some(summary) = compaction::decode(&item.encrypted_content) {
                    messages.push(compaction::summary_message(&summary));
                }
            }
            // Tool lists and decisions are told through the calls above; references were
            // resolved before the run (`plan.rs`).
            InputItem::McpApprovalResponse(_)
            | InputItem::McpListTools(_)
            | InputItem::ItemReference(_) => {}
        }
    }
    push_result_images(&mut messages, &mut images);
    drop_orphan_reasoning(&mut messages);
    messages
}

/// Shows the images of function results as one user message after the results: no upstream
/// takes an image in a Chat Completions tool message, and every upstream takes a user message
/// there (it must not come between the results of one turn, hence the wait).
fn push_result_images(
    messages: &mut Vec<ModelMessage>,
    images: &mut Vec<(&str, Vec<model::ContentPart>)>,
) {
    if images.is_empty() {
        return;
    }
    let mut content = Vec::new();
    for (call_id, parts) in images.drain(..) {
        content.push(model::ContentPart::Text {
            text: format!("Images returned by the function call {call_id}:"),
        });
        content.extend(parts);
    }
    messages.push(ModelMessage::User { content });
}

/// Keeps a reasoning block only where an assistant turn follows it (after any other blocks):
/// it belongs to that turn. A block left over (a turn that failed after thinking) would make
/// an assistant turn of its own that no upstream accepts.
fn drop_orphan_reasoning(messages: &mut Vec<ModelMessage>) {
    let mut keep = vec![true; messages.len()];
    let mut answered = false;
    for (index, message) in messages.iter().enumerate().rev() {
        match message {
            ModelMessage::Reasoning(_) => keep[index] = answered,
            ModelMessage::Assistant { .. } => answered = true,
            _ => answered = false,
        }
    }
    let mut index = 0;
    messages.retain(|_| {
        index += 1;
        keep[index - 1]
    });
}

/// The transcript item of a reasoning block a model returned.
pub fn reasoning_item(block: &model::Reasoning) -> ReasoningInput {
    let part = |kind: &str, text: &str| ReasoningText {
        kind: kind.to_owned(),
        text: text.to_owned(),
    };
    ReasoningInput {
        summary: block
            .summary
            .iter()
            .map(|text| part("summary_text", text))
            .collect(),
        content: block
            .text
            .as_deref()
            .map(|text| vec![part("reasoning_text", text)]),
        encrypted_content: block.encrypted.clone(),
        id: block.id.clone(),
        status: Some(ItemStatus::Completed),
    }
}

/// The model's reasoning block of a transcript item.
fn reasoning_block(item: &ReasoningInput) -> model::Reasoning {
    let text = item.content.as_ref().map(|parts| {
        parts
            .iter()
            .map(|part| part.text.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    });
    model::Reasoning {
        id: item.id.clone(),
        summary: item.summary.iter().map(|part| part.text.clone()).collect(),
        text,
        encrypted: item.encrypted_content.clone(),
    }
}

/// Adds a tool call to the assistant turn in progress (or starts one).
fn push_call(messages: &mut Vec<ModelMessage>, call: ToolCall) {
    match messages.last_mut() {
        Some(ModelMessage::Assistant { tool_calls, .. }) => tool_calls.push(call),
        _ => messages.push(ModelMessage::Assistant {
            content: None,
            tool_calls: vec![call],
        }),
    }
}

fn push_call_and_result(messages: &mut Vec<ModelMessage>, call: ToolCall, result: String) {
    let (call_id, name) = (call.id.clone(), call.name.clone());
    push_call(messages, call);
    messages.push(ModelMessage::Tool {
        call_id,
        name: Some(name),
        content: result,
    });
}

/// What the model reads for an MCP call: the output, or the error.
pub fn mcp_result_text(call: &McpCall) -> String {
    match &call.error {
        Some(error) => format!("error: {error}"),
        None => call.output.clone().unwrap_or_default(),
    }
}

fn denial_text(request: &McpApprovalRequest, reason: Option<&str>) -> String {
    let mut text = format!(
        "The user denied this call of {} on MCP server \"{}\"; it was not run. Do not call it again unless the user asks.",
        request.name, request.server_label
    );
    if let Some(reason) = reason.filter(|r| !r.is_empty()) {
        text.push_str(&format!(" Reason given: {reason}"));
    }
    text
}

/// What the model reads for a catalog search: the tools it loaded, or that there were none.
pub fn search_result_text(search: &ToolSearchOutput) -> String {
    let found: Vec<String> = search
        .tools
        .iter()
        .flat_map(|namespace| {
            namespace.tools.iter().map(|tool| {
                format!(
                    "- {}: {}",
                    tools::mcp_model_name(&namespace.name, &tool.name),
                    tool.description.as_deref().unwrap_or("(no description)")
                )
            })
        })
        .collect();
    if found.is_empty() {
        "No tools matched this search. Try again with other words, or answer without these tools."
            .to_owned()
    } else {
        format!(
            "These tools are now loaded and can be called from your next step:\n{}",
            found.join("\n")
        )
    }
}

fn message_to_model(message: &InputMessage) -> ModelMessage {
    match message.role {
        Role::System | Role::Developer => ModelMessage::System {
            content: message.content.text(),
        },
        Role::Assistant => ModelMessage::Assistant {
            content: Some(message.content.text()),
            tool_calls: Vec::new(),
        },
        Role::User => ModelMessage::User {
            content: match &message.content {
                MessageContent::Text(text) => vec![model::ContentPart::Text { text: text.clone() }],
                MessageContent::Parts(parts) => parts.iter().map(part_to_model).collect(),
            },
        },
    }
}

fn part_to_model(part: &ContentPart) -> model::ContentPart {
    match part {
        ContentPart::InputText { text } => model::ContentPart::Text { text: text.clone() },
        ContentPart::OutputText(out) => model::ContentPart::Text {
            text: out.text.clone(),
        },
        ContentPart::InputImage { image_url, detail } => model::ContentPart::ImageUrl {
            url: image_url.clone(),
            detail: detail.map(|d| {
                match d {
                    protocol::input::ImageDetail::Low => "low",
                    protocol::input::ImageDetail::High => "high",
                    protocol::input::ImageDetail::Auto => "auto",
                }
                .to_owned()
            }),
        },
        ContentPart::InputFile(file) => model::ContentPart::File {
            filename: file.filename.clone(),
            file_data: file.file_data.clone(),
            file_url: file.file_url.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::input::Input;

    fn items(json: &str) -> Vec<InputItem> {
        let input: Input = serde_json::from_str(json).expect("input parses");
        input.into_items()
    }

    #[test]
    fn images_of_function_results_follow_the_results_as_one_user_message() {
        let items = items(
            r#"[
            {"role": "user", "content": "Compare the charts."},
            {"type": "function_call", "call_id": "c1", "name": "chart", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "chart", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": [
                {"type": "input_text", "text": "Q1 chart"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBOR", "detail": "high"}
            ]},
            {"type": "function_call_output", "call_id": "c2", "output": "no chart"}
        ]"#,
        );
        let messages = to_model_messages(None, &items);
        assert_eq!(messages.len(), 5, "{messages:?}");
        assert!(
            matches!(&messages[2], ModelMessage::Tool { content, .. } if content == "Q1 chart")
        );
        assert!(matches!(&messages[3], ModelMessage::Tool { call_id, .. } if call_id == "c2"));
        assert_eq!(
            messages[4],
            ModelMessage::User {
                content: vec![
                    model::ContentPart::Text {
                        text: "Images returned by the function call c1:".into()
                    },
                    model::ContentPart::ImageUrl {
                        url: "data:image/png;base64,iVBOR".into(),
                        detail: Some("high".into()),
                    },
                ]
            }
        );
    }

    #[test]
    fn reasoning_goes_with_the_turn_after_it_and_orphans_are_dropped() {
        let items = items(
            r#"[
            {"role": "user", "content": "Weather?"},
            {"type": "reasoning", "id": "thinking_1", "summary": [],
             "content": [{"type": "reasoning_text", "text": "Look it up."}],
             "encrypted_content": "sig"},
            {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            {"type": "reasoning", "id": "rs_2", "summary": [{"type": "summary_text", "text": "lost"}]},
            {"role": "user", "content": "Thanks"}
        ]"#,
        );
        let messages = to_model_messages(None, &items);
        assert_eq!(messages.len(), 5, "{messages:?}");
        assert_eq!(
            messages[1],
            ModelMessage::Reasoning(model::Reasoning {
                id: Some("thinking_1".into()),
                summary: Vec::new(),
                text: Some("Look it up.".into()),
                encrypted: Some("sig".into()),
            })
        );
        assert!(
            matches!(&messages[2], ModelMessage::Assistant { tool_calls, .. } if tool_calls.len() == 1)
        );
        assert!(
            !messages
                .iter()
                .skip(2)
                .any(|m| matches!(m, ModelMessage::Reasoning(_))),
            "the block no turn answered is dropped: {messages:?}"
        );
    }

    #[test]
    fn a_reasoning_block_round_trips_through_its_transcript_item() {
        let block = model::Reasoning {
            id: Some("rs_9".into()),
            summary: vec!["one".into(), "two".into()],
            text: Some("full".into()),
            encrypted: Some("gAAA".into()),
        };
        let item = reasoning_item(&block);
        assert_eq!(item.status, Some(ItemStatus::Completed));
        assert_eq!(reasoning_block(&item), block);
    }

    #[test]
    fn consecutive_calls_merge_into_one_assistant_turn() {
        let items = items(
            r#"[{"role":"user","content":"q"},
            {"type":"function_call","call_id":"a","name":"f","arguments":"{}"},
            {"type":"function_call","call_id":"b","name":"g","arguments":"{}"},
            {"type":"function_call_output","call_id":"a","output":"1"},
            {"type":"function_call_output","call_id":"b","output":"2"}]"#,
        );
        let messages = to_model_messages(Some("be brief"), &items);
        assert_eq!(messages.len(), 5);
        assert!(
            matches!(&messages[2], ModelMessage::Assistant { tool_calls, .. } if tool_calls.len() == 2)
        );
        assert!(matches!(&messages[4], ModelMessage::Tool { name: Some(n), .. } if n == "g"));
    }

    #[test]
    fn output_without_call_and_call_without_output_are_refused() {
        let orphan = items(r#"[{"type":"function_call_output","call_id":"x","output":"1"}]"#);
        let err = check_function_calls(&orphan, 0).expect_err("orphan output");
        assert!(
            matches!(err, EngineError::InvalidRequest(e) if e.param.as_deref() == Some("input[0].call_id"))
        );
        let pending =
            items(r#"[{"type":"function_call","call_id":"x","name":"f","arguments":"{}"}]"#);
        assert!(check_function_calls(&pending, 0).is_err());
    }
}
