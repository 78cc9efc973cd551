//! MCP in the run: discovery failures, approvals, deferred loading with `tool_search`.

use engine::Code;
use engine::mcp::McpError;
use engine::model::ModelMessage;
use serde_json::{Value, json};

use crate::common::{FakeServer, Harness, Turn, items, types};

const URL: &str = "https://mcp.example/mcp";

fn server(extra: Value) -> Value {
    let mut tool = json!({"type": "mcp", "server_label": "docs", "server_url": URL});
    if let (Some(tool), Some(extra)) = (tool.as_object_mut(), extra.as_object()) {
        tool.extend(extra.clone());
    }
    tool
}

#[tokio::test]
async fn a_discovery_failure_fails_the_run_before_the_model_is_asked() {
    let h = Harness::new();
    h.mcp.add(
        URL,
        FakeServer {
            refuse: Some(McpError::Http {
                status: 401,
                message: "unauthorized".to_owned(),
            }),
            ..FakeServer::default()
        },
    );
    let (response, start_error) = h
        .run(json!({"model": "fake/m", "input": "x", "tools": [server(json!({}))]}))
        .await;
    assert_eq!(start_error, Some(Code::ExternalConnector));
    assert_eq!(response["status"], "failed");
    assert_eq!(response["error"]["code"], "external_connector_error");
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"docs\" (mcp.example)"),
        "{response}"
    );
    assert!(h.model("m").requests().is_empty());

    let lists = items(&response, "mcp_list_tools");
    assert_eq!(lists.len(), 1);
    assert!(lists[0]["error"].as_str().unwrap().contains("HTTP 401"));

    // Streamed, the same failure is a failed `mcp_list_tools` item and `response.failed`.
    let events = h
        .stream(
            json!({"model": "fake/m", "input": "x", "stream": true, "tools": [server(json!({}))]}),
        )
        .await;
    assert_eq!(
        types(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.mcp_list_tools.in_progress",
            "response.mcp_list_tools.failed",
            "response.output_item.done",
            "response.failed"
        ]
    );
}

#[tokio::test]
async fn a_call_that_needs_approval_waits_and_runs_once_approved() {
    let h = Harness::new();
    let fixture = h.mcp.add(URL, FakeServer::with_tools(&["search"]));
    let model = h.model("m");
    model.push(Turn::calls(&[(
        "call_1",
        "docs__search",
        r#"{"q":"rust"}"#,
    )]));
    let tool = server(json!({"require_approval": "always"}));
    let (first, _) = h
        .run(json!({"model": "fake/m", "input": "x", "tools": [tool]}))
        .await;
    assert_eq!(first["status"], "requires_action", "{first}");
    let requests = items(&first, "mcp_approval_request");
    assert_eq!(requests.len(), 1);
    assert!(fixture.calls().is_empty(), "nothing runs before approval");
    assert_eq!(items(&first, "mcp_list_tools").len(), 1);

    model.push(Turn::text("found it"));
    let (second, _) = h
        .run(json!({"model": "fake/m", "tools": [tool], "previous_response_id": first["id"],
            "input": [{"type": "mcp_approval_response", "approval_request_id": requests[0]["id"], "approve": true}]}))
        .await;
    assert_eq!(second["status"], "completed", "{second}");
    assert_eq!(
        fixture.calls(),
        [("search".to_owned(), json!({"q": "rust"}))]
    );
    let call = items(&second, "mcp_call");
    assert_eq!(call.len(), 1);
    assert_eq!(call[0]["approval_request_id"], requests[0]["id"]);
    assert!(call[0]["output"].as_str().unwrap().contains("rust"));
    // The same server and tools: the list is reused, not emitted again.
    assert!(items(&second, "mcp_list_tools").is_empty());
}

#[tokio::test]
async fn a_denied_call_never_runs_and_the_model_reads_the_reason() {
    let h = Harness::new();
    let fixture = h.mcp.add(URL, FakeServer::with_tools(&["delete"]));
    let model = h.model("m");
    model.push(Turn::calls(&[("call_1", "docs__delete", "{}")]));
    let tool = server(json!({"require_approval": "always"}));
    let (first, _) = h
        .run(json!({"model": "fake/m", "input": "x", "tools": [tool]}))
        .await;
    let request = items(&first, "mcp_approval_request")[0]["id"].clone();
    model.push(Turn::text("ok, not deleting"));
    let (second, _) = h
        .run(json!({"model": "fake/m", "tools": [tool], "previous_response_id": first["id"],
            "input": [{"type": "mcp_approval_response", "approval_request_id": request, "approve": false, "reason": "too risky"}]}))
        .await;
    assert_eq!(second["status"], "completed");
    assert!(fixture.calls().is_empty());
    let last = model.requests().pop().unwrap();
    assert!(
        last.messages.iter().any(
            |m| matches!(m, ModelMessage::Tool { content, .. } if content.contains("too risky"))
        ),
        "{:?}",
        last.messages
    );

    // A continuation that leaves a pending request undecided is refused in-band.
    let (third, _) = h
        .run(
            json!({"model": "fake/m", "tools": [tool], "previous_response_id": first["id"],
            "input": "what now?"}),
        )
        .await;
    assert_eq!(third["status"], "failed", "{third}");
    assert_eq!(third["error"]["code"], "invalid_request");
}

#[tokio::test]
async fn a_deferred_server_is_searched_and_the_found_tool_is_offered_from_the_next_step() {
    let h = Harness::new();
    let fixture = h.mcp.add(
        URL,
        FakeServer {
            tools: vec![
                crate::common::tool("stock_quote", "Get the latest stock quote for a ticker"),
                crate::common::tool("weather", "Get the weather forecast for a city"),
            ],
            ..FakeServer::default()
        },
    );
    let model = h.model("m");
    model.push(Turn::calls(&[(
        "call_1",
        "tool_search",
        r#"{"query":"stock quote"}"#,
    )]));
    model.push(Turn::calls(&[(
        "call_2",
        "docs__stock_quote",
        r#"{"q":"ACME"}"#,
    )]));
    model.push(Turn::text("ACME is up"));
    let (response, _) = h
        .run(json!({"model": "fake/m", "input": "x", "tools": [server(json!({"defer_loading": true}))]}))
        .await;
    assert_eq!(response["status"], "completed", "{response}");
    let requests = model.requests();
    let names =
        |i: usize| -> Vec<String> { requests[i].tools.iter().map(|t| t.name.clone()).collect() };
    assert_eq!(names(0), ["tool_search"]);
    assert!(names(1).contains(&"docs__stock_quote".to_owned()));
    assert!(!names(1).contains(&"docs__weather".to_owned()));
    let search = items(&response, "tool_search_output");
    assert_eq!(search.len(), 1);
    assert_eq!(search[0]["tools"][0]["name"], "docs");
    assert_eq!(search[0]["tools"][0]["tools"][0]["name"], "stock_quote");
    assert_eq!(fixture.calls().len(), 1);
}
