//! `Policy::fetch` and `Policy::send_capped` over real sockets on loopback: what a
//! response turns into, the body cap, the deadline, the `remote_addr` check and the
//! errors. The hostile URLs themselves are in `hostile.rs`.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a policy that cannot be built is a broken test"
)]

mod common;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{Body, FRONT_IP, Reply, SECRET_IP, Server, pattern};
use netguard::{FetchError, FetchLimits, Policy};

const MIB: usize = 1024 * 1024;

fn loopback_policy() -> Policy {
    Policy::with_allowed(&["127.0.0.0/8".to_owned()]).unwrap()
}

fn limits(max_bytes: usize, total_timeout: Duration) -> FetchLimits {
    FetchLimits {
        max_bytes,
        total_timeout,
    }
}

fn generous() -> FetchLimits {
    limits(MIB, Duration::from_secs(20))
}

#[tokio::test]
async fn a_response_becomes_fetched() {
    let server = Server::start(SECRET_IP, 0, |request, own| match request.path.as_str() {
        "/start" => Reply::redirect(302, &format!("http://{own}/page?x=1")),
        "/page?x=1" => Reply {
            status: 200,
            headers: vec![(
                "Content-Type".to_owned(),
                "text/html; charset=utf-8".to_owned(),
            )],
            body: Body::Fixed(b"<p>hello</p>".to_vec()),
        },
        _ => Reply::status(404, "no such page"),
    })
    .await
    .unwrap();
    let policy = loopback_policy();
    let client = common::client(&policy).unwrap();

    let page = policy
        .fetch(&client, &server.url("/start"), &generous())
        .await
        .unwrap();
    assert_eq!(page.status, 200);
    assert_eq!(page.final_url.as_str(), server.url("/page?x=1"));
    assert_eq!(
        page.content_type.as_deref(),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(page.body.as_ref(), b"<p>hello</p>");
    assert!(!page.truncated);
    assert_eq!(page.remote_addr, Some(server.addr));

    // Any status is a response, with its body.
    let missing = policy
        .fetch(&client, &server.url("/missing"), &generous())
        .await
        .unwrap();
    assert_eq!(missing.status, 404);
    assert_eq!(missing.body.as_ref(), b"no such page");
    assert_eq!(missing.content_type, None);
}

#[tokio::test]
async fn an_oversize_body_is_cut_at_max_bytes() {
    let server = Server::start(SECRET_IP, 0, |request, _| match request.path.as_str() {
        "/sized" => Reply::body(Body::Large { len: 10 * MIB }),
        _ => Reply::body(Body::LargeChunked { len: 10 * MIB }),
    })
    .await
    .unwrap();
    let policy = loopback_policy();
    let client = common::client(&policy).unwrap();
    for path in ["/sized", "/chunked"] {
        let page = policy
            .fetch(&client, &server.url(path), &generous())
            .await
            .unwrap();
        assert!(page.truncated, "{path}");
        assert_eq!(page.body.len(), MIB, "{path}");
        let expected: Vec<u8> = (0..MIB).map(pattern).collect();
        assert!(
            page.body.as_ref() == expected.as_slice(),
            "{path}: wrong bytes"
        );
    }
}

#[tokio::test]
async fn the_client_stops_reading_at_max_bytes() {
    // A 256 MiB body: had the client read it all, the server would have written it all.
    // Stopping at 1 MiB closes the connection, and the server's writes then fail once
    // the kernel buffers on both sides are full (tens of MiB at most on loopback).
    let server = Server::start(SECRET_IP, 0, |_, _| {
        Reply::body(Body::LargeChunked { len: 256 * MIB })
    })
    .await
    .unwrap();
    let policy = loopback_policy();
    let client = common::client(&policy).unwrap();
    let page = policy
        .fetch(&client, &server.url("/"), &generous())
        .await
        .unwrap();
    assert!(page.truncated);
    assert_eq!(page.body.len(), MIB);
    let stopped = server
        .wait_for(Duration::from_secs(20), |stats| {
            stats.bodies_aborted.load(Ordering::SeqCst)
                + stats.bodies_completed.load(Ordering::SeqCst)
                > 0
        })
        .await;
    assert!(stopped, "the server is still writing");
    let written = server.stats.body_bytes_written.load(Ordering::SeqCst);
    assert_eq!(server.stats.bodies_completed.load(Ordering::SeqCst), 0);
    assert!(written < 64 * MIB, "the server wrote {written} bytes");
}

#[tokio::test]
async fn truncated_means_there_was_more() {
    let server = Server::start(SECRET_IP, 0, |request, _| {
        let len = request.path.trim_start_matches('/').parse().unwrap_or(0);
        match len % 2 {
            // Odd lengths without a Content-Length, even ones with.
            0 => Reply::body(Body::Large { len }),
            _ => Reply::body(Body::LargeChunked { len }),
        }
    })
    .await
    .unwrap();
    let policy = loopback_policy();
    let client = common::client(&policy).unwrap();
    let cap = 1000;
    for (len, truncated) in [
        (0, false),
        (999, false),
        (1000, false),
        (1001, true),
        (1002, true),
        (200_000, true),
        (200_001, true),
    ] {
        let page = policy
            .fetch(
                &client,
                &server.url(&format!("/{len}")),
                &limits(cap, Duration::from_secs(20)),
            )
            .await
            .unwrap();
        assert_eq!(page.truncated, truncated, "{len}");
        assert_eq!(page.body.len(), len.min(cap), "{len}");
    }
    // A cap of zero keeps nothing, and still says whether there was something.
    let zero = limits(0, Duration::from_secs(20));
    let empty = policy
        .fetch(&client, &server.url("/0"), &zero)
        .await
        .unwrap();
    assert!(!empty.truncated);
    let some = policy
        .fetch(&client, &server.url("/11"), &zero)
        .await
        .unwrap();
    assert!(some.truncated);
    assert!(some.body.is_empty());
}

#[tokio::test]
async fn a_trickling_body_times_out_within_the_total_timeout() {
    let server = Server::start(SECRET_IP, 0, |request, _| match request.path.as_str() {
        "/trickle" => Reply::body(Body::Trickle {
            len: 10_000,
            every: Duration::from_millis(50),
        }),
        _ => Reply::body(Body::Stall { announced: 100 }),
    })
    .await
    .unwrap();
    let policy = loopback_policy();
    let client = common::client(&policy).unwrap();
    let total = Duration::from_millis(800);
    for path in ["/trickle", "/stall"] {
        let started = Instant::now();
        let result = policy
            .fetch(&client, &server.url(path), &limits(MIB, total))
            .await;
        let took = started.elapsed();
        match result {
            Err(FetchError::Timeout(limit)) => assert_eq!(limit, total, "{path}"),
            other => panic!("{path}: expected a timeout, got {other:?}"),
        }
        // Generous bounds: the point is that the deadline covers the body.
        assert!(took >= total, "{path}: returned after {took:?}");
        assert!(took < total + Duration::from_secs(5), "{path}: {took:?}");
    }
    // The trickle ended when the client went away, long before its 500 s.
    let ended = server
        .wait_for(Duration::from_secs(10), |stats| {
            stats.bodies_aborted.load(Ordering::SeqCst) >= 1
        })
        .await;
    assert!(ended, "the trickling server is still writing");
    assert!(server.stats.body_bytes_written.load(Ordering::SeqCst) < 1000);
}

#[tokio::test]
async fn a_refused_remote_addr_is_blocked_before_the_body_is_read() {
    // A resolver bypass, simulated: the client's own policy lets 127.0.0.1 through, the
    // fetching policy does not. Only the remote_addr check stands in the way, and it
    // must refuse without reading the body: the server announces one and never sends it,
    // so reading it would end in a timeout, not in Blocked.
    let server = Server::start(SECRET_IP, 0, |_, _| {
        Reply::body(Body::Stall { announced: 100 })
    })
    .await
    .unwrap();
    let hosts = HashMap::from([("bypass.example".to_owned(), vec![SECRET_IP])]);
    let wide = loopback_policy().with_hosts_override(hosts.clone());
    let narrow = Policy::with_allowed(&["127.0.0.2/32".to_owned()])
        .unwrap()
        .with_hosts_override(hosts);
    let wide_client = common::client(&wide).unwrap();
    let url = format!("http://bypass.example:{}/", server.port());

    let started = Instant::now();
    let result = narrow
        .fetch(&wide_client, &url, &limits(MIB, Duration::from_secs(10)))
        .await;
    match result {
        Err(FetchError::Blocked(reason)) => assert_eq!(
            reason.0,
            "the response came from a refused address: 127.0.0.1 is a loopback address"
        ),
        other => panic!("expected Blocked, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(server.connections(), 1);

    // With its own client, the narrow policy never connects at all.
    let narrow_client = common::client(&narrow).unwrap();
    let result = narrow.fetch(&narrow_client, &url, &generous()).await;
    assert!(matches!(result, Err(FetchError::Blocked(_))), "{result:?}");
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn send_capped_sends_the_callers_request() {
    let server = Server::start(FRONT_IP, 0, |request, _| {
        let content_type = request
            .headers
            .iter()
            .find(|(name, _)| name == "content-type")
            .map(|(_, value)| value.clone())
            .unwrap_or_default();
        let echo = format!(
            "{} {} {content_type} {}",
            request.method,
            request.path,
            String::from_utf8_lossy(&request.body)
        );
        Reply::ok(echo)
    })
    .await
    .unwrap();
    let policy = Policy::with_allowed(&["127.0.0.2/32".to_owned()]).unwrap();
    let client = common::client(&policy).unwrap();
    let request = client
        .post(server.url("/search"))
        .header("content-type", "application/json")
        .body(r#"{"q":"rust"}"#);
    let page = policy.send_capped(request, &generous()).await.unwrap();
    assert_eq!(
        page.body.as_ref(),
        br#"POST /search application/json {"q":"rust"}"#
    );
    let request = client.post(server.url("/search")).body("x".repeat(5000));
    let capped = policy
        .send_capped(request, &limits(10, Duration::from_secs(20)))
        .await
        .unwrap();
    assert!(capped.truncated);
    assert_eq!(capped.body.as_ref(), b"POST /sear");
}

#[tokio::test]
async fn send_capped_checks_the_request_url_first() {
    let secret = Server::start(SECRET_IP, 0, |_, _| Reply::ok("secret"))
        .await
        .unwrap();
    let policy = Policy::with_allowed(&["127.0.0.2/32".to_owned()]).unwrap();
    let client = common::client(&policy).unwrap();
    let p = secret.port();
    for url in [
        format!("http://127.0.0.1:{p}/"),
        format!("http://2130706433:{p}/"),
        format!("http://[::ffff:127.0.0.1]:{p}/"),
        format!("http://localhost:{p}/"),
        // reqwest moves the userinfo into a header; the host left is still checked.
        format!("http://127.0.0.2@127.0.0.1:{p}/"),
    ] {
        let result = policy
            .send_capped(client.post(&url).body("{}"), &generous())
            .await;
        assert!(
            matches!(result, Err(FetchError::Blocked(_))),
            "{url}: {result:?}"
        );
    }
    // A URL reqwest cannot parse fails without a request, and without echoing it.
    let result = policy
        .send_capped(client.get("http://exa mple.com/?token=s3cr3t"), &generous())
        .await;
    match result {
        Err(FetchError::Http(message)) => assert!(!message.contains("s3cr3t"), "{message}"),
        other => panic!("expected an Http error, got {other:?}"),
    }
    assert_eq!(secret.connections(), 0);
}

#[tokio::test]
async fn other_failures_are_described_without_the_url() {
    let closed = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap()
    };
    let policy = loopback_policy();
    let client = common::client(&policy).unwrap();
    let url = format!("http://{closed}/path?token=s3cr3t");
    let err = policy
        .fetch(&client, &url, &generous())
        .await
        .expect_err("nothing listens there");
    assert!(
        matches!(&err, FetchError::Http(m) if m == "connection refused"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "connection refused");

    // A name the hosts table does not know resolves to nothing (no DNS is asked).
    let table = policy.with_hosts_override(HashMap::new());
    let client = common::client(&table).unwrap();
    let err = table
        .fetch(&client, "http://unknown.example/?token=s3cr3t", &generous())
        .await
        .expect_err("no such name");
    assert!(
        matches!(&err, FetchError::Http(m) if m.contains("no addresses found for unknown.example")),
        "{err:?}"
    );
    assert!(!err.to_string().contains("s3cr3t"));
}

#[test]
fn errors_read_well() {
    let blocked = FetchError::Blocked(netguard::Blocked(
        "127.0.0.1 is a loopback address".to_owned(),
    ));
    assert_eq!(
        blocked.to_string(),
        "refused by the network guard: 127.0.0.1 is a loopback address"
    );
    assert_eq!(
        FetchError::Timeout(Duration::from_millis(1500)).to_string(),
        "the request did not finish within 1.5s"
    );
    assert_eq!(
        FetchError::Http("connection refused".to_owned()).to_string(),
        "connection refused"
    );
}
