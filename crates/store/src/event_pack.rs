//! A chunk of event lines compressed for SQLite (schema version 12): the `data` of an
//! `event_chunks` row is then a BLOB, not TEXT.
//!
//! A run's event lines are very repetitive (every delta repeats the item id, the indexes, the
//! field names): a non-streaming 64-token answer's 72 lines, 16.7 KB as text (four overflow
//! pages of SQLite's 4 KiB), are 2 KB in LZ4 (`lz4_flex`, pure Rust, no `unsafe` with the
//! features the workspace enables): the row fits in its leaf page. Packing takes ~4.5 µs per
//! such chunk on the caller's task, unpacking ~1.5 µs (zstd saves ~700 more bytes, still one
//! page, for 2–5× the CPU; docs/benchmarks.md, "Issue 18, seventh pass").
//!
//! The format: one format byte [`LZ4`], the length of the lines in bytes (u32, little endian),
//! then an LZ4 block of the lines. The storage class tells the formats apart: a TEXT `data` is
//! the lines as they are (rows written before version 12, lines too short or too random to
//! gain, and PostgreSQL, whose `TEXT` TOAST already compresses), a BLOB is packed.

/// The format byte of an LZ4 block.
const LZ4: u8 = 1;

/// Bytes before the block: the format byte and the length.
const HEADER: usize = 5;

/// Lines shorter than this are stored as they are: one short event (a delta is ~235 bytes)
/// gains a few bytes at most.
const MIN_PACKED: usize = 512;

/// The most bytes LZ4 expands one byte of its block into (a match of the largest lengths is
/// 255 bytes of output per byte of input): a length beyond this many times the block is a
/// corrupt row, refused before anything is allocated for it.
const MAX_RATIO: usize = 255;

/// The lines packed, or `None` when they are better stored as they are (short, or not smaller
/// packed).
pub(crate) fn pack(lines: &str) -> Option<Vec<u8>> {
    if lines.len() < MIN_PACKED {
        return None;
    }
    let length = u32::try_from(lines.len()).ok()?;
    let mut packed = vec![0; HEADER + lz4_flex::block::get_maximum_output_size(lines.len())];
    packed[0] = LZ4;
    packed[1..HEADER].copy_from_slice(&length.to_le_bytes());
    let block = lz4_flex::block::compress_into(lines.as_bytes(), &mut packed[HEADER..]).ok()?;
    packed.truncate(HEADER + block);
    (packed.len() < lines.len()).then_some(packed)
}

/// The lines of a packed chunk; `Err` says what is wrong with it.
pub(crate) fn unpack(packed: &[u8]) -> Result<String, String> {
    let (&format, rest) = packed.split_first().ok_or("an empty packed chunk")?;
    if format != LZ4 {
        return Err(format!("a packed chunk of unknown format {format}"));
    }
    let (length, block) = rest
        .split_first_chunk::<4>()
        .ok_or("a packed chunk cut short")?;
    let length = usize::try_from(u32::from_le_bytes(*length))
        .map_err(|_| "a packed chunk too long for this machine")?;
    if length > block.len().saturating_mul(MAX_RATIO) {
        return Err(format!(
            "a packed chunk of {} bytes claiming {length} bytes of lines",
            packed.len()
        ));
    }
    let mut lines = vec![0; length];
    let written = lz4_flex::block::decompress_into(block, &mut lines)
        .map_err(|e| format!("a packed chunk that does not unpack: {e}"))?;
    if written != length {
        return Err(format!(
            "a packed chunk of {written} bytes of lines, not the {length} it claims"
        ));
    }
    String::from_utf8(lines).map_err(|_| "a packed chunk whose lines are not UTF-8".to_owned())
}

/// `n` pseudo-random lowercase letters (xorshift from `state`, which must not be 0): text that
/// does not compress, for the tests of packed chunks and of the WAL's size.
#[cfg(test)]
pub(crate) fn random_letters(mut state: u64, n: usize) -> String {
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'a' + (state % 26) as u8)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize) -> String {
        (0..n)
            .map(|i| {
                format!(
                    r#"{{"type":"response.output_text.delta","item_id":"msg_1","delta":" tok{i}","sequence_number":{i}}}"#
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn lines_round_trip_byte_for_byte() {
        for text in [lines(72), lines(5000), format!("{}é\u{1F600}", lines(20))] {
            let packed = pack(&text).unwrap();
            assert!(packed.len() * 3 < text.len(), "{} bytes", packed.len());
            assert_eq!(unpack(&packed).unwrap(), text);
        }
    }

    #[test]
    fn short_or_random_lines_stay_as_they_are() {
        assert_eq!(pack(&lines(1)), None);
        // 600 pseudo-random letters: LZ4 cannot make them smaller.
        let random = random_letters(0x9E37_79B9_7F4A_7C15, 600);
        assert_eq!(pack(&random), None);
    }

    #[test]
    fn a_corrupt_chunk_is_an_error_not_a_panic() {
        let good = pack(&lines(72)).unwrap();
        let claimed = u32::from_le_bytes(good[1..HEADER].try_into().unwrap());
        let mut wrong_length = good.clone();
        wrong_length[1..HEADER].copy_from_slice(&(claimed + 1).to_le_bytes());
        let mut huge = good.clone();
        huge[1..HEADER].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut bad_block = good.clone();
        for byte in &mut bad_block[HEADER..] {
            *byte = 0xff;
        }
        // An LZ4 block of three literal bytes that are not UTF-8.
        let not_utf8 = [LZ4, 3, 0, 0, 0, 0x30, 0xff, 0xfe, 0xfd];
        let cases: [(&[u8], &str); 7] = [
            (&[], "empty"),
            (&[9, 1, 0, 0, 0], "unknown format 9"),
            (&good[..3], "cut short"),
            (&huge, "claiming 4294967295"),
            (&wrong_length, "not the"),
            (&bad_block, "unpack"),
            (&not_utf8, "not UTF-8"),
        ];
        for (packed, says) in cases {
            let err = unpack(packed).unwrap_err();
            assert!(err.contains(says), "{says}: {err}");
        }
        // Every truncation of a good chunk is refused too.
        for end in 0..good.len() {
            assert!(unpack(&good[..end]).is_err(), "cut at {end}");
        }
    }

    #[test]
    fn lz4_never_expands_a_byte_past_the_bound() {
        let zeros = "0".repeat(1 << 20);
        let packed = pack(&zeros).unwrap();
        assert!((packed.len() - HEADER) * MAX_RATIO >= zeros.len());
        assert_eq!(unpack(&packed).unwrap(), zeros);
    }
}
