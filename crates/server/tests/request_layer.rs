//! The layer around every handler (`request_layer`), driven in process: an error answer leaves
//! on the JSON envelope and is logged exactly once, whoever made it (a handler's own error,
//! axum's 405, the web-page guard's refusal, the envelope's rewrite of another layer's answer);
//! a success is not logged; a body the handler left unread is drained, or the answer says
//! `Connection: close` when it cannot be.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use std::io::Write;
use std::sync::{Arc, Mutex};

use agentd_server::unread_body::DRAIN_LIMIT_BYTES;
use axum::body::Body;
use axum::http::{Request, header};
use axum::response::Response;
use serde_json::Value;
use testkit::TestApp;
use tower::ServiceExt as _;

/// Log lines written while a test runs (this thread's subscriber).
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines(&self) -> Vec<String> {
        String::from_utf8(self.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The error-answer lines (`request failed` / `request refused`).
    fn error_lines(&self) -> Vec<String> {
        self.lines()
            .into_iter()
            .filter(|l| l.contains("request failed") || l.contains("request refused"))
            .collect()
    }

    fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
}

/// The app's answer to `request`, with the log lines it wrote, its body read.
async fn answer(
    app: &TestApp,
    log: &Captured,
    request: Request<Body>,
) -> (Response, Value, Vec<String>) {
    log.clear();
    let response = agentd_server::app(app.state.clone())
        .oneshot(request)
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (
        Response::from_parts(parts, Body::empty()),
        json,
        log.error_lines(),
    )
}

#[tokio::test]
async fn error_answers_leave_on_the_envelope_and_are_logged_once() {
    let app = TestApp::spawn().await;
    let log = Captured::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let host = "localhost:8080";

    // A handler's own error (the fallback's 404).
    let request = Request::get("/nowhere?secret=1")
        .header(header::HOST, host)
        .body(Body::empty())
        .unwrap();
    let (response, body, lines) = answer(&app, &log, request).await;
    assert_eq!(response.status(), 404);
    assert_eq!(body["error"]["code"], 404, "{body}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("request refused") && lines[0].contains("status=404"));
    assert!(lines[0].contains("/nowhere") && !lines[0].contains("secret"));

    // axum's own 405: rewritten on the envelope (with `Allow`), then logged once.
    let request = Request::delete("/health")
        .header(header::HOST, host)
        .body(Body::empty())
        .unwrap();
    let (response, body, lines) = answer(&app, &log, request).await;
    assert_eq!(response.status(), 405);
    assert_eq!(body["error"]["type"], "method_not_allowed", "{body}");
    assert!(response.headers().contains_key(header::ALLOW));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("DELETE") && lines[0].contains("status=405"));

    // The web-page guard's refusal (open mode, another origin): logged once, body drained.
    let request = Request::post("/v1/responses")
        .header(header::HOST, host)
        .header(header::ORIGIN, "https://evil.example")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(r#"{"model":"openai/gpt-test","input":"hi"}"#))
        .unwrap();
    let (response, body, lines) = answer(&app, &log, request).await;
    assert_eq!(response.status(), 403);
    assert_eq!(body["error"]["code"], 403, "{body}");
    assert!(!response.headers().contains_key(header::CONNECTION));
    assert_eq!(lines.len(), 1, "{lines:?}");

    // A body the handler never read (415 before the body is needed), too large to drain:
    // refused once, and the connection is not kept.
    let request = Request::post("/v1/responses")
        .header(header::HOST, host)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from(vec![b'x'; DRAIN_LIMIT_BYTES + 1]))
        .unwrap();
    let (response, body, lines) = answer(&app, &log, request).await;
    assert_eq!(response.status(), 415);
    assert_eq!(body["error"]["code"], 415, "{body}");
    assert_eq!(response.headers().get(header::CONNECTION).unwrap(), "close");
    assert_eq!(lines.len(), 1, "{lines:?}");

    // The same, small enough to drain: the connection is kept.
    let request = Request::post("/v1/responses")
        .header(header::HOST, host)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from(vec![b'x'; 1024]))
        .unwrap();
    let (response, _, lines) = answer(&app, &log, request).await;
    assert_eq!(response.status(), 415);
    assert!(!response.headers().contains_key(header::CONNECTION));
    assert_eq!(lines.len(), 1, "{lines:?}");

    // A success: no error line.
    let request = Request::get("/health")
        .header(header::HOST, host)
        .body(Body::empty())
        .unwrap();
    let (response, body, lines) = answer(&app, &log, request).await;
    assert_eq!(response.status(), 200);
    assert_eq!(body["status"], "ok");
    assert!(lines.is_empty(), "{lines:?}");
}
