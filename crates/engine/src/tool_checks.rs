//! Request validation that depends on the caller's project: each built-in tool of the
//! request is asked ([`crate::hosted::HostedTools::check`]) whether it can serve the project,
//! before anything is stored, so a refusal is a 400 and no run starts.

use protocol::request::Tool;

use crate::core::Core;
use crate::error::EngineError;
use crate::hosted::HostedError;

/// Every built-in tool of `tools` can serve `project_id`, or the first refusal.
pub(crate) async fn check(
    core: &Core,
    project_id: &str,
    tools: &[Tool],
) -> Result<(), EngineError> {
    for (index, tool) in tools.iter().enumerate() {
        if matches!(tool, Tool::Function(_) | Tool::Mcp(_) | Tool::Connector(_)) {
            continue;
        }
        match core.hosted.check(project_id, index, tool).await {
            Ok(()) => {}
            Err(HostedError::Invalid(err)) => return Err(EngineError::InvalidRequest(err)),
            Err(HostedError::Unavailable(message)) => {
                return Err(EngineError::NotImplemented(format!(
                    "tools[{index}]: {message}"
                )));
            }
        }
    }
    Ok(())
}
