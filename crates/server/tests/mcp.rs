//! Remote MCP servers through agentd: discovery, calls, credentials, approvals, deferred loading
//! with tool search, and discovery failures in every request mode. The MCP servers are real (the
//! official Python `mcp` package and `@modelcontextprotocol/server-everything`, on loopback);
//! only the model is scripted.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::time::Duration;

use serde_json::{Value, json};
use testkit::mcp::{McpFixture, Transport};
use testkit::{Reply, TestApp};

const MODEL: &str = "openai/gpt-test";

/// agentd allowed to reach the loopback fixtures.
async fn app() -> TestApp {
    app_with(|_| {}).await
}

async fn app_with(adjust: impl FnOnce(&mut agentd_server::config::Config)) -> TestApp {
    TestApp::spawn_with(|config| {
        config.allow_private = vec!["127.0.0.0/8".to_owned()];
        adjust(config);
    })
    .await
}

fn mcp_tool(label: &str, fixture: &McpFixture) -> Value {
    json!({"type": "mcp", "server_label": label, "server_url": fixture.url})
}

fn items<'a>(response: &'a Value, kind: &str) -> Vec<&'a Value> {
    response["output"]
        .as_array()
        .expect("output array")
        .iter()
        .filter(|item| item["type"] == kind)
        .collect()
}

/// The tool names offered in the fake provider's `n`-th request.
fn offered_tools(app: &TestApp, n: usize) -> Vec<String> {
    app.fake.requests()[n]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The tool results (role `tool`) the model received in its `n`-th request.
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
async fn discovered_tools_are_listed_offered_and_called() {
    let app = app().await;
    let fixture = McpFixture::start("basic", Transport::StreamableHttp).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "srv__echo",
        r#"{"text":"hello mcp"}"#,
    )]));
    app.fake.push(Reply::text("The server said hello mcp."));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "echo something", "tools": [mcp_tool("srv", &fixture)]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["status"], "completed");
    let types: Vec<&str> = response["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["mcp_list_tools", "mcp_call", "message"]);

    let list = items(&response, "mcp_list_tools")[0];
    assert_eq!(list["server_label"], "srv");
    assert!(list["id"].as_str().unwrap().starts_with("mcpl_"));
    let echo = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .expect("echo listed");
    assert_eq!(echo["annotations"]["read_only"], true);
    assert_eq!(echo["input_schema"]["properties"]["text"]["type"], "string");

    let call = items(&response, "mcp_call")[0];
    assert_eq!(call["name"], "echo");
    assert_eq!(call["server_label"], "srv");
    assert_eq!(call["arguments"], r#"{"text":"hello mcp"}"#);
    assert!(
        call["output"].as_str().unwrap().contains("hello mcp"),
        "{call}"
    );
    assert_eq!(call["error"], Value::Null);

    // The server ran the tool once, with the model's arguments.
    assert_eq!(
        fixture.calls(),
        vec![("echo".to_owned(), json!({"text": "hello mcp"}))]
    );
    // The model was offered the namespaced tool with the server's own schema, and got the result.
    let offered = &app.fake.requests()[0]["tools"];
    let echo_spec = offered
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "srv__echo")
        .expect("srv__echo offered");
    assert_eq!(echo_spec["function"]["parameters"], echo["input_schema"]);
    assert!(tool_results(&app, 1)[0].contains("hello mcp"));
}

#[tokio::test]
async fn legacy_sse_servers_are_reached_by_fallback() {
    let app = app().await;
    let python = McpFixture::start("basic", Transport::Sse).await;
    let everything = McpFixture::everything(Transport::Sse).await;
    app.fake.push(Reply::tool_calls(vec![
        ("call_1", "py__add", r#"{"a":2,"b":3}"#),
        ("call_2", "ev__echo", r#"{"message":"via sse"}"#),
    ]));
    app.fake.push(Reply::text("done"));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "add and echo",
                   "tools": [mcp_tool("py", &python), mcp_tool("ev", &everything)]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(items(&response, "mcp_list_tools").len(), 2);
    let calls = items(&response, "mcp_call");
    assert_eq!(calls.len(), 2);
    assert!(
        calls[0]["output"].as_str().unwrap().contains('5'),
        "{}",
        calls[0]
    );
    assert!(
        calls[1]["output"].as_str().unwrap().contains("via sse"),
        "{}",
        calls[1]
    );
}

#[tokio::test]
async fn server_everything_over_streamable_http() {
    let app = app().await;
    let everything = McpFixture::everything(Transport::StreamableHttp).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "ev__echo",
        r#"{"message":"hi"}"#,
    )]));
    app.fake.push(Reply::text("done"));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "echo", "tools": [mcp_tool("ev", &everything)]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    let list = items(&response, "mcp_list_tools")[0];
    assert!(list["tools"].as_array().unwrap().len() >= 10, "{list}");
    assert!(
        items(&response, "mcp_call")[0]["output"]
            .as_str()
            .unwrap()
            .contains("hi")
    );
}

#[tokio::test]
async fn the_token_and_headers_reach_the_server_and_nowhere_else() {
    let app = app().await;
    let token = "mcp-secret-token-5f1e";
    let fixture = McpFixture::start_with_token("auth", Transport::StreamableHttp, token).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "sec__echo",
        r#"{"text":"x"}"#,
    )]));
    app.fake.push(Reply::text("ok"));
    let tool = json!({"type": "mcp", "server_label": "sec", "server_url": fixture.url,
                      "authorization": token, "headers": {"X-Tenant": "tenant-header-value-77"}});
    let transcript = app
        .post_stream(
            "/v1/responses",
            json!({"model": MODEL, "input": "go", "stream": true, "tools": [tool]}),
        )
        .await;
    let response = transcript.terminal()["response"].clone();
    assert_eq!(response["status"], "completed", "{response}");
    // Every request the server saw carried both.
    let requests = fixture.requests();
    assert!(!requests.is_empty());
    for request in &requests {
        assert_eq!(request["authorization"], format!("Bearer {token}"));
        assert_eq!(request["headers"]["x-tenant"], "tenant-header-value-77");
    }
    // Not in the stream, the stored response, the stored event log, or the model's requests.
    let id = response["id"].as_str().unwrap();
    let (_, stored) = app.get(&format!("/v1/responses/{id}")).await;
    let replay = app
        .get_text(&format!("/v1/responses/{id}?stream=true"))
        .await;
    let upstream = serde_json::to_string(&app.fake.requests()).unwrap();
    for (what, text) in [
        ("stream", serde_json::to_string(&transcript.events).unwrap()),
        ("stored response", stored.to_string()),
        ("stored events", replay),
        ("model requests", upstream),
    ] {
        assert!(!text.contains(token), "token in {what}");
        assert!(!text.contains("tenant-header-value-77"), "header in {what}");
    }
    assert_eq!(stored["tools"][0]["server_label"], "sec");
    assert!(stored["tools"][0].get("authorization").is_none());

    // A wrong token fails discovery without echoing either token.
    let (status, error) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "go", "tools": [{"type": "mcp", "server_label": "sec",
                   "server_url": fixture.url, "authorization": "wrong-token-9a9a"}]}),
        )
        .await;
    assert_eq!(status, 424, "{error}");
    assert_eq!(error["error"]["type"], "external_connector_error");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("401"), "{message}");
    assert!(!message.contains("wrong-token-9a9a") && !message.contains(token));
}

#[tokio::test]
async fn discovery_failure_fails_the_run_in_every_request_mode() {
    let app = app().await;
    let broken = McpFixture::start("broken", Transport::StreamableHttp).await;
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        format!("http://127.0.0.1:{port}/mcp")
    };
    for url in [closed.as_str(), broken.url.as_str()] {
        let tools = json!([{"type": "mcp", "server_label": "down", "server_url": url}]);
        // Plain: HTTP 424.
        let (status, error) = app
            .post(
                "/v1/responses",
                json!({"model": MODEL, "input": "x", "tools": tools}),
            )
            .await;
        assert_eq!(status, 424, "{url}: {error}");
        assert_eq!(error["error"]["type"], "external_connector_error");
        assert_eq!(error["error"]["code"], 424);
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("\"down\"")
        );
        // Stream: HTTP 200 and a stream ending in response.failed.
        let transcript = app
            .post_stream(
                "/v1/responses",
                json!({"model": MODEL, "input": "x", "tools": tools, "stream": true}),
            )
            .await;
        let terminal = transcript.terminal();
        assert_eq!(terminal["type"], "response.failed");
        assert_eq!(terminal["error"]["code"], "external_connector_error");
        // Background: queued, then failed.
        let (status, queued) = app
            .post(
                "/v1/responses",
                json!({"model": MODEL, "input": "x", "tools": tools, "background": true}),
            )
            .await;
        assert_eq!(status, 200);
        let done = app.wait_terminal(queued["id"].as_str().unwrap()).await;
        assert_eq!(done["status"], "failed");
        assert_eq!(done["error"]["code"], "external_connector_error");
    }
    // The model was never asked.
    assert!(app.fake.requests().is_empty());
}

#[tokio::test]
async fn private_addresses_are_refused_unless_the_operator_allows_them() {
    let app = TestApp::spawn().await; // no AGENTD_ALLOW_PRIVATE_NETWORKS
    let fixture = McpFixture::start("basic", Transport::StreamableHttp).await;
    let (status, error) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "tools": [mcp_tool("srv", &fixture)]}),
        )
        .await;
    assert_eq!(status, 424, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not allowed"),
        "{error}"
    );
    assert!(fixture.requests().is_empty(), "no request reached it");
}

#[tokio::test]
async fn allowed_tools_limit_what_the_model_sees() {
    let app = app().await;
    let fixture = McpFixture::start("basic", Transport::StreamableHttp).await;
    app.fake.push(Reply::text("fine"));
    let mut tool = mcp_tool("srv", &fixture);
    tool["allowed_tools"] = json!(["add"]);
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "tools": [tool]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(offered_tools(&app, 0), ["srv__add"]);
    let listed: Vec<&str> = items(&response, "mcp_list_tools")[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["add"]);
}

#[tokio::test]
async fn tool_errors_and_timeouts_go_back_to_the_model() {
    let app = app_with(|config| config.mcp.request_timeout = Duration::from_millis(1500)).await;
    let failing = McpFixture::start("failing", Transport::StreamableHttp).await;
    let basic = McpFixture::start("basic", Transport::StreamableHttp).await;
    app.fake.push(Reply::tool_calls(vec![
        ("call_1", "f__explode", r#"{"reason":"disk on fire"}"#),
        ("call_2", "b__slow", r#"{"seconds":10}"#),
        ("call_3", "b__echo", r#"not json"#),
    ]));
    app.fake.push(Reply::text("Sorry, the tools failed."));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "tools": [mcp_tool("f", &failing), mcp_tool("b", &basic)]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["status"], "completed");
    let calls = items(&response, "mcp_call");
    assert_eq!(calls.len(), 3);
    assert!(
        calls[0]["error"].as_str().unwrap().contains("disk on fire"),
        "{}",
        calls[0]
    );
    assert!(
        calls[1]["error"].as_str().unwrap().contains("1500 ms"),
        "{}",
        calls[1]
    );
    assert!(
        calls[2]["error"].as_str().unwrap().contains("JSON"),
        "{}",
        calls[2]
    );
    let results = tool_results(&app, 1);
    assert_eq!(results.len(), 3);
    assert!(
        results.iter().all(|r| r.starts_with("error:")),
        "{results:?}"
    );
}

#[tokio::test]
async fn long_outputs_are_truncated_on_the_item_and_for_the_model() {
    let app = app().await;
    let fixture = McpFixture::start("basic", Transport::StreamableHttp).await;
    let long = "x".repeat(150_000);
    let arguments = json!({"text": long}).to_string();
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "srv__echo",
        arguments.as_str(),
    )]));
    app.fake.push(Reply::text("long"));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "tools": [mcp_tool("srv", &fixture)]}),
        )
        .await;
    assert_eq!(status, 200, "{}", response["error"]);
    let output = items(&response, "mcp_call")[0]["output"].as_str().unwrap();
    assert!(output.len() < 101_000, "{} bytes", output.len());
    assert!(
        output.ends_with("more bytes]"),
        "{}",
        &output[output.len() - 60..]
    );
    let told = &tool_results(&app, 1)[0];
    assert_eq!(told, output);
}

/// Starts a run gated by `require_approval` and returns the response awaiting a decision.
async fn gated_run(app: &TestApp, fixture: &McpFixture, approval: Value) -> Value {
    let mut tool = mcp_tool("files", fixture);
    tool["require_approval"] = approval;
    tool["headers"] = json!({"X-Run": "first"});
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "delete old.txt", "tools": [tool]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    response
}

#[tokio::test]
async fn approval_then_continuation_runs_the_call_exactly_once_with_new_credentials() {
    let app = app().await;
    let fixture = McpFixture::start("annotated", Transport::StreamableHttp).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "files__delete_file",
        r#"{"path":"old.txt"}"#,
    )]));
    let paused = gated_run(&app, &fixture, json!("always")).await;
    assert_eq!(paused["status"], "requires_action");
    let request = items(&paused, "mcp_approval_request")[0].clone();
    assert_eq!(request["name"], "delete_file");
    assert_eq!(request["server_label"], "files");
    assert_eq!(request["arguments"], r#"{"path":"old.txt"}"#);
    assert!(fixture.calls().is_empty(), "not called before approval");

    // Approve, with a changed header: the call must use this request's settings.
    app.fake.push(Reply::text("Deleted."));
    let mut tool = mcp_tool("files", &fixture);
    tool["require_approval"] = json!("always");
    tool["headers"] = json!({"X-Run": "second"});
    let before = fixture.requests().len();
    let (status, done) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "previous_response_id": paused["id"], "tools": [tool],
                   "input": [{"type": "mcp_approval_response", "approval_request_id": request["id"], "approve": true}]}),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "completed");
    let call = items(&done, "mcp_call")[0];
    assert_eq!(call["approval_request_id"], request["id"]);
    assert!(call["output"].as_str().unwrap().contains("old.txt"));
    assert_eq!(
        fixture.calls(),
        vec![("delete_file".to_owned(), json!({"path": "old.txt"}))]
    );
    let later = &fixture.requests()[before..];
    assert!(!later.is_empty());
    assert!(later.iter().all(|r| r["headers"]["x-run"] == "second"));
    // The same list is not emitted again, and the tool list was not fetched again.
    assert!(items(&done, "mcp_list_tools").is_empty(), "{done}");
    assert_eq!(fixture.list_count(), 1);
    // The model saw the call and its result after its own turn.
    assert!(tool_results(&app, 0).is_empty());
    assert!(tool_results(&app, 1)[0].contains("old.txt"));

    // Continuing again does not run it again.
    app.fake.push(Reply::text("Anything else?"));
    let mut tool = mcp_tool("files", &fixture);
    tool["require_approval"] = json!("always");
    let (status, _) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "previous_response_id": done["id"], "tools": [tool], "input": "thanks"}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(fixture.calls().len(), 1);
}

#[tokio::test]
async fn a_denial_skips_the_call_and_tells_the_model_the_reason() {
    let app = app().await;
    let fixture = McpFixture::start("annotated", Transport::StreamableHttp).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "files__delete_file",
        r#"{"path":"old.txt"}"#,
    )]));
    let paused = gated_run(&app, &fixture, json!("always")).await;
    let request_id = items(&paused, "mcp_approval_request")[0]["id"].clone();
    app.fake.push(Reply::text("I will not delete it."));
    let mut tool = mcp_tool("files", &fixture);
    tool["require_approval"] = json!("always");
    let (status, done) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "previous_response_id": paused["id"], "tools": [tool],
                   "input": [{"type": "mcp_approval_response", "approval_request_id": request_id,
                              "approve": false, "reason": "that file is still needed"}]}),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "completed");
    assert!(items(&done, "mcp_call").is_empty());
    assert!(fixture.calls().is_empty());
    let told = tool_results(&app, 1);
    assert!(told[0].contains("denied") && told[0].contains("that file is still needed"));
}

#[tokio::test]
async fn replayed_history_without_previous_response_id_runs_an_approval_once() {
    let app = app().await;
    let fixture = McpFixture::start("annotated", Transport::StreamableHttp).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "files__send_email",
        r#"{"to":"a@example.com","subject":"hi","body":"hello"}"#,
    )]));
    let paused = gated_run(&app, &fixture, json!({"never": {"read_only": true}})).await;
    assert_eq!(paused["status"], "requires_action");
    let request = items(&paused, "mcp_approval_request")[0].clone();
    let mut tool = mcp_tool("files", &fixture);
    tool["require_approval"] = json!({"never": {"read_only": true}});

    app.fake.push(Reply::text("Sent."));
    let mut input = vec![
        json!({"role": "user", "content": "delete old.txt"}),
        request.clone(),
    ];
    input.push(json!({"type": "mcp_approval_response", "approval_request_id": request["id"], "approve": true}));
    let (status, done) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "store": false, "tools": [tool.clone()], "input": input.clone()}),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    let call = items(&done, "mcp_call")[0].clone();
    assert_eq!(call["approval_request_id"], request["id"]);
    assert_eq!(fixture.calls().len(), 1);

    // Replaying the mcp_call as history does not run the tool again.
    app.fake.push(Reply::text("Anything else?"));
    input.push(call);
    input.push(json!({"role": "user", "content": "thanks"}));
    let (status, again) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "store": false, "tools": [tool], "input": input}),
        )
        .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["status"], "completed");
    assert_eq!(fixture.calls().len(), 1);
    // The model's view of both continuations is the same conversation.
    let second = &app.fake.requests()[2]["messages"];
    assert!(second.to_string().contains("files__send_email"));
}

#[tokio::test]
async fn read_only_filters_let_reads_run_and_gate_writes_and_a_later_step_can_ask_again() {
    let app = app().await;
    let fixture = McpFixture::start("annotated", Transport::StreamableHttp).await;
    let policy = json!({"never": {"read_only": true}});
    app.fake.push(Reply::tool_calls(vec![
        ("call_1", "files__list_files", r#"{"path":"/"}"#),
        ("call_2", "files__delete_file", r#"{"path":"a"}"#),
    ]));
    let paused = gated_run(&app, &fixture, policy.clone()).await;
    assert_eq!(paused["status"], "requires_action");
    assert_eq!(items(&paused, "mcp_call").len(), 1, "the read ran");
    assert_eq!(items(&paused, "mcp_approval_request").len(), 1);
    assert_eq!(fixture.calls().len(), 1);
    let request_id = items(&paused, "mcp_approval_request")[0]["id"].clone();

    // After approval the model asks for another write: a new approval request.
    app.fake.push(Reply::tool_calls(vec![(
        "call_3",
        "files__delete_file",
        r#"{"path":"b"}"#,
    )]));
    let mut tool = mcp_tool("files", &fixture);
    tool["require_approval"] = policy;
    let (status, again) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "previous_response_id": paused["id"], "tools": [tool],
                   "input": [{"type": "mcp_approval_response", "approval_request_id": request_id, "approve": true}]}),
        )
        .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["status"], "requires_action");
    assert_eq!(items(&again, "mcp_call").len(), 1);
    let second = items(&again, "mcp_approval_request")[0];
    assert_eq!(second["arguments"], r#"{"path":"b"}"#);
    assert_ne!(second["id"], request_id);
    assert_eq!(fixture.calls().len(), 2);
}

#[tokio::test]
async fn bad_continuations_are_refused_per_request_mode() {
    let app = app().await;
    let fixture = McpFixture::start("annotated", Transport::StreamableHttp).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "files__delete_file",
        r#"{"path":"old.txt"}"#,
    )]));
    let paused = gated_run(&app, &fixture, json!("always")).await;
    let request_id = items(&paused, "mcp_approval_request")[0]["id"].clone();
    let mut tool = mcp_tool("files", &fixture);
    tool["require_approval"] = json!("always");
    let continue_with = |input: Value, tools: Value| json!({"model": MODEL, "previous_response_id": paused["id"], "tools": tools, "input": input});

    // No decision: 400, nothing runs.
    let (status, error) = app
        .post(
            "/v1/responses",
            continue_with(json!("go on"), json!([tool.clone()])),
        )
        .await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["error"]["type"], "invalid_request");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains(request_id.as_str().unwrap())
    );
    // The same in a stream and in the background.
    let mut body = continue_with(json!("go on"), json!([tool.clone()]));
    body["stream"] = json!(true);
    let transcript = app.post_stream("/v1/responses", body).await;
    assert_eq!(transcript.terminal()["type"], "response.failed");
    assert_eq!(transcript.terminal()["error"]["code"], "invalid_request");
    let mut body = continue_with(json!("go on"), json!([tool.clone()]));
    body["background"] = json!(true);
    let (_, queued) = app.post("/v1/responses", body).await;
    let done = app.wait_terminal(queued["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "failed");
    assert_eq!(done["error"]["code"], "invalid_request");

    // A decision for an unknown request.
    let (status, error) = app
        .post(
            "/v1/responses",
            continue_with(
                json!([{"type": "mcp_approval_response", "approval_request_id": request_id, "approve": true},
                       {"type": "mcp_approval_response", "approval_request_id": "mcpr_nope", "approve": true}]),
                json!([tool.clone()]),
            ),
        )
        .await;
    assert_eq!(status, 400, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("mcpr_nope")
    );

    // A malformed decision is a validation error.
    let (status, error) = app
        .post(
            "/v1/responses",
            continue_with(
                json!([{"type": "mcp_approval_response", "approval_request_id": request_id, "approve": "yes"}]),
                json!([tool.clone()]),
            ),
        )
        .await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["error"]["param"], "input[0].approve");

    // Approving while leaving the server out fails like a discovery failure.
    let (status, error) = app
        .post(
            "/v1/responses",
            continue_with(
                json!([{"type": "mcp_approval_response", "approval_request_id": request_id, "approve": true}]),
                json!([]),
            ),
        )
        .await;
    assert_eq!(status, 424, "{error}");
    assert_eq!(error["error"]["type"], "external_connector_error");
    assert!(fixture.calls().is_empty(), "nothing ran");
}

#[tokio::test]
async fn deferred_servers_are_searched_before_their_tools_are_offered() {
    let app = app().await;
    let fixture = McpFixture::start("many", Transport::StreamableHttp).await;
    let mut tool = mcp_tool("cat", &fixture);
    tool["defer_loading"] = json!(true);
    tool["server_description"] = json!("A catalog of productivity tools");
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "tool_search",
        r#"{"query":"zebra husbandry"}"#,
    )]));
    app.fake.push(Reply::tool_calls(vec![(
        "call_2",
        "tool_search",
        r#"{"query":"weather forecast for a city","server_label":"cat"}"#,
    )]));
    app.fake.push(Reply::tool_calls(vec![(
        "call_3",
        "cat__weather_forecast",
        r#"{"city":"Paris"}"#,
    )]));
    app.fake.push(Reply::text("Sunny in Paris."));
    let transcript = app
        .post_stream(
            "/v1/responses",
            json!({"model": MODEL, "input": "weather in Paris?", "tools": [tool], "stream": true}),
        )
        .await;
    let response = transcript.terminal()["response"].clone();
    assert_eq!(response["status"], "completed", "{response}");

    // Discovery happened at the start (all 60 tools, across pages) …
    let list = items(&response, "mcp_list_tools")[0];
    assert_eq!(list["tools"].as_array().unwrap().len(), 60);
    // … but the model's first request holds no deferred schema: only tool_search.
    assert_eq!(offered_tools(&app, 0), ["tool_search"]);
    let first = app.fake.requests()[0]["tools"].to_string();
    assert!(first.contains("A catalog of productivity tools"));
    assert!(!first.contains("weather_forecast"), "{first}");

    let searches = items(&response, "tool_search_output");
    assert_eq!(searches.len(), 2);
    assert_eq!(searches[0]["tools"], json!([]), "nothing matched");
    assert_eq!(searches[0]["call_id"], "call_1");
    assert_eq!(searches[0]["execution"], "server");
    assert_eq!(searches[0]["status"], "completed");
    let namespace = &searches[1]["tools"][0];
    assert_eq!(namespace["type"], "namespace");
    assert_eq!(namespace["name"], "cat");
    assert_eq!(namespace["tools"][0]["name"], "weather_forecast");
    assert_eq!(namespace["tools"][0]["type"], "function");
    // Found tools are callable from the next step, appended after tool_search.
    let third = offered_tools(&app, 2);
    assert_eq!(third[0], "tool_search");
    assert!(
        third.contains(&"cat__weather_forecast".to_owned()),
        "{third:?}"
    );
    let call = items(&response, "mcp_call")[0];
    assert_eq!(call["name"], "weather_forecast");
    assert_eq!(fixture.calls()[0].0, "weather_forecast");

    // Every MCP item was streamed as output_item.added/done.
    let added: Vec<&str> = transcript
        .events
        .iter()
        .filter(|e| e["type"] == "response.output_item.added")
        .map(|e| e["item"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        added,
        [
            "mcp_list_tools",
            "tool_search_output",
            "tool_search_output",
            "mcp_call",
            "message"
        ]
    );
    let done_call = transcript
        .events
        .iter()
        .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "mcp_call")
        .unwrap();
    assert!(
        done_call["item"]["output"]
            .as_str()
            .unwrap()
            .contains("Paris")
    );
}

#[tokio::test]
async fn loaded_tools_stay_loaded_in_a_continuation() {
    let app = app().await;
    let fixture = McpFixture::start("many", Transport::StreamableHttp).await;
    let mut tool = mcp_tool("cat", &fixture);
    tool["defer_loading"] = json!(true);
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "tool_search",
        r#"{"query":"stock quote"}"#,
    )]));
    app.fake.push(Reply::text("Loaded."));
    let (_, first) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "find stock tools", "tools": [tool.clone()]}),
        )
        .await;
    assert_eq!(first["status"], "completed", "{first}");
    app.fake.push(Reply::text("ok"));
    let (_, second) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "previous_response_id": first["id"], "input": "now quote AAPL", "tools": [tool]}),
        )
        .await;
    assert_eq!(second["status"], "completed", "{second}");
    assert!(offered_tools(&app, 2).contains(&"cat__stock_quote".to_owned()));
}

#[tokio::test]
async fn a_changed_tool_list_is_listed_again() {
    let app = app().await;
    let fixture = McpFixture::start("changing", Transport::StreamableHttp).await;
    app.fake
        .push(Reply::tool_calls(vec![("call_1", "ch__mutate", "{}")]));
    app.fake
        .push(Reply::tool_calls(vec![("call_2", "ch__new_tool", "{}")]));
    app.fake.push(Reply::text("done"));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "tools": [mcp_tool("ch", &fixture)]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    let lists = items(&response, "mcp_list_tools");
    assert_eq!(lists.len(), 2, "{response}");
    assert!(lists[1]["tools"].to_string().contains("new_tool"));
    assert_eq!(fixture.calls().len(), 2);
}

#[tokio::test]
async fn cancel_interrupts_a_slow_mcp_call() {
    let app = app().await;
    let fixture = McpFixture::start("basic", Transport::StreamableHttp).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "srv__slow",
        r#"{"seconds":20}"#,
    )]));
    let (id, _, response) = app
        .start_stream(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "stream": true, "tools": [mcp_tool("srv", &fixture)]}),
        )
        .await;
    // Wait until the server is running the call.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while fixture.calls().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "call never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let started = std::time::Instant::now();
    let (status, _) = app
        .post(&format!("/v1/responses/{id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200);
    let rest = response.text().await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the stream ended {:?} after the cancel",
        started.elapsed()
    );
    assert!(rest.contains("response.cancelled"), "{rest}");
    assert_eq!(app.wait_terminal(&id).await["status"], "cancelled");
}

#[tokio::test]
async fn server_limits_are_checked_before_anything_runs() {
    let app = app().await;
    let many: Vec<Value> = (0..17)
        .map(|i| json!({"type": "mcp", "server_label": format!("s{i}"), "server_url": "https://example.com/mcp"}))
        .collect();
    let (status, error) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "tools": many}),
        )
        .await;
    assert_eq!(status, 400, "{error}");
    for (label, param) in [
        ("bad label!", "tools[0].server_label"),
        ("", "tools[0].server_label"),
    ] {
        let (status, error) = app
            .post(
                "/v1/responses",
                json!({"model": MODEL, "input": "x", "tools": [{"type": "mcp", "server_label": label, "server_url": "https://example.com/mcp"}]}),
            )
            .await;
        assert_eq!(status, 400, "{error}");
        assert_eq!(error["error"]["param"], param);
    }
    let (status, error) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "tools": [
                {"type": "mcp", "server_label": "a", "server_url": "https://example.com/mcp"},
                {"type": "mcp", "server_label": "a", "server_url": "https://example.org/mcp"}]}),
        )
        .await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["error"]["param"], "tools[1].server_label");
    assert!(app.fake.requests().is_empty());
}

#[tokio::test]
async fn a_background_runs_credentials_are_never_stored_in_clear() {
    let app = app_with(|config| {
        config.store = agentd_server::config::StoreLocation::DataDir(config.data_dir.clone());
    })
    .await;
    let token = "bg-secret-token-8c2d";
    let fixture = McpFixture::start_with_token("auth", Transport::StreamableHttp, token).await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "sec__echo",
        r#"{"text":"x"}"#,
    )]));
    app.fake.push(Reply::text("ok"));
    let tool = json!({"type": "mcp", "server_label": "sec", "server_url": fixture.url,
                      "authorization": token, "headers": {"X-Tenant": "bg-header-value-31"}});
    let (status, queued) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "go", "background": true, "tools": [tool]}),
        )
        .await;
    assert_eq!(status, 200, "{queued}");
    let id = queued["id"].as_str().unwrap();
    let done = app.wait_terminal(id).await;
    assert_eq!(done["status"], "completed", "{done}");
    // The worker used them.
    for request in fixture.requests() {
        assert_eq!(request["authorization"], format!("Bearer {token}"));
    }
    // The loopback server keeps a generated key beside the store, readable by its owner only.
    let key = app.data_dir.join("secret.key");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // No file of the data directory (the database, its WAL and shared memory included) holds
    // either value.
    let mut files = Vec::new();
    let mut dirs = vec![app.data_dir.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    assert!(files.iter().any(|f| f.ends_with("agentd.db")), "{files:?}");
    for file in &files {
        let bytes = std::fs::read(file).unwrap_or_default();
        for secret in [token, "bg-header-value-31"] {
            assert!(
                !bytes
                    .windows(secret.len())
                    .any(|window| window == secret.as_bytes()),
                "{secret} in {}",
                file.display()
            );
        }
    }
}
