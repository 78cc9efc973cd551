//! An item written as JSON by hand: byte for byte what `serde_json::to_string` writes for an
//! [`OutputItem`] or an [`InputItem`], for the items a response indexes when it ends (the
//! engine stores each as its JSON text). An assistant message (the output a run makes) and an
//! input message (what a request sends) are written field by field with the response's writer
//! (`response_json.rs`), with their text parts; their other parts, and every other item, by serde. A
//! run's transcript, a list of input items, is written so too (`InputItem::list_to_json`).
//! `tests` compares the bytes with serde's for each field's forms.

use crate::input::{ContentPart, InputItem, InputMessage, MessageContent, Role};
use crate::json_string::push_serde;
use crate::output::{OutputContent, OutputItem};
use crate::response_json::Writer;

impl OutputItem {
    /// The item as compact JSON, as `serde_json::to_string(self)` writes it.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let mut out = String::with_capacity(self.json_size());
        self.write_json(&mut out)?;
        Ok(out)
    }

    /// [`OutputItem::to_json`] appended to `out` (an event line being written).
    pub(crate) fn write_json(&self, out: &mut String) -> Result<(), serde_json::Error> {
        match self {
            OutputItem::Message(message) => Writer::append_to(out, |w| w.message(message)),
            other => push_serde(out, other),
        }
    }

    /// About the item's JSON length.
    pub(crate) fn json_size(&self) -> usize {
        match self {
            OutputItem::Message(message) => {
                let text: usize = message
                    .content
                    .iter()
                    .map(|OutputContent::OutputText(part)| part.text.len() + 96)
                    .sum();
                128 + message.id.len() + text
            }
            _ => 128,
        }
    }
}

impl OutputContent {
    /// The part as compact JSON, as `serde_json::to_string(self)` writes it.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let mut out = String::with_capacity(self.json_size());
        self.write_json(&mut out)?;
        Ok(out)
    }

    /// [`OutputContent::to_json`] appended to `out` (an event line being written).
    pub(crate) fn write_json(&self, out: &mut String) -> Result<(), serde_json::Error> {
        Writer::append_to(out, |w| w.part(self))
    }

    /// About the part's JSON length.
    pub(crate) fn json_size(&self) -> usize {
        let OutputContent::OutputText(part) = self;
        96 + part.text.len()
    }
}

impl InputItem {
    /// The item as compact JSON, as `serde_json::to_string(self)` writes it.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        let InputItem::Message(message) = self else {
            return serde_json::to_string(self);
        };
        let mut out = Writer(String::with_capacity(message_size(message)));
        input_message(&mut out, message)?;
        out.into_string()
    }

    /// A list of items (a run's transcript) as compact JSON, as `serde_json::to_string(items)`
    /// writes it: its messages by hand into one buffer, the other items by serde.
    pub fn list_to_json(items: &[InputItem]) -> Result<String, serde_json::Error> {
        Self::list_to_json_after("[]", 0, items)
    }

    /// [`InputItem::list_to_json`] of `items` whose first `written` are written already as
    /// `prefix`, a JSON list (their JSON as stored for the response they were read from):
    /// `prefix` without its closing bracket, then only the other items. A deep turn of a
    /// conversation writes its own items, not the whole transcript again. `prefix` must be the
    /// JSON of `items[..written]` (whatever its bytes, it then reads back as them); one that
    /// is not a list, or a `written` past `items`, and the list is written whole.
    pub fn list_to_json_after(
        prefix: &str,
        written: usize,
        items: &[InputItem],
    ) -> Result<String, serde_json::Error> {
        // Whether the prefix lists any item: then a `,` before the first of the others.
        let listed = |open: &str| !open[1..].trim_start().is_empty();
        let (prefix, rest) = match (prefix.strip_suffix(']'), items.get(written..)) {
            (Some(open), Some(rest)) if open.starts_with('[') && listed(open) == (written > 0) => {
                (open, rest)
            }
            _ => ("[", items),
        };
        let listed = listed(prefix);
        let size: usize = rest
            .iter()
            .map(|item| match item {
                InputItem::Message(message) => message_size(message),
                _ => 128,
            })
            .sum();
        let mut out = Writer(String::with_capacity(prefix.len() + 2 + size));
        out.piece(prefix);
        for (n, item) in rest.iter().enumerate() {
            if n > 0 || listed {
                out.piece(",");
            }
            match item {
                InputItem::Message(message) => input_message(&mut out, message)?,
                other => out.json(other)?,
            }
        }
        out.piece("]");
        out.into_string()
    }
}

/// About an input message's JSON length (the buffer's first capacity).
fn message_size(message: &InputMessage) -> usize {
    match &message.content {
        MessageContent::Text(text) => 96 + text.len(),
        MessageContent::Parts(parts) => {
            let parts: usize = parts
                .iter()
                .map(|part| match part {
                    ContentPart::InputText { text } => 40 + text.len(),
                    ContentPart::OutputText(part) => 64 + part.text.len(),
                    _ => 128,
                })
                .sum();
            96 + parts
        }
    }
}

/// An input message: its tag first, then its fields in their order, the optional ones only when
/// set (as serde's derive skips them).
fn input_message(out: &mut Writer, message: &InputMessage) -> Result<(), serde_json::Error> {
    out.piece("{\"type\":\"message\",\"role\":\"");
    out.piece(match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
        Role::Developer => "developer",
    });
    out.piece("\",\"content\":");
    match &message.content {
        MessageContent::Text(text) => out.string(text)?,
        MessageContent::Parts(parts) => input_parts(out, parts)?,
    }
    out.present_string(",\"id\":", message.id.as_deref())?;
    out.present_string(",\"status\":", message.status.as_deref())?;
    out.present_json(",\"phase\":", message.phase.as_ref())?;
    out.piece("}");
    Ok(())
}

/// An input message's parts: text parts field by field (`input_text`, and `output_text` in a
/// replayed assistant message), the others by serde.
fn input_parts(out: &mut Writer, parts: &[ContentPart]) -> Result<(), serde_json::Error> {
    out.piece("[");
    for (n, part) in parts.iter().enumerate() {
        if n > 0 {
            out.piece(",");
        }
        match part {
            ContentPart::InputText { text } => {
                out.piece("{\"type\":\"input_text\",\"text\":");
                out.string(text)?;
                out.piece("}");
            }
            ContentPart::OutputText(part) => {
                out.piece("{\"type\":\"output_text\",\"text\":");
                out.string(&part.text)?;
                if part.annotations.is_empty() {
                    out.piece(",\"annotations\":[]");
                } else {
                    out.piece(",\"annotations\":");
                    out.json(&part.annotations)?;
                }
                out.present_json(",\"logprobs\":", part.logprobs.as_ref())?;
                out.piece("}");
            }
            other => out.json(other)?,
        }
    }
    out.piece("]");
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::input::{Input, InputItem};
    use crate::output::OutputItem;
    use crate::response_json::tests::TEXTS;

    fn check_output(item: Value) {
        let item: OutputItem = serde_json::from_value(item).expect("an output item");
        let expected = serde_json::to_string(&item).expect("serde writes it");
        assert_eq!(item.to_json().expect("written"), expected);
    }

    /// The input items of a request's `input` (a list), each checked against serde.
    fn check_input(items: Value) -> usize {
        let input: Input = serde_json::from_value(items).expect("input items");
        let items = input.into_items();
        for item in &items {
            let expected = serde_json::to_string(item).expect("serde writes it");
            assert_eq!(item.to_json().expect("written"), expected);
        }
        for n in 0..=items.len() {
            let list = &items[..n];
            let expected = serde_json::to_string(list).expect("serde writes it");
            assert_eq!(InputItem::list_to_json(list).expect("written"), expected);
            // The same list after its first items written already, however many.
            for written in 0..=n {
                let prefix = serde_json::to_string(&list[..written]).expect("serde writes it");
                assert_eq!(
                    InputItem::list_to_json_after(&prefix, written, list).expect("written"),
                    expected
                );
            }
        }
        items.len()
    }

    /// After a prefix, only the other items are written: the prefix's bytes are kept as they
    /// are (here an escape serde would not write); a prefix that is not a list, that lists
    /// items when none are said to be written (or none when some are), or a count past the
    /// items, and the whole list is written.
    #[test]
    fn a_list_after_its_written_items_keeps_their_bytes() {
        let items: Vec<InputItem> = serde_json::from_value(json!([
            {"role": "user", "content": "caf\u{e9}"},
            {"role": "user", "content": "and then?"}
        ]))
        .expect("items");
        let whole = InputItem::list_to_json(&items).expect("written");
        let prefix = r#"[{"type":"message","role":"user","content":"caf\u00e9"}]"#;
        let after = InputItem::list_to_json_after(prefix, 1, &items).expect("written");
        assert_eq!(
            after,
            r#"[{"type":"message","role":"user","content":"caf\u00e9"},{"type":"message","role":"user","content":"and then?"}]"#
        );
        let read: Vec<InputItem> = serde_json::from_str(&after).expect("reads back");
        assert_eq!(read, items);
        assert_eq!(
            InputItem::list_to_json_after("[]", 0, &items).expect("written"),
            whole
        );
        for (prefix, written) in [
            ("{}", 1),
            ("", 0),
            (prefix, 0),
            ("[]", 1),
            ("[ ]", 1),
            (prefix, 3),
        ] {
            assert_eq!(
                InputItem::list_to_json_after(prefix, written, &items).expect("written"),
                whole,
                "{prefix} {written}"
            );
        }
    }

    /// Assistant messages (every text form, each status, several parts, annotations,
    /// logprobs, phases) and other output items are written as serde writes them.
    #[test]
    fn output_items_are_written_as_serde_writes_them() {
        for text in TEXTS {
            for status in ["in_progress", "completed", "incomplete", "failed"] {
                check_output(json!({
                    "type": "message", "id": "msg_1", "status": status, "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
                }));
            }
        }
        check_output(
            json!({"type": "message", "id": "msg_\"1\"", "status": "completed",
            "role": "assistant", "phase": "commentary", "content": []}),
        );
        check_output(
            json!({"type": "message", "id": "msg_2", "status": "completed",
            "role": "assistant", "phase": "final_answer", "content": [
                {"type": "output_text", "text": "See [1].", "annotations": [
                    {"type": "url_citation", "url": "https://example.com/a?b=\"c\"", "title": "A",
                     "start_index": 4, "end_index": 7}],
                 "logprobs": [{"token": "See", "logprob": -0.25, "bytes": [83, 101, 101], "top_logprobs": []}]},
                {"type": "output_text", "text": "Second part.", "annotations": [], "logprobs": []}
            ]}),
        );
        check_output(
            json!({"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f",
            "arguments": "{\"a\":1}", "status": "completed"}),
        );
        check_output(json!({"type": "search_results", "queries": ["q"], "results": []}));
    }

    /// Input messages (each role, every text form, parts, with and without id, status and
    /// phase) and other input items are written as serde writes them.
    #[test]
    fn input_items_are_written_as_serde_writes_them() {
        assert_eq!(check_input(json!("hi")), 1);
        for role in ["user", "assistant", "system", "developer"] {
            for text in TEXTS {
                assert_eq!(check_input(json!([{"role": role, "content": text}])), 1);
                assert_eq!(
                    check_input(json!([{"type": "message", "role": role, "content": text,
                        "id": "msg_1", "status": "completed"}])),
                    1
                );
            }
        }
        let items = json!([
            {"role": "user", "content": [
                {"type": "input_text", "text": "What is \"this\"?"},
                {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "low"}]},
            {"type": "message", "role": "assistant", "id": "msg_\u{7}", "status": "in_progress",
             "phase": "final_answer", "content": [
                {"type": "output_text", "text": "It is.", "annotations": []}]},
            {"type": "message", "role": "assistant", "phase": "commentary", "content": "Looking."},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "done"},
            {"type": "item_reference", "id": "msg_9"}
        ]);
        assert_eq!(check_input(items), 6);
        // Text parts in every text form, with and without annotations and logprobs, among
        // other parts.
        for text in TEXTS {
            let items = json!([
                {"role": "user", "content": [
                    {"type": "input_text", "text": text},
                    {"type": "input_file", "file_url": "https://example.com/a.pdf"},
                    {"type": "input_text", "text": ""}]},
                {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
                 "content": [
                    {"type": "output_text", "text": text, "annotations": []},
                    {"type": "output_text", "text": text, "annotations": [
                        {"type": "url_citation", "url": "https://example.com/\"q\"", "title": text,
                         "start_index": 0, "end_index": 1}],
                     "logprobs": [{"token": "a", "logprob": -0.5, "bytes": [97], "top_logprobs": []}]},
                    {"type": "output_text", "text": text, "annotations": [], "logprobs": []}]},
                {"role": "user", "content": []}
            ]);
            assert_eq!(check_input(items), 3);
        }
    }
}
