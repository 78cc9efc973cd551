//! The guarded client over real sockets, on loopback only: tiny hand-written HTTP/1.1
//! servers on 127.0.0.1, 127.0.0.2 and ::1 (Linux routes all of 127.0.0.0/8 to `lo`).
//! No test sends anything off loopback: every refused destination is a loopback address
//! that the policy in force does not allow.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use netguard::{Policy, blocked_reason, describe};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A server that answers every request with what `respond(path, own_address)` returns.
struct TestServer {
    addr: SocketAddr,
    /// Connections accepted so far: a refused destination must stay at 0.
    connections: Arc<AtomicUsize>,
}

impl TestServer {
    async fn start<F>(bind: &str, respond: F) -> std::io::Result<TestServer>
    where
        F: Fn(&str, SocketAddr) -> String + Send + Sync + 'static,
    {
        let listener = TcpListener::bind(bind).await?;
        let addr = listener.local_addr()?;
        let connections = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&connections);
        let respond = Arc::new(respond);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                let respond = Arc::clone(&respond);
                tokio::spawn(async move {
                    // A failed exchange shows up as a client error in the test itself.
                    let _ = answer(stream, addr, respond.as_ref()).await;
                });
            }
        });
        Ok(TestServer { addr, connections })
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// Reads one request head and writes the response; `Connection: close` keeps it to one
/// request per connection.
async fn answer<F>(mut stream: TcpStream, own: SocketAddr, respond: &F) -> std::io::Result<()>
where
    F: Fn(&str, SocketAddr) -> String,
{
    let mut head = Vec::new();
    let mut chunk = [0_u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Ok(());
        }
        head.extend_from_slice(&chunk[..read]);
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or("/");
    stream.write_all(respond(path, own).as_bytes()).await?;
    stream.shutdown().await
}

fn ok(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn redirect(location: &str) -> String {
    format!(
        "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
}

fn not_found() -> String {
    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
}

fn policy(allowed: &[&str]) -> Result<Policy, netguard::NetguardError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Policy::with_allowed(&allowed.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
}

fn client(policy: &Policy) -> reqwest::Result<reqwest::Client> {
    policy
        .client_builder()
        .timeout(Duration::from_secs(10))
        .build()
}

#[tokio::test]
async fn strict_policy_refuses_localhost_before_connecting() {
    let server = TestServer::start("127.0.0.1:0", |_, _| ok("hello"))
        .await
        .expect("server");
    let policy = policy(&[]).expect("policy");
    let url = format!("http://localhost:{}/", server.addr.port());
    // check_url alone already refuses the name ...
    assert!(policy.check_url(&url).is_err());
    // ... and so does the client's resolver when the caller skipped check_url.
    let err = client(&policy)
        .expect("client")
        .get(&url)
        .send()
        .await
        .expect_err("localhost must be refused");
    let reason = blocked_reason(&err).expect("refused by the guard");
    assert!(reason.0.contains("localhost"), "{reason}");
    assert_eq!(describe(&err), reason.0);
    assert_eq!(server.connections(), 0);
}

#[tokio::test]
async fn allowed_loopback_is_reached() {
    let server = TestServer::start("127.0.0.1:0", |path, _| ok(&format!("hello from {path}")))
        .await
        .expect("server");
    let policy = policy(&["127.0.0.0/8"]).expect("policy");
    let url = policy
        .check_url(&format!("http://localhost:{}/hi", server.addr.port()))
        .expect("allowed");
    let response = client(&policy)
        .expect("client")
        .get(url)
        .send()
        .await
        .expect("allowed request");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.remote_addr().map(|a| a.ip()),
        Some("127.0.0.1".parse().expect("ip"))
    );
    assert_eq!(response.text().await.expect("body"), "hello from /hi");
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn redirects_to_refused_loopback_forms_are_not_followed() {
    // Only 127.0.0.2 is allowed; the secret lives on 127.0.0.1 (and on ::1 below).
    let secret = TestServer::start("127.0.0.1:0", |_, _| ok("secret"))
        .await
        .expect("secret server");
    let port = secret.addr.port();
    let locations = [
        format!("http://127.0.0.1:{port}/secret"),
        format!("http://2130706433:{port}/secret"),
        format!("http://0x7f000001:{port}/secret"),
        format!("http://0177.0.0.1:{port}/secret"),
        format!("http://127.1:{port}/secret"),
        format!("http://[::ffff:127.0.0.1]:{port}/secret"),
        format!("http://localhost:{port}/secret"),
        format!("http://LOCALHOST.:{port}/secret"),
        format!("http://user:hunter2@127.0.0.2:{port}/secret"),
        format!("ftp://127.0.0.2:{port}/secret"),
    ];
    let policy = policy(&["127.0.0.2/32"]).expect("policy");
    let client = client(&policy).expect("client");
    for location in locations {
        let target = location.clone();
        let front = TestServer::start("127.0.0.2:0", move |_, _| redirect(&target))
            .await
            .expect("front server");
        let url = policy
            .check_url(&front.url("/start"))
            .expect("front allowed");
        let err = client
            .get(url)
            .send()
            .await
            .expect_err("redirect must be refused");
        let reason = blocked_reason(&err).expect("refused by the guard");
        assert!(
            reason.0.starts_with("redirect refused: "),
            "{location}: {reason}"
        );
        assert!(!reason.0.contains("hunter2"), "{reason}");
        assert!(!describe(&err).contains("hunter2"));
        assert_eq!(front.connections(), 1, "{location}");
    }
    assert_eq!(secret.connections(), 0);
}

#[tokio::test]
async fn redirect_to_ipv6_loopback_is_refused_when_only_ipv4_loopback_is_allowed() {
    let Ok(secret) = TestServer::start("[::1]:0", |_, _| ok("secret")).await else {
        // No IPv6 loopback on this host: the check_url tables still cover [::1].
        return;
    };
    let target = secret.url("/secret");
    let front = TestServer::start("127.0.0.1:0", move |_, _| redirect(&target))
        .await
        .expect("front server");
    let policy = policy(&["127.0.0.0/8"]).expect("policy");
    let err = client(&policy)
        .expect("client")
        .get(front.url("/"))
        .send()
        .await
        .expect_err("redirect to ::1 must be refused");
    assert_eq!(
        blocked_reason(&err).map(|b| b.0),
        Some("redirect refused: ::1 is a loopback address".to_owned())
    );
    assert_eq!(secret.connections(), 0);
}

#[tokio::test]
async fn allowed_redirects_are_followed_up_to_five_hops() {
    // /hop/N/LIMIT redirects to /hop/N+1/LIMIT until N reaches LIMIT.
    let server = TestServer::start("127.0.0.1:0", |path, own| {
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match parts.as_slice() {
            ["hop", n, limit] => match (n.parse::<u32>(), limit.parse::<u32>()) {
                (Ok(n), Ok(limit)) if n < limit => {
                    redirect(&format!("http://{own}/hop/{}/{limit}", n + 1))
                }
                (Ok(n), Ok(_)) => ok(&format!("arrived after {n}")),
                _ => not_found(),
            },
            _ => not_found(),
        }
    })
    .await
    .expect("server");
    let policy = policy(&["127.0.0.0/8"]).expect("policy");
    let client = client(&policy).expect("client");

    let response = client
        .get(server.url("/hop/0/5"))
        .send()
        .await
        .expect("five redirects are fine");
    assert_eq!(response.text().await.expect("body"), "arrived after 5");
    assert_eq!(server.connections(), 6);

    let err = client
        .get(server.url("/hop/0/6"))
        .send()
        .await
        .expect_err("six redirects are too many");
    assert_eq!(
        blocked_reason(&err).map(|b| b.0),
        Some("too many redirects (more than 5)".to_owned())
    );
    // The first request and five followed hops; the sixth hop is never requested.
    assert_eq!(server.connections(), 6 + 6);
}

#[tokio::test]
async fn describe_reports_connection_refused_without_the_url() {
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        listener.local_addr().expect("addr")
    };
    let policy = policy(&["127.0.0.0/8"]).expect("policy");
    let err = client(&policy)
        .expect("client")
        .get(format!("http://{closed}/path?token=s3cr3t"))
        .send()
        .await
        .expect_err("nothing listens there");
    assert_eq!(blocked_reason(&err), None);
    assert_eq!(describe(&err), "connection refused");
}

#[tokio::test]
async fn describe_names_the_status_of_an_error_response() {
    let server = TestServer::start("127.0.0.1:0", |_, _| not_found())
        .await
        .expect("server");
    let policy = policy(&["127.0.0.0/8"]).expect("policy");
    let err = client(&policy)
        .expect("client")
        .get(server.url("/missing?token=s3cr3t"))
        .header("authorization", "Bearer s3cr3t")
        .send()
        .await
        .expect("response")
        .error_for_status()
        .expect_err("404");
    assert_eq!(describe(&err), "HTTP status 404 Not Found");
    assert_eq!(blocked_reason(&err), None);
}
