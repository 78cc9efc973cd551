//! The fast path for the delta events a streamed turn is mostly made of:
//! `response.output_text.delta` (and `response.refusal.delta`) and
//! `response.function_call_arguments.delta`.
//!
//! [`StreamEvent`] is an internally tagged enum: serde buffers every event into its generic
//! `Content` tree (an owned copy of each string, a `Vec` per object) before it can look at the
//! `type`, then deserializes the variant from that tree. Here a delta is read in one pass with a
//! map visitor. Anything this path does not take (another event type, a key written with
//! escapes, a repeated key, a value of an unexpected type, malformed JSON) makes it answer
//! `None`, and the caller decodes the same text with serde as before: whatever this path
//! returns is what serde returns, and every error still comes from serde.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};

use super::wire::StreamEvent;
use crate::logprobs::WireLogprob;

/// A text or arguments delta event, or `None`: not one, or not one this path reads.
pub(crate) fn delta(data: &str) -> Option<StreamEvent> {
    let mut deserializer = serde_json::Deserializer::from_str(data);
    let event = FastDelta::deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some(event.0)
}

struct FastDelta(StreamEvent);

/// Why this path gave up (never shown: the caller then uses serde).
fn declined<E: de::Error>() -> E {
    E::custom("not read by the fast path")
}

impl<'de> Deserialize<'de> for FastDelta {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FastDeltaVisitor)
    }
}

struct FastDeltaVisitor;

/// Which delta the `type` names.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Text,
    Arguments,
}

impl<'de> Visitor<'de> for FastDeltaVisitor {
    type Value = FastDelta;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a delta event")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FastDelta, A::Error> {
        let mut kind = None;
        // Each `Some` once the key was seen (a repeated key is declined).
        let mut output_index: Option<Option<usize>> = None;
        let mut item_id: Option<Option<String>> = None;
        let mut delta: Option<String> = None;
        let mut logprobs: Option<Vec<WireLogprob>> = None;
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "type" if kind.is_none() => {
                    kind = Some(match map.next_value::<&'de str>()? {
                        "response.output_text.delta" | "response.refusal.delta" => Kind::Text,
                        "response.function_call_arguments.delta" => Kind::Arguments,
                        _ => return Err(declined()),
                    });
                }
                "output_index" if output_index.is_none() => {
                    output_index = Some(map.next_value()?);
                }
                // Not a field of a text delta: passed over once the type says so.
                "item_id" if kind == Some(Kind::Text) => {
                    map.next_value::<IgnoredAny>()?;
                }
                "item_id" if item_id.is_none() => item_id = Some(map.next_value()?),
                "delta" if delta.is_none() => delta = Some(map.next_value()?),
                "logprobs" if kind == Some(Kind::Arguments) => {
                    map.next_value::<IgnoredAny>()?;
                }
                "logprobs" if logprobs.is_none() => logprobs = Some(map.next_value()?),
                "type" | "output_index" | "item_id" | "delta" | "logprobs" => {
                    return Err(declined());
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let delta = delta.ok_or_else(declined)?;
        let output_index = output_index.flatten();
        let event = match kind.ok_or_else(declined)? {
            Kind::Text => StreamEvent::TextDelta {
                output_index,
                delta,
                logprobs: logprobs.unwrap_or_default(),
            },
            Kind::Arguments => StreamEvent::ArgumentsDelta {
                output_index,
                item_id: item_id.flatten(),
                delta,
            },
        };
        Ok(FastDelta(event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the fast path took `data`; when it did, serde must give the very same event.
    fn agree(data: &str) -> bool {
        crate::edits::agrees_with_serde(
            data,
            delta(data),
            serde_json::from_str::<StreamEvent>(data),
        )
    }

    #[test]
    fn deltas_are_read_in_one_pass_as_serde_reads_them() {
        for data in [
            r#"{"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel","logprobs":[],"obfuscation":"xYz"}"#,
            r#"{"type":"response.refusal.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"no"}"#,
            // Any key order, whitespace, null and missing optional fields, unknown fields.
            r#" { "delta" : "x" , "output_index" : null , "type" : "response.output_text.delta" , "u" : {"a":[1,{"b":[]}]} } "#,
            r#"{"type":"response.output_text.delta","delta":""}"#,
            r#"{"type":"response.output_text.delta","delta":"a","logprobs":[{"token":"a","logprob":-0.5,"bytes":[97],"top_logprobs":[{"token":"b","logprob":-1,"bytes":null}]}]}"#,
            r#"{"type":"response.function_call_arguments.delta","sequence_number":9,"item_id":"fc_1","output_index":2,"delta":"{\"a\":"}"#,
            r#"{"type":"response.function_call_arguments.delta","delta":"1}","item_id":null}"#,
            // A field of the other delta type is read but not used (serde ignores it).
            r#"{"type":"response.function_call_arguments.delta","delta":"1","logprobs":[]}"#,
            // Once the type is known, a field of the other delta type is passed over whatever
            // it holds, as serde passes over an unknown field.
            r#"{"type":"response.output_text.delta","delta":"x","item_id":7,"item_id":[]}"#,
            r#"{"type":"response.function_call_arguments.delta","delta":"x","logprobs":[1]}"#,
        ] {
            assert!(agree(data), "not taken: {data}");
        }
    }

    #[test]
    fn escapes_and_non_ascii_text_decode_as_serde_does() {
        let data = r#"{"type":"response.output_text.delta","output_index":0,"delta":"a\n\"q\"\\\/\t é 😀 \u00e9\ud83d\ude00"}"#;
        assert!(agree(data));
        let Some(StreamEvent::TextDelta { delta: text, .. }) = delta(data) else {
            panic!("not a text delta");
        };
        assert_eq!(text, "a\n\"q\"\\/\t é 😀 é😀");
    }

    #[test]
    fn anything_else_is_left_to_serde() {
        for data in [
            r#"{"type":"response.created","response":{"id":"r","output":[]}}"#,
            r#"{"type":"response.output_text.done","output_index":0,"text":"Hello"}"#,
            r#"{"type":"error","code":"server_error","message":"boom"}"#,
            // Keys or tags written with escapes.
            r#"{"type":"response.output_text.delta","d\u0065lta":"x"}"#,
            r#"{"type":"response.output_text\u002edelta","delta":"x"}"#,
            // Repeated keys.
            r#"{"type":"response.output_text.delta","delta":"x","delta":"y"}"#,
            r#"{"type":"response.output_text.delta","type":"response.output_text.delta","delta":"x"}"#,
            r#"{"type":"response.function_call_arguments.delta","delta":"x","item_id":"a","item_id":"b"}"#,
            // Unexpected types, missing fields, other shapes.
            r#"{"type":"response.output_text.delta","delta":null}"#,
            r#"{"type":"response.output_text.delta","delta":"x","output_index":"0"}"#,
            r#"{"type":"response.output_text.delta","delta":"x","output_index":1.5}"#,
            r#"{"item_id":7,"type":"response.output_text.delta","delta":"x"}"#,
            r#"{"type":"response.output_text.delta","delta":"x","logprobs":null}"#,
            r#"{"logprobs":[1],"type":"response.function_call_arguments.delta","delta":"x"}"#,
            r#"{"type":"response.output_text.delta"}"#,
            r#"{"delta":"x"}"#,
            r#"["response.output_text.delta",0,"x"]"#,
            // Malformed.
            r#"{"type":"response.output_text.delta","delta":"x"},"#,
            r#"{"type":"response.output_text.delta","delta":"x""#,
            r#"{"type":"response.output_text.delta","delta":"\udc00"}"#,
        ] {
            assert!(!agree(data), "taken: {data}");
        }
    }

    /// Every single-character edit of a few deltas: whatever the fast path still takes, serde
    /// reads the same way.
    #[test]
    fn edited_deltas_never_disagree_with_serde() {
        let bases = [
            r#"{"type":"response.output_text.delta","item_id":"m","output_index":10,"delta":"a\"é","logprobs":[]}"#,
            r#"{"output_index":null,"delta":"{}","type":"response.function_call_arguments.delta","item_id":"fc","u":[null,true,1.5]}"#,
        ];
        let taken = bases
            .into_iter()
            .flat_map(crate::edits::single_character_edits)
            .filter(|edited| agree(edited))
            .count();
        assert!(taken > 50, "{taken}");
    }
}
