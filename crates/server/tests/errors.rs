//! Every error answer is the JSON envelope (issue 13): a wrong method (405, with `Allow`), a
//! path that does not decode, a bad query, a body of the wrong content type (415), a body that
//! does not arrive in time (408), besides the parse errors and the 413 of `api.rs`.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use std::time::Duration;

use serde_json::{Value, json};
use testkit::{Reply, TestApp};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const MODEL: &str = "openai/gpt-test";

/// Sends a request and checks the answer is the envelope with this status and `type`;
/// returns the envelope and the `Allow` header.
async fn envelope(
    request: reqwest::RequestBuilder,
    status: u16,
    kind: &str,
) -> (Value, Option<String>) {
    let response = request.send().await.unwrap();
    assert_eq!(response.status().as_u16(), status);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(content_type, "application/json");
    let allow = response
        .headers()
        .get("allow")
        .map(|v| v.to_str().unwrap().to_owned());
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], kind, "{body}");
    assert_eq!(body["error"]["code"], status, "{body}");
    assert!(
        !body["error"]["message"].as_str().unwrap().is_empty(),
        "{body}"
    );
    (body, allow)
}

#[tokio::test]
async fn a_wrong_method_is_405_on_the_envelope_with_allow() {
    let app = TestApp::spawn().await;
    let (body, allow) = envelope(
        app.client.delete(app.url("/v1/responses")),
        405,
        "method_not_allowed",
    )
    .await;
    assert_eq!(
        allow.as_deref(),
        Some("POST,GET,HEAD"),
        "GET: WebSocket mode"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("DELETE is not allowed on this path"),
        "{body}"
    );
    let (_, allow) = envelope(
        app.client.put(app.url("/v1/agent/resp_x")),
        405,
        "method_not_allowed",
    )
    .await;
    assert_eq!(allow.as_deref(), Some("GET,HEAD,DELETE"));
    let (_, allow) = envelope(
        app.client.get(app.url("/v1/agent/resp_x/cancel")),
        405,
        "method_not_allowed",
    )
    .await;
    assert_eq!(allow.as_deref(), Some("POST"));
    envelope(
        app.client.post(app.url("/health")),
        405,
        "method_not_allowed",
    )
    .await;
}

#[tokio::test]
async fn a_path_that_does_not_decode_is_400_on_the_envelope() {
    let app = TestApp::spawn().await;
    for path in [
        "/v1/responses/%FF",
        "/v1/agent/resp_%C3%28/cancel",
        "/v1/responses/%FF/files",
        "/v1/responses/resp_x/files/%FE%FF/content",
    ] {
        let request = if path.ends_with("/cancel") {
            app.client.post(app.url(path))
        } else {
            app.client.get(app.url(path))
        };
        let (body, _) = envelope(request, 400, "invalid_request").await;
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("path is not valid"),
            "{path}: {body}"
        );
    }
    let (body, _) = envelope(
        app.client.get(app.url("/v1/responses/resp_x?stream=%FF")),
        400,
        "invalid_request",
    )
    .await;
    assert_eq!(body["error"]["param"], "stream");
}

#[tokio::test]
async fn a_body_that_is_not_json_is_415_and_runs_nothing() {
    let app = TestApp::spawn().await;
    let body = json!({"model": MODEL, "input": "hi"}).to_string();
    for content_type in [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        let (error, _) = envelope(
            app.client
                .post(app.url("/v1/responses"))
                .header("content-type", content_type)
                .body(body.clone()),
            415,
            "unsupported_media_type",
        )
        .await;
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("application/json"),
            "{error}"
        );
    }
    assert!(app.fake.requests().is_empty(), "no run started");
    for content_type in [
        Some("application/json"),
        Some("Application/JSON; charset=utf-8"),
        Some("application/merge-patch+json"),
        None,
    ] {
        app.fake.push(Reply::text("ok"));
        let mut request = app.client.post(app.url("/v1/responses")).body(body.clone());
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200, "{content_type:?}");
    }
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_408_on_the_envelope() {
    let app = TestApp::spawn_with(|config| config.body_timeout = Duration::from_millis(300)).await;
    let addr = app.base_url.trim_start_matches("http://").to_owned();
    let mut tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    tcp.write_all(
        format!(
            "POST /v1/responses HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: 1000\r\n\r\n{{\"model\":"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), tcp.read_to_end(&mut answer))
        .await
        .expect("answered and closed in time")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let body: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["error"]["type"], "request_timeout", "{body}");
    assert!(app.fake.requests().is_empty());
}
