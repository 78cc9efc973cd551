//! The in-task HTTP/1.1 client of plain-`http` upstreams (self-hosted model servers: vLLM,
//! Ollama, llama.cpp, local gateways), on `hyper::client::conn::http1`.
//!
//! The connection is driven by whoever reads the answer, not by a task of its own: the future
//! awaiting the response head, then the body stream the turn reads, poll hyper's `Connection`
//! themselves. A streamed turn thus costs no hand-over between tasks per body chunk (with
//! reqwest, hyper-util spawns one task per connection, which passes every chunk over a channel
//! of one to the run's task: a worker-to-worker wake-up per chunk, and hyper's body channel and
//! reqwest's layers around it; docs/benchmarks.md, "Issue 18, tenth pass").
//!
//! The pool ([`H1Pool`], one per provider):
//! - a connection goes back to the pool only once its answer was read to the end and hyper is
//!   ready for the next request on it; a body dropped mid-way (a cancelled turn, a client gone)
//!   drops its connection;
//! - at most `max_idle_connections` idle connections are kept, used last-in first-out (the
//!   warmest); one idle longer than `pool_idle_timeout` is closed (checked at checkout and by a
//!   reaper task that sleeps until the next expiry and ends when the pool is empty); the reaper
//!   also looks at the idle connections every [`SWEEP`] and closes the ones the server closed;
//! - at checkout an idle connection is polled once without a waker: one the server closed (the
//!   read sees its end) is dropped; and a request that fails on a reused connection before its
//!   response head (the server closed it as we reused it) is sent once more on a fresh one. The
//!   request body is whole in memory (`Bytes`), so the second send is a cheap clone;
//! - new connections: `connect_timeout`, `TCP_NODELAY`.
//!
//! Which upstreams take this path is decided in `transport` (plain `http`, no proxy variable);
//! `https` and proxied upstreams keep reqwest (TLS, HTTP/2, proxies).

use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use engine::model::ModelError;
use futures::Stream;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http1::{self, Connection, SendRequest};
use hyper::header::{HOST, HeaderValue};
use hyper::{HeaderMap, Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use reqwest::Url;
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::config::ClientOptions;
use crate::redact::describe;

/// How often the reaper looks at the idle connections for ones the server closed (a server's
/// keep-alive timeout is often a few seconds: uvicorn's is 5 s), so that they do not wait in
/// `CLOSE_WAIT` for the pool's expiry.
const SWEEP: Duration = Duration::from_secs(2);

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

/// One connection: hyper's request sender and the connection future that does its I/O.
struct Link {
    sender: SendRequest<OnceBody>,
    conn: Connection<TokioIo<TcpStream>, OnceBody>,
    /// The connection future completed (closed, or failed): never poll it again.
    done: bool,
}

impl Link {
    /// Drives the connection's I/O with `cx`; true once it is over.
    fn drive(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.done && Pin::new(&mut self.conn).poll(cx).is_ready() {
            self.done = true;
        }
        self.done
    }

    /// Whether an idle connection can take a request: open, hyper ready for one, and the server
    /// has not closed it (polled once without a waker: a pending read of a closed socket ends).
    fn usable(&mut self) -> bool {
        let mut quiet = Context::from_waker(Waker::noop());
        !self.sender.is_closed() && !self.drive(&mut quiet) && self.sender.is_ready()
    }
}

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

    /// Sends a `POST` of `body` to `url` with `headers` (plus `Host`): the response's status,
    /// headers and body stream. A reused connection that fails before the response head is
    /// replaced by a fresh one, once.
    pub(crate) async fn send(
        &self,
        url: &Url,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Result<(StatusCode, HeaderMap, H1Body), SendFailure> {
        let target = &url[url::Position::BeforePath..url::Position::AfterQuery];
        let uri = Uri::try_from(target).map_err(|err| SendFailure {
            connect: false,
            error: ModelError::Transport(format!("invalid request target: {err}")),
        })?;
        let request = |uri: Uri| {
            let mut request = Request::new(OnceBody(Some(body.clone())));
            *request.method_mut() = Method::POST;
            *request.uri_mut() = uri;
            let fields = request.headers_mut();
            fields.reserve(headers.len() + 1);
            fields.insert(HOST, self.shared.host_header.clone());
            for (name, value) in headers {
                fields.append(name, value.clone());
            }
            request
        };
        let response = match self.shared.checkout() {
            Some(mut link) => match exchange(&mut link, request(uri.clone())).await {
                Ok(response) => Ok((response, link)),
                Err(err) => {
                    tracing::debug!(error = %err, "a reused upstream connection failed; sending on a new one");
                    drop(link);
                    self.fresh(request(uri)).await
                }
            },
            None => self.fresh(request(uri)).await,
        }?;
        let (response, link) = response;
        let (parts, incoming) = response.into_parts();
        let body = H1Body {
            live: Some((incoming, link)),
            pool: Arc::downgrade(&self.shared),
        };
        Ok((parts.status, parts.headers, body))
    }

    /// Sends `request` on a new connection.
    async fn fresh(
        &self,
        request: Request<OnceBody>,
    ) -> Result<(Response<Incoming>, Link), SendFailure> {
        let mut link = self.shared.connect().await?;
        match exchange(&mut link, request).await {
            Ok(response) => Ok((response, link)),
            Err(err) => Err(SendFailure {
                connect: false,
                error: ModelError::Transport(err),
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

    /// Puts a connection whose answer was read to the end back in the pool, if hyper is ready
    /// for another request on it and the pool has room.
    fn checkin(self: &Arc<Self>, mut link: Link) {
        if self.max_idle == 0 {
            return;
        }
        // Let hyper see the end of the message and turn idle (no I/O wait: no waker needed).
        let mut quiet = Context::from_waker(Waker::noop());
        for _ in 0..2 {
            if link.sender.is_ready() || link.drive(&mut quiet) {
                break;
            }
        }
        if link.done || !link.sender.is_ready() {
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
        // The ones the server closed meanwhile (nothing polls an idle connection, so its end
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

    /// A new connection: TCP (with `TCP_NODELAY`) within the connect timeout, then hyper's
    /// HTTP/1.1 handshake (no I/O).
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
        let (sender, conn) = http1::Builder::new()
            .handshake(TokioIo::new(stream))
            .await
            .map_err(|err| SendFailure {
                connect: true,
                error: ModelError::Transport(describe("could not connect", &err)),
            })?;
        Ok(Link {
            sender,
            conn,
            done: false,
        })
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

/// Sends `request` on `link` and waits for the response head, driving the connection in this
/// task. The error text says what failed (no URL in it).
async fn exchange(
    link: &mut Link,
    request: Request<OnceBody>,
) -> Result<Response<Incoming>, String> {
    let mut response = pin!(link.sender.send_request(request));
    poll_fn(|cx| {
        // The response is filled in by the connection, which only runs here: it needs no
        // waker of its own.
        let mut quiet = Context::from_waker(Waker::noop());
        if let Poll::Ready(result) = response.as_mut().poll(&mut quiet) {
            return Poll::Ready(result);
        }
        link.drive(cx);
        response.as_mut().poll(&mut quiet)
    })
    .await
    .map_err(|err| describe("error sending request", &err))
}

/// The body of a response read from an [`H1Pool`] connection: a stream of its data chunks.
/// Reading it drives the connection; once read to the end, the connection goes back to the
/// pool; dropped before, the connection is closed.
pub(crate) struct H1Body {
    /// The body and its connection, until the end or an error.
    live: Option<(Incoming, Link)>,
    pool: Weak<Shared>,
}

impl Stream for H1Body {
    type Item = Result<Bytes, ModelError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let Some((body, link)) = this.live.as_mut() else {
            return Poll::Ready(None);
        };
        // The body channel is filled by the connection, which only runs here: its waker is
        // never needed, and a quiet one spares the task a wake-up of itself per chunk.
        let mut quiet = Context::from_waker(Waker::noop());
        let mut drove = false;
        loop {
            match Pin::new(&mut *body).poll_frame(&mut quiet) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) if !data.is_empty() => return Poll::Ready(Some(Ok(data))),
                    // An empty chunk or trailers: read on.
                    _ => continue,
                },
                Poll::Ready(Some(Err(err))) => {
                    this.live = None;
                    return Poll::Ready(Some(Err(ModelError::Transport(describe(
                        "the response body broke off",
                        &err,
                    )))));
                }
                Poll::Ready(None) => {
                    if let (Some((_, link)), Some(pool)) = (this.live.take(), this.pool.upgrade()) {
                        pool.checkin(link);
                    }
                    return Poll::Ready(None);
                }
                Poll::Pending if drove => return Poll::Pending,
                Poll::Pending => {
                    link.drive(cx);
                    drove = true;
                }
            }
        }
    }
}

/// A request body sent whole (the turn's JSON), as one frame.
pub(crate) struct OnceBody(Option<Bytes>);

impl Body for OnceBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.get_mut().0.take().map(|data| Ok(Frame::data(data))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.0.as_ref().map_or(0, |data| data.len() as u64))
    }
}
