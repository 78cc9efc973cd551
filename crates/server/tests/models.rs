//! `GET /v1/models` through the real HTTP API: a provider whose upstream (a small axum server on
//! 127.0.0.1 answering OpenAI's list shape) has models of its own.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on a broken socket or poisoned lock"
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use providers::config::{ProviderConfig, WireApi};
use serde_json::{Value, json};
use testkit::TestApp;

const KEY: &str = "sk-upstream-list-secret-42";

/// An OpenAI-compatible upstream answering `GET /v1/models` with `status` and `body`, counting
/// the requests that carried the key.
async fn upstream(status: StatusCode, body: Value) -> (String, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&asked);
    let app = Router::new().route(
        "/v1/models",
        get(move |headers: HeaderMap| {
            let counter = Arc::clone(&counter);
            let body = body.clone();
            async move {
                let bearer = format!("Bearer {KEY}");
                if headers.get("authorization").and_then(|v| v.to_str().ok())
                    == Some(bearer.as_str())
                {
                    counter.fetch_add(1, Ordering::SeqCst);
                }
                (status, axum::Json(body))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}/v1"), asked)
}

fn provider(base_url: String) -> ProviderConfig {
    ProviderConfig {
        name: "up".to_owned(),
        api: WireApi::ChatCompletions,
        base_url,
        api_key: Some(KEY.to_owned()),
        models: vec!["configured-model".to_owned()],
    }
}

/// The entries of provider `up`.
fn ids_of_up(list: &Value) -> Vec<String> {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|model| model["owned_by"] == "up")
        .map(|model| model["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn upstream_models_are_listed_and_the_upstream_is_asked_once() {
    let (base_url, asked) = upstream(
        StatusCode::OK,
        json!({"object": "list", "data": [
            {"id": "upstream-a", "object": "model", "created": 1, "owned_by": "system"},
            {"id": "configured-model", "object": "model", "created": 1, "owned_by": "system"},
            {"id": "upstream-b", "object": "model", "created": 1, "owned_by": "system"}
        ]}),
    )
    .await;
    let app = TestApp::spawn_with(|config| {
        config.providers.push(provider(base_url));
    })
    .await;

    let (status, first) = app.get("/v1/models").await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["object"], "list");
    assert_eq!(
        ids_of_up(&first),
        ["up/configured-model", "up/upstream-a", "up/upstream-b"]
    );
    assert!(
        first["data"].as_array().unwrap().contains(
            &json!({"id": "openai/gpt-test", "object": "model", "created": 0, "owned_by": "openai"})
        ),
        "{first}"
    );
    let up_entry = first["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|model| model["id"] == "up/upstream-a")
        .unwrap();
    assert_eq!(
        up_entry,
        &json!({"id": "up/upstream-a", "object": "model", "created": 0, "owned_by": "up"})
    );

    let (status, second) = app.get("/v1/models").await;
    assert_eq!(status, 200);
    assert_eq!(second, first);
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "the second GET is served from the cache"
    );
}

/// The log lines of this test binary.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

/// Installs the capture as the process's subscriber (once; a thread-local default would miss
/// events while another test of this binary runs on another thread).
fn logs() -> &'static Captured {
    static LOGS: OnceLock<Captured> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Captured::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        logs
    })
}

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_failing_upstream_leaves_the_configured_models_and_logs_no_secret() {
    let (base_url, _) = upstream(
        StatusCode::UNAUTHORIZED,
        json!({"error": {"message": format!("Incorrect API key provided: {KEY}.")}}),
    )
    .await;
    let logs = logs();
    let app = TestApp::spawn_with(|config| {
        // A gateway that takes the key in the query string as well.
        config
            .providers
            .push(provider(format!("{base_url}?api-key={KEY}")));
        config.model_lists.disabled.insert("openai".to_owned());
    })
    .await;

    let (status, list) = app.get("/v1/models").await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(
        list,
        json!({"object": "list", "data": [
            {"id": "openai/gpt-test", "object": "model", "created": 0, "owned_by": "openai"},
            {"id": "up/configured-model", "object": "model", "created": 0, "owned_by": "up"}
        ]})
    );
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let warning = text
        .lines()
        .find(|line| {
            line.contains("could not list the upstream's models") && line.contains("provider=up")
        })
        .unwrap_or_else(|| panic!("no warning in {text}"));
    assert!(warning.contains("WARN"), "{warning}");
    assert!(warning.contains("HTTP 401"), "{warning}");
    assert!(warning.contains("/v1/models"), "{warning}");
    assert!(!text.contains(KEY), "{text}");
    assert!(!text.contains("api-key="), "{text}");
}
