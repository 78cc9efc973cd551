//! The HTTP/1.1 wire format of the in-task client (`h1_client`), without I/O: the request head
//! it writes, the response head it reads (parsed by `httparse`, the parser hyper uses), and the
//! response body's framing, decoded in place in the connection's read buffer.
//!
//! A body is framed by `Content-Length`, by the chunked transfer coding, or by the end of the
//! connection (RFC 9112 §6.3, as hyper's client reads it). A chunked body is decoded over the
//! bytes one read brought: the chunk-size lines and CRLFs are stepped over where they lie, and
//! the data of the read's chunks is handed out as one `Bytes` of the read buffer (the first
//! chunk's data is not moved; a later one's is moved up against it), so a read costs one
//! `Bytes`, not one per chunk (hyper's decoder takes every byte of a chunk-size line and CRLF
//! through a `Bytes` of its own).
//!
//! The grammar and limits are hyper 1.x's (its `proto::h1::decode`): a chunk size of hex digits
//! (at least one; overflowing 64 bits is an error), then spaces or tabs, then an extension
//! (`;…`, at most 16 KiB over the body, no bare LF) before the CR LF; data then CR LF; after the
//! last chunk, trailer lines (at most 100 and 16 KiB, parsed as header fields, then ignored)
//! and CR LF. Anything else, and a connection that closes before the body's end, is an error.
//! The tests compare the decoder with hyper's over many bodies cut at many points.

use std::fmt;

use bytes::{Buf, Bytes, BytesMut};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use reqwest::header::{CONNECTION, CONTENT_LENGTH, HeaderName, HeaderValue, TRANSFER_ENCODING};

/// The most header fields a response head (or a body's trailers) may have (hyper's default).
pub(crate) const MAX_HEADERS: usize = 100;

/// The largest response head accepted, in bytes (hyper's default read buffer limit).
pub(crate) const MAX_HEAD_BYTES: usize = 8192 + 4096 * 100;

/// The most chunk-extension bytes a body may carry, all chunks together (hyper's limit).
const MAX_EXTENSION_BYTES: u64 = 16 * 1024;

/// The most trailer bytes a body may carry (hyper's limit).
const MAX_TRAILER_BYTES: usize = 16 * 1024;

/// What is wrong with an answer on the wire. The texts name the fault, never a header's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WireError {
    /// The response head is not HTTP/1.x (httparse's reason).
    Head(httparse::Error),
    /// The response head is larger than [`MAX_HEAD_BYTES`].
    HeadTooLarge,
    /// A header field's name or value is not one `http` accepts.
    InvalidHeader,
    /// A `101 Switching Protocols` to a request that asked for no upgrade.
    UnexpectedUpgrade,
    /// `Transfer-Encoding` in an HTTP/1.0 answer.
    TransferEncodingInHttp10,
    /// `Content-Length` values that are not one number.
    InvalidContentLength,
    /// A chunk-size line that is not hex digits, whitespace, an extension and CR LF.
    InvalidChunkSize,
    /// A chunk size beyond 64 bits.
    ChunkSizeOverflow,
    /// Chunk extensions beyond [`MAX_EXTENSION_BYTES`].
    ExtensionsTooLarge,
    /// A chunk extension holding a bare LF.
    InvalidExtension,
    /// Chunk data not followed by CR LF.
    InvalidChunkEnd,
    /// Trailers beyond [`MAX_TRAILER_BYTES`] or [`MAX_HEADERS`] lines.
    TrailersTooLarge,
    /// Trailers that are not header fields, or a trailer line not ended by CR LF.
    InvalidTrailers,
    /// The connection closed before the response head was complete.
    ClosedBeforeHead,
    /// The connection closed before the body was complete.
    ClosedBeforeEnd,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            WireError::Head(reason) => return write!(f, "invalid response head: {reason}"),
            WireError::HeadTooLarge => "the response head is too large",
            WireError::InvalidHeader => "invalid header field in the response",
            WireError::UnexpectedUpgrade => "unexpected 101 Switching Protocols",
            WireError::TransferEncodingInHttp10 => "Transfer-Encoding in an HTTP/1.0 response",
            WireError::InvalidContentLength => "invalid Content-Length",
            WireError::InvalidChunkSize => "invalid chunk size line",
            WireError::ChunkSizeOverflow => "invalid chunk size: overflow",
            WireError::ExtensionsTooLarge => "chunk extensions over the limit",
            WireError::InvalidExtension => "invalid chunk extension",
            WireError::InvalidChunkEnd => "chunk data not followed by CR LF",
            WireError::TrailersTooLarge => "chunk trailers over the limit",
            WireError::InvalidTrailers => "invalid chunk trailers",
            WireError::ClosedBeforeHead => "the connection closed before the response head",
            WireError::ClosedBeforeEnd => "the connection closed before the end of the body",
        };
        f.write_str(text)
    }
}

impl std::error::Error for WireError {}

/// The head of a `POST` of `body_len` bytes to `target` (path and query), with `Host` and
/// `headers`, ready to be written before the body.
pub(crate) fn request_head(
    target: &str,
    host: &HeaderValue,
    headers: &HeaderMap,
    body_len: usize,
) -> Vec<u8> {
    let fields: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    let mut head = Vec::with_capacity(target.len() + host.len() + fields + 64);
    head.extend_from_slice(b"POST ");
    head.extend_from_slice(target.as_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    head.extend_from_slice(host.as_bytes());
    head.extend_from_slice(b"\r\n");
    for (name, value) in headers {
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"content-length: ");
    head.extend_from_slice(body_len.to_string().as_bytes());
    head.extend_from_slice(b"\r\n\r\n");
    head
}

/// A final (not 1xx) response head.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    /// How the body ends.
    pub(crate) body: Body,
    /// The connection may carry another request once the body is read (HTTP/1.1 without
    /// `Connection: close`, HTTP/1.0 with `Connection: keep-alive`; never when the body ends
    /// with the connection).
    pub(crate) keep_alive: bool,
}

/// Reads the response head at the start of `buf`, skipping informational (1xx) heads: the
/// final head, with the bytes it took removed from `buf`, or `None` while it is incomplete.
pub(crate) fn read_head(buf: &mut BytesMut) -> Result<Option<Head>, WireError> {
    loop {
        let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut fields);
        let used = match response.parse(buf) {
            Ok(httparse::Status::Complete(used)) => used,
            Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD_BYTES => {
                return Err(WireError::HeadTooLarge);
            }
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => return Err(WireError::HeadTooLarge),
            Err(reason) => return Err(WireError::Head(reason)),
        };
        if used > MAX_HEAD_BYTES {
            return Err(WireError::HeadTooLarge);
        }
        let code = response.code.unwrap_or(0);
        if code == 101 {
            return Err(WireError::UnexpectedUpgrade);
        }
        if (100..200).contains(&code) {
            buf.advance(used);
            continue;
        }
        let status =
            StatusCode::from_u16(code).map_err(|_| WireError::Head(httparse::Error::Status))?;
        let http10 = response.version == Some(0);
        let mut headers = HeaderMap::with_capacity(response.headers.len());
        for field in response.headers.iter() {
            let name = HeaderName::from_bytes(field.name.as_bytes())
                .map_err(|_| WireError::InvalidHeader)?;
            let value =
                HeaderValue::from_bytes(field.value).map_err(|_| WireError::InvalidHeader)?;
            headers.append(name, value);
        }
        buf.advance(used);
        let body = body_of(status, http10, &headers)?;
        let keep_alive = !matches!(body, Body::Close) && keeps_alive(http10, &headers);
        return Ok(Some(Head {
            status,
            headers,
            body,
            keep_alive,
        }));
    }
}

/// How the body of a final answer to a `POST` ends (RFC 9112 §6.3).
fn body_of(status: StatusCode, http10: bool, headers: &HeaderMap) -> Result<Body, WireError> {
    if status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
        return Ok(Body::length(0));
    }
    if headers.contains_key(TRANSFER_ENCODING) {
        if http10 {
            return Err(WireError::TransferEncodingInHttp10);
        }
        // Chunked when it is the last coding; else the body runs to the connection's end.
        let last = headers.get_all(TRANSFER_ENCODING).iter().next_back();
        let chunked = last
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.rsplit(',').next())
            .is_some_and(|coding| coding.trim().eq_ignore_ascii_case("chunked"));
        return Ok(if chunked {
            Body::chunked()
        } else {
            Body::Close
        });
    }
    let mut length: Option<u64> = None;
    for value in &headers.get_all(CONTENT_LENGTH) {
        let text = value
            .to_str()
            .map_err(|_| WireError::InvalidContentLength)?;
        for part in text.split(',') {
            let part = part.trim();
            let valid = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
            let number = part
                .parse::<u64>()
                .ok()
                .filter(|_| valid)
                .ok_or(WireError::InvalidContentLength)?;
            if length.is_some_and(|seen| seen != number) {
                return Err(WireError::InvalidContentLength);
            }
            length = Some(number);
        }
    }
    Ok(length.map_or(Body::Close, Body::length))
}

/// Whether the server lets the connection live after this answer.
fn keeps_alive(http10: bool, headers: &HeaderMap) -> bool {
    let has = |token: &str| {
        headers.get_all(CONNECTION).iter().any(|value| {
            value.to_str().is_ok_and(|value| {
                value
                    .split(',')
                    .any(|part| part.trim().eq_ignore_ascii_case(token))
            })
        })
    };
    if http10 {
        has("keep-alive")
    } else {
        !has("close")
    }
}

/// Where a chunked body's decoding stands between reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// The first hex digit of a chunk size.
    Start,
    /// More hex digits, or what ends the size.
    Size,
    /// Whitespace after the size.
    SizeLws,
    /// A chunk extension, up to CR.
    Extension,
    /// The LF of a chunk-size line.
    SizeLf,
    /// Chunk data (`remaining` bytes).
    Data,
    /// The CR after chunk data.
    DataCr,
    /// The LF after chunk data.
    DataLf,
    /// After the last chunk or a trailer line: CR (the end) or a trailer line.
    EndCr,
    /// A trailer line, up to CR.
    Trailer,
    /// The LF of a trailer line.
    TrailerLf,
    /// The LF of the final CR LF.
    EndLf,
    /// The body is complete.
    End,
}

/// A response body being read: how it ends, and where it stands.
#[derive(Debug)]
pub(crate) enum Body {
    /// `Content-Length`: this many bytes are still to come.
    Length(u64),
    Chunked(Box<Chunked>),
    /// Up to the connection's end.
    Close,
    /// A close-delimited body whose connection ended.
    Closed,
}

/// The state of a chunked body between reads.
#[derive(Debug)]
pub(crate) struct Chunked {
    step: Step,
    /// The chunk size being read, then the bytes of the chunk still to come.
    remaining: u64,
    extensions: u64,
    /// The trailer lines so far (with their CR LFs), if any.
    trailers: Vec<u8>,
    trailer_lines: usize,
}

impl Body {
    fn length(length: u64) -> Body {
        Body::Length(length)
    }

    fn chunked() -> Body {
        Body::Chunked(Box::new(Chunked {
            step: Step::Start,
            remaining: 0,
            extensions: 0,
            trailers: Vec::new(),
            trailer_lines: 0,
        }))
    }

    /// Whether the whole body was read.
    pub(crate) fn is_done(&self) -> bool {
        match self {
            Body::Length(remaining) => *remaining == 0,
            Body::Chunked(chunked) => chunked.step == Step::End,
            Body::Close => false,
            Body::Closed => true,
        }
    }

    /// Decodes the body bytes at the start of `buf` (as read from the connection): the data
    /// among them (empty when they were all framing), removed from `buf` with their framing.
    /// Bytes past the body's end stay in `buf`.
    pub(crate) fn decode(&mut self, buf: &mut BytesMut) -> Result<Bytes, WireError> {
        match self {
            Body::Length(remaining) => {
                let take = usize::try_from(*remaining).map_or(buf.len(), |n| n.min(buf.len()));
                *remaining -= take as u64;
                Ok(buf.split_to(take).freeze())
            }
            Body::Chunked(chunked) => chunked.decode(buf),
            Body::Close => Ok(buf.split().freeze()),
            Body::Closed => Ok(Bytes::new()),
        }
    }

    /// The connection reached its end (the server closed it): the end of a close-delimited
    /// body, an error for any other body not read to its end.
    pub(crate) fn closed(&mut self) -> Result<(), WireError> {
        match self {
            Body::Close | Body::Closed => {
                *self = Body::Closed;
                Ok(())
            }
            _ if self.is_done() => Ok(()),
            _ => Err(WireError::ClosedBeforeEnd),
        }
    }
}

/// The value of a hex digit.
fn hex(byte: u8) -> Option<u64> {
    match byte {
        b'0'..=b'9' => Some(u64::from(byte - b'0')),
        b'a'..=b'f' => Some(u64::from(byte - b'a' + 10)),
        b'A'..=b'F' => Some(u64::from(byte - b'A' + 10)),
        _ => None,
    }
}

impl Chunked {
    /// See [`Body::decode`]. The data of the chunks in `buf` is gathered at the place of the
    /// first one's (the later ones moved up against it) and split off as one `Bytes`.
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Bytes, WireError> {
        // The gathered data is `buf[start..end]`; `at` is the next byte to decode.
        let mut start = None::<usize>;
        let mut end = 0;
        let mut at = 0;
        while at < buf.len() && self.step != Step::End {
            if self.step == Step::Data {
                let available = buf.len() - at;
                let take = usize::try_from(self.remaining).map_or(available, |n| n.min(available));
                match start {
                    None => {
                        start = Some(at);
                        end = at + take;
                    }
                    Some(_) => {
                        buf.copy_within(at..at + take, end);
                        end += take;
                    }
                }
                at += take;
                self.remaining -= take as u64;
                if self.remaining == 0 {
                    self.step = Step::DataCr;
                }
                continue;
            }
            let byte = buf[at];
            at += 1;
            self.step = self.framing(byte)?;
        }
        let mut taken = buf.split_to(at);
        let Some(start) = start else {
            return Ok(Bytes::new());
        };
        taken.truncate(end);
        taken.advance(start);
        Ok(taken.freeze())
    }

    /// The step after framing byte `byte` (any step but `Data` and `End`).
    fn framing(&mut self, byte: u8) -> Result<Step, WireError> {
        Ok(match self.step {
            Step::Start => {
                let digit = hex(byte).ok_or(WireError::InvalidChunkSize)?;
                self.remaining = digit;
                Step::Size
            }
            Step::Size => match (hex(byte), byte) {
                (Some(digit), _) => {
                    self.remaining = self
                        .remaining
                        .checked_mul(16)
                        .and_then(|size| size.checked_add(digit))
                        .ok_or(WireError::ChunkSizeOverflow)?;
                    Step::Size
                }
                (None, b'\t' | b' ') => Step::SizeLws,
                (None, b';') => Step::Extension,
                (None, b'\r') => Step::SizeLf,
                (None, _) => return Err(WireError::InvalidChunkSize),
            },
            Step::SizeLws => match byte {
                b'\t' | b' ' => Step::SizeLws,
                b';' => Step::Extension,
                b'\r' => Step::SizeLf,
                _ => return Err(WireError::InvalidChunkSize),
            },
            Step::Extension => match byte {
                b'\r' => Step::SizeLf,
                b'\n' => return Err(WireError::InvalidExtension),
                _ => {
                    self.extensions += 1;
                    if self.extensions >= MAX_EXTENSION_BYTES {
                        return Err(WireError::ExtensionsTooLarge);
                    }
                    Step::Extension
                }
            },
            Step::SizeLf => match byte {
                b'\n' if self.remaining == 0 => Step::EndCr,
                b'\n' => Step::Data,
                _ => return Err(WireError::InvalidChunkSize),
            },
            Step::DataCr => match byte {
                b'\r' => Step::DataLf,
                _ => return Err(WireError::InvalidChunkEnd),
            },
            Step::DataLf => match byte {
                b'\n' => Step::Start,
                _ => return Err(WireError::InvalidChunkEnd),
            },
            Step::EndCr => {
                self.trailer_byte(byte)?;
                if byte == b'\r' {
                    Step::EndLf
                } else {
                    Step::Trailer
                }
            }
            Step::Trailer => {
                self.trailer_byte(byte)?;
                if byte == b'\r' {
                    Step::TrailerLf
                } else {
                    Step::Trailer
                }
            }
            Step::TrailerLf => {
                if byte != b'\n' {
                    return Err(WireError::InvalidTrailers);
                }
                if self.trailer_lines >= MAX_HEADERS {
                    return Err(WireError::TrailersTooLarge);
                }
                self.trailer_lines += 1;
                self.trailer_byte(byte)?;
                Step::EndCr
            }
            Step::EndLf => {
                if byte != b'\n' {
                    return Err(WireError::InvalidChunkEnd);
                }
                self.trailer_byte(byte)?;
                self.check_trailers()?;
                Step::End
            }
            Step::Data | Step::End => self.step,
        })
    }

    /// Keeps a byte of the trailer section (once a trailer line began), within the limit.
    fn trailer_byte(&mut self, byte: u8) -> Result<(), WireError> {
        if self.trailers.is_empty() && self.step == Step::EndCr && byte == b'\r' {
            // The final CR LF of a body without trailers.
            return Ok(());
        }
        if self.trailers.is_empty() && self.step == Step::EndLf {
            return Ok(());
        }
        self.trailers.push(byte);
        if self.trailers.len() >= MAX_TRAILER_BYTES {
            return Err(WireError::TrailersTooLarge);
        }
        Ok(())
    }

    /// The trailers must be header fields (as hyper requires); their values are not used.
    fn check_trailers(&self) -> Result<(), WireError> {
        if self.trailers.is_empty() {
            return Ok(());
        }
        let mut fields = vec![httparse::EMPTY_HEADER; self.trailer_lines];
        match httparse::parse_headers(&self.trailers, &mut fields) {
            Ok(httparse::Status::Complete((_, fields))) => {
                for field in fields.iter() {
                    HeaderName::from_bytes(field.name.as_bytes())
                        .map_err(|_| WireError::InvalidTrailers)?;
                    HeaderValue::from_bytes(field.value).map_err(|_| WireError::InvalidTrailers)?;
                }
                Ok(())
            }
            _ => Err(WireError::InvalidTrailers),
        }
    }
}

/// An answer arriving in `pieces` (one socket read each; an empty one brings nothing), then the
/// connection's end, read as the client reads it: the status and the body's data, or the first
/// error; and whether the connection could then take another request. (For the tests and the
/// fuzz target.)
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn read_answer(pieces: &[&[u8]]) -> (Result<(u16, Vec<u8>), WireError>, bool) {
    let mut buf = BytesMut::new();
    let mut head: Option<Head> = None;
    let mut data = Vec::new();
    let mut read = || {
        for piece in pieces {
            buf.extend_from_slice(piece);
            if head.is_none() {
                head = read_head(&mut buf)?;
            }
            if let Some(head) = &mut head
                && !head.body.is_done()
            {
                data.extend_from_slice(&head.body.decode(&mut buf)?);
            }
        }
        let head = head.as_mut().ok_or(WireError::ClosedBeforeHead)?;
        let reusable = head.keep_alive && head.body.is_done() && buf.is_empty();
        head.body.closed()?;
        Ok((head.status.as_u16(), reusable))
    };
    match read() {
        Ok((status, reusable)) => (Ok((status, data)), reusable),
        Err(err) => (Err(err), false),
    }
}

#[cfg(test)]
mod tests;
