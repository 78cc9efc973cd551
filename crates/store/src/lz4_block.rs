//! LZ4 blocks as the store writes them: the fixed dictionaries stored blocks refer to, packing
//! into an output buffer kept per thread, unpacking with the claimed length checked first. The
//! formats around the blocks are `event_pack.rs`'s (event chunks, a response's JSON) and
//! `text_pack.rs`'s (a response's long instructions); `transcript_pack.rs` packs its pieces on
//! its own.
//!
//! Writing takes lz4_flex's fast encoder (no `safe-encode`: `unsafe` inside lz4_flex, the
//! encoder its own fuzz targets are built with), which writes the same bytes as its safe one
//! in ~27% fewer instructions (docs/benchmarks.md, "Issue 18, twelfth pass: the store's
//! packing"); reading its safe decoder (the rows come from disk, `checked-decode`).

use std::cell::RefCell;
use std::sync::Arc;

/// What `event_pack`'s format 2 blocks are compressed against: the event lines of a run with
/// its ids zeroed and its text left out. Never to be changed: the blocks stored refer to its
/// bytes (a new dictionary would be a new format byte).
pub(crate) const DICTIONARY: &[u8] = include_bytes!("event_pack_dictionary.jsonl");

/// What `event_pack`'s format 3 blocks (a response's JSON) are compressed against: the last
/// line of [`DICTIONARY`] (the `response.completed` event), fixed with it.
pub(crate) const RESPONSE_DICTIONARY: &[u8] = last_line(DICTIONARY);

/// The last line of `text`, without its newline.
pub(crate) const fn last_line(text: &[u8]) -> &[u8] {
    let (mut start, mut end) = (text.len(), text.len());
    if end > 0 && text[end - 1] == b'\n' {
        end -= 1;
        start -= 1;
    }
    while start > 0 && text[start - 1] != b'\n' {
        start -= 1;
    }
    let (_, from) = text.split_at(start);
    let (line, _) = from.split_at(end - start);
    line
}

/// The most bytes LZ4 expands one byte of its block into (a match of the largest lengths is
/// 255 bytes of output per byte of input): a length beyond this many times the block is a
/// corrupt row, refused before anything is allocated for it.
pub(crate) const MAX_RATIO: usize = 255;

/// The largest output buffer a thread keeps from one value to the next (for values up to ~58
/// KB); longer ones are packed into a buffer of their own.
pub(crate) const KEPT_BUFFER: usize = 64 * 1024;

thread_local! {
    /// The output buffer of the thread's last packing: not allocated and zeroed again for each
    /// value.
    pub(crate) static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// `header` followed by an LZ4 block of `input` compressed against `dictionary` (`None` if
/// LZ4 fails, which a buffer of its maximum output size rules out). Written in the thread's
/// kept output buffer when it fits there.
pub(crate) fn pack(header: &[u8], input: &[u8], dictionary: &[u8]) -> Option<Arc<[u8]>> {
    let size = header.len() + lz4_flex::block::get_maximum_output_size(input.len());
    if size > KEPT_BUFFER {
        return pack_into(&mut Vec::new(), size, header, input, dictionary);
    }
    BUFFER.with_borrow_mut(|buffer| pack_into(buffer, size, header, input, dictionary))
}

/// [`pack`] with `buffer` as the output buffer (grown to `size` as needed; whatever it holds
/// is written over).
pub(crate) fn pack_into(
    buffer: &mut Vec<u8>,
    size: usize,
    header: &[u8],
    input: &[u8],
    dictionary: &[u8],
) -> Option<Arc<[u8]>> {
    if buffer.len() < size {
        buffer.resize(size, 0);
    }
    let output = buffer.get_mut(..size)?;
    let (head, rest) = output.split_at_mut(header.len());
    head.copy_from_slice(header);
    let block = lz4_flex::block::compress_into_with_dict(input, rest, dictionary).ok()?;
    Some(Arc::from(output.get(..header.len() + block)?))
}

/// The `length` bytes of text an LZ4 `block` compressed against `dictionary` (none if empty)
/// holds; `Err` says what is wrong with it.
pub(crate) fn unpack(length: u32, block: &[u8], dictionary: &[u8]) -> Result<String, String> {
    let length = usize::try_from(length).map_err(|_| "a packed chunk too long for this machine")?;
    if length > block.len().saturating_mul(MAX_RATIO) {
        return Err(format!(
            "a packed block of {} bytes claiming {length} bytes of text",
            block.len()
        ));
    }
    let mut lines = vec![0; length];
    let written = if dictionary.is_empty() {
        lz4_flex::block::decompress_into(block, &mut lines)
    } else {
        lz4_flex::block::decompress_into_with_dict(block, &mut lines, dictionary)
    }
    .map_err(|e| format!("a packed chunk that does not unpack: {e}"))?;
    if written != length {
        return Err(format!(
            "a packed chunk of {written} bytes of lines, not the {length} it claims"
        ));
    }
    String::from_utf8(lines).map_err(|_| "a packed chunk whose lines are not UTF-8".to_owned())
}
