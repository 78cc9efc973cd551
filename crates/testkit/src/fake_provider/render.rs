//! What every wire's renderer shares: the turn being answered, the events of a rendered stream
//! and where they sit, JSON bodies, raw call arguments kept verbatim, and query parameters.

use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::reply::Reply;

/// The `created` timestamp of every fake answer (fixed, for stable snapshots).
pub(super) const CREATED: u64 = 1_700_000_000;

/// What every wire's renderer needs to know about the turn being answered.
pub(super) struct Turn<'a> {
    /// Numbers this answer among all the fake's answers (1, 2, …).
    pub(super) n: u64,
    pub(super) model: String,
    /// Chat Completions' `stream_options.include_usage`.
    pub(super) include_usage: bool,
    pub(super) reply: &'a Reply,
}

/// One SSE event of a rendered stream.
pub(super) struct Event {
    /// The `event:` line (Anthropic, Responses), if any.
    pub(super) name: Option<String>,
    pub(super) data: String,
    pub(super) part: Part,
}

/// Where an event sits in the stream, which is what the modifiers act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    /// Before the answer (`response.created`, `message_start`, the role chunk).
    Opening,
    /// Part of the answer without a delta of its own (`content_block_start`, item events…).
    Content,
    /// A text or call delta (the first one is where [`Reply::wait_for`] holds).
    Delta,
    /// The terminal events, left out by [`Reply::then_hang`] and [`Reply::then_cut`].
    Closing,
}

impl Event {
    pub(super) fn data(data: &Value, part: Part) -> Event {
        Event {
            name: None,
            data: data.to_string(),
            part,
        }
    }

    /// An event whose `event:` name repeats the data's `type` (Anthropic, Responses).
    pub(super) fn typed(data: &Value, part: Part) -> Event {
        Event {
            name: data.get("type").and_then(Value::as_str).map(str::to_owned),
            data: data.to_string(),
            part,
        }
    }

    /// The event's bytes on the wire (`event:` line, `data:` line, blank line).
    fn write(&self, out: &mut Vec<u8>) {
        if let Some(name) = &self.name {
            out.extend_from_slice(b"event: ");
            out.extend_from_slice(name.as_bytes());
            out.push(b'\n');
        }
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(self.data.as_bytes());
        out.extend_from_slice(b"\n\n");
    }
}

/// The frames of a rendered stream, one SSE event each, written into one buffer: each frame
/// is a slice of it, sent as a chunk of its own.
#[derive(Debug, Default)]
pub(super) struct Frames {
    bytes: Vec<u8>,
    /// Each frame's place in `bytes` and its part of the stream, in order.
    frames: Vec<(std::ops::Range<usize>, Part)>,
}

impl Frames {
    /// Room for `frames` frames of about `bytes` bytes in all.
    pub(super) fn with_capacity(bytes: usize, frames: usize) -> Frames {
        Frames {
            bytes: Vec::with_capacity(bytes),
            frames: Vec::with_capacity(frames),
        }
    }

    pub(super) fn from_events(events: &[Event]) -> Frames {
        let bytes = events
            .iter()
            .map(|event| event.data.len() + event.name.as_ref().map_or(0, |n| n.len() + 8) + 8)
            .sum();
        let mut frames = Frames::with_capacity(bytes, events.len());
        for event in events {
            frames.push(event);
        }
        frames
    }

    pub(super) fn push(&mut self, event: &Event) {
        let start = self.bytes.len();
        event.write(&mut self.bytes);
        self.frames.push((start..self.bytes.len(), event.part));
    }

    /// A `data:` event whose payload `write` appends.
    pub(super) fn push_data(&mut self, part: Part, write: impl FnOnce(&mut Vec<u8>)) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(b"data: ");
        write(&mut self.bytes);
        self.bytes.extend_from_slice(b"\n\n");
        self.frames.push((start..self.bytes.len(), part));
    }

    /// Each frame's part, in order.
    pub(super) fn parts(&self) -> impl Iterator<Item = Part> + '_ {
        self.frames.iter().map(|(_, part)| *part)
    }

    /// Keeps only the frames whose part `keep` accepts.
    pub(super) fn retain(&mut self, keep: impl Fn(Part) -> bool) {
        self.frames.retain(|(_, part)| keep(*part));
    }

    /// The frames' bytes, each a slice of the one buffer.
    pub(super) fn into_chunks(self) -> Vec<Bytes> {
        let bytes = Bytes::from(self.bytes);
        self.frames
            .into_iter()
            .map(|(range, _)| bytes.slice(range))
            .collect()
    }
}

pub(super) fn json_response(status: u16, body: String) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// `value` serialized, with each string `"\u0000raw{i}\u0000"` (see [`raw_slot`]) replaced by
/// `raws[i]` when it is a JSON document (else by it as a JSON string): call arguments keep their
/// keys' order and their text where the wire carries them as JSON rather than as a string. The
/// whitespace between tokens goes, as the provider serializes the object itself (and a line
/// break would end an SSE `data:` line).
pub(super) fn with_raw(value: &Value, raws: &[&str]) -> String {
    let mut text = value.to_string();
    for (index, raw) in raws.iter().enumerate() {
        let slot = raw_slot(index).to_string();
        let replacement = if serde_json::from_str::<Value>(raw).is_ok() {
            compact(raw)
        } else {
            Value::String((*raw).to_owned()).to_string()
        };
        text = text.replacen(&slot, &replacement, 1);
    }
    text
}

/// A JSON text without the whitespace between its tokens (strings kept as they are).
fn compact(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in json.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

/// The placeholder [`with_raw`] replaces by `raws[index]`.
pub(super) fn raw_slot(index: usize) -> Value {
    Value::String(format!("\u{0}raw{index}\u{0}"))
}

/// The first value of `name` in a query string, percent-decoded.
pub(super) fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(key) == name).then(|| percent_decode(value))
    })
}

/// `%XX` escapes (and `+` as a space, as in query strings) decoded; invalid escapes kept.
pub(super) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        let escaped = (byte == b'%')
            .then(|| bytes.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (byte, escaped) {
            (_, Some(decoded)) => {
                out.push(decoded);
                at += 3;
            }
            (b'+', None) => {
                out.push(b' ');
                at += 1;
            }
            (other, None) => {
                out.push(other);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn raw_slots_keep_the_exact_text() {
        let value = json!({"args": raw_slot(0), "other": raw_slot(1)});
        let text = with_raw(&value, &[r#"{"b": 1,"a":"\u00e9 \" x"}"#, "not json"]);
        assert_eq!(
            text,
            r#"{"args":{"b":1,"a":"\u00e9 \" x"},"other":"not json"}"#
        );
        assert_eq!(compact("{\n  \"a b\": [1, 2]\n}"), r#"{"a b":[1,2]}"#);
    }

    #[test]
    fn frames_are_slices_of_one_buffer_in_the_sse_format() {
        let named = Event::typed(&json!({"type": "ping"}), Part::Opening);
        let plain = Event::data(&json!({"a": 1}), Part::Delta);
        let mut frames = Frames::from_events(&[named, plain]);
        frames.push_data(Part::Closing, |out| out.extend_from_slice(b"[DONE]"));
        assert_eq!(
            frames.parts().collect::<Vec<_>>(),
            [Part::Opening, Part::Delta, Part::Closing]
        );
        let chunks = frames.into_chunks();
        assert_eq!(
            chunks,
            [
                Bytes::from_static(b"event: ping\ndata: {\"type\":\"ping\"}\n\n"),
                Bytes::from_static(b"data: {\"a\":1}\n\n"),
                Bytes::from_static(b"data: [DONE]\n\n"),
            ]
        );
        let mut frames = Frames::default();
        frames.push_data(Part::Opening, |out| out.push(b'1'));
        frames.push_data(Part::Closing, |out| out.push(b'2'));
        frames.push_data(Part::Delta, |out| out.push(b'3'));
        frames.retain(|part| part != Part::Closing);
        assert_eq!(
            frames.into_chunks(),
            [
                Bytes::from_static(b"data: 1\n\n"),
                Bytes::from_static(b"data: 3\n\n")
            ]
        );
    }
}
