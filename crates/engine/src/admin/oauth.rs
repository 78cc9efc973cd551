//! OAuth connectors: an admin connects a saved connector to an MCP server that uses the MCP
//! authorization spec, and runs use the stored grant.
//!
//! - **Start** ([`Engine::start_connector_oauth`]): discovery, client registration and the
//!   authorization request through the MCP port (every URL behind the network guard). The
//!   pending authorization (PKCE verifier included) is kept in this process's memory under its
//!   `state` for [`PENDING_TTL_SECS`], at most [`MAX_PENDING`] at once (the oldest goes first):
//!   the callback must reach the replica that started it, and a restart in between means
//!   starting again.
//! - **Callback** ([`Engine::finish_connector_oauth`]): the single-use `state` finds the pending
//!   authorization; the code is exchanged; the grant's plain fields go to `oauth_grants`, the
//!   client secret, refresh token and access token sealed under
//!   `connector|<project>|<connector>|oauth.<field>`.
//! - **Use** ([`credentials_for`]): the grant opened for one connection, with a [`StoreSink`]
//!   that seals and stores the tokens of every refresh (and marks the connector's status when
//!   the grant is lost).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use protocol::admin::{ConnectorOAuthStart, ConnectorOAuthStarted};
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::json;

use super::{Caller, credentials, store};
use crate::admin_store::{AdminStore, ConnectorRecord, OAuthGrantRecord, Role, SealedTokens};
use crate::clock::Clock;
use crate::code::Code;
use crate::core::Core;
use crate::engine::Engine;
use crate::error::{EngineError, RunFailure};
use crate::oauth::{
    OAuthClientRequest, OAuthCredentials, OAuthGrantInfo, OAuthPending, OAuthSink, OAuthTokens,
};
use crate::secrets::Sealer;

/// How long a started authorization waits for its callback.
pub const PENDING_TTL_SECS: i64 = 15 * 60;

/// Started authorizations kept at once (per process).
pub const MAX_PENDING: usize = 256;

/// The path of the callback route.
pub const CALLBACK_PATH: &str = "/v1/admin/oauth/callback";

/// One started authorization.
struct Flow {
    project_id: String,
    connector_id: String,
    key_id: Option<String>,
    expires_at: i64,
    pending: Box<dyn OAuthPending>,
}

/// The authorizations waiting for their callback, by `state`.
#[derive(Default)]
pub(crate) struct PendingFlows(Mutex<HashMap<String, Flow>>);

impl PendingFlows {
    fn insert(&self, state: String, flow: Flow, now: i64) {
        let mut flows = self.0.lock().unwrap_or_else(|e| e.into_inner());
        flows.retain(|_, f| f.expires_at > now);
        while flows.len() >= MAX_PENDING {
            let oldest = flows
                .iter()
                .min_by_key(|(_, f)| f.expires_at)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(key) => flows.remove(&key),
                None => break,
            };
        }
        flows.insert(state, flow);
    }

    fn take(&self, state: &str) -> Option<Flow> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(state)
    }
}

fn external(message: String) -> EngineError {
    EngineError::Run(RunFailure::new(Code::ExternalConnector, message))
}

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

impl Engine {
    /// Starts the OAuth connection of a connector saved with `authorization_type: "oauth"`.
    /// `default_redirect` is the callback on the host the admin's request reached, when that
    /// can serve as one.
    pub async fn start_connector_oauth(
        &self,
        caller: &Caller,
        project_id: &str,
        id: &str,
        body: ConnectorOAuthStart,
        default_redirect: Option<String>,
    ) -> Result<ConnectorOAuthStarted, EngineError> {
        caller.require_admin()?;
        let record = self.connector_record(project_id, id).await?;
        if record.auth_kind != "oauth" {
            return Err(EngineError::invalid(
                "authorization_type",
                format!(
                    "connector \"{id}\" does not use OAuth: create it with \"authorization_type\": \"oauth\""
                ),
            ));
        }
        credentials::sealer(&self.core)?;
        let redirect_uri = body.redirect_uri.or(default_redirect).ok_or_else(|| {
            EngineError::invalid(
                "redirect_uri",
                format!(
                    "give redirect_uri: agentd's callback as the admin's browser reaches it, e.g. https://agentd.example.com{CALLBACK_PATH}"
                ),
            )
        })?;
        let path_ok = redirect_uri
            .split(['?', '#'])
            .next()
            .is_some_and(|base| base.ends_with(CALLBACK_PATH));
        if !path_ok || redirect_uri.len() > 2048 {
            return Err(EngineError::invalid(
                "redirect_uri",
                format!("redirect_uri must be agentd's callback URL, ending in {CALLBACK_PATH}"),
            ));
        }
        if body.client_secret.is_some() && body.client_id.is_none() {
            return Err(EngineError::invalid(
                "client_secret",
                "a client_secret needs the client_id it belongs to",
            ));
        }
        let client = OAuthClientRequest {
            redirect_uri,
            client_id: body.client_id.filter(|c| !c.is_empty()),
            client_secret: body.client_secret,
            scope: body.scope.filter(|s| !s.trim().is_empty()),
        };
        let started = self
            .core
            .mcp
            .oauth_start(&record.server_url, &client)
            .await
            .map_err(|err| {
                external(format!(
                    "connector \"{id}\": the OAuth connection could not start: {err}"
                ))
            })?;
        let now = self.core.clock.now_secs();
        let expires_at = now + PENDING_TTL_SECS;
        let state = started.pending.state().to_owned();
        self.core.oauth_pending.insert(
            state.clone(),
            Flow {
                project_id: project_id.to_owned(),
                connector_id: id.to_owned(),
                key_id: caller.key_id.clone(),
                expires_at,
                pending: started.pending,
            },
            now,
        );
        self.audit(caller, project_id, id, "oauth_started", json!({}))
            .await?;
        Ok(ConnectorOAuthStarted {
            object: "connector.oauth_authorization".to_owned(),
            connector_id: id.to_owned(),
            authorization_url: started.authorization_url,
            state,
            expires_at,
        })
    }

    /// The callback of an authorization (its `state` and the whole query string): exchanges
    /// the code and stores the grant. Returns the project and connector it connected.
    pub async fn finish_connector_oauth(
        &self,
        state: &str,
        query: &str,
    ) -> Result<(String, String), EngineError> {
        let flow = self.core.oauth_pending.take(state).ok_or_else(|| {
            EngineError::invalid(
                "state",
                "no OAuth connection waits for this state (unknown, already used, or started on another replica or before a restart): start it again",
            )
        })?;
        let now = self.core.clock.now_secs();
        if now > flow.expires_at {
            return Err(EngineError::invalid(
                "state",
                "the OAuth connection was started more than 15 minutes ago: start it again",
            ));
        }
        let (project_id, id) = (flow.project_id.as_str(), flow.connector_id.as_str());
        let (grant, tokens) = flow.pending.finish(query).await.map_err(|err| {
            EngineError::invalid(
                "code",
                format!("connector \"{id}\": the OAuth connection failed: {err}"),
            )
        })?;
        // Still there (not deleted meanwhile).
        self.connector_record(project_id, id).await?;
        let seal = |field: &str, value: &SecretString| {
            credentials::seal(&self.core, project_id, id, field, value)
        };
        let record = OAuthGrantRecord {
            project_id: project_id.to_owned(),
            connector_id: id.to_owned(),
            issuer: grant.issuer.clone(),
            token_endpoint: grant.token_endpoint,
            resource: grant.resource,
            client_id: grant.client_id,
            auth_method: grant.auth_method,
            kind: grant.kind.clone(),
            redirect_uri: grant.redirect_uri,
            scope: tokens.scope.clone().or(grant.scope),
            client_secret: grant
                .client_secret
                .as_ref()
                .map(|s| seal("oauth.client_secret", s))
                .transpose()?,
            refresh_token: tokens
                .refresh_token
                .as_ref()
                .map(|s| seal("oauth.refresh_token", s))
                .transpose()?,
            created_at: now,
            updated_at: now,
            access_token: Some(seal("oauth.access_token", &tokens.access_token)?),
            access_expires_at: tokens.expires_at,
        };
        store(&self.core)?.put_oauth_grant(&record).await?;
        let caller = Caller {
            key_id: flow.key_id.clone(),
            project_id: project_id.to_owned(),
            role: Role::Admin,
        };
        self.audit(
            &caller,
            project_id,
            id,
            "authorized",
            json!({
                "issuer": grant.issuer,
                "client": grant.kind,
                "scope": record.scope,
                "refresh_token": record.refresh_token.is_some(),
            }),
        )
        .await?;
        Ok((project_id.to_owned(), id.to_owned()))
    }
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
