//! An OAuth connector's stored grant, opened for one connection (a run, a test): the grant's
//! plain fields, its secrets opened, and a [`StoreSink`] that seals and stores the tokens of
//! every refresh and marks the connector's status when the grant is lost. Used by
//! `connector_tools.rs` (runs) and `probe.rs` (tests); depends on no part of the engine above
//! the store and the sealer.

use std::sync::Arc;

use secrecy::{ExposeSecret as _, SecretString};

use super::{credentials, store};
use crate::admin_store::{AdminStore, ConnectorRecord, SealedTokens};
use crate::clock::Clock;
use crate::core::Core;
use crate::error::EngineError;
use crate::oauth::{OAuthCredentials, OAuthGrantInfo, OAuthSink, OAuthTokens};
use crate::secrets::Sealer;

/// Seals one OAuth value of a connector.
fn seal_with(
    sealer: &dyn Sealer,
    project_id: &str,
    connector_id: &str,
    field: &str,
    value: &SecretString,
) -> Result<String, String> {
    sealer
        .seal(
            &credentials::context(project_id, connector_id, field),
            value.expose_secret().as_bytes(),
        )
        .map_err(|err| format!("sealing {field} of {connector_id}: {err}"))
}

/// The grant of an OAuth connector, opened for one connection (`Ok(None)`: not connected
/// yet).
pub(crate) async fn credentials_for(
    core: &Core,
    record: &ConnectorRecord,
) -> Result<Option<Arc<OAuthCredentials>>, EngineError> {
    let admin = store(core)?;
    let Some(grant) = admin
        .get_oauth_grant(&record.project_id, &record.id)
        .await?
    else {
        return Ok(None);
    };
    if !covers(&grant.resource, &record.server_url) {
        // The server URL changed since the connection: its tokens are not for this server.
        return Ok(None);
    }
    let (project, id) = (record.project_id.as_str(), record.id.as_str());
    let open = |field: &str, sealed: &Option<String>| {
        sealed
            .as_deref()
            .map(|s| credentials::open(core, project, id, field, s))
            .transpose()
    };
    let client_secret = open("oauth.client_secret", &grant.client_secret)?;
    let refresh_token = open("oauth.refresh_token", &grant.refresh_token)?;
    let access_token = open("oauth.access_token", &grant.access_token)?
        .map(|token| (token, grant.access_expires_at));
    let sealer = core
        .sealer
        .clone()
        .ok_or_else(|| EngineError::invalid("server", credentials::NO_KEY))?;
    Ok(Some(Arc::new(OAuthCredentials {
        grant: OAuthGrantInfo {
            issuer: grant.issuer,
            token_endpoint: grant.token_endpoint,
            resource: grant.resource,
            client_id: grant.client_id,
            client_secret,
            auth_method: grant.auth_method,
            kind: grant.kind,
            redirect_uri: grant.redirect_uri,
            scope: grant.scope,
        },
        refresh_token,
        access_token,
        sink: Arc::new(StoreSink {
            admin: admin.clone(),
            sealer,
            clock: core.clock.clone(),
            project_id: project.to_owned(),
            connector_id: id.to_owned(),
        }),
    })))
}

/// Whether tokens for `resource` (RFC 8707, as the authorization was made) may go to
/// `server_url`: the same URL, or one under it (scheme and host compared without case).
fn covers(resource: &str, server_url: &str) -> bool {
    let split = |url: &str| -> Option<(String, String)> {
        let (scheme, rest) = url.split_once("://")?;
        let (authority, path) = rest.find('/').map_or((rest, ""), |at| rest.split_at(at));
        Some((
            format!(
                "{}://{}",
                scheme.to_ascii_lowercase(),
                authority.to_ascii_lowercase()
            ),
            path.split(['?', '#']).next().unwrap_or_default().to_owned(),
        ))
    };
    let (Some((origin, path)), Some((server_origin, server_path))) =
        (split(resource), split(server_url))
    else {
        return false;
    };
    let base = path.trim_end_matches('/');
    origin == server_origin
        && (server_path.trim_end_matches('/') == base
            || server_path
                .strip_prefix(base)
                .is_some_and(|rest| rest.starts_with('/')))
}

/// The message of a request naming an OAuth connector that has no grant yet.
pub(crate) fn not_connected(id: &str) -> String {
    format!(
        "connector \"{id}\" uses OAuth and is not connected yet: an admin must complete the OAuth connection (POST /v1/admin/connectors/{id}/oauth/start, then open the authorization_url)"
    )
}

/// Seals and stores the tokens of each refresh; marks the connector when the grant is lost.
struct StoreSink {
    admin: Arc<dyn AdminStore>,
    sealer: Arc<dyn Sealer>,
    clock: Arc<dyn Clock>,
    project_id: String,
    connector_id: String,
}

#[async_trait::async_trait]
impl OAuthSink for StoreSink {
    async fn store(&self, tokens: &OAuthTokens) -> Result<(), String> {
        let (project, id) = (self.project_id.as_str(), self.connector_id.as_str());
        let sealer = self.sealer.as_ref();
        let sealed = SealedTokens {
            refresh_token: tokens
                .refresh_token
                .as_ref()
                .map(|t| seal_with(sealer, project, id, "oauth.refresh_token", t))
                .transpose()?,
            access_token: seal_with(
                sealer,
                project,
                id,
                "oauth.access_token",
                &tokens.access_token,
            )?,
            access_expires_at: tokens.expires_at,
        };
        self.admin
            .set_oauth_tokens(project, id, &sealed, self.clock.now_secs())
            .await
            .map(|_| ())
            .map_err(|err| err.to_string())
    }

    async fn lost(&self, reason: &str) {
        let result = self
            .admin
            .set_connector_status(
                &self.project_id,
                &self.connector_id,
                "error",
                self.clock.now_secs(),
                Some(reason),
            )
            .await;
        if let Err(err) = result {
            tracing::warn!(connector = %self.connector_id, %err, "could not mark the connector's lost OAuth grant");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::covers;

    #[test]
    fn a_grant_covers_its_resource_and_what_is_under_it() {
        assert!(covers("https://m.example/mcp", "https://m.example/mcp"));
        assert!(covers("https://m.example/mcp", "https://M.example/mcp/"));
        assert!(covers("https://m.example", "https://m.example/mcp"));
        assert!(covers(
            "http://127.0.0.1:8/mcp",
            "http://127.0.0.1:8/mcp?x=1"
        ));
        assert!(!covers("https://m.example/mcp", "https://m.example/mcp2"));
        assert!(!covers(
            "https://m.example",
            "https://m.example.evil.com/mcp"
        ));
        assert!(!covers(
            "https://m.example/mcp",
            "https://other.example/mcp"
        ));
        assert!(!covers("https://m.example/mcp", "http://m.example/mcp"));
        assert!(!covers("not a url", "https://m.example/mcp"));
    }
}
