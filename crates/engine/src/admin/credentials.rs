//! A connector's credentials at rest: each value sealed on its own, bound by its associated
//! data to `connector|<project>|<connector>|<field>` (field `authorization` or
//! `headers.<name>`), so a value copied to another row or field does not open. Opened values
//! live in [`SecretString`] only.

use std::collections::BTreeMap;

use protocol::admin::SecretState;
use secrecy::{ExposeSecret as _, SecretString};

use crate::admin_store::ConnectorRecord;
use crate::core::Core;
use crate::error::EngineError;
use crate::secrets::Sealer;

/// What an operator must set when credentials cannot be sealed.
pub(crate) const NO_KEY: &str = "this server has no secret key to seal connector credentials with: set AGENTD_SECRET_KEY (32 random bytes, base64) or AGENTD_SECRET_KEY_FILE (a file only its owner may read), then restart";

/// The associated data of one stored value.
pub(crate) fn context(project_id: &str, connector_id: &str, field: &str) -> String {
    format!("connector|{project_id}|{connector_id}|{field}")
}

pub(crate) fn sealer(core: &Core) -> Result<&dyn Sealer, EngineError> {
    core.sealer
        .as_deref()
        .ok_or_else(|| EngineError::invalid("server", NO_KEY))
}

pub(crate) fn seal(
    core: &Core,
    project_id: &str,
    connector_id: &str,
    field: &str,
    value: &SecretString,
) -> Result<String, EngineError> {
    sealer(core)?
        .seal(
            &context(project_id, connector_id, field),
            value.expose_secret().as_bytes(),
        )
        .map_err(|err| EngineError::Internal(format!("sealing {field} of {connector_id}: {err}")))
}

pub(crate) fn open(
    core: &Core,
    project_id: &str,
    connector_id: &str,
    field: &str,
    sealed: &str,
) -> Result<SecretString, EngineError> {
    let plain = sealer(core)
        .map_err(|_| EngineError::Internal(format!("connector {connector_id}: {NO_KEY}")))?
        .open(&context(project_id, connector_id, field), sealed)
        .map_err(|err| {
            EngineError::Internal(format!(
                "the {field} of connector {connector_id} cannot be opened ({err}): was it sealed under a key this server no longer has (AGENTD_SECRET_KEYS_OLD)?"
            ))
        })?;
    let text = String::from_utf8(plain).map_err(|_| {
        EngineError::Internal(format!(
            "the {field} of connector {connector_id} is not text"
        ))
    })?;
    Ok(SecretString::from(text))
}

/// A connector's credentials, opened.
pub(crate) struct Opened {
    pub(crate) authorization: Option<SecretString>,
    pub(crate) headers: BTreeMap<String, SecretString>,
}

impl Opened {
    /// The value a `sandbox_env` source names (`authorization` or `headers.NAME`).
    pub(crate) fn source(&self, source: &str) -> Option<&SecretString> {
        match source.strip_prefix("headers.") {
            Some(name) => self.headers.get(name),
            None if source == "authorization" => self.authorization.as_ref(),
            None => None,
        }
    }
}

pub(crate) fn open_all(core: &Core, record: &ConnectorRecord) -> Result<Opened, EngineError> {
    let (project, id) = (record.project_id.as_str(), record.id.as_str());
    let authorization = record
        .authorization
        .as_deref()
        .map(|sealed| open(core, project, id, "authorization", sealed))
        .transpose()?;
    let mut headers = BTreeMap::new();
    for (name, sealed) in &record.headers {
        headers.insert(
            name.clone(),
            open(core, project, id, &format!("headers.{name}"), sealed)?,
        );
    }
    Ok(Opened {
        authorization,
        headers,
    })
}

/// Whether a value is set, with its keyed fingerprint when it opens.
pub(crate) fn state(core: &Core, record: &ConnectorRecord, field: &str) -> SecretState {
    let sealed = match field.strip_prefix("headers.") {
        Some(name) => record.headers.get(name),
        None => record.authorization.as_ref(),
    };
    let Some(sealed) = sealed else {
        return SecretState::plain(false, None);
    };
    let fingerprint = core.sealer.as_deref().and_then(|sealer| {
        let plain = sealer
            .open(&context(&record.project_id, &record.id, field), sealed)
            .ok()?;
        sealer.fingerprint(&plain)
    });
    SecretState::plain(true, fingerprint)
}
