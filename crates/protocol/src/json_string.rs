//! A JSON string written straight into a `String`, as `serde_json` writes it. Most text a model
//! streams needs no escape: it is checked in one pass and copied between quotes. Text that holds
//! a quote, a backslash or a control character is written by `serde_json` itself, so the escapes
//! are serde_json's by construction. The event lines written per token use it instead of
//! `serde_json::to_writer` into a byte buffer, which then has to be checked again as UTF-8.

/// Appends `value` as a quoted JSON string. Fails only where `serde_json::to_string` would.
pub(crate) fn push_quoted(out: &mut String, value: &str) -> Result<(), serde_json::Error> {
    // One pass without early exit (the compiler does it 16 bytes at a time).
    let needs_escape = value.as_bytes().iter().fold(false, |any, &b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if needs_escape {
        out.push_str(&serde_json::to_string(value)?);
        return Ok(());
    }
    out.reserve(value.len() + 2);
    out.push('"');
    out.push_str(value);
    out.push('"');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(value: &str) {
        let mut out = String::from("x");
        push_quoted(&mut out, value).expect("writes");
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
