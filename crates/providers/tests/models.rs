//! Upstream model lists (`GET /v1/models`) against small HTTP/1.1 servers on 127.0.0.1 that
//! answer each provider's documented list shape and record what they were asked: the key's
//! header, Anthropic and Gemini paging, Gemini's filter, the merge with the configured models,
//! the cache and its back-off, failures (and that no error names the key), the opt-out.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on a broken socket or poisoned lock"
)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentd_providers::{
    ClientOptions, ModelListSettings, ProviderConfig, Registry, UpstreamModels, WireApi,
};
use engine::model::{ModelInfo, ModelRouter};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const KEY: &str = "sk-list-secret-test-0123";

// ---------------------------------------------------------------------------------------------
// The upstream

/// A request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    /// Query pairs, decoded.
    query: BTreeMap<String, String>,
    /// Header names lower-cased.
    headers: BTreeMap<String, String>,
}

/// What the server answers.
struct Reply {
    status: u16,
    body: String,
    /// Wait for a permit of this semaphore before answering.
    hold: Option<Arc<Semaphore>>,
}

impl Reply {
    fn json(body: Value) -> Reply {
        Reply {
            status: 200,
            body: body.to_string(),
            hold: None,
        }
    }

    fn status(status: u16, body: &str) -> Reply {
        Reply {
            status,
            body: body.to_owned(),
            hold: None,
        }
    }
}

type Answer = Arc<dyn Fn(&Seen, usize) -> Reply + Send + Sync>;

/// A server answering every request with `answer(request, index)`.
struct Upstream {
    addr: std::net::SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Upstream {
    async fn start(answer: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static) -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let answer: Answer = Arc::new(answer);
        let record = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let seen = Arc::clone(&record);
                let answer = Arc::clone(&answer);
                tokio::spawn(serve(socket, seen, answer));
            }
        });
        Upstream { addr, seen }
    }

    fn base(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// Waits until the server has seen `n` requests (bounded, so a bug fails instead of hanging).
    async fn wait_for(&self, n: usize) {
        for _ in 0..1000 {
            if self.count() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(self.count() >= n, "the upstream never saw {n} requests");
    }
}

async fn serve(mut socket: TcpStream, seen: Arc<Mutex<Vec<Seen>>>, answer: Answer) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut lines = text.split("\r\n");
    let mut request_line = lines.next().unwrap().split(' ');
    let method = request_line.next().unwrap().to_owned();
    let target = request_line.next().unwrap().to_owned();
    let url = reqwest::Url::parse(&format!("http://upstream{target}")).unwrap();
    let headers = lines
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let request = Seen {
        method,
        path: url.path().to_owned(),
        query: url.query_pairs().into_owned().collect(),
        headers,
    };
    let index = {
        let mut seen = seen.lock().unwrap();
        seen.push(request.clone());
        seen.len() - 1
    };
    let reply = answer(&request, index);
    if let Some(hold) = reply.hold {
        hold.acquire().await.unwrap().forget();
    }
    let response = format!(
        "HTTP/1.1 {} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{}",
        reply.status,
        reply.body.len(),
        reply.body
    );
    let _ = socket.write_all(response.as_bytes()).await;
    let _ = socket.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn provider(name: &str, api: WireApi, base_url: &str, models: &[&str]) -> ProviderConfig {
    ProviderConfig {
        name: name.into(),
        api,
        base_url: base_url.into(),
        api_key: Some(KEY.into()),
        models: models.iter().map(|m| (*m).to_owned()).collect(),
    }
}

fn ids(list: &[ModelInfo]) -> Vec<&str> {
    list.iter().map(|info| info.id.as_str()).collect()
}

/// `{"data": [{"id"}…]}` as OpenAI and compatible servers answer.
fn openai_list(names: &[&str]) -> Value {
    json!({
        "object": "list",
        "data": names.iter().map(|id| json!({"id": id, "object": "model", "created": 1_700_000_000, "owned_by": "system"})).collect::<Vec<_>>(),
    })
}

async fn fetch_error(config: &ProviderConfig) -> Result<String, Box<dyn std::error::Error>> {
    let upstream = UpstreamModels::new(config, &ClientOptions::default())?;
    match upstream.fetch(Duration::from_secs(5)).await {
        Ok(models) => Err(format!("expected an error, got {models:?}").into()),
        Err(err) => Ok(err.to_string()),
    }
}

// ---------------------------------------------------------------------------------------------
// Each wire API's list

#[tokio::test]
async fn chat_completions_and_responses_list_with_a_bearer_key() -> TestResult {
    for api in [WireApi::ChatCompletions, WireApi::Responses] {
        let upstream =
            Upstream::start(|_, _| Reply::json(openai_list(&["gpt-5.4", "gpt-5-mini"]))).await;
        let registry = Registry::new(vec![provider(
            "oai",
            api,
            &upstream.base("/v1"),
            &["gpt-configured"],
        )])?;
        let list = registry.list_models().await;
        assert_eq!(
            ids(&list),
            ["oai/gpt-configured", "oai/gpt-5.4", "oai/gpt-5-mini"],
            "{api}"
        );
        assert!(list.iter().all(|info| info.owned_by == "oai"));
        let seen = upstream.requests();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].method, "GET");
        assert_eq!(seen[0].path, "/v1/models");
        assert!(seen[0].query.is_empty(), "{:?}", seen[0].query);
        assert_eq!(
            seen[0].headers.get("authorization").map(String::as_str),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_keyless_server_is_asked_without_a_key() -> TestResult {
    let upstream = Upstream::start(|_, _| Reply::json(openai_list(&["llama3.2"]))).await;
    let mut config = provider(
        "local",
        WireApi::ChatCompletions,
        &upstream.base("/v1"),
        &[],
    );
    config.api_key = None;
    let registry = Registry::new(vec![config])?;
    assert_eq!(ids(&registry.list_models().await), ["local/llama3.2"]);
    assert!(!upstream.requests()[0].headers.contains_key("authorization"));
    Ok(())
}

#[tokio::test]
async fn anthropic_pages_are_followed_with_its_headers() -> TestResult {
    let upstream = Upstream::start(|seen, _| {
        let page = |ids: &[&str], has_more: bool| {
            json!({
                "data": ids.iter().map(|id| json!({"id": id, "type": "model", "display_name": id, "created_at": "2025-01-01T00:00:00Z"})).collect::<Vec<_>>(),
                "has_more": has_more,
                "first_id": ids.first(),
                "last_id": ids.last(),
            })
        };
        match seen.query.get("after_id").map(String::as_str) {
            None => Reply::json(page(&["claude-opus-4-6", "claude-sonnet-4-6"], true)),
            Some("claude-sonnet-4-6") => Reply::json(page(&["claude-haiku-4-5"], true)),
            Some("claude-haiku-4-5") => Reply::json(page(&["claude-3-haiku"], false)),
            Some(other) => Reply::status(400, &format!("unexpected after_id {other}")),
        }
    })
    .await;
    let registry = Registry::new(vec![provider(
        "anthropic",
        WireApi::AnthropicMessages,
        &upstream.base(""),
        &["claude-sonnet-4-6"],
    )])?;
    assert_eq!(
        ids(&registry.list_models().await),
        [
            "anthropic/claude-sonnet-4-6",
            "anthropic/claude-opus-4-6",
            "anthropic/claude-haiku-4-5",
            "anthropic/claude-3-haiku",
        ]
    );
    let seen = upstream.requests();
    let cursors: Vec<Option<&str>> = seen
        .iter()
        .map(|s| s.query.get("after_id").map(String::as_str))
        .collect();
    assert_eq!(
        cursors,
        [None, Some("claude-sonnet-4-6"), Some("claude-haiku-4-5")]
    );
    for request in &seen {
        assert_eq!(request.path, "/v1/models");
        assert_eq!(request.query.get("limit").map(String::as_str), Some("1000"));
        assert_eq!(
            request.headers.get("x-api-key").map(String::as_str),
            Some(KEY)
        );
        assert_eq!(
            request.headers.get("anthropic-version").map(String::as_str),
            Some("2023-06-01")
        );
        assert!(!request.headers.contains_key("authorization"));
    }
    Ok(())
}

#[tokio::test]
async fn gemini_pages_are_followed_filtered_and_stripped_of_their_prefix() -> TestResult {
    let upstream = Upstream::start(|seen, _| {
        let model = |name: &str, methods: &[&str]| {
            json!({"name": name, "displayName": name, "supportedGenerationMethods": methods})
        };
        match seen.query.get("pageToken").map(String::as_str) {
            None => Reply::json(json!({
                "models": [
                    model("models/gemini-3-pro-preview", &["generateContent", "countTokens"]),
                    model("models/text-embedding-004", &["embedContent"]),
                ],
                "nextPageToken": "page-2",
            })),
            Some("page-2") => Reply::json(json!({
                "models": [
                    model("models/gemini-3-flash-preview", &["generateContent"]),
                    model("models/aqa", &["generateAnswer"]),
                ],
                "nextPageToken": "page-3",
            })),
            // Google leaves out an empty list and the token of the last page.
            Some("page-3") => Reply::json(json!({})),
            Some(other) => Reply::status(400, &format!("unexpected pageToken {other}")),
        }
    })
    .await;
    let registry = Registry::new(vec![provider(
        "google",
        WireApi::Gemini,
        &upstream.base(""),
        &[],
    )])?;
    assert_eq!(
        ids(&registry.list_models().await),
        [
            "google/gemini-3-pro-preview",
            "google/gemini-3-flash-preview"
        ]
    );
    let seen = upstream.requests();
    let tokens: Vec<Option<&str>> = seen
        .iter()
        .map(|s| s.query.get("pageToken").map(String::as_str))
        .collect();
    assert_eq!(tokens, [None, Some("page-2"), Some("page-3")]);
    for request in &seen {
        assert_eq!(request.path, "/v1beta/models");
        assert_eq!(
            request.query.get("pageSize").map(String::as_str),
            Some("1000")
        );
        assert_eq!(
            request.headers.get("x-goog-api-key").map(String::as_str),
            Some(KEY)
        );
        assert!(!request.query.contains_key("key"), "never in the URL");
        assert!(!request.headers.contains_key("authorization"));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Merging, bounds

#[tokio::test]
async fn configured_models_come_first_and_duplicates_go() -> TestResult {
    let first = Upstream::start(|_, _| {
        Reply::json(openai_list(&[
            "shared",
            "upstream-a",
            "shared",
            "",
            "upstream-b",
        ]))
    })
    .await;
    let second = Upstream::start(|_, _| Reply::json(openai_list(&["m1"]))).await;
    let registry = Registry::new(vec![
        provider(
            "one",
            WireApi::ChatCompletions,
            &first.base("/v1"),
            &["configured", "shared", "configured"],
        ),
        provider("two", WireApi::Responses, &second.base("/v1"), &["m1"]),
    ])?;
    let list = registry.list_models().await;
    assert_eq!(
        ids(&list),
        [
            "one/configured",
            "one/shared",
            "one/upstream-a",
            "one/upstream-b",
            "two/m1",
        ]
    );
    let owners: Vec<&str> = list.iter().map(|info| info.owned_by.as_str()).collect();
    assert_eq!(owners, ["one", "one", "one", "one", "two"]);
    Ok(())
}

#[tokio::test]
async fn pages_and_models_are_capped() -> TestResult {
    // An upstream that always has more: 20 pages are read, then the list is cut.
    let endless = Upstream::start(|_, index| {
        Reply::json(json!({
            "data": [{"id": format!("m{index}")}],
            "has_more": true,
            "last_id": format!("m{index}"),
        }))
    })
    .await;
    let registry = Registry::new(vec![provider(
        "a",
        WireApi::AnthropicMessages,
        &endless.base(""),
        &[],
    )])?;
    assert_eq!(registry.list_models().await.len(), 20);
    assert_eq!(endless.count(), 20);

    let names: Vec<String> = (0..2500).map(|n| format!("model-{n}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let body = openai_list(&names);
    let huge = Upstream::start(move |_, _| Reply::json(body.clone())).await;
    let registry = Registry::new(vec![provider(
        "big",
        WireApi::ChatCompletions,
        &huge.base("/v1"),
        &["configured"],
    )])?;
    let list = registry.list_models().await;
    assert_eq!(list.len(), 1 + 2000);
    assert_eq!(list[2000].id, "big/model-1999");
    Ok(())
}

#[tokio::test]
async fn an_oversized_page_is_an_error() -> TestResult {
    let body = format!(
        "{{\"data\":[{{\"id\":\"x\",\"pad\":\"{}\"}}]}}",
        "x".repeat(9 << 20)
    );
    let upstream = Upstream::start(move |_, _| Reply::status(200, &body)).await;
    let config = provider("big", WireApi::ChatCompletions, &upstream.base("/v1"), &[]);
    let error = fetch_error(&config).await?;
    assert!(error.contains("larger than"), "{error}");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The cache

#[tokio::test]
async fn a_list_is_cached_for_the_ttl() -> TestResult {
    let upstream =
        Upstream::start(|_, index| Reply::json(openai_list(&[&format!("listing-{index}")]))).await;
    let config = provider("p", WireApi::ChatCompletions, &upstream.base("/v1"), &[]);

    // The default TTL (10 minutes): the second call is served from the cache.
    let cached = Registry::new(vec![config.clone()])?;
    assert_eq!(ids(&cached.list_models().await), ["p/listing-0"]);
    assert_eq!(ids(&cached.list_models().await), ["p/listing-0"]);
    assert_eq!(upstream.count(), 1);

    // A tiny TTL: once it has passed, the upstream is asked again.
    let short = Registry::new(vec![config])?.with_model_list_ttl(Duration::from_millis(1));
    assert_eq!(ids(&short.list_models().await), ["p/listing-1"]);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(ids(&short.list_models().await), ["p/listing-2"]);
    assert_eq!(upstream.count(), 3);
    Ok(())
}

#[tokio::test]
async fn concurrent_requests_share_one_fetch() -> TestResult {
    let gate = Arc::new(Semaphore::new(0));
    let hold = Arc::clone(&gate);
    let upstream = Upstream::start(move |_, _| Reply {
        hold: Some(Arc::clone(&hold)),
        ..Reply::json(openai_list(&["only-once"]))
    })
    .await;
    let registry = Arc::new(Registry::new(vec![provider(
        "p",
        WireApi::ChatCompletions,
        &upstream.base("/v1"),
        &[],
    )])?);
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let registry = Arc::clone(&registry);
            tokio::spawn(async move { registry.list_models().await })
        })
        .collect();
    // The first fetch is in flight (held by the server); give the others a chance to arrive.
    upstream.wait_for(1).await;
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    gate.add_permits(100);
    for call in calls {
        assert_eq!(ids(&call.await?), ["p/only-once"]);
    }
    assert_eq!(upstream.count(), 1, "one fetch for all the callers");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Failures

#[tokio::test]
async fn a_failing_upstream_leaves_the_configured_models_and_no_key_in_errors() -> TestResult {
    // A 500 whose body echoes the key, as some gateways do.
    let failing = Upstream::start(|_, _| {
        Reply::status(
            500,
            &json!({"error": {"message": format!("boom for key {KEY}")}}).to_string(),
        )
    })
    .await;
    let garbage = Upstream::start(|_, _| Reply::status(200, "<html>not a list</html>")).await;
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        drop(listener);
        format!("http://{addr}/v1")
    };
    let cases = [
        (failing.base("/v1"), "HTTP 500"),
        (garbage.base("/v1"), "not JSON"),
        (closed.clone(), "could not connect"),
        // A gateway that takes the key in the query string: neither error nor log shows it.
        (format!("{closed}?api-key={KEY}"), "could not connect"),
    ];
    for (base, want) in cases {
        let config = provider("p", WireApi::ChatCompletions, &base, &["configured"]);
        let registry = Registry::new(vec![config.clone()])?;
        assert_eq!(
            ids(&registry.list_models().await),
            ["p/configured"],
            "{base}"
        );
        let error = fetch_error(&config).await?;
        assert!(error.contains(want), "{base}: {error}");
        assert!(!error.contains(KEY), "{base}: {error}");
        assert!(!error.contains("127.0.0.1"), "no URL in {error}");
        let upstream = UpstreamModels::new(&config, &ClientOptions::default())?;
        assert!(!upstream.url_for_logs().contains(KEY));
        assert!(!format!("{upstream:?}").contains(KEY));
    }
    assert!(failing.count() >= 1);
    Ok(())
}

#[tokio::test]
async fn a_silent_upstream_times_out() -> TestResult {
    let never = Arc::new(Semaphore::new(0));
    let hold = Arc::clone(&never);
    let upstream = Upstream::start(move |_, _| Reply {
        hold: Some(Arc::clone(&hold)),
        ..Reply::json(openai_list(&["late"]))
    })
    .await;
    let config = provider(
        "p",
        WireApi::ChatCompletions,
        &upstream.base("/v1"),
        &["mine"],
    );
    let registry = Registry::new(vec![config])?.with_model_lists(ModelListSettings {
        request_timeout: Duration::from_millis(200),
        ..ModelListSettings::default()
    });
    assert_eq!(ids(&registry.list_models().await), ["p/mine"]);
    assert_eq!(upstream.count(), 1);
    Ok(())
}

#[tokio::test]
async fn a_failed_listing_is_retried_after_the_back_off_only() -> TestResult {
    let healthy = Arc::new(AtomicUsize::new(0));
    let flag = Arc::clone(&healthy);
    let upstream = Upstream::start(move |_, _| {
        if flag.load(Ordering::SeqCst) == 0 {
            Reply::status(503, "")
        } else {
            Reply::json(openai_list(&["back"]))
        }
    })
    .await;
    let config = provider(
        "p",
        WireApi::ChatCompletions,
        &upstream.base("/v1"),
        &["mine"],
    );

    // The default back-off (30 s): the next request does not ask again.
    let patient = Registry::new(vec![config.clone()])?;
    assert_eq!(ids(&patient.list_models().await), ["p/mine"]);
    assert_eq!(ids(&patient.list_models().await), ["p/mine"]);
    assert_eq!(upstream.count(), 1);

    // Without a back-off, the next request asks again and sees the upstream recovered.
    let eager = Registry::new(vec![config])?.with_model_lists(ModelListSettings {
        retry_after: Duration::ZERO,
        ..ModelListSettings::default()
    });
    assert_eq!(ids(&eager.list_models().await), ["p/mine"]);
    assert_eq!(upstream.count(), 2);
    healthy.store(1, Ordering::SeqCst);
    assert_eq!(ids(&eager.list_models().await), ["p/mine", "p/back"]);
    assert_eq!(upstream.count(), 3);
    Ok(())
}

#[tokio::test]
async fn a_failed_refresh_keeps_serving_the_last_good_list() -> TestResult {
    let down = Arc::new(AtomicUsize::new(0));
    let flag = Arc::clone(&down);
    let upstream = Upstream::start(move |_, _| {
        if flag.load(Ordering::SeqCst) == 0 {
            Reply::json(openai_list(&["listed"]))
        } else {
            Reply::status(500, "")
        }
    })
    .await;
    let config = provider(
        "p",
        WireApi::ChatCompletions,
        &upstream.base("/v1"),
        &["mine"],
    );
    let registry = Registry::new(vec![config])?.with_model_lists(ModelListSettings {
        ttl: Duration::ZERO,
        retry_after: Duration::ZERO,
        ..ModelListSettings::default()
    });
    assert_eq!(ids(&registry.list_models().await), ["p/mine", "p/listed"]);
    down.store(1, Ordering::SeqCst);
    // The refresh fails (asked again, as the TTL is over): the last good list stays.
    assert_eq!(ids(&registry.list_models().await), ["p/mine", "p/listed"]);
    assert_eq!(ids(&registry.list_models().await), ["p/mine", "p/listed"]);
    assert_eq!(upstream.count(), 3);
    Ok(())
}

#[tokio::test]
async fn list_models_false_asks_nothing() -> TestResult {
    let upstream = Upstream::start(|_, _| Reply::json(openai_list(&["never-shown"]))).await;
    let listed = Upstream::start(|_, _| {
        Reply::json(json!({"models": [
            {"name": "models/shown", "supportedGenerationMethods": ["generateContent"]}
        ]}))
    })
    .await;
    let registry = Registry::new(vec![
        provider(
            "quiet",
            WireApi::ChatCompletions,
            &upstream.base("/v1"),
            &["mine"],
        ),
        provider("loud", WireApi::Gemini, &listed.base(""), &[]),
    ])?
    .with_model_lists(ModelListSettings {
        disabled: ["quiet".to_owned(), "not-a-provider".to_owned()].into(),
        ..ModelListSettings::default()
    });
    assert_eq!(
        ids(&registry.list_models().await),
        ["quiet/mine", "loud/shown"]
    );
    assert_eq!(
        upstream.count(),
        0,
        "a provider with list_models = false is never asked"
    );
    assert_eq!(listed.count(), 1);
    Ok(())
}
