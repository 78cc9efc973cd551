//! Testing a connector: `initialize` and `tools/list` through the MCP port (which puts every
//! URL through the network guard), reporting the server's name, version and protocol version,
//! the tools with `read_only`, the latency and a clear error. A saved connector keeps the
//! outcome (status and last check); a draft is tested without being stored.

use std::sync::Arc;
use std::time::Duration;

use protocol::admin::{
    ConnectorCreate, ConnectorTestResult, ConnectorToolInfo, ConnectorToolList, ServerInfo,
};
use secrecy::ExposeSecret as _;
use serde_json::json;

use super::oauth_grant as oauth;
use super::{Caller, credentials, store};
use crate::admin_store::ConnectorRecord;
use crate::connector_tools::transport_of;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::mcp::{McpError, McpServer, McpToolInfo, McpTransport};
use crate::oauth::OAuthCredentials;

/// How long a test waits when the connector sets no timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

fn timeout_of(record: &ConnectorRecord) -> Duration {
    record
        .timeout_ms
        .and_then(|ms| u64::try_from(ms).ok())
        .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
}

impl Engine {
    /// Connects and lists: the tools and the server's self-description, or the error.
    async fn probe(
        &self,
        server: &McpServer,
        transport: McpTransport,
        timeout: Duration,
        oauth: Option<Arc<OAuthCredentials>>,
    ) -> (
        Result<(Vec<McpToolInfo>, Option<ServerInfo>), McpError>,
        u64,
    ) {
        let started = tokio::time::Instant::now();
        let work = async {
            let session = match oauth {
                Some(oauth) => {
                    self.core
                        .mcp
                        .connect_oauth(server, transport, oauth)
                        .await?
                }
                None => self.core.mcp.connect_over(server, transport).await?,
            };
            let info = session.server_info().map(|i| ServerInfo {
                name: i.name,
                version: i.version,
                protocol_version: i.protocol_version,
            });
            let tools = session.list_tools().await;
            session.close().await;
            Ok((tools?, info))
        };
        let result = match tokio::time::timeout(timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(McpError::Timeout(
                u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            )),
        };
        let latency = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        (result, latency)
    }

    /// The server of a saved connector, with its credentials opened.
    pub(crate) fn endpoint_of(&self, record: &ConnectorRecord) -> Result<McpServer, EngineError> {
        let opened = credentials::open_all(&self.core, record)?;
        Ok(McpServer {
            label: record.server_label.clone(),
            url: record.server_url.clone(),
            authorization: opened
                .authorization
                .as_ref()
                .map(|t| t.expose_secret().to_owned()),
            headers: opened
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.expose_secret().to_owned()))
                .collect(),
        })
    }

    /// A saved connector probed with its credentials: an OAuth connector with its grant (one
    /// not connected yet fails without a request).
    async fn probe_saved(
        &self,
        record: &ConnectorRecord,
    ) -> Result<(Result<(Vec<McpToolInfo>, Option<ServerInfo>), String>, u64), EngineError> {
        let server = self.endpoint_of(record)?;
        let oauth = if record.auth_kind == "oauth" {
            match oauth::credentials_for(&self.core, record).await? {
                Some(oauth) => Some(oauth),
                None => return Ok((Err(oauth::not_connected(&record.id)), 0)),
            }
        } else {
            None
        };
        let (result, latency) = self
            .probe(
                &server,
                transport_of(&record.transport),
                timeout_of(record),
                oauth,
            )
            .await;
        Ok((result.map_err(|e| e.to_string()), latency))
    }

    fn outcome<E: std::fmt::Display>(
        result: Result<(Vec<McpToolInfo>, Option<ServerInfo>), E>,
        latency_ms: u64,
    ) -> ConnectorTestResult {
        match result {
            Ok((tools, server_info)) => ConnectorTestResult {
                ok: true,
                server_info,
                tools: Some(
                    tools
                        .into_iter()
                        .map(|t| ConnectorToolInfo {
                            name: t.name,
                            description: t.description,
                            read_only: t.read_only.unwrap_or(false),
                        })
                        .collect(),
                ),
                latency_ms,
                error: None,
            },
            Err(err) => ConnectorTestResult {
                ok: false,
                server_info: None,
                tools: None,
                latency_ms,
                error: Some(err.to_string()),
            },
        }
    }

    /// Tests a saved connector and keeps the outcome as its status.
    pub async fn test_connector(
        &self,
        caller: &Caller,
        project_id: &str,
        id: &str,
    ) -> Result<ConnectorTestResult, EngineError> {
        caller.require_admin()?;
        let record = self.connector_record(project_id, id).await?;
        let (result, latency) = self.probe_saved(&record).await?;
        let outcome = Self::outcome(result, latency);
        let status = if outcome.ok { "ok" } else { "error" };
        store(&self.core)?
            .set_connector_status(
                project_id,
                id,
                status,
                self.core.clock.now_secs(),
                outcome.error.as_deref(),
            )
            .await?;
        self.audit(
            caller,
            project_id,
            id,
            "tested",
            json!({"ok": outcome.ok, "latency_ms": outcome.latency_ms}),
        )
        .await?;
        Ok(outcome)
    }

    /// Tests an unsaved draft (the create body): nothing is stored.
    pub async fn test_connector_draft(
        &self,
        caller: &Caller,
        body: ConnectorCreate,
    ) -> Result<ConnectorTestResult, EngineError> {
        caller.require_admin()?;
        if body.server_url.is_empty() {
            return Err(EngineError::invalid("server_url", "server_url is empty"));
        }
        let server = McpServer {
            label: body.server_label.clone(),
            url: body.server_url.clone(),
            authorization: body
                .authorization
                .as_ref()
                .map(|t| t.expose_secret().to_owned()),
            headers: body
                .headers
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.expose_secret().to_owned()))
                .collect(),
        };
        let transport = transport_of(body.transport.unwrap_or_default().as_str());
        let timeout = body
            .timeout_s
            .map_or(DEFAULT_TIMEOUT, |s| Duration::from_secs(u64::from(s)));
        let (result, latency) = self.probe(&server, transport, timeout, None).await;
        Ok(Self::outcome(result, latency))
    }

    /// The tools a saved connector offers now (a live `tools/list`).
    pub async fn connector_tools(
        &self,
        caller: &Caller,
        project_id: &str,
        id: &str,
    ) -> Result<ConnectorToolList, EngineError> {
        caller.require_admin()?;
        let record = self.connector_record(project_id, id).await?;
        let (result, latency) = self.probe_saved(&record).await?;
        let outcome = Self::outcome(result, latency);
        match outcome.tools {
            Some(tools) => Ok(ConnectorToolList {
                object: "list".to_owned(),
                data: tools,
            }),
            None => Err(EngineError::Run(crate::error::RunFailure::new(
                crate::code::Code::ExternalConnector,
                format!("connector \"{id}\": {}", outcome.error.unwrap_or_default()),
            ))),
        }
    }
}
