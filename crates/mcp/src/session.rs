//! One initialized session: `tools/list` (paged), `tools/call`, the tool-list-changed flag and
//! the close.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use engine::mcp::{McpCallResult, McpError, McpServerInfo, McpSession, McpToolInfo};
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, PaginatedRequestParams, Tool,
};
use rmcp::service::{Peer, RoleClient, RunningService};
use serde_json::{Map, Value};

use crate::errors::{Failure, Limits, Redactor, from_service};
use crate::handler::Handler;

/// Pages of `tools/list` followed before the server is judged to be looping.
pub const MAX_TOOL_PAGES: usize = 100;
/// Tools accepted from one server.
pub const MAX_TOOLS: usize = 1000;
/// How long `close` waits for the transport to shut down (the `DELETE` of a Streamable HTTP
/// session included).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(3);

pub(crate) struct Session {
    /// For log lines: the request's label and the URL's host, never the URL's query.
    pub(crate) label: String,
    pub(crate) host: String,
    /// Requests go through the peer, so they do not need the lock on `running`.
    pub(crate) peer: Peer<RoleClient>,
    /// Owns the rmcp service task; taken by `close`.
    pub(crate) running: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    /// Set by the handler on `notifications/tools/list_changed`, reset by `list_tools`.
    pub(crate) changed: Arc<AtomicBool>,
    pub(crate) limits: Limits,
    pub(crate) redactor: Redactor,
    /// Why the transport ended, when it knows (an oversized answer ends both transports).
    pub(crate) failure: Failure,
}

impl Session {
    /// Runs one request under the request timeout and names its failure.
    async fn request<T>(
        &self,
        what: &'static str,
        fut: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, McpError> {
        let timeout = Duration::from_millis(self.limits.request_timeout_ms);
        match tokio::time::timeout(timeout, fut).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => {
                let err = self
                    .redactor
                    .error(from_service(&err, self.limits, self.failure.take()));
                tracing::debug!(label = %self.label, host = %self.host, what, %err, "MCP request failed");
                Err(err)
            }
            Err(_) => {
                tracing::debug!(label = %self.label, host = %self.host, what, "MCP request timed out");
                Err(McpError::Timeout(self.limits.request_timeout_ms))
            }
        }
    }
}

#[async_trait::async_trait]
impl McpSession for Session {
    fn server_info(&self) -> Option<McpServerInfo> {
        let info = self.peer.peer_info()?;
        let server = info.server_info.as_ref();
        Some(McpServerInfo {
            name: server.map(|s| s.name.clone()).unwrap_or_default(),
            version: server.map(|s| s.version.clone()).unwrap_or_default(),
            protocol_version: info.protocol_version.to_string(),
        })
    }

    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError> {
        // Reset first: a change announced while we list is kept for the next look.
        self.changed.store(false, Ordering::SeqCst);
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_TOOL_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let page = self
                .request("tools/list", self.peer.list_tools(Some(params)))
                .await?;
            if tools.len() + page.tools.len() > MAX_TOOLS {
                return Err(McpError::Protocol(format!(
                    "the server lists more than {MAX_TOOLS} tools"
                )));
            }
            tools.extend(page.tools.into_iter().map(tool_info));
            match page.next_cursor.filter(|c| !c.is_empty()) {
                Some(next) => cursor = Some(next),
                None => return Ok(tools),
            }
        }
        Err(McpError::Protocol(format!(
            "the server's tool list has more than {MAX_TOOL_PAGES} pages"
        )))
    }

    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<McpCallResult, McpError> {
        let mut params = CallToolRequestParams::new(name.to_owned());
        params.arguments = Some(arguments);
        let result = self
            .request("tools/call", self.peer.call_tool(params))
            .await?;
        Ok(call_result(result))
    }

    fn tools_changed(&self) -> bool {
        self.changed.load(Ordering::SeqCst)
    }

    async fn close(&self) {
        let Some(mut running) = self.running.lock().await.take() else {
            return;
        };
        // rmcp ends the transport: a Streamable HTTP session is deleted (its own 5 s bound),
        // a legacy SSE stream is dropped. Ours bounds the whole of it.
        let closed =
            tokio::time::timeout(CLOSE_TIMEOUT, running.close_with_timeout(CLOSE_TIMEOUT)).await;
        tracing::debug!(label = %self.label, host = %self.host, clean = matches!(closed, Ok(Ok(Some(_)))), "MCP session closed");
    }
}

/// A tool as the engine sees it. The schema is passed on as the server wrote it.
pub(crate) fn tool_info(tool: Tool) -> McpToolInfo {
    McpToolInfo {
        name: tool.name.into_owned(),
        description: tool.description.map(|d| d.into_owned()),
        input_schema: Value::Object(Arc::unwrap_or_clone(tool.input_schema)).into(),
        read_only: tool.annotations.and_then(|a| a.read_only_hint),
    }
}

/// A call result as text: text blocks as they are, other blocks as compact JSON, one per
/// line; `structuredContent` when there is no content at all.
pub(crate) fn call_result(result: CallToolResult) -> McpCallResult {
    let parts: Vec<String> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            other => serde_json::to_string(other).unwrap_or_default(),
        })
        .collect();
    let output = match (parts.is_empty(), &result.structured_content) {
        (true, Some(structured)) => structured.to_string(),
        _ => parts.join("\n"),
    };
    McpCallResult {
        output,
        is_error: result.is_error.unwrap_or(false),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tool_info_passes_the_schema_through() {
        let schema = json!({
            "type": "object",
            "properties": {"q": {"type": "string", "x-custom": [1, 2]}},
            "required": ["q"],
            "$defs": {"a": {"type": "integer"}}
        });
        let tool: Tool = serde_json::from_value(json!({
            "name": "search",
            "description": "Finds things",
            "inputSchema": schema,
            "annotations": {"readOnlyHint": true}
        }))
        .unwrap();
        let info = tool_info(tool);
        assert_eq!(info.name, "search");
        assert_eq!(info.description.as_deref(), Some("Finds things"));
        assert_eq!(*info.input_schema, schema);
        assert_eq!(info.read_only, Some(true));

        let bare: Tool =
            serde_json::from_value(json!({"name": "t", "inputSchema": {"type": "object"}}))
                .unwrap();
        let info = tool_info(bare);
        assert_eq!((info.description, info.read_only), (None, None));
    }

    #[test]
    fn call_result_joins_text_and_encodes_the_rest() {
        let result: CallToolResult = serde_json::from_value(json!({
            "content": [
                {"type": "text", "text": "one"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "text", "text": "two"}
            ],
            "isError": true
        }))
        .unwrap();
        let out = call_result(result);
        assert!(out.is_error);
        let lines: Vec<&str> = out.output.lines().collect();
        assert_eq!(lines[0], "one");
        assert_eq!(
            serde_json::from_str::<Value>(lines[1]).unwrap(),
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png"})
        );
        assert_eq!(lines[2], "two");
    }

    #[test]
    fn call_result_falls_back_to_structured_content() {
        let result: CallToolResult = serde_json::from_value(json!({
            "content": [],
            "structuredContent": {"answer": 42}
        }))
        .unwrap();
        assert_eq!(
            call_result(result),
            McpCallResult {
                output: r#"{"answer":42}"#.to_owned(),
                is_error: false
            }
        );
        let empty: CallToolResult = serde_json::from_value(json!({"content": []})).unwrap();
        assert_eq!(call_result(empty).output, "");
    }
}
