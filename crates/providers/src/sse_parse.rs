//! An incremental server-sent-events parser over bytes: the event-stream interpretation of the
//! HTML standard (§9.2.6), fed the body chunk by chunk as it arrives, in any chunking.
//!
//! - Lines end in CR LF, a lone LF or a lone CR (a CR at the end of one chunk and an LF at the
//!   start of the next are one line end).
//! - One UTF-8 byte order mark at the very start of the stream is skipped, even split over
//!   chunks.
//! - `data:` lines are joined with LF; `event:` sets the event's type and `id:` the last event
//!   id (kept across events, ignored when it holds U+0000); `retry:` and unknown fields are
//!   ignored; a line starting with `:` is a comment; a line without a colon is a field with an
//!   empty value; one space after the colon is dropped.
//! - A blank line dispatches the event, unless no `data` line was seen since the last one (then
//!   the type is reset and nothing is dispatched). An unfinished event at the end of the body is
//!   dropped.
//!
//! Two deliberate limits, each an error naming it: a line may hold at most
//! [`MAX_LINE_BYTES`] and an event's data at most [`MAX_EVENT_BYTES`], so an upstream that never
//! ends a line cannot make agentd buffer without bound. A field value that is not UTF-8 is an
//! error too (the standard would replace the bytes; for a JSON payload that only hides a broken
//! upstream).
//!
//! Lines are read where they arrived, in the body's own `Bytes`: only a line cut by the end of a
//! chunk is copied (until its end comes), and an event whose one data line and blank line are
//! in one chunk (the usual `data: …` LF LF, read in one step) is handed out from that chunk.
//! `next_raw` hands that usual event's data out as bytes not yet checked to be UTF-8 (the Chat
//! Completions decoder checks only a chunk's text when the rest repeats the previous chunk's
//! bytes, which were checked); `next_event` checks them.
//! `oracle` (tests only) keeps the parser as it was before, copying every chunk into one
//! buffer; the tests compare the two on every cut of their bodies.

use std::fmt;

use bytes::Bytes;

/// The longest line accepted (the largest whole JSON body an upstream may send, 16 MiB).
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The most data one event may carry (its `data` lines together).
pub(crate) const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Why a stream cannot be read further.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SseError {
    /// A line longer than the limit (in bytes).
    LineTooLong { limit: usize },
    /// An event whose data is larger than the limit (in bytes).
    EventTooLarge { limit: usize },
    /// A field value that is not UTF-8.
    NotUtf8,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::LineTooLong { limit } => {
                write!(f, "an SSE line is longer than the limit of {limit} bytes")
            }
            SseError::EventTooLarge { limit } => {
                write!(
                    f,
                    "an SSE event's data is larger than the limit of {limit} bytes"
                )
            }
            SseError::NotUtf8 => f.write_str("the stream is not valid UTF-8"),
        }
    }
}

/// One dispatched event as [`SseParser::next_raw`] hands it out: its data maybe not checked
/// to be UTF-8 yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawEvent<'a> {
    /// The `event` field, `"message"` when there was none.
    pub(crate) event: &'a str,
    /// The `data` lines joined with LF.
    pub(crate) data: Data<'a>,
    /// The last event id seen so far in the stream (`""` when none).
    pub(crate) id: &'a str,
}

/// An event's data: checked to be UTF-8, or the bytes of the usual event's one data line, read
/// in one step and not checked (whoever takes them checks them, or the bytes it needs as text:
/// the data is refused as [`SseError::NotUtf8`] when it is not UTF-8, as the checked one is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Data<'a> {
    Text(&'a str),
    Unchecked(&'a [u8]),
}

impl<'a> Data<'a> {
    /// The data as text: checked now if it was not yet.
    pub(crate) fn checked(self) -> Result<&'a str, SseError> {
        match self {
            Data::Text(text) => Ok(text),
            Data::Unchecked(bytes) => std::str::from_utf8(bytes).map_err(|_| SseError::NotUtf8),
        }
    }
}

/// One dispatched event, borrowed from the parser until the next call (data checked: the
/// tests' view, [`SseParser::next_event`]).
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SseEvent<'a> {
    /// The `event` field, `"message"` when there was none.
    pub(crate) event: &'a str,
    /// The `data` lines joined with LF.
    pub(crate) data: &'a str,
    /// The last event id seen so far in the stream (`""` when none).
    pub(crate) id: &'a str,
}

/// The parser's state between chunks.
///
/// Complete lines are read where they arrived, in the chunk last fed (a `Bytes`, not copied);
/// only a line that a chunk ends in the middle of is copied, into `partial`, until its end
/// comes. An event whose one `data` line and blank line arrive in the same chunk is handed out
/// borrowed from that chunk; data lines are copied into `data` only when an event has several,
/// or when its blank line comes in a later chunk.
#[derive(Debug)]
pub(crate) struct SseParser {
    /// The chunk fed last; its bytes from `at` on are not parsed yet.
    chunk: Bytes,
    at: usize,
    /// The start of a line whose end was not received yet (never a line end). Before the byte
    /// order mark is decided (`started` false): the stream's first bytes, a prefix of the mark.
    partial: Vec<u8>,
    /// Past the start of the stream, where a byte order mark may be.
    started: bool,
    /// The last line ended in a CR that was the last byte received: an LF next belongs to it.
    after_cr: bool,
    /// The data lines of the event being read, each followed by LF, when they could not be left
    /// in their chunk.
    data: String,
    /// The event's type (empty: `message`).
    event: String,
    /// The last event id buffer.
    id: String,
    /// `data` and `event` belong to the event returned last: clear them before reading on.
    dispatched: bool,
    max_line: usize,
    max_event: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::with_limits(MAX_LINE_BYTES, MAX_EVENT_BYTES)
    }
}

/// What one line does to the event being read.
enum LineKind<'a> {
    /// A blank line: dispatch the event, if it has data.
    Blank,
    /// A `data` field's value.
    Data(&'a str),
    /// Anything else (comment, `event`, `id`, ignored field): already applied.
    Other,
}

impl SseParser {
    /// A parser with other limits than the defaults (tests).
    pub(crate) fn with_limits(max_line: usize, max_event: usize) -> SseParser {
        SseParser {
            chunk: Bytes::new(),
            at: 0,
            partial: Vec::new(),
            started: false,
            after_cr: false,
            data: String::new(),
            event: String::new(),
            id: String::new(),
            dispatched: false,
            max_line,
            max_event,
        }
    }

    /// Adds the next chunk of the body. (Normally fed once `next_event` returned `None`, when
    /// the previous chunk is read to its end; otherwise its unread rest and `chunk` are joined.)
    pub(crate) fn feed(&mut self, chunk: Bytes) {
        if self.at < self.chunk.len() {
            let mut joined = Vec::with_capacity(self.chunk.len() - self.at + chunk.len());
            joined.extend_from_slice(&self.chunk[self.at..]);
            joined.extend_from_slice(&chunk);
            self.chunk = Bytes::from(joined);
        } else {
            self.chunk = chunk;
        }
        self.at = 0;
        if !self.started {
            self.skip_byte_order_mark();
        }
    }

    /// Decides on the byte order mark once the stream's first three bytes (or fewer that cannot
    /// begin one) are in: skips it if it is there. Until then the first bytes wait in `partial`.
    fn skip_byte_order_mark(&mut self) {
        let rest = &self.chunk[self.at..];
        let wanted = BOM.len() - self.partial.len();
        let head = &rest[..rest.len().min(wanted)];
        let so_far = &BOM[self.partial.len()..];
        if !so_far.starts_with(head) {
            // Not a mark: the bytes kept so far begin the first line.
            self.started = true;
        } else if head.len() == wanted {
            self.partial.clear();
            self.at += wanted;
            self.started = true;
        } else {
            // Maybe the start of a mark: wait for more (an empty body ends here too).
            self.partial.extend_from_slice(head);
            self.at = self.chunk.len();
        }
    }

    /// The next complete event in what was fed, or `None` until more is fed. After an error
    /// the stream cannot be read further. (The tests' view of [`SseParser::next_raw`], with
    /// every data checked.)
    #[cfg(test)]
    pub(crate) fn next_event(&mut self) -> Result<Option<SseEvent<'_>>, SseError> {
        let Some(event) = self.next_raw()? else {
            return Ok(None);
        };
        Ok(Some(SseEvent {
            event: event.event,
            data: event.data.checked()?,
            id: event.id,
        }))
    }

    /// [`SseParser::next_event`], but the usual event's data (one `data` line and a blank line
    /// read in one step) is handed out as bytes not checked to be UTF-8: a caller that reads
    /// those bytes for what it knows (as the Chat Completions decoder compares a chunk with the
    /// previous one's) checks only the bytes it turns into text. Every other value is checked
    /// here as in `next_event`.
    pub(crate) fn next_raw(&mut self) -> Result<Option<RawEvent<'_>>, SseError> {
        if self.dispatched {
            self.dispatched = false;
            self.data.clear();
            self.event.clear();
        }
        if !self.started {
            return Ok(None);
        }
        let chunk = &self.chunk;
        // The event's one data line so far, still in `chunk` (copied into `data` when another
        // data line follows or the chunk ends first).
        let mut single: Option<&str> = None;
        loop {
            if self.after_cr && self.at < chunk.len() {
                self.after_cr = false;
                if chunk[self.at] == b'\n' {
                    self.at += 1;
                }
            }
            let rest = &chunk[self.at..];
            if self.partial.is_empty()
                && single.is_none()
                && self.data.is_empty()
                && let Some((value, used)) = lone_data_line(rest, self.max_line, self.max_event)
            {
                // The usual event, `data: …` LF LF: read in one step, as the lines below would.
                self.at += used;
                self.dispatched = true;
                let event = event_type(&self.event);
                return Ok(Some(RawEvent {
                    event,
                    data: Data::Unchecked(value),
                    id: &self.id,
                }));
            }
            let Some(end) = memchr::memchr2(b'\n', b'\r', rest) else {
                if self.partial.len() + rest.len() > self.max_line {
                    return Err(SseError::LineTooLong {
                        limit: self.max_line,
                    });
                }
                if let Some(value) = single {
                    push_line(&mut self.data, value);
                }
                self.partial.extend_from_slice(rest);
                self.at = chunk.len();
                return Ok(None);
            };
            if self.partial.len() + end > self.max_line {
                return Err(SseError::LineTooLong {
                    limit: self.max_line,
                });
            }
            self.at += end + 1;
            if rest[end] == b'\r' {
                match rest.get(end + 1) {
                    Some(b'\n') => self.at += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            let kind = if self.partial.is_empty() {
                let kind = line_kind(&rest[..end], &mut self.event, &mut self.id)?;
                if let LineKind::Data(value) = kind {
                    let held = single.map_or(0, |value| value.len() + 1);
                    if self.data.len() + held + value.len() > self.max_event {
                        return Err(SseError::EventTooLarge {
                            limit: self.max_event,
                        });
                    }
                    if self.data.is_empty() && single.is_none() {
                        single = Some(value);
                        continue;
                    }
                    if let Some(held) = single.take() {
                        push_line(&mut self.data, held);
                    }
                    push_line(&mut self.data, value);
                    continue;
                }
                kind
            } else {
                // The end of a line begun in an earlier chunk (so no data line of this call is
                // held in `single`).
                self.partial.extend_from_slice(&rest[..end]);
                let kind = line_kind(&self.partial, &mut self.event, &mut self.id)?;
                if let LineKind::Data(value) = kind {
                    if self.data.len() + value.len() > self.max_event {
                        return Err(SseError::EventTooLarge {
                            limit: self.max_event,
                        });
                    }
                    push_line(&mut self.data, value);
                }
                let blank = matches!(kind, LineKind::Blank);
                self.partial.clear();
                if blank {
                    LineKind::Blank
                } else {
                    LineKind::Other
                }
            };
            if !matches!(kind, LineKind::Blank) {
                continue;
            }
            let data = match single {
                Some(value) => value,
                None if self.data.is_empty() => {
                    // No data line since the last blank line: nothing to dispatch.
                    self.event.clear();
                    continue;
                }
                None => {
                    // The data buffer's last LF is not part of the data.
                    self.data.pop();
                    self.data.as_str()
                }
            };
            self.dispatched = true;
            let event = event_type(&self.event);
            return Ok(Some(RawEvent {
                event,
                data: Data::Text(data),
                id: &self.id,
            }));
        }
    }
}

/// The value of the `data` line `rest` begins with when a blank line ends it at once (LF LF),
/// within the limits, and the bytes up to the end of the blank line; else `None` (then the
/// lines are read one by one).
fn lone_data_line(rest: &[u8], max_line: usize, max_event: usize) -> Option<(&[u8], usize)> {
    let value_at = if rest.starts_with(b"data: ") {
        6
    } else if rest.starts_with(b"data:") {
        5
    } else {
        return None;
    };
    let end = memchr::memchr2(b'\n', b'\r', rest)?;
    let within = end <= max_line && end - value_at <= max_event;
    (within && rest.get(end..end + 2) == Some(b"\n\n")).then(|| (&rest[value_at..end], end + 2))
}

/// `value` and the LF that joins it to the next data line, added to `data`.
fn push_line(data: &mut String, value: &str) {
    data.push_str(value);
    data.push('\n');
}

/// What a complete `line` (without its line end) is; an `event` or `id` field is applied here.
fn line_kind<'a>(
    line: &'a [u8],
    event: &mut String,
    id: &mut String,
) -> Result<LineKind<'a>, SseError> {
    let Some(&first) = line.first() else {
        return Ok(LineKind::Blank);
    };
    if first == b':' {
        return Ok(LineKind::Other);
    }
    let (name, value) = match memchr::memchr(b':', line) {
        Some(colon) => {
            let value = &line[colon + 1..];
            (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
        }
        None => (line, &line[line.len()..]),
    };
    match name {
        b"data" => {
            let value = std::str::from_utf8(value).map_err(|_| SseError::NotUtf8)?;
            return Ok(LineKind::Data(value));
        }
        b"event" => {
            let value = std::str::from_utf8(value).map_err(|_| SseError::NotUtf8)?;
            event.clear();
            event.push_str(value);
        }
        b"id" => {
            let value = std::str::from_utf8(value).map_err(|_| SseError::NotUtf8)?;
            if !value.contains('\0') {
                id.clear();
                id.push_str(value);
            }
        }
        // `retry` only concerns a client that reconnects; others are ignored.
        _ => {}
    }
    Ok(LineKind::Other)
}

/// An event's type: its `event:` field, or `message` without one (the SSE default).
fn event_type(event: &str) -> &str {
    if event.is_empty() { "message" } else { event }
}

#[cfg(test)]
mod oracle;

#[cfg(test)]
mod tests {
    use super::oracle::Copying;
    use super::*;

    /// What the parser dispatches for `body` fed in `chunks` pieces of `size` bytes (0: whole),
    /// as (event, data, id), or the first error.
    fn parse_in(body: &[u8], size: usize) -> Result<Vec<(String, String, String)>, SseError> {
        let mut parser = SseParser::default();
        parse_with(&mut parser, body, size)
    }

    fn parse_with(
        parser: &mut SseParser,
        body: &[u8],
        size: usize,
    ) -> Result<Vec<(String, String, String)>, SseError> {
        let chunks: Vec<&[u8]> = if size == 0 {
            vec![body]
        } else {
            body.chunks(size).collect()
        };
        let mut events = Vec::new();
        for chunk in chunks {
            parser.feed(Bytes::copy_from_slice(chunk));
            while let Some(event) = parser.next_event()? {
                events.push((
                    event.event.to_owned(),
                    event.data.to_owned(),
                    event.id.to_owned(),
                ));
            }
        }
        Ok(events)
    }

    /// The same events whole and in every chunk size from 1 to 7 bytes.
    fn parse(body: &[u8]) -> Result<Vec<(String, String, String)>, SseError> {
        let whole = parse_in(body, 0);
        for size in 1..=7 {
            assert_eq!(parse_in(body, size), whole, "chunks of {size} bytes");
        }
        whole
    }

    fn message(data: &str) -> (String, String, String) {
        (String::from("message"), data.to_owned(), String::new())
    }

    #[test]
    fn data_lines_are_joined_with_lf() {
        assert_eq!(
            parse(b"data: one\ndata: two\ndata:three\n\ndata: {}\n\n"),
            Ok(vec![message("one\ntwo\nthree"), message("{}")])
        );
    }

    #[test]
    fn cr_lf_crlf_and_mixed_line_ends() {
        let want = Ok(vec![message("a\nb"), message("c")]);
        assert_eq!(parse(b"data: a\ndata: b\n\ndata: c\n\n"), want);
        assert_eq!(parse(b"data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n"), want);
        assert_eq!(parse(b"data: a\rdata: b\r\rdata: c\r\r"), want);
        assert_eq!(parse(b"data: a\r\ndata: b\r\rdata: c\n\r\n"), want);
    }

    #[test]
    fn a_cr_at_the_end_of_a_chunk_and_an_lf_next_are_one_line_end() {
        let mut parser = SseParser::default();
        assert_eq!(parse_with(&mut parser, b"data: a\r", 0), Ok(vec![]));
        // Had the LF counted as a second line end, `a` would be dispatched here, alone.
        assert_eq!(parse_with(&mut parser, b"\ndata: b\r\n", 0), Ok(vec![]));
        assert_eq!(
            parse_with(&mut parser, b"\r\n", 0),
            Ok(vec![message("a\nb")])
        );
    }

    #[test]
    fn event_and_id_fields() {
        assert_eq!(
            parse(b"event: ping\nid: 7\ndata: {}\n\ndata: x\n\nid\ndata: y\n\n"),
            Ok(vec![
                ("ping".to_owned(), "{}".to_owned(), "7".to_owned()),
                // The type is per event; the id is kept until another `id` line (empty here).
                ("message".to_owned(), "x".to_owned(), "7".to_owned()),
                ("message".to_owned(), "y".to_owned(), String::new()),
            ])
        );
        // An id holding U+0000 is ignored.
        assert_eq!(
            parse(b"id: 1\n\nid: a\0b\ndata: z\n\n"),
            Ok(vec![("message".to_owned(), "z".to_owned(), "1".to_owned())])
        );
    }

    #[test]
    fn comments_and_unknown_fields_are_ignored() {
        assert_eq!(
            parse(b": keep-alive\n\n:\nretry: 100\nfoo: bar\ndata: x\n: between\n\n"),
            Ok(vec![message("x")])
        );
    }

    #[test]
    fn a_blank_line_without_data_dispatches_nothing_and_resets_the_type() {
        assert_eq!(parse(b"event: ping\n\ndata: x\n\n"), Ok(vec![message("x")]));
    }

    #[test]
    fn a_field_without_colon_has_an_empty_value() {
        // `data` alone is a data line with an empty value: the event's data is "" then "\n".
        assert_eq!(
            parse(b"data\n\ndata\ndata\n\nevent\ndata: x\n\n"),
            Ok(vec![message(""), message("\n"), message("x")])
        );
    }

    #[test]
    fn only_one_space_after_the_colon_is_dropped() {
        assert_eq!(
            parse(b"data:  two spaces\ndata:none\ndata: \n\n"),
            Ok(vec![message(" two spaces\nnone\n")])
        );
    }

    #[test]
    fn one_byte_order_mark_at_the_start_is_skipped() {
        assert_eq!(parse(b"\xEF\xBB\xBFdata: x\n\n"), Ok(vec![message("x")]));
        // Only at the start: a second mark is part of the first field's name (unknown).
        assert_eq!(
            parse(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n"),
            Ok(vec![message("y")])
        );
        // The start of a mark that is not one is data.
        assert_eq!(parse(b"\xEF\xBB"), Ok(vec![]));
        assert_eq!(parse(b""), Ok(vec![]));
    }

    #[test]
    fn an_unfinished_event_at_the_end_is_not_dispatched() {
        assert_eq!(parse(b"data: x\n\ndata: cut"), Ok(vec![message("x")]));
        assert_eq!(parse(b"data: x\n\ndata: y\n"), Ok(vec![message("x")]));
    }

    #[test]
    fn multibyte_text_survives_any_chunking() {
        assert_eq!(
            parse("data: héllo wörld ✓ 🎉\n\n".as_bytes()),
            Ok(vec![message("héllo wörld ✓ 🎉")])
        );
    }

    #[test]
    fn data_that_is_not_utf8_is_an_error() {
        assert_eq!(parse(b"data: \xFF\xFE\n\n"), Err(SseError::NotUtf8));
        // A comment is never decoded.
        assert_eq!(parse(b": \xFF\ndata: x\n\n"), Ok(vec![message("x")]));
    }

    #[test]
    fn a_line_over_the_limit_is_an_error_naming_it() {
        let mut parser = SseParser::with_limits(16, 1024);
        // Unfinished, already too long: no need to wait for its end.
        let long = [b'a'; 17];
        let err = parse_with(&mut parser, &long, 0);
        assert_eq!(err, Err(SseError::LineTooLong { limit: 16 }));
        assert_eq!(
            SseError::LineTooLong { limit: 16 }.to_string(),
            "an SSE line is longer than the limit of 16 bytes"
        );
        // Complete and too long.
        let mut parser = SseParser::with_limits(16, 1024);
        assert_eq!(
            parse_with(&mut parser, b"data: 0123456789abc\n\n", 0),
            Err(SseError::LineTooLong { limit: 16 })
        );
        // At the limit is fine.
        let mut parser = SseParser::with_limits(16, 1024);
        assert_eq!(
            parse_with(&mut parser, b"data: 0123456789\n\n", 0),
            Ok(vec![message("0123456789")])
        );
    }

    #[test]
    fn an_event_over_the_limit_is_an_error_naming_it() {
        let mut parser = SseParser::with_limits(64, 10);
        assert_eq!(
            parse_with(&mut parser, b"data: 123456\ndata: 6789\n\n", 1),
            Err(SseError::EventTooLarge { limit: 10 })
        );
        assert_eq!(
            SseError::EventTooLarge { limit: 10 }.to_string(),
            "an SSE event's data is larger than the limit of 10 bytes"
        );
        // At the limit is fine (the joining LFs count), and each event counts on its own.
        let mut parser = SseParser::with_limits(64, 10);
        assert_eq!(
            parse_with(
                &mut parser,
                b"data: 12345\ndata: 6789\n\ndata: 0123456789\n\n",
                1
            ),
            Ok(vec![message("12345\n6789"), message("0123456789")])
        );
    }

    type Events = Result<Vec<(String, String, String)>, SseError>;

    /// What the in-place parser and the copying one (the oracle) dispatch for `body` cut at
    /// `cuts` (increasing positions), with these limits.
    fn both(body: &[u8], cuts: &[usize], max_line: usize, max_event: usize) -> (Events, Events) {
        let mut pieces = Vec::new();
        let mut from = 0;
        for &cut in cuts.iter().chain([body.len()].iter()) {
            pieces.push(&body[from..cut]);
            from = cut;
        }
        let mut parser = SseParser::with_limits(max_line, max_event);
        let mut copying = Copying::with_limits(max_line, max_event);
        let new = (|| {
            let mut events = Vec::new();
            for piece in &pieces {
                parser.feed(Bytes::copy_from_slice(piece));
                while let Some(event) = parser.next_event()? {
                    events.push(owned(event));
                }
            }
            Ok(events)
        })();
        let old = (|| {
            let mut events = Vec::new();
            for piece in &pieces {
                copying.feed(piece);
                while let Some(event) = copying.next_event()? {
                    events.push(owned(event));
                }
            }
            Ok(events)
        })();
        (new, old)
    }

    fn owned(event: SseEvent<'_>) -> (String, String, String) {
        (
            event.event.to_owned(),
            event.data.to_owned(),
            event.id.to_owned(),
        )
    }

    /// Bodies with every case the parser distinguishes: line ends of each kind (a CR LF and a
    /// CR at the end of a body), multi-byte UTF-8, the byte order mark (whole, doubled, a
    /// prefix), comments, fields without a colon, several data lines, ids, a value that is not
    /// UTF-8, and a line and an event as long as the small limits below.
    const BODIES: [&[u8]; 12] = [
        b"data: one\ndata: two\ndata:three\n\ndata: {}\n\n",
        b"data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n",
        b"data: a\rdata: b\r\rdata: c\r\r",
        b"data: a\r\ndata: b\r\rdata: c\n\r\ndata: d\r",
        "data: h\u{e9}llo w\u{f6}rld \u{2713} \u{1f389}\r\n\r\ndata: \u{1f389}\n\n".as_bytes(),
        b"\xEF\xBB\xBFdata: x\n\ndata: y\n\n",
        b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n",
        b"\xEF\xBBdata: x\n\n",
        b"event: ping\nid: 7\ndata: {}\n\n: c\n\nid\ndata\ndata\n\nevent\nretry: 1\ndata: z\n\n",
        b"data: x\n\ndata: \xFF\xFE\n\n",
        b"data: 0123456789\n\ndata: 0123456789a\n\n",
        b"data: 12345\ndata: 6789\n\ndata: 12345\ndata: 67890\n\n",
    ];

    /// Every body cut at every position, and at every pair of positions, reads as the copying
    /// parser read it: the same events, or the same error at the same point.
    #[test]
    fn every_cut_reads_as_the_copying_parser_did() {
        for body in BODIES {
            for (max_line, max_event) in [(MAX_LINE_BYTES, MAX_EVENT_BYTES), (16, 10)] {
                let (new, old) = both(body, &[], max_line, max_event);
                assert_eq!(new, old, "{body:?} whole");
                for i in 0..=body.len() {
                    let (new, old) = both(body, &[i], max_line, max_event);
                    assert_eq!(new, old, "{body:?} cut at {i}");
                    for j in i..=body.len() {
                        let (new, old) = both(body, &[i, j], max_line, max_event);
                        assert_eq!(new, old, "{body:?} cut at {i} and {j}");
                    }
                }
            }
        }
    }

    /// Bodies made of the pieces that matter to the parser, in many chunkings (a fixed
    /// pseudo-random sequence, so every run checks the same cases), read as the copying parser
    /// read them.
    #[test]
    fn made_up_bodies_read_as_the_copying_parser_did() {
        const PIECES: [&[u8]; 16] = [
            b"data",
            b"event",
            b"id",
            b":",
            b" ",
            b"x",
            b"\n",
            b"\r",
            b"\r\n",
            b"\n\n",
            "\u{e9}".as_bytes(),
            "\u{1f389}".as_bytes(),
            b"\xEF\xBB\xBF",
            b"\xFF",
            b"\0",
            b"data: {\"a\":1}\n\n",
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |below: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % below as u64).unwrap_or(0)
        };
        for _ in 0..3_000 {
            let mut body = Vec::new();
            for _ in 0..next(24) {
                body.extend_from_slice(PIECES[next(PIECES.len())]);
            }
            let mut cuts: Vec<usize> = (0..next(6)).map(|_| next(body.len() + 1)).collect();
            cuts.sort_unstable();
            let (max_line, max_event) = [(MAX_LINE_BYTES, MAX_EVENT_BYTES), (12, 8)][next(2)];
            let (new, old) = both(&body, &cuts, max_line, max_event);
            assert_eq!(new, old, "{body:?} cut at {cuts:?}");
        }
    }

    /// `next_raw` hands out the usual event's data (one line and a blank line in one chunk)
    /// unchecked, and checks every other value as `next_event` does: bytes that are not UTF-8
    /// there are the same error once checked.
    #[test]
    fn the_usual_event_is_handed_out_unchecked_and_the_rest_checked() {
        let mut parser = SseParser::default();
        parser.feed(Bytes::from_static(b"data: \xFF{}\n\ndata: ok\n\n"));
        let first = parser.next_raw().map(|event| event.map(|event| event.data));
        assert_eq!(first, Ok(Some(Data::Unchecked(b"\xFF{}"))));
        assert_eq!(Data::Unchecked(b"\xFF{}").checked(), Err(SseError::NotUtf8));
        assert_eq!(Data::Unchecked("\u{e9}".as_bytes()).checked(), Ok("\u{e9}"));
        let second = parser.next_raw().map(|event| event.map(|event| event.data));
        assert_eq!(second, Ok(Some(Data::Unchecked(b"ok"))));
        // Cut by a chunk's end, two data lines, CR LF: checked by the parser.
        for (pieces, data) in [
            (&[&b"data: a\xC3"[..], b"\xA9\n\n"][..], "a\u{e9}"),
            (&[&b"data: a\ndata: b\n\n"[..]][..], "a\nb"),
            (&[&b"data: a\r\n\r\n"[..]][..], "a"),
        ] {
            let mut parser = SseParser::default();
            let mut got = Vec::new();
            for piece in pieces {
                parser.feed(Bytes::copy_from_slice(piece));
                while let Ok(Some(event)) = parser.next_raw() {
                    got.push(event.data.checked().map(str::to_owned));
                    assert!(matches!(event.data, Data::Text(_)), "{pieces:?}");
                }
            }
            assert_eq!(got, vec![Ok(data.to_owned())], "{pieces:?}");
        }
        for body in [
            &b"data: a\ndata: \xFF\n\n"[..],
            b"data: \xFF\r\n\r\n",
            b"event: \xFF\n",
        ] {
            let mut parser = SseParser::default();
            parser.feed(Bytes::copy_from_slice(body));
            assert_eq!(parser.next_raw(), Err(SseError::NotUtf8), "{body:?}");
        }
    }

    /// An event whose one data line and blank line arrive in one chunk is handed out from that
    /// chunk, not copied; one whose blank line comes in the next chunk is copied and still
    /// whole.
    #[test]
    fn an_event_within_one_chunk_is_read_in_place() -> Result<(), SseError> {
        let mut parser = SseParser::default();
        let chunk = Bytes::from_static(b"data: in place\n\ndata: held");
        let range = chunk.as_ptr_range();
        parser.feed(chunk);
        let event = parser
            .next_event()?
            .map(|event| (event.data, event.data.as_ptr()));
        assert_eq!(event.map(|(data, _)| data), Some("in place"));
        assert!(event.is_some_and(|(_, at)| range.contains(&at)));
        assert_eq!(parser.next_event()?.map(owned), None);
        parser.feed(Bytes::from_static(b" on\n"));
        assert_eq!(parser.next_event()?.map(owned), None);
        parser.feed(Bytes::from_static(b"\n"));
        assert_eq!(
            parser.next_event()?.map(|event| event.data.to_owned()),
            Some("held on".to_owned())
        );
        Ok(())
    }

    /// A chunk fed before the previous one was read to its end is read after it.
    #[test]
    fn a_chunk_fed_early_is_read_after_the_rest_of_the_previous_one() -> Result<(), SseError> {
        let mut parser = SseParser::default();
        parser.feed(Bytes::from_static(b"data: a\n\ndata: b"));
        assert_eq!(parser.next_event()?.map(owned), Some(message("a")));
        parser.feed(Bytes::from_static(b"c\n\ndata: d\n\n"));
        assert_eq!(parser.next_event()?.map(owned), Some(message("bc")));
        assert_eq!(parser.next_event()?.map(owned), Some(message("d")));
        assert_eq!(parser.next_event()?.map(owned), None);
        Ok(())
    }
}
