//! The upstream client keeps a bounded number of idle keep-alive connections
//! (`ClientOptions::max_idle_connections`): after a spike of concurrent turns the connections
//! beyond the bound are closed as they become idle, rather than held (with their buffers) until
//! the pool's idle timeout, and the ones kept are reused.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentd_providers::{ChatCompletionsClient, ClientOptions, ProviderConfig, WireApi};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::{Barrier, mpsc};

mod support;
use support::{read_request, turn};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// One streamed Chat Completions answer: "hi", then the finish reason.
const ANSWER: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
data: [DONE]\n\n";

/// Concurrent turns of the spike (each on its own connection).
const SPIKE: usize = 3;

/// An upstream that answers every request on a connection with [`ANSWER`] (keep-alive); the
/// first [`SPIKE`] connections answer only once all of them have a request (so the client
/// must open that many), and every connection's end is reported on `closed`.
async fn upstream(
    listener: TcpListener,
    accepted: Arc<AtomicUsize>,
    closed: mpsc::UnboundedSender<usize>,
) {
    let barrier = Arc::new(Barrier::new(SPIKE));
    while let Ok((mut socket, _)) = listener.accept().await {
        let index = accepted.fetch_add(1, Ordering::SeqCst);
        let (barrier, closed) = (Arc::clone(&barrier), closed.clone());
        tokio::spawn(async move {
            let mut buf = Vec::new();
            let mut first = index < SPIKE;
            while read_request(&mut socket, &mut buf).await {
                if first {
                    barrier.wait().await;
                    first = false;
                }
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{ANSWER}",
                    ANSWER.len()
                );
                if socket.write_all(response.as_bytes()).await.is_err() {
                    break;
                }
            }
            let _ = closed.send(index);
        });
    }
}

#[tokio::test]
async fn connections_beyond_the_idle_bound_are_closed_and_the_rest_reused() -> TestResult {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let accepted = Arc::new(AtomicUsize::new(0));
    let (closed_tx, mut closed) = mpsc::unbounded_channel();
    tokio::spawn(upstream(listener, Arc::clone(&accepted), closed_tx));
    let client = ChatCompletionsClient::new(
        &ProviderConfig {
            name: "local".into(),
            api: WireApi::ChatCompletions,
            base_url: format!("http://{addr}/v1"),
            api_key: None,
            models: vec![],
        },
        &ClientOptions {
            max_idle_connections: 1,
            ..ClientOptions::default()
        },
    )?;

    // A spike: three turns at once, three connections.
    let texts = futures::future::join_all((0..SPIKE).map(|_| turn(&client))).await;
    for text in texts {
        assert_eq!(text?, "hi");
    }
    assert_eq!(accepted.load(Ordering::SeqCst), SPIKE);

    // Once the turns are over, all but one connection are closed by the client (the bound
    // in the test is generous: the close follows the end of the answers at once).
    for _ in 1..SPIKE {
        tokio::time::timeout(Duration::from_secs(10), closed.recv())
            .await
            .map_err(|_| "an idle connection beyond the bound was kept open")?
            .ok_or("the upstream stopped")?;
    }

    // The one kept serves the next turn: no new connection.
    assert_eq!(turn(&client).await?, "hi");
    assert_eq!(accepted.load(Ordering::SeqCst), SPIKE);
    assert!(closed.try_recv().is_err(), "the kept connection was closed");
    Ok(())
}
