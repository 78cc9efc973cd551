//! The in-task HTTP/1.1 client of plain-`http` upstreams (self-hosted model servers: vLLM,
//! Ollama, llama.cpp, local gateways): a tokio `TcpStream` per connection, read into a buffer
//! of its own and decoded there (`h1_wire`: the request head, the response head by `httparse`,
//! the body's framing).
//!
//! The connection is driven by whoever reads the answer, not by a task of its own: the future
//! awaiting the response head, then the body stream the turn reads, read the socket themselves.
//! A streamed turn thus costs no hand-over between tasks per body chunk (with reqwest,
//! hyper-util spawns one task per connection, which passes every chunk over a channel of one to
//! the run's task; docs/benchmarks.md, "Issue 18, tenth pass"), and a chunked body is decoded
//! in place, one `Bytes` per socket read (hyper's decoder, used here until the twelfth pass,
//! took each byte of a chunk-size line through a `Bytes` of its own: "Issue 18, twelfth pass").
//!
//! The pool ([`H1Pool`], one per provider):
//! - a connection goes back to the pool only once its answer was read to the end, nothing
//!   followed it, and the server did not say `Connection: close` (an HTTP/1.0 answer: only
//!   with `Connection: keep-alive`; a body that runs to the connection's end: never); a body
//!   dropped mid-way (a cancelled turn, a client gone) drops its connection;
//! - at most `max_idle_connections` idle connections are kept, used last-in first-out (the
//!   warmest); one idle longer than `pool_idle_timeout` is closed (checked at checkout and by a
//!   reaper task that sleeps until the next expiry and ends when the pool is empty); the reaper
//!   also looks at the idle connections every [`SWEEP`] and closes the ones the server closed;
//! - at checkout an idle connection is read once without waiting: one the server closed (the
//!   read sees its end) or that holds unasked-for bytes is dropped; and a request that fails on
//!   a reused connection before its response head (the server closed it as we reused it) is
//!   sent once more on a fresh one. The request body is whole in memory (`Bytes`), so the
//!   second send is a cheap clone;
//! - new connections: `connect_timeout`, `TCP_NODELAY`.
//!
//! Which upstreams take this path is decided in `transport` (plain `http`, no proxy variable);
//! `https` and proxied upstreams keep reqwest (TLS, HTTP/2, proxies).

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use engine::model::ModelError;
use futures::Stream;
use reqwest::StatusCode;
use reqwest::Url;
use reqwest::header::HeaderMap;
use reqwest::header::HeaderValue;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::config::ClientOptions;
use crate::h1_wire::{self, Body, Head, WireError};
use crate::redact::describe;

/// How often the reaper looks at the idle connections for ones the server closed (a server's
/// keep-alive timeout is often a few seconds: uvicorn's is 5 s), so that they do not wait in
/// `CLOSE_WAIT` for the pool's expiry.
const SWEEP: Duration = Duration::from_secs(2);

/// The room a read asks for in a connection's buffer at first, and all along on a connection
/// whose reads never fill it (a paced stream's small chunks: every open stream keeps one).
const READ_SIZE: usize = 8 * 1024;

/// The room a read asks for once a read of the connection filled all it had: an answer that
/// comes faster than it is read (a whole non-streamed answer, ~17 KB for 64 tokens) then takes
/// one read fewer (docs/benchmarks.md, "Issue 18, twenty-second pass"). jemalloc's largest
/// small size class; 32 KiB for every connection was tried and raised RSS under load.
const FULL_READ_SIZE: usize = 14 * 1024;

/// A request that could not be sent, or whose response head did not come.
#[derive(Debug)]
pub(crate) struct SendFailure {
    /// The connection could not be made: a retry may succeed ([`crate::http::RetryPolicy`]).
    pub(crate) connect: bool,
    pub(crate) error: ModelError,
}

/// The idle keep-alive connections of one upstream, and how to make new ones.
pub(crate) struct H1Pool {
    shared: Arc<Shared>,
}

struct Shared {
    idle: Mutex<Idle>,
    max_idle: usize,
    /// How long a connection may stay idle in the pool.
    expiry: Duration,
    connect_timeout: Duration,
    /// Where to connect: a host name or an IP literal (without brackets), and the port.
    host: String,
    port: u16,
    /// The `Host` header: the URL's host and explicit port.
    host_header: HeaderValue,
}

#[derive(Default)]
struct Idle {
    /// Oldest first; checkout takes the last.
    links: Vec<(Link, Instant)>,
    /// Whether a reaper task is running for this pool.
    reaper: bool,
}

/// One connection: the socket and what was read from it and not yet decoded.
struct Link {
    stream: TcpStream,
    buf: BytesMut,
    /// The room a read asks for: [`READ_SIZE`], or [`FULL_READ_SIZE`] once a read filled its
    /// room.
    read_size: usize,
}

impl Link {
    fn new(stream: TcpStream) -> Link {
        Link {
            stream,
            buf: BytesMut::with_capacity(READ_SIZE),
            read_size: READ_SIZE,
        }
    }

    /// Whether an idle connection can take a request: a read without waiting finds nothing to
    /// read (the server neither closed it nor sent anything unasked).
    fn usable(&mut self) -> bool {
        let mut probe = [0_u8; 1];
        self.buf.is_empty()
            && matches!(self.stream.try_read(&mut probe),
                Err(err) if err.kind() == io::ErrorKind::WouldBlock)
    }

    /// Reads what the socket has into the buffer: the bytes read (0: the connection's end).
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        loop {
            if self.buf.capacity() - self.buf.len() < self.read_size / 4 {
                self.buf.reserve(self.read_size);
            }
            let room = self.buf.capacity() - self.buf.len();
            match self.stream.try_read_buf(&mut self.buf) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    ready!(self.stream.poll_read_ready(cx))?;
                }
                Ok(read) => {
                    if read == room {
                        self.read_size = FULL_READ_SIZE;
                    }
                    return Poll::Ready(Ok(read));
                }
                Err(err) => return Poll::Ready(Err(err)),
            }
        }
    }

    /// Writes `head` and `body`, then reads the response head.
    async fn exchange(&mut self, head: &[u8], body: &Bytes) -> Result<Head, ExchangeError> {
        let mut request = head.chain(body.clone());
        self.stream
            .write_all_buf(&mut request)
            .await
            .map_err(ExchangeError::Io)?;
        loop {
            if let Some(head) = h1_wire::read_head(&mut self.buf).map_err(ExchangeError::Wire)? {
                return Ok(head);
            }
            let read = poll_fn(|cx| self.poll_read(cx))
                .await
                .map_err(ExchangeError::Io)?;
            if read == 0 {
                return Err(ExchangeError::Wire(WireError::ClosedBeforeHead));
            }
        }
    }
}

/// Why a request got no response head.
#[derive(Debug)]
enum ExchangeError {
    Io(io::Error),
    Wire(WireError),
}

impl std::fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExchangeError::Io(err) => err.fmt(f),
            ExchangeError::Wire(err) => err.fmt(f),
        }
    }
}

impl std::error::Error for ExchangeError {}

impl H1Pool {
    /// The pool of the upstream at `url` (scheme `http`), or `None` if the URL has no host.
    pub(crate) fn new(url: &Url, options: &ClientOptions) -> Option<Self> {
        let host = match url.host()? {
            url::Host::Domain(name) => name.to_owned(),
            url::Host::Ipv4(ip) => ip.to_string(),
            url::Host::Ipv6(ip) => ip.to_string(),
        };
        let port = url.port_or_known_default()?;
        let authority = &url[url::Position::BeforeHost..url::Position::AfterPort];
        let host_header = HeaderValue::from_str(authority).ok()?;
        Some(H1Pool {
            shared: Arc::new(Shared {
                idle: Mutex::new(Idle::default()),
                max_idle: options.max_idle_connections,
                expiry: options.pool_idle_timeout,
                connect_timeout: options.connect_timeout,
                host,
                port,
                host_header,
            }),
        })
    }

    /// Sends a `POST` of `body` to `url` with `headers` (plus `Host` and `Content-Length`): the
    /// response's status, headers and body stream. A reused connection that fails before the
    /// response head is replaced by a fresh one, once.
    pub(crate) async fn send(
        &self,
        url: &Url,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Result<(StatusCode, HeaderMap, H1Body), SendFailure> {
        let target = &url[url::Position::BeforePath..url::Position::AfterQuery];
        let target = if target.is_empty() { "/" } else { target };
        if target.bytes().any(|byte| byte <= b' ' || byte == 0x7f) {
            return Err(SendFailure {
                connect: false,
                error: ModelError::Transport("invalid request target".to_owned()),
            });
        }
        let head = h1_wire::request_head(target, &self.shared.host_header, headers, body.len());
        let (head, link) = match self.shared.checkout() {
            Some(mut link) => match link.exchange(&head, body).await {
                Ok(response) => (response, link),
                Err(err) => {
                    tracing::debug!(error = %err, "a reused upstream connection failed; sending on a new one");
                    drop(link);
                    self.fresh(&head, body).await?
                }
            },
            None => self.fresh(&head, body).await?,
        };
        let Head {
            status,
            headers,
            body,
            keep_alive,
        } = head;
        let body = H1Body {
            live: Some((body, link)),
            keep_alive,
            pool: Arc::downgrade(&self.shared),
        };
        Ok((status, headers, body))
    }

    /// Sends the request on a new connection.
    async fn fresh(&self, head: &[u8], body: &Bytes) -> Result<(Head, Link), SendFailure> {
        let mut link = self.shared.connect().await?;
        match link.exchange(head, body).await {
            Ok(response) => Ok((response, link)),
            Err(err) => Err(SendFailure {
                connect: false,
                error: ModelError::Transport(describe("error sending request", &err)),
            }),
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Idle> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the idle connections that have expired out of `idle` (the oldest come first), for
    /// the caller to drop once the lock is released.
    fn take_expired(&self, idle: &mut Idle) -> Vec<(Link, Instant)> {
        let now = Instant::now();
        let expired = idle
            .links
            .iter()
            .take_while(|(_, since)| now.saturating_duration_since(*since) >= self.expiry)
            .count();
        idle.links.drain(..expired).collect()
    }

    /// The warmest idle connection still usable, dropping the expired and closed ones met.
    fn checkout(&self) -> Option<Link> {
        let mut idle = self.lock();
        let mut stale = self.take_expired(&mut idle);
        let found = loop {
            let Some((mut link, since)) = idle.links.pop() else {
                break None;
            };
            if link.usable() {
                break Some(link);
            }
            stale.push((link, since));
        };
        drop(idle);
        drop(stale);
        found
    }

    /// Puts a connection whose answer was read to the end back in the pool, if the pool has
    /// room.
    fn checkin(self: &Arc<Self>, link: Link) {
        if self.max_idle == 0 {
            return;
        }
        let mut idle = self.lock();
        if idle.links.len() >= self.max_idle {
            return;
        }
        idle.links.push((link, Instant::now()));
        if idle.reaper {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            idle.reaper = true;
            runtime.spawn(reap(Arc::downgrade(self)));
        }
    }

    /// Drops the expired idle connections and those the server closed: when to look again
    /// (the next expiry, or [`SWEEP`] from now if sooner), or `None` (and the reaper stops)
    /// when none is left.
    fn expire(&self) -> Option<Instant> {
        let mut idle = self.lock();
        let mut stale = self.take_expired(&mut idle);
        // The ones the server closed meanwhile (nothing reads an idle connection, so its end
        // is only seen when it is looked at): closed now rather than at checkout or expiry.
        for (mut link, since) in std::mem::take(&mut idle.links) {
            if link.usable() {
                idle.links.push((link, since));
            } else {
                stale.push((link, since));
            }
        }
        let sweep = Instant::now() + SWEEP;
        let next = (idle.links.first()).map(|(_, since)| (*since + self.expiry).min(sweep));
        idle.reaper = next.is_some();
        drop(idle);
        drop(stale);
        next
    }

    /// A new connection: TCP (with `TCP_NODELAY`) within the connect timeout.
    async fn connect(&self) -> Result<Link, SendFailure> {
        let connecting = TcpStream::connect((self.host.as_str(), self.port));
        let stream = match tokio::time::timeout(self.connect_timeout, connecting).await {
            Err(_) => {
                return Err(SendFailure {
                    connect: true,
                    error: ModelError::Timeout,
                });
            }
            Ok(Err(err)) => {
                return Err(SendFailure {
                    connect: true,
                    error: ModelError::Transport(describe("could not connect", &err)),
                });
            }
            Ok(Ok(stream)) => stream,
        };
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(error = %err, "could not set TCP_NODELAY on an upstream connection");
        }
        Ok(Link::new(stream))
    }
}

/// The reaper of a pool: sleeps until the next idle connection expires (or the next sweep),
/// drops the expired ones and those the server closed, and ends when the pool is empty (the
/// next checkin starts another) or gone.
async fn reap(pool: Weak<Shared>) {
    loop {
        let next = match pool.upgrade() {
            Some(shared) => shared.expire(),
            None => return,
        };
        let Some(at) = next else {
            return;
        };
        tokio::time::sleep_until(at).await;
    }
}

/// The body of a response read from an [`H1Pool`] connection: a stream of its data, one
/// `Bytes` per socket read. Once read to the end, the connection goes back to the pool (when
/// the server keeps it alive and sent nothing after the body); dropped before, it is closed.
pub(crate) struct H1Body {
    /// The body's framing state and its connection, until the end or an error.
    live: Option<(Body, Link)>,
    /// The server lets the connection live after this answer.
    keep_alive: bool,
    pool: Weak<Shared>,
}

impl H1Body {
    /// The body is over: its connection goes back to the pool if it can take another request.
    fn finish(&mut self) {
        if let Some((body, link)) = self.live.take()
            && self.keep_alive
            && body.is_done()
            && link.buf.is_empty()
            && let Some(pool) = self.pool.upgrade()
        {
            pool.checkin(link);
        }
    }
}

impl Stream for H1Body {
    type Item = Result<Bytes, ModelError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            let Some((body, link)) = this.live.as_mut() else {
                return Poll::Ready(None);
            };
            if body.is_done() {
                this.finish();
                return Poll::Ready(None);
            }
            if !link.buf.is_empty() {
                match body.decode(&mut link.buf) {
                    Ok(data) if data.is_empty() => continue,
                    Ok(data) => return Poll::Ready(Some(Ok(data))),
                    Err(err) => return Poll::Ready(Some(Err(this.broke_off(&err)))),
                }
            }
            match ready!(link.poll_read(cx)) {
                Ok(0) => {
                    if let Err(err) = body.closed() {
                        return Poll::Ready(Some(Err(this.broke_off(&err))));
                    }
                    // A body that ran to the connection's end: the connection is not reused.
                    this.live = None;
                    return Poll::Ready(None);
                }
                Ok(_) => {}
                Err(err) => return Poll::Ready(Some(Err(this.broke_off(&err)))),
            }
        }
    }
}

impl H1Body {
    /// The error that ends the body (and drops its connection).
    fn broke_off(&mut self, err: &(dyn std::error::Error + 'static)) -> ModelError {
        self.live = None;
        ModelError::Transport(describe("the response body broke off", err))
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;

    use tokio::io::AsyncWriteExt as _;

    use super::{FULL_READ_SIZE, Link, READ_SIZE};

    /// A connection whose peer sends small pieces, each read before the next, keeps reading
    /// with the first room; once a read fills its room (a whole answer waiting), the
    /// connection's reads ask for more, and take a long answer in larger pieces.
    #[tokio::test]
    async fn a_connection_whose_reads_fill_their_room_reads_in_larger_pieces() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let mut link = Link::new(client);
        // Each read's bytes taken from the buffer, as the body's decoder takes them.
        let read = async |link: &mut Link| {
            let read = poll_fn(|cx| link.poll_read(cx)).await.unwrap();
            drop(link.buf.split());
            read
        };
        for _ in 0..4 {
            server.write_all(&[b'a'; 100]).await.unwrap();
            assert_eq!(read(&mut link).await, 100);
        }
        assert_eq!(link.read_size, READ_SIZE);
        let answer = 40_000;
        server.write_all(&vec![b'b'; answer]).await.unwrap();
        let mut reads = Vec::new();
        while reads.iter().sum::<usize>() < answer {
            reads.push(read(&mut link).await);
        }
        assert_eq!(reads.iter().sum::<usize>(), answer);
        assert_eq!(link.read_size, FULL_READ_SIZE);
        assert!(
            reads.iter().any(|&read| read > READ_SIZE),
            "reads of {reads:?} bytes"
        );
    }
}
