//! What one request may hold (issue 13): the number of tools, the size and depth of a schema,
//! MCP header values. A request over a limit is a 400 naming the field and the limit, at
//! request time in every mode — never a failure later.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use serde_json::{Value, json};
use testkit::{Reply, TestApp};

const MODEL: &str = "openai/gpt-test";

fn functions(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"type": "function", "name": format!("tool_{i}"), "parameters": {"type": "object"}}))
        .collect()
}

/// A schema nested `depth` levels deep.
fn nested(depth: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 0..depth - 3 {
        schema = json!([schema]);
    }
    json!({"type": "object", "properties": {"a": schema}})
}

fn assert_refused(status: u16, body: &Value, param: &str, says: &str) {
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], param, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(says), "{message}");
}

#[tokio::test]
async fn the_tool_count_and_schema_size_are_limited_and_configurable() {
    let app = TestApp::spawn().await;
    let (status, body) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "tools": functions(20_000)}),
        )
        .await;
    assert_refused(status, &body, "tools", "at most 128 tools, got 20000");
    let big = json!({"type": "object", "description": "d".repeat(70_000)});
    let mut tools = functions(2);
    tools[1]["parameters"] = big;
    let (status, body) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "tools": tools, "background": true}),
        )
        .await;
    assert_refused(status, &body, "tools[1].parameters", "at most 65536 bytes");
    let mut tools = functions(1);
    tools[0]["description"] = json!("d".repeat(2 << 20));
    let (status, body) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "tools": tools}),
        )
        .await;
    assert_refused(status, &body, "tools", "total at most 1048576 bytes");
    app.fake.push(Reply::text("128 tools are fine"));
    let (status, body) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "tools": functions(128)}),
        )
        .await;
    assert_eq!(
        (status, &body["status"]),
        (200, &json!("completed")),
        "{body}"
    );
    assert_eq!(app.fake.requests().len(), 1);

    let app = TestApp::spawn_with(|config| {
        config.request_limits.max_tools = 300;
        config.request_limits.max_tool_schema_bytes = 100;
    })
    .await;
    app.fake.push(Reply::text("300 tools are fine here"));
    let (status, body) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "tools": functions(300)}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let mut tools = functions(1);
    tools[0]["parameters"] = json!({"type": "object", "description": "d".repeat(100)});
    let (status, body) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "tools": tools}),
        )
        .await;
    assert_refused(status, &body, "tools[0].parameters", "at most 100 bytes");
}

/// Regression: a background request whose tool schema nested 124 levels deep was accepted,
/// then failed with "the server stopped while this run was in progress".
#[tokio::test]
async fn a_deeply_nested_schema_is_a_400_in_every_mode() {
    let app = TestApp::spawn().await;
    let tools = json!([{"type": "function", "name": "f", "parameters": nested(124)}]);
    for mode in [
        json!({}),
        json!({"background": true}),
        json!({"stream": true}),
    ] {
        let mut request = json!({"model": MODEL, "input": "x", "tools": tools});
        request
            .as_object_mut()
            .unwrap()
            .extend(mode.as_object().unwrap().clone());
        let (status, body) = app.post("/v1/responses", request).await;
        assert_refused(status, &body, "tools[0].parameters", "at most 64 levels");
    }
    assert!(app.fake.requests().is_empty(), "nothing ran");
}

/// Regression: a CR or LF in an MCP header value was a 424 "unusable answer" after discovery.
#[tokio::test]
async fn mcp_header_values_with_line_breaks_are_a_400_naming_the_header() {
    let app =
        TestApp::spawn_with(|config| config.allow_private = vec!["127.0.0.0/8".to_owned()]).await;
    let mcp = |field: &str, value: Value| {
        let mut tool =
            json!({"type": "mcp", "server_label": "docs", "server_url": "http://127.0.0.1:9/mcp"});
        tool[field] = value;
        tool
    };
    for mode in [
        json!({}),
        json!({"background": true}),
        json!({"stream": true}),
    ] {
        for (tool, param) in [
            (
                mcp("headers", json!({"X-Api-Key": "secret\r\nX-Evil: 1"})),
                "tools[0].headers.X-Api-Key",
            ),
            (
                mcp("authorization", json!("secret\nX-Evil: 1")),
                "tools[0].authorization",
            ),
        ] {
            let mut request = json!({"model": MODEL, "input": "x", "tools": [tool]});
            request
                .as_object_mut()
                .unwrap()
                .extend(mode.as_object().unwrap().clone());
            let (status, body) = app.post("/v1/responses", request).await;
            assert_refused(status, &body, param, "no CR, LF");
            assert!(!body.to_string().contains("secret"), "{body}");
        }
    }
}
