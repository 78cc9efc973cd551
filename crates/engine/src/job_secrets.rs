//! The MCP credentials of a queued background run: taken out of the request before its job
//! payload is stored, kept sealed beside it ([`crate::secrets::Sealer`]), and put back when a
//! worker runs it. No job payload holds a credential in clear text.

use std::collections::BTreeMap;

use protocol::request::{CreateRequest, Tool};

use crate::core::Core;
use crate::error::EngineError;

/// The credentials of one `mcp` tool of the request, by its index in `tools`.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct ToolSecrets {
    index: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    authorization: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    headers: Option<BTreeMap<String, String>>,
}

/// Where a job's credentials are bound: a sealed value opens only for this job.
fn context(project_id: &str, response_id: &str) -> String {
    format!("job|{project_id}|{response_id}|mcp")
}

/// Takes the credentials out of `request` and returns them sealed (`None`: it has none).
/// Without a sealing key the request is refused: the credentials would have to be stored in
/// clear text.
pub(crate) fn take(
    core: &Core,
    project_id: &str,
    response_id: &str,
    request: &mut CreateRequest,
) -> Result<Option<String>, EngineError> {
    let mut secrets = Vec::new();
    for (index, tool) in request.tools.iter_mut().flatten().enumerate() {
        if let Tool::Mcp(mcp) = tool
            && (mcp.authorization.is_some() || mcp.headers.is_some())
        {
            secrets.push(ToolSecrets {
                index,
                authorization: mcp.authorization.take(),
                headers: mcp.headers.take(),
            });
        }
    }
    let Some(first) = secrets.first() else {
        return Ok(None);
    };
    let Some(sealer) = &core.sealer else {
        let field = if first.authorization.is_some() {
            "authorization"
        } else {
            "headers"
        };
        return Err(EngineError::invalid(
            format!("tools[{}].{field}", first.index),
            "a background run keeps its MCP credentials sealed until a worker runs it, and this server has no secret key to seal them: set AGENTD_SECRET_KEY (or AGENTD_SECRET_KEY_FILE), or send the request without background",
        ));
    };
    let plain = serde_json::to_vec(&secrets)
        .map_err(|err| EngineError::Internal(format!("job secrets: {err}")))?;
    let sealed = sealer
        .seal(&context(project_id, response_id), &plain)
        .map_err(|err| EngineError::Internal(format!("sealing the job's credentials: {err}")))?;
    Ok(Some(sealed))
}

/// Puts a job's credentials back into its request.
pub(crate) fn restore(
    core: &Core,
    project_id: &str,
    response_id: &str,
    request: &mut CreateRequest,
    sealed: &str,
) -> Result<(), EngineError> {
    let sealer = core.sealer.as_ref().ok_or_else(|| {
        EngineError::Internal(
            "this run's MCP credentials are sealed and this server has no secret key to open them (set the AGENTD_SECRET_KEY it was queued with)".to_owned(),
        )
    })?;
    let plain = sealer
        .open(&context(project_id, response_id), sealed)
        .map_err(|err| {
            EngineError::Internal(format!(
                "this run's MCP credentials cannot be opened: {err}"
            ))
        })?;
    let secrets: Vec<ToolSecrets> = serde_json::from_slice(&plain)
        .map_err(|err| EngineError::Internal(format!("job secrets: {err}")))?;
    let tools = request.tools.get_or_insert_with(Vec::new);
    for secret in secrets {
        if let Some(Tool::Mcp(mcp)) = tools.get_mut(secret.index) {
            mcp.authorization = secret.authorization;
            mcp.headers = secret.headers;
        }
    }
    Ok(())
}
