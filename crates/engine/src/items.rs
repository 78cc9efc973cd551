//! Items as agentd stores and finds them again: ids for input items that came without one,
//! the items a response indexes when it ends (`item_reference` and `input_items` read them, and
//! an OpenAI conversation takes them), and stored items back as input items.

use std::sync::Arc;

use protocol::input::InputItem;
use protocol::output::OutputItem;
use serde_json::Value;

use crate::ids::new_id;
use crate::store::{ItemJson, ItemKind, StoredItem, TranscriptPrefix};

/// Gives every input item that can carry an id and has none one (`msg_…` for messages, as
/// OpenAI does), so that it can be listed and referenced later.
pub(crate) fn assign_ids(items: &mut [InputItem]) {
    for item in items {
        let (slot, prefix) = match item {
            InputItem::Message(message) => (&mut message.id, "msg"),
            InputItem::FunctionCall(call) => (&mut call.id, "fc"),
            InputItem::FunctionCallOutput(output) => (&mut output.id, "fco"),
            InputItem::McpApprovalResponse(response) => (&mut response.id, "mcpa"),
            InputItem::Compaction(compaction) => (&mut compaction.id, "cmp"),
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(new_id(prefix));
        }
    }
}

/// The id an input item is known by.
pub(crate) fn input_id(item: &InputItem) -> Option<&str> {
    match item {
        InputItem::Message(message) => message.id.as_deref(),
        InputItem::FunctionCall(call) => call.id.as_deref(),
        InputItem::FunctionCallOutput(output) => output.id.as_deref(),
        InputItem::Reasoning(reasoning) => reasoning.id.as_deref(),
        InputItem::McpApprovalResponse(response) => response.id.as_deref(),
        InputItem::McpApprovalRequest(request) => Some(&request.id),
        InputItem::McpCall(call) => Some(&call.id),
        InputItem::McpListTools(list) => Some(&list.id),
        InputItem::ToolSearchOutput(search) => Some(&search.id),
        InputItem::ItemReference(reference) => Some(&reference.id),
        InputItem::Compaction(compaction) => compaction.id.as_deref(),
    }
}

/// The id an output item is known by (items without one cannot be referenced).
pub(crate) fn output_id(item: &OutputItem) -> Option<&str> {
    match item {
        OutputItem::Message(message) => Some(&message.id),
        OutputItem::FunctionCall(call) => Some(&call.id),
        OutputItem::McpListTools(list) => Some(&list.id),
        OutputItem::McpCall(call) => Some(&call.id),
        OutputItem::McpApprovalRequest(request) => Some(&request.id),
        OutputItem::ToolSearchOutput(search) => Some(&search.id),
        _ => None,
    }
}

/// What a response indexes when it ends: this request's input items, then its output items
/// that have an id. Each is serialized straight to its JSON text (no `Value` tree built and
/// serialized again by the store): messages by hand (`to_json`, serde's bytes), the rest by
/// serde, and taken as they are ([`ItemJson::written`]).
pub(crate) fn to_store(input: &[InputItem], output: &[OutputItem]) -> Vec<StoredItem> {
    let inputs = input.iter().filter_map(|item| {
        let id = input_id(item)?.to_owned();
        let item = ItemJson::written(item.to_json().ok()?);
        Some(StoredItem {
            id,
            kind: ItemKind::Input,
            item,
        })
    });
    let outputs = output.iter().filter_map(|item| {
        let id = output_id(item)?.to_owned();
        let item = ItemJson::written(item.to_json().ok()?);
        Some(StoredItem {
            id,
            kind: ItemKind::Output,
            item,
        })
    });
    inputs.chain(outputs).collect()
}

/// The JSON list of the first `count` items of `stored` ([`to_store`]'s), when they are
/// `count` input items: a transcript that begins with them begins with this JSON (each item
/// as the bytes `InputItem::list_to_json` writes for it), so the store writes them once.
/// `None` when an input item was not stored (one without an id) or there are none.
pub(crate) fn input_prefix(stored: &[StoredItem], count: usize) -> Option<TranscriptPrefix> {
    let inputs = stored.get(..count)?;
    if count == 0 || inputs.iter().any(|item| item.kind != ItemKind::Input) {
        return None;
    }
    let size = inputs
        .iter()
        .map(|item| item.item.get().len() + 1)
        .sum::<usize>()
        + 1;
    let mut json = String::with_capacity(size);
    json.push('[');
    for (i, item) in inputs.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        json.push_str(item.item.get());
    }
    json.push(']');
    Some(TranscriptPrefix {
        json: Arc::from(json),
        items: count,
    })
}

/// A stored item as OpenAI's item routes answer it (conversation items, input items): a message
/// always has its `type`, an `id`, a `status` and its content as a list of parts (`input_text`
/// for the caller's roles, `output_text` with `annotations` for the assistant's), and function
/// calls and their outputs a `status`, so the SDKs' item types parse it.
pub(crate) fn to_wire(id: &str, mut item: Value) -> Value {
    let Some(map) = item.as_object_mut() else {
        return item;
    };
    let kind = map
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message")
        .to_owned();
    map.entry("id").or_insert_with(|| Value::from(id));
    match kind.as_str() {
        "message" => {
            map.insert("type".to_owned(), Value::from("message"));
            map.entry("status").or_insert_with(|| "completed".into());
            let assistant = map.get("role").and_then(Value::as_str) == Some("assistant");
            let part_type = if assistant {
                "output_text"
            } else {
                "input_text"
            };
            let text_part = |text: Value| {
                let mut part = serde_json::Map::new();
                part.insert("type".to_owned(), part_type.into());
                part.insert("text".to_owned(), text);
                if assistant {
                    part.insert("annotations".to_owned(), Value::Array(Vec::new()));
                }
                Value::Object(part)
            };
            if let Some(content) = map.get_mut("content") {
                match content {
                    Value::String(text) => {
                        *content = Value::Array(vec![text_part(Value::from(text.as_str()))]);
                    }
                    Value::Array(parts) => {
                        for part in parts.iter_mut().filter_map(Value::as_object_mut) {
                            if part.get("type").and_then(Value::as_str) == Some("output_text") {
                                part.entry("annotations")
                                    .or_insert_with(|| Value::Array(Vec::new()));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        "function_call" | "function_call_output" => {
            map.entry("status").or_insert_with(|| "completed".into());
        }
        _ => {}
    }
    item
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stored_messages_answer_in_the_sdks_item_shape() {
        let user = to_wire(
            "msg_1",
            json!({"type": "message", "role": "user", "content": "hi"}),
        );
        assert_eq!(
            user,
            json!({"type": "message", "id": "msg_1", "role": "user", "status": "completed",
                   "content": [{"type": "input_text", "text": "hi"}]})
        );
        let assistant = to_wire("msg_2", json!({"role": "assistant", "content": "yes"}));
        assert_eq!(
            assistant["content"],
            json!([{"type": "output_text", "text": "yes", "annotations": []}])
        );
        let call = to_wire(
            "fc_1",
            json!({"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}),
        );
        assert_eq!(call["status"], "completed");
        assert_eq!(call["id"], "fc_1");
    }

    #[test]
    fn messages_and_calls_get_ids_and_keep_theirs() {
        let mut items: Vec<InputItem> = serde_json::from_value(json!([
            {"role": "user", "content": "hi"},
            {"type": "message", "id": "msg_mine", "role": "user", "content": "again"},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"}
        ]))
        .unwrap();
        assign_ids(&mut items);
        let ids: Vec<&str> = items.iter().filter_map(input_id).collect();
        assert!(ids[0].starts_with("msg_"));
        assert_eq!(ids[1], "msg_mine");
        assert!(ids[2].starts_with("fc_") && ids[3].starts_with("fco_"));
    }

    #[test]
    fn stored_output_messages_and_calls_come_back_as_input() {
        let output: Vec<OutputItem> = serde_json::from_value(json!([
            {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
             "phase": "final_answer",
             "content": [{"type": "output_text", "text": "Paris.", "annotations": [], "logprobs": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f",
             "arguments": "{}", "status": "completed"},
            {"type": "search_results", "queries": ["q"], "results": []}
        ]))
        .unwrap();
        let stored = to_store(&[], &output);
        assert_eq!(stored.len(), 2, "items without an id are not indexed");
        let back: Vec<InputItem> = stored.iter().filter_map(StoredItem::to_input).collect();
        assert_eq!(back.len(), 2);
        assert!(matches!(&back[0], InputItem::Message(m) if m.content.text() == "Paris."));
        assert!(matches!(&back[1], InputItem::FunctionCall(c) if c.call_id == "c1"));
    }

    /// Each indexed item is stored as the text serde writes for the typed item (in its field
    /// order: no `Value` tree in between, whose map sorts the keys), and reads back — as an
    /// input item, as a value and as the item routes answer it — as the value built from the
    /// typed item did.
    #[test]
    fn stored_items_are_their_own_serialization_and_read_back_as_their_values() {
        let mut input: Vec<InputItem> = serde_json::from_value(json!([
            {"role": "user", "content": "hi \"there\"\n"},
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be brief"}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"a\":1.5}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok ✓"},
            {"type": "item_reference", "id": "msg_old"}
        ]))
        .unwrap();
        assign_ids(&mut input);
        let output: Vec<OutputItem> = serde_json::from_value(json!([
            {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": "Paris.", "annotations": [],
                          "logprobs": [{"token": "P", "logprob": -0.25, "bytes": [80], "top_logprobs": []}]}]},
            {"type": "function_call", "id": "fc_1", "call_id": "c2", "name": "g",
             "arguments": "{}", "status": "completed"},
            {"type": "search_results", "queries": ["q"], "results": []}
        ]))
        .unwrap();
        let stored = to_store(&input, &output);
        let typed: Vec<(String, Value)> = input
            .iter()
            .filter_map(|item| Some((input_id(item)?.to_owned(), serde_json::to_value(item).ok()?)))
            .chain(output.iter().filter_map(|item| {
                Some((
                    output_id(item)?.to_owned(),
                    serde_json::to_value(item).ok()?,
                ))
            }))
            .collect();
        let texts: Vec<String> = input
            .iter()
            .filter(|item| input_id(item).is_some())
            .map(|item| serde_json::to_string(item).unwrap())
            .chain(
                output
                    .iter()
                    .filter(|item| output_id(item).is_some())
                    .map(|item| serde_json::to_string(item).unwrap()),
            )
            .collect();
        assert_eq!(stored.len(), 7);
        assert_eq!(typed.len(), 7);
        for ((item, (id, value)), text) in stored.iter().zip(&typed).zip(&texts) {
            assert_eq!(&item.id, id);
            assert_eq!(item.item.get(), text);
            assert_eq!(&item.value(), value);
            assert_eq!(to_wire(id, item.value()), to_wire(id, value.clone()));
            let back = item.to_input();
            let from_value: Option<InputItem> = serde_json::from_value(value.clone()).ok();
            assert_eq!(back, from_value);
        }
        // The message's keys are in the typed item's order, not sorted.
        assert!(
            stored[5]
                .item
                .get()
                .starts_with("{\"type\":\"message\",\"id\":\"msg_1\"")
        );
        // Equal items compare equal whatever their text's key order.
        let mut sorted = stored[5].clone();
        sorted.item = ItemJson::of(&stored[5].value()).unwrap();
        assert_ne!(sorted.item.get(), stored[5].item.get());
        assert_eq!(sorted, stored[5]);
    }

    /// A request's input items, all stored, make the JSON list its transcript begins with,
    /// the bytes the whole list is written as; an input item that was not stored (a
    /// reasoning item without an id), or no input, makes none.
    #[test]
    fn the_stored_input_items_are_the_json_the_transcript_begins_with() {
        let mut input: Vec<InputItem> = serde_json::from_value(json!([
            {"role": "user", "content": "hi \"there\"\n"},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"a\":1.5}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok ✓"},
            {"role": "assistant", "content": "done"}
        ]))
        .unwrap();
        assign_ids(&mut input);
        let output: Vec<OutputItem> = serde_json::from_value(json!([
            {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": "Paris.", "annotations": []}]}
        ]))
        .unwrap();
        let stored = to_store(&input, &output);
        let prefix = input_prefix(&stored, input.len()).expect("a prefix");
        assert_eq!(prefix.items, 4);
        assert_eq!(&*prefix.json, serde_json::to_string(&input).unwrap());
        assert_eq!(
            &*prefix.json,
            InputItem::list_to_json(&input).unwrap().as_str()
        );
        let one = input_prefix(&stored, 1).expect("a prefix of one");
        assert_eq!(&*one.json, serde_json::to_string(&input[..1]).unwrap());
        assert_eq!(input_prefix(&stored, 0), None);
        // More items than the input stored: an output item is not the input's.
        assert_eq!(input_prefix(&stored, 5), None);
        assert_eq!(input_prefix(&stored, 6), None);
        input.insert(
            1,
            serde_json::from_value(json!({"type": "reasoning", "summary": []})).unwrap(),
        );
        let stored = to_store(&input, &output);
        assert_eq!(stored.len(), 5);
        assert_eq!(input_prefix(&stored, input.len()), None);
    }
}
