//! A response's transcript packed for SQLite (schema version 17): LZ4 in pieces, so that the
//! next response of its conversation packs only what it adds.
//!
//! Every response keeps its conversation's whole transcript, so a chat of many turns stores its
//! early turns again with every response; packed (the field names and punctuation of its items
//! and the words of its text recur), such a store is about half the size. Packing the whole
//! transcript again at every turn would cost ~15 instructions a byte of prose-like JSON, a
//! quarter of a turn's instructions past a hundred turns (docs/benchmarks.md, "Issue 18,
//! thirtieth pass"); but a turn's transcript is mostly the previous one's, so [`pack_after_parts`]
//! copies the packed pieces of the text the two share as they are and packs only the rest,
//! against the 16 KiB of text before it ([`WINDOW`]).
//!
//! The format: the format byte [`PIECES`], the length of the JSON (u32, little endian), then
//! pieces, each the length of its text (u32), the length of its block (u32) and an LZ4 block of
//! that text compressed against up to [`WINDOW`] bytes of the text before it. The last piece
//! is always the JSON's closing bracket alone: the pieces before it are then exactly the
//! transcript's text up to where a longer transcript of the same conversation goes on. The
//! text two transcripts share beyond the pieces kept is a piece of its own too: an OpenAI
//! conversation's run writes the previous run's answer again, in the form the conversation's
//! items replay it, so the next transcript parts from this one where that answer begins, and
//! keeps the pieces before it.
//!
//! Reading takes lz4_flex's safe decoder (the rows come from disk); a value whose pieces do not
//! add up to its length, or whose blocks do not unpack, is an error, never a panic.

use std::sync::Arc;

/// The format byte (after `event_pack.rs`'s 1 to 3).
pub(crate) const PIECES: u8 = 4;

/// Transcripts shorter than this are stored as they are: for a transcript of a few pages the
/// pages saved do not pay for the packing (the 8.7 KB agent request and its continuation took
/// 12% more instructions packed, and no less CPU).
pub(crate) const MIN_PACKED: usize = 16 << 10;

/// How much of the text before a piece its block is compressed against: the field names, the
/// shapes and the words of the items before it. A conversation of 130 turns of prose (209 KB)
/// packs to 79 KB whole, and turn by turn to 94 KB with a window of 4 KiB, 85 KB with this one,
/// 81 KB with 64 KiB, whose hashing (every third position) costs ~4 times this one's.
const WINDOW: usize = 16 << 10;

/// The least text a transcript must share with the one before it, when it shares no piece,
/// to be packed in pieces split where the two part (less is packed whole).
const MIN_SHARED: usize = 1 << 10;

/// Bytes before the first piece: the format byte and the length.
pub(crate) const HEADER: usize = 5;

/// Bytes before a piece's block: the two lengths.
const PIECE_HEADER: usize = 8;

/// The most bytes LZ4 expands one byte of a block into: a value claiming more is corrupt,
/// refused before anything is allocated for it.
const MAX_RATIO: usize = 255;

/// `json` (a transcript: a JSON array) packed in two pieces, or `None` when it is better stored
/// as it is (shorter than [`MIN_PACKED`], or not smaller packed).
pub(crate) fn pack(json: &str) -> Option<Arc<[u8]>> {
    if json.len() < MIN_PACKED {
        return None;
    }
    let text = json.as_bytes();
    let last = text.len().checked_sub(1)?;
    let mut packed = Vec::with_capacity(HEADER + 2 * PIECE_HEADER + max_block(text.len()) + 2);
    packed.push(PIECES);
    packed.extend_from_slice(&u32::try_from(text.len()).ok()?.to_le_bytes());
    push_piece(&mut packed, text, 0, last)?;
    push_piece(&mut packed, text, last, text.len())?;
    (packed.len() < text.len()).then(|| Arc::from(packed))
}

/// [`pack_after_parts`]' value alone.
#[cfg(test)]
pub(crate) fn pack_after(json: &str, before: &str, before_packed: &[u8]) -> Option<Arc<[u8]>> {
    pack_after_parts(json, before, before_packed).map(|after| after.packed)
}

/// A transcript packed after another ([`pack_after_parts`]): the whole value, and how much of
/// it is the other's, byte for byte.
pub(crate) struct After {
    pub(crate) packed: Arc<[u8]>,
    /// How many of the other's pieces it begins with.
    pub(crate) kept: usize,
    /// Where its own pieces begin in `packed`.
    pub(crate) own: usize,
}

/// `json` packed as the pieces of `before_packed` (which packs `before`) that hold text `json`
/// begins with, then a piece for the rest of what it shares with `before`, one for the rest
/// but the closing bracket, and the bracket: `None` when the two share less than
/// [`MIN_SHARED`] bytes and no piece, when `before_packed` is not `before` in pieces, or when
/// `json` is better stored as it is. The caller packs it whole then.
///
/// A chained turn's transcript is the one before it without its closing bracket, then the
/// turn's items: every piece but the bracket is kept, and the turn's items packed. A turn of an
/// OpenAI conversation writes the previous turn's output again as the conversation's items
/// replay it (another form of the same message): the pieces up to where the previous turn's
/// output began are kept, and the two turns' items packed.
///
/// Says which of the pieces are `before_packed`'s (`transcript_link.rs` stores only the
/// others).
pub(crate) fn pack_after_parts(json: &str, before: &str, before_packed: &[u8]) -> Option<After> {
    let text = json.as_bytes();
    let last = text.len().checked_sub(1)?;
    if text.len() < MIN_PACKED {
        return None;
    }
    let same = common_prefix(text, before.as_bytes()).min(last);
    let (length, pieces) = pieces(before_packed).ok()?;
    if length != before.len() || pieces.iter().map(|p| p.len).sum::<usize>() != length {
        return None;
    }
    // The pieces that end within the text the two have in common.
    let (mut kept, mut kept_text, mut kept_end) = (0, 0, HEADER);
    for piece in &pieces {
        if kept_text + piece.len > same {
            break;
        }
        kept += 1;
        kept_text += piece.len;
        kept_end = piece.offset + PIECE_HEADER + piece.block.len();
    }
    if kept_text == 0 && same < MIN_SHARED {
        return None;
    }
    let mut packed =
        Vec::with_capacity(kept_end + 3 * PIECE_HEADER + max_block(text.len() - kept_text) + 2);
    packed.push(PIECES);
    packed.extend_from_slice(&u32::try_from(text.len()).ok()?.to_le_bytes());
    packed.extend_from_slice(before_packed.get(HEADER..kept_end)?);
    // What the two share beyond the pieces kept, apart: the next transcript of an OpenAI
    // conversation goes on from it, and keeps it.
    if kept_text < same {
        push_piece(&mut packed, text, kept_text, same)?;
    }
    if same < last {
        push_piece(&mut packed, text, same, last)?;
    }
    push_piece(&mut packed, text, last, text.len())?;
    (packed.len() < text.len()).then(|| After {
        packed: Arc::from(packed),
        kept,
        own: kept_end,
    })
}

/// How many bytes `a` and `b` begin with in common (compared a few KiB at a time: a memcmp).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const STEP: usize = 4 << 10;
    let len = a.len().min(b.len());
    let mut at = 0;
    while at + STEP <= len && a[at..at + STEP] == b[at..at + STEP] {
        at += STEP;
    }
    at + a[at..len]
        .iter()
        .zip(&b[at..len])
        .take_while(|(x, y)| x == y)
        .count()
}

fn max_block(len: usize) -> usize {
    lz4_flex::block::get_maximum_output_size(len)
}

/// Appends the piece of `text[start..end]`, compressed against up to [`WINDOW`] bytes of the
/// text before it.
fn push_piece(packed: &mut Vec<u8>, text: &[u8], start: usize, end: usize) -> Option<()> {
    let piece = text.get(start..end)?;
    let window = &text[start.saturating_sub(WINDOW)..start];
    let at = packed.len();
    packed.resize(at + PIECE_HEADER + max_block(piece.len()), 0);
    let written =
        lz4_flex::block::compress_into_with_dict(piece, &mut packed[at + PIECE_HEADER..], window)
            .ok()?;
    packed.truncate(at + PIECE_HEADER + written);
    packed[at..at + 4].copy_from_slice(&u32::try_from(piece.len()).ok()?.to_le_bytes());
    packed[at + 4..at + PIECE_HEADER].copy_from_slice(&u32::try_from(written).ok()?.to_le_bytes());
    Some(())
}

/// One piece read from a packed value.
struct Piece<'a> {
    /// Where its header starts in the packed value.
    offset: usize,
    /// The length of its text.
    len: usize,
    block: &'a [u8],
}

/// The pieces of `packed` (a [`PIECES`] value), with the length its header claims; `Err`
/// says what is wrong with it.
fn pieces(packed: &[u8]) -> Result<(usize, Vec<Piece<'_>>), String> {
    let (&format, rest) = packed.split_first().ok_or("an empty packed transcript")?;
    if format != PIECES {
        return Err(format!(
            "a packed transcript of format {format}, not {PIECES}"
        ));
    }
    let (length, mut rest) = rest
        .split_first_chunk::<4>()
        .ok_or("a packed transcript cut short")?;
    let length = read_len(*length)?;
    let mut pieces = Vec::new();
    let mut offset = HEADER;
    while !rest.is_empty() {
        let (header, after) = rest
            .split_first_chunk::<PIECE_HEADER>()
            .ok_or("a packed transcript's piece cut short")?;
        let (len, block_len) = header.split_at(4);
        let len = read_len(len.try_into().map_err(|_| "a piece's header")?)?;
        let block_len = read_len(block_len.try_into().map_err(|_| "a piece's header")?)?;
        if block_len > after.len() {
            return Err(format!(
                "a packed transcript's piece of {block_len} bytes where {} are left",
                after.len()
            ));
        }
        let (block, next) = after.split_at(block_len);
        pieces.push(Piece { offset, len, block });
        offset += PIECE_HEADER + block_len;
        rest = next;
    }
    Ok((length, pieces))
}

/// Where each piece of `records` (pieces as a [`PIECES`] value holds them after its header)
/// ends in it; `Err` says what is wrong with them.
pub(crate) fn piece_ends(records: &[u8]) -> Result<Vec<usize>, String> {
    let mut ends = Vec::new();
    let mut at = 0;
    while at < records.len() {
        let header = records
            .get(at..at + PIECE_HEADER)
            .ok_or("a packed transcript's piece cut short")?;
        let block_len = read_len(header[4..].try_into().map_err(|_| "a piece's header")?)?;
        at = at
            .checked_add(PIECE_HEADER + block_len)
            .filter(|&end| end <= records.len())
            .ok_or_else(|| {
                format!(
                    "a packed transcript's piece of {block_len} bytes where {} are left",
                    records.len() - at - PIECE_HEADER
                )
            })?;
        ends.push(at);
    }
    Ok(ends)
}

fn read_len(bytes: [u8; 4]) -> Result<usize, String> {
    usize::try_from(u32::from_le_bytes(bytes))
        .map_err(|_| "a packed transcript too long for this machine".to_owned())
}

/// The JSON of a [`PIECES`] value; `Err` says what is wrong with it.
pub(crate) fn unpack(packed: &[u8]) -> Result<String, String> {
    let (length, pieces) = pieces(packed)?;
    if length > packed.len().saturating_mul(MAX_RATIO) {
        return Err(format!(
            "a packed transcript of {} bytes claiming {length} bytes of text",
            packed.len()
        ));
    }
    let mut text = vec![0; length];
    let mut at: usize = 0;
    for piece in pieces {
        let end = at
            .checked_add(piece.len)
            .filter(|&end| end <= length)
            .ok_or_else(|| {
                format!("a packed transcript's pieces longer than its {length} bytes")
            })?;
        let (before, rest) = text.split_at_mut(at);
        let window = &before[at.saturating_sub(WINDOW)..];
        let written =
            lz4_flex::block::decompress_into_with_dict(piece.block, &mut rest[..piece.len], window)
                .map_err(|e| format!("a packed transcript's piece that does not unpack: {e}"))?;
        if written != piece.len {
            return Err(format!(
                "a packed transcript's piece of {written} bytes, not the {} it claims",
                piece.len
            ));
        }
        at = end;
    }
    if at != length {
        return Err(format!(
            "a packed transcript of {at} bytes of pieces, not the {length} it claims"
        ));
    }
    String::from_utf8(text).map_err(|_| "a packed transcript that is not UTF-8".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A conversation's transcript of `turns` turns as the store writes it: a question and an
    /// answer of 64 words a turn, in words that recur as prose's do.
    fn transcript_json(turns: usize) -> String {
        let items: Vec<String> = (0..turns)
            .flat_map(|n| {
                let answer: String = (0..64)
                    .map(|w| format!(" w{}", (n * 64 + w) * 7919 % 1000))
                    .collect();
                [
                    format!(
                        r#"{{"type":"message","role":"user","content":[{{"type":"input_text","text":"question {n}? é\\\"😀"}}]}}"#
                    ),
                    format!(
                        r#"{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"{answer}","annotations":[]}}],"id":"msg_{n:08}","status":"completed"}}"#
                    ),
                ]
            })
            .collect();
        format!("[{}]", items.join(","))
    }

    #[test]
    fn a_transcript_packs_in_two_pieces_and_round_trips() {
        // 40 turns (~22 KB) and 400 (~220 KB: matches beyond the window as well).
        for turns in [40, 400] {
            let json = transcript_json(turns);
            assert!(json.len() >= MIN_PACKED);
            let packed = pack(&json).unwrap();
            assert_eq!(packed[0], PIECES);
            let (length, read) = pieces(&packed).unwrap();
            assert_eq!(length, json.len());
            assert_eq!(
                read.iter().map(|p| p.len).collect::<Vec<_>>(),
                [json.len() - 1, 1]
            );
            assert_eq!(unpack(&packed).unwrap(), json);
            assert!(
                packed.len() * 3 < json.len(),
                "{} of {}",
                packed.len(),
                json.len()
            );
        }
        // A shorter one stays as it is.
        let json = transcript_json(20);
        assert!(json.len() < MIN_PACKED, "{}", json.len());
        assert_eq!(pack(&json), None);
    }

    #[test]
    fn a_longer_transcript_of_the_conversation_keeps_the_pieces_before_it() {
        let mut before = transcript_json(40);
        let mut packed = pack(&before).unwrap();
        for turns in 41..=60 {
            let json = transcript_json(turns);
            let next = pack_after(&json, &before, &packed).unwrap();
            // The earlier pieces but the bracket as they were, byte for byte, then the new ones.
            let bracket = pieces(&packed).unwrap().1.last().unwrap().offset;
            assert_eq!(next[HEADER..bracket], packed[HEADER..bracket]);
            assert_eq!(unpack(&next).unwrap(), json, "turn {turns}");
            assert_eq!(pieces(&next).unwrap().1.len(), 2 + (turns - 40));
            (before, packed) = (json, next);
        }
        // Packed turn by turn, still well under half the text (a little larger than packed
        // whole: a piece's matches reach back [`WINDOW`] bytes only).
        let whole = pack(&before).unwrap();
        assert!(
            packed.len() * 2 < before.len() && whole.len() < packed.len(),
            "{} and {} of {}",
            packed.len(),
            whole.len(),
            before.len()
        );
    }

    /// `turns` turns as an OpenAI conversation's runs write them: the last turn's answer in
    /// the run's own form, the earlier ones as the conversation's items replay them.
    fn conversation_json(turns: usize) -> String {
        let json = transcript_json(turns);
        let replayed = format!(r#"],"id":"msg_{:08}","status":"completed"}}]"#, turns - 1);
        let end = json.strip_suffix(&replayed).unwrap();
        let at = end.rfind(r#"[{"type":"output_text","text":"#).unwrap();
        let text = &end[at + r#"[{"type":"output_text","text":"#.len()..];
        let text = text.strip_suffix(r#","annotations":[]}"#).unwrap();
        format!(r#"{}{text},"phase":"final_answer"}}]"#, &end[..at])
    }

    #[test]
    fn a_conversations_turn_keeps_the_pieces_before_the_turn_it_writes_again() {
        let mut before = conversation_json(40);
        let mut packed = pack(&before).unwrap();
        for turns in 41..=60 {
            let json = conversation_json(turns);
            let next = pack_after(&json, &before, &packed).unwrap();
            assert_eq!(unpack(&next).unwrap(), json, "turn {turns}");
            let (kept, now) = (pieces(&packed).unwrap().1, pieces(&next).unwrap().1);
            if turns == 41 {
                // Split where the two part, the bracket apart.
                assert_eq!(now.len(), 3);
            } else {
                // Every piece but the one that went on past the last turn's question, and
                // the bracket, kept; then the two turns' items, apart where the two part.
                let until = kept[kept.len() - 2].offset;
                assert_eq!(next[HEADER..until], packed[HEADER..until], "turn {turns}");
                assert_eq!(now.len(), kept.len() + 1, "turn {turns}");
            }
            (before, packed) = (json, next);
        }
        assert!(packed.len() * 2 < before.len());
    }

    #[test]
    fn a_transcript_that_shares_no_piece_with_the_one_before_is_packed_whole() {
        let before = transcript_json(40);
        let packed = pack(&before).unwrap();
        let mut changed = transcript_json(41);
        changed.replace_range(10..11, "X");
        let shorter = transcript_json(39);
        // The earlier items the same but not the pieces: another transcript's.
        let other_packed = pack(&transcript_json(45)).unwrap();
        for (json, before, before_packed) in [
            (changed.as_str(), before.as_str(), &packed),
            (transcript_json(41).as_str(), before.as_str(), &other_packed),
        ] {
            assert_eq!(pack_after(json, before, before_packed), None);
        }
        // A shorter one shares all it holds but its bracket, and none of the pieces: packed as
        // it is whole. The same transcript again: the same pieces.
        assert_eq!(pack_after(&shorter, &before, &packed), pack(&shorter));
        assert_eq!(pack_after(&before, &before, &packed), Some(packed));
    }

    #[test]
    fn the_common_prefix_is_found_across_and_within_the_steps() {
        let a = vec![7u8; 10_000];
        for at in [0, 1, 4095, 4096, 4097, 9_999] {
            let mut b = a.clone();
            b[at] = 8;
            assert_eq!(common_prefix(&a, &b), at);
        }
        assert_eq!(common_prefix(&a, &a[..5000]), 5000);
        assert_eq!(common_prefix(&a, &a), 10_000);
        assert_eq!(common_prefix(&a, &[]), 0);
    }

    #[test]
    fn a_corrupt_packed_transcript_is_an_error_not_a_panic() {
        let json = transcript_json(41);
        let good = pack_after(
            &json,
            &transcript_json(40),
            &pack(&transcript_json(40)).unwrap(),
        )
        .unwrap()
        .to_vec();
        let mut huge = good.clone();
        huge[1..HEADER].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut longer = good.clone();
        longer[1..HEADER].copy_from_slice(&u32::try_from(json.len() + 1).unwrap().to_le_bytes());
        let mut bad_block = good.clone();
        let first = pieces(&good).unwrap().1[0].block.len();
        for byte in &mut bad_block[HEADER + PIECE_HEADER..HEADER + PIECE_HEADER + first] {
            *byte = 0xff;
        }
        let mut piece_too_long = good.clone();
        piece_too_long[HEADER..HEADER + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        // One piece of three literal bytes that are not UTF-8.
        let not_utf8 = [
            PIECES, 3, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 0x30, 0xff, 0xfe, 0xfd,
        ];
        let cases: [(&[u8], &str); 7] = [
            (&[], "empty"),
            (&[1, 1, 0, 0, 0], "format 1"),
            (&huge, "claiming 4294967295"),
            (&longer, "not the"),
            (&bad_block, "unpack"),
            (&piece_too_long, "longer than"),
            (&not_utf8, "not UTF-8"),
        ];
        for (packed, says) in cases {
            let err = unpack(packed).unwrap_err();
            assert!(err.contains(says), "{says}: {err}");
        }
        for end in 0..good.len() {
            assert!(unpack(&good[..end]).is_err(), "cut at {end}");
        }
    }
}
