//! The engine the administration commands (`agentd projects|keys|connectors|secrets …`) run
//! against: the configured store directly (no server needed), the secret key ring as `serve`
//! loads it, and an MCP client behind the network guard for `connectors test`. No model
//! provider, no built-in tool, no worker; of the built-in tools' data only what a deleted
//! project leaves (its people in the embedded directory) is reached.

use std::sync::Arc;

use engine::Engine;
use engine::hosted::{HostedError, HostedTool, HostedTools};
use protocol::request::Tool;

use crate::config::Config;
use crate::start::{ServerError, open_store};

/// The engine of a command-line administration command.
pub async fn engine_for_cli(config: &Config) -> Result<Engine, ServerError> {
    let store = open_store(config).await?;
    let registry = providers::registry::Registry::new(Vec::new())?;
    let policy = netguard::Policy::with_allowed(&config.allow_private)
        .map_err(|err| ServerError::Mcp(err.to_string()))?;
    let mut mcp_config = mcp::McpConfig::new(policy);
    mcp_config.request_timeout = config.mcp.request_timeout;
    mcp_config.connect_timeout = config.mcp.connect_timeout;
    mcp_config.max_response_bytes = config.mcp.max_response_bytes;
    let mcp = mcp::McpClient::new(mcp_config).map_err(|err| ServerError::Mcp(err.to_string()))?;
    let sealer = crate::secret_keys::key_ring(&config.secrets, config.listen, &config.data_dir)?
        .map(|ring| Arc::new(ring) as Arc<dyn engine::secrets::Sealer>);
    Ok(Engine::new(
        engine::Ports {
            models: Arc::new(registry),
            store: store.clone(),
            mcp: Arc::new(mcp),
            hosted: Arc::new(ProjectData {
                people: config.people_search.clone(),
            }),
            clock: Arc::new(engine::SystemClock),
            sealer,
            admin: Some(store),
        },
        engine::EngineConfig::default(),
    ))
}

/// No tool to build; removes a deleted project's people from the embedded directory (opened
/// only then, and only when it exists).
struct ProjectData {
    people: people::PeopleSettings,
}

impl HostedTools for ProjectData {
    fn build(&self, _index: usize, _tool: &Tool) -> Result<Vec<Arc<dyn HostedTool>>, HostedError> {
        Ok(Vec::new())
    }

    fn forget_project<'a>(
        &'a self,
        project_id: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            people::forget_project(&self.people, project_id)
                .await
                .map(|_| ())
                .map_err(|err| format!("people directory: {err}"))
        })
    }
}
