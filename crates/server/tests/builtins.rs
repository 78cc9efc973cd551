//! The built-in tools through agentd: `web_search` on a SearxNG-shaped server and on the local
//! index filled by `agentd index add`, `fetch_url` on local pages, citations, usage, events and
//! the network guard. Search services and pages are local HTTP servers; only the model is
//! scripted.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::{Query, State};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use serde_json::{Value, json};
use testkit::{Reply, TestApp};

const MODEL: &str = "openai/gpt-test";

/// Serves `router` on 127.0.0.1:0; returns its base URL.
async fn serve(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    format!("http://{addr}")
}

/// A SearxNG JSON API: records each query, answers two results.
async fn searxng(queries: Arc<std::sync::Mutex<Vec<String>>>) -> String {
    async fn search(
        State(queries): State<Arc<std::sync::Mutex<Vec<String>>>>,
        Query(params): Query<std::collections::HashMap<String, String>>,
    ) -> impl IntoResponse {
        queries
            .lock()
            .unwrap()
            .push(params.get("q").cloned().unwrap_or_default());
        axum::Json(json!({"results": [
            {"url": "https://www.rust-lang.org/", "title": "Rust Programming Language",
             "content": "A language empowering everyone to build reliable and efficient software.",
             "publishedDate": "2025-05-15T00:00:00"},
            {"url": "https://tokio.rs/", "title": "Tokio", "content": "An asynchronous runtime for Rust."}
        ]}))
    }
    serve(
        axum::Router::new()
            .route("/search", get(search))
            .with_state(queries),
    )
    .await
}

fn items<'a>(response: &'a Value, kind: &str) -> Vec<&'a Value> {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == kind)
        .collect()
}

fn tool_results(app: &TestApp, n: usize) -> Vec<String> {
    app.fake.requests()[n]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn web_search_results_are_items_events_usage_and_citations() {
    let queries = Arc::new(std::sync::Mutex::new(Vec::new()));
    let searx = searxng(queries.clone()).await;
    let app = TestApp::spawn_with(|config| config.web_search.searxng_url = Some(searx)).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "web_search",
        r#"{"queries":["rust language"]}"#,
    )]));
    let answer = "Rust builds reliable software [1], and Tokio runs it async [2].";
    app.fake.push(Reply::text(answer));
    let transcript = app
        .post_stream(
            "/v1/responses",
            json!({"model": MODEL, "input": "What is Rust?", "stream": true,
                   "tools": [{"type": "web_search"}]}),
        )
        .await;
    let response = transcript.terminal()["response"].clone();
    assert_eq!(response["status"], "completed", "{response}");
    assert_eq!(*queries.lock().unwrap(), ["rust language"]);

    // The model was offered web_search and read numbered results.
    let offered = app.fake.requests()[0]["tools"].to_string();
    assert!(offered.contains("\"web_search\""), "{offered}");
    let told = &tool_results(&app, 1)[0];
    assert!(
        told.contains("[1]") && told.contains("https://www.rust-lang.org/"),
        "{told}"
    );

    let search = items(&response, "search_results")[0];
    assert_eq!(search["queries"], json!(["rust language"]));
    assert_eq!(search["results"][0]["id"], 1);
    assert_eq!(search["results"][0]["url"], "https://www.rust-lang.org/");
    assert_eq!(search["results"][0]["date"], "2025-05-15");
    assert_eq!(search["results"][1]["id"], 2);
    assert_eq!(
        response["usage"]["tool_calls_details"]["search_web"]["invocation"],
        1
    );

    // The answer's [n] markers are url_citation annotations at character offsets.
    let message = items(&response, "message")[0];
    let part = &message["content"][0];
    assert_eq!(part["text"], answer);
    let annotations = part["annotations"].as_array().unwrap();
    assert_eq!(annotations.len(), 2, "{part}");
    let chars: Vec<char> = answer.chars().collect();
    for (annotation, (n, url)) in annotations
        .iter()
        .zip([(1, "https://www.rust-lang.org/"), (2, "https://tokio.rs/")])
    {
        assert_eq!(annotation["type"], "url_citation");
        assert_eq!(annotation["url"], url);
        let (start, end) = (
            annotation["start_index"].as_u64().unwrap() as usize,
            annotation["end_index"].as_u64().unwrap() as usize,
        );
        assert_eq!(
            chars[start..end].iter().collect::<String>(),
            format!("[{n}]")
        );
    }

    // The reasoning events come before the item, in order.
    let types = transcript.types();
    let position = |t: &str| types.iter().position(|x| x == t).unwrap();
    assert!(position("response.reasoning.started") < position("response.reasoning.search_queries"));
    assert!(
        position("response.reasoning.search_queries")
            < position("response.reasoning.search_results")
    );
    assert!(position("response.reasoning.search_results") < position("response.reasoning.stopped"));
    let done_text = transcript
        .events
        .iter()
        .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "message")
        .unwrap();
    assert_eq!(
        done_text["item"]["content"][0]["annotations"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn the_local_index_answers_when_no_search_service_is_set() {
    let dir = std::env::temp_dir().join(format!("agentd-index-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    std::fs::write(
        dir.join("docs/tides.md"),
        "# Tides\n\nThe tides of the Bay of Fundy are the highest in the world, up to 16 metres.",
    )
    .unwrap();
    std::fs::write(
        dir.join("docs/bread.md"),
        "# Bread\n\nSourdough bread rises with wild yeast and lactic acid bacteria.",
    )
    .unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["index", "add", "--data-dir"])
        .arg(dir.join("data"))
        .arg(dir.join("docs"))
        .env_remove("AGENTD_SEARXNG_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("the index holds 2 documents"), "{stdout}");

    let index = dir.join("data/index.sqlite");
    let app = TestApp::spawn_with(|config| config.web_search.local_index_path = index).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "web_search",
        r#"{"queries":["highest tides"]}"#,
    )]));
    app.fake.push(Reply::text("The Bay of Fundy [1]."));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "Where are the highest tides?", "tools": [{"type": "web_search"}]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    let results = &items(&response, "search_results")[0]["results"];
    assert!(
        results[0]["url"].as_str().unwrap().ends_with("tides.md"),
        "{results}"
    );
    assert!(results[0]["snippet"].as_str().unwrap().contains("Fundy"));
    drop(app);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn fetch_url_reads_pages_and_refuses_private_ones_unless_allowed() {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let pages = serve(axum::Router::new().route(
        "/article",
        get(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async {
                Html(
                    "<html><head><title>Octopus facts</title></head><body><nav>Home | About</nav>\
                     <article><h1>Octopus facts</h1><p>An octopus has three hearts and blue blood. \
                     Two hearts pump blood through the gills, one through the body.</p>\
                     <p>Octopuses are known for their intelligence and camouflage.</p></article>\
                     <footer>Copyright</footer></body></html>",
                )
            }
        }),
    ))
    .await;
    let url = format!("{pages}/article");

    // The default policy refuses the loopback page: an in-band error, nothing fetched.
    let strict = TestApp::spawn().await;
    strict.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "fetch_url",
        &json!({"urls": [url]}).to_string(),
    )]));
    strict.fake.push(Reply::text("I could not read it."));
    let (status, response) = strict
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "read it", "tools": [{"type": "fetch_url"}]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["status"], "completed");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the guard let a request through"
    );
    assert!(
        tool_results(&strict, 1)[0].contains("refused"),
        "{:?}",
        tool_results(&strict, 1)
    );

    // With the range allowed, the page is read and cleaned.
    let app =
        TestApp::spawn_with(|config| config.allow_private = vec!["127.0.0.0/8".to_owned()]).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "fetch_url",
        &json!({"urls": [url]}).to_string(),
    )]));
    app.fake.push(Reply::text("Three hearts [1]."));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "read it", "tools": [{"type": "fetch_url", "max_urls": 2}]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    let contents = &items(&response, "fetch_url_results")[0]["contents"];
    assert_eq!(contents[0]["url"], url);
    assert_eq!(contents[0]["title"], "Octopus facts");
    let text = contents[0]["snippet"].as_str().unwrap();
    assert!(text.contains("three hearts"), "{text}");
    assert!(!text.contains("Home | About"), "boilerplate kept: {text}");
    assert_eq!(
        response["usage"]["tool_calls_details"]["fetch_url"]["invocation"],
        1
    );
    let annotations = &items(&response, "message")[0]["content"][0]["annotations"];
    assert_eq!(annotations[0]["url"], url, "{annotations}");
    assert!(tool_results(&app, 1)[0].contains("three hearts"));
}

#[tokio::test]
async fn malformed_search_dates_are_invalid_date_format() {
    let app = TestApp::spawn().await;
    let (status, error) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "tools": [{"type": "web_search",
                   "filters": {"search_after_date_filter": "2025-01-31"}}]}),
        )
        .await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["error"]["type"], "invalid_date_format");
    assert_eq!(
        error["error"]["param"],
        "tools[0].filters.search_after_date_filter"
    );
}
