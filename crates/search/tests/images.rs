//! `image_search` on each back end against a local server answering its documented JSON
//! (SearxNG's image category, Brave's image search with its error shape), the local index's
//! images (pages added through the guard keep their `<img>` with alt text; an index file from
//! before images gains the table), and the network guard on every URL a back end returns:
//! refused images are never fetched, unknown sizes are measured through the guarded client.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::Query;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use engine::hosted::{CallContext, EventSink, HostedTool, NoFiles, ToolOutcome};
use netguard::Policy;
use protocol::events::EventData;
use protocol::request::{ImageSearchFilters, ImageSearchTool};
use search::{Brave, ImageBackend, ImageSearch, ImageShared, LocalIndex, SearxNg};
use serde_json::{Value, json};

type Seen = Arc<Mutex<Vec<(HeaderMap, HashMap<String, String>)>>>;

struct Events(Mutex<Vec<EventData>>);

impl EventSink for Events {
    fn emit(&self, event: EventData) {
        self.0.lock().unwrap().push(event);
    }
}

/// A PNG header of `width` × `height` (what a measuring read needs).
fn png(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    bytes.extend_from_slice(&width.to_be_bytes());
    bytes.extend_from_slice(&height.to_be_bytes());
    bytes.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    bytes
}

async fn serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    format!("http://{addr}")
}

fn loopback() -> Policy {
    Policy::with_allowed(&["127.0.0.0/8".to_owned()]).unwrap()
}

/// One call of the tool: its outcome and events.
async fn call(
    backend: Arc<dyn ImageBackend>,
    request_policy: Policy,
    tool: ImageSearchTool,
    queries: &[&str],
) -> (ToolOutcome, Vec<EventData>) {
    let shared = Arc::new(ImageShared::new(request_policy).unwrap());
    let search = ImageSearch::new(backend, shared, 0, &tool).unwrap();
    let events = Events(Mutex::new(Vec::new()));
    let outcome = search
        .call(
            &json!({ "queries": queries }).to_string(),
            CallContext {
                events: &events,
                next_source: 4,
                call_id: "call_img",
                conversation: "resp_1",
                project_id: "p",
                files: &NoFiles,
            },
        )
        .await;
    (outcome, events.0.into_inner().unwrap())
}

fn results(outcome: &ToolOutcome) -> Vec<Value> {
    let items = serde_json::to_value(&outcome.items).unwrap();
    assert_eq!(items[0]["type"], "image_search_results", "{items}");
    items[0]["results"].as_array().unwrap().clone()
}

/// An image server: `/img/{name}.png` answers a PNG of the size its name says
/// (`300x200.png`), counting every request.
fn image_routes(hits: Arc<AtomicUsize>) -> axum::Router {
    axum::Router::new().route(
        "/img/{name}",
        get(
            move |axum::extract::Path(name): axum::extract::Path<String>| {
                hits.fetch_add(1, Ordering::SeqCst);
                async move {
                    let size = name.trim_end_matches(".png");
                    let (w, h) = size.split_once('x').unwrap_or(("1", "1"));
                    (
                        [("content-type", "image/png")],
                        png(w.parse().unwrap_or(1), h.parse().unwrap_or(1)),
                    )
                }
            },
        ),
    )
}

#[tokio::test]
async fn searxng_images_are_checked_measured_and_filtered() {
    let hits = Arc::new(AtomicUsize::new(0));
    let seen: Arc<Mutex<Vec<HashMap<String, String>>>> = Arc::default();
    let record = seen.clone();
    let images = serve(image_routes(hits.clone())).await;
    let base = images.clone();
    let router = axum::Router::new().route(
        "/search",
        get(move |Query(params): Query<HashMap<String, String>>| {
            record.lock().unwrap().push(params);
            let base = base.clone();
            async move {
                axum::Json(json!({"query": "kites", "number_of_results": 5, "results": [
                    {"url": "https://kites.example/red", "title": "A <b>red</b> kite",
                     "img_src": "https://cdn.kites.example/red.jpg", "thumbnail_src": "https://cdn.kites.example/t.jpg",
                     "resolution": "1024 x 768", "img_format": "JPEG", "engine": "bing images", "category": "images"},
                    {"url": "https://kites.example/measured", "title": "Measured",
                     "img_src": format!("{base}/img/300x200.png"), "engine": "x", "category": "images"},
                    {"url": "https://kites.example/meta", "title": "Metadata",
                     "img_src": "http://169.254.169.254/latest/meta-data/x.png", "resolution": "10 x 10"},
                    {"url": "file:///etc/passwd", "title": "Local file", "img_src": "https://cdn.kites.example/f.png", "resolution": "1 x 1"},
                    {"url": "https://kites.example/decimal", "title": "Decimal IP", "img_src": "http://2130706433/x.png"},
                    {"url": "https://spam.example/kite", "title": "Denied domain",
                     "img_src": "https://cdn.spam.example/k.png", "resolution": "5 x 5"}
                ]}))
            }
        }),
    );
    let searx = serve(router).await;
    let backend: Arc<dyn ImageBackend> = Arc::new(SearxNg::new(&searx, &loopback()).unwrap());
    let tool = ImageSearchTool {
        max_results: Some(6),
        filters: Some(ImageSearchFilters {
            domain_filter: Some(vec!["-spam.example".into()]),
            format_filter: None,
            safe_search: None,
        }),
    };

    // The request policy allows loopback here, so the unmeasured image is read once.
    let (outcome, events) = call(backend.clone(), loopback(), tool.clone(), &["kites"]).await;
    let found = results(&outcome);
    assert_eq!(
        found,
        vec![
            json!({"image_url": "https://cdn.kites.example/red.jpg", "origin_url": "https://kites.example/red",
                   "title": "A red kite", "width": 1024, "height": 768}),
            json!({"image_url": format!("{images}/img/300x200.png"), "origin_url": "https://kites.example/measured",
                   "title": "Measured", "width": 300, "height": 200}),
        ]
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    let params = seen.lock().unwrap()[0].clone();
    assert_eq!(params["categories"], "images");
    assert_eq!(params["safesearch"], "2");
    assert_eq!(params["format"], "json");
    assert_eq!(outcome.invocations, vec![("image_search".to_owned(), 1)]);
    assert_eq!(outcome.sources[0].number, 4);
    assert_eq!(outcome.sources[0].url, "https://kites.example/red");
    assert!(
        outcome.model_text.contains("[5] Measured"),
        "{}",
        outcome.model_text
    );
    let events = serde_json::to_value(&events).unwrap();
    assert_eq!(events[0]["type"], "response.reasoning.image_search_queries");
    assert_eq!(events[0]["call_id"], "call_img");
    assert_eq!(events[1]["type"], "response.reasoning.image_search_results");
    assert_eq!(events[1]["results"].as_array().unwrap().len(), 2);

    // Under the strict request policy the loopback image is refused and never fetched.
    let (strict, _) = call(backend.clone(), Policy::strict(), tool.clone(), &["kites"]).await;
    let urls: Vec<Value> = results(&strict)
        .iter()
        .map(|r| r["image_url"].clone())
        .collect();
    assert_eq!(urls, vec![json!("https://cdn.kites.example/red.jpg")]);
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "a refused image was fetched"
    );

    // A format filter keeps what is known to be of that format.
    let png_only = ImageSearchTool {
        filters: Some(ImageSearchFilters {
            format_filter: Some(vec!["png".into()]),
            safe_search: Some(false),
            ..ImageSearchFilters::default()
        }),
        ..tool
    };
    let (outcome, _) = call(backend, loopback(), png_only, &["kites"]).await;
    let urls: Vec<Value> = results(&outcome)
        .iter()
        .map(|r| r["origin_url"].clone())
        .collect();
    assert_eq!(
        urls,
        vec![
            json!("https://kites.example/measured"),
            json!("https://spam.example/kite")
        ]
    );
    assert_eq!(seen.lock().unwrap()[2]["safesearch"], "0");
}

#[tokio::test]
async fn a_name_that_resolves_to_a_private_address_is_never_measured() {
    let hits = Arc::new(AtomicUsize::new(0));
    let images = serve(image_routes(hits.clone())).await;
    let port = images.rsplit(':').next().unwrap().to_owned();
    let router = axum::Router::new().route(
        "/search",
        get(move || {
            let port = port.clone();
            async move {
                axum::Json(json!({"results": [
                    {"url": "https://kites.example/p", "title": "Rebinding",
                     "img_src": format!("http://evil.example:{port}/img/9x9.png")}
                ]}))
            }
        }),
    );
    let searx = serve(router).await;
    let backend: Arc<dyn ImageBackend> = Arc::new(SearxNg::new(&searx, &loopback()).unwrap());
    // `evil.example` resolves to loopback, which the request policy refuses.
    let mut hosts: HashMap<String, Vec<IpAddr>> = HashMap::new();
    hosts.insert("evil.example".into(), vec!["127.0.0.1".parse().unwrap()]);
    let policy = Policy::strict().with_hosts_override(hosts);
    let (outcome, _) = call(backend, policy, ImageSearchTool::default(), &["x"]).await;
    assert!(results(&outcome).is_empty());
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the guard let a request through"
    );
}

#[tokio::test]
async fn brave_images_and_its_error_shape() {
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let router = axum::Router::new().route(
        "/res/v1/images/search",
        get(move |headers: HeaderMap, Query(params): Query<HashMap<String, String>>| {
            record.lock().unwrap().push((headers, params.clone()));
            async move {
                if params["q"] == "busy" {
                    return (StatusCode::TOO_MANY_REQUESTS, axum::Json(json!({"type": "ErrorResponse", "error": {
                        "id": "c5f5a1a0", "status": 429, "code": "RATE_LIMITED",
                        "detail": "Request rate limit exceeded for plan.",
                        "meta": {"plan": "Free", "rate_limit": 1, "rate_current": 2}}}))).into_response();
                }
                axum::Json(json!({"type": "images", "query": {"original": "kites"}, "results": [
                    {"type": "image_result", "title": "Kite &amp; sky", "url": "https://kites.example/sky",
                     "source": "kites.example", "thumbnail": {"src": "https://imgs.search.brave.com/t"},
                     "properties": {"url": "https://cdn.kites.example/sky.jpg", "placeholder": "https://imgs.search.brave.com/p",
                                    "width": 800, "height": 600},
                     "meta_url": {"scheme": "https", "netloc": "kites.example"}},
                    {"type": "image_result", "title": "No image", "url": "https://kites.example/none"}
                ]})).into_response()
            }
        }),
    );
    let base = serve(router).await;
    let backend: Arc<dyn ImageBackend> =
        Arc::new(Brave::new("brave-key", Some(&base), &loopback()).unwrap());
    let (outcome, _) = call(
        backend.clone(),
        Policy::strict(),
        ImageSearchTool {
            max_results: Some(3),
            filters: None,
        },
        &["kites"],
    )
    .await;
    assert_eq!(
        results(&outcome),
        vec![
            json!({"image_url": "https://cdn.kites.example/sky.jpg", "origin_url": "https://kites.example/sky",
                    "title": "Kite & sky", "width": 800, "height": 600})
        ]
    );
    let (headers, params) = seen.lock().unwrap()[0].clone();
    assert_eq!(headers["x-subscription-token"], "brave-key");
    assert_eq!(params["count"], "3");
    assert_eq!(params["safesearch"], "strict");

    let (busy, _) = call(
        backend,
        Policy::strict(),
        ImageSearchTool::default(),
        &["busy"],
    )
    .await;
    let items = serde_json::to_value(&busy.items).unwrap();
    let error = items[0]["error"].as_str().unwrap();
    assert!(
        error.contains("HTTP 429") && error.contains("rate limit exceeded"),
        "{error}"
    );
    assert!(
        busy.model_text.starts_with("image_search failed"),
        "{}",
        busy.model_text
    );
    assert!(busy.invocations.is_empty());
}

#[tokio::test]
async fn the_local_index_keeps_page_images_and_gains_the_table_in_old_files() {
    let hits = Arc::new(AtomicUsize::new(0));
    let router = image_routes(hits.clone()).route(
        "/gallery",
        get(|| async {
            Html(
                r#"<html><head><title>Kite gallery</title></head><body>
                <p>Kites of the coast.</p>
                <img src="/img/120x80.png" alt="A red kite over the dunes">
                <img src="/img/64x64.png" alt="Blue kite" width="640" height="480">
                <img src="/img/1x1.png">
                <img src="data:image/png;base64,AAAA" alt="inline kite">
                </body></html>"#,
            )
        }),
    );
    let site = serve(router).await;

    // An index file from before images: only the documents table, with one document.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.sqlite");
    {
        use sqlx::Connection as _;
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true);
        let mut old = sqlx::SqliteConnection::connect_with(&options)
            .await
            .unwrap();
        sqlx::query(
            "CREATE TABLE documents (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, host TEXT NOT NULL DEFAULT '',
             title TEXT NOT NULL, body TEXT NOT NULL, date TEXT, last_updated TEXT, added_at INTEGER NOT NULL)",
        )
        .execute(&mut old)
        .await
        .unwrap();
        sqlx::query("INSERT INTO documents (url, title, body, added_at) VALUES ('https://old.example/', 'Old', 'old text', 0)")
            .execute(&mut old)
            .await
            .unwrap();
        old.close().await.unwrap();
    }
    let index = LocalIndex::open(&path).await.unwrap();
    assert_eq!(index.count().await.unwrap(), 1);
    assert_eq!(index.image_count().await.unwrap(), 0);

    let policy = loopback();
    let client = LocalIndex::guarded_client(&policy).unwrap();
    index
        .add_url(&policy, &client, &format!("{site}/gallery"))
        .await
        .unwrap();
    assert_eq!(
        index.image_count().await.unwrap(),
        2,
        "images with alt text and an http(s) URL"
    );
    // Added again: its images are replaced, not doubled.
    index
        .add_url(&policy, &client, &format!("{site}/gallery"))
        .await
        .unwrap();
    assert_eq!(index.image_count().await.unwrap(), 2);

    let backend: Arc<dyn ImageBackend> = Arc::new(index.clone());
    let (outcome, _) = call(
        backend,
        loopback(),
        ImageSearchTool::default(),
        &["red kite"],
    )
    .await;
    let found = results(&outcome);
    assert_eq!(
        found[0],
        json!({"image_url": format!("{site}/img/120x80.png"), "origin_url": format!("{site}/gallery"),
                                "title": "A red kite over the dunes", "width": 120, "height": 80})
    );
    // The second image's size comes from its markup: it is not fetched.
    assert_eq!(found[1]["width"], 640);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    index.close().await;
}
