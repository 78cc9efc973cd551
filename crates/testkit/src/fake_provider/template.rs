//! A JSON text with one string left open, filled many times: the chunks of a streamed answer
//! that differ only in their delta's text are serialized once, by serde, with a placeholder
//! string ([`slot`]) where the text goes, and each chunk is then the text before it, the
//! delta as a JSON string, and the text after it. The bytes are serde's, whatever serde does
//! with the rest (key order, numbers, escapes), at a small fraction of the cost of building
//! and serializing a `serde_json::Value` per chunk (docs/benchmarks.md, "Issue 18, seventh
//! pass").

use serde_json::Value;

/// The placeholder string a [`Template`] is cut at.
const SLOT: &str = "\u{0}slot\u{0}";

/// The placeholder to put where the changing string goes before serializing.
pub(super) fn slot() -> Value {
    Value::String(SLOT.to_owned())
}

/// A serialized JSON value cut at its one [`slot`].
#[derive(Debug)]
pub(super) struct Template {
    before: String,
    after: String,
}

impl Template {
    /// `value` serialized and cut at its [`slot`]; `None` unless the slot's text occurs in
    /// it exactly once (e.g. a model name that happens to contain it: the caller then
    /// serializes each chunk whole).
    pub(super) fn new(value: &Value) -> Option<Template> {
        let text = value.to_string();
        let slot = slot().to_string();
        let mut found = text.match_indices(&slot);
        let (at, _) = found.next()?;
        if found.next().is_some() {
            return None;
        }
        Some(Template {
            before: text[..at].to_owned(),
            after: text[at + slot.len()..].to_owned(),
        })
    }

    /// Appends the value with `text` in the slot, as serde would have written it.
    pub(super) fn write(&self, out: &mut Vec<u8>, text: &str) {
        out.extend_from_slice(self.before.as_bytes());
        write_json_string(out, text);
        out.extend_from_slice(self.after.as_bytes());
    }

    /// The bytes the template adds besides the filled-in text.
    pub(super) fn len(&self) -> usize {
        self.before.len() + self.after.len()
    }
}

/// `text` as a JSON string, escaped exactly as `serde_json` escapes it: `"` and `\`, the
/// control characters below U+0020 (`\b`, `\t`, `\n`, `\f`, `\r` by name, the rest as
/// `\u00xx` with lower-case hex digits); everything else as it is.
pub(super) fn write_json_string(out: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (at, &byte) in bytes.iter().enumerate() {
        let named: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x09 => b"\\t",
            0x0a => b"\\n",
            0x0c => b"\\f",
            0x0d => b"\\r",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..at]);
        if named.is_empty() {
            let hex = [HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]];
            out.extend_from_slice(b"\\u00");
            out.extend_from_slice(&hex);
        } else {
            out.extend_from_slice(named);
        }
        start = at + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn escaped(text: &str) -> String {
        let mut out = Vec::new();
        write_json_string(&mut out, text);
        String::from_utf8(out).expect("escaping keeps UTF-8")
    }

    #[test]
    fn strings_are_escaped_as_serde_escapes_them() {
        // Every ASCII character alone and between others, and multi-byte characters.
        for byte in 0u8..=0x7f {
            let c = char::from(byte);
            for text in [c.to_string(), format!("a{c}b{c}{c}")] {
                assert_eq!(escaped(&text), Value::String(text.clone()).to_string());
            }
        }
        for text in [
            "",
            " tok0",
            "é 😀 \u{2028} \u{fffd}",
            "</script>\u{0}slot\u{0}",
        ] {
            assert_eq!(escaped(text), Value::String(text.to_owned()).to_string());
        }
    }

    #[test]
    fn a_template_fills_in_what_serde_would_write() {
        let at = |text: &str| json!({"z": 1, "a": {"content": text}, "m": "x\"y"});
        let template = Template::new(&at(SLOT)).expect("one slot");
        for text in ["", " tok7", "\"\\\n\u{1}é"] {
            let mut out = Vec::new();
            template.write(&mut out, text);
            assert_eq!(String::from_utf8(out).ok(), Some(at(text).to_string()));
        }
        assert_eq!(template.len(), at("").to_string().len() - 2);
    }

    #[test]
    fn a_slot_found_twice_or_not_at_all_makes_no_template() {
        assert!(Template::new(&json!({"a": SLOT, "b": SLOT})).is_none());
        assert!(Template::new(&json!({"a": "x"})).is_none());
    }
}
