//! Test utilities (dev-only): the scripted fake model provider, an in-process agentd on port 0,
//! SSE transcript helpers with the stream invariants, and redaction of ids and times for
//! snapshots.
//!
//! ```no_run
//! # async fn demo() {
//! use agentd_testkit::{TestApp, fake_provider::Reply};
//! let app = TestApp::spawn().await;
//! app.fake.push(Reply::text("Hello"));
//! let (status, body) = app.post("/v1/responses", serde_json::json!({"model": "openai/gpt-test", "input": "Hi"})).await;
//! # }
//! ```

#![expect(
    clippy::expect_used,
    reason = "test utility: failing loudly is the point"
)]

pub mod fake_provider;
pub mod loadgen;
pub mod mcp;
pub mod sse;

use providers::config::{ProviderConfig, WireApi};
use serde_json::Value;
use server::config::{Config, Flags, RawConfig};
use server::state::AppState;
use tokio::sync::oneshot;

pub use crate::fake_provider::{FakeProvider, Gate, Reply};

/// The API key the fake provider is configured with; tests assert it never leaks.
pub const FAKE_PROVIDER_KEY: &str = "sk-fake-provider-secret-0123456789";

/// agentd running in-process on 127.0.0.1:0, with the provider `openai` pointing at a
/// [`FakeProvider`] and an in-memory store.
pub struct TestApp {
    pub base_url: String,
    pub fake: FakeProvider,
    pub client: reqwest::Client,
    pub state: AppState,
    /// The app's own data directory (the local search index lives there), removed on drop.
    pub data_dir: std::path::PathBuf,
    shutdown: Option<oneshot::Sender<()>>,
}

impl TestApp {
    pub async fn spawn() -> TestApp {
        TestApp::spawn_with(|_| {}).await
    }

    /// Spawns with a chance to adjust the configuration first.
    pub async fn spawn_with(adjust: impl FnOnce(&mut Config)) -> TestApp {
        let fake = FakeProvider::start().await;
        let no_env = |_: &str| None;
        let flags = Flags {
            listen: Some("127.0.0.1:0".to_owned()),
            data_dir: None,
            database_url: Some("sqlite::memory:".to_owned()),
        };
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let data_dir = std::env::temp_dir().join(format!(
            "agentd-testapp-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&data_dir);
        let flags = Flags {
            data_dir: Some(data_dir.clone()),
            ..flags
        };
        let mut config =
            Config::resolve(RawConfig::default(), &no_env, &flags).expect("test config resolves");
        config.providers = vec![ProviderConfig {
            name: "openai".to_owned(),
            api: WireApi::ChatCompletions,
            base_url: fake.base_url(),
            api_key: Some(FAKE_PROVIDER_KEY.to_owned()),
            models: vec!["gpt-test".to_owned()],
        }];
        adjust(&mut config);
        let state = server::build_state(&config).await.expect("state builds");
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .expect("bind port 0");
        let addr = listener.local_addr().expect("local addr");
        let (tx, rx) = oneshot::channel::<()>();
        let app = server::app(state.clone());
        let connections = config.connections;
        tokio::spawn(async move {
            let _ = server::run(listener, app, connections, async {
                let _ = rx.await;
            })
            .await;
        });
        TestApp {
            base_url: format!("http://{addr}"),
            fake,
            client: http_client(),
            state,
            data_dir,
            shutdown: Some(tx),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url, path)
    }

    /// POSTs JSON; returns the status and the JSON body.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        send_json(self.client.post(self.url(path)).json(&body)).await
    }

    /// POSTs raw bytes as JSON.
    pub async fn post_raw(&self, path: &str, body: impl Into<reqwest::Body>) -> (u16, Value) {
        send_json(
            self.client
                .post(self.url(path))
                .header("content-type", "application/json")
                .body(body),
        )
        .await
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        send_json(self.client.get(self.url(path))).await
    }

    /// POSTs a streaming request and reads until its first frame: returns the response id, the
    /// text read so far (the first frame included) and the response to read the rest from.
    pub async fn start_stream(
        &self,
        path: &str,
        body: Value,
    ) -> (String, String, reqwest::Response) {
        let mut response = self
            .client
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .expect("request sent");
        let mut seen = String::new();
        while !seen.contains("\n\n") {
            let chunk = response
                .chunk()
                .await
                .expect("stream readable")
                .expect("stream open until its first frame");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        let first = sse::Transcript::parse(seen.split("\n\n").next().unwrap_or_default());
        let id = first.events[0]["response"]["id"]
            .as_str()
            .expect("the first frame carries the response id")
            .to_owned();
        (id, seen, response)
    }

    /// Polls `GET /v1/responses/{id}` until the run has ended; returns the final object.
    pub async fn wait_terminal(&self, id: &str) -> Value {
        wait_terminal(&self.client, &self.base_url, id).await
    }

    /// GETs a text body (e.g. `/metrics`).
    pub async fn get_text(&self, path: &str) -> String {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("request sent")
            .text()
            .await
            .expect("text body")
    }

    /// POSTs a streaming request and reads the whole stream; checks the stream invariants.
    pub async fn post_stream(&self, path: &str, body: Value) -> sse::Transcript {
        let response = self
            .client
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .expect("request sent");
        assert_eq!(response.status().as_u16(), 200, "streaming request refused");
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert!(
            content_type.starts_with("text/event-stream"),
            "content type {content_type}"
        );
        let raw = response.text().await.expect("stream body");
        let transcript = sse::Transcript::parse(&raw);
        transcript.assert_invariants();
        transcript
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

/// Sends a request; returns the status and the JSON body (`null` when it is not JSON).
async fn send_json(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.expect("request sent");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Polls `GET {base_url}/v1/responses/{id}` until the run has ended (a terminal status or
/// `requires_action`; 30 s at most).
pub async fn wait_terminal(client: &reqwest::Client, base_url: &str, id: &str) -> Value {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let response = client
            .get(format!("{base_url}/v1/responses/{id}"))
            .send()
            .await
            .expect("retrieve sent");
        assert_eq!(response.status().as_u16(), 200, "retrieve {id}");
        let body: Value = response.json().await.expect("retrieve body");
        if matches!(
            body["status"].as_str(),
            Some("completed" | "failed" | "cancelled" | "incomplete" | "requires_action")
        ) {
            return body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never ended: {body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
}

/// An HTTP client for tests (installs the process's TLS crypto provider first, as agentd does).
pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// Replaces generated ids and times with stable placeholders for snapshots.
pub fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, v)| {
                    let v = match (key.as_str(), v) {
                        ("created_at" | "completed_at", Value::Number(_)) => {
                            Value::String("[time]".to_owned())
                        }
                        _ => redact(v),
                    };
                    (key.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        Value::String(s) => Value::String(redact_id(s)),
        other => other.clone(),
    }
}

fn redact_id(s: &str) -> String {
    for prefix in ["resp_", "msg_", "fc_", "mcpl_", "mcpr_", "call_gen_"] {
        if let Some(rest) = s.strip_prefix(prefix)
            && rest.len() == 36
            && rest.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
        {
            return format!("[{prefix}id]");
        }
    }
    s.to_owned()
}

/// Where a test keeps what it wants the secrets scan (`scripts/scan-secrets`, run at the end of
/// `scripts/test`) to read: `$AGENTD_TEST_ARTIFACTS/<name>`, created afresh, when the variable
/// is set; `None` otherwise (the test then uses a temporary directory it removes).
pub fn artifacts_dir(name: &str) -> Option<std::path::PathBuf> {
    let root = std::env::var_os("AGENTD_TEST_ARTIFACTS").filter(|v| !v.is_empty())?;
    let dir = std::path::Path::new(&root).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}
