//! The decoder against hyper's client as the oracle: the same answers (heads and bodies, well
//! formed and broken) cut into pieces, read by both; the same status and data, or an error from
//! both.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use hyper::body::Body as _;
use hyper::rt::{Read, ReadBufCursor, Write};

use super::*;

/// What reading an answer gave: the status and the body's data, or an error.
type Outcome = Result<(u16, Vec<u8>), ()>;

/// An answer's bytes served in pieces, one per read once the request was written, then the
/// connection's end; what is written to it is dropped.
struct Pieces {
    pieces: VecDeque<Vec<u8>>,
    /// Whether the request was written; until then a read waits (with this waker).
    asked: bool,
    reader: Option<Waker>,
}

impl Read for Pieces {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.asked {
            this.reader = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let pieces = &mut this.pieces;
        if let Some(mut piece) = pieces.pop_front() {
            let fits = piece.len().min(buf.remaining());
            buf.put_slice(&piece[..fits]);
            if fits < piece.len() {
                pieces.push_front(piece.split_off(fits));
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl Write for Pieces {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.asked = true;
        if let Some(reader) = this.reader.take() {
            reader.wake();
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// `answer` cut at `cuts` (increasing positions within it), without empty pieces (a socket
/// read gives none but at the connection's end).
fn cut(answer: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut pieces = Vec::new();
    let mut from = 0;
    for &at in cuts.iter().chain([answer.len()].iter()) {
        if at > from {
            pieces.push(answer[from..at].to_vec());
        }
        from = at;
    }
    pieces
}

/// How hyper's HTTP/1.1 client reads `pieces` as the answer to a `POST`.
async fn hyper_reads(pieces: Vec<Vec<u8>>) -> Outcome {
    let io = Pieces {
        pieces: pieces.into(),
        asked: false,
        reader: None,
    };
    let (mut sender, conn) = hyper::client::conn::http1::handshake::<_, String>(io)
        .await
        .map_err(|_| ())?;
    let conn = tokio::spawn(conn);
    let request = hyper::Request::post("/")
        .body(String::new())
        .map_err(|_| ())?;
    let sent = sender.send_request(request).await;
    let outcome = async {
        let response = sent.map_err(|_| ())?;
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let mut data = Vec::new();
        while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
        {
            if let Ok(chunk) = frame.map_err(|_| ())?.into_data() {
                data.extend_from_slice(&chunk);
            }
        }
        Ok((status, data))
    }
    .await;
    conn.abort();
    outcome
}

/// How [`read_answer`] reads `pieces`; also whether the connection could take another
/// request after it.
fn we_read(pieces: &[Vec<u8>]) -> (Outcome, bool) {
    let pieces: Vec<&[u8]> = pieces.iter().map(Vec::as_slice).collect();
    let (read, reusable) = read_answer(&pieces);
    (read.map_err(|_| ()), reusable)
}

/// Both readers on `answer` cut at `cuts`: they agree (and whether they read it).
async fn agree(answer: &[u8], cuts: &[usize]) -> bool {
    let pieces = cut(answer, cuts);
    let (ours, _) = we_read(&pieces);
    let theirs = hyper_reads(pieces).await;
    if ours != theirs {
        fn shown(outcome: &Outcome) -> Result<(u16, String), ()> {
            outcome
                .clone()
                .map(|(status, data)| (status, String::from_utf8_lossy(&data).into_owned()))
        }
        panic!(
            "{:?} cut at {cuts:?}: we read {:?}, hyper read {:?}",
            String::from_utf8_lossy(answer),
            shown(&ours),
            shown(&theirs)
        );
    }
    ours.is_ok()
}

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(err) => panic!("no runtime: {err}"),
    }
}

const CHUNKED: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

/// Answers with every case the decoder distinguishes, well formed and not.
const ANSWERS: [&str; 34] = [
    // Chunked: sizes in both cases, whitespace and extensions, trailers.
    "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    "A\r\n0123456789\r\na; name=value\r\nabcdefghij\r\n0\r\n\r\n",
    "3  \r\nabc\r\n3\t;x\r\ndef\r\n00\r\n\r\n",
    "4\r\ndata\r\n0\r\nexpires: never\r\nx-more: 1\r\n\r\n",
    "4\r\ndata\r\n0;last\r\nx: y\r\n\r\n",
    // Chunked, broken: bad hex, no digit, overflow, missing CR or LF, a bare LF, bad
    // trailers, a truncated body, data longer than its size.
    "g\r\nx\r\n0\r\n\r\n",
    "\r\nx\r\n0\r\n\r\n",
    " 1\r\nx\r\n0\r\n\r\n",
    "10000000000000000\r\nx\r\n0\r\n\r\n",
    "ffffffffffffffff\r\nx",
    "1\nx\r\n0\r\n\r\n",
    "1\r\nx\n0\r\n\r\n",
    "1\r\nxy\r\n0\r\n\r\n",
    "1;a\nb\r\nx\r\n0\r\n\r\n",
    "1 2\r\nx\r\n0\r\n\r\n",
    "0\r\nno colon\r\n\r\n",
    "0\r\nx: y\r\r\n",
    "0\r\n\rx",
    "5\r\nhel",
    "5\r\nhello\r\n",
    "5\r\nhello\r\n0\r\n",
    "",
    // The end followed by more bytes (not part of this answer).
    "1\r\nx\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n",
    // Whole heads with other framings.
    "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello",
    "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhel",
    "HTTP/1.1 200 OK\r\ncontent-length: 5, 5\r\ncontent-length: 5\r\n\r\nhello",
    "HTTP/1.1 200 OK\r\ncontent-length: 5, 6\r\n\r\nhello",
    "HTTP/1.1 200 OK\r\ncontent-length: +5\r\n\r\nhello",
    "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
    "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\nto the end",
    "HTTP/1.1 200 OK\r\n\r\nto the end",
    "HTTP/1.0 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: x\r\n\r\nHTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\nno",
    "HTTP/1.1 204 No Content\r\n\r\n",
];

/// The whole answer of one of `ANSWERS`: the chunked head before a bare body.
fn answer(text: &str) -> Vec<u8> {
    if text.starts_with("HTTP/") {
        text.as_bytes().to_vec()
    } else {
        [CHUNKED.as_bytes(), text.as_bytes()].concat()
    }
}

/// Every answer whole, cut at every position, and at every pair of positions in its body.
#[test]
fn every_cut_reads_as_hypers_client_reads_it() {
    let runtime = runtime();
    runtime.block_on(async {
        for text in ANSWERS {
            let answer = answer(text);
            agree(&answer, &[]).await;
            for i in 0..=answer.len() {
                agree(&answer, &[i]).await;
            }
            let body_from = answer.len() - text.len();
            for i in body_from..=answer.len() {
                for j in i..=answer.len() {
                    agree(&answer, &[i, j]).await;
                }
            }
        }
    });
}

/// A fixed pseudo-random sequence (xorshift), so that every run checks the same cases.
fn sequence() -> impl FnMut(usize) -> usize {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    move |below: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        usize::try_from(state % below.max(1) as u64).unwrap_or(0)
    }
}

/// A made-up chunked body: chunks of random sizes (some large), sizes in either case with
/// leading zeros, whitespace and extensions here and there, trailers sometimes.
fn made_up_body(next: &mut impl FnMut(usize) -> usize) -> Vec<u8> {
    let mut body = Vec::new();
    for _ in 0..next(8) {
        let size = [next(4) + 1, next(40) + 1, next(3000) + 1][next(3)];
        let mut line = format!("{size:x}");
        if next(2) == 0 {
            line = line.to_uppercase();
        }
        if next(6) == 0 {
            line.insert(0, '0');
        }
        match next(8) {
            0 => line.push_str(" \t"),
            1 => line.push_str(";ext=\"v\""),
            2 => line.push_str(" ;e"),
            _ => {}
        }
        body.extend_from_slice(line.as_bytes());
        body.extend_from_slice(b"\r\n");
        body.extend((0..size).map(|i| b"data: {}\n\r"[(i + next(3)) % 10]));
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\n");
    if next(4) == 0 {
        body.extend_from_slice(b"x-trailer: 1\r\n");
    }
    body.extend_from_slice(b"\r\n");
    body
}

/// Made-up chunked answers, whole and broken (a byte changed, inserted or removed, or the
/// answer cut short), in many chunkings: both readers agree on each.
#[test]
fn made_up_answers_read_as_hypers_client_reads_them() {
    const BYTES: &[u8] = b"0123456789abcdefABCDEFgG \t;:=\r\n\0\xff";
    let runtime = runtime();
    let mut next = sequence();
    let mut read = 0;
    runtime.block_on(async {
        for round in 0..3_000 {
            let mut answer = [CHUNKED.as_bytes(), &made_up_body(&mut next)].concat();
            let body_from = CHUNKED.len();
            if round % 2 == 1 {
                let at = body_from + next(answer.len() - body_from);
                match next(4) {
                    0 => answer[at] = BYTES[next(BYTES.len())],
                    1 => answer.insert(at, BYTES[next(BYTES.len())]),
                    2 => {
                        answer.remove(at);
                    }
                    _ => answer.truncate(at),
                }
            }
            let mut cuts: Vec<usize> = (0..next(8)).map(|_| next(answer.len() + 1)).collect();
            cuts.sort_unstable();
            read += usize::from(agree(&answer, &cuts).await);
        }
    });
    // Most broken answers are refused; some changes leave a valid answer.
    assert!((1_500..2_400).contains(&read), "{read} of 3000 read");
}

/// The data of the chunks one read brought comes out as one piece, in the read buffer's
/// memory; a read of framing only gives nothing.
#[test]
fn the_chunks_of_one_read_come_out_as_one_piece_of_the_buffer() -> Result<(), WireError> {
    let mut body = Body::chunked();
    let mut buf = BytesMut::from(&b"5\r\nhello\r\n6\r\n world\r\n1"[..]);
    let memory = buf.as_ptr_range();
    let data = body.decode(&mut buf)?;
    assert_eq!(&data[..], b"hello world");
    assert!(memory.contains(&data.as_ptr()));
    assert!(buf.is_empty());
    let mut buf = BytesMut::from(&b"\r\n"[..]);
    assert_eq!(body.decode(&mut buf)?, Bytes::new());
    let mut buf = BytesMut::from(&b"!\r\n0\r\n\r\nrest"[..]);
    assert_eq!(&body.decode(&mut buf)?[..], b"!");
    assert!(body.is_done());
    assert_eq!(&buf[..], b"rest");
    Ok(())
}

/// The connection can take the next request only after a body read to its end, with nothing
/// after it, from a server that keeps it alive.
#[test]
fn a_connection_is_reusable_only_after_a_clean_end_the_server_allows() {
    let reusable = |answer: &str| we_read(&[answer.as_bytes().to_vec()]).1;
    assert!(reusable(
        "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n"
    ));
    assert!(reusable("HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nx"));
    assert!(reusable(
        "HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 1\r\n\r\nx"
    ));
    assert!(!reusable(
        "HTTP/1.1 200 OK\r\nconnection: keep-alive, Close\r\ncontent-length: 1\r\n\r\nx"
    ));
    assert!(!reusable("HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\nx"));
    assert!(!reusable("HTTP/1.1 200 OK\r\n\r\nx"));
    assert!(!reusable("HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nxy"));
    assert!(!reusable(
        "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n"
    ));
}

/// A head over the size limit, or with too many fields, is refused; one just within is read.
#[test]
fn heads_over_the_limits_are_refused() {
    let head = |fields: usize, size: usize| {
        let mut text = String::from("HTTP/1.1 200 OK\r\n");
        for i in 0..fields {
            text.push_str(&format!("x-{i}: {}\r\n", "v".repeat(size)));
        }
        text.push_str("content-length: 0\r\n\r\n");
        read_head(&mut BytesMut::from(text.as_bytes())).map(|head| head.is_some())
    };
    assert_eq!(head(MAX_HEADERS - 1, 1), Ok(true));
    assert_eq!(head(MAX_HEADERS, 1), Err(WireError::HeadTooLarge));
    assert_eq!(head(1, MAX_HEAD_BYTES), Err(WireError::HeadTooLarge));
    // Incomplete and already over the limit: no need to wait for the rest.
    let mut partial = BytesMut::from(&b"HTTP/1.1 200 OK\r\nx: "[..]);
    partial.extend_from_slice(&vec![b'v'; MAX_HEAD_BYTES]);
    assert_eq!(
        read_head(&mut partial).map(|head| head.is_some()),
        Err(WireError::HeadTooLarge)
    );
}

/// The request head: the target, `Host`, the fields in order, and the body's length.
#[test]
fn the_request_head_is_written_as_hyper_would() {
    let mut headers = HeaderMap::new();
    headers.append("content-type", HeaderValue::from_static("application/json"));
    headers.append("accept", HeaderValue::from_static("text/event-stream"));
    let head = request_head(
        "/v1/chat/completions?x=1",
        &HeaderValue::from_static("127.0.0.1:8000"),
        &headers,
        42,
    );
    assert_eq!(
        String::from_utf8_lossy(&head),
        "POST /v1/chat/completions?x=1 HTTP/1.1\r\nhost: 127.0.0.1:8000\r\ncontent-type: application/json\r\naccept: text/event-stream\r\ncontent-length: 42\r\n\r\n"
    );
}
