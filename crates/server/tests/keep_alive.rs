//! An answer given before the request body was read (here a 415: the content type is checked
//! before the body is needed) keeps the HTTP/1.1 connection usable: the server reads and drops
//! the rest of the body, so the client's next request on the same connection is answered
//! instead of finding it closed ("server disconnected without sending a response"). A body
//! too large to drain gets `Connection: close`, so the client knows not to reuse it.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::time::Duration;

use agentd_server::unread_body::DRAIN_LIMIT_BYTES;
use testkit::TestApp;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedReadHalf;

/// One answer read off the connection: status, lower-cased head, body.
struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
}

/// Reads one HTTP/1.1 answer with a `content-length` body; `None` if the connection ends first.
async fn read_answer(reader: &mut OwnedReadHalf, buffer: &mut Vec<u8>) -> Option<Answer> {
    let read = async {
        loop {
            if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                while buffer.len() < end + 4 + length {
                    let mut chunk = [0u8; 4096];
                    let n = reader.read(&mut chunk).await.ok()?;
                    if n == 0 {
                        return None;
                    }
                    buffer.extend_from_slice(&chunk[..n]);
                }
                let body = buffer[end + 4..end + 4 + length].to_vec();
                buffer.drain(..end + 4 + length);
                let status = head.split_whitespace().nth(1)?.parse().ok()?;
                return Some(Answer { status, head, body });
            }
            let mut chunk = [0u8; 4096];
            let n = reader.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buffer.extend_from_slice(&chunk[..n]);
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .unwrap()
}

/// Sends a `text/plain` POST with a `size`-byte body (head first, then the body in chunks, from
/// a task of its own so a server that stops reading cannot block the test) and reads the answer.
async fn refused_post(
    app: &TestApp,
    size: usize,
) -> (
    Answer,
    OwnedReadHalf,
    tokio::net::tcp::OwnedWriteHalf,
    Vec<u8>,
) {
    let addr = app.base_url.trim_start_matches("http://").to_owned();
    let stream = TcpStream::connect(&addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let head = format!(
        "POST /v1/responses HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain\r\nContent-Length: {size}\r\n\r\n"
    );
    writer.write_all(head.as_bytes()).await.unwrap();
    writer.flush().await.unwrap();
    let sender = tokio::spawn(async move {
        let chunk = vec![b'x'; 16 * 1024];
        let mut left = size;
        while left > 0 {
            let n = left.min(chunk.len());
            if writer.write_all(&chunk[..n]).await.is_err() {
                return None;
            }
            left -= n;
            tokio::task::yield_now().await;
        }
        Some(writer)
    });
    let mut buffer = Vec::new();
    let answer = read_answer(&mut reader, &mut buffer)
        .await
        .expect("an answer to the POST");
    let writer = sender.await.unwrap().expect("the whole body was sent");
    (answer, reader, writer, buffer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_early_answer_keeps_the_connection_for_the_next_request() {
    let app = TestApp::spawn().await;
    // Larger than one read of hyper's buffer, under the drain limit.
    let size = DRAIN_LIMIT_BYTES * 3 / 4;
    let (answer, mut reader, mut writer, mut buffer) = refused_post(&app, size).await;
    assert_eq!(answer.status, 415, "{}", answer.head);
    assert!(
        !answer.head.contains("connection: close"),
        "{}",
        answer.head
    );
    let error: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(error["error"]["code"], 415, "{error}");

    // The same connection answers the next request.
    let host = app.base_url.trim_start_matches("http://");
    writer
        .write_all(format!("GET /health HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let health = read_answer(&mut reader, &mut buffer)
        .await
        .expect("the connection still answers");
    assert_eq!(health.status, 200, "{}", health.head);
    assert_eq!(health.body, br#"{"status":"ok"}"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_too_large_to_drain_is_answered_with_connection_close() {
    let app = TestApp::spawn().await;
    let addr = app.base_url.trim_start_matches("http://").to_owned();
    let stream = TcpStream::connect(&addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let size = DRAIN_LIMIT_BYTES * 4;
    let head = format!(
        "POST /v1/responses HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain\r\nContent-Length: {size}\r\n\r\n"
    );
    writer.write_all(head.as_bytes()).await.unwrap();
    // The server may stop reading part way: the sender's errors are expected.
    tokio::spawn(async move {
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..size / chunk.len() {
            if writer.write_all(&chunk).await.is_err() {
                break;
            }
        }
    });
    let mut buffer = Vec::new();
    let answer = read_answer(&mut reader, &mut buffer)
        .await
        .expect("an answer to the POST");
    assert_eq!(answer.status, 415, "{}", answer.head);
    assert!(answer.head.contains("connection: close"), "{}", answer.head);
}
