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

use std::fmt;

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

/// One dispatched event, borrowed from the parser until the next call.
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
#[derive(Debug)]
pub(crate) struct SseParser {
    /// Received bytes from `start` on are not parsed yet (at most a partial line once
    /// `next_event` returned `None`).
    buffer: Vec<u8>,
    start: usize,
    /// Past the start of the stream, where a byte order mark may be.
    started: bool,
    /// The last line ended in a CR that was the last byte received: an LF next belongs to it.
    after_cr: bool,
    /// The data lines of the event being read, each followed by LF.
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

impl SseParser {
    /// A parser with other limits than the defaults (tests).
    pub(crate) fn with_limits(max_line: usize, max_event: usize) -> SseParser {
        SseParser {
            buffer: Vec::new(),
            start: 0,
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

    /// Adds the next chunk of the body.
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        if self.start == self.buffer.len() {
            self.buffer.clear();
            self.start = 0;
        } else if self.start > 0 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        self.buffer.extend_from_slice(chunk);
    }

    /// The next complete event in what was fed, or `None` until more is fed. After an error
    /// the stream cannot be read further.
    pub(crate) fn next_event(&mut self) -> Result<Option<SseEvent<'_>>, SseError> {
        if self.dispatched {
            self.dispatched = false;
            self.data.clear();
            self.event.clear();
        }
        if !self.started {
            let head = &self.buffer[self.start..];
            if head.len() < BOM.len() && BOM.starts_with(head) {
                // Maybe the start of a mark: wait for more (an empty body ends here too).
                return Ok(None);
            }
            if head.starts_with(BOM) {
                self.start += BOM.len();
            }
            self.started = true;
        }
        loop {
            if self.after_cr && self.start < self.buffer.len() {
                self.after_cr = false;
                if self.buffer[self.start] == b'\n' {
                    self.start += 1;
                }
            }
            let rest = &self.buffer[self.start..];
            let Some(end) = memchr::memchr2(b'\n', b'\r', rest) else {
                if rest.len() > self.max_line {
                    return Err(SseError::LineTooLong {
                        limit: self.max_line,
                    });
                }
                return Ok(None);
            };
            if end > self.max_line {
                return Err(SseError::LineTooLong {
                    limit: self.max_line,
                });
            }
            let line_start = self.start;
            self.start += end + 1;
            if rest[end] == b'\r' {
                match rest.get(end + 1) {
                    Some(b'\n') => self.start += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            let line = &self.buffer[line_start..line_start + end];
            if line.is_empty() {
                if self.data.is_empty() {
                    self.event.clear();
                    continue;
                }
                // The data buffer's last LF is not part of the data.
                self.data.pop();
                self.dispatched = true;
                let event = if self.event.is_empty() {
                    "message"
                } else {
                    self.event.as_str()
                };
                return Ok(Some(SseEvent {
                    event,
                    data: &self.data,
                    id: &self.id,
                }));
            }
            if line[0] == b':' {
                continue;
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
                    if self.data.len() + value.len() > self.max_event {
                        return Err(SseError::EventTooLarge {
                            limit: self.max_event,
                        });
                    }
                    self.data.push_str(value);
                    self.data.push('\n');
                }
                b"event" => {
                    let value = std::str::from_utf8(value).map_err(|_| SseError::NotUtf8)?;
                    self.event.clear();
                    self.event.push_str(value);
                }
                b"id" => {
                    let value = std::str::from_utf8(value).map_err(|_| SseError::NotUtf8)?;
                    if !value.contains('\0') {
                        self.id.clear();
                        self.id.push_str(value);
                    }
                }
                // `retry` only concerns a client that reconnects; others are ignored.
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
            parser.feed(chunk);
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
}
