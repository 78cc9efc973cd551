//! `mcp-conformance-client`: the client under test for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, `conformance client --command <this binary>`).
//!
//! The suite starts a scenario's server, then runs this binary with the server URL as the
//! last argument and the scenario in `MCP_CONFORMANCE_SCENARIO`. The binary connects through
//! [`mcp::McpClient`] with a policy that allows loopback only (`127.0.0.0/8`, `::1/128`),
//! then:
//! - `initialize`: connects (Streamable HTTP `initialize`) and closes;
//! - any other scenario (`tools_call`, `sse-retry`): lists the tools and calls each one with
//!   arguments made up from its input schema, then closes.
//!
//! It reports on stderr and exits non-zero when a step fails.

use std::collections::BTreeMap;
use std::process::ExitCode;

use engine::mcp::{McpConnector, McpServer, McpToolInfo};
use serde_json::{Map, Value, json};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: mcp-conformance-client <server-url>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&scenario, &url).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mcp-conformance-client: scenario {scenario:?}: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn run(scenario: &str, url: &str) -> Result<(), String> {
    let policy = netguard::Policy::with_allowed(&["127.0.0.0/8".to_owned(), "::1/128".to_owned()])
        .map_err(|e| e.to_string())?;
    let client = mcp::McpClient::new(mcp::McpConfig::new(policy)).map_err(|e| e.to_string())?;
    let server = McpServer {
        label: "conformance".to_owned(),
        url: url.to_owned(),
        authorization: None,
        headers: BTreeMap::new(),
    };
    let session = client.connect(&server).await.map_err(|e| e.to_string())?;
    eprintln!("mcp-conformance-client: connected ({scenario})");
    let outcome = match scenario {
        "initialize" => Ok(()),
        _ => call_every_tool(session.as_ref()).await,
    };
    session.close().await;
    outcome
}

async fn call_every_tool(session: &dyn engine::mcp::McpSession) -> Result<(), String> {
    let tools = session.list_tools().await.map_err(|e| e.to_string())?;
    eprintln!("mcp-conformance-client: {} tool(s)", tools.len());
    for tool in &tools {
        let result = session
            .call_tool(&tool.name, arguments_for(tool))
            .await
            .map_err(|e| format!("{}: {e}", tool.name))?;
        eprintln!(
            "mcp-conformance-client: {} -> {}{}",
            tool.name,
            if result.is_error { "error: " } else { "" },
            result.output
        );
    }
    Ok(())
}

/// A value for every property of the tool's input schema, by its type.
fn arguments_for(tool: &McpToolInfo) -> Map<String, Value> {
    let Some(properties) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return Map::new();
    };
    properties
        .iter()
        .enumerate()
        .map(|(i, (name, schema))| {
            let value = match schema.get("type").and_then(Value::as_str) {
                Some("number" | "integer") => json!(i + 2),
                Some("boolean") => json!(true),
                Some("array") => json!([]),
                Some("object") => json!({}),
                _ => json!("test"),
            };
            (name.clone(), value)
        })
        .collect()
}
