//! The MCP port: what the engine asks of a remote MCP server.
//!
//! The `mcp` crate implements [`McpConnector`] over Streamable HTTP (falling back to the legacy
//! HTTP+SSE transport) behind the network guard. The engine opens one [`McpSession`] per server
//! per run, lists its tools when the run starts and calls them during the run. Every method is
//! bounded by the adapter's own timeout; the engine additionally drops a call when the run is
//! cancelled.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use protocol::written::Parameters;
use serde_json::{Map, Value};

use crate::oauth::{OAuthClientRequest, OAuthCredentials, OAuthStarted};

/// Where and how to reach one MCP server. `authorization` and `headers` are secrets: the
/// `Debug` form hides them, and no error message may contain them.
#[derive(Clone, PartialEq, Eq)]
pub struct McpServer {
    /// The request's `server_label` (for messages only).
    pub label: String,
    pub url: String,
    /// The raw access token, sent as `Authorization: Bearer <token>`.
    pub authorization: Option<String>,
    /// Extra headers sent on every request to the server.
    pub headers: BTreeMap<String, String>,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("label", &self.label)
            .field("url", &self.url)
            .field(
                "authorization",
                &self.authorization.as_ref().map(|_| "<redacted>"),
            )
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// One tool a server offers.
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolInfo {
    pub name: String,
    pub description: Option<String>,
    /// The server's `inputSchema`, unmodified; shared with every turn's tool spec, and
    /// written as the JSON it keeps.
    pub input_schema: Parameters,
    /// The server's `annotations.readOnlyHint`.
    pub read_only: Option<bool>,
}

/// The result of one `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub struct McpCallResult {
    /// The result content as text: text blocks joined by newlines; other blocks (images,
    /// resources) and `structuredContent` without text as compact JSON.
    pub output: String,
    /// The server's `isError`: the tool ran and reported a failure.
    pub is_error: bool,
}

/// Why an MCP operation failed. Messages name the server by URL host, never a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The network guard refused the URL or a redirect (private address, bad scheme…).
    #[error("the MCP server URL is not allowed: {0}")]
    Blocked(String),
    /// The server could not be reached or the connection broke.
    #[error("the MCP server could not be reached: {0}")]
    Unreachable(String),
    /// The server answered with an HTTP error status (401/403 for a missing or bad token).
    #[error("the MCP server answered HTTP {status}: {message}")]
    Http { status: u16, message: String },
    /// The server answered something that is not usable MCP, or a JSON-RPC error.
    #[error("the MCP server sent an unusable answer: {0}")]
    Protocol(String),
    /// The answer exceeded the size cap.
    #[error("the MCP server's answer is larger than {0} bytes")]
    TooLarge(usize),
    /// No answer within the configured time.
    #[error("the MCP server did not answer within {0} ms")]
    Timeout(u64),
}

/// Which transport a session uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum McpTransport {
    /// Streamable HTTP, falling back to the legacy HTTP+SSE transport.
    #[default]
    Auto,
    /// Streamable HTTP only.
    StreamableHttp,
    /// The legacy HTTP+SSE transport only.
    Sse,
}

/// What the server said about itself in `initialize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerInfo {
    pub name: String,
    pub version: String,
    pub protocol_version: String,
}

/// Opens sessions to MCP servers (implemented by the `mcp` crate).
#[async_trait::async_trait]
pub trait McpConnector: Send + Sync {
    /// Connects and initializes a session (Streamable HTTP first, then legacy SSE).
    async fn connect(&self, server: &McpServer) -> Result<Box<dyn McpSession>, McpError>;

    /// Connects over the given transport (a saved connector may pin one). Adapters that
    /// know one way only connect as [`McpConnector::connect`] does.
    async fn connect_over(
        &self,
        server: &McpServer,
        transport: McpTransport,
    ) -> Result<Box<dyn McpSession>, McpError> {
        let _ = transport;
        self.connect(server).await
    }

    /// Starts an admin's OAuth authorization of an MCP server (probe, discovery, client
    /// registration, the authorization request). The error is a message without secrets.
    async fn oauth_start(
        &self,
        server_url: &str,
        client: &OAuthClientRequest,
    ) -> Result<OAuthStarted, String> {
        let _ = (server_url, client);
        Err("OAuth is not available in this process".to_owned())
    }

    /// Connects with the bearer tokens of a stored OAuth grant: refreshed shortly before they
    /// expire and once when the server answers 401, each refresh handed to the sink.
    async fn connect_oauth(
        &self,
        server: &McpServer,
        transport: McpTransport,
        credentials: Arc<OAuthCredentials>,
    ) -> Result<Box<dyn McpSession>, McpError> {
        let _ = (transport, credentials);
        Err(McpError::Unreachable(format!(
            "OAuth is not available in this process (server \"{}\")",
            server.label
        )))
    }
}

/// One initialized session with one server.
#[async_trait::async_trait]
pub trait McpSession: Send + Sync {
    /// Every tool of the server (`tools/list`, following `nextCursor`).
    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError>;
    /// Calls one tool. A tool that ran and failed is `Ok` with `is_error: true`.
    async fn call_tool(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<McpCallResult, McpError>;
    /// Whether the server announced `notifications/tools/list_changed` since the last
    /// `list_tools` of this session.
    fn tools_changed(&self) -> bool {
        false
    }
    /// Ends the session (best effort: `DELETE` of a Streamable HTTP session).
    async fn close(&self) {}
    /// The server's name, version and protocol version from `initialize`, when known.
    fn server_info(&self) -> Option<McpServerInfo> {
        None
    }
}

/// A connector for processes that run no agent loop (e.g. `agentd keys create`): every
/// connection fails.
pub struct Unavailable;

#[async_trait::async_trait]
impl McpConnector for Unavailable {
    async fn connect(&self, server: &McpServer) -> Result<Box<dyn McpSession>, McpError> {
        Err(McpError::Unreachable(format!(
            "MCP is not available in this process (server \"{}\")",
            server.label
        )))
    }
}
