//! No secret in any log line, at any level (issue 13): the MCP library logged a server URL with
//! its query string at error level, and tool arguments and results at trace level. A run
//! against real MCP servers (both transports) with `?api_key=…` in the URL, a bearer token, a
//! secret header and a secret argument (echoed back in the result), plus a discovery failure,
//! all under `RUST_LOG=trace`; the real binary's whole log is searched for the secrets.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use testkit::mcp::{McpFixture, Transport};
use testkit::{FakeProvider, Gate, Reply};

const MODEL: &str = "openai/gpt-test";
const QUERY_SECRET: &str = "query-secret-5f1c2a";
const TOKEN_SECRET: &str = "token-secret-8d3b7e";
const HEADER_SECRET: &str = "header-secret-2e9a41";
const ARGUMENT_SECRET: &str = "argument-secret-7c4d90";

fn mcp_tool(label: &str, url: &str) -> Value {
    json!({"type": "mcp", "server_label": label,
           "server_url": format!("{url}?api_key={QUERY_SECRET}"),
           "authorization": TOKEN_SECRET,
           "headers": {"X-Api-Key": HEADER_SECRET}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_appear_in_no_log_line_at_trace_level() {
    let fake = FakeProvider::start().await;
    let streamable =
        McpFixture::start_with_token("basic", Transport::StreamableHttp, TOKEN_SECRET).await;
    let sse = McpFixture::start_with_token("basic", Transport::Sse, TOKEN_SECRET).await;
    let dir = TempDir(std::env::temp_dir().join(format!("agentd-logs-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).unwrap();
    let dir = &dir.0;
    let log_path = dir.join("agentd.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.join("data"))
        .env("OPENAI_BASE_URL", fake.base_url())
        .env("OPENAI_API_KEY", testkit::FAKE_PROVIDER_KEY)
        .env("AGENTD_ALLOW_PRIVATE_NETWORKS", "127.0.0.0/8")
        .env("RUST_LOG", "trace")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    let client = testkit::http_client();

    let arguments = json!({"text": ARGUMENT_SECRET}).to_string();
    fake.push(Reply::tool_calls(vec![
        ("call_1", "a__echo", arguments.as_str()),
        ("call_2", "b__echo", arguments.as_str()),
    ]));
    fake.push(Reply::text("done"));
    let response: Value = client
        .post(format!("{base}/v1/responses"))
        .json(&json!({"model": MODEL, "input": "echo", "tools": [
            mcp_tool("a", &streamable.url), mcp_tool("b", &sse.url)]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(response["status"], "completed", "{response}");
    let outputs: Vec<&Value> = response["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "mcp_call")
        .collect();
    assert_eq!(outputs.len(), 2, "{response}");
    for call in outputs {
        assert!(
            call["output"].as_str().unwrap().contains(ARGUMENT_SECRET),
            "the secret went through the MCP server and back: {call}"
        );
    }

    // A discovery failure: the errors of the MCP library carry the URL.
    let missing = streamable.url.replace("/mcp", "/missing");
    let failed = client
        .post(format!("{base}/v1/responses"))
        .json(&json!({"model": MODEL, "input": "x", "tools": [mcp_tool("c", &missing)]}))
        .send()
        .await
        .unwrap();
    assert_eq!(failed.status().as_u16(), 424);

    // A server that goes away in the middle of a run: the MCP library's errors (a call that
    // cannot be sent, a session that cannot be closed) name the URL.
    let doomed =
        McpFixture::start_with_token("basic", Transport::StreamableHttp, TOKEN_SECRET).await;
    let gate = Gate::new();
    fake.push(Reply::tool_calls(vec![("call_3", "d__echo", arguments.as_str())]).wait_for(&gate));
    fake.push(Reply::text("the server went away"));
    let run = tokio::spawn({
        let client = client.clone();
        let body = json!({"model": MODEL, "input": "x", "tools": [mcp_tool("d", &doomed.url)]});
        let url = format!("{base}/v1/responses");
        async move {
            client
                .post(url)
                .json(&body)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    });
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while fake.requests().len() < 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the third run never asked the model"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    drop(doomed);
    gate.open();
    let ended = run.await.unwrap();
    let call = ended["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "mcp_call")
        .unwrap_or_else(|| unreachable!("no mcp_call: {ended}"));
    assert!(!call["error"].is_null(), "the call failed: {call}");

    let _ = child.kill();
    let _ = child.wait();
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        log.lines().count() > 100,
        "trace logging was on: {} lines",
        log.lines().count()
    );
    // stderr is a file here, not a terminal: plain text, no colour codes (which would also
    // split a value from its name in every line the scan below reads).
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a log file: {}",
        log.lines().next().unwrap_or_default()
    );
    for secret in [
        QUERY_SECRET,
        TOKEN_SECRET,
        HEADER_SECRET,
        ARGUMENT_SECRET,
        testkit::FAKE_PROVIDER_KEY,
    ] {
        let leaks: Vec<&str> = log
            .lines()
            .filter(|line| line.contains(secret))
            .take(5)
            .collect();
        assert!(
            leaks.is_empty(),
            "{secret} in the log:\n{}",
            leaks.join("\n")
        );
    }
}

/// Removed when the test ends, passed or not.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
