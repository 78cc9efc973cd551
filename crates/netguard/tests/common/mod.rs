//! A tiny HTTP/1.1 test server on loopback, and the two-server fixture of the hostile
//! suite. Nothing here listens or connects off loopback.

#![allow(
    dead_code,
    reason = "each test file uses a different part of this harness"
)]

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use netguard::Policy;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The loopback address that plays the public internet: the only one the fixture
/// policy allows.
pub const FRONT_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
/// Where the secret lives (and on `::1` too, where this host has IPv6 loopback).
pub const SECRET_IP: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// How a response body is written.
#[derive(Debug, Clone)]
pub enum Body {
    /// Exactly these bytes, with a Content-Length.
    Fixed(Vec<u8>),
    /// `len` bytes of [`pattern`], with a Content-Length, written 64 KiB at a time.
    Large { len: usize },
    /// `len` bytes of [`pattern`] without a Content-Length (chunked), 64 KiB chunks.
    LargeChunked { len: usize },
    /// A Content-Length of `len`, then one byte every `every`.
    Trickle { len: usize, every: Duration },
    /// A Content-Length of `announced`, then nothing for a minute.
    Stall { announced: usize },
}

/// A response: status, extra headers, body.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl Reply {
    pub fn ok(body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status: 200,
            headers: vec![("Content-Type".to_owned(), "text/plain".to_owned())],
            body: Body::Fixed(body.into()),
        }
    }

    pub fn status(status: u16, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Body::Fixed(body.into()),
        }
    }

    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply {
            status,
            headers: vec![("Location".to_owned(), location.to_owned())],
            body: Body::Fixed(Vec::new()),
        }
    }

    pub fn body(body: Body) -> Reply {
        Reply {
            status: 200,
            headers: vec![(
                "Content-Type".to_owned(),
                "application/octet-stream".to_owned(),
            )],
            body,
        }
    }
}

type Handler = dyn Fn(&Request, SocketAddr) -> Reply + Send + Sync;

/// What a server observed.
#[derive(Debug, Default)]
pub struct Stats {
    /// Connections accepted, on every address the server listens on.
    pub connections: AtomicUsize,
    /// Body bytes the kernel accepted from the server (all connections).
    pub body_bytes_written: AtomicUsize,
    /// Bodies written to the end.
    pub bodies_completed: AtomicUsize,
    /// Bodies cut short because the peer went away.
    pub bodies_aborted: AtomicUsize,
    /// Whether a request was received at all (head parsed).
    pub saw_request: AtomicBool,
}

/// A server listening on one port of one or more loopback addresses.
pub struct Server {
    /// The first address it listens on.
    pub addr: SocketAddr,
    pub stats: Arc<Stats>,
    handler: Arc<Handler>,
}

impl Server {
    /// Listens on `ip:port` (port 0: any) and serves with `handler`.
    pub async fn start<F>(ip: IpAddr, port: u16, handler: F) -> io::Result<Server>
    where
        F: Fn(&Request, SocketAddr) -> Reply + Send + Sync + 'static,
    {
        Server::start_shared(ip, port, Arc::new(handler)).await
    }

    async fn start_shared(ip: IpAddr, port: u16, handler: Arc<Handler>) -> io::Result<Server> {
        let mut server = Server {
            addr: SocketAddr::new(ip, port),
            stats: Arc::new(Stats::default()),
            handler,
        };
        server.addr = server.listen(SocketAddr::new(ip, port)).await?;
        Ok(server)
    }

    /// Also listens on `ip`, at the same port, with the same handler and stats.
    pub async fn also_on(&self, ip: IpAddr) -> io::Result<()> {
        self.listen(SocketAddr::new(ip, self.port()))
            .await
            .map(|_| ())
    }

    async fn listen(&self, addr: SocketAddr) -> io::Result<SocketAddr> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let stats = Arc::clone(&self.stats);
        let handler = Arc::clone(&self.handler);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                stats.connections.fetch_add(1, Ordering::SeqCst);
                let stats = Arc::clone(&stats);
                let handler = Arc::clone(&handler);
                tokio::spawn(async move {
                    // A failed exchange shows up on the client side of the test.
                    let _ = serve(stream, addr, handler.as_ref(), &stats).await;
                });
            }
        });
        Ok(addr)
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn connections(&self) -> usize {
        self.stats.connections.load(Ordering::SeqCst)
    }

    /// Waits (at most `limit`) until `done` holds for the stats.
    pub async fn wait_for(&self, limit: Duration, done: impl Fn(&Stats) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if done(&self.stats) {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Byte `i` of every generated body.
pub fn pattern(i: usize) -> u8 {
    (i % 251) as u8
}

async fn serve(
    mut stream: TcpStream,
    own: SocketAddr,
    handler: &Handler,
    stats: &Stats,
) -> io::Result<()> {
    let Some(request) = read_request(&mut stream).await? else {
        return Ok(());
    };
    stats.saw_request.store(true, Ordering::SeqCst);
    let reply = handler(&request, own);
    let reason = match reply.status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        404 => "Not Found",
        _ => "Whatever",
    };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\nConnection: close\r\n",
        reply.status
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    match &reply.body {
        Body::Fixed(bytes) => head.push_str(&format!("Content-Length: {}\r\n", bytes.len())),
        Body::Large { len } | Body::Trickle { len, .. } => {
            head.push_str(&format!("Content-Length: {len}\r\n"));
        }
        Body::LargeChunked { .. } => head.push_str("Transfer-Encoding: chunked\r\n"),
        Body::Stall { announced } => head.push_str(&format!("Content-Length: {announced}\r\n")),
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    let written = write_body(&mut stream, &reply.body, stats).await;
    match written {
        Ok(()) => {
            stats.bodies_completed.fetch_add(1, Ordering::SeqCst);
            stream.shutdown().await
        }
        Err(err) => {
            stats.bodies_aborted.fetch_add(1, Ordering::SeqCst);
            Err(err)
        }
    }
}

async fn write_body(stream: &mut TcpStream, body: &Body, stats: &Stats) -> io::Result<()> {
    const PIECE: usize = 64 * 1024;
    let count = |n: usize| stats.body_bytes_written.fetch_add(n, Ordering::SeqCst);
    match body {
        Body::Fixed(bytes) => {
            stream.write_all(bytes).await?;
            count(bytes.len());
        }
        Body::Large { len } | Body::LargeChunked { len } => {
            let chunked = matches!(body, Body::LargeChunked { .. });
            let mut sent = 0;
            while sent < *len {
                let n = PIECE.min(len - sent);
                let piece: Vec<u8> = (sent..sent + n).map(pattern).collect();
                if chunked {
                    stream.write_all(format!("{n:x}\r\n").as_bytes()).await?;
                }
                stream.write_all(&piece).await?;
                if chunked {
                    stream.write_all(b"\r\n").await?;
                }
                count(n);
                sent += n;
            }
            if chunked {
                stream.write_all(b"0\r\n\r\n").await?;
            }
        }
        Body::Trickle { len, every } => {
            for i in 0..*len {
                tokio::time::sleep(*every).await;
                stream.write_all(&[pattern(i)]).await?;
                stream.flush().await?;
                count(1);
            }
        }
        Body::Stall { .. } => {
            tokio::time::sleep(Duration::from_secs(60)).await;
            return Err(io::Error::other("stalled to the end"));
        }
    }
    Ok(())
}

/// Reads the request head and a Content-Length body; `None` when the peer closed first.
async fn read_request(stream: &mut TcpStream) -> io::Result<Option<Request>> {
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if buf.len() > 64 * 1024 {
            return Err(io::Error::other("request head too long"));
        }
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split_whitespace();
    let method = first.next().unwrap_or_default().to_owned();
    let path = first.next().unwrap_or("/").to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..read]);
    }
    Ok(Some(Request {
        method,
        path,
        headers,
        body,
    }))
}

/// A string no test could produce by accident.
pub fn unique_secret() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("S3CRET-{}-{nanos:x}-do-not-leak", std::process::id())
}

/// The hostile suite's two servers, on one port:
/// - `secret` on 127.0.0.1 (and `::1` when this host has it), serving [`Fixture::secret`]
///   to whoever connects; the policy never allows it, so it must see no connection;
/// - `front` on 127.0.0.2, the "public" server the policy allows, answering by the
///   `front` handler (redirects, mostly).
///
/// Sharing the port means a redirect or a resolved name that only swaps the address
/// would reach the secret.
pub struct Fixture {
    pub secret: Server,
    pub front: Server,
    pub secret_text: String,
    /// Whether the secret also listens on `[::1]` at the same port.
    pub secret_on_ipv6: bool,
}

impl Fixture {
    pub async fn start<F>(front: F) -> io::Result<Fixture>
    where
        F: Fn(&Request, SocketAddr) -> Reply + Send + Sync + 'static,
    {
        install_crypto();
        let secret_text = unique_secret();
        let text = secret_text.clone();
        let secret_handler: Arc<Handler> =
            Arc::new(move |_: &Request, _: SocketAddr| Reply::ok(text.clone()));
        let front: Arc<Handler> = Arc::new(front);
        let mut last_err = io::Error::other("no attempt");
        // A port free on 127.0.0.1 is almost always free on 127.0.0.2 too; try a few.
        for _ in 0..20 {
            let secret = Server::start_shared(SECRET_IP, 0, Arc::clone(&secret_handler)).await?;
            match Server::start_shared(FRONT_IP, secret.port(), Arc::clone(&front)).await {
                Ok(front) => {
                    let ipv6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
                    let secret_on_ipv6 = secret.also_on(ipv6).await.is_ok();
                    return Ok(Fixture {
                        secret,
                        front,
                        secret_text,
                        secret_on_ipv6,
                    });
                }
                Err(err) => last_err = err,
            }
        }
        Err(last_err)
    }

    pub fn port(&self) -> u16 {
        self.secret.port()
    }

    /// The policy of the hostile suite: only the front's address is allowed, and a
    /// hosts table stands in for DNS (see [`hosts`]).
    pub fn policy(&self) -> Result<Policy, netguard::NetguardError> {
        Ok(Policy::with_allowed(&["127.0.0.2/32".to_owned()])?.with_hosts_override(hosts()))
    }
}

/// The names the hostile suite resolves, without DNS.
pub fn hosts() -> HashMap<String, Vec<IpAddr>> {
    let ip = |s: &str| s.parse::<IpAddr>().ok();
    let list = |items: &[&str]| items.iter().filter_map(|s| ip(s)).collect::<Vec<_>>();
    HashMap::from([
        ("front.example".to_owned(), list(&["127.0.0.2"])),
        ("evil.example".to_owned(), list(&["127.0.0.1"])),
        ("evil6.example".to_owned(), list(&["::1"])),
        (
            "evil-mapped.example".to_owned(),
            list(&["::ffff:127.0.0.1"]),
        ),
        (
            "evil-all.example".to_owned(),
            list(&["127.0.0.1", "::1", "169.254.169.254", "10.0.0.1", "0.0.0.0"]),
        ),
        ("metadata.example".to_owned(), list(&["169.254.169.254"])),
        // The refused address first: only the filter keeps the client off it.
        (
            "mixed.example".to_owned(),
            list(&["127.0.0.1", "::1", "127.0.0.2"]),
        ),
    ])
}

/// reqwest is built without a default rustls provider; the binary installs one.
pub fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client from the policy's own builder, as production code builds it.
pub fn client(policy: &Policy) -> reqwest::Result<reqwest::Client> {
    install_crypto();
    policy.client_builder().build()
}
