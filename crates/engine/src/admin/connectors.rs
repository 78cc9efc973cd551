//! Saved connectors: create, list, get, update, delete, rotate credentials, audit events, and
//! the list every key of a project may read. Credentials are sealed before they reach the
//! store (`credentials.rs`) and never answered: answers say whether each is set, with a keyed
//! fingerprint.

use std::collections::BTreeMap;

use protocol::admin::{
    AuthorizationType, Connector, ConnectorCreate, ConnectorEventInfo, ConnectorEventList,
    ConnectorList, ConnectorPatch, ConnectorRotate, ConnectorSummary, ConnectorSummaryList,
    ConnectorTransport, SecretState,
};
use protocol::request::RequireApproval;
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::{Value, json};

use super::credentials::{self, seal};
use super::{Caller, random_id, store};
use crate::admin_store::{ConnectorEvent, ConnectorRecord};
use crate::connector_tools::saved_approval as approval_of;
use crate::core::Core;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::ids::new_id;
use crate::store::StoreError;

/// Longest `timeout_s`.
const MAX_TIMEOUT_S: u32 = 600;

fn is_connector_id(id: &str) -> bool {
    id.strip_prefix("connector_").is_some_and(|rest| {
        (1..=48).contains(&rest.len())
            && rest
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    })
}

fn is_label(label: &str) -> bool {
    (1..=64).contains(&label.len())
        && label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
        && bytes.all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        && name.len() <= 128
}

fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn check_url(url: &str) -> Result<(), EngineError> {
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("https://") || lower.starts_with("http://")) || url.len() > 2048 {
        return Err(EngineError::invalid(
            "server_url",
            "server_url must be an http or https URL of at most 2048 characters",
        ));
    }
    Ok(())
}

fn check_label(label: &str) -> Result<(), EngineError> {
    if is_label(label) {
        Ok(())
    } else {
        Err(EngineError::invalid(
            "server_label",
            "server_label must be 1 to 64 letters, digits, '_' or '-'",
        ))
    }
}

fn check_headers(headers: &BTreeMap<String, SecretString>) -> Result<(), EngineError> {
    for (name, value) in headers {
        if !is_header_name(name) {
            return Err(EngineError::invalid(
                format!("headers.{name}"),
                "not a valid HTTP header name",
            ));
        }
        let ok = value
            .expose_secret()
            .bytes()
            .all(|b| b == b'\t' || (b' '..=b'~').contains(&b));
        if !ok {
            return Err(EngineError::invalid(
                format!("headers.{name}"),
                "a header value holds visible ASCII only (the value is not shown)",
            ));
        }
    }
    Ok(())
}

fn check_token(token: &SecretString) -> Result<(), EngineError> {
    let ok = !token.expose_secret().is_empty()
        && token
            .expose_secret()
            .bytes()
            .all(|b| (b'!'..=b'~').contains(&b));
    if ok {
        Ok(())
    } else {
        Err(EngineError::invalid(
            "authorization",
            "authorization must be a token of visible ASCII without spaces (the value is not shown)",
        ))
    }
}

fn check_timeout(timeout: Option<u32>) -> Result<(), EngineError> {
    match timeout {
        Some(t) if t == 0 || t > MAX_TIMEOUT_S => Err(EngineError::invalid(
            "timeout_s",
            format!("timeout_s must be between 1 and {MAX_TIMEOUT_S}"),
        )),
        _ => Ok(()),
    }
}

/// Every `sandbox_env` entry names a variable and a credential the connector has.
fn check_sandbox_env(
    env: &BTreeMap<String, String>,
    has: impl Fn(&str) -> bool,
) -> Result<(), EngineError> {
    for (name, source) in env {
        if !is_env_name(name) {
            return Err(EngineError::invalid(
                format!("sandbox_env.{name}"),
                "a variable name is upper-case letters, digits and '_', not starting with a digit",
            ));
        }
        let known = source == "authorization" || source.starts_with("headers.");
        if !known || !has(source) {
            return Err(EngineError::invalid(
                format!("sandbox_env.{name}"),
                format!(
                    "the source must be \"authorization\" or \"headers.NAME\" of a credential this connector has (got \"{source}\")"
                ),
            ));
        }
    }
    Ok(())
}

fn auth_kind(record: &ConnectorRecord) -> String {
    if record.auth_kind == "oauth" {
        return "oauth".to_owned();
    }
    match (record.authorization.is_some(), record.headers.is_empty()) {
        (true, _) => "bearer",
        (false, false) => "headers",
        (false, true) => "none",
    }
    .to_owned()
}

fn has_source(record: &ConnectorRecord, source: &str) -> bool {
    match source.strip_prefix("headers.") {
        Some(name) => record.headers.contains_key(name),
        None => record.authorization.is_some(),
    }
}

fn approval_value(approval: Option<&RequireApproval>) -> Result<Option<Value>, EngineError> {
    approval
        .map(serde_json::to_value)
        .transpose()
        .map_err(|err| EngineError::Internal(format!("require_approval: {err}")))
}

/// The connector as the admin API answers it.
pub(crate) fn answer(core: &Core, record: &ConnectorRecord) -> Connector {
    Connector {
        id: record.id.clone(),
        object: "connector".to_owned(),
        server_label: record.server_label.clone(),
        server_url: record.server_url.clone(),
        transport: ConnectorTransport::parse(&record.transport).unwrap_or_default(),
        description: record.description.clone(),
        allowed_tools: record.allowed_tools.clone(),
        require_approval: approval_of(record),
        defer_loading: record.defer_loading,
        timeout_s: record
            .timeout_ms
            .and_then(|ms| u32::try_from(ms / 1000).ok()),
        sandbox_env: record.sandbox_env.clone(),
        enabled: record.enabled,
        created_at: record.created_at,
        updated_at: record.updated_at,
        authorization: credentials::state(core, record, "authorization"),
        headers: record
            .headers
            .keys()
            .map(|name| {
                (
                    name.clone(),
                    credentials::state(core, record, &format!("headers.{name}")),
                )
            })
            .collect(),
        status: record.status.clone(),
        last_checked_at: record.last_checked_at,
        last_error: record.last_error.clone(),
    }
}

fn not_found(id: &str) -> EngineError {
    EngineError::NotFound(format!("connector \"{id}\" not found"))
}

/// Seals the given credentials into the record (replacing what they name).
fn seal_into(
    core: &Core,
    record: &mut ConnectorRecord,
    authorization: Option<Option<&SecretString>>,
    headers: Option<Option<&BTreeMap<String, SecretString>>>,
) -> Result<Vec<String>, EngineError> {
    let mut fields = Vec::new();
    if let Some(token) = authorization {
        record.authorization = token
            .map(|t| seal(core, &record.project_id, &record.id, "authorization", t))
            .transpose()?;
        fields.push("authorization".to_owned());
    }
    if let Some(headers) = headers {
        let mut sealed = BTreeMap::new();
        for (name, value) in headers.into_iter().flatten() {
            let field = format!("headers.{name}");
            sealed.insert(
                name.clone(),
                seal(core, &record.project_id, &record.id, &field, value)?,
            );
            fields.push(field);
        }
        if sealed.is_empty() {
            fields.push("headers".to_owned());
        }
        record.headers = sealed;
    }
    Ok(fields)
}

impl Engine {
    /// The connector as answered, with an OAuth connector's connection state (never a token).
    pub(crate) async fn connector_answer(
        &self,
        record: &ConnectorRecord,
    ) -> Result<Connector, EngineError> {
        let mut connector = answer(&self.core, record);
        if record.auth_kind == "oauth" {
            let grant = store(&self.core)?
                .get_oauth_grant(&record.project_id, &record.id)
                .await?;
            connector.authorization = SecretState {
                set: grant.is_some(),
                fingerprint: None,
                kind: Some(AuthorizationType::Oauth),
                connected: Some(grant.is_some()),
                expires_at: grant.and_then(|g| g.access_expires_at),
            };
        }
        Ok(connector)
    }

    /// Records what was done to a connector (field names, never values).
    pub(crate) async fn audit(
        &self,
        caller: &Caller,
        project_id: &str,
        connector_id: &str,
        kind: &str,
        detail: Value,
    ) -> Result<(), EngineError> {
        store(&self.core)?
            .add_connector_event(&ConnectorEvent {
                // Time first, so events of the same second list in the order they happened.
                id: format!("cev_{:013}_{}", self.core.clock.now_ms(), new_id("e")),
                project_id: project_id.to_owned(),
                connector_id: connector_id.to_owned(),
                kind: kind.to_owned(),
                key_id: caller.key_id.clone(),
                detail,
                created_at: self.core.clock.now_secs(),
            })
            .await?;
        Ok(())
    }

    pub async fn create_connector(
        &self,
        caller: &Caller,
        project_id: &str,
        body: ConnectorCreate,
    ) -> Result<Connector, EngineError> {
        caller.require_admin()?;
        let admin = store(&self.core)?;
        credentials::sealer(&self.core)?;
        let id = match body.id {
            Some(id) if is_connector_id(&id) => id,
            Some(_) => {
                return Err(EngineError::invalid(
                    "id",
                    "id must match ^connector_[a-z0-9_]{1,48}$",
                ));
            }
            None => random_id("connector"),
        };
        check_label(&body.server_label)?;
        check_url(&body.server_url)?;
        if let Some(token) = &body.authorization {
            check_token(token)?;
        }
        if let Some(headers) = &body.headers {
            check_headers(headers)?;
        }
        check_timeout(body.timeout_s)?;
        let oauth = body.authorization_type == Some(AuthorizationType::Oauth);
        if oauth && body.authorization.is_some() {
            return Err(EngineError::invalid(
                "authorization",
                "an OAuth connector gets its tokens from the OAuth connection: give no authorization",
            ));
        }
        let now = self.core.clock.now_secs();
        let mut record = ConnectorRecord {
            project_id: project_id.to_owned(),
            id: id.clone(),
            server_label: body.server_label,
            server_url: body.server_url,
            transport: body.transport.unwrap_or_default().as_str().to_owned(),
            description: body.description,
            auth_kind: String::new(),
            authorization: None,
            headers: BTreeMap::new(),
            allowed_tools: body.allowed_tools,
            require_approval: approval_value(body.require_approval.as_ref())?,
            defer_loading: body.defer_loading.unwrap_or(true),
            timeout_ms: body.timeout_s.map(|s| i64::from(s) * 1000),
            enabled: body.enabled.unwrap_or(true),
            sandbox_env: body.sandbox_env.unwrap_or_default(),
            secret_version: 1,
            status: "untested".to_owned(),
            last_checked_at: None,
            last_error: None,
            created_at: now,
            updated_at: now,
        };
        let fields = seal_into(
            &self.core,
            &mut record,
            body.authorization.as_ref().map(Some),
            body.headers.as_ref().map(Some),
        )?;
        check_sandbox_env(&record.sandbox_env, |s| has_source(&record, s))?;
        if oauth {
            record.auth_kind = "oauth".to_owned();
        }
        record.auth_kind = auth_kind(&record);
        admin
            .insert_connector(&record)
            .await
            .map_err(|err| match err {
                StoreError::Conflict(_) => {
                    EngineError::Conflict(format!("this project already has a connector \"{id}\""))
                }
                other => other.into(),
            })?;
        self.audit(
            caller,
            project_id,
            &id,
            "created",
            json!({"credentials": fields}),
        )
        .await?;
        self.connector_answer(&record).await
    }

    pub async fn list_connectors(
        &self,
        caller: &Caller,
        project_id: &str,
    ) -> Result<ConnectorList, EngineError> {
        caller.require_admin()?;
        let records = store(&self.core)?.list_connectors(project_id).await?;
        let mut data = Vec::with_capacity(records.len());
        for record in &records {
            data.push(self.connector_answer(record).await?);
        }
        Ok(ConnectorList {
            object: "list".to_owned(),
            data,
        })
    }

    /// What every key of the project may see: ids, labels, descriptions, status.
    pub async fn connector_summaries(
        &self,
        project_id: &str,
    ) -> Result<ConnectorSummaryList, EngineError> {
        let records = store(&self.core)?.list_connectors(project_id).await?;
        Ok(ConnectorSummaryList {
            object: "list".to_owned(),
            data: records
                .into_iter()
                .map(|r| ConnectorSummary {
                    id: r.id,
                    server_label: r.server_label,
                    description: r.description,
                    enabled: r.enabled,
                    status: r.status,
                })
                .collect(),
        })
    }

    pub(crate) async fn connector_record(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<ConnectorRecord, EngineError> {
        store(&self.core)?
            .get_connector(project_id, id)
            .await?
            .ok_or_else(|| not_found(id))
    }

    pub async fn get_connector(
        &self,
        caller: &Caller,
        project_id: &str,
        id: &str,
    ) -> Result<Connector, EngineError> {
        caller.require_admin()?;
        let record = self.connector_record(project_id, id).await?;
        self.connector_answer(&record).await
    }

    pub async fn update_connector(
        &self,
        caller: &Caller,
        project_id: &str,
        id: &str,
        patch: ConnectorPatch,
    ) -> Result<Connector, EngineError> {
        caller.require_admin()?;
        let mut record = self.connector_record(project_id, id).await?;
        let mut fields: Vec<String> = Vec::new();
        if let Some(label) = patch.server_label {
            check_label(&label)?;
            record.server_label = label;
            fields.push("server_label".into());
        }
        if let Some(url) = patch.server_url {
            check_url(&url)?;
            record.server_url = url;
            fields.push("server_url".into());
        }
        if let Some(transport) = patch.transport {
            record.transport = transport.as_str().to_owned();
            fields.push("transport".into());
        }
        if let Some(description) = patch.description {
            record.description = description;
            fields.push("description".into());
        }
        if let Some(allowed) = patch.allowed_tools {
            record.allowed_tools = allowed;
            fields.push("allowed_tools".into());
        }
        if let Some(approval) = patch.require_approval {
            record.require_approval = approval_value(approval.as_ref())?;
            fields.push("require_approval".into());
        }
        if let Some(defer) = patch.defer_loading {
            record.defer_loading = defer;
            fields.push("defer_loading".into());
        }
        if let Some(timeout) = patch.timeout_s {
            check_timeout(timeout)?;
            record.timeout_ms = timeout.map(|s| i64::from(s) * 1000);
            fields.push("timeout_s".into());
        }
        if let Some(enabled) = patch.enabled {
            record.enabled = enabled;
            fields.push("enabled".into());
        }
        if let Some(env) = patch.sandbox_env {
            record.sandbox_env = env.unwrap_or_default();
            fields.push("sandbox_env".into());
        }
        if let Some(Some(token)) = &patch.authorization {
            check_token(token)?;
        }
        if let Some(Some(headers)) = &patch.headers {
            check_headers(headers)?;
        }
        if patch.authorization.is_some() || patch.headers.is_some() {
            if record.auth_kind == "oauth" {
                return Err(EngineError::invalid(
                    "authorization",
                    "this connector authorizes with OAuth: its credentials come from the OAuth grant",
                ));
            }
            let changed = seal_into(
                &self.core,
                &mut record,
                patch.authorization.as_ref().map(Option::as_ref),
                patch.headers.as_ref().map(Option::as_ref),
            )?;
            fields.extend(changed);
            record.secret_version += 1;
            record.auth_kind = auth_kind(&record);
        }
        check_sandbox_env(&record.sandbox_env, |s| has_source(&record, s))?;
        record.updated_at = self.core.clock.now_secs();
        if !store(&self.core)?.update_connector(&record).await? {
            return Err(not_found(id));
        }
        self.audit(caller, project_id, id, "updated", json!({"fields": fields}))
            .await?;
        self.connector_answer(&record).await
    }

    /// Replaces credentials (a given `authorization` or header replaces that one; the others
    /// stay). Runs that start from now on, continuations included, use the new ones.
    pub async fn rotate_connector(
        &self,
        caller: &Caller,
        project_id: &str,
        id: &str,
        body: ConnectorRotate,
    ) -> Result<Connector, EngineError> {
        caller.require_admin()?;
        let mut record = self.connector_record(project_id, id).await?;
        if body.authorization.is_none() && body.headers.is_none() {
            return Err(EngineError::invalid(
                "authorization",
                "give the new authorization and/or headers",
            ));
        }
        if let Some(token) = &body.authorization {
            check_token(token)?;
            if record.auth_kind == "oauth" {
                return Err(EngineError::invalid(
                    "authorization",
                    "this connector authorizes with OAuth: connect it again with POST /v1/admin/connectors/{id}/oauth/start",
                ));
            }
        }
        let mut fields = Vec::new();
        if let Some(token) = &body.authorization {
            fields.extend(seal_into(&self.core, &mut record, Some(Some(token)), None)?);
        }
        if let Some(headers) = &body.headers {
            check_headers(headers)?;
            for (name, value) in headers {
                let field = format!("headers.{name}");
                let sealed = seal(&self.core, project_id, id, &field, value)?;
                record.headers.insert(name.clone(), sealed);
                fields.push(field);
            }
        }
        record.secret_version += 1;
        record.auth_kind = auth_kind(&record);
        record.updated_at = self.core.clock.now_secs();
        if !store(&self.core)?.update_connector(&record).await? {
            return Err(not_found(id));
        }
        self.audit(
            caller,
            project_id,
            id,
            "rotated",
            json!({"credentials": fields}),
        )
        .await?;
        self.connector_answer(&record).await
    }

    pub async fn delete_connector(
        &self,
        caller: &Caller,
        project_id: &str,
        id: &str,
    ) -> Result<(), EngineError> {
        caller.require_admin()?;
        if !store(&self.core)?.delete_connector(project_id, id).await? {
            return Err(not_found(id));
        }
        self.audit(caller, project_id, id, "deleted", json!({}))
            .await?;
        Ok(())
    }

    pub async fn connector_events(
        &self,
        caller: &Caller,
        project_id: &str,
        id: &str,
    ) -> Result<ConnectorEventList, EngineError> {
        caller.require_admin()?;
        let events = store(&self.core)?.connector_events(project_id, id).await?;
        if events.is_empty() {
            // Never created here (a deleted one keeps its events).
            self.connector_record(project_id, id).await?;
        }
        Ok(ConnectorEventList {
            object: "list".to_owned(),
            data: events
                .into_iter()
                .map(|e| ConnectorEventInfo {
                    id: e.id,
                    kind: e.kind,
                    key_id: e.key_id,
                    detail: e.detail,
                    created_at: e.created_at,
                })
                .collect(),
        })
    }

    /// Re-seals every stored credential under the current key, in one transaction. Returns
    /// how many values were sealed again.
    pub async fn reseal_secrets(&self) -> Result<u64, EngineError> {
        let sealer = credentials::sealer(&self.core)?;
        let admin = store(&self.core)?;
        let count = admin
            .reseal_all(&|field| {
                if sealer.is_current(&field.sealed) {
                    return Ok(None);
                }
                let context =
                    credentials::context(&field.project_id, &field.connector_id, &field.field);
                let plain = sealer.open(&context, &field.sealed).map_err(|err| {
                    format!(
                        "{} of {} cannot be opened: {err}",
                        field.field, field.connector_id
                    )
                })?;
                sealer
                    .seal(&context, &plain)
                    .map(Some)
                    .map_err(|err| err.to_string())
            })
            .await?;
        Ok(count)
    }
}
