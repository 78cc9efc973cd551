//! The in-task HTTP/1.1 client of plain-`http` upstreams (`h1_client`), against upstreams
//! written here on loopback sockets: keep-alive reuse, connections the server closed (while
//! idle, or as the client reused them), bodies cut mid-way, turns dropped mid-body, answers
//! that forbid reuse, the idle pool's expiry, and the connect timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentd_providers::{ChatCompletionsClient, ClientOptions, ProviderConfig, WireApi};
use engine::model::{ModelClient, ModelError, ModelEvent};
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::mpsc;

mod support;
use support::{hello, read_request, turn};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The most any step of a test waits.
const PATIENCE: Duration = Duration::from_secs(10);

/// The SSE events of one streamed answer: "hi", the finish reason, `[DONE]`.
const EVENTS: [&str; 3] = [
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n",
];

const HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

/// One chunk of a chunked body.
fn chunk(data: &str) -> String {
    format!("{:x}\r\n{data}\r\n", data.len())
}

/// The whole streamed answer, chunked, one chunk per event, with the last chunk.
fn answer() -> String {
    let mut text = HEAD.to_owned();
    for event in EVENTS {
        text.push_str(&chunk(event));
    }
    text.push_str("0\r\n\r\n");
    text
}

/// Waits until the peer closes `socket` (reading and discarding anything it sends).
async fn until_closed(socket: &mut TcpStream) {
    let mut chunk = [0u8; 4096];
    while let Ok(n) = socket.read(&mut chunk).await {
        if n == 0 {
            return;
        }
    }
}

/// An upstream on loopback: accepts connections, counts them, and runs `serve` on each with
/// its index (0 for the first) and a channel that reports when the connection ended.
struct Upstream {
    base_url: String,
    accepted: Arc<AtomicUsize>,
    closed: mpsc::UnboundedReceiver<usize>,
}

impl Upstream {
    async fn start<F, Fut>(serve: F) -> Result<Upstream, std::io::Error>
    where
        F: Fn(usize, TcpStream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}/v1", listener.local_addr()?);
        let accepted = Arc::new(AtomicUsize::new(0));
        let (closed_tx, closed) = mpsc::unbounded_channel();
        let counter = Arc::clone(&accepted);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let index = counter.fetch_add(1, Ordering::SeqCst);
                let served = serve(index, socket);
                let closed_tx = closed_tx.clone();
                tokio::spawn(async move {
                    served.await;
                    let _ = closed_tx.send(index);
                });
            }
        });
        Ok(Upstream {
            base_url,
            accepted,
            closed,
        })
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    fn client(
        &self,
        options: ClientOptions,
    ) -> Result<ChatCompletionsClient, Box<dyn std::error::Error>> {
        client_at(&self.base_url, options)
    }

    /// Waits for the end of a connection (the server saw it close); its index.
    async fn next_closed(&mut self) -> Result<usize, Box<dyn std::error::Error>> {
        let closed = tokio::time::timeout(PATIENCE, self.closed.recv())
            .await
            .map_err(|_| "no connection was closed")?;
        Ok(closed.ok_or("the upstream stopped")?)
    }
}

/// Answers every request on the connection with the full answer (keep-alive).
async fn keep_alive(mut socket: TcpStream) {
    let mut buf = Vec::new();
    while read_request(&mut socket, &mut buf).await {
        if socket.write_all(answer().as_bytes()).await.is_err() {
            return;
        }
    }
}

fn client_at(
    base_url: &str,
    options: ClientOptions,
) -> Result<ChatCompletionsClient, Box<dyn std::error::Error>> {
    Ok(ChatCompletionsClient::new(
        &ProviderConfig {
            name: "local".into(),
            api: WireApi::ChatCompletions,
            base_url: base_url.to_owned(),
            api_key: None,
            models: vec![],
        },
        &options,
    )?)
}

fn options() -> ClientOptions {
    ClientOptions {
        idle_timeout: PATIENCE,
        retry_base_delay: Duration::from_millis(10),
        ..ClientOptions::default()
    }
}

/// Sequential turns share one keep-alive connection.
#[tokio::test]
async fn sequential_turns_share_one_connection() -> TestResult {
    let upstream = Upstream::start(|_, socket| keep_alive(socket)).await?;
    let client = upstream.client(options())?;
    assert!(format!("{client:?}").contains("in_task_http1: true"));
    for _ in 0..4 {
        assert_eq!(turn(&client).await?, "hi");
    }
    assert_eq!(upstream.accepted(), 1);
    Ok(())
}

/// An answer of `deltas` text deltas ("w0 w1 …"), chunked, written by the caller in one piece;
/// its text.
fn long_answer(deltas: usize) -> (String, String) {
    let mut text = HEAD.to_owned();
    let mut said = String::new();
    for n in 0..deltas {
        let word = format!(" w{n}");
        said.push_str(&word);
        text.push_str(&chunk(&format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{word}\"}}}}]}}\n\n"
        )));
    }
    text.push_str(&chunk(EVENTS[1]));
    text.push_str(&chunk(EVENTS[2]));
    text.push_str("0\r\n\r\n");
    (text, said)
}

/// Answers of every size on one kept-alive connection, the long ones written in one piece (so
/// that every read fills its room and chunks and events are cut across reads): each is read
/// whole and in order, and the connection serves the next.
#[tokio::test]
async fn answers_short_and_long_in_one_piece_are_read_whole_on_one_connection() -> TestResult {
    const SIZES: [usize; 7] = [1, 3_000, 2, 12_000, 500, 40_000, 1];
    let upstream = Upstream::start(|_, mut socket| async move {
        let mut buf = Vec::new();
        for deltas in SIZES {
            if !read_request(&mut socket, &mut buf).await {
                return;
            }
            let (text, _) = long_answer(deltas);
            if socket.write_all(text.as_bytes()).await.is_err() {
                return;
            }
        }
        until_closed(&mut socket).await;
    })
    .await?;
    let client = upstream.client(options())?;
    for deltas in SIZES {
        let (text, said) = long_answer(deltas);
        // The long ones span many reads (8 KiB each).
        assert!(deltas < 3_000 || text.len() > 64 * 1024);
        assert_eq!(turn(&client).await?, said, "an answer of {deltas} deltas");
    }
    assert_eq!(upstream.accepted(), 1);
    Ok(())
}

/// The server closes each connection after one answer (while it is idle in the client's
/// pool): the next turn notices and succeeds on a new connection.
#[tokio::test]
async fn a_connection_the_server_closed_while_idle_is_not_used() -> TestResult {
    let mut upstream = Upstream::start(|_, mut socket| async move {
        let mut buf = Vec::new();
        if read_request(&mut socket, &mut buf).await {
            let _ = socket.write_all(answer().as_bytes()).await;
        }
    })
    .await?;
    let client = upstream.client(ClientOptions {
        max_retries: 0,
        ..options()
    })?;
    for round in 1..=3 {
        assert_eq!(turn(&client).await?, "hi");
        upstream.next_closed().await?;
        assert_eq!(upstream.accepted(), round);
    }
    Ok(())
}

/// Answers read whole but whose connection must not serve another request: `Connection:
/// close`, bytes after the body, an HTTP/1.0 body that runs to the connection's end. Each turn
/// succeeds and the next one opens a new connection; informational (1xx) heads before an
/// answer are skipped and leave the connection reusable.
#[tokio::test]
async fn answers_that_forbid_reuse_are_read_and_their_connection_is_not_reused() -> TestResult {
    let body: String = EVENTS.concat();
    let mut upstream = Upstream::start(move |index, mut socket| {
        let body = body.clone();
        async move {
            let mut buf = Vec::new();
            let answers = match index {
                0 => vec![
                    format!("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: x\r\n\r\n{}", answer()),
                    format!(
                        "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    ),
                ],
                1 => vec![format!("{}HTTP/1.1 200 OK\r\n", answer())],
                2 => vec![format!(
                    "HTTP/1.0 200 OK\r\ncontent-type: text/event-stream\r\n\r\n{body}"
                )],
                _ => return keep_alive(socket).await,
            };
            for text in &answers {
                if !read_request(&mut socket, &mut buf).await
                    || socket.write_all(text.as_bytes()).await.is_err()
                {
                    return;
                }
            }
            if index != 2 {
                // Left open: only the client's close ends it.
                until_closed(&mut socket).await;
            }
        }
    })
    .await?;
    let client = upstream.client(ClientOptions {
        max_retries: 0,
        ..options()
    })?;
    for accepted in [1, 1, 2, 3, 4, 4] {
        assert_eq!(turn(&client).await?, "hi");
        assert_eq!(upstream.accepted(), accepted);
    }
    // The first three connections were closed by the client (the third by the server).
    let mut closed = Vec::new();
    for _ in 0..3 {
        closed.push(upstream.next_closed().await?);
    }
    closed.sort_unstable();
    assert_eq!(closed, [0, 1, 2]);
    Ok(())
}

/// The server takes the second request of a kept-alive connection and closes it without an
/// answer (it timed the connection out as the client reused it): the turn is sent again on a
/// new connection, once, and succeeds; the user sees no error.
#[tokio::test]
async fn a_request_lost_on_a_reused_connection_is_sent_again_on_a_new_one() -> TestResult {
    let upstream = Upstream::start(|index, mut socket| async move {
        let mut buf = Vec::new();
        if index == 0 {
            if read_request(&mut socket, &mut buf).await {
                let _ = socket.write_all(answer().as_bytes()).await;
            }
            // Reads the next request, then closes without a word.
            read_request(&mut socket, &mut buf).await;
            return;
        }
        keep_alive(socket).await;
    })
    .await?;
    let client = upstream.client(ClientOptions {
        max_retries: 0,
        ..options()
    })?;
    assert_eq!(turn(&client).await?, "hi");
    assert_eq!(turn(&client).await?, "hi");
    assert_eq!(upstream.accepted(), 2);
    // A fresh connection that fails the same way is not retried: the error is the user's.
    let refusing = Upstream::start(|_, mut socket| async move {
        let mut buf = Vec::new();
        read_request(&mut socket, &mut buf).await;
    })
    .await?;
    let client = refusing.client(ClientOptions {
        max_retries: 0,
        ..options()
    })?;
    assert!(matches!(turn(&client).await, Err(ModelError::Transport(_))));
    assert_eq!(refusing.accepted(), 1);
    Ok(())
}

/// The server breaks the connection in the middle of an answer: the turn ends with a
/// transport error after the deltas that came, and the next turn gets a new connection.
#[tokio::test]
async fn a_body_cut_mid_way_fails_the_turn_and_its_connection_is_not_reused() -> TestResult {
    let upstream = Upstream::start(|index, mut socket| async move {
        if index > 0 {
            return keep_alive(socket).await;
        }
        let mut buf = Vec::new();
        if read_request(&mut socket, &mut buf).await {
            let cut = format!("{HEAD}{}", chunk(EVENTS[0]));
            let _ = socket.write_all(cut.as_bytes()).await;
        }
    })
    .await?;
    let client = upstream.client(options())?;
    let mut stream = client.stream(hello()).await?;
    assert_eq!(
        stream.next().await,
        Some(Ok(ModelEvent::TextDelta("hi".into())))
    );
    let end = stream.next().await;
    assert!(
        matches!(&end, Some(Err(ModelError::Transport(message))) if message.contains("broke off")),
        "{end:?}"
    );
    assert_eq!(turn(&client).await?, "hi");
    assert_eq!(upstream.accepted(), 2);
    Ok(())
}

/// A turn dropped in the middle of its answer (a cancelled run, a client gone) closes its
/// connection at once rather than returning it half-read; the next turn opens a new one.
#[tokio::test]
async fn a_turn_dropped_mid_body_closes_its_connection() -> TestResult {
    let mut upstream = Upstream::start(|index, mut socket| async move {
        if index > 0 {
            return keep_alive(socket).await;
        }
        let mut buf = Vec::new();
        if read_request(&mut socket, &mut buf).await {
            let part = format!("{HEAD}{}", chunk(EVENTS[0]));
            let _ = socket.write_all(part.as_bytes()).await;
            until_closed(&mut socket).await;
        }
    })
    .await?;
    let client = upstream.client(options())?;
    let mut stream = client.stream(hello()).await?;
    assert_eq!(
        stream.next().await,
        Some(Ok(ModelEvent::TextDelta("hi".into())))
    );
    drop(stream);
    assert_eq!(upstream.next_closed().await?, 0);
    assert_eq!(turn(&client).await?, "hi");
    assert_eq!(upstream.accepted(), 2);
    Ok(())
}

/// Idle connections beyond `max_idle_connections` are closed as they come back, and the ones
/// kept are closed once idle for `pool_idle_timeout`, with no turn needed to notice.
#[tokio::test]
async fn idle_connections_are_capped_and_expire() -> TestResult {
    let mut upstream = Upstream::start(|_, socket| keep_alive(socket)).await?;
    let client = upstream.client(ClientOptions {
        max_idle_connections: 1,
        pool_idle_timeout: Duration::from_millis(300),
        ..options()
    })?;
    // Two turns at once: two connections, one kept.
    let (a, b) = tokio::join!(turn(&client), turn(&client));
    assert_eq!((a?, b?), ("hi".to_owned(), "hi".to_owned()));
    assert_eq!(upstream.accepted(), 2);
    let first_closed = upstream.next_closed().await?;
    // The kept one expires a moment later.
    let second_closed = upstream.next_closed().await?;
    assert_ne!(first_closed, second_closed);
    assert_eq!(turn(&client).await?, "hi");
    assert_eq!(upstream.accepted(), 3);
    Ok(())
}

/// An idle connection the server closes (its keep-alive timeout) is closed on our side within
/// the reaper's sweep, not left in `CLOSE_WAIT` until the pool's expiry or the next checkout.
#[tokio::test]
async fn an_idle_connection_the_server_closed_is_closed_without_waiting_for_expiry() -> TestResult {
    let mut upstream = Upstream::start(|_, mut socket| async move {
        let mut buf = Vec::new();
        if !read_request(&mut socket, &mut buf).await
            || socket.write_all(answer().as_bytes()).await.is_err()
        {
            return;
        }
        // Once the connection is idle in the client's pool, the server's keep-alive ends: it
        // closes its side and waits for the client to close the other.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let _ = socket.shutdown().await;
        until_closed(&mut socket).await;
    })
    .await?;
    let client = upstream.client(ClientOptions {
        pool_idle_timeout: Duration::from_secs(600),
        ..options()
    })?;
    assert_eq!(turn(&client).await?, "hi");
    // `next_closed` waits PATIENCE (10 s): far less than the expiry, a few sweeps.
    assert_eq!(upstream.next_closed().await?, 0);
    assert_eq!(turn(&client).await?, "hi");
    assert_eq!(upstream.accepted(), 2);
    Ok(())
}

/// A connection that cannot be made in `connect_timeout` fails the turn with a timeout (after
/// the retries), long before the idle timeout.
#[tokio::test]
async fn a_connection_that_hangs_times_out() -> TestResult {
    // A listener that never accepts, its backlog filled: further connections hang in SYN.
    let socket = TcpSocket::new_v4()?;
    socket.bind("127.0.0.1:0".parse()?)?;
    let listener = socket.listen(1)?;
    let addr = listener.local_addr()?;
    let mut fillers = Vec::new();
    for _ in 0..8 {
        let connecting = TcpStream::connect(addr);
        if let Ok(Ok(stream)) = tokio::time::timeout(Duration::from_millis(100), connecting).await {
            fillers.push(stream);
        }
    }
    let client = client_at(
        &format!("http://{addr}/v1"),
        ClientOptions {
            connect_timeout: Duration::from_millis(200),
            max_retries: 1,
            ..options()
        },
    )?;
    let started = tokio::time::Instant::now();
    let result = turn(&client).await;
    assert_eq!(result, Err(ModelError::Timeout));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    drop(listener);
    Ok(())
}
