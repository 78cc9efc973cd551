//! A JSON string written straight into a `String`, as `serde_json` writes it. Most text a model
//! streams needs no escape: it is checked 32 bytes at a time (vector instructions), the rest
//! eight bytes at a time, and copied between quotes. A short text that holds a quote, a
//! backslash or a control character is written by `serde_json` itself; a longer one (a
//! conversation's messages of markdown, written again into every model request and stored
//! transcript) is escaped here, the runs between its escapes found the same way and copied
//! whole, each escape as serde_json writes it (the tests check every byte against
//! serde_json). The event lines and the response's writer use it, and [`push_serde`] for what
//! serde writes. A long string escaped lately on the thread is not escaped again
//! (`escape_memo.rs`).

use std::cell::RefCell;

use serde::Serialize;

use crate::escape_memo;

/// Appends `value` as a quoted JSON string. Fails only where `serde_json::to_string` would.
pub(crate) fn push_quoted(out: &mut String, value: &str) -> Result<(), serde_json::Error> {
    match first_escape(value.as_bytes(), 0) {
        None => {
            out.reserve(value.len() + 2);
            out.push('"');
            out.push_str(value);
            out.push('"');
            Ok(())
        }
        Some(_) if value.len() < ESCAPED_HERE => push_serde(out, value),
        Some(first) => {
            let before = out.len();
            if escape_memo::push(out, value, |out| push_escaped(out, value, first)).is_none() {
                // Not reached (an escape is an ASCII byte, so every run ends on a character
                // boundary); serde_json writes it then.
                out.truncate(before);
                return push_serde(out, value);
            }
            Ok(())
        }
    }
}

/// Text at least this long that needs an escape is escaped by [`push_escaped`]; shorter text
/// by serde_json, whose byte loop costs no more over a few bytes (docs/benchmarks.md, "Issue
/// 18, twenty-seventh pass" and "thirtieth pass").
const ESCAPED_HERE: usize = 64;

/// `value` quoted, its first escape at byte `first`: the runs between escapes copied whole,
/// each escape as serde_json writes it. `None` (not reached) if a run does not end on a
/// character boundary; `out` may then hold part of it.
fn push_escaped(out: &mut String, value: &str, first: usize) -> Option<()> {
    let bytes = value.as_bytes();
    out.reserve(value.len() + value.len() / 8 + 2);
    out.push('"');
    let (mut start, mut at) = (0, first);
    loop {
        out.push_str(value.get(start..at)?);
        push_escape(out, *bytes.get(at)?);
        start = at + 1;
        match first_escape(bytes, start) {
            Some(next) => at = next,
            None => break,
        }
    }
    out.push_str(value.get(start..)?);
    out.push('"');
    Some(())
}

/// The escape serde_json writes for `byte` (a control character, `"` or `\`).
fn push_escape(out: &mut String, byte: u8) {
    match byte {
        b'"' => out.push_str("\\\""),
        b'\\' => out.push_str("\\\\"),
        b'\n' => out.push_str("\\n"),
        b'\r' => out.push_str("\\r"),
        b'\t' => out.push_str("\\t"),
        0x08 => out.push_str("\\b"),
        0x0c => out.push_str("\\f"),
        _ => {
            out.push_str("\\u00");
            out.extend(char::from_digit(u32::from(byte >> 4), 16));
            out.extend(char::from_digit(u32::from(byte & 0xf), 16));
        }
    }
}

/// The largest buffer [`push_serde`] keeps for the next value (a larger one, for one large
/// value, is let go).
const MAX_KEPT: usize = 64 * 1024;

thread_local! {
    /// [`push_serde`]'s byte buffer, one per thread.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// serde_json's output for `value` appended to `out`: written into a byte buffer kept per
/// thread, checked as UTF-8 once and copied. (serde_json writes a value in many small pieces
/// — every key, quote and comma apart —; checking each piece as UTF-8 on its way into the
/// `String` cost more than writing the whole value twice: docs/benchmarks.md, "Issue 18,
/// twenty-sixth pass".) On an error nothing is appended.
pub(crate) fn push_serde<T: Serialize + ?Sized>(
    out: &mut String,
    value: &T,
) -> Result<(), serde_json::Error> {
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut scratch) => push_through(&mut scratch, out, value),
        // Not reached (serializing calls back into nothing of ours); a buffer of its own then.
        Err(_) => push_through(&mut Vec::new(), out, value),
    })
}

fn push_through<T: Serialize + ?Sized>(
    scratch: &mut Vec<u8>,
    out: &mut String,
    value: &T,
) -> Result<(), serde_json::Error> {
    scratch.clear();
    let written = serde_json::to_writer(&mut *scratch, value).and_then(|()| {
        let text = std::str::from_utf8(scratch)
            .map_err(|err| serde_json::Error::io(std::io::Error::other(err)))?;
        out.push_str(text);
        Ok(())
    });
    if scratch.capacity() > MAX_KEPT {
        *scratch = Vec::new();
    }
    written
}

/// Each byte of a word set to 1.
const ONES: u64 = 0x0101_0101_0101_0101;

/// Each byte's high bit.
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether `bytes` hold a control character, `"` or `\`.
pub(crate) fn needs_escape(bytes: &[u8]) -> bool {
    first_escape(bytes, 0).is_some()
}

/// Where the first control character, `"` or `\` of `bytes` at or after `from` is. The first
/// [`HEAD`] bytes are checked eight at a time (most runs between a text's escapes end there:
/// markdown's quotes and line ends, a JSON tool output's quotes); past them, blocks of
/// [`BLOCK`] bytes are checked whole ([`block_needs_escape`]), and the block that holds one,
/// or a remainder shorter than a block, eight bytes at a time again.
fn first_escape(bytes: &[u8], from: usize) -> Option<usize> {
    let rest = bytes.get(from..)?;
    if rest.len() <= HEAD {
        return first_escape_in_words(bytes, from);
    }
    if let Some(at) = first_escape_in_words(bytes.get(..from + HEAD)?, from) {
        return Some(at);
    }
    let mut at = from + HEAD;
    for block in bytes.get(at..)?.chunks_exact(BLOCK) {
        if block_needs_escape(block) {
            break;
        }
        at += BLOCK;
    }
    first_escape_in_words(bytes, at)
}

/// The bytes [`first_escape`] checks eight at a time before it checks blocks.
const HEAD: usize = 32;

/// The bytes [`first_escape`] checks at a time past [`HEAD`]: a long run of text without an
/// escape (a conversation's prose) is checked without a branch per byte or per word, which
/// the compiler turns into vector instructions (SSE2 on x86-64, sixteen bytes a step): ~1
/// instruction a byte where the words cost ~2.5, and no more for runs of a few words
/// (docs/benchmarks.md, "Issue 18, thirty-fourth pass").
const BLOCK: usize = 32;

/// Whether `block` holds a control character, `"` or `\`: every byte checked, no early exit
/// (a byte is `"` or `\` when one of its two differences from them is zero: one `min` and
/// one compare a lane, which vectorizes better than two compares).
fn block_needs_escape(block: &[u8]) -> bool {
    let mut found = 0u8;
    for &byte in block {
        found |= u8::from(byte < 0x20) | u8::from((byte ^ b'"').min(byte ^ b'\\') == 0);
    }
    found != 0
}

/// [`first_escape`] eight bytes at a time (the bytes of a short remainder padded with a
/// letter).
fn first_escape_in_words(bytes: &[u8], from: usize) -> Option<usize> {
    let rest = bytes.get(from..)?;
    let mut words = rest.chunks_exact(8);
    let mut at = from;
    for chunk in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let found = escapes_in(u64::from_le_bytes(word));
        if found != 0 {
            return Some(at + lowest_lane(found));
        }
        at += 8;
    }
    let rest = words.remainder();
    if rest.is_empty() {
        return None;
    }
    let mut word = [b'a'; 8];
    word[..rest.len()].copy_from_slice(rest);
    let found = escapes_in(u64::from_le_bytes(word));
    (found != 0).then(|| at + lowest_lane(found))
}

/// The lane (0–7, the first byte in memory first) of the lowest high bit set in `found`.
fn lowest_lane(found: u64) -> usize {
    (found.trailing_zeros() / 8) as usize
}

/// The high bits of the bytes of `word` (eight bytes, little endian) that are below 0x20, `"`
/// or `\`, or above such a byte. `(x - n·ONES) & !x & HIGHS` marks every byte of `x` below `n`
/// (for `n` ≤ 0x80), and a borrow can only mark a byte above one that is: so the lowest mark
/// is exact. A byte equal to `c` is a zero byte of `x ^ c·ONES`.
fn escapes_in(word: u64) -> u64 {
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let found = (word.wrapping_sub(ONES * 0x20) & !word)
        | (quote.wrapping_sub(ONES) & !quote)
        | (backslash.wrapping_sub(ONES) & !backslash);
    found & HIGHS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `push_json_members` ends an object as serde ends a struct with flattened fields; a
    /// value that is no object is refused and leaves `out` as it was.
    #[test]
    fn members_end_an_object_as_serde_flattens_them() {
        #[derive(Serialize)]
        struct Rest {
            #[serde(skip_serializing_if = "Option::is_none")]
            a: Option<u8>,
            #[serde(skip_serializing_if = "Option::is_none")]
            b: Option<&'static str>,
        }
        #[derive(Serialize)]
        struct Whole {
            first: &'static str,
            #[serde(flatten)]
            rest: Rest,
        }
        for (a, b) in [
            (None, None),
            (Some(1), None),
            (None, Some("\"b\"")),
            (Some(2), Some("c")),
        ] {
            let mut out = String::from("{\"first\":\"x\"");
            crate::push_json_members(&mut out, &Rest { a, b }).expect("an object");
            let whole = Whole {
                first: "x",
                rest: Rest { a, b },
            };
            assert_eq!(out, serde_json::to_string(&whole).expect("serde"));
        }
        let mut out = String::from("{\"first\":1");
        assert!(crate::push_json_members(&mut out, &[1, 2]).is_err());
        assert_eq!(out, "{\"first\":1");
    }

    /// `value` written as serde_json writes it, alone (short: by serde_json) and in a text long
    /// enough to be escaped here, at its start, its end and repeated.
    fn check(value: &str) {
        let pad = "p".repeat(ESCAPED_HERE);
        for text in [
            value.to_owned(),
            format!("{pad}{value}"),
            format!("{value}{pad}"),
            value.repeat(ESCAPED_HERE + 1),
        ] {
            let mut out = String::from("x");
            push_quoted(&mut out, &text).expect("writes");
            let expected = serde_json::to_string(&text).unwrap_or_default();
            assert_eq!(&out[1..], expected, "{text:?}");
        }
    }

    /// Long texts of random characters (dense in escapes, multi-byte characters between
    /// them), written as serde_json writes them.
    #[test]
    fn long_random_texts_are_escaped_as_serde_json_escapes_them() {
        let alphabet: Vec<char> = (0u8..0x80)
            .map(char::from)
            .chain(['é', '日', '🎉', '\u{7ff}', '\u{10ffff}'])
            .collect();
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for len in [ESCAPED_HERE, 100, 1000, 10_000] {
            let text: String = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    alphabet[(state % alphabet.len() as u64) as usize]
                })
                .collect();
            check(&text);
            // And sparse: one escape in a long run of prose.
            check(&format!(
                "{}\n{}",
                "word ".repeat(len / 5),
                "é".repeat(len / 7)
            ));
        }
    }

    /// What serde writes through the buffer is what it writes into a `String` of its own:
    /// strings with escapes between multi-byte characters, maps, lists and numbers; and a
    /// value written after a large one (whose buffer was let go) too.
    #[test]
    fn serde_writes_through_the_buffer_what_it_writes_into_a_string() {
        let values = [
            serde_json::json!("é\n\"日本\"\u{1}🎉\u{7f}"),
            serde_json::json!({"a": ["é", 1, -2.5, null, true], "日": {"k": "v\t🎉"}}),
            serde_json::json!([1e21, 0.1, -0.0, u64::MAX, i64::MIN]),
            serde_json::json!("x".repeat(MAX_KEPT + 1)),
            serde_json::json!(["after", "the large one"]),
        ];
        for value in values {
            let mut out = String::from("x");
            push_serde(&mut out, &value).expect("writes");
            assert_eq!(&out[1..], serde_json::to_string(&value).unwrap_or_default());
        }
        SCRATCH.with(|scratch| assert!(scratch.borrow().capacity() <= MAX_KEPT));
    }

    /// A value serde fails to write appends nothing.
    #[test]
    fn a_value_serde_fails_to_write_appends_nothing() {
        let mut map = std::collections::BTreeMap::new();
        map.insert(vec![1u8], 2u8);
        let mut out = String::from("x");
        assert!(push_serde(&mut out, &map).is_err());
        assert_eq!(out, "x");
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

    /// Every byte that needs an escape, and bytes next to it in value (0x1f, 0x20, `!`, `#`,
    /// `[`, `]`, 0x7f, non-ASCII), at every position of values up to three words long: the
    /// check's lanes, its word boundaries and its padded remainder all see them.
    #[test]
    fn every_position_of_every_word_is_checked() {
        let specials = ['\u{0}', '\u{1f}', '\n', '"', '\\'];
        let neighbours = [' ', '!', '#', '[', ']', '\u{7f}', 'é'];
        for len in 0..=24 {
            let plain: String = "abcdefghijklmnopqrstuvwx".chars().take(len).collect();
            check(&plain);
            for at in 0..len {
                for c in specials.iter().chain(&neighbours) {
                    let mut value: Vec<char> = plain.chars().collect();
                    value[at] = *c;
                    let value: String = value.into_iter().collect();
                    assert_eq!(
                        needs_escape(value.as_bytes()),
                        specials.contains(c),
                        "{value:?}"
                    );
                    check(&value);
                }
            }
        }
        // Past the words, the blocks: each of them at every position of a text of three
        // blocks and a remainder, alone and after an escape earlier in the text.
        let plain = "abcdefghijklmnopqrstuvwxyz".repeat(4);
        for at in 0..plain.len() {
            for c in specials.iter().chain(&neighbours) {
                for earlier in [None, Some(at / 2)] {
                    let mut value: Vec<char> = plain.chars().collect();
                    value[at] = *c;
                    if let Some(earlier) = earlier.filter(|&e| e < at) {
                        value[earlier] = '\n';
                    }
                    let value: String = value.into_iter().collect();
                    let escaped = specials.contains(c) || earlier.is_some_and(|e| e < at);
                    assert_eq!(needs_escape(value.as_bytes()), escaped, "{value:?}");
                    check(&value);
                }
            }
        }
        // Bytes of multi-byte characters in every lane (0x80–0xBF continuation bytes,
        // 0xC2–0xF4 leads) never need an escape.
        let text = "é日🎉\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}\u{10ffff}";
        for skip in 0..8 {
            let value = format!("{}{text}", "a".repeat(skip));
            assert!(!needs_escape(value.as_bytes()), "{value:?}");
            check(&value);
        }
    }
}
