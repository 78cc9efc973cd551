//! OAuth for MCP servers that follow the MCP authorization spec (2025-11-25, with the
//! 2025-03-26 fallbacks): discovery, client registration, the authorization code flow with
//! PKCE, and tokens that refresh themselves.
//!
//! Every request (metadata, registration, token, the probe) goes through the guarded
//! `reqwest::Client` of the [`crate::McpClient`] that made the [`OAuth`] handle, bounded in
//! time and size; every OAuth URL must be `https` (plain `http` only on loopback, and only
//! when the guard allows loopback). Secrets (tokens, code, verifier, client secret) are
//! [`secrecy::SecretString`]s: no `Debug`, log line or error shows them.
//!
//! # The admin's authorization (two HTTP requests of an admin API)
//! 1. **Start**: [`OAuth::start`] with the MCP URL and a [`ClientConfig`] (agentd's callback
//!    URL; optionally a pre-registered client or agentd's Client ID Metadata Document URL).
//!    It probes the server (`initialize` without a token: the 401's challenge), discovers
//!    the authorization server, gets a client, and returns an [`AuthorizationRequest`]:
//!    answer the admin with `url`, keep `pending` in memory under `pending.state()` (for at
//!    most [`PENDING_AUTHORIZATION_TTL`]).
//! 2. **Callback**: the browser comes back to the callback URL with `code` and `state` (or
//!    `error`). Look up the pending authorization by `state`, then [`OAuth::finish`] with
//!    [`Callback::from_query`]: it checks state, issuer and error, exchanges the code and
//!    returns [`Authorized`]: store `grant` (plain fields, the client secret sealed) and
//!    `tokens.refresh_token` (sealed).
//!
//! # Using a connector
//! Rebuild the [`OAuthGrant`] from the store, make a [`RefreshingTokens`] (from the stored
//! refresh token, with a [`CredentialSink`] that seals and stores the tokens of each
//! refresh) and connect with [`crate::McpClient::connect_authorized`]. The MCP client asks it
//! for the bearer token of every request: it refreshes [`REFRESH_MARGIN`] before expiry, and
//! once when the server answers 401 (the request is then sent again, once). A refused
//! refresh token, or a 403 `insufficient_scope`, fails the request with a message saying the
//! connector must be authorized again (and tells the sink, [`CredentialSink::lost`]).
//! Authorizing again after a 403 (step-up): [`OAuth::start_with_scope`] with
//! [`scope::step_up`] of the granted scopes and the required ones
//! ([`OAuthError::InsufficientScope`] names them), and the connector's client as
//! `config.pre_registered` ([`ClientRegistration::to_pre_registered`]).
//!
//! # Layout (one concern per file)
//! - `challenge`: the `WWW-Authenticate` Bearer challenge ([`Challenge`]).
//! - `metadata`: RFC 9728 / RFC 8414 documents, their well-known URLs, the checks on them.
//! - `discovery`: the probe and discovery ([`Discovery`]).
//! - `scope`: scope selection, step-up, `offline_access`.
//! - `registration`: pre-registered client, Client ID Metadata Document, RFC 7591
//!   ([`ClientRegistration`], [`TokenEndpointAuth`]).
//! - `pkce`: PKCE S256 and the random `state`.
//! - `authorize`: the authorization URL, [`PendingAuthorization`], the callback checks.
//! - `token`: the token endpoint ([`TokenSet`], [`OAuthGrant`]).
//! - `source`: [`TokenSource`], what the MCP client asks for bearer tokens.
//! - `refresh`: [`RefreshingTokens`] and [`CredentialSink`].
//! - `flow`: [`OAuth`], the steps over the guarded client.
//! - `http`: the guarded, bounded requests and the https rule.
//! - `error`: [`OAuthError`].
//!
//! # Example
//! ```no_run
//! use std::sync::Arc;
//! use mcp::oauth::{Callback, ClientConfig, CredentialSink, OAuthError, RefreshingTokens, TokenSet};
//!
//! struct Store;
//! #[async_trait::async_trait]
//! impl CredentialSink for Store {
//!     async fn store(&self, tokens: &TokenSet) -> Result<(), String> {
//!         // seal tokens.refresh_token and write it
//!         Ok(())
//!     }
//! }
//!
//! # async fn run(client: mcp::McpClient, callback_query: &str) -> Result<(), OAuthError> {
//! let oauth = client.oauth();
//! let config = ClientConfig::new("https://agentd.example/v1/admin/oauth/callback");
//! let request = oauth.start("https://mcp.example.com/mcp", &config).await?;
//! // ... the admin opens request.url; the callback arrives with ?code=...&state=...
//! let authorized = oauth.finish(&request.pending, &Callback::from_query(callback_query)).await?;
//! // ... store authorized.grant and authorized.tokens.refresh_token (sealed); later:
//! let tokens = RefreshingTokens::new(oauth, authorized.grant, authorized.tokens, Arc::new(Store));
//! # let _ = tokens;
//! # Ok(())
//! # }
//! ```

mod authorize;
mod challenge;
mod discovery;
mod error;
mod flow;
pub(crate) mod http;
mod metadata;
mod pkce;
mod refresh;
mod registration;
pub mod scope;
mod source;
mod token;

pub use authorize::{
    AuthorizationRequest, Callback, PENDING_AUTHORIZATION_TTL, PendingAuthorization,
};
pub use challenge::Challenge;
pub use discovery::{Discovery, DiscoveryMode};
pub use error::OAuthError;
pub use flow::{Authorized, OAuth};
pub use metadata::{
    AuthorizationServerMetadata, ProtectedResourceMetadata, authorization_server_candidates,
    canonical_resource, protected_resource_candidates,
};
pub use refresh::{CredentialSink, REFRESH_MARGIN, RefreshingTokens};
pub use registration::{
    ClientConfig, ClientRegistration, PreRegisteredClient, RegistrationKind, TokenEndpointAuth,
    client_metadata_document,
};
pub use source::{Rejection, TokenSource};
pub use token::{OAuthGrant, TokenSet};

/// The secret types of this API, re-exported so callers use the same `secrecy` version.
pub use secrecy::{ExposeSecret, SecretString};
