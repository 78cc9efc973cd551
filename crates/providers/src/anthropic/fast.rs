//! The fast path for `content_block_delta`, the event a streamed turn is mostly made of.
//!
//! [`StreamEvent`](super::wire::StreamEvent) and its [`BlockDelta`] are internally tagged enums:
//! serde buffers every event into its generic `Content` tree (an owned copy of each string, a
//! `Vec` per object) before it can look at the `type`, and then deserializes the variant from
//! that tree: twice per delta, as the delta is tagged too. Here the two objects are read in one
//! pass with map visitors. Anything this path does not take (another event type, a key written
//! with escapes, a repeated key, a value of an unexpected type, malformed JSON) makes it answer
//! `None`, and the caller decodes the same text with serde as before: whatever this path
//! returns is what serde returns, and every error still comes from serde.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};

use super::wire::BlockDelta;

/// A `content_block_delta` event (its block index and delta), or `None`: not one, or not one
/// this path reads.
pub(crate) fn block_delta(data: &str) -> Option<(usize, BlockDelta)> {
    let mut deserializer = serde_json::Deserializer::from_str(data);
    let event = DeltaEvent::deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some((event.index, event.delta))
}

struct DeltaEvent {
    index: usize,
    delta: BlockDelta,
}

/// Why this path gave up (never shown: the caller then uses serde).
fn declined<E: de::Error>() -> E {
    E::custom("not read by the fast path")
}

impl<'de> Deserialize<'de> for DeltaEvent {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(DeltaEventVisitor)
    }
}

struct DeltaEventVisitor;

impl<'de> Visitor<'de> for DeltaEventVisitor {
    type Value = DeltaEvent;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content_block_delta event")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DeltaEvent, A::Error> {
        let mut tagged = false;
        let mut index = None;
        let mut delta = None;
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "type" => {
                    let kind = map.next_value::<&'de str>()?;
                    if tagged || kind != "content_block_delta" {
                        return Err(declined());
                    }
                    tagged = true;
                }
                "index" if index.is_none() => index = Some(map.next_value::<usize>()?),
                "delta" if delta.is_none() => delta = Some(map.next_value::<FastDelta>()?.0),
                "index" | "delta" => return Err(declined()),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match (tagged, index, delta) {
            (true, Some(index), Some(delta)) => Ok(DeltaEvent { index, delta }),
            _ => Err(declined()),
        }
    }
}

/// A [`BlockDelta`] read without buffering.
struct FastDelta(BlockDelta);

impl<'de> Deserialize<'de> for FastDelta {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FastDeltaVisitor)
    }
}

struct FastDeltaVisitor;

impl<'de> Visitor<'de> for FastDeltaVisitor {
    type Value = FastDelta;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content block delta")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FastDelta, A::Error> {
        let mut kind: Option<&'de str> = None;
        // `text`, `partial_json`, `thinking`, `signature`: the one field of each known type.
        let mut fields: [Option<String>; 4] = Default::default();
        while let Some(key) = map.next_key::<&'de str>()? {
            let slot = match key {
                "type" => {
                    if kind.is_some() {
                        return Err(declined());
                    }
                    kind = Some(map.next_value()?);
                    continue;
                }
                "text" => 0,
                "partial_json" => 1,
                "thinking" => 2,
                "signature" => 3,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if fields[slot].is_some() {
                return Err(declined());
            }
            fields[slot] = Some(map.next_value()?);
        }
        let [text, partial_json, thinking, signature] = fields;
        let delta = match kind.ok_or_else(declined)? {
            "text_delta" => BlockDelta::TextDelta {
                text: text.ok_or_else(declined)?,
            },
            "input_json_delta" => BlockDelta::InputJsonDelta {
                partial_json: partial_json.unwrap_or_default(),
            },
            "thinking_delta" => BlockDelta::ThinkingDelta {
                thinking: thinking.unwrap_or_default(),
            },
            "signature_delta" => BlockDelta::SignatureDelta {
                signature: signature.unwrap_or_default(),
            },
            _ => BlockDelta::Other,
        };
        Ok(FastDelta(delta))
    }
}

#[cfg(test)]
mod tests {
    use super::super::wire::StreamEvent;
    use super::*;

    /// Whether the fast path took `data`; when it did, serde must give the very same event.
    fn agree(data: &str) -> bool {
        let fast =
            block_delta(data).map(|(index, delta)| StreamEvent::ContentBlockDelta { index, delta });
        crate::edits::agrees_with_serde(data, fast, serde_json::from_str::<StreamEvent>(data))
    }

    fn text(data: &str) -> Option<String> {
        match block_delta(data) {
            Some((_, BlockDelta::TextDelta { text })) => Some(text),
            _ => None,
        }
    }

    #[test]
    fn deltas_are_read_in_one_pass_as_serde_reads_them() {
        for data in [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}"#,
            // Any key order, whitespace, unknown fields of any shape at both levels.
            r#" { "index" : 2 , "delta" : { "text" : "x" , "type" : "text_delta" } , "type" : "content_block_delta" } "#,
            r#"{"type":"content_block_delta","x":{"a":[1,-2.5e3,{"b":null}],"c":true},"index":1,"delta":{"type":"text_delta","extra":[],"text":""}}"#,
            r#"{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
            r#"{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"cited_text":"t"}}}"#,
            // A field of another delta type is read but not used (serde ignores it).
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","partial_json":"b"}}"#,
        ] {
            assert!(agree(data), "not taken: {data}");
        }
    }

    #[test]
    fn escapes_and_non_ascii_text_decode_as_serde_does() {
        let data = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a\n\"q\"\\\/\t é 😀 \u00e9\ud83d\ude00\u0000"}}"#;
        assert!(agree(data));
        assert_eq!(text(data).as_deref(), Some("a\n\"q\"\\/\t é 😀 é😀\u{0}"));
    }

    #[test]
    fn anything_else_is_left_to_serde() {
        for data in [
            // Other events.
            r#"{"type":"message_start","message":{"usage":{"input_tokens":3}}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            // Keys or tags written with escapes.
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","t\u0065xt":"x"}}"#,
            r#"{"type":"content_block\u005fdelta","index":0,"delta":{"type":"text_delta","text":"x"}}"#,
            // Repeated keys (serde's derive rejects known ones, ignores unknown ones).
            r#"{"type":"content_block_delta","index":0,"index":1,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","text":"y"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","signature":"a","signature":"b"}}"#,
            // Unexpected types, missing fields, other shapes.
            r#"{"type":"content_block_delta","index":"0","delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":null}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"text":"x"}}"#,
            r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":0}"#,
            r#"{"type":"content_block_delta","index":0,"delta":["text_delta","x"]}"#,
            r#"["content_block_delta",0,{"type":"text_delta","text":"x"}]"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","text":5}}"#,
            // Malformed.
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}} x"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ud800"}}"#,
            "",
        ] {
            assert!(!agree(data), "taken: {data}");
        }
    }

    /// Every single-character edit of a few deltas: whatever the fast path still takes, serde
    /// reads the same way.
    #[test]
    fn edited_deltas_never_disagree_with_serde() {
        let bases = [
            r#"{"type":"content_block_delta","index":10,"delta":{"type":"text_delta","text":"a\"é"}}"#,
            r#"{"index":1,"delta":{"partial_json":"{}","type":"input_json_delta"},"type":"content_block_delta","u":[null,true,1.5]}"#,
        ];
        let taken = bases
            .into_iter()
            .flat_map(crate::edits::single_character_edits)
            .filter(|edited| agree(edited))
            .count();
        // Whitespace and digit edits keep many of them deltas.
        assert!(taken > 50, "{taken}");
    }
}
