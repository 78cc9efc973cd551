//! The saved connectors `finance_search` sources may name (`[[tools.finance_search.mcp]]
//! connector = "…"`), found through the engine, which resolves them as it resolves a
//! request's `{"type": "connector"}`. The built-in tools are set up before the engine exists:
//! the server hands the engine over once it is built ([`EngineSlot`]); until then (and in
//! processes without one) no connector is found.

use std::sync::{Arc, OnceLock};

use engine::Engine;
use engine::mcp::{McpServer, McpTransport};
use finance::{ProjectRef, SavedConnectors};

/// Where the server puts its engine once built.
pub type EngineSlot = Arc<OnceLock<Engine>>;

/// [`SavedConnectors`] over the engine in the slot.
pub struct EngineConnectors(pub EngineSlot);

#[async_trait::async_trait]
impl SavedConnectors for EngineConnectors {
    async fn endpoint(
        &self,
        project: ProjectRef<'_>,
        id: &str,
    ) -> Result<Option<(McpServer, McpTransport)>, String> {
        let Some(engine) = self.0.get() else {
            return Ok(None);
        };
        let project_id = match project {
            ProjectRef::Id(project_id) => project_id.to_owned(),
            ProjectRef::Name(name) => match engine
                .project_id_named(name)
                .await
                .map_err(|err| err.to_string())?
            {
                Some(project_id) => project_id,
                None => return Ok(None),
            },
        };
        engine
            .connector_endpoint(&project_id, id)
            .await
            .map_err(|err| err.to_string())
    }
}
