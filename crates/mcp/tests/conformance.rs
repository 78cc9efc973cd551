//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.16, run on the
//! Node 22 that `tests/mcp/setup.sh` installs) against `mcp-conformance-client`, for the client
//! scenarios that apply to a tools-only client over Streamable HTTP: `initialize`, `tools_call`
//! and `sse-retry` (SEP-1699: resume a closed SSE answer with a GET carrying `Last-Event-ID`,
//! after the server's `retry` delay).
//!
//! Not run: `elicitation-sep1034-client-defaults` (agentd advertises no elicitation
//! capability) and the `auth/*` scenarios (agentd sends the caller's bearer token as given;
//! it runs no OAuth flow).

#![expect(
    clippy::expect_used,
    reason = "integration tests: a failed step must stop the test loudly"
)]

mod common;

use std::process::Command;

use common::fixtures;

fn run_scenario(scenario: &str) {
    fixtures::install();
    let suite = fixtures::node_modules().join("@modelcontextprotocol/conformance/dist/index.js");
    let output = Command::new(fixtures::node())
        .arg(suite)
        .args([
            "client",
            "--command",
            env!("CARGO_BIN_EXE_mcp-conformance-client"),
        ])
        .args(["--scenario", scenario, "--timeout", "60000"])
        .env("NO_COLOR", "1")
        .output()
        .expect("run the conformance suite");
    let stdout = String::from_utf8_lossy(&output.stdout);
    // The suite reports on stderr (0.1.16); look in both.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success()
            && (stdout.contains("OVERALL: PASSED") || stderr.contains("OVERALL: PASSED")),
        "scenario {scenario} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
}

#[test]
fn conformance_initialize() {
    run_scenario("initialize");
}

#[test]
fn conformance_tools_call() {
    run_scenario("tools_call");
}

#[test]
fn conformance_sse_retry() {
    run_scenario("sse-retry");
}
