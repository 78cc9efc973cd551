//! A saved connector's endpoint for built-in tools that reach MCP servers themselves (the
//! `finance_search` sources): resolved exactly as a request's `{"type": "connector"}` is
//! (`connector_tools`), so the credentials are opened only now and a rotated, disabled or
//! deleted connector counts at once.

use std::collections::BTreeMap;

use protocol::request::{ConnectorTool, Tool};

use crate::engine::Engine;
use crate::error::EngineError;
use crate::mcp::{McpServer, McpTransport};

impl Engine {
    /// The endpoint (credentials opened) and pinned transport of connector `id` of project
    /// `project_id`; `None` when the project has no such connector or it is disabled.
    pub async fn connector_endpoint(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<(McpServer, McpTransport)>, EngineError> {
        let core = &self.core;
        let Some(admin) = &core.admin else {
            return Ok(None);
        };
        match admin.get_connector(project_id, id).await? {
            Some(record) if record.enabled => {}
            _ => return Ok(None),
        }
        let wanted = Tool::Connector(ConnectorTool {
            id: id.to_owned(),
            server_label: None,
            server_description: None,
            allowed_tools: None,
            require_approval: None,
            defer_loading: None,
        });
        let mut resolved: BTreeMap<usize, _> =
            crate::connector_tools::resolve(core, project_id, std::slice::from_ref(&wanted))
                .await?;
        Ok(resolved.remove(&0).map(|server| {
            (
                McpServer {
                    label: server.label,
                    url: server.url,
                    authorization: server.authorization,
                    headers: server.headers,
                },
                server.connector.transport,
            )
        }))
    }

    /// The id of the project named `name`, if there is one.
    pub async fn project_id_named(&self, name: &str) -> Result<Option<String>, EngineError> {
        let Some(admin) = &self.core.admin else {
            return Ok(None);
        };
        Ok(admin.project_by_name(name).await?.map(|project| project.id))
    }
}
