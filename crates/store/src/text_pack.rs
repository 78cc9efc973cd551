//! A response's long instructions stored once as they are (SQLite, schema version 21).
//!
//! An application sends the same system prompt with every request, and the response object
//! echoes it: in the response's stored JSON and in the `response.created`,
//! `response.in_progress` and `response.completed` events of its run. LZ4 scans prose at ~10–20
//! instructions a byte (its matches are short and frequent), and each of those rows packed the
//! prompt again: a 5 KB prompt took a request from ~529 k to ~903 k instructions, 351 k of them
//! LZ4; 732 k with the text stored once (docs/benchmarks.md, "Issue 18, thirty-seventh pass").
//!
//! When a response's `instructions` are at least [`MIN_TEXT`] bytes, their JSON (the string as
//! the response's JSON holds it, quotes and escapes included; at most [`MAX_TEXT`] bytes) is
//! the response's *text*, stored once as it is and matched wherever it recurs:
//!
//! - the response's JSON is format [`RESPONSE_WITH_TEXT`]: the format byte, the JSON's length
//!   and the text's length (u32, little endian), the text, then an LZ4 block of the JSON
//!   compressed against `lz4_block::RESPONSE_DICTIONARY` followed by the text (the text in the
//!   JSON is one match). Every write of the row takes this format: whether it does depends on
//!   the instructions alone, which never change for a response.
//! - the event chunks written with the run's end, in the same transaction as that row, are
//!   format [`EVENTS_AGAINST_TEXT`] when they hold the text: the format byte, the lines' length
//!   and the text's CRC-32 (u32, little endian), then an LZ4 block of the lines compressed
//!   against `lz4_block::DICTIONARY` followed by the text. Such a chunk reads only with its
//!   response's row, which holds the text (a run's chunks are deleted with their response or
//!   before it, never after); the CRC is checked before the block is unpacked.
//!
//! The text is stored unpacked, so a long prompt takes more room in the `responses` row (LZ4
//! halves prose) and less in its run's chunk (the three copies there are matches): less in all
//! (a 5 KB prompt's two rows 7.2 KB, 9.1 KB before). Chunks flushed while the run goes on are
//! packed as before (their response's row may not be written yet). PostgreSQL stores its JSON
//! as TEXT (TOAST compresses it) and never takes these formats.

use std::sync::Arc;

use crate::lz4_block::{self, DICTIONARY, RESPONSE_DICTIONARY};

/// The format byte of a response's JSON packed with its text at its head.
pub(crate) const RESPONSE_WITH_TEXT: u8 = 6;

/// The format byte of event lines packed against their response's text.
pub(crate) const EVENTS_AGAINST_TEXT: u8 = 7;

/// The shortest instructions kept apart (in bytes, before escaping); shorter ones are packed
/// with the rest as before.
pub(crate) const MIN_TEXT: usize = 1024;

/// The longest text kept apart: LZ4 matches reach 64 KiB back, and the response dictionary
/// and the JSON before the instructions take some of that. Longer instructions are packed
/// with the rest as before (a text beyond the reach of its matches would be stored twice).
pub(crate) const MAX_TEXT: usize = 60 * 1024;

/// Lines shorter than this are not packed against the text (as `event_pack.rs`'s own bound).
const MIN_LINES: usize = 512;

/// How much of the text's beginning must be found in a chunk's lines for them to be packed
/// against it: a chunk of deltas alone would pay for hashing the text and gain nothing.
const PROBE: usize = 64;

/// A response's text: the JSON of its `instructions`, when they are at least [`MIN_TEXT`]
/// bytes and their JSON at most [`MAX_TEXT`].
pub(crate) fn response_text(instructions: Option<&str>) -> Option<Arc<str>> {
    let instructions = instructions.filter(|i| (MIN_TEXT..=MAX_TEXT).contains(&i.len()))?;
    // serde_json's bytes, the runs between escapes copied whole (serde_json itself spends ~10
    // instructions a byte of prose).
    let mut json = String::with_capacity(instructions.len() + instructions.len() / 16 + 2);
    protocol::push_json_string(&mut json, instructions).ok()?;
    (json.len() <= MAX_TEXT).then(|| Arc::from(json))
}

/// A response's JSON packed with its `text` at its head (format [`RESPONSE_WITH_TEXT`]);
/// `None` only for a JSON or a text of 4 GiB or more.
pub(crate) fn pack_response(json: &str, text: &str) -> Option<Arc<[u8]>> {
    let json_length = u32::try_from(json.len()).ok()?;
    let text_length = u32::try_from(text.len()).ok()?;
    let mut head = Vec::with_capacity(9 + text.len());
    head.push(RESPONSE_WITH_TEXT);
    head.extend_from_slice(&json_length.to_le_bytes());
    head.extend_from_slice(&text_length.to_le_bytes());
    head.extend_from_slice(text.as_bytes());
    lz4_block::pack(
        &head,
        json.as_bytes(),
        &joined(RESPONSE_DICTIONARY, text.as_bytes()),
    )
}

/// Event lines packed against their response's `text` (format [`EVENTS_AGAINST_TEXT`]), or
/// `None` when they are better packed without it (short, not holding the text's beginning,
/// or not smaller).
pub(crate) fn pack_events(lines: &str, text: &str) -> Option<Arc<[u8]>> {
    if lines.len() < MIN_LINES {
        return None;
    }
    let probe = text.as_bytes().get(..PROBE.min(text.len()))?;
    memchr::memmem::find(lines.as_bytes(), probe)?;
    let length = u32::try_from(lines.len()).ok()?;
    let mut head = [EVENTS_AGAINST_TEXT, 0, 0, 0, 0, 0, 0, 0, 0];
    head[1..5].copy_from_slice(&length.to_le_bytes());
    head[5..9].copy_from_slice(&crc32fast::hash(text.as_bytes()).to_le_bytes());
    let packed = lz4_block::pack(
        &head,
        lines.as_bytes(),
        &joined(DICTIONARY, text.as_bytes()),
    )?;
    (packed.len() < lines.len()).then_some(packed)
}

/// Whether a packed chunk is packed against its response's text (and reads only with it).
pub(crate) fn needs_text(packed: &[u8]) -> bool {
    packed.first() == Some(&EVENTS_AGAINST_TEXT)
}

/// The JSON of a response packed with its text: `rest` is what follows the format byte.
pub(crate) fn unpack_response(rest: &[u8]) -> Result<String, String> {
    let (length, rest) = rest
        .split_first_chunk::<4>()
        .ok_or("a packed response cut short")?;
    let (text, block) = split_text(rest)?;
    lz4_block::unpack(
        u32::from_le_bytes(*length),
        block,
        &joined(RESPONSE_DICTIONARY, text),
    )
}

/// The text a stored response's JSON holds: `Some` for format [`RESPONSE_WITH_TEXT`] (`Err`
/// if it is cut short), `None` for any other form.
pub(crate) fn text_of_response(packed: &[u8]) -> Option<Result<&[u8], String>> {
    let rest = packed.strip_prefix(&[RESPONSE_WITH_TEXT])?;
    Some(
        rest.get(4..)
            .ok_or_else(|| "a packed response cut short".to_owned())
            .and_then(|rest| split_text(rest).map(|(text, _)| text)),
    )
}

/// The lines of a chunk packed against `text`, its response's text; `Err` if the chunk is
/// corrupt or was packed against another text.
pub(crate) fn unpack_events(packed: &[u8], text: &[u8]) -> Result<String, String> {
    let rest = packed
        .strip_prefix(&[EVENTS_AGAINST_TEXT])
        .ok_or("not a chunk packed against its response's text")?;
    let (length, rest) = rest
        .split_first_chunk::<4>()
        .ok_or("a packed chunk cut short")?;
    let (crc, block) = rest
        .split_first_chunk::<4>()
        .ok_or("a packed chunk cut short")?;
    if u32::from_le_bytes(*crc) != crc32fast::hash(text) {
        return Err("a chunk packed against a text other than its response's".to_owned());
    }
    lz4_block::unpack(
        u32::from_le_bytes(*length),
        block,
        &joined(DICTIONARY, text),
    )
}

/// The text and the block after it: `rest` begins with the text's length.
fn split_text(rest: &[u8]) -> Result<(&[u8], &[u8]), String> {
    let (length, rest) = rest
        .split_first_chunk::<4>()
        .ok_or("a packed response cut short")?;
    let length = usize::try_from(u32::from_le_bytes(*length))
        .map_err(|_| "a packed response too long for this machine")?;
    if length > rest.len() {
        return Err(format!(
            "a packed response claiming a text of {length} bytes in {}",
            rest.len()
        ));
    }
    Ok(rest.split_at(length))
}

/// A fixed dictionary followed by a text: what LZ4 packs against.
fn joined(dictionary: &[u8], text: &[u8]) -> Vec<u8> {
    let mut joined = Vec::with_capacity(dictionary.len() + text.len());
    joined.extend_from_slice(dictionary);
    joined.extend_from_slice(text);
    joined
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_pack;

    /// Prose of `n` bytes or so, words drawn at random (it packs about as well as a real
    /// prompt), with what JSON escapes: quotes, newlines, a tab, a backslash, and characters
    /// beyond ASCII.
    fn prompt(n: usize) -> String {
        let words = [
            "the",
            "assistant",
            "answers",
            "\"carefully\"",
            "in",
            "user's",
            "language",
            "précis",
            "kurz",
            "簡潔",
            "cite",
            "sources",
            "as",
            "[n]",
            "never",
            "guess",
            "a",
            "C:\\path",
            "when",
            "unsure,",
            "ask;",
            "tools",
            "search",
            "finance",
            "people",
            "prefer",
            "primary",
            "documents",
            "and",
            "quote\tthem",
            "exactly.\n",
            "of",
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut prompt = String::from("Rules:");
        while prompt.len() < n {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            prompt.push(' ');
            prompt.push_str(words[(state % words.len() as u64) as usize]);
            if state.is_multiple_of(7) {
                prompt.push_str(&format!(" {}", state % 1000));
            }
        }
        prompt
    }

    /// A run's event lines echoing a response whose JSON is `json`: created, in progress,
    /// `deltas` deltas, completed.
    fn run_lines(json: &str, deltas: usize) -> String {
        let mut lines = vec![
            format!(r#"{{"type":"response.created","sequence_number":0,"response":{json}}}"#),
            format!(r#"{{"type":"response.in_progress","sequence_number":1,"response":{json}}}"#),
        ];
        for n in 0..deltas {
            lines.push(format!(
                r#"{{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":" w{n}","sequence_number":{}}}"#,
                n + 2
            ));
        }
        lines.push(format!(
            r#"{{"type":"response.completed","sequence_number":{},"response":{json}}}"#,
            deltas + 2
        ));
        lines.join("\n")
    }

    fn response_json(instructions: &str) -> String {
        serde_json::json!({
            "id": "resp_1", "object": "response", "created_at": 1_796_435_599,
            "status": "completed", "model": "openai/gpt-test", "instructions": instructions,
            "output": [], "tools": [], "metadata": {}
        })
        .to_string()
    }

    /// The text is the instructions' JSON as the response's JSON holds it, stored once as it
    /// is: the response and its run's lines read back byte for byte, and the lines, with three
    /// copies of a 5 KB prompt, pack to a fraction of what they take without it.
    #[test]
    fn a_long_prompt_is_stored_once_and_everything_reads_back() {
        let instructions = prompt(5_000);
        let text = response_text(Some(&instructions)).unwrap();
        let json = response_json(&instructions);
        assert!(json.contains(&*text), "the text is the JSON's own bytes");

        let packed = pack_response(&json, &text).unwrap();
        assert_eq!(packed[0], RESPONSE_WITH_TEXT);
        assert_eq!(event_pack::unpack(&packed).unwrap(), json);
        assert_eq!(text_of_response(&packed).unwrap().unwrap(), text.as_bytes());
        // The text as it is, and the JSON around it a few hundred bytes.
        assert!(packed.len() < text.len() + 400, "{} bytes", packed.len());
        assert_eq!(
            memchr::memmem::find_iter(&packed, text.as_bytes()).count(),
            1
        );

        let lines = run_lines(&json, 64);
        let against = pack_events(&lines, &text).unwrap();
        assert_eq!(against[0], EVENTS_AGAINST_TEXT);
        assert_eq!(unpack_events(&against, text.as_bytes()).unwrap(), lines);
        let alone = event_pack::pack(&lines).unwrap();
        assert!(
            against.len() * 2 < alone.len(),
            "{} bytes against the text, {} without",
            against.len(),
            alone.len()
        );
    }

    /// A chunk packed against a text reads only with that very text; it is never taken for a
    /// chunk of another format, and nothing cut short or damaged panics.
    #[test]
    fn a_chunk_reads_only_with_its_responses_text() {
        let instructions = prompt(3_000);
        let text = response_text(Some(&instructions)).unwrap();
        let lines = run_lines(&response_json(&instructions), 10);
        let packed = pack_events(&lines, &text).unwrap();
        assert!(needs_text(&packed));
        let other = response_text(Some(&instructions.replacen("Rules:", "Rulez:", 1))).unwrap();
        assert_eq!(other.len(), text.len());
        let err = unpack_events(&packed, other.as_bytes()).unwrap_err();
        assert!(err.contains("other than its response's"), "{err}");
        let err = event_pack::unpack(&packed).unwrap_err();
        assert!(err.contains("without it"), "{err}");
        for end in 0..packed.len() {
            assert!(
                unpack_events(&packed[..end], text.as_bytes()).is_err(),
                "cut at {end}"
            );
        }
        let response = pack_response(&response_json(&instructions), &text).unwrap();
        for end in 0..response.len() {
            assert!(
                event_pack::unpack(&response[..end]).is_err(),
                "cut at {end}"
            );
            if let Some(Ok(held)) = text_of_response(&response[..end]) {
                assert!(held.len() <= end);
            }
        }
        let mut huge = response.to_vec();
        huge[5..9].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(text_of_response(&huge).unwrap().is_err());
        assert!(event_pack::unpack(&huge).is_err());
        let without = event_pack::pack_response(&response_json(&"short ".repeat(100))).unwrap();
        assert!(text_of_response(&without).is_none());
    }

    /// Short instructions, and instructions too long for LZ4's reach, have no text (the formats
    /// before hold them); chunks that do not hold the text (deltas alone) or are short are not
    /// packed against it.
    #[test]
    fn short_prompts_and_chunks_without_the_text_keep_the_formats_before() {
        assert_eq!(response_text(None), None);
        // Instructions of 1 KiB or more, whatever their escapes make of their JSON.
        assert_eq!(response_text(Some(&"\"\n".repeat(511))), None);
        let escaped = "\"\n".repeat(512);
        assert_eq!(
            response_text(Some(&escaped)).as_deref(),
            Some(serde_json::to_string(&escaped).unwrap().as_str())
        );
        // Instructions whose JSON is beyond the reach of LZ4's matches.
        let longest = "a".repeat(MAX_TEXT - 2);
        assert_eq!(response_text(Some(&longest)).unwrap().len(), MAX_TEXT);
        assert_eq!(response_text(Some(&"a".repeat(MAX_TEXT - 1))), None);
        assert_eq!(response_text(Some(&"\n".repeat(MAX_TEXT / 2))), None);
        let text = response_text(Some(&prompt(2_000))).unwrap();
        let deltas: Vec<String> = (0..40)
            .map(|n| format!(r#"{{"type":"response.output_text.delta","delta":" w{n}"}}"#))
            .collect();
        assert_eq!(pack_events(&deltas.join("\n"), &text), None);
        assert_eq!(pack_events(&text[..400], &text), None);
    }
}
