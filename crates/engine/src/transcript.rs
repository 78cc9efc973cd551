//! The continuation transcript: the input items a run is built on, and their translation into
//! the messages a model sees.
//!
//! A run's transcript is the previous response's transcript (if `previous_response_id` is given)
//! followed by this request's `input` items. Replaying the whole conversation in `input` and
//! continuing with `previous_response_id` give the same transcript, hence the same model messages.

use std::collections::{HashMap, HashSet};

use protocol::input::{ContentPart, InputItem, InputMessage, MessageContent, Role};

use crate::error::EngineError;
use crate::model::{self, ModelMessage, ToolCall};

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
pub fn to_model_messages(instructions: Option<&str>, items: &[InputItem]) -> Vec<ModelMessage> {
    let mut messages = Vec::with_capacity(items.len() + 1);
    if let Some(text) = instructions.filter(|t| !t.is_empty()) {
        messages.push(ModelMessage::System {
            content: text.to_owned(),
        });
    }
    let names: HashMap<&str, &str> = items
        .iter()
        .filter_map(|item| match item {
            InputItem::FunctionCall(call) => Some((call.call_id.as_str(), call.name.as_str())),
            _ => None,
        })
        .collect();
    for item in items {
        match item {
            InputItem::Message(message) => messages.push(message_to_model(message)),
            InputItem::FunctionCall(call) => {
                let tool_call = ToolCall {
                    id: call.call_id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    thought_signature: call.thought_signature.clone(),
                };
                match messages.last_mut() {
                    Some(ModelMessage::Assistant { tool_calls, .. }) => tool_calls.push(tool_call),
                    _ => messages.push(ModelMessage::Assistant {
                        content: None,
                        tool_calls: vec![tool_call],
                    }),
                }
            }
            InputItem::FunctionCallOutput(out) => messages.push(ModelMessage::Tool {
                call_id: out.call_id.clone(),
                name: out
                    .name
                    .clone()
                    .or_else(|| names.get(out.call_id.as_str()).map(|n| (*n).to_owned())),
                content: out.output.to_text(),
            }),
            // Reasoning replays carry nothing a chat model takes back; MCP items are history
            // that the MCP layer translates when it exists.
            InputItem::Reasoning(_)
            | InputItem::McpApprovalResponse(_)
            | InputItem::McpApprovalRequest(_)
            | InputItem::McpCall(_)
            | InputItem::McpListTools(_) => {}
        }
    }
    messages
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
