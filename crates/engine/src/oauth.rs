//! The OAuth half of the MCP port: what the engine asks of the `mcp` crate to connect a saved
//! connector to an MCP server that uses the MCP authorization spec ([`crate::mcp::McpConnector`]
//! `oauth_start` and `connect_oauth`).
//!
//! - **Start**: discovery, client registration and the authorization request; the answer is
//!   the URL to send the admin's browser to and an [`OAuthPending`] to keep (by its `state`)
//!   until the callback.
//! - **Finish**: the callback's query string given to [`OAuthPending::finish`] yields the grant
//!   ([`OAuthGrantInfo`], the client secret a secret) and the first [`OAuthTokens`].
//! - **Use**: [`OAuthCredentials`] (the stored grant, its tokens opened, and an [`OAuthSink`]
//!   that seals and stores the tokens of every refresh) for each run's connection.
//!
//! Every secret is a [`SecretString`]; no `Debug` or error text holds one.

use std::fmt;
use std::sync::Arc;

use secrecy::SecretString;

/// What agentd tells the authorization server about itself when an admin starts a connection.
#[derive(Clone)]
pub struct OAuthClientRequest {
    /// agentd's callback URL (`…/v1/admin/oauth/callback`).
    pub redirect_uri: String,
    /// A client registered beforehand (else: a client ID metadata document or dynamic
    /// registration, whatever the server offers).
    pub client_id: Option<String>,
    pub client_secret: Option<SecretString>,
    /// The scopes to ask for (else the server's advertised ones).
    pub scope: Option<String>,
}

impl fmt::Debug for OAuthClientRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClientRequest")
            .field("redirect_uri", &self.redirect_uri)
            .field("client_id", &self.client_id)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// Where a connector's tokens come from: the authorization server and agentd's client there.
#[derive(Clone)]
pub struct OAuthGrantInfo {
    pub issuer: String,
    pub token_endpoint: String,
    /// The RFC 8707 resource the tokens are for.
    pub resource: String,
    pub client_id: String,
    pub client_secret: Option<SecretString>,
    /// `client_secret_basic`, `client_secret_post` or `none`.
    pub auth_method: String,
    /// `pre_registered`, `metadata_document` or `dynamic`.
    pub kind: String,
    pub redirect_uri: String,
    pub scope: Option<String>,
}

impl fmt::Debug for OAuthGrantInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthGrantInfo")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("auth_method", &self.auth_method)
            .field("kind", &self.kind)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// Tokens from the token endpoint.
#[derive(Clone)]
pub struct OAuthTokens {
    pub access_token: SecretString,
    /// Unix seconds (`None`: the server did not say).
    pub expires_at: Option<i64>,
    /// `None`: the server issued none (after a refresh: it did not rotate it).
    pub refresh_token: Option<SecretString>,
    pub scope: Option<String>,
}

impl fmt::Debug for OAuthTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthTokens")
            .field("expires_at", &self.expires_at)
            .field("refresh_token", &self.refresh_token.is_some())
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// A started authorization: where to send the browser, and what to keep for the callback.
pub struct OAuthStarted {
    pub authorization_url: String,
    pub pending: Box<dyn OAuthPending>,
}

/// An authorization waiting for its callback (holds the PKCE verifier: never printed).
#[async_trait::async_trait]
pub trait OAuthPending: Send + Sync {
    /// The `state` of the authorization request (the key of the callback).
    fn state(&self) -> &str;
    /// Checks the callback (its raw query string: `code`, `state`, `iss` or `error`) and
    /// exchanges the code. The error is a message without secrets.
    async fn finish(&self, callback_query: &str) -> Result<(OAuthGrantInfo, OAuthTokens), String>;
}

/// Where the tokens of each refresh go: the connectors side seals and stores them.
#[async_trait::async_trait]
pub trait OAuthSink: Send + Sync {
    async fn store(&self, tokens: &OAuthTokens) -> Result<(), String>;
    /// The grant gives no more tokens: an admin must authorize the connector again.
    async fn lost(&self, reason: &str);
}

/// A stored grant, opened, for one connection.
pub struct OAuthCredentials {
    pub grant: OAuthGrantInfo,
    pub refresh_token: Option<SecretString>,
    /// The stored access token and its expiry (Unix seconds), if any.
    pub access_token: Option<(SecretString, Option<i64>)>,
    pub sink: Arc<dyn OAuthSink>,
}

impl fmt::Debug for OAuthCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthCredentials")
            .field("grant", &self.grant)
            .finish_non_exhaustive()
    }
}
