//! `web_search` end to end: every back end against a local HTTP server that answers its
//! documented JSON (checking what the back end sent), the final filter check, budgets,
//! the local index, and the hosted tool's events and outcome.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly on broken fixtures"
)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::get;
use chrono::{Days, NaiveDate};
use engine::hosted::{CallContext, EventSink, HostedTool, Source, ToolOutcome};
use netguard::Policy;
use protocol::events::EventData;
use protocol::output::{OutputItem, SearchResult};
use protocol::request::{
    RecencyFilter, SearchContextSize, SearchType, UserLocation, WebSearchFilters, WebSearchTool,
};
use search::{
    Backend, BackendError, BackendSettings, Brave, DateRange, Hit, LocalIndex, Perplexity,
    SearchQuery, SearxNg, Tavily, WebSearch, backend_from_settings,
};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// Harness

/// One request a fake service received.
#[derive(Debug, Clone)]
struct Recorded {
    method: String,
    path: String,
    query: HashMap<String, String>,
    headers: HeaderMap,
    body: String,
}

impl Recorded {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }
}

/// A search service on 127.0.0.1 that answers every request with `status` and `answer`.
struct FakeService {
    base: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl FakeService {
    async fn start(status: StatusCode, answer: Value) -> FakeService {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorder = Arc::clone(&requests);
        let app = Router::new().fallback(move |request: axum::extract::Request| {
            let recorder = Arc::clone(&recorder);
            let answer = answer.clone();
            async move {
                let (parts, body) = request.into_parts();
                let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
                let query =
                    url::form_urlencoded::parse(parts.uri.query().unwrap_or_default().as_bytes())
                        .into_owned()
                        .collect();
                recorder.lock().unwrap().push(Recorded {
                    method: parts.method.to_string(),
                    path: parts.uri.path().to_owned(),
                    query,
                    headers: parts.headers,
                    body: String::from_utf8(bytes.to_vec()).unwrap(),
                });
                (status, axum::Json(answer))
            }
        });
        let addr = serve(app).await;
        FakeService {
            base: format!("http://{addr}"),
            requests,
        }
    }

    fn only_request(&self) -> Recorded {
        let requests = self.requests.lock().unwrap();
        assert_eq!(requests.len(), 1, "{requests:?}");
        requests[0].clone()
    }
}

async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// The guard with loopback allowed, as an operator allows a private back end.
fn loopback() -> Policy {
    Policy::with_allowed(&["127.0.0.0/8".to_owned()]).unwrap()
}

fn today() -> NaiveDate {
    chrono::Utc::now().date_naive()
}

fn days_ago(days: u64) -> String {
    today()
        .checked_sub_days(Days::new(days))
        .unwrap()
        .format("%Y-%m-%d")
        .to_string()
}

fn date(y: i32, m: u32, d: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(y, m, d)
}

/// Records the events a call emits.
#[derive(Default)]
struct Events(Mutex<Vec<EventData>>);

impl EventSink for Events {
    fn emit(&self, event: EventData) {
        self.0.lock().unwrap().push(event);
    }
}

impl Events {
    fn taken(&self) -> Vec<EventData> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// A back end that ignores every filter: it answers each query text with its list (or
/// with `default`) and records the queries it got.
#[derive(Default)]
struct Canned {
    by_text: HashMap<String, Vec<Hit>>,
    default: Vec<Hit>,
    seen: Mutex<Vec<SearchQuery>>,
    calls: AtomicUsize,
}

impl Canned {
    fn answering(hits: Vec<Hit>) -> Arc<Canned> {
        Arc::new(Canned {
            default: hits,
            ..Canned::default()
        })
    }
}

#[async_trait::async_trait]
impl Backend for Canned {
    fn name(&self) -> &'static str {
        "canned"
    }

    async fn search(&self, query: &SearchQuery) -> Result<Vec<Hit>, BackendError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(query.clone());
        Ok(self
            .by_text
            .get(&query.text)
            .cloned()
            .unwrap_or_else(|| self.default.clone()))
    }
}

fn hit(url: &str) -> Hit {
    Hit {
        url: url.to_owned(),
        title: format!("Title of {url}"),
        snippet: format!("About {url}"),
        date: None,
        last_updated: None,
    }
}

fn dated(url: &str, date: Option<String>, last_updated: Option<String>) -> Hit {
    Hit {
        date,
        last_updated,
        ..hit(url)
    }
}

async fn call(
    tool: &WebSearch,
    arguments: &str,
    next_source: u64,
) -> (ToolOutcome, Vec<EventData>) {
    let events = Events::default();
    let outcome = tool
        .call(
            arguments,
            CallContext {
                events: &events,
                next_source,
                call_id: "call_1",
                conversation: "resp_test",
                project_id: "proj_test",
                files: &engine::hosted::NoFiles,
            },
        )
        .await;
    (outcome, events.taken())
}

fn results_of(outcome: &ToolOutcome) -> Vec<SearchResult> {
    match outcome.items.as_slice() {
        [OutputItem::SearchResults(item)] => item.results.clone(),
        other => panic!("expected one search_results item, got {other:?}"),
    }
}

fn urls(results: &[SearchResult]) -> Vec<&str> {
    results.iter().map(|r| r.url.as_str()).collect()
}

fn filtered(filters: WebSearchFilters) -> WebSearchTool {
    WebSearchTool {
        filters: Some(filters),
        ..WebSearchTool::default()
    }
}

fn temp_dir(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "agentd-search-{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---------------------------------------------------------------------------------------
// Back ends against their documented JSON

#[tokio::test]
async fn searxng_sends_the_query_and_time_range_and_maps_hits() {
    let service = FakeService::start(
        StatusCode::OK,
        json!({
            "query": "rust lang",
            "number_of_results": 0,
            "results": [
                {"url": "https://www.rust-lang.org/", "title": "Rust", "content": "A language empowering everyone",
                 "publishedDate": "2025-03-01T00:00:00", "engine": "google", "score": 1.0},
                {"url": "https://doc.rust-lang.org/book/", "title": "The Book", "content": "Learn Rust",
                 "publishedDate": null, "engine": "bing"},
                {"title": "a result without a URL"}
            ],
            "answers": [], "suggestions": [], "unresponsive_engines": []
        }),
    )
    .await;
    // An instance under a path prefix, with a trailing slash.
    let backend = SearxNg::new(&format!("{}/searx/", service.base), &loopback()).unwrap();
    assert_eq!(backend.name(), "searxng");
    let hits = backend
        .search(&SearchQuery {
            text: "rust lang".into(),
            max_results: 5,
            allow_domains: vec!["rust-lang.org".into()],
            recency: Some(RecencyFilter::Week),
            ..SearchQuery::default()
        })
        .await
        .unwrap();

    let request = service.only_request();
    assert_eq!(request.method, "GET");
    assert_eq!(request.path, "/searx/search");
    assert_eq!(request.query["q"], "rust lang site:rust-lang.org");
    assert_eq!(request.query["format"], "json");
    assert_eq!(request.query["time_range"], "week");
    assert_eq!(
        hits,
        vec![
            Hit {
                url: "https://www.rust-lang.org/".into(),
                title: "Rust".into(),
                snippet: "A language empowering everyone".into(),
                date: Some("2025-03-01".into()),
                last_updated: None,
            },
            Hit {
                url: "https://doc.rust-lang.org/book/".into(),
                title: "The Book".into(),
                snippet: "Learn Rust".into(),
                date: None,
                last_updated: None,
            },
        ]
    );

    // SearxNG has no count parameter: the back end cuts.
    let one = backend
        .search(&SearchQuery {
            text: "rust".into(),
            max_results: 1,
            recency: Some(RecencyFilter::Hour),
            ..SearchQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
    let second = service.requests.lock().unwrap()[1].clone();
    assert_eq!(second.query["q"], "rust");
    assert_eq!(second.query["time_range"], "day");
}

#[tokio::test]
async fn brave_sends_the_token_count_country_and_freshness() {
    let service = FakeService::start(
        StatusCode::OK,
        json!({
            "type": "search",
            "query": {"original": "rust book"},
            "web": {
                "type": "search",
                "results": [
                    {"title": "The <strong>Rust</strong> Book", "url": "https://doc.rust-lang.org/book/",
                     "description": "Learn <strong>Rust</strong> &amp; more", "page_age": "2024-11-05T10:00:00",
                     "age": "November 5, 2024", "language": "en", "family_friendly": true},
                    {"title": "Rust blog", "url": "https://blog.rust-lang.org/", "description": "News",
                     "age": "2 days ago", "extra_snippets": ["More <b>news</b>"]}
                ]
            }
        }),
    )
    .await;
    let backend = Brave::new("brave-secret", Some(&service.base), &loopback()).unwrap();
    let hits = backend
        .search(&SearchQuery {
            text: "rust book".into(),
            max_results: 30,
            recency: Some(RecencyFilter::Month),
            user_location: Some(UserLocation {
                country: Some("de".into()),
                city: Some("Berlin".into()),
                ..UserLocation::default()
            }),
            ..SearchQuery::default()
        })
        .await
        .unwrap();

    let request = service.only_request();
    assert_eq!(request.method, "GET");
    assert_eq!(request.path, "/res/v1/web/search");
    assert_eq!(request.header("x-subscription-token"), Some("brave-secret"));
    assert_eq!(request.header("accept"), Some("application/json"));
    assert_eq!(request.query["q"], "rust book");
    assert_eq!(request.query["count"], "20");
    assert_eq!(request.query["country"], "DE");
    assert_eq!(request.query["freshness"], "pm");
    assert_eq!(
        hits,
        vec![
            Hit {
                url: "https://doc.rust-lang.org/book/".into(),
                title: "The Rust Book".into(),
                snippet: "Learn Rust & more".into(),
                date: Some("2024-11-05".into()),
                last_updated: None,
            },
            Hit {
                url: "https://blog.rust-lang.org/".into(),
                title: "Rust blog".into(),
                snippet: "News More news".into(),
                date: None,
                last_updated: None,
            },
        ]
    );

    // Publication dates become a freshness range.
    backend
        .search(&SearchQuery {
            text: "rust".into(),
            published: DateRange {
                after: date(2025, 1, 2),
                before: None,
            },
            ..SearchQuery::default()
        })
        .await
        .unwrap();
    let second = service.requests.lock().unwrap()[1].clone();
    assert_eq!(
        second.query["freshness"],
        format!("2025-01-02to{}", today().format("%Y-%m-%d"))
    );
    assert_eq!(second.query["count"], "10");
    assert!(!second.query.contains_key("country"));
}

#[tokio::test]
async fn tavily_posts_json_with_a_bearer_key_and_domain_lists() {
    let service = FakeService::start(
        StatusCode::OK,
        json!({
            "query": "tokio runtime",
            "answer": null,
            "images": [],
            "results": [
                {"title": "Tokio docs", "url": "https://docs.rs/tokio", "content": "An asynchronous runtime",
                 "score": 0.9, "raw_content": null, "published_date": "Mon, 03 Feb 2025 10:00:00 GMT"},
                {"title": "Tokio site", "url": "https://tokio.rs/", "content": "Build reliable apps", "score": 0.8}
            ],
            "response_time": 0.42
        }),
    )
    .await;
    let backend = Tavily::new("tvly-secret", Some(&service.base), &loopback()).unwrap();
    let hits = backend
        .search(&SearchQuery {
            text: "tokio runtime".into(),
            max_results: 25,
            allow_domains: vec!["docs.rs".into(), "tokio.rs".into()],
            deny_domains: vec!["spam.com".into()],
            recency: Some(RecencyFilter::Hour),
            published: DateRange {
                after: date(2025, 1, 2),
                before: date(2025, 3, 4),
            },
            ..SearchQuery::default()
        })
        .await
        .unwrap();

    let request = service.only_request();
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/search");
    assert_eq!(request.header("authorization"), Some("Bearer tvly-secret"));
    assert_eq!(
        request.json(),
        json!({
            "query": "tokio runtime",
            "max_results": 20,
            "search_depth": "basic",
            "topic": "general",
            "include_answer": false,
            "include_raw_content": false,
            "include_domains": ["docs.rs", "tokio.rs"],
            "exclude_domains": ["spam.com"],
            "time_range": "day",
            "start_date": "2025-01-02",
            "end_date": "2025-03-04"
        })
    );
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0].url, "https://docs.rs/tokio");
    assert_eq!(hits[0].snippet, "An asynchronous runtime");
    assert_eq!(hits[0].date.as_deref(), Some("2025-02-03"));
    assert_eq!(hits[1].date, None);
}

#[tokio::test]
async fn perplexity_posts_every_filter_and_maps_hits() {
    let service = FakeService::start(
        StatusCode::OK,
        json!({
            "id": "search-1",
            "server_time": null,
            "results": [
                {"title": "A", "url": "https://a.com/x", "snippet": "Snippet A",
                 "date": "2025-01-05", "last_updated": "2025-02-01"},
                {"title": "B", "url": "https://b.a.com/y", "snippet": "Snippet B", "date": null}
            ]
        }),
    )
    .await;
    let backend = Perplexity::new("pplx-secret", Some(&service.base), &loopback()).unwrap();
    let hits = backend
        .search(&SearchQuery {
            text: "what is a".into(),
            max_results: 7,
            allow_domains: vec!["a.com".into()],
            deny_domains: vec!["b.com".into()],
            recency: None,
            published: DateRange {
                after: date(2025, 1, 2),
                before: date(2025, 3, 4),
            },
            last_updated: DateRange {
                after: date(2024, 12, 1),
                before: date(2025, 12, 31),
            },
            user_location: Some(UserLocation {
                country: Some("us".into()),
                ..UserLocation::default()
            }),
            search_type: Some(SearchType::Fast),
            max_tokens_per_page: Some(512),
        })
        .await
        .unwrap();

    let request = service.only_request();
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/search");
    assert_eq!(request.header("authorization"), Some("Bearer pplx-secret"));
    assert_eq!(
        request.json(),
        json!({
            "query": "what is a",
            "max_results": 7,
            "search_domain_filter": ["a.com", "-b.com"],
            "search_after_date_filter": "01/02/2025",
            "search_before_date_filter": "03/04/2025",
            "last_updated_after_filter": "12/01/2024",
            "last_updated_before_filter": "12/31/2025",
            "country": "US",
            "search_type": "fast",
            "max_tokens_per_page": 512
        })
    );
    assert_eq!(
        hits,
        vec![
            Hit {
                url: "https://a.com/x".into(),
                title: "A".into(),
                snippet: "Snippet A".into(),
                date: Some("2025-01-05".into()),
                last_updated: Some("2025-02-01".into()),
            },
            Hit {
                url: "https://b.a.com/y".into(),
                title: "B".into(),
                snippet: "Snippet B".into(),
                date: None,
                last_updated: None,
            },
        ]
    );

    // Recency maps one to one, `hour` included.
    backend
        .search(&SearchQuery {
            text: "news".into(),
            recency: Some(RecencyFilter::Hour),
            ..SearchQuery::default()
        })
        .await
        .unwrap();
    let second = service.requests.lock().unwrap()[1].json();
    assert_eq!(
        second,
        json!({"query": "news", "max_results": 10, "search_recency_filter": "hour"})
    );
}

#[tokio::test]
async fn an_error_status_is_an_in_band_error() {
    let service = FakeService::start(
        StatusCode::INTERNAL_SERVER_ERROR,
        json!({"error": {"message": "engine exploded", "type": "internal_error"}}),
    )
    .await;
    let backend = Perplexity::new("pplx-secret", Some(&service.base), &loopback()).unwrap();
    let err = backend
        .search(&SearchQuery {
            text: "x".into(),
            ..SearchQuery::default()
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, BackendError::Status { status: 500, message } if message == "engine exploded"),
        "{err:?}"
    );

    let tool = WebSearch::new(Arc::new(backend), 0, &WebSearchTool::default()).unwrap();
    let (outcome, events) = call(&tool, r#"{"queries": ["first", "second"]}"#, 1).await;
    assert!(
        outcome.model_text.starts_with("web_search failed"),
        "{}",
        outcome.model_text
    );
    assert!(
        outcome.model_text.contains("HTTP 500"),
        "{}",
        outcome.model_text
    );
    assert!(
        outcome.model_text.contains("engine exploded"),
        "{}",
        outcome.model_text
    );
    assert!(!outcome.model_text.contains("pplx-secret"));
    assert!(outcome.invocations.is_empty());
    assert!(outcome.sources.is_empty());
    assert!(results_of(&outcome).is_empty());
    assert_eq!(
        events,
        vec![
            EventData::ReasoningStarted { thought: None },
            EventData::SearchQueries {
                queries: vec!["first".into(), "second".into()],
                thought: None
            },
            EventData::SearchResults {
                results: vec![],
                thought: None,
                usage: None
            },
            EventData::ReasoningStopped { thought: None },
        ]
    );
}

#[tokio::test]
async fn an_unreachable_back_end_is_an_in_band_error() {
    // A port that was free a moment ago.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let backend = SearxNg::new(&format!("http://{addr}"), &loopback()).unwrap();
    let tool = WebSearch::new(Arc::new(backend), 0, &WebSearchTool::default()).unwrap();
    let (outcome, _) = call(&tool, r#"{"queries": ["anything"]}"#, 1).await;
    assert!(
        outcome
            .model_text
            .starts_with("web_search failed: the searxng search back end"),
        "{}",
        outcome.model_text
    );
}

#[tokio::test]
async fn the_guard_refuses_a_loopback_back_end_it_was_not_told_to_allow() {
    let err = SearxNg::new("http://127.0.0.1:8888", &Policy::strict())
        .err()
        .expect("refused");
    assert!(matches!(err, BackendError::Blocked(_)), "{err:?}");
    let err = Brave::new("", None, &Policy::strict())
        .err()
        .expect("refused");
    assert!(matches!(err, BackendError::Config(_)), "{err:?}");
}

#[tokio::test]
async fn backend_selection_falls_back_to_the_local_index() {
    let dir = temp_dir("select");
    let mut settings = BackendSettings {
        local_index_path: dir.join("data").join("index.sqlite"),
        local_index_url: None,
        ..BackendSettings::default()
    };
    let backend = backend_from_settings(&settings, &loopback()).await.unwrap();
    assert_eq!(backend.name(), "local index");
    assert!(settings.local_index_path.exists());

    settings.perplexity_api_key = Some("p".into());
    let backend = backend_from_settings(&settings, &loopback()).await.unwrap();
    assert_eq!(backend.name(), "perplexity");
    settings.tavily_api_key = Some("t".into());
    let backend = backend_from_settings(&settings, &loopback()).await.unwrap();
    assert_eq!(backend.name(), "tavily");
    settings.brave_api_key = Some("b".into());
    let backend = backend_from_settings(&settings, &loopback()).await.unwrap();
    assert_eq!(backend.name(), "brave");
    settings.searxng_url = Some("http://127.0.0.1:8888".into());
    let backend = backend_from_settings(&settings, &loopback()).await.unwrap();
    assert_eq!(backend.name(), "searxng");
    let _ = std::fs::remove_dir_all(dir);
}

// ---------------------------------------------------------------------------------------
// Filters as the final check, budgets

#[tokio::test]
async fn the_final_check_keeps_only_allowed_domains() {
    let backend = Canned::answering(vec![
        hit("https://example.com/a"),
        hit("https://docs.example.com/b"),
        hit("https://other.org/c"),
        hit("https://notexample.com/d"),
    ]);
    let tool = WebSearch::new(
        backend.clone(),
        0,
        &filtered(WebSearchFilters {
            search_domain_filter: Some(vec!["example.com".into()]),
            ..WebSearchFilters::default()
        }),
    )
    .unwrap();
    let (outcome, _) = call(&tool, r#"{"queries": ["q"]}"#, 1).await;
    assert_eq!(
        urls(&results_of(&outcome)),
        vec!["https://example.com/a", "https://docs.example.com/b"]
    );
    // The filter also went upstream.
    let seen = backend.seen.lock().unwrap();
    assert_eq!(seen[0].allow_domains, vec!["example.com"]);
}

#[tokio::test]
async fn the_deny_prefix_removes_a_domain_and_its_subdomains() {
    let backend = Canned::answering(vec![
        hit("https://example.com/a"),
        hit("https://docs.example.com/b"),
        hit("https://other.org/c"),
        hit("https://notexample.com/d"),
    ]);
    let tool = WebSearch::new(
        backend.clone(),
        0,
        &filtered(WebSearchFilters {
            search_domain_filter: Some(vec!["-example.com".into()]),
            ..WebSearchFilters::default()
        }),
    )
    .unwrap();
    let (outcome, _) = call(&tool, r#"{"queries": ["q"]}"#, 1).await;
    assert_eq!(
        urls(&results_of(&outcome)),
        vec!["https://other.org/c", "https://notexample.com/d"]
    );
    assert_eq!(
        backend.seen.lock().unwrap()[0].deny_domains,
        vec!["example.com"]
    );
}

#[tokio::test]
async fn date_filters_and_recency_apply_to_dated_hits() {
    let backend = Canned::answering(vec![
        dated("https://a.com/fresh", Some(days_ago(2)), None),
        dated("https://a.com/old", Some(days_ago(40)), None),
        dated("https://a.com/undated", None, None),
        dated("https://a.com/updated-long-ago", None, Some(days_ago(400))),
    ]);
    let tool = WebSearch::new(
        backend.clone(),
        0,
        &filtered(WebSearchFilters {
            search_recency_filter: Some(RecencyFilter::Week),
            ..WebSearchFilters::default()
        }),
    )
    .unwrap();
    let (outcome, _) = call(&tool, r#"{"queries": ["q"]}"#, 1).await;
    let results = results_of(&outcome);
    assert_eq!(
        urls(&results),
        vec!["https://a.com/fresh", "https://a.com/undated"]
    );
    assert_eq!(results[0].date, Some(days_ago(2)));

    let backend = Canned::answering(vec![
        dated("https://a.com/2024", Some("2024-06-01".into()), None),
        dated(
            "https://a.com/2025",
            Some("2025-02-01T08:00:00Z".into()),
            Some("2025-02-03".into()),
        ),
        dated(
            "https://a.com/2025-stale",
            Some("2025-02-01".into()),
            Some("2025-01-15".into()),
        ),
        dated("https://a.com/undated", None, None),
    ]);
    let tool = WebSearch::new(
        backend.clone(),
        0,
        &filtered(WebSearchFilters {
            search_after_date_filter: Some("01/01/2025".into()),
            search_before_date_filter: Some("12/31/2025".into()),
            last_updated_after_filter: Some("02/01/2025".into()),
            ..WebSearchFilters::default()
        }),
    )
    .unwrap();
    let (outcome, _) = call(&tool, r#"{"queries": ["q"]}"#, 1).await;
    let results = results_of(&outcome);
    assert_eq!(
        urls(&results),
        vec!["https://a.com/2025", "https://a.com/undated"]
    );
    // Dates reach the wire as YYYY-MM-DD.
    assert_eq!(results[0].date.as_deref(), Some("2025-02-01"));
    assert_eq!(results[0].last_updated.as_deref(), Some("2025-02-03"));
    let seen = backend.seen.lock().unwrap();
    assert_eq!(seen[0].published.after, date(2025, 1, 1));
    assert_eq!(seen[0].last_updated.after, date(2025, 2, 1));
}

#[tokio::test]
async fn budgets_trim_snippets() {
    let long = |url: &str| Hit {
        snippet: "word ".repeat(400),
        ..hit(url)
    };
    let hits = vec![
        long("https://a.com/1"),
        long("https://a.com/2"),
        long("https://a.com/3"),
    ];

    let explicit = WebSearchTool {
        search_context_size: Some(SearchContextSize::High),
        max_tokens: Some(120),
        max_tokens_per_page: Some(50),
        ..WebSearchTool::default()
    };
    let tool = WebSearch::new(Canned::answering(hits.clone()), 0, &explicit).unwrap();
    let (outcome, _) = call(&tool, r#"{"queries": ["q"]}"#, 1).await;
    let lengths: Vec<usize> = results_of(&outcome)
        .iter()
        .map(|r| r.snippet.chars().count())
        .collect();
    assert_eq!(lengths.len(), 3);
    assert!(lengths.iter().all(|&n| n <= 200), "{lengths:?}");
    assert!(lengths.iter().sum::<usize>() <= 480, "{lengths:?}");
    assert!(lengths[2] < lengths[0], "{lengths:?}");
    assert!(results_of(&outcome)[0].snippet.ends_with('…'));

    // `low` is 300 tokens in all: the first page uses it up.
    let low = WebSearchTool {
        search_context_size: Some(SearchContextSize::Low),
        ..WebSearchTool::default()
    };
    let tool = WebSearch::new(Canned::answering(hits), 0, &low).unwrap();
    assert_eq!(tool.query_template().max_tokens_per_page, Some(300));
    let (outcome, _) = call(&tool, r#"{"queries": ["q"]}"#, 1).await;
    let results = results_of(&outcome);
    assert_eq!(results.len(), 1);
    assert!(results[0].snippet.chars().count() <= 1200);
    assert!(results[0].snippet.chars().count() > 1100);
}

#[tokio::test]
async fn max_results_caps_the_merged_list() {
    let backend = Arc::new(Canned {
        by_text: HashMap::from([
            (
                "a".to_owned(),
                (1..=5)
                    .map(|i| hit(&format!("https://a.com/{i}")))
                    .collect(),
            ),
            (
                "b".to_owned(),
                (1..=5)
                    .map(|i| hit(&format!("https://b.com/{i}")))
                    .collect(),
            ),
        ]),
        ..Canned::default()
    });
    let tool = WebSearch::new(
        backend.clone(),
        0,
        &WebSearchTool {
            max_results: Some(3),
            ..WebSearchTool::default()
        },
    )
    .unwrap();
    let (outcome, _) = call(&tool, r#"{"queries": ["a", "b"]}"#, 1).await;
    assert_eq!(
        urls(&results_of(&outcome)),
        vec!["https://a.com/1", "https://b.com/1", "https://a.com/2"]
    );
    assert!(
        backend
            .seen
            .lock()
            .unwrap()
            .iter()
            .all(|q| q.max_results == 3)
    );
}

// ---------------------------------------------------------------------------------------
// The hosted tool

#[tokio::test]
async fn the_call_emits_events_in_order_and_numbers_from_next_source() {
    let backend = Arc::new(Canned {
        by_text: HashMap::from([
            (
                "alpha".to_owned(),
                vec![
                    dated("https://a.com/1", Some("2025-01-02".into()), None),
                    hit("https://shared.org/"),
                ],
            ),
            (
                "beta".to_owned(),
                vec![hit("https://b.com/1"), hit("https://shared.org/#top")],
            ),
        ]),
        ..Canned::default()
    });
    let tool = WebSearch::new(backend.clone(), 0, &WebSearchTool::default()).unwrap();
    let spec = tool.spec();
    assert_eq!(spec.name, "web_search");
    assert_eq!(spec.parameters["properties"]["queries"]["maxItems"], 3);
    assert_eq!(spec.parameters["required"], json!(["queries"]));
    assert!(spec.description.unwrap().contains("[n]"));

    let (outcome, events) = call(&tool, r#"{"queries": ["alpha", "beta"]}"#, 4).await;
    let results = results_of(&outcome);
    assert_eq!(
        results
            .iter()
            .map(|r| (r.id, r.url.as_str()))
            .collect::<Vec<_>>(),
        vec![
            (4, "https://a.com/1"),
            (5, "https://b.com/1"),
            (6, "https://shared.org/")
        ]
    );
    assert!(results.iter().all(|r| r.source.as_deref() == Some("web")));
    assert_eq!(results[0].date.as_deref(), Some("2025-01-02"));
    assert_eq!(
        events,
        vec![
            EventData::ReasoningStarted { thought: None },
            EventData::SearchQueries {
                queries: vec!["alpha".into(), "beta".into()],
                thought: None
            },
            EventData::SearchResults {
                results: results.clone(),
                thought: None,
                usage: None
            },
            EventData::ReasoningStopped { thought: None },
        ]
    );
    match outcome.items.as_slice() {
        [OutputItem::SearchResults(item)] => {
            assert_eq!(item.queries, Some(vec!["alpha".into(), "beta".into()]));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(outcome.invocations, vec![("search_web".to_owned(), 2)]);
    assert_eq!(
        outcome.sources,
        vec![
            Source {
                number: 4,
                url: "https://a.com/1".into(),
                title: "Title of https://a.com/1".into()
            },
            Source {
                number: 5,
                url: "https://b.com/1".into(),
                title: "Title of https://b.com/1".into()
            },
            Source {
                number: 6,
                url: "https://shared.org/".into(),
                title: "Title of https://shared.org/".into()
            },
        ]
    );
    let text = &outcome.model_text;
    assert!(
        text.contains(
            "[4] Title of https://a.com/1 — https://a.com/1 (2025-01-02)\nAbout https://a.com/1"
        ),
        "{text}"
    );
    assert!(text.contains("[6] "), "{text}");
    assert!(text.contains("Cite"), "{text}");
    assert_eq!(backend.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn bad_arguments_run_no_search() {
    let backend = Canned::answering(vec![hit("https://a.com/")]);
    let tool = WebSearch::new(backend.clone(), 0, &WebSearchTool::default()).unwrap();
    for arguments in [
        "{}",
        "nonsense",
        r#"{"queries": []}"#,
        r#"{"queries": ["1","2","3","4"]}"#,
    ] {
        let (outcome, events) = call(&tool, arguments, 1).await;
        assert!(
            outcome.model_text.contains("web_search"),
            "{}",
            outcome.model_text
        );
        assert!(events.is_empty(), "{events:?}");
        assert!(outcome.items.is_empty());
        assert!(outcome.invocations.is_empty());
    }
    assert_eq!(backend.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_query_without_results_says_so() {
    let tool = WebSearch::new(Canned::answering(vec![]), 0, &WebSearchTool::default()).unwrap();
    let (outcome, events) = call(&tool, r#"{"queries": ["nothing here"]}"#, 1).await;
    assert!(
        outcome.model_text.starts_with("No results found"),
        "{}",
        outcome.model_text
    );
    assert_eq!(outcome.invocations, vec![("search_web".to_owned(), 1)]);
    assert_eq!(events.len(), 4);
}

// ---------------------------------------------------------------------------------------
// The local index

#[tokio::test]
async fn the_local_index_ranks_and_filters() {
    let dir = temp_dir("rank");
    let index = LocalIndex::open(&dir.join("index.sqlite")).await.unwrap();
    ranks_and_filters(&index).await;

    // The file persists.
    index.close().await;
    let reopened = LocalIndex::open(&dir.join("index.sqlite")).await.unwrap();
    assert_eq!(reopened.count().await.unwrap(), 3);
    reopened.close().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// The same index in PostgreSQL (what replicas sharing the store's database search): the same
/// answers, ranks and filters, and it persists in the database.
#[tokio::test]
async fn the_local_index_ranks_and_filters_on_postgres() {
    // A database of its own on `AGENTD_TEST_POSTGRES_URL`, dropped at the end.
    let db = pgschema::testdb::TestDatabase::create("agentd_search")
        .await
        .unwrap();
    let index = LocalIndex::open_postgres(db.url()).await.unwrap();
    ranks_and_filters(&index).await;
    // A page's images, searched by alt text.
    let dir = temp_dir("pg-images");
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("cats.html");
    std::fs::write(
        &page,
        "<html><head><title>Cats</title></head><body><p>All about cats.</p>\
         <img src=\"https://img.example.com/cat.jpg\" alt=\"A sleeping cat\" width=\"640\" height=\"480\">\
         </body></html>",
    )
    .unwrap();
    index.add_path(&page).await.unwrap();
    assert_eq!(index.image_count().await.unwrap(), 1);
    let images = index
        .search_images(&search::ImageQuery {
            text: "sleeping".to_owned(),
            max_results: 5,
            ..search::ImageQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(images.len(), 1, "{images:?}");
    assert_eq!(images[0].image_url, "https://img.example.com/cat.jpg");
    assert_eq!(images[0].width, Some(640));
    let _ = std::fs::remove_dir_all(dir);
    index.close().await;
    // Two replicas opening it at once find the tables made once, and the documents.
    let (a, b) = tokio::join!(
        LocalIndex::open_postgres(db.url()),
        LocalIndex::open_postgres(db.url())
    );
    assert_eq!(a.unwrap().count().await.unwrap(), 4);
    assert_eq!(b.unwrap().count().await.unwrap(), 4);
}

async fn ranks_and_filters(index: &LocalIndex) {
    index
        .add_document(
            "https://www.rust-lang.org/learn",
            "Learn Rust",
            "Rust ownership and borrowing explained. The borrow checker enforces the rules \
             of ownership at compile time.",
            None,
        )
        .await
        .unwrap();
    index
        .add_document(
            "https://docs.python.org/3/tutorial/",
            "The Python Tutorial",
            "Python is an easy to learn, powerful programming language with dynamic typing.",
            Some("2023-10-02"),
        )
        .await
        .unwrap();
    index
        .add_document(
            "https://blog.example.com/tokio",
            "Async Rust with Tokio",
            "Tokio is an asynchronous runtime for the Rust programming language. It provides \
             timers, networking and scheduling.",
            Some("05/01/2024"),
        )
        .await
        .unwrap();
    assert_eq!(index.count().await.unwrap(), 3);
    let search = |text: &str| SearchQuery {
        text: text.to_owned(),
        max_results: 10,
        ..SearchQuery::default()
    };

    let hits = index
        .search(&search("borrow checker ownership"))
        .await
        .unwrap();
    assert_eq!(hits[0].url, "https://www.rust-lang.org/learn");
    assert_eq!(hits.len(), 1);
    let hits = index.search(&search("asynchronous runtime")).await.unwrap();
    assert_eq!(hits[0].url, "https://blog.example.com/tokio");
    assert_eq!(hits[0].date.as_deref(), Some("2024-05-01"));
    assert_eq!(
        hits[0].last_updated,
        Some(today().format("%Y-%m-%d").to_string())
    );
    assert!(
        hits[0].snippet.contains("asynchronous runtime"),
        "{}",
        hits[0].snippet
    );
    // Stemming: "languages" finds "language"; a title match ranks first.
    let hits = index
        .search(&search("programming languages python"))
        .await
        .unwrap();
    assert_eq!(hits[0].url, "https://docs.python.org/3/tutorial/");
    assert_eq!(hits.len(), 2);
    // Query syntax is not interpreted.
    assert!(index.search(&search("NOT \"rust\" AND (")).await.is_ok());
    assert!(index.search(&search("   ")).await.unwrap().is_empty());

    // Domain filters on the indexed URLs.
    let rust = |allow: Vec<String>, deny: Vec<String>| SearchQuery {
        allow_domains: allow,
        deny_domains: deny,
        ..search("rust")
    };
    let hits = index
        .search(&rust(vec!["example.com".into()], vec![]))
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.url.as_str()).collect::<Vec<_>>(),
        vec!["https://blog.example.com/tokio"]
    );
    let hits = index
        .search(&rust(vec![], vec!["rust-lang.org".into()]))
        .await
        .unwrap();
    assert!(
        hits.iter().all(|h| !h.url.contains("rust-lang.org")),
        "{hits:?}"
    );
    assert_eq!(hits.len(), 1);
    // Dates: the dated Tokio post is older than the range; the undated page stays.
    let hits = index
        .search(&SearchQuery {
            published: DateRange {
                after: date(2024, 6, 1),
                before: None,
            },
            ..search("rust")
        })
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.url.as_str()).collect::<Vec<_>>(),
        vec!["https://www.rust-lang.org/learn"]
    );

    // Adding a URL again replaces its document.
    index
        .add_document(
            "https://www.rust-lang.org/learn",
            "Learn Rust",
            "Cargo and crates.",
            None,
        )
        .await
        .unwrap();
    assert_eq!(index.count().await.unwrap(), 3);
    assert!(index.search(&search("borrow")).await.unwrap().is_empty());
    assert_eq!(index.search(&search("crates")).await.unwrap().len(), 1);
    assert!(
        index
            .add_document("https://x.org", "X", "text", Some("soon"))
            .await
            .is_err()
    );

    // Through the hosted tool, with a domain filter.
    let tool = WebSearch::new(
        Arc::new(index.clone()),
        0,
        &filtered(WebSearchFilters {
            search_domain_filter: Some(vec!["example.com".into()]),
            ..WebSearchFilters::default()
        }),
    )
    .unwrap();
    let (outcome, _) = call(&tool, r#"{"queries": ["rust"]}"#, 1).await;
    assert_eq!(
        urls(&results_of(&outcome)),
        vec!["https://blog.example.com/tokio"]
    );
}

/// Regression: a fresh data dir sometimes failed to start with "database is locked" from the
/// local index, whose pool opened connections while one of them switched the new file to WAL
/// and created the schema. Many fresh indexes opened at once, each used at once by several
/// tasks, must all open and answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fresh_indexes_open_at_once_without_locking() {
    let dir = temp_dir("fresh");
    let opens = (0..40).map(|i| {
        let path = dir.join(format!("index-{i}.sqlite"));
        tokio::spawn(async move {
            let index = LocalIndex::open(&path).await?;
            let uses = (0..4).map(|j| {
                let index = index.clone();
                async move {
                    index
                        .add_document(
                            &format!("https://example.com/{j}"),
                            "Title",
                            "body text",
                            None,
                        )
                        .await?;
                    index.count().await
                }
            });
            futures::future::try_join_all(uses).await?;
            let count = index.count().await?;
            index.close().await;
            Ok::<u64, BackendError>(count)
        })
    });
    for result in futures::future::join_all(opens).await {
        assert_eq!(result.unwrap().unwrap(), 4, "open");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn the_local_index_adds_files_and_directories() {
    let dir = temp_dir("files");
    let docs = dir.join("docs");
    std::fs::create_dir_all(docs.join("nested")).unwrap();
    std::fs::create_dir_all(docs.join(".hidden")).unwrap();
    std::fs::write(
        docs.join("notes.md"),
        "---\ndate: 2024-01-02\n---\n\n# Gardening notes\n\nTomatoes need full sun and steady water.\n",
    )
    .unwrap();
    std::fs::write(
        docs.join("nested").join("bread.html"),
        "<html><head><title>Bread baking</title>\
         <meta property=\"article:published_time\" content=\"2023-04-05T06:00:00Z\"></head>\
         <body><script>var sourdoughTracker = 1;</script><h1>Bread</h1>\
         <p>A sourdough starter needs flour and water.</p></body></html>",
    )
    .unwrap();
    std::fs::write(
        docs.join("figures.txt"),
        "Quarterly figures rose by ten percent.",
    )
    .unwrap();
    std::fs::write(docs.join(".hidden").join("secret.md"), "# Secret tomatoes").unwrap();
    std::fs::write(
        docs.join("photo.png"),
        [0x89u8, 0x50, 0x4e, 0x47, 0xff, 0xfe],
    )
    .unwrap();

    let index = LocalIndex::in_memory().await.unwrap();
    let added = index.add_path(&docs).await.unwrap();
    assert_eq!(added.len(), 3, "{added:?}");
    assert!(
        added.iter().all(|url| url.starts_with("file:///")),
        "{added:?}"
    );
    assert_eq!(index.count().await.unwrap(), 3);

    let search = |text: &str| SearchQuery {
        text: text.to_owned(),
        max_results: 10,
        ..SearchQuery::default()
    };
    let hits = index.search(&search("sourdough")).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].title, "Bread baking");
    assert!(
        hits[0].url.ends_with("/nested/bread.html"),
        "{}",
        hits[0].url
    );
    assert_eq!(hits[0].date.as_deref(), Some("2023-04-05"));
    assert!(
        hits[0].snippet.contains("sourdough starter"),
        "{}",
        hits[0].snippet
    );
    assert!(!hits[0].snippet.contains("<p>"), "{}", hits[0].snippet);
    assert!(hits[0].last_updated.is_some());

    let hits = index.search(&search("tomatoes")).await.unwrap();
    assert_eq!(hits.len(), 1, "the hidden file is skipped: {hits:?}");
    assert_eq!(hits[0].title, "Gardening notes");
    assert_eq!(hits[0].date.as_deref(), Some("2024-01-02"));
    let hits = index.search(&search("quarterly")).await.unwrap();
    assert_eq!(hits[0].title, "figures");

    // A file named directly is taken whatever its extension; binary is refused.
    std::fs::write(dir.join("README"), "Plain readme about kayaks.").unwrap();
    let added = index.add_path(&dir.join("README")).await.unwrap();
    assert_eq!(added.len(), 1);
    assert_eq!(index.search(&search("kayaks")).await.unwrap().len(), 1);
    let err = index.add_path(&docs.join("photo.png")).await.unwrap_err();
    assert!(matches!(err, BackendError::Document(_)), "{err:?}");
    let err = index.add_path(&dir.join("missing")).await.unwrap_err();
    assert!(matches!(err, BackendError::Document(_)), "{err:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn the_local_index_adds_pages_through_the_guard() {
    let app = Router::new()
        .route(
            "/article",
            get(|| async {
                (
                    [
                        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                        (header::LAST_MODIFIED, "Wed, 21 Oct 2015 07:28:00 GMT"),
                    ],
                    "<html><head><title>Kayak &amp; canoe guide</title>\
                     <meta name=\"date\" content=\"2015-10-20\"></head>\
                     <body><p>Paddling a kayak needs a good stroke.</p></body></html>",
                )
            }),
        )
        .route(
            "/notes.md",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/markdown")],
                    "# Packing list\n\nTent, stove, headlamp.",
                )
            }),
        )
        .route(
            "/image",
            get(|| async { ([(header::CONTENT_TYPE, "image/png")], vec![0u8, 1, 2]) }),
        );
    let addr = serve(app).await;
    let base = format!("http://{addr}");
    let policy = loopback();
    let client = LocalIndex::guarded_client(&policy).unwrap();
    let index = LocalIndex::in_memory().await.unwrap();

    let url = index
        .add_url(&policy, &client, &format!("{base}/article"))
        .await
        .unwrap();
    assert_eq!(url, format!("{base}/article"));
    let hits = index
        .search(&SearchQuery {
            text: "kayak stroke".into(),
            ..SearchQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].title, "Kayak & canoe guide");
    assert_eq!(hits[0].date.as_deref(), Some("2015-10-20"));
    assert_eq!(hits[0].last_updated.as_deref(), Some("2015-10-21"));

    index
        .add_url(&policy, &client, &format!("{base}/notes.md"))
        .await
        .unwrap();
    let hits = index
        .search(&SearchQuery {
            text: "headlamp".into(),
            ..SearchQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(hits[0].title, "Packing list");

    let err = index
        .add_url(&policy, &client, &format!("{base}/image"))
        .await
        .unwrap_err();
    assert!(matches!(err, BackendError::Document(_)), "{err:?}");
    let err = index
        .add_url(&policy, &client, &format!("{base}/missing"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, BackendError::Status { status: 404, .. }),
        "{err:?}"
    );

    // Without the operator's allowance the guard refuses loopback.
    let strict = Policy::strict();
    let strict_client = LocalIndex::guarded_client(&strict).unwrap();
    let err = index
        .add_url(&strict, &strict_client, &format!("{base}/article"))
        .await
        .unwrap_err();
    assert!(matches!(err, BackendError::Blocked(_)), "{err:?}");
    assert_eq!(index.count().await.unwrap(), 2);
}
