//! A JSON string written straight into a `String`, escaped byte for byte as `serde_json` escapes
//! it: `"` and `\` with a backslash, `\b` `\t` `\n` `\f` `\r` by name, the other control
//! characters as `\u00xx` (lowercase hex), everything else (DEL and non-ASCII included) as is.
//! The event lines written per token use it instead of `serde_json::to_writer` into a byte buffer,
//! which then has to be checked again as UTF-8 to become a `String`.

/// Appends `value` as a quoted JSON string.
pub(crate) fn push_quoted(out: &mut String, value: &str) {
    out.push('"');
    let bytes = value.as_bytes();
    // Most text needs no escape: one pass without early exit (the compiler does it 16 bytes at a
    // time), then one copy.
    let needs_escape = bytes.iter().fold(false, |any, &b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if !needs_escape {
        out.push_str(value);
        out.push('"');
        return;
    }
    let mut start = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let escape: &str = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            0x0c => "\\f",
            b'\r' => "\\r",
            0x00..=0x1f => "",
            _ => continue,
        };
        // `i` is at an ASCII byte: a character boundary.
        out.push_str(&value[start..i]);
        if escape.is_empty() {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&value[start..]);
    out.push('"');
}

const HEX: &[u8; 16] = b"0123456789abcdef";

#[cfg(test)]
mod tests {
    use super::*;

    fn check(value: &str) {
        let mut out = String::from("x");
        push_quoted(&mut out, value);
        let expected = serde_json::to_string(value).unwrap_or_default();
        assert_eq!(&out[1..], expected, "{value:?}");
    }

    /// Every ASCII character alone, between text and in a row, and non-ASCII text around
    /// escapes, are written as serde_json writes them.
    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut all = String::new();
        for byte in 0u8..=0x7f {
            let c = char::from(byte);
            all.push(c);
            check(&c.to_string());
            check(&format!("a{c}b"));
            check(&format!("é{c}{c}日"));
        }
        check(&all);
        for value in [
            "",
            "plain",
            "é 日本 🎉",
            "\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}",
            "</script>",
        ] {
            check(value);
        }
    }
}
