//! Open mode against web pages (issue 13): without keys, a request from a page of another
//! origin, or for a host name that is not loopback (DNS rebinding), is refused with 403 before
//! anything runs; the operator's allowed hosts widen both rules; with keys none of it applies.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use serde_json::{Value, json};
use testkit::{Reply, TestApp};

const MODEL: &str = "openai/gpt-test";

/// POSTs a create request with these extra headers; returns the status and the body.
async fn post(app: &TestApp, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = app
        .client
        .post(app.url("/v1/responses"))
        .json(&json!({"model": MODEL, "input": "hi"}));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    (
        response.status().as_u16(),
        response.json().await.unwrap_or(Value::Null),
    )
}

fn assert_forbidden(status: u16, body: &Value, says: &str) {
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["type"], "forbidden", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(says), "{message}");
    assert!(message.contains("AGENTD_ALLOWED_HOSTS"), "{message}");
}

#[tokio::test]
async fn the_servers_own_origin_and_loopback_hosts_are_served() {
    let app = TestApp::spawn().await;
    let own = app.base_url.clone();
    let port = own.rsplit(':').next().unwrap().to_owned();
    for headers in [
        vec![("origin", own.as_str())],
        vec![],
        vec![("host", "localhost")],
    ] {
        app.fake.push(Reply::text("served"));
        let (status, body) = post(&app, &headers).await;
        assert_eq!(status, 200, "{headers:?}: {body}");
    }
    let localhost = format!("localhost:{port}");
    let origin = format!("http://localhost:{port}");
    app.fake.push(Reply::text("served"));
    let (status, body) = post(&app, &[("host", &localhost), ("origin", &origin)]).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_page_of_another_origin_is_refused_before_anything_runs() {
    let app = TestApp::spawn().await;
    for origin in ["https://evil.example", "http://localhost:3000", "null"] {
        let (status, body) = post(&app, &[("origin", origin)]).await;
        assert_forbidden(status, &body, "another origin");
    }
    // The classic cross-site form: a `text/plain` POST needs no preflight.
    let response = app
        .client
        .post(app.url("/v1/responses"))
        .header("origin", "https://evil.example")
        .header("content-type", "text/plain")
        .body(json!({"model": MODEL, "input": "hi"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403);
    assert!(app.fake.requests().is_empty(), "no run started");
}

#[tokio::test]
async fn a_rebound_host_name_is_refused() {
    let app = TestApp::spawn().await;
    let port = app.base_url.rsplit(':').next().unwrap().to_owned();
    let rebound = format!("evil.example:{port}");
    let (status, body) = post(&app, &[("host", &rebound)]).await;
    assert_forbidden(status, &body, "evil.example");
    // The page is same-origin with itself after rebinding: its Origin does not help.
    let origin = format!("http://{rebound}");
    let (status, body) = post(&app, &[("host", &rebound), ("origin", &origin)]).await;
    assert_forbidden(status, &body, "loopback");
    let response = app
        .client
        .get(app.url("/v1/models"))
        .header("host", &rebound)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 403, "every route is guarded");
    assert!(app.fake.requests().is_empty(), "no run started");
}

#[tokio::test]
async fn allowed_hosts_widen_the_rules() {
    let app = TestApp::spawn_with(|config| {
        config.allowed_hosts = vec!["agentd.lan".to_owned(), "ui.lan".to_owned()];
    })
    .await;
    for headers in [
        [
            ("host", "agentd.lan:8443"),
            ("origin", "https://agentd.lan:8443"),
        ],
        [("host", "AGENTD.lan"), ("origin", "https://ui.lan")],
    ] {
        app.fake.push(Reply::text("served"));
        let (status, body) = post(&app, &headers).await;
        assert_eq!(status, 200, "{headers:?}: {body}");
    }
    let (status, body) = post(&app, &[("host", "other.lan")]).await;
    assert_forbidden(status, &body, "other.lan");
    let (status, body) = post(&app, &[("origin", "https://other.lan")]).await;
    assert_forbidden(status, &body, "another origin");
}

#[tokio::test]
async fn with_keys_origin_and_host_are_not_checked() {
    let app = TestApp::spawn().await;
    let key = app.state.engine.create_key("alpha").await.unwrap();
    let bearer = format!("Bearer {key}");
    app.fake.push(Reply::text("served"));
    let (status, body) = post(
        &app,
        &[
            ("authorization", &bearer),
            ("host", "evil.example"),
            ("origin", "https://evil.example"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = post(&app, &[("origin", "https://evil.example")]).await;
    assert_eq!(
        status, 401,
        "without a key: unauthorized, as before: {body}"
    );
}
