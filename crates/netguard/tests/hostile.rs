//! The hostile suite, end to end over real sockets on loopback: a secret server on
//! 127.0.0.1 (and `::1`) serves a unique secret string; the "public" front server on
//! 127.0.0.2, at the same port, is the only address the policy allows. Every hostile URL
//! and every hostile redirect must end in `FetchError::Blocked`, with the secret server
//! seeing no connection at all and the secret in no error message.
//!
//! Names (`evil.example`, ...) resolve through the policy's test-only hosts table, so no
//! DNS query leaves the machine; nothing here sends a packet off loopback (the metadata
//! address 169.254.169.254 is refused by the policy before any connect, which the cases
//! below check separately).

mod common;

use std::time::Duration;

use common::{Fixture, Reply, Request};
use netguard::{FetchError, FetchLimits};

/// How a hostile case reaches the guarded fetch.
#[derive(Debug, Clone)]
enum Case {
    /// `fetch` of this URL.
    Direct(String),
    /// `fetch` of a front URL that answers `status` with this `Location`.
    Redirect { status: u16, location: String },
    /// `fetch` of a front URL that redirects `hops` times within the front (relative
    /// Locations), then to `location`.
    Chain { hops: u32, location: String },
}

/// Every hostile form, given the shared port `p`.
fn cases(p: u16) -> Vec<(String, Case)> {
    let mut cases: Vec<(String, Case)> = Vec::new();
    let mut direct = |label: &str, url: String| {
        cases.push((format!("direct {label}"), Case::Direct(url)));
    };
    // IP literals in every notation, all meaning the secret server.
    direct("dotted", format!("http://127.0.0.1:{p}/secret"));
    direct("decimal", format!("http://2130706433:{p}/secret"));
    direct("hex", format!("http://0x7f000001:{p}/secret"));
    direct("dotted hex", format!("http://0x7f.0x0.0x0.0x1:{p}/secret"));
    direct("mixed hex", format!("http://0x7f.1:{p}/secret"));
    direct("octal", format!("http://0177.0.0.1:{p}/secret"));
    direct("octal integer", format!("http://017700000001:{p}/secret"));
    direct("short 127.1", format!("http://127.1:{p}/secret"));
    direct("short 127.0.1", format!("http://127.0.1:{p}/secret"));
    direct(
        "percent-encoded",
        format!("http://%31%32%37.0.0.1:{p}/secret"),
    );
    direct("https", format!("https://127.0.0.1:{p}/secret"));
    direct(
        "ipv4-mapped",
        format!("http://[::ffff:127.0.0.1]:{p}/secret"),
    );
    direct(
        "ipv4-mapped hex",
        format!("http://[::ffff:7f00:1]:{p}/secret"),
    );
    direct(
        "ipv4-compatible",
        format!("http://[::127.0.0.1]:{p}/secret"),
    );
    direct(
        "ipv4-translated",
        format!("http://[::ffff:0:7f00:1]:{p}/secret"),
    );
    direct("nat64", format!("http://[64:ff9b::7f00:1]:{p}/secret"));
    direct("6to4", format!("http://[2002:7f00:1::]:{p}/secret"));
    direct("ipv6 loopback", format!("http://[::1]:{p}/secret"));
    direct(
        "ipv6 loopback long",
        format!("http://[0:0:0:0:0:0:0:1]:{p}/secret"),
    );
    direct("0.0.0.0", format!("http://0.0.0.0:{p}/secret"));
    direct("0", format!("http://0:{p}/secret"));
    direct("[::]", format!("http://[::]:{p}/secret"));
    // Loopback names, refused without DNS.
    direct("localhost", format!("http://localhost:{p}/secret"));
    direct("LOCALHOST.", format!("http://LOCALHOST.:{p}/secret"));
    direct("foo.localhost", format!("http://foo.localhost:{p}/secret"));
    direct(
        "localhost.localdomain",
        format!("http://localhost.localdomain:{p}/secret"),
    );
    // Userinfo and parser tricks.
    direct(
        "userinfo host",
        format!("http://127.0.0.2@127.0.0.1:{p}/secret"),
    );
    direct(
        "userinfo port",
        format!("http://127.0.0.2:{p}@127.0.0.1:{p}/secret"),
    );
    direct(
        "backslash",
        format!("http://127.0.0.1:{p}\\@127.0.0.2:{p}/secret"),
    );
    direct(
        "credentials to allowed host",
        format!("http://user:pw@127.0.0.2:{p}/ok"),
    );
    // Names that resolve to refused addresses (the test hosts table).
    direct(
        "name to 127.0.0.1",
        format!("http://evil.example:{p}/secret"),
    );
    direct("name to ::1", format!("http://evil6.example:{p}/secret"));
    direct(
        "name to mapped",
        format!("http://evil-mapped.example:{p}/secret"),
    );
    direct(
        "name to all refused",
        format!("http://evil-all.example:{p}/secret"),
    );
    direct(
        "name to metadata",
        "http://metadata.example/latest/meta-data/".to_owned(),
    );
    // Metadata and schemes.
    direct(
        "metadata",
        "http://169.254.169.254/latest/meta-data/".to_owned(),
    );
    direct(
        "metadata decimal",
        "http://2852039166/latest/meta-data/".to_owned(),
    );
    direct(
        "metadata mapped",
        "http://[::ffff:a9fe:a9fe]/latest/meta-data/".to_owned(),
    );
    direct("file", "file:///etc/passwd".to_owned());
    direct("gopher", format!("gopher://127.0.0.2:{p}/_GET%20/secret"));
    direct("ftp", format!("ftp://127.0.0.2:{p}/secret"));

    let mut redirect = |label: &str, status: u16, location: String| {
        cases.push((
            format!("redirect {status} {label}"),
            Case::Redirect { status, location },
        ));
    };
    for status in [301, 302, 303, 307, 308] {
        redirect("absolute", status, format!("http://127.0.0.1:{p}/secret"));
        redirect("scheme-relative", status, format!("//127.0.0.1:{p}/secret"));
    }
    redirect(
        "backslash-relative",
        302,
        format!("/\\127.0.0.1:{p}/secret"),
    );
    redirect("double-backslash", 302, format!("\\\\127.0.0.1:{p}/secret"));
    for (label, host) in [
        ("decimal", "2130706433".to_owned()),
        ("hex", "0x7f000001".to_owned()),
        ("octal", "0177.0.0.1".to_owned()),
        ("short", "127.1".to_owned()),
        ("ipv4-mapped", "[::ffff:127.0.0.1]".to_owned()),
        ("ipv4-mapped hex", "[::ffff:7f00:1]".to_owned()),
        ("nat64", "[64:ff9b::7f00:1]".to_owned()),
        ("ipv6 loopback", "[::1]".to_owned()),
        ("0.0.0.0", "0.0.0.0".to_owned()),
        ("localhost", "localhost".to_owned()),
        ("LOCALHOST.", "LOCALHOST.".to_owned()),
        ("foo.localhost", "foo.localhost".to_owned()),
        ("name to 127.0.0.1", "evil.example".to_owned()),
        ("name to mapped", "evil-mapped.example".to_owned()),
        ("name to all refused", "evil-all.example".to_owned()),
    ] {
        redirect(label, 302, format!("http://{host}:{p}/secret"));
    }
    redirect("https", 307, format!("https://127.0.0.1:{p}/secret"));
    redirect(
        "metadata",
        307,
        "http://169.254.169.254/latest/meta-data/".to_owned(),
    );
    redirect(
        "metadata",
        301,
        "http://[::ffff:169.254.169.254]/".to_owned(),
    );
    redirect("metadata name", 308, "http://metadata.example/".to_owned());
    redirect("to file", 302, "file:///etc/passwd".to_owned());
    redirect(
        "to gopher",
        302,
        format!("gopher://127.0.0.2:{p}/_GET%20/secret"),
    );
    redirect("to ftp", 301, format!("ftp://127.0.0.2:{p}/secret"));
    redirect("to data", 302, "data:text/plain,hello".to_owned());
    redirect(
        "userinfo host",
        302,
        format!("http://127.0.0.2@127.0.0.1:{p}/secret"),
    );
    redirect(
        "credentials",
        303,
        format!("http://user:pw@127.0.0.2:{p}/ok"),
    );

    // Chains: six hops are one too many, whatever comes next; a shorter chain through
    // allowed hops still ends at a refused one.
    cases.push((
        "chain of 6 to an allowed page".to_owned(),
        Case::Chain {
            hops: 6,
            location: "/ok".to_owned(),
        },
    ));
    cases.push((
        "chain of 6 to the secret".to_owned(),
        Case::Chain {
            hops: 6,
            location: format!("http://127.0.0.1:{p}/secret"),
        },
    ));
    cases.push((
        "chain of 3 to the secret".to_owned(),
        Case::Chain {
            hops: 3,
            location: format!("http://2130706433:{p}/secret"),
        },
    ));
    cases.push((
        "chain of 4 to a name to 127.0.0.1".to_owned(),
        Case::Chain {
            hops: 4,
            location: format!("http://evil.example:{p}/secret"),
        },
    ));
    cases
}

/// The front server: `/case/N` answers the redirect of case N; `/chain/I/N` redirects
/// within the front until I reaches the hops of case N, then to its location; `/ok` is
/// a plain page.
fn front(cases: &[(String, Case)], request: &Request) -> Reply {
    let parts: Vec<&str> = request.path.trim_start_matches('/').split('/').collect();
    let case = |n: &str| n.parse::<usize>().ok().and_then(|n| cases.get(n));
    {
        match parts.as_slice() {
            ["ok"] => Reply::ok("front page"),
            ["case", n] => match case(n) {
                Some((_, Case::Redirect { status, location })) => {
                    Reply::redirect(*status, location)
                }
                _ => Reply::status(404, ""),
            },
            ["chain", i, n] => match (i.parse::<u32>(), case(n)) {
                (Ok(i), Some((_, Case::Chain { hops, location }))) => {
                    if i + 1 < *hops {
                        Reply::redirect(302, &format!("/chain/{}/{n}", i + 1))
                    } else {
                        Reply::redirect(302, location)
                    }
                }
                _ => Reply::status(404, ""),
            },
            _ => Reply::status(404, ""),
        }
    }
}

fn limits() -> FetchLimits {
    FetchLimits {
        max_bytes: 64 * 1024,
        total_timeout: Duration::from_secs(10),
    }
}

#[tokio::test]
async fn every_hostile_form_is_blocked_and_the_secret_server_sees_nothing() {
    let probe_port = 1; // only the case count matters here
    let count = cases(probe_port).len();
    assert!(count >= 40, "only {count} hostile cases");

    // The cases name the port, and the port is known once the servers listen: the
    // front handler reads the table through a cell filled right after.
    let table = std::sync::Arc::new(std::sync::OnceLock::<Vec<(String, Case)>>::new());
    let shared = std::sync::Arc::clone(&table);
    let fixture = Fixture::start(move |request, _| match shared.get() {
        Some(cases) => front(cases, request),
        None => Reply::status(503, ""),
    })
    .await
    .expect("servers on 127.0.0.1 and 127.0.0.2");
    let p = fixture.port();
    let cases = cases(p);
    table.set(cases.clone()).expect("table set once");

    let policy = fixture.policy().expect("policy");
    let client = common::client(&policy).expect("client");
    let base = format!("http://127.0.0.2:{p}");

    // The setup itself works: the front is reachable, and by name too.
    let page = policy
        .fetch(&client, &format!("{base}/ok"), &limits())
        .await
        .expect("the allowed front page");
    assert_eq!(page.body.as_ref(), b"front page");
    let page = policy
        .fetch(&client, &format!("http://front.example:{p}/ok"), &limits())
        .await
        .expect("the allowed front page by name");
    assert_eq!(page.body.as_ref(), b"front page");

    let mut failures = Vec::new();
    for (n, (label, case)) in cases.iter().enumerate() {
        let url = match case {
            Case::Direct(url) => url.clone(),
            Case::Redirect { .. } => format!("{base}/case/{n}"),
            Case::Chain { .. } => format!("{base}/chain/0/{n}"),
        };
        let result = policy.fetch(&client, &url, &limits()).await;
        let message = match &result {
            Err(err @ FetchError::Blocked(_)) => format!("{err} / {err:?}"),
            other => {
                failures.push(format!("{label}: not blocked: {other:?}"));
                continue;
            }
        };
        if message.contains(&fixture.secret_text) {
            failures.push(format!("{label}: the secret is in the error: {message}"));
        }
        if message.contains("pw") && label.contains("credentials") {
            failures.push(format!("{label}: credentials in the error: {message}"));
        }
        if fixture.secret.connections() != 0 {
            failures.push(format!("{label}: the secret server saw a connection"));
            break;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(fixture.secret.connections(), 0);
}

#[tokio::test]
async fn metadata_is_refused_before_any_connect() {
    // 169.254.169.254 cannot be served on the host network, so the proof that no
    // connect happened is where the refusal comes from: the URL check (direct) and the
    // redirect policy (a hop), both of which run before reqwest opens a connection.
    let fixture = Fixture::start(|request, _| match request.path.as_str() {
        "/meta" => Reply::redirect(307, "http://169.254.169.254/latest/meta-data/"),
        _ => Reply::status(404, ""),
    })
    .await
    .expect("servers");
    let policy = fixture.policy().expect("policy");
    let client = common::client(&policy).expect("client");

    let direct = "http://169.254.169.254/latest/meta-data/";
    assert_eq!(
        policy.check_url(direct).map(|_| ()).map_err(|b| b.0),
        Err("169.254.169.254 is a link-local address (the cloud metadata endpoint)".to_owned())
    );
    match policy.fetch(&client, direct, &limits()).await {
        Err(FetchError::Blocked(reason)) => assert!(reason.0.contains("metadata"), "{reason}"),
        other => panic!("not blocked: {other:?}"),
    }

    match policy
        .fetch(&client, &fixture.front.url("/meta"), &limits())
        .await
    {
        Err(FetchError::Blocked(reason)) => {
            assert!(reason.0.starts_with("redirect refused: "), "{reason}");
            assert!(reason.0.contains("metadata"), "{reason}");
        }
        other => panic!("not blocked: {other:?}"),
    }
    // A name that resolves there is dropped by the resolver, before any connect too.
    match policy
        .fetch(&client, "http://metadata.example/", &limits())
        .await
    {
        Err(FetchError::Blocked(reason)) => {
            assert!(
                reason
                    .0
                    .starts_with("metadata.example resolves only to refused addresses"),
                "{reason}"
            );
        }
        other => panic!("not blocked: {other:?}"),
    }
    assert_eq!(fixture.front.connections(), 1);
    assert_eq!(fixture.secret.connections(), 0);
}

#[tokio::test]
async fn a_name_resolving_to_refused_and_allowed_addresses_uses_only_the_allowed_one() {
    let fixture = Fixture::start(|_, _| Reply::ok("front page"))
        .await
        .expect("servers");
    let policy = fixture.policy().expect("policy");
    let client = common::client(&policy).expect("client");
    let p = fixture.port();
    // mixed.example -> 127.0.0.1 (secret), ::1 (secret, where available), 127.0.0.2.
    for _ in 0..3 {
        let page = policy
            .fetch(&client, &format!("http://mixed.example:{p}/"), &limits())
            .await
            .expect("the allowed address is used");
        assert_eq!(page.body.as_ref(), b"front page");
        assert_eq!(
            page.remote_addr.map(|a| a.ip()),
            Some(common::FRONT_IP),
            "{page:?}"
        );
    }
    assert_eq!(fixture.secret.connections(), 0);
    assert!(fixture.front.connections() >= 1);
}

#[tokio::test]
async fn the_secret_server_really_serves_the_secret_when_allowed() {
    // The control experiment: with 127.0.0.1 allowed, the same fetch reads the secret,
    // so the zero-connection results above are the guard's doing.
    let fixture = Fixture::start(|_, _| Reply::ok("front page"))
        .await
        .expect("servers");
    let policy = netguard::Policy::with_allowed(&["127.0.0.0/8".to_owned(), "::1".to_owned()])
        .expect("policy")
        .with_hosts_override(common::hosts());
    let client = common::client(&policy).expect("client");
    let p = fixture.port();
    let mut urls = vec![
        format!("http://127.0.0.1:{p}/"),
        format!("http://2130706433:{p}/"),
        format!("http://evil.example:{p}/"),
    ];
    if fixture.secret_on_ipv6 {
        urls.push(format!("http://[::1]:{p}/"));
    }
    for url in &urls {
        let page = policy
            .fetch(&client, url, &limits())
            .await
            .expect("allowed");
        assert_eq!(page.body.as_ref(), fixture.secret_text.as_bytes(), "{url}");
    }
    assert_eq!(fixture.secret.connections(), urls.len());
}
