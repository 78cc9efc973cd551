//! Saved connectors (`/v1/admin/connectors`) as finance sources: the port through which the
//! MCP back end asks for a connector's endpoint, its credentials opened, when a call needs it.
//! The server implements it over the engine's own connector resolution, so a rotation, a
//! disabled or a deleted connector counts at once, and credentials never sit in the
//! operator's file.

use engine::mcp::{McpServer, McpTransport};

/// A saved connector named by `[[tools.finance_search.mcp]] connector = "…"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedConnector {
    /// The connector's id.
    pub id: String,
    /// `project = "NAME"`: that project's connector serves every project's calls. `None`:
    /// each call uses the connector of the caller's project, and a project that has not
    /// saved one does not get this source.
    pub project: Option<String>,
}

/// Which project a connector is looked up in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectRef<'a> {
    /// The caller's project, by id.
    Id(&'a str),
    /// A project the operator named in the configuration.
    Name(&'a str),
}

/// Finds saved connectors (implemented by the server over the engine).
#[async_trait::async_trait]
pub trait SavedConnectors: Send + Sync {
    /// The endpoint and pinned transport of connector `id` of `project`, credentials opened;
    /// `None` when the project has no such connector or it is disabled. `Err` says why it
    /// cannot be used (never with a credential in it).
    async fn endpoint(
        &self,
        project: ProjectRef<'_>,
        id: &str,
    ) -> Result<Option<(McpServer, McpTransport)>, String>;
}

/// No saved connectors (processes without a store, and tests).
pub struct NoSavedConnectors;

#[async_trait::async_trait]
impl SavedConnectors for NoSavedConnectors {
    async fn endpoint(
        &self,
        _project: ProjectRef<'_>,
        _id: &str,
    ) -> Result<Option<(McpServer, McpTransport)>, String> {
        Ok(None)
    }
}
