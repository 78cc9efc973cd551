//! The tests' oracle: the parser as it was before it read lines in place (every chunk copied
//! into one buffer, every data line into the event's data), kept verbatim so that the in-place
//! parser can be compared with it on any input in any chunking.

use super::{BOM, MAX_EVENT_BYTES, MAX_LINE_BYTES, SseError, SseEvent};

/// The parser before it read lines in place: every chunk copied into one buffer.
#[derive(Debug)]
pub(super) struct Copying {
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

impl Default for Copying {
    fn default() -> Self {
        Copying::with_limits(MAX_LINE_BYTES, MAX_EVENT_BYTES)
    }
}

impl Copying {
    /// A parser with other limits than the defaults (tests).
    pub(super) fn with_limits(max_line: usize, max_event: usize) -> Copying {
        Copying {
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
    pub(super) fn feed(&mut self, chunk: &[u8]) {
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
    pub(super) fn next_event(&mut self) -> Result<Option<SseEvent<'_>>, SseError> {
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
