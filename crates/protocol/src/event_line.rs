//! The event lines a run writes most, written directly into one `String`, byte for byte what
//! `serde_json::to_string` writes for the [`StreamEvent`](crate::events::StreamEvent): `{"type":
//! "…"`, the variant's fields in order, `"sequence_number":…}`. serde writes a
//! `StreamEvent` through its `flatten` machinery (a map serializer around a tagged-struct
//! adapter, key by key into a growing buffer); here each line's constant pieces (the type, the
//! keys, the punctuation between them) are one literal each, strings without escapes are copied
//! between quotes ([`json_string`]), an assistant message and its content parts by the
//! response's writer straight into the line (`OutputItem::write_json`,
//! `OutputContent::write_json`: `item_json.rs`), and only other nested objects (other output
//! items, logprobs) go through serde, into the line too ([`json_string::push_serde`]).
//! `tests/wire.rs` compares every event kind written here with serde's bytes.

use serde::Serialize;
use serde_json::Value;

use crate::json_string;
use crate::output::{OutputContent, OutputItem};

/// `response.output_text.delta`: the event of every token of a message.
pub fn output_text_delta_line(
    item_id: &str,
    output_index: usize,
    content_index: usize,
    delta: &str,
    logprobs: &[Value],
    sequence_number: u64,
) -> Result<String, serde_json::Error> {
    let mut out = String::new();
    write_output_text_delta(
        &mut out,
        item_id,
        output_index,
        content_index,
        delta,
        logprobs,
        sequence_number,
    )?;
    Ok(out)
}

/// [`output_text_delta_line`] appended to `out` (a buffer the caller reuses).
pub fn write_output_text_delta(
    out: &mut String,
    item_id: &str,
    output_index: usize,
    content_index: usize,
    delta: &str,
    logprobs: &[Value],
    sequence_number: u64,
) -> Result<(), serde_json::Error> {
    out.reserve(item_id.len() + delta.len() + 160);
    write_output_text_delta_head(out, item_id, output_index, content_index)?;
    write_output_text_delta_after(out, delta, logprobs, sequence_number)
}

/// The part of a `response.output_text.delta` line that is the same for every delta of one
/// content part: from the line's start up to the delta's value (`{"type":…,"item_id":…,
/// "output_index":…,"content_index":…,"delta":`). A message's deltas are written from it with
/// [`write_output_text_delta_after`], one copy instead of the id's escape check and the
/// numbers per token.
pub fn output_text_delta_head(
    item_id: &str,
    output_index: usize,
    content_index: usize,
) -> Result<String, serde_json::Error> {
    let mut head = String::new();
    write_output_text_delta_head(&mut head, item_id, output_index, content_index)?;
    Ok(head)
}

fn write_output_text_delta_head(
    out: &mut String,
    item_id: &str,
    output_index: usize,
    content_index: usize,
) -> Result<(), serde_json::Error> {
    let mut line = Line::new(
        out,
        "{\"type\":\"response.output_text.delta\",\"item_id\":",
        item_id.len(),
    );
    line.string(item_id)?;
    line.piece(",\"output_index\":");
    line.number(output_index as u64);
    line.piece(",\"content_index\":");
    line.number(content_index as u64);
    line.piece(",\"delta\":");
    Ok(())
}

/// A `response.output_text.delta` line appended to `out`, from its `head`
/// ([`output_text_delta_head`]): the very bytes [`write_output_text_delta`] writes for the
/// head's id and indexes.
pub fn write_output_text_delta_from(
    out: &mut String,
    head: &str,
    delta: &str,
    logprobs: &[Value],
    sequence_number: u64,
) -> Result<(), serde_json::Error> {
    out.reserve(head.len() + delta.len() + 64);
    out.push_str(head);
    write_output_text_delta_after(out, delta, logprobs, sequence_number)
}

/// The rest of a delta line after its head: the delta, the logprobs, the sequence number.
fn write_output_text_delta_after(
    out: &mut String,
    delta: &str,
    logprobs: &[Value],
    sequence_number: u64,
) -> Result<(), serde_json::Error> {
    if logprobs.is_empty() && !json_string::needs_escape(delta.as_bytes()) {
        // The usual line (a token's text needs no escape, logprobs are rarely asked for): the
        // delta between quotes, and the rest up to the number as one piece.
        out.reserve(delta.len() + 64);
        out.push('"');
        out.push_str(delta);
        out.push_str("\",\"logprobs\":[],\"sequence_number\":");
        push_number(out, sequence_number);
        out.push('}');
        return Ok(());
    }
    let mut line = Line { buf: out };
    line.string(delta)?;
    line.logprobs(logprobs)?;
    line.end(sequence_number);
    Ok(())
}

/// `response.function_call_arguments.delta`: a piece of a function call's arguments.
pub(crate) fn write_function_call_arguments_delta(
    out: &mut String,
    item_id: &str,
    output_index: usize,
    delta: &str,
    sequence_number: u64,
) -> Result<(), serde_json::Error> {
    let mut line = Line::new(
        out,
        "{\"type\":\"response.function_call_arguments.delta\",\"item_id\":",
        item_id.len() + delta.len(),
    );
    line.string(item_id)?;
    line.piece(",\"output_index\":");
    line.number(output_index as u64);
    line.piece(",\"delta\":");
    line.string(delta)?;
    line.end(sequence_number);
    Ok(())
}

/// `response.output_item.added` (`done` false) or `.done`.
pub(crate) fn write_output_item(
    out: &mut String,
    done: bool,
    output_index: usize,
    item: &OutputItem,
    sequence_number: u64,
) -> Result<(), serde_json::Error> {
    let head = if done {
        "{\"type\":\"response.output_item.done\",\"output_index\":"
    } else {
        "{\"type\":\"response.output_item.added\",\"output_index\":"
    };
    let mut line = Line::new(out, head, item.json_size());
    line.number(output_index as u64);
    line.piece(",\"item\":");
    item.write_json(line.buf)?;
    line.end(sequence_number);
    Ok(())
}

/// `response.content_part.added` (`done` false) or `.done`.
pub(crate) fn write_content_part(
    out: &mut String,
    done: bool,
    item_id: &str,
    output_index: usize,
    content_index: usize,
    part: &OutputContent,
    sequence_number: u64,
) -> Result<(), serde_json::Error> {
    let head = if done {
        "{\"type\":\"response.content_part.done\",\"item_id\":"
    } else {
        "{\"type\":\"response.content_part.added\",\"item_id\":"
    };
    let mut line = Line::new(out, head, item_id.len() + part.json_size());
    line.string(item_id)?;
    line.piece(",\"output_index\":");
    line.number(output_index as u64);
    line.piece(",\"content_index\":");
    line.number(content_index as u64);
    line.piece(",\"part\":");
    part.write_json(line.buf)?;
    line.end(sequence_number);
    Ok(())
}

/// `response.output_text.done`: a message's whole text.
pub(crate) fn write_output_text_done(
    out: &mut String,
    item_id: &str,
    output_index: usize,
    content_index: usize,
    text: &str,
    logprobs: &[Value],
    sequence_number: u64,
) -> Result<(), serde_json::Error> {
    let mut line = Line::new(
        out,
        "{\"type\":\"response.output_text.done\",\"item_id\":",
        item_id.len() + text.len(),
    );
    line.string(item_id)?;
    line.piece(",\"output_index\":");
    line.number(output_index as u64);
    line.piece(",\"content_index\":");
    line.number(content_index as u64);
    line.piece(",\"text\":");
    line.string(text)?;
    line.logprobs(logprobs)?;
    line.end(sequence_number);
    Ok(())
}

/// A response event (`response.completed`, …: `type`, `response`, `sequence_number`) built
/// around a response object already serialized (compact JSON, as `serde_json::to_string` writes
/// it), so the final response is serialized once for the store row, this event and the HTTP
/// body. Byte for byte what serializing the [`StreamEvent`](crate::events::StreamEvent) writes.
pub fn response_event_line(kind: &str, response_json: &str, sequence_number: u64) -> String {
    let mut line = String::with_capacity(response_json.len() + kind.len() + 56);
    line.push_str("{\"type\":\"");
    line.push_str(kind);
    line.push_str("\",\"response\":");
    line.push_str(response_json);
    line.push_str(",\"sequence_number\":");
    push_number(&mut line, sequence_number);
    line.push('}');
    line
}

/// One event line being written at the end of a buffer: constant pieces, strings as
/// serde_json writes them, numbers, then the sequence number and `}`.
struct Line<'a> {
    buf: &'a mut String,
}

impl Line<'_> {
    /// `head` is the line's opening, up to its first value; `text` the length of its variable
    /// parts (strings, nested JSON): numbers, the end and a few escapes fit in the rest.
    fn new<'a>(buf: &'a mut String, head: &str, text: usize) -> Line<'a> {
        buf.reserve(head.len() + text + 96);
        buf.push_str(head);
        Line { buf }
    }

    /// A constant piece (`,"key":`) or a value already written as JSON.
    fn piece(&mut self, text: &str) {
        self.buf.push_str(text);
    }

    fn string(&mut self, value: &str) -> Result<(), serde_json::Error> {
        json_string::push_quoted(self.buf, value)
    }

    fn number(&mut self, value: u64) {
        push_number(self.buf, value);
    }

    /// `,"logprobs":[…]` (almost always `[]`).
    fn logprobs(&mut self, logprobs: &[Value]) -> Result<(), serde_json::Error> {
        if logprobs.is_empty() {
            self.piece(",\"logprobs\":[]");
        } else {
            self.piece(",\"logprobs\":");
            self.json(&logprobs)?;
        }
        Ok(())
    }

    fn json<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), serde_json::Error> {
        json_string::push_serde(self.buf, value)
    }

    fn end(mut self, sequence_number: u64) {
        self.piece(",\"sequence_number\":");
        self.number(sequence_number);
        self.buf.push('}');
    }
}

/// A number as serde_json writes it (one or two digits without `itoa`'s buffer: a short
/// answer's sequence numbers).
fn push_number(out: &mut String, value: u64) {
    if value < 10 {
        out.push(char::from(b'0' + value as u8));
    } else if value < 100 {
        out.push(char::from(b'0' + (value / 10) as u8));
        out.push(char::from(b'0' + (value % 10) as u8));
    } else {
        out.push_str(itoa::Buffer::new().format(value));
    }
}

#[cfg(test)]
mod tests {
    use super::push_number;

    #[test]
    fn numbers_are_written_as_serde_json_writes_them() {
        for value in (0..=1_000).chain([12_345, u64::MAX - 1, u64::MAX]) {
            let mut out = String::new();
            push_number(&mut out, value);
            assert_eq!(out, serde_json::to_string(&value).unwrap_or_default());
        }
    }
}
