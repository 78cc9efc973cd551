//! Self-test of `testkit::mcp`: every fixture kind starts over both transports and answers as
//! an MCP server (or, for `broken`, as anything but one), speaking plain HTTP to it.

#![expect(
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly"
)]

use agentd_testkit::http_client;
use agentd_testkit::mcp::{McpFixture, Transport};
use futures::future::join_all;
use serde_json::{Value, json};

const TRANSPORTS: [Transport; 2] = [Transport::StreamableHttp, Transport::Sse];
const PROTOCOL: &str = "2025-11-25";

fn initialize() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "self-test", "version": "1"}}
    })
}

/// The JSON-RPC message of an SSE-framed (or plain JSON) streamable HTTP answer with this id.
fn message_with_id(body: &str, id: i64) -> Option<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        return (value["id"] == id).then_some(value);
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|value| value["id"] == id)
}

/// A streamable HTTP session: the session id after `initialize` and `notifications/initialized`.
struct Streamable {
    client: reqwest::Client,
    url: String,
    session: Option<String>,
    token: Option<String>,
}

impl Streamable {
    fn new(url: &str, token: Option<&str>) -> Streamable {
        Streamable {
            client: http_client(),
            url: url.to_owned(),
            session: None,
            token: token.map(str::to_owned),
        }
    }

    async fn post(&self, body: &Value) -> reqwest::Response {
        let mut request = self
            .client
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL)
            .header("x-self-test", "yes")
            .json(body);
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        request.send().await.expect("request sent")
    }

    /// Sends a request; returns its JSON-RPC answer.
    async fn call(&self, id: i64, method: &str, params: Value) -> Value {
        let response = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        assert_eq!(response.status().as_u16(), 200, "{method} at {}", self.url);
        let body = response.text().await.expect("body");
        message_with_id(&body, id).unwrap_or_else(|| panic!("no answer to {method} in {body}"))
    }

    /// `initialize` + `notifications/initialized`; returns the initialize result.
    async fn open(&mut self) -> Value {
        let response = self.post(&initialize()).await;
        assert_eq!(
            response.status().as_u16(),
            200,
            "initialize at {}",
            self.url
        );
        self.session = response
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().expect("ascii session id").to_owned());
        let body = response.text().await.expect("body");
        let answer =
            message_with_id(&body, 1).unwrap_or_else(|| panic!("no initialize answer in {body}"));
        let accepted = self
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(accepted.status().as_u16(), 202);
        answer["result"].clone()
    }
}

/// Opens the SSE stream, reads the `endpoint` event, POSTs `initialize` there and reads the
/// answer from the stream. Returns (endpoint, initialize result).
async fn sse_initialize(url: &str, token: Option<&str>) -> (String, Value) {
    let client = http_client();
    let mut request = client.get(url).header("x-self-test", "yes");
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let mut stream = request.send().await.expect("GET sent");
    assert_eq!(stream.status().as_u16(), 200, "GET {url}");
    let mut seen = String::new();
    let endpoint = loop {
        let chunk = stream.chunk().await.expect("stream").expect("stream open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
        let endpoint = seen
            .split("\n\n")
            .find(|frame| frame.contains("event: endpoint"))
            .and_then(|frame| frame.lines().find_map(|l| l.strip_prefix("data: ")));
        if let Some(endpoint) = endpoint {
            break endpoint.trim().to_owned();
        }
    };
    let base = url.trim_end_matches("/sse");
    let mut post = client.post(format!("{base}{endpoint}")).json(&initialize());
    if let Some(token) = token {
        post = post.bearer_auth(token);
    }
    let posted = post.send().await.expect("POST sent");
    assert!(
        posted.status().is_success(),
        "POST {endpoint}: {}",
        posted.status()
    );
    loop {
        if let Some(answer) = message_with_id(&seen, 1) {
            return (endpoint, answer["result"].clone());
        }
        let chunk = stream.chunk().await.expect("stream").expect("stream open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
}

async fn start_all(kinds: &[&str]) -> Vec<(String, Transport, McpFixture)> {
    let starts = kinds.iter().flat_map(|kind| {
        TRANSPORTS.map(|transport| async move {
            let fixture = McpFixture::start(kind, transport).await;
            ((*kind).to_owned(), transport, fixture)
        })
    });
    join_all(starts).await
}

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect()
}

#[tokio::test]
async fn every_mcp_kind_serves_both_transports() {
    let kinds = ["basic", "annotated", "failing", "many", "changing", "edge"];
    for (kind, transport, fixture) in start_all(&kinds).await {
        assert!(
            fixture.url.starts_with("http://127.0.0.1:"),
            "{}",
            fixture.url
        );
        let result = match transport {
            Transport::StreamableHttp => {
                assert!(fixture.url.ends_with("/mcp"));
                Streamable::new(&fixture.url, None).open().await
            }
            Transport::Sse => {
                assert!(fixture.url.ends_with("/sse"));
                let (endpoint, result) = sse_initialize(&fixture.url, None).await;
                assert!(endpoint.starts_with("/messages/"), "{endpoint}");
                result
            }
        };
        assert_eq!(
            result["serverInfo"]["name"],
            format!("agentd-fixture-{kind}")
        );
        assert_eq!(result["protocolVersion"], PROTOCOL);
        let requests = fixture.requests();
        assert!(requests.len() >= 2, "{kind} {transport:?}: {requests:?}");
        assert_eq!(requests[0]["headers"]["x-self-test"], "yes");
        assert_eq!(requests[0]["authorization"], Value::Null);
        assert_eq!(requests[0]["path"], transport.path());
        if transport == Transport::StreamableHttp {
            check_tools(&kind, &fixture).await;
        }
    }
}

/// Lists and calls the tools of a fresh streamable HTTP fixture; checks what its log recorded.
async fn check_tools(kind: &str, fixture: &McpFixture) {
    let mut session = Streamable::new(&fixture.url, None);
    session.open().await;
    let list = session.call(2, "tools/list", json!({})).await;
    match kind {
        "basic" => {
            assert_eq!(tool_names(&list), ["echo", "add", "slow"]);
            assert_eq!(
                list["result"]["tools"][0]["annotations"]["readOnlyHint"],
                true
            );
            let echo = session
                .call(
                    3,
                    "tools/call",
                    json!({"name": "echo", "arguments": {"text": "hi"}}),
                )
                .await;
            assert_eq!(echo["result"]["content"][0]["text"], "hi");
            let add = session
                .call(
                    4,
                    "tools/call",
                    json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
                )
                .await;
            assert_eq!(add["result"]["content"][0]["text"], "5");
            assert_eq!(
                fixture.calls(),
                [
                    ("echo".to_owned(), json!({"text": "hi"})),
                    ("add".to_owned(), json!({"a": 2, "b": 3}))
                ]
            );
        }
        "failing" => {
            let failed = session
                .call(
                    3,
                    "tools/call",
                    json!({"name": "explode", "arguments": {"reason": "kaboom"}}),
                )
                .await;
            assert_eq!(failed["result"]["isError"], true);
            let text = failed["result"]["content"][0]["text"]
                .as_str()
                .expect("text");
            assert!(text.contains("kaboom"), "{text}");
        }
        "many" => {
            assert_eq!(tool_names(&list).len(), 25);
            let mut names = tool_names(&list);
            let mut cursor = list["result"]["nextCursor"].clone();
            let mut id = 3;
            while let Some(next) = cursor.as_str() {
                let page = session
                    .call(id, "tools/list", json!({"cursor": next}))
                    .await;
                names.extend(tool_names(&page));
                cursor = page["result"]["nextCursor"].clone();
                id += 1;
            }
            assert_eq!(names.len(), 60);
            assert!(names.iter().any(|n| n == "github_create_issue"));
            assert_eq!(fixture.list_count(), 3);
        }
        "changing" => {
            assert!(!tool_names(&list).contains(&"new_tool".to_owned()));
            let response = session
                .post(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "mutate", "arguments": {}}}))
                .await;
            let body = response.text().await.expect("body");
            assert!(body.contains("notifications/tools/list_changed"), "{body}");
            let list = session.call(4, "tools/list", json!({})).await;
            assert!(tool_names(&list).contains(&"new_tool".to_owned()));
            assert_eq!(fixture.list_count(), 2);
        }
        "annotated" => {
            assert_eq!(
                tool_names(&list),
                ["get_weather", "list_files", "delete_file", "send_email"]
            );
            let hint =
                |i: usize, name: &str| list["result"]["tools"][i]["annotations"][name].clone();
            assert_eq!(hint(0, "readOnlyHint"), true);
            assert_eq!(hint(1, "readOnlyHint"), true);
            assert_eq!(hint(2, "readOnlyHint"), false);
            assert_eq!(hint(2, "destructiveHint"), true);
            assert_eq!(hint(3, "readOnlyHint"), false);
        }
        "edge" => {
            assert_eq!(
                tool_names(&list),
                [
                    "echo",
                    "headers",
                    "fail",
                    "slow",
                    "big",
                    "structured",
                    "mixed",
                    "change_tools",
                    "leak"
                ]
            );
            let call = |id: i64, name: &str, arguments: Value| {
                let session = &session;
                let params = json!({"name": name, "arguments": arguments});
                async move { session.call(id, "tools/call", params).await }
            };
            let echo = call(3, "echo", json!({"message": "hi"})).await;
            assert_eq!(echo["result"]["content"][0]["text"], "Echo: hi");
            let headers = call(4, "headers", json!({})).await;
            assert_eq!(
                headers["result"]["content"][0]["text"],
                r#"{"x-self-test": "yes"}"#
            );
            let failed = call(5, "fail", json!({})).await;
            assert_eq!(failed["result"]["isError"], true);
            let big = call(6, "big", json!({"bytes": 3000})).await;
            assert_eq!(big["result"]["content"][0]["text"], "x".repeat(3000));
            let structured = call(7, "structured", json!({})).await;
            assert_eq!(
                structured["result"]["structuredContent"],
                json!({"answer": 42})
            );
            let mixed = call(8, "mixed", json!({})).await;
            assert_eq!(mixed["result"]["content"][1]["type"], "image");
            let leak = call(9, "leak", json!({})).await;
            assert_eq!(leak["error"]["code"], -32000);
            assert_eq!(leak["error"]["message"], "rejected credentials: yes");
            assert_eq!(fixture.calls().len(), 7);
        }
        _ => unreachable!(),
    }
}

/// Lists every page of a fresh streamable HTTP fixture's tools: (pages, tool names).
async fn list_all_tools(fixture: &McpFixture) -> (usize, Vec<String>) {
    let mut session = Streamable::new(&fixture.url, None);
    session.open().await;
    let (mut pages, mut names, mut cursor) = (0, Vec::new(), Value::Null);
    loop {
        let params = match cursor.as_str() {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = session.call(2 + pages, "tools/list", params).await;
        pages += 1;
        names.extend(tool_names(&page));
        cursor = page["result"]["nextCursor"].clone();
        if cursor.is_null() {
            return (usize::try_from(pages).expect("few pages"), names);
        }
    }
}

#[tokio::test]
async fn extra_tools_and_page_size_shape_the_tool_list() {
    let start = |kind: &'static str, options: &'static [&'static str]| {
        McpFixture::start_with_args(kind, Transport::StreamableHttp, options)
    };
    let (edge, edge_paged, many) = tokio::join!(
        start("edge", &[]),
        start("edge", &["--extra-tools", "3", "--page-size", "4"]),
        start("many", &["--page-size", "60"]),
    );
    let (pages, names) = list_all_tools(&edge).await;
    assert_eq!((pages, names.len()), (1, 9));
    let (pages, names) = list_all_tools(&edge_paged).await;
    assert_eq!((pages, names.len()), (3, 12));
    assert_eq!(names[9..], ["tool_0000", "tool_0001", "tool_0002"]);
    assert_eq!(edge_paged.list_count(), 3);
    let (pages, names) = list_all_tools(&many).await;
    assert_eq!((pages, names.len()), (1, 60));
}

#[tokio::test]
async fn the_auth_fixture_refuses_requests_without_the_token() {
    let token = "fixture-secret-token";
    let fixtures =
        join_all(TRANSPORTS.map(|t| McpFixture::start_with_token("auth", t, token))).await;
    let client = http_client();
    for fixture in &fixtures {
        let refused = client
            .post(&fixture.url)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize())
            .send()
            .await
            .expect("sent");
        assert_eq!(refused.status().as_u16(), 401, "{}", fixture.url);
        let wrong = client
            .get(&fixture.url)
            .bearer_auth("not-the-token")
            .send()
            .await
            .expect("sent");
        assert_eq!(wrong.status().as_u16(), 401, "{}", fixture.url);
    }
    let [streamable, sse] = &fixtures[..] else {
        unreachable!()
    };
    let result = Streamable::new(&streamable.url, Some(token)).open().await;
    assert_eq!(result["serverInfo"]["name"], "agentd-fixture-auth");
    let (_, result) = sse_initialize(&sse.url, Some(token)).await;
    assert_eq!(result["serverInfo"]["name"], "agentd-fixture-auth");
    for fixture in &fixtures {
        let authorizations: Vec<Value> = fixture
            .requests()
            .iter()
            .map(|r| r["authorization"].clone())
            .collect();
        assert_eq!(authorizations[0], Value::Null);
        assert_eq!(authorizations[1], "Bearer not-the-token");
        assert!(
            authorizations[2..]
                .iter()
                .all(|a| *a == format!("Bearer {token}"))
        );
    }
}

#[tokio::test]
async fn the_broken_fixture_answers_something_that_is_not_mcp() {
    let fixtures = join_all(TRANSPORTS.map(|t| McpFixture::start("broken", t))).await;
    let client = http_client();
    for fixture in &fixtures {
        let response = client
            .post(&fixture.url)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize())
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status().as_u16(), 200);
        let body: Value = response.json().await.expect("JSON body");
        assert!(
            body.get("jsonrpc").is_none() && body.get("result").is_none(),
            "{body}"
        );
        assert_eq!(fixture.requests().len(), 1);
    }
}

#[tokio::test]
async fn server_everything_answers_on_both_transports() {
    let [streamable, sse] = &join_all(TRANSPORTS.map(McpFixture::everything)).await[..] else {
        unreachable!()
    };
    let result = Streamable::new(&streamable.url, None).open().await;
    assert_eq!(result["serverInfo"]["name"], "mcp-servers/everything");
    let (_, result) = sse_initialize(&sse.url, None).await;
    assert_eq!(result["serverInfo"]["name"], "mcp-servers/everything");
    assert!(streamable.log().is_empty() && sse.log().is_empty());
    assert_ne!(streamable.port, sse.port);
}
