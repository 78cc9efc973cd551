//! The harness of this crate's integration tests: the repository's MCP peers and a client that
//! may reach them on loopback.
//!
//! The peers are those every crate tests against: `tests/mcp/fixtures.py` (kind `edge` has the
//! result shapes and errors these tests need), `@modelcontextprotocol/server-everything` and the
//! conformance suite, installed by `tests/mcp/setup.sh` and run by `testkit::mcp`. This crate
//! cannot depend on `agentd-testkit` (which depends on it through `agentd-server`), so that
//! module's source is compiled in here as [`fixtures`].

#![allow(
    dead_code,
    reason = "each test binary uses a different part of the harness"
)]
#![expect(
    clippy::expect_used,
    clippy::panic,
    reason = "test harness: a failed step must stop the test loudly"
)]

use std::collections::BTreeMap;

use engine::mcp::{McpConnector, McpServer, McpSession};

#[expect(
    clippy::expect_used,
    reason = "test utility: a fixture that cannot start fails the test loudly"
)]
#[path = "../../../testkit/src/mcp.rs"]
pub mod fixtures;

/// The policy of the tests: loopback allowed, like `AGENTD_ALLOW_PRIVATE_NETWORKS=127.0.0.0/8`.
pub fn loopback_policy() -> netguard::Policy {
    netguard::Policy::with_allowed(&["127.0.0.0/8".to_owned()]).expect("policy")
}

pub fn client() -> mcp::McpClient {
    client_with(|_| {})
}

pub fn client_with(edit: impl FnOnce(&mut mcp::McpConfig)) -> mcp::McpClient {
    let mut config = mcp::McpConfig::new(loopback_policy());
    edit(&mut config);
    mcp::McpClient::new(config).expect("client")
}

pub fn server(url: String) -> McpServer {
    McpServer {
        label: "test".to_owned(),
        url,
        authorization: None,
        headers: BTreeMap::new(),
    }
}

pub async fn connect(client: &mcp::McpClient, url: String) -> Box<dyn McpSession> {
    client
        .connect(&server(url))
        .await
        .unwrap_or_else(|e| panic!("connect failed: {e}"))
}

pub fn args(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    match value {
        serde_json::Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}
