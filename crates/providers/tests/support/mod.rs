//! What the providers' socket-level tests share: a test server's reading of one request, and
//! one turn of a client read to its end.

use agentd_providers::ChatCompletionsClient;
use engine::model::{ContentPart, ModelClient, ModelError, ModelEvent, ModelMessage, ModelRequest};
use futures::StreamExt;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// Reads one request (head and `content-length` body) from `socket`; `false` at end of stream.
pub async fn read_request(socket: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    loop {
        if let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse::<usize>().ok())
                .unwrap_or(0);
            let end = head_end + 4 + length;
            if buf.len() >= end {
                buf.drain(..end);
                return true;
            }
        }
        let mut chunk = [0u8; 4096];
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A one-message request.
pub fn hello() -> ModelRequest {
    ModelRequest {
        model: "gpt-test".into(),
        messages: vec![ModelMessage::User {
            content: vec![ContentPart::Text { text: "hi".into() }],
        }],
        ..ModelRequest::default()
    }
}

/// One turn, read to its end: its text, or the first error.
pub async fn turn(client: &ChatCompletionsClient) -> Result<String, ModelError> {
    let mut stream = client.stream(hello()).await?;
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        if let ModelEvent::TextDelta(delta) = event? {
            text.push_str(&delta);
        }
    }
    Ok(text)
}
