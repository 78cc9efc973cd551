//! `{"type": "connector", "id": …}` in a request: each saved connector of the caller's project
//! resolved to its server, its stored credentials (opened only now, so a continuation after a
//! rotation uses the new ones, and a background job payload never holds them) and its saved
//! settings. A request may narrow `allowed_tools` and add to `require_approval`, never widen
//! either. An unknown, disabled or deleted connector is 400 naming `tools[i].id`.

use std::collections::BTreeMap;

use protocol::request::{ConnectorTool, RequireApproval, Tool};
use secrecy::ExposeSecret as _;

use crate::admin::{credentials, oauth_grant as oauth};
use crate::admin_store::ConnectorRecord;
use crate::core::Core;
use crate::error::EngineError;
use crate::mcp::McpTransport;
use crate::tools::{ConnectorDef, ConnectorServer};

/// Writes each connector's label into the request where it gave none, so the response echoes
/// the label its items carry (clients' schemas require `server_label`).
pub(crate) fn fill_labels(
    tools: Option<&mut Vec<Tool>>,
    resolved: &BTreeMap<usize, ConnectorServer>,
) {
    for (index, tool) in tools.into_iter().flatten().enumerate() {
        if let (Tool::Connector(connector), Some(server)) = (tool, resolved.get(&index))
            && connector.server_label.is_none()
        {
            connector.server_label = Some(server.label.clone());
        }
    }
}

/// The request's connectors, by index in `tools`.
pub(crate) async fn resolve(
    core: &Core,
    project_id: &str,
    tools: &[Tool],
) -> Result<BTreeMap<usize, ConnectorServer>, EngineError> {
    let mut resolved = BTreeMap::new();
    for (index, tool) in tools.iter().enumerate() {
        let Tool::Connector(wanted) = tool else {
            continue;
        };
        let param = format!("tools[{index}].id");
        let record = match &core.admin {
            Some(admin) => admin.get_connector(project_id, &wanted.id).await?,
            None => None,
        };
        let Some(record) = record else {
            return Err(EngineError::invalid(
                param,
                format!(
                    "connector \"{}\" not found in this project (unknown or deleted)",
                    wanted.id
                ),
            ));
        };
        if !record.enabled {
            return Err(EngineError::invalid(
                param,
                format!("connector \"{}\" is disabled", wanted.id),
            ));
        }
        let mut server = server(core, index, wanted, &record)?;
        if record.auth_kind == "oauth" {
            let Some(oauth) = oauth::credentials_for(core, &record).await? else {
                return Err(EngineError::invalid(
                    param,
                    oauth::not_connected(&wanted.id),
                ));
            };
            server.connector.oauth = Some(oauth);
        }
        resolved.insert(index, server);
    }
    Ok(resolved)
}

fn server(
    core: &Core,
    index: usize,
    wanted: &ConnectorTool,
    record: &ConnectorRecord,
) -> Result<ConnectorServer, EngineError> {
    let allowed_tools = narrow(index, record.allowed_tools.as_deref(), wanted)?;
    let opened = credentials::open_all(core, record)?;
    let mut sandbox_env = BTreeMap::new();
    for (name, source) in &record.sandbox_env {
        if let Some(value) = opened.source(source) {
            sandbox_env.insert(name.clone(), value.clone());
        }
    }
    Ok(ConnectorServer {
        label: wanted
            .server_label
            .clone()
            .unwrap_or_else(|| record.server_label.clone()),
        url: record.server_url.clone(),
        description: wanted
            .server_description
            .clone()
            .or_else(|| record.description.clone()),
        authorization: opened
            .authorization
            .as_ref()
            .map(|t| t.expose_secret().to_owned()),
        headers: opened
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.expose_secret().to_owned()))
            .collect(),
        allowed_tools,
        approval: wanted.require_approval.clone(),
        deferred: wanted.defer_loading.unwrap_or(record.defer_loading),
        connector: ConnectorDef {
            id: record.id.clone(),
            transport: transport_of(&record.transport),
            timeout: record
                .timeout_ms
                .and_then(|ms| u64::try_from(ms).ok())
                .map(std::time::Duration::from_millis),
            approval: saved_approval(record),
            sandbox_env,
            oauth: None,
        },
    })
}

/// The request's `allowed_tools` within the connector's: a name the connector does not allow
/// is refused (a request narrows, never widens).
fn narrow(
    index: usize,
    saved: Option<&[String]>,
    wanted: &ConnectorTool,
) -> Result<Option<Vec<String>>, EngineError> {
    let saved = saved.filter(|names| !names.is_empty());
    let requested = wanted
        .allowed_tools
        .as_deref()
        .filter(|names| !names.is_empty());
    match (saved, requested) {
        (None, requested) => Ok(requested.map(<[String]>::to_vec)),
        (Some(saved), None) => Ok(Some(saved.to_vec())),
        (Some(saved), Some(requested)) => {
            if let Some(extra) = requested.iter().find(|name| !saved.contains(name)) {
                return Err(EngineError::invalid(
                    format!("tools[{index}].allowed_tools"),
                    format!(
                        "connector \"{}\" does not allow the tool \"{extra}\": a request can only narrow the connector's allowed_tools",
                        wanted.id
                    ),
                ));
            }
            Ok(Some(requested.to_vec()))
        }
    }
}

/// The transport a connector pins (`auto` when unknown).
pub(crate) fn transport_of(text: &str) -> McpTransport {
    match text {
        "streamable_http" => McpTransport::StreamableHttp,
        "sse" => McpTransport::Sse,
        _ => McpTransport::Auto,
    }
}

/// The approval policy a connector saved (none when unset or unreadable).
pub(crate) fn saved_approval(record: &ConnectorRecord) -> Option<RequireApproval> {
    record
        .require_approval
        .clone()
        .and_then(|value| serde_json::from_value(value).ok())
}
