//! [`OAuth`]: the steps of the flow as methods over the MCP client's guarded HTTP client
//! (discovery, registration, the authorization request, the code exchange, refreshes),
//! and [`OAuth::start`]/[`OAuth::finish`], the two halves an admin API calls.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use secrecy::SecretString;

use super::authorize::{self, AuthorizationRequest, Callback, PendingAuthorization};
use super::challenge::Challenge;
use super::discovery::{self, Discovery, DiscoveryMode};
use super::error::OAuthError;
use super::http::OAuthHttp;
use super::registration::{self, ClientConfig, ClientRegistration};
use super::token::{self, OAuthGrant, TokenSet};

type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// The OAuth steps, over the guarded client of the [`crate::McpClient`] that made it
/// ([`crate::McpClient::oauth`]). Cheap to clone.
#[derive(Clone)]
pub struct OAuth {
    http: OAuthHttp,
    clock: Clock,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("timeout", &self.http.timeout)
            .field("max_bytes", &self.http.max_bytes)
            .finish_non_exhaustive()
    }
}

/// The result of a completed authorization: what to store.
#[derive(Debug)]
pub struct Authorized {
    /// Issuer, token endpoint, resource, client (its secret to seal), scope.
    pub grant: OAuthGrant,
    /// The tokens (the refresh token to seal).
    pub tokens: TokenSet,
}

impl OAuth {
    pub(crate) fn new(http: OAuthHttp) -> Self {
        Self {
            http,
            clock: Arc::new(SystemTime::now),
        }
    }

    /// The same with another clock (tests: token expiry without waiting).
    pub fn with_clock(self, clock: impl Fn() -> SystemTime + Send + Sync + 'static) -> Self {
        Self {
            clock: Arc::new(clock),
            ..self
        }
    }

    /// The time by this handle's clock.
    pub fn now(&self) -> SystemTime {
        (self.clock)()
    }

    /// Sends an unauthenticated `initialize` to the MCP endpoint and returns the challenge
    /// of its 401 (`None` when it answered anything else).
    pub async fn probe(&self, server_url: &str) -> Result<Option<Challenge>, OAuthError> {
        let url = self
            .http
            .check_secure(server_url, "an MCP server that uses OAuth")?;
        discovery::probe(&self.http, &url).await
    }

    /// Finds the authorization server of an MCP endpoint, starting from the challenge of its
    /// 401 when there was one: protected resource metadata (the challenge's URL, then the
    /// well-known ones), then the authorization server's RFC 8414 or OpenID metadata, else
    /// the MCP 2025-03-26 fallbacks (see [`DiscoveryMode`]).
    pub async fn discover(
        &self,
        server_url: &str,
        challenge: Option<&Challenge>,
    ) -> Result<Discovery, OAuthError> {
        let url = self
            .http
            .check_secure(server_url, "an MCP server that uses OAuth")?;
        discovery::discover(&self.http, &url, challenge).await
    }

    /// A client at the discovered authorization server: pre-registered, a Client ID Metadata
    /// Document, or a dynamic registration (in that order).
    pub async fn register(
        &self,
        discovery: &Discovery,
        config: &ClientConfig,
    ) -> Result<ClientRegistration, OAuthError> {
        registration::register(&self.http, discovery, config).await
    }

    /// The authorization request for `client`, asking for `scope` (usually
    /// [`Discovery::scope`]; `None` omits the parameter).
    pub fn authorization_request(
        &self,
        discovery: &Discovery,
        client: ClientRegistration,
        scope: Option<String>,
    ) -> Result<AuthorizationRequest, OAuthError> {
        authorize::build(&self.http, discovery, client, scope, self.now())
    }

    /// The first half of an admin's authorization: probe, discover, register, and build the
    /// authorization request with the scopes of [`Discovery::scope`]. A server that neither
    /// answers the probe with 401 nor publishes any OAuth metadata is refused (it does not
    /// use OAuth). Send the admin's
    /// browser to `url`; keep `pending` (by its `state`) for [`OAuth::finish`].
    pub async fn start(
        &self,
        server_url: &str,
        config: &ClientConfig,
    ) -> Result<AuthorizationRequest, OAuthError> {
        self.start_with_scope(server_url, config, None).await
    }

    /// [`OAuth::start`] asking for `scope` instead of the spec's default (plus
    /// `offline_access` when the server lists it): a re-authorization after a 403
    /// `insufficient_scope` asks for [`super::scope::step_up`] of the granted and the
    /// required scopes. To keep the connector's client, pass it as
    /// `config.pre_registered` ([`ClientRegistration::to_pre_registered`]).
    pub async fn start_with_scope(
        &self,
        server_url: &str,
        config: &ClientConfig,
        scope: Option<&str>,
    ) -> Result<AuthorizationRequest, OAuthError> {
        let challenge = self.probe(server_url).await?;
        let discovery = self.discover(server_url, challenge.as_ref()).await?;
        if challenge.is_none() && discovery.mode == DiscoveryMode::LegacyDefaults {
            // No 401 and no metadata of any kind: nothing says this server uses OAuth, and
            // registering at made-up endpoints would only fail less clearly.
            return Err(OAuthError::Discovery(
                "the MCP server answered initialize without asking for authorization and \
                 publishes no OAuth metadata: it does not use OAuth"
                    .to_owned(),
            ));
        }
        let client = self.register(&discovery, config).await?;
        let scope = match scope {
            Some(scope) => super::scope::with_offline_access(
                Some(super::scope::union(scope, "")),
                discovery.metadata.lists_scope("offline_access"),
            ),
            None => discovery.scope(),
        };
        self.authorization_request(&discovery, client, scope)
    }

    /// The second half: checks the callback against the pending authorization (state,
    /// issuer, error) and exchanges its code for tokens.
    pub async fn finish(
        &self,
        pending: &PendingAuthorization,
        callback: &Callback,
    ) -> Result<Authorized, OAuthError> {
        let code = authorize::check_callback(pending, callback, self.now())?;
        let grant = pending.grant().clone();
        let tokens =
            token::exchange_code(&self.http, &grant, &code, pending.verifier(), self.now()).await?;
        Ok(Authorized { grant, tokens })
    }

    /// A refresh with `refresh_token` (RFC 6749 §6); the result keeps the old refresh token
    /// when the server did not rotate it.
    pub async fn refresh(
        &self,
        grant: &OAuthGrant,
        refresh_token: &SecretString,
        previous_scope: Option<&str>,
    ) -> Result<TokenSet, OAuthError> {
        token::refresh(&self.http, grant, refresh_token, previous_scope, self.now()).await
    }
}
