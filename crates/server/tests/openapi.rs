//! `/openapi.json` against the server it describes: every route of the router is in the
//! document and nothing else is; real answers (JSON bodies, every SSE frame, error envelopes)
//! validate against the schemas the document names for them; the request schema accepts and
//! refuses exactly what the strict parser does.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use agentd_server::route_table;
use protocol::request::CreateRequest;
use serde_json::{Value, json};
use testkit::mcp::{McpFixture, Transport};
use testkit::sse::Transcript;
use testkit::{Gate, Reply, TestApp};

const MODEL: &str = "openai/gpt-test";

/// The served document, with helpers to find and check the schemas it names.
struct Document {
    doc: Value,
    /// Compiled validators, by the JSON of the schema they check.
    validators: std::sync::Mutex<BTreeMap<String, Arc<jsonschema::Validator>>>,
}

impl Document {
    async fn fetch(app: &TestApp) -> Document {
        let (status, doc) = app.get("/openapi.json").await;
        assert_eq!(status, 200);
        Document {
            doc,
            validators: Default::default(),
        }
    }

    fn operation(&self, method: &str, path: &str) -> &Value {
        let operation = &self.doc["paths"][path][method];
        assert!(operation.is_object(), "{method} {path} is not documented");
        operation
    }

    /// The media type object an operation documents for a status.
    fn media(&self, method: &str, path: &str, status: u16, media: &str) -> &Value {
        let object =
            &self.operation(method, path)["responses"][status.to_string()]["content"][media];
        assert!(
            object.is_object(),
            "{method} {path} documents no {media} answer for {status}"
        );
        object
    }

    /// Asserts that a JSON answer is documented for its status and valid against its schema.
    fn check(&self, method: &str, path: &str, status: u16, body: &Value) {
        let schema = &self.media(method, path, status, "application/json")["schema"];
        self.assert_valid(schema, body, &format!("{method} {path} -> {status}"));
    }

    /// Asserts that every frame of a stream is valid against the event schema the document
    /// names for the operation's `text/event-stream` answer.
    fn check_stream(&self, method: &str, path: &str, transcript: &Transcript) {
        let schema = &self.media(method, path, 200, "text/event-stream")["x-sse-data"];
        for event in &transcript.events {
            self.assert_valid(schema, event, &format!("{method} {path} event"));
        }
    }

    fn assert_valid(&self, schema: &Value, instance: &Value, what: &str) {
        let validator = self.validator(schema);
        let errors: Vec<String> = validator
            .iter_errors(instance)
            .map(|error| format!("{} at {}", error, error.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{what}: {errors:#?}\n{instance:#}");
    }

    /// A validator for one schema of the document, its `$ref`s resolved against the
    /// document's components.
    fn validator(&self, schema: &Value) -> Arc<jsonschema::Validator> {
        let key = schema.to_string();
        let mut validators = self.validators.lock().unwrap();
        validators
            .entry(key)
            .or_insert_with(|| {
                let root = json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "components": self.doc["components"],
                    "allOf": [schema],
                });
                Arc::new(jsonschema::validator_for(&root).expect("the schema compiles"))
            })
            .clone()
    }

    fn request_schema(&self) -> &Value {
        &self.operation("post", "/v1/agent")["requestBody"]["content"]["application/json"]["schema"]
    }
}

fn order_tools() -> Value {
    json!([{
        "type": "function",
        "name": "get_order_status",
        "description": "Look up the status of an order by id.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
            "additionalProperties": false
        },
        "strict": true
    }])
}

async fn get_stream(app: &TestApp, path: &str) -> Transcript {
    let response = app.client.get(app.url(path)).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    Transcript::parse(&response.text().await.unwrap())
}

#[tokio::test]
async fn every_route_is_documented_and_every_documented_route_is_served() {
    let app = TestApp::spawn().await;
    let doc = Document::fetch(&app).await;
    assert_eq!(
        &doc.doc,
        agentd_server::openapi::document(),
        "the served document is the built one"
    );
    assert_eq!(doc.doc["openapi"], "3.1.0");

    let documented: BTreeSet<(String, String)> = doc.doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |method| (method.clone(), path.clone()))
        })
        .collect();
    let table: BTreeSet<(String, String)> = route_table::table()
        .into_iter()
        .map(|route| (route.method.as_str().to_owned(), route.path))
        .collect();
    assert_eq!(documented, table);
    let paths: BTreeSet<&str> = documented.iter().map(|(_, path)| path.as_str()).collect();
    assert!(paths.len() >= 14, "{paths:?}");

    let methods = ["get", "post", "put", "patch", "delete"];
    for path in paths {
        let url = app.url(
            &path
                .replace("{id}", "resp_nope")
                .replace("{file_id}", "file_nope"),
        );
        for method in methods {
            let request = app
                .client
                .request(method.to_uppercase().parse().unwrap(), &url);
            let request = if method == "get" {
                request
            } else {
                request.json(&json!({}))
            };
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            if !documented.contains(&(method.to_owned(), path.to_owned())) {
                assert_eq!(status, 405, "{method} {path} is not a route");
                continue;
            }
            let content_type = response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let documented_statuses = doc.operation(method, path)["responses"]
                .as_object()
                .unwrap();
            assert!(
                documented_statuses.contains_key(&status.to_string()),
                "{method} {path} answered an undocumented {status}"
            );
            if content_type.starts_with("application/json") {
                let body: Value = response.json().await.unwrap();
                assert_ne!(
                    body["error"]["message"], "no such route",
                    "{method} {path} reached the fallback"
                );
                doc.check(method, path, status, &body);
            } else {
                let media = content_type.split(';').next().unwrap_or_default();
                doc.media(method, path, status, media);
            }
        }
    }
    let (status, body) = app.get("/v1/nothing/here").await;
    assert_eq!(
        (status, &body["error"]["message"]),
        (404, &json!("no such route"))
    );
}

#[tokio::test]
async fn answers_validate_against_the_document() {
    let app = TestApp::spawn().await;
    let doc = Document::fetch(&app).await;

    // A completed text answer, with cache usage.
    app.fake
        .push(Reply::text("Hello there").usage(12, 3).cached_tokens(4));
    let (status, completed) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "Say hello", "instructions": "Be brief.",
                   "metadata": {"team": "search"}, "reasoning": {"effort": "low"}}),
        )
        .await;
    assert_eq!(completed["status"], "completed");
    doc.check("post", "/v1/agent", status, &completed);
    let id = completed["id"].as_str().unwrap();
    for base in route_table::API_BASES {
        let (status, stored) = app.get(&format!("{base}/{id}")).await;
        doc.check("get", &format!("{base}/{{id}}"), status, &stored);
        let (status, files) = app.get(&format!("{base}/{id}/files")).await;
        assert_eq!(files, json!({"object": "list", "data": []}));
        doc.check("get", &format!("{base}/{{id}}/files"), status, &files);
    }
    // Its model turn, from the admin route the console's trace reads.
    let (status, turns) = app.get(&format!("/v1/admin/responses/{id}/turns")).await;
    assert_eq!(turns["data"][0]["usage"]["cached_tokens"], 4, "{turns}");
    doc.check(
        "get",
        "/v1/admin/responses/{response_id}/turns",
        status,
        &turns,
    );

    // A function call handed back, with the request's tools echoed.
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "get_order_status",
        r#"{"order_id":"ORD-1"}"#,
    )]));
    let (status, call) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "Where is ORD-1?", "tools": order_tools(),
                   "tool_choice": {"type": "function", "name": "get_order_status"}}),
        )
        .await;
    assert_eq!(call["output"][0]["type"], "function_call", "{call}");
    doc.check("post", "/v1/responses", status, &call);

    // Failed (HTTP 200): every retry of the upstream fails.
    for _ in 0..3 {
        app.fake.push(Reply::error(500, "upstream exploded"));
    }
    let (status, failed) = app
        .post("/v1/agent", json!({"model": MODEL, "input": "?"}))
        .await;
    assert_eq!((status, &failed["status"]), (200, &json!("failed")));
    doc.check("post", "/v1/agent", status, &failed);

    // Incomplete: the output-token cap.
    app.fake
        .push(Reply::text("a long answer that was cut").finish_reason("length"));
    let (status, incomplete) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "?", "max_output_tokens": 16}),
        )
        .await;
    assert_eq!(incomplete["status"], "incomplete", "{incomplete}");
    doc.check("post", "/v1/agent", status, &incomplete);

    // The service routes.
    let (status, models) = app.get("/v1/models").await;
    assert!(!models["data"].as_array().unwrap().is_empty(), "{models}");
    doc.check("get", "/v1/models", status, &models);
    let (status, health) = app.get("/health").await;
    doc.check("get", "/health", status, &health);
}

#[tokio::test]
async fn conversation_item_and_compact_answers_validate_against_the_document() {
    let app = TestApp::spawn().await;
    let doc = Document::fetch(&app).await;
    let (status, conversation) = app
        .post(
            "/v1/conversations",
            json!({"items": [{"role": "user", "content": "Hi"}], "metadata": {"k": "v"}}),
        )
        .await;
    doc.check("post", "/v1/conversations", status, &conversation);
    let conv = conversation["id"].as_str().unwrap();
    let (status, got) = app.get(&format!("/v1/conversations/{conv}")).await;
    doc.check("get", "/v1/conversations/{id}", status, &got);
    let (status, updated) = app
        .post(
            &format!("/v1/conversations/{conv}"),
            json!({"metadata": {"k": "w"}}),
        )
        .await;
    doc.check("post", "/v1/conversations/{id}", status, &updated);
    let (status, added) = app
        .post(
            &format!("/v1/conversations/{conv}/items"),
            json!({"items": [{"role": "user", "content": "More"}]}),
        )
        .await;
    doc.check("post", "/v1/conversations/{id}/items", status, &added);
    let (status, items) = app.get(&format!("/v1/conversations/{conv}/items")).await;
    doc.check("get", "/v1/conversations/{id}/items", status, &items);
    let item = items["data"][0]["id"].as_str().unwrap();
    let path = "/v1/conversations/{id}/items/{item_id}";
    let (status, got) = app
        .get(&format!("/v1/conversations/{conv}/items/{item}"))
        .await;
    doc.check("get", path, status, &got);
    let delete = |path: String| app.client.delete(app.url(&path)).send();
    let answer = delete(format!("/v1/conversations/{conv}/items/{item}"))
        .await
        .unwrap();
    let status = answer.status().as_u16();
    doc.check("delete", path, status, &answer.json().await.unwrap());

    app.fake.push(Reply::text("Hello"));
    let (_, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "Hi", "conversation": conv}),
        )
        .await;
    let id = response["id"].as_str().unwrap();
    let (status, inputs) = app.get(&format!("/v1/responses/{id}/input_items")).await;
    doc.check("get", "/v1/responses/{id}/input_items", status, &inputs);
    app.fake.push(Reply::text("A greeting.").usage(10, 3));
    let (status, compacted) = app
        .post(
            "/v1/agent/compact",
            json!({"model": MODEL, "previous_response_id": id}),
        )
        .await;
    assert_eq!(status, 200, "{compacted}");
    doc.check("post", "/v1/agent/compact", status, &compacted);
    for (path, doc_path) in [
        (format!("/v1/responses/{id}"), "/v1/responses/{id}"),
        (
            format!("/v1/conversations/{conv}"),
            "/v1/conversations/{id}",
        ),
    ] {
        let answer = delete(path).await.unwrap();
        let status = answer.status().as_u16();
        doc.check("delete", doc_path, status, &answer.json().await.unwrap());
    }
}

#[tokio::test]
async fn error_envelopes_validate_against_the_document() {
    let app = TestApp::spawn().await;
    let doc = Document::fetch(&app).await;

    let (status, unknown) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "x", "tools": [{"type": "function", "name": "f", "strictt": true}]}),
        )
        .await;
    assert_eq!(unknown["error"]["param"], "tools[0].strictt");
    doc.check("post", "/v1/agent", status, &unknown);
    let (status, invalid) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "x", "max_steps": 0}),
        )
        .await;
    assert_eq!(status, 400);
    doc.check("post", "/v1/agent", status, &invalid);
    let (status, model) = app
        .post(
            "/v1/responses",
            json!({"model": "anthropic/claude-sonnet-4-6", "input": "x"}),
        )
        .await;
    assert_eq!(model["error"]["type"], "invalid_model");
    doc.check("post", "/v1/responses", status, &model);
    let (status, syntax) = app.post_raw("/v1/agent", "{\"input\": ").await;
    assert_eq!(status, 400);
    doc.check("post", "/v1/agent", status, &syntax);

    let (status, missing) = app.get("/v1/agent/resp_missing").await;
    assert_eq!(status, 404);
    doc.check("get", "/v1/agent/{id}", status, &missing);
    let (status, cursor) = app
        .get("/v1/responses/resp_missing?stream=true&starting_after=-1")
        .await;
    assert_eq!(cursor["error"]["param"], "starting_after");
    doc.check("get", "/v1/responses/{id}", status, &cursor);
    let (status, cancel) = app.post("/v1/agent/resp_missing/cancel", json!({})).await;
    assert_eq!(status, 404);
    doc.check("post", "/v1/agent/{id}/cancel", status, &cancel);
    let (status, file) = app
        .get("/v1/responses/resp_missing/files/file_x/content")
        .await;
    assert_eq!(status, 404);
    doc.check(
        "get",
        "/v1/responses/{id}/files/{file_id}/content",
        status,
        &file,
    );

    // Once the server has keys, a request without one is 401.
    app.state.engine.create_key("alpha").await.unwrap();
    let (status, unauthorized) = app.get("/v1/agent/resp_missing").await;
    assert_eq!(status, 401);
    doc.check("get", "/v1/agent/{id}", status, &unauthorized);
    let (status, unauthorized) = app
        .post("/v1/agent", json!({"model": MODEL, "input": "x"}))
        .await;
    assert_eq!(status, 401);
    doc.check("post", "/v1/agent", status, &unauthorized);
}

/// A SearxNG JSON API on 127.0.0.1 answering two results to any query.
async fn searxng() -> String {
    async fn search() -> axum::Json<Value> {
        axum::Json(json!({"results": [
            {"url": "https://www.rust-lang.org/", "title": "Rust", "content": "A language.",
             "publishedDate": "2025-05-15T00:00:00"},
            {"url": "https://tokio.rs/", "title": "Tokio", "content": "An async runtime."}
        ]}))
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = axum::Router::new().route("/search", axum::routing::get(search));
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn every_streamed_event_validates_against_the_document() {
    let searx = searxng().await;
    let app = TestApp::spawn_with(|config| config.web_search.searxng_url = Some(searx)).await;
    let doc = Document::fetch(&app).await;
    let mut seen = BTreeSet::new();
    let mut stream = async |path: &str, body: Value| {
        let transcript = app.post_stream(path, body).await;
        doc.check_stream("post", path, &transcript);
        seen.extend(transcript.types());
        transcript
    };

    // Reasoning, then text in chunks.
    app.fake.push(
        Reply::text_chunks(["The ", "answer."])
            .reasoning("thinking it over", "sig")
            .usage(7, 3),
    );
    let text = stream(
        "/v1/responses",
        json!({"model": MODEL, "input": "?", "stream": true, "stream_options": {"include_usage": true}}),
    )
    .await;
    // A web search: reasoning events, a search_results item, citations.
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "web_search",
        r#"{"queries":["rust language"]}"#,
    )]));
    app.fake.push(Reply::text(
        "Rust builds reliable software [1], Tokio runs it [2].",
    ));
    let search = stream(
        "/v1/agent",
        json!({"model": MODEL, "input": "What is Rust?", "stream": true, "tools": [{"type": "web_search"}]}),
    )
    .await;
    assert_eq!(search.terminal()["type"], "response.completed");
    // A function call handed back.
    app.fake.push(Reply::tool_calls(vec![(
        "call_2",
        "get_order_status",
        r#"{"order_id":"ORD-2"}"#,
    )]));
    stream(
        "/v1/agent",
        json!({"model": MODEL, "input": "ORD-2?", "stream": true, "tools": order_tools()}),
    )
    .await;
    // Failed and incomplete runs.
    for _ in 0..3 {
        app.fake.push(Reply::error(429, "slow down"));
    }
    stream(
        "/v1/agent",
        json!({"model": MODEL, "input": "?", "stream": true}),
    )
    .await;
    app.fake
        .push(Reply::text("cut short").finish_reason("length"));
    stream(
        "/v1/agent",
        json!({"model": MODEL, "input": "?", "stream": true, "max_output_tokens": 16}),
    )
    .await;

    // Resuming a stored stream, from the start and from a cursor.
    for transcript in [&text, &search] {
        let id = transcript.terminal()["response"]["id"].as_str().unwrap();
        for query in ["?stream=true", "?stream=true&starting_after=2"] {
            let resumed = get_stream(&app, &format!("/v1/agent/{id}{query}")).await;
            assert!(!resumed.events.is_empty());
            doc.check_stream("get", "/v1/agent/{id}", &resumed);
        }
    }

    for expected in [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.reasoning.started",
        "response.reasoning.search_queries",
        "response.reasoning.search_results",
        "response.reasoning.stopped",
        "response.completed",
        "response.failed",
        "response.incomplete",
    ] {
        assert!(seen.contains(expected), "no {expected} among {seen:?}");
    }
}

#[tokio::test]
async fn background_and_cancel_answers_validate_against_the_document() {
    let app = TestApp::spawn().await;
    let doc = Document::fetch(&app).await;
    let gate = Gate::new();
    app.fake.push(Reply::text("late").wait_for(&gate));
    let (status, queued) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "?", "background": true}),
        )
        .await;
    assert_eq!(queued["status"], "queued", "{queued}");
    assert_eq!(queued["background"], true);
    doc.check("post", "/v1/agent", status, &queued);
    let id = queued["id"].as_str().unwrap();

    let (status, ack) = app
        .post(&format!("/v1/responses/{id}/cancel"), json!({}))
        .await;
    // The answer is the response object itself, once the run has stopped.
    assert_eq!(ack["response_id"], id);
    assert_eq!(ack["id"], id);
    assert_eq!(ack["status"], "cancelled", "{ack}");
    doc.check("post", "/v1/responses/{id}/cancel", status, &ack);
    gate.open();
    let cancelled = app.wait_terminal(id).await;
    assert_eq!(cancelled["status"], "cancelled");
    doc.check("get", "/v1/responses/{id}", 200, &cancelled);
    let events = get_stream(&app, &format!("/v1/responses/{id}?stream=true")).await;
    assert_eq!(events.terminal()["type"], "response.cancelled");
    doc.check_stream("get", "/v1/responses/{id}", &events);

    // Cancelling it again answers it again; a run that completed cannot be cancelled.
    let (status, again) = app.post(&format!("/v1/agent/{id}/cancel"), json!({})).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["status"], "cancelled");
    doc.check("post", "/v1/agent/{id}/cancel", status, &again);
    app.fake.push(Reply::text("done"));
    let (_, completed) = app
        .post("/v1/agent", json!({"model": MODEL, "input": "?"}))
        .await;
    let done = completed["id"].as_str().unwrap();
    let (status, ended) = app
        .post(&format!("/v1/agent/{done}/cancel"), json!({}))
        .await;
    assert_eq!(status, 400, "{ended}");
    doc.check("post", "/v1/agent/{id}/cancel", status, &ended);
}

/// agentd allowed to reach the loopback MCP fixtures.
async fn mcp_app() -> TestApp {
    TestApp::spawn_with(|config| config.allow_private = vec!["127.0.0.0/8".to_owned()]).await
}

#[tokio::test]
async fn mcp_items_and_their_replay_validate_against_the_document() {
    let app = mcp_app().await;
    let doc = Document::fetch(&app).await;
    let fixture = McpFixture::start("many", Transport::StreamableHttp).await;
    let tool = json!({"type": "mcp", "server_label": "cat", "server_url": fixture.url,
                      "defer_loading": true, "server_description": "A catalog"});
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "tool_search",
        r#"{"query":"weather forecast for a city","server_label":"cat"}"#,
    )]));
    app.fake.push(Reply::tool_calls(vec![(
        "call_2",
        "cat__weather_forecast",
        r#"{"city":"Paris"}"#,
    )]));
    app.fake.push(Reply::text("Sunny in Paris."));
    let body =
        json!({"model": MODEL, "input": "weather in Paris?", "tools": [tool], "stream": true});
    let transcript = app.post_stream("/v1/responses", body).await;
    doc.check_stream("post", "/v1/responses", &transcript);
    let response = transcript.terminal()["response"].clone();
    let kinds: BTreeSet<&str> = response["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        BTreeSet::from([
            "mcp_list_tools",
            "tool_search_output",
            "mcp_call",
            "message"
        ])
    );

    // The whole output replayed as input is a request the schema and the parser both accept.
    let mut input = vec![json!({"role": "user", "content": "weather in Paris?"})];
    input.extend(response["output"].as_array().unwrap().iter().cloned());
    input.push(json!({"role": "user", "content": "and tomorrow?"}));
    let replay = json!({"model": MODEL, "input": input, "tools": [tool]});
    doc.assert_valid(doc.request_schema(), &replay, "replayed output");
    assert!(CreateRequest::parse(replay.to_string().as_bytes()).is_ok());
    app.fake.push(Reply::text("Rain tomorrow."));
    let (status, replayed) = app.post("/v1/responses", replay).await;
    assert_eq!(status, 200, "{replayed}");
    doc.check("post", "/v1/responses", status, &replayed);

    // An approval request, and the continuation that decides it.
    let annotated = McpFixture::start("annotated", Transport::StreamableHttp).await;
    let gated = json!({"type": "mcp", "server_label": "files", "server_url": annotated.url,
                       "require_approval": "always", "headers": {"X-Run": "1"}});
    app.fake.push(Reply::tool_calls(vec![(
        "call_3",
        "files__delete_file",
        r#"{"path":"old.txt"}"#,
    )]));
    let (status, paused) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "delete old.txt", "tools": [gated]}),
        )
        .await;
    assert_eq!(paused["status"], "requires_action", "{paused}");
    doc.check("post", "/v1/agent", status, &paused);
    let request = paused["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "mcp_approval_request")
        .unwrap()
        .clone();
    app.fake.push(Reply::text("Deleted."));
    let continuation = json!({"model": MODEL, "previous_response_id": paused["id"], "tools": [gated], "stream": true,
                              "input": [{"type": "mcp_approval_response", "approval_request_id": request["id"], "approve": true}]});
    let done = app.post_stream("/v1/agent", continuation).await;
    assert_eq!(done.terminal()["type"], "response.completed");
    doc.check_stream("post", "/v1/agent", &done);
}

/// Requests the parser accepts, one for each shape of the request (the bodies of the other
/// server tests, and every tool, input item, content part and skill type).
fn accepted_requests() -> Vec<Value> {
    let message_output = json!({"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": "Hi [1]", "logprobs": [],
                     "annotations": [{"type": "url_citation", "url": "https://a.example", "title": "A", "start_index": 3, "end_index": 6}]}]});
    vec![
        json!({"input": "hi"}),
        json!({"model": MODEL, "input": "Say hello", "instructions": "Be brief."}),
        json!({"model": MODEL, "input": "?", "tools": order_tools(), "temperature": 0.2, "top_p": 0.9,
               "tool_choice": "required", "max_output_tokens": 300, "parallel_tool_calls": false}),
        json!({"model": MODEL, "input": "?", "tool_choice": {"type": "function", "name": "get_order_status"}}),
        json!({"models": [MODEL, "anthropic/claude-sonnet-4-6"], "input": "?", "max_steps": 3, "max_tool_calls": 4,
               "step_budget_reminder": true, "language_preference": "fr", "preset": "pro-search", "effort": "high"}),
        json!({"model": MODEL, "input": "?", "metadata": {"team": "search"}, "truncation": "disabled",
               "text": {"format": {"type": "text"}, "verbosity": "low"}, "parallel_tool_calls": false,
               "stream_options": {"include_usage": true, "include_obfuscation": false}, "include": [], "user": "u-1",
               "safety_identifier": "s-1", "service_tier": "auto", "reasoning": {"effort": "low", "summary": "auto"},
               "stream": true, "background": false, "store": true, "prompt_cache_key": "k",
               "profile": {"type": "profile", "id": "p_1", "version": "2"}}),
        json!({"model": MODEL, "input": "x", "response_format": {"type": "json_schema", "json_schema": {
            "name": "answer", "strict": true, "description": "d",
            "schema": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}}}),
        json!({"model": MODEL, "input": "x", "tools": [
            {"type": "web_search", "search_context_size": "high", "max_tokens": 1000, "max_tokens_per_page": 500,
             "max_results": 5, "search_type": "fast", "user_location": {"city": "Paris", "country": "FR", "latitude": 48.8, "longitude": 2.3},
             "filters": {"search_domain_filter": ["a.example"], "search_recency_filter": "week",
                         "search_after_date_filter": "1/1/2025", "last_updated_before_filter": "1/1/2026"}},
            {"type": "image_search", "max_results": 3, "filters": {"domain_filter": ["b.example"], "format_filter": ["png"], "safe_search": true}},
            {"type": "fetch_url", "max_urls": 2, "total_budget_tokens": 4000},
            {"type": "people_search"}, {"type": "finance_search"}, {"type": "sandbox"},
            {"type": "mcp", "server_label": "files", "server_url": "https://mcp.example/mcp", "server_description": "files",
             "authorization": "token", "headers": {"X-Run": "1"}, "allowed_tools": ["read"], "defer_loading": false,
             "require_approval": {"never": {"read_only": true}, "always": {"tool_names": ["delete_file"]}}},
            {"type": "mcp", "server_label": "sec", "server_url": "https://mcp.example/mcp", "require_approval": "never"},
            {"type": "connector", "id": "connector_gh", "server_label": "gh", "allowed_tools": ["search"], "require_approval": "always"}
        ], "tool_choice": {"type": "web_search"}}),
        json!({"model": MODEL, "input": "x", "skills": [
            {"type": "builtin", "name": "office/docx"},
            {"type": "inline", "name": "tone-guide", "description": "How to write", "instructions": "Be kind."},
            {"type": "custom", "id": "skill_1", "version": "3"}]}),
        json!({"model": MODEL, "tools": order_tools(), "input": [
            {"role": "user", "content": "What's the status of order ORD-10042?"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_order_status",
             "arguments": "{\"order_id\":\"ORD-10042\"}", "status": "completed"},
            {"type": "function_call_output", "call_id": "call_1", "output": "{\"status\":\"in_transit\"}"}]}),
        json!({"model": MODEL, "previous_response_id": "resp_1", "input": [
            {"type": "function_call_output", "call_id": "call_1", "status": "completed", "output": [
                {"type": "input_text", "text": "a chart"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}]}]}),
        json!({"model": MODEL, "input": [
            {"type": "message", "role": "developer", "content": "Answer in French."},
            {"role": "system", "content": "Be brief.", "type": null},
            {"role": "user", "content": [
                {"type": "input_text", "text": "Read these"},
                {"type": "input_image", "image_url": "https://a.example/cat.png", "detail": "auto"},
                {"type": "input_file", "filename": "notes.docx", "file_data": "data:application/octet-stream;base64,AAAA"},
                {"type": "input_file", "file_url": "https://a.example/report.pdf"}]},
            message_output,
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thought"}],
             "content": [{"type": "reasoning_text", "text": "more"}], "encrypted_content": "e", "status": "completed"}]}),
        json!({"model": MODEL, "previous_response_id": "resp_1", "input": [
            {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": false, "reason": "no"},
            {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "files", "connector_id": "connector_gh", "tools": [
                {"name": "read", "description": "Read a file", "input_schema": {"type": "object"}, "annotations": {"read_only": true}}]},
            {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "files", "name": "delete_file", "arguments": "{}"},
            {"type": "mcp_call", "id": "mcp_1", "server_label": "files", "name": "read", "arguments": "{}",
             "output": "text", "error": null, "approval_request_id": "mcpr_0"},
            {"type": "tool_search_output", "id": "ts_1", "call_id": null, "status": "completed", "execution": "server",
             "arguments": "{\"query\":\"x\"}", "tools": [{"type": "namespace", "name": "files", "description": "files",
                "tools": [{"type": "function", "name": "read", "description": "Read", "parameters": {"type": "object"}}]}]}]}),
    ]
}

/// Requests the parser refuses: unknown fields at every depth, wrong tags and types.
fn refused_requests() -> Vec<Value> {
    vec![
        json!({"model": MODEL}),
        json!({"model": MODEL, "input": "x", "top_k": 3}),
        json!({"model": MODEL, "input": "x", "messages": []}),
        json!({"model": MODEL, "input": "x", "tools": [{"type": "function", "name": "f", "strictt": true}]}),
        json!({"model": MODEL, "input": "x", "tools": [{"type": "web_search", "filters": {"search_language_filter": ["en"]}}]}),
        json!({"model": MODEL, "input": "x", "tools": [{"type": "browser"}]}),
        json!({"model": MODEL, "input": "x", "tools": [{"name": "f"}]}),
        json!({"model": MODEL, "input": [{"role": "user", "content": "x", "extra": 1}]}),
        json!({"model": MODEL, "input": [{"role": "user", "content": [{"type": "input_text", "text": "x", "extra": 1}]}]}),
        json!({"model": MODEL, "input": [{"role": "user", "content": [{"type": "image_url", "image_url": "https://a.example/x.png"}]}]}),
        json!({"model": MODEL, "input": [{"type": "function_call_output", "call_id": "c", "output": [{"type": "input_file", "file_url": "https://a.example/x.pdf"}]}]}),
        json!({"model": MODEL, "input": [{"type": "function_call", "call_id": "c", "name": "f"}]}),
        json!({"model": MODEL, "input": 7}),
        json!({"model": MODEL, "input": "x", "max_output_tokens": -1}),
        json!({"model": MODEL, "input": "x", "max_output_tokens": 4_294_967_296_u64}),
        json!({"model": MODEL, "input": "x", "max_steps": 1.5}),
        json!({"model": MODEL, "input": "x", "tool_choice": "sometimes"}),
        json!({"model": MODEL, "input": "x", "skills": [{"type": "builtin", "name": "office/odt"}]}),
        json!({"model": MODEL, "input": "x", "metadata": {"n": 1}}),
        json!({"model": MODEL, "input": "x", "stream": "yes"}),
    ]
}

/// Every place in a JSON value, as a list of keys and indexes from the root.
fn locations(value: &Value) -> Vec<Vec<Value>> {
    let mut out = vec![Vec::new()];
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                for mut rest in locations(child) {
                    rest.insert(0, json!(key));
                    out.push(rest);
                }
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                for mut rest in locations(child) {
                    rest.insert(0, json!(index));
                    out.push(rest);
                }
            }
        }
        _ => {}
    }
    out
}

fn at<'a>(value: &'a mut Value, location: &[Value]) -> &'a mut Value {
    location.iter().fold(value, |node, step| match step {
        Value::String(key) => &mut node[key.as_str()],
        _ => &mut node[step.as_u64().unwrap() as usize],
    })
}

/// One change to a body, described.
struct Mutation {
    change: String,
    body: Value,
    /// An object replaced by `[]`.
    object_to_array: bool,
}

/// The bodies one change away from `body`: each value replaced by values of other types and
/// out-of-range numbers, each object given an unknown field and each key taken out.
fn mutations(body: &Value) -> Vec<Mutation> {
    // 1.0 is missing on purpose: JSON Schema counts it as an integer, serde does not.
    let replacements = [
        json!(null),
        json!(true),
        json!(7),
        json!(-1),
        json!(1.5),
        json!(4_294_967_296_u64),
        json!("s"),
        json!([]),
        json!({}),
    ];
    let mut out = Vec::new();
    for location in locations(body) {
        let place = Value::Array(location.clone()).to_string();
        for replacement in &replacements {
            let mut changed = body.clone();
            let node = at(&mut changed, &location);
            let object_to_array = node.is_object() && *replacement == json!([]);
            *node = replacement.clone();
            out.push(Mutation {
                change: format!("{place} = {replacement}"),
                body: changed,
                object_to_array,
            });
        }
        let mut changed = body.clone();
        if let Value::Object(map) = at(&mut changed, &location) {
            let keys: Vec<String> = map.keys().cloned().collect();
            map.insert("zz_unknown".to_owned(), json!("x"));
            out.push(Mutation {
                change: format!("{place} + zz_unknown"),
                body: changed,
                object_to_array: false,
            });
            for key in keys {
                let mut changed = body.clone();
                if let Value::Object(map) = at(&mut changed, &location) {
                    map.remove(&key);
                }
                out.push(Mutation {
                    change: format!("{place} - {key}"),
                    body: changed,
                    object_to_array: false,
                });
            }
        }
    }
    out
}

#[tokio::test]
async fn the_request_schema_accepts_and_refuses_what_the_parser_does() {
    let app = TestApp::spawn().await;
    let doc = Document::fetch(&app).await;
    let schema = doc.request_schema();
    assert_eq!(
        doc.doc["components"]["schemas"]["CreateRequest"]["additionalProperties"],
        false
    );
    let validator = doc.validator(schema);
    let parses = |body: &Value| CreateRequest::parse(body.to_string().as_bytes());

    for body in accepted_requests() {
        assert!(parses(&body).is_ok(), "{body}: {:?}", parses(&body));
        doc.assert_valid(schema, &body, "an accepted request");
    }
    for body in refused_requests() {
        assert!(parses(&body).is_err(), "the parser accepts {body}");
        assert!(!validator.is_valid(&body), "the schema accepts {body}");
    }
    let mut checked = 0;
    for body in accepted_requests() {
        for Mutation {
            change,
            body: changed,
            object_to_array,
        } in mutations(&body)
        {
            let parsed = parses(&changed);
            let valid = validator.is_valid(&changed);
            if object_to_array && !valid && parsed.is_ok() {
                // serde's derived structs also read an array of their fields in order, so `[]`
                // parses where every field is optional; the schema describes the object form
                // only. Nothing else may differ.
                continue;
            }
            assert_eq!(
                valid,
                parsed.is_ok(),
                "{change}: the parser says {parsed:?} for {changed}"
            );
            checked += 1;
        }
    }
    assert!(checked > 1000, "{checked}");

    // The other bases take the same body.
    for base in route_table::API_BASES {
        assert_eq!(
            doc.operation("post", base)["requestBody"]["content"]["application/json"]["schema"],
            *schema
        );
    }
}
