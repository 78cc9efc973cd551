//! The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.16, run on the
//! Node 22 that `tests/mcp/setup.sh` installs) against `mcp-conformance-client`, for the client
//! scenarios that apply to a tools-only client over Streamable HTTP: `initialize`, `tools_call`
//! and `sse-retry` (SEP-1699: resume a closed SSE answer with a GET carrying `Last-Event-ID`,
//! after the server's `retry` delay), and every `auth/*` scenario of the authorization code
//! flow with PKCE (`mcp::oauth`; the binary plays the admin's browser):
//! - discovery: `metadata-default`, `metadata-var1`..`var3` (protected resource metadata
//!   from the challenge, path-aware then root; RFC 8414 and OpenID metadata with path
//!   insertion and appending), and the 2025-03-26 servers without protected resource
//!   metadata (`2025-03-26-oauth-metadata-backcompat`, `2025-03-26-oauth-endpoint-fallback`);
//! - clients: `basic-cimd` (Client ID Metadata Document), `pre-registration`, dynamic
//!   registration in all the others; `token-endpoint-auth-basic`/`-post`/`-none`;
//! - scopes: `scope-from-www-authenticate`, `scope-from-scopes-supported`,
//!   `scope-omitted-when-undefined`, `scope-step-up` (403 `insufficient_scope`),
//!   `scope-retry-limit`;
//! - drafts: `resource-mismatch` (protected resource metadata for another resource is
//!   refused), `offline-access-scope`, `offline-access-not-supported` (SEP-2207).
//!
//! Not run:
//! - `elicitation-sep1034-client-defaults`: agentd advertises no elicitation capability;
//! - `auth/client-credentials-jwt`, `auth/client-credentials-basic`: the client credentials
//!   grant (an MCP authorization extension for machine clients), not the authorization code
//!   flow an admin runs for a connector;
//! - `auth/cross-app-access-complete-flow`: the enterprise-managed authorization extension
//!   (token exchange with an identity provider's ID token), likewise another grant.

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

#[test]
fn conformance_auth_metadata_default() {
    run_scenario("auth/metadata-default");
}

#[test]
fn conformance_auth_metadata_var1() {
    run_scenario("auth/metadata-var1");
}

#[test]
fn conformance_auth_metadata_var2() {
    run_scenario("auth/metadata-var2");
}

#[test]
fn conformance_auth_metadata_var3() {
    run_scenario("auth/metadata-var3");
}

#[test]
fn conformance_auth_basic_cimd() {
    run_scenario("auth/basic-cimd");
}

#[test]
fn conformance_auth_scope_from_www_authenticate() {
    run_scenario("auth/scope-from-www-authenticate");
}

#[test]
fn conformance_auth_scope_from_scopes_supported() {
    run_scenario("auth/scope-from-scopes-supported");
}

#[test]
fn conformance_auth_scope_omitted_when_undefined() {
    run_scenario("auth/scope-omitted-when-undefined");
}

#[test]
fn conformance_auth_scope_step_up() {
    run_scenario("auth/scope-step-up");
}

#[test]
fn conformance_auth_scope_retry_limit() {
    run_scenario("auth/scope-retry-limit");
}

#[test]
fn conformance_auth_token_endpoint_auth_basic() {
    run_scenario("auth/token-endpoint-auth-basic");
}

#[test]
fn conformance_auth_token_endpoint_auth_post() {
    run_scenario("auth/token-endpoint-auth-post");
}

#[test]
fn conformance_auth_token_endpoint_auth_none() {
    run_scenario("auth/token-endpoint-auth-none");
}

#[test]
fn conformance_auth_pre_registration() {
    run_scenario("auth/pre-registration");
}

#[test]
fn conformance_auth_2025_03_26_oauth_metadata_backcompat() {
    run_scenario("auth/2025-03-26-oauth-metadata-backcompat");
}

#[test]
fn conformance_auth_2025_03_26_oauth_endpoint_fallback() {
    run_scenario("auth/2025-03-26-oauth-endpoint-fallback");
}

#[test]
fn conformance_auth_resource_mismatch() {
    run_scenario("auth/resource-mismatch");
}

#[test]
fn conformance_auth_offline_access_scope() {
    run_scenario("auth/offline-access-scope");
}

#[test]
fn conformance_auth_offline_access_not_supported() {
    run_scenario("auth/offline-access-not-supported");
}
