//! `McpClient` against real MCP servers on loopback: `@modelcontextprotocol/server-everything`
//! and the `edge` kind of `tests/mcp/fixtures.py` (the official Python `mcp` package), over
//! Streamable HTTP and the legacy HTTP+SSE fallback.

#![expect(
    clippy::expect_used,
    reason = "integration tests: a failed step must stop the test loudly"
)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::fixtures::{McpFixture, Transport};
use common::{args, client, client_with, connect, server};
use engine::mcp::{McpConnector, McpError, McpSession};
use serde_json::json;

const TRANSPORTS: [Transport; 2] = [Transport::StreamableHttp, Transport::Sse];

/// The `edge` fixture (see `tests/mcp/fixtures.py`) with more of its options.
async fn edge(transport: Transport, options: &[&str]) -> McpFixture {
    McpFixture::start_with_args("edge", transport, options).await
}

async fn echo(session: &dyn McpSession, message: &str) -> String {
    let result = session
        .call_tool("echo", args(json!({ "message": message })))
        .await
        .expect("echo");
    assert!(!result.is_error, "{result:?}");
    result.output
}

#[tokio::test]
async fn streamable_http_lists_and_calls_server_everything() {
    let peer = McpFixture::everything(Transport::StreamableHttp).await;
    let session = connect(&client(), peer.url.clone()).await;
    let tools = session.list_tools().await.expect("list");
    let echo_tool = tools.iter().find(|t| t.name == "echo").expect("echo tool");
    assert_eq!(echo_tool.input_schema["type"], "object");
    assert!(echo_tool.input_schema["properties"]["message"].is_object());
    assert!(
        echo_tool.read_only.is_some(),
        "server-everything annotates its tools"
    );
    assert!(
        echo(session.as_ref(), "hello streamable")
            .await
            .contains("hello streamable")
    );
    session.close().await;
}

#[tokio::test]
async fn legacy_sse_fallback_with_server_everything() {
    let peer = McpFixture::everything(Transport::Sse).await;
    let session = connect(&client(), peer.url.clone()).await;
    let tools = session.list_tools().await.expect("list");
    assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    assert!(
        echo(session.as_ref(), "hello sse")
            .await
            .contains("hello sse")
    );
    session.close().await;
}

#[tokio::test]
async fn legacy_sse_fallback_with_the_python_server() {
    let peer = edge(Transport::Sse, &[]).await;
    let mut server = server(peer.url.clone());
    server.headers = BTreeMap::from([("X-Agentd-Test".to_owned(), "sse-header-value".to_owned())]);
    let session = client().connect(&server).await.expect("connect");
    let tools = session.list_tools().await.expect("list");
    assert_eq!(tools.len(), 9, "{tools:?}");
    assert_eq!(echo(session.as_ref(), "py sse").await, "Echo: py sse");
    // The extra header goes with the POSTs too.
    let headers = session
        .call_tool("headers", args(json!({})))
        .await
        .expect("headers");
    assert!(headers.output.contains("sse-header-value"), "{headers:?}");
    let requests = peer.requests();
    assert!(requests.len() >= 3, "{requests:?}");
    for request in &requests {
        assert_eq!(
            request["headers"]["x-agentd-test"], "sse-header-value",
            "{request}"
        );
    }
    assert!(!session.tools_changed());
    session
        .call_tool("change_tools", args(json!({})))
        .await
        .expect("change");
    wait_for_tools_changed(session.as_ref()).await;
    session.close().await;
}

#[tokio::test]
async fn python_server_results_changes_and_errors() {
    let peer = edge(Transport::StreamableHttp, &[]).await;
    let session = connect(&client(), peer.url.clone()).await;
    let tools = session.list_tools().await.expect("list");
    let echo_tool = tools.iter().find(|t| t.name == "echo").expect("echo");
    assert_eq!(
        *echo_tool.input_schema,
        json!({
            "type": "object",
            "properties": {"message": {"type": "string", "description": "What to echo"}},
            "required": ["message"]
        })
    );
    assert_eq!(echo_tool.read_only, Some(true));
    assert_eq!(
        echo_tool.description.as_deref(),
        Some("Echoes the message back.")
    );
    let headers_tool = tools.iter().find(|t| t.name == "headers").expect("headers");
    assert_eq!(headers_tool.read_only, None);

    assert_eq!(echo(session.as_ref(), "py").await, "Echo: py");

    // A tool that ran and failed is a result, not an error.
    let failed = session
        .call_tool("fail", args(json!({})))
        .await
        .expect("fail");
    assert!(failed.is_error);
    assert_eq!(failed.output, "the tool failed on purpose");

    let structured = session
        .call_tool("structured", args(json!({})))
        .await
        .expect("structured");
    assert_eq!(structured.output, r#"{"answer":42}"#);

    let mixed = session
        .call_tool("mixed", args(json!({})))
        .await
        .expect("mixed");
    let mut lines = mixed.output.lines();
    assert_eq!(lines.next(), Some("caption"));
    let image: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(
        image,
        json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
    );

    // An unknown tool: the server's answer (an error result or a JSON-RPC error), never a hang.
    match session.call_tool("no_such_tool", args(json!({}))).await {
        Ok(result) => assert!(result.is_error, "{result:?}"),
        Err(err) => assert!(matches!(err, McpError::Protocol(_)), "{err:?}"),
    }

    // notifications/tools/list_changed sets the flag; list_tools resets it.
    assert!(!session.tools_changed());
    session
        .call_tool("change_tools", args(json!({})))
        .await
        .expect("change");
    // The notification may arrive after the call's result (Streamable HTTP sends it on the
    // standalone GET stream): wait for it, bounded.
    wait_for_tools_changed(session.as_ref()).await;
    session.list_tools().await.expect("list again");
    assert!(!session.tools_changed());

    session.close().await;
    // A closed session fails fast.
    let after = tokio::time::timeout(Duration::from_secs(5), echo_err(session.as_ref())).await;
    assert!(after.is_ok(), "a call on a closed session hung");
}

/// Waits (at most 10 s) until the session has seen `notifications/tools/list_changed`.
async fn wait_for_tools_changed(session: &dyn McpSession) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !session.tools_changed() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "notifications/tools/list_changed never arrived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn echo_err(session: &dyn McpSession) -> McpError {
    session
        .call_tool("echo", args(json!({"message": "x"})))
        .await
        .expect_err("closed session answered")
}

#[tokio::test]
async fn custom_headers_reach_the_server() {
    let peer = edge(Transport::StreamableHttp, &[]).await;
    let mut server = server(peer.url.clone());
    server.headers = BTreeMap::from([
        ("X-Agentd-Test".to_owned(), "header-value-42".to_owned()),
        ("X-Second".to_owned(), "two".to_owned()),
    ]);
    let session = client().connect(&server).await.expect("connect");
    let result = session
        .call_tool("headers", args(json!({})))
        .await
        .expect("headers");
    let seen: serde_json::Value = serde_json::from_str(&result.output).unwrap();
    assert_eq!(seen["x-agentd-test"], "header-value-42", "{seen}");
    assert_eq!(seen["x-second"], "two", "{seen}");
    session.close().await;
}

#[tokio::test]
async fn bearer_token_is_sent_and_a_wrong_one_is_a_401_without_the_token() {
    for transport in TRANSPORTS {
        let token = "tok-correct-5f2a9c";
        let peer = edge(transport, &["--token", token]).await;
        let mut server = server(peer.url.clone());

        server.authorization = Some(token.to_owned());
        let session = client()
            .connect(&server)
            .await
            .expect("connect with the token");
        assert_eq!(
            echo(session.as_ref(), "authorized").await,
            "Echo: authorized"
        );
        session.close().await;

        let wrong = "tok-wrong-77c1d3";
        server.authorization = Some(wrong.to_owned());
        let err = client()
            .connect(&server)
            .await
            .err()
            .expect("wrong token accepted");
        assert!(
            matches!(err, McpError::Http { status: 401, .. }),
            "{transport:?}: {err:?}"
        );
        let shown = format!("{err} {err:?}");
        assert!(
            !shown.contains(wrong),
            "{transport:?}: the token leaked: {shown}"
        );

        server.authorization = None;
        let err = client()
            .connect(&server)
            .await
            .err()
            .expect("no token accepted");
        assert!(
            matches!(err, McpError::Http { status: 401, .. }),
            "{transport:?}: {err:?}"
        );
    }
}

#[tokio::test]
async fn strict_policy_refuses_loopback_without_connecting() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let strict = mcp::McpClient::new(mcp::McpConfig::new(netguard::Policy::strict())).unwrap();
    for url in [
        format!("http://127.0.0.1:{port}/mcp"),
        format!("http://localhost:{port}/mcp"),
        format!("http://2130706433:{port}/mcp"),
    ] {
        let err = strict
            .connect(&server(url.clone()))
            .await
            .err()
            .expect("connected");
        assert!(matches!(err, McpError::Blocked(_)), "{url}: {err:?}");
    }
    let accepted = tokio::time::timeout(Duration::from_millis(300), listener.accept()).await;
    assert!(accepted.is_err(), "a connection was attempted");
}

#[tokio::test]
async fn tools_list_follows_cursors_and_caps_pages_and_tools() {
    // 9 tools + 25 generated, 4 per page: 9 pages.
    let peer = edge(
        Transport::StreamableHttp,
        &["--extra-tools", "25", "--page-size", "4"],
    )
    .await;
    let session = connect(&client(), peer.url.clone()).await;
    let tools = session.list_tools().await.expect("list");
    assert_eq!(tools.len(), 34);
    assert_eq!(tools[0].name, "echo");
    assert_eq!(tools[33].name, "tool_0024");
    session.close().await;

    // 159 pages of one tool: past the page cap.
    let peer = edge(
        Transport::StreamableHttp,
        &["--extra-tools", "150", "--page-size", "1"],
    )
    .await;
    let session = connect(&client(), peer.url.clone()).await;
    let err = session.list_tools().await.expect_err("page cap");
    assert!(
        matches!(&err, McpError::Protocol(m) if m.contains("pages")),
        "{err:?}"
    );
    session.close().await;

    // 1209 tools in pages of 200: past the tool cap.
    let peer = edge(
        Transport::StreamableHttp,
        &["--extra-tools", "1200", "--page-size", "200"],
    )
    .await;
    let session = connect(&client(), peer.url.clone()).await;
    let err = session.list_tools().await.expect_err("tool cap");
    assert!(
        matches!(&err, McpError::Protocol(m) if m.contains("tools")),
        "{err:?}"
    );
    session.close().await;
}

#[tokio::test]
async fn slow_tool_times_out_and_the_session_survives() {
    for transport in TRANSPORTS {
        let peer = edge(transport, &[]).await;
        let client = client_with(|c| c.request_timeout = Duration::from_millis(1500));
        let session = connect(&client, peer.url.clone()).await;
        let err = session
            .call_tool("slow", args(json!({"seconds": 10})))
            .await
            .expect_err("slow tool answered");
        assert_eq!(err, McpError::Timeout(1500), "{transport:?}");
        assert_eq!(
            echo(session.as_ref(), "still here").await,
            "Echo: still here",
            "{transport:?}"
        );
        session.close().await;
    }
}

#[tokio::test]
async fn oversized_result_is_too_large() {
    for transport in TRANSPORTS {
        let peer = edge(transport, &[]).await;
        let client = client_with(|c| c.max_response_bytes = 64 * 1024);
        let session = connect(&client, peer.url.clone()).await;
        let small = session
            .call_tool("big", args(json!({"bytes": 1000})))
            .await
            .expect("small");
        assert_eq!(small.output.len(), 1000);
        let err = session
            .call_tool("big", args(json!({"bytes": 200_000})))
            .await
            .expect_err("oversized answer accepted");
        assert_eq!(err, McpError::TooLarge(64 * 1024), "{transport:?}");
        session.close().await;
    }
}

#[tokio::test]
async fn a_server_that_is_down_is_unreachable() {
    let port = common::fixtures::free_port();
    let err = client()
        .connect(&server(format!("http://127.0.0.1:{port}/mcp")))
        .await
        .err()
        .expect("connected to nothing");
    assert!(
        matches!(&err, McpError::Unreachable(m) if m.contains("refused")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_url_that_is_no_mcp_server_is_an_http_error() {
    // The Python server's streamable app has no /nothing route: POST and GET both 404.
    let peer = edge(Transport::StreamableHttp, &[]).await;
    let err = client()
        .connect(&server(format!("http://127.0.0.1:{}/nothing", peer.port)))
        .await
        .err()
        .expect("connected to a 404");
    assert!(matches!(err, McpError::Http { status: 404, .. }), "{err:?}");
}

#[tokio::test]
async fn secrets_echoed_by_the_server_are_removed_from_errors() {
    for transport in TRANSPORTS {
        let token = "tok-echoed-9b1e44";
        let peer = edge(transport, &["--token", token]).await;
        let mut server = server(peer.url.clone());
        server.authorization = Some(token.to_owned());
        server.headers = BTreeMap::from([("X-Api-Key".to_owned(), "key-echoed-31f7".to_owned())]);
        let session = client().connect(&server).await.expect("connect");
        let err = session
            .call_tool("leak", args(json!({})))
            .await
            .expect_err("leak answered");
        let shown = format!("{err} {err:?}");
        assert!(
            matches!(err, McpError::Protocol(_)),
            "{transport:?}: {err:?}"
        );
        assert!(
            shown.contains("rejected credentials"),
            "{transport:?}: {shown}"
        );
        assert!(
            !shown.contains(token) && !shown.contains("key-echoed-31f7"),
            "{transport:?}: a secret leaked: {shown}"
        );
        session.close().await;
    }
}
