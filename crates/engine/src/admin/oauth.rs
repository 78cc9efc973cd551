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
//! - **Use** (`oauth_grant.rs`): the grant opened for one connection, with a sink that seals
//!   and stores the tokens of every refresh (and marks the connector's status when the grant
//!   is lost).

use protocol::admin::{ConnectorOAuthStart, ConnectorOAuthStarted};
use secrecy::SecretString;
use serde_json::json;

use super::{Caller, credentials, store};
use crate::admin_store::{OAuthGrantRecord, Role};
use crate::code::Code;
use crate::engine::Engine;
use crate::error::{EngineError, RunFailure};
use crate::oauth::OAuthClientRequest;
use crate::oauth_pending::Flow;

/// How long a started authorization waits for its callback.
pub const PENDING_TTL_SECS: i64 = 15 * 60;

pub use crate::oauth_pending::MAX_PENDING;

/// The path of the callback route.
pub const CALLBACK_PATH: &str = "/v1/admin/oauth/callback";

fn external(message: String) -> EngineError {
    EngineError::Run(RunFailure::new(Code::ExternalConnector, message))
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
