//! The OAuth half of the engine's MCP port for `McpClient`: an admin's authorization
//! ([`start`], whose pending half finishes at the callback) and the token source of a stored
//! grant ([`token_source`]: [`RefreshingTokens`] with a sink that hands each refresh to the
//! engine, which seals and stores it).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use engine::mcp::McpError;
use engine::oauth::{
    OAuthClientRequest, OAuthCredentials, OAuthGrantInfo, OAuthPending, OAuthSink, OAuthStarted,
    OAuthTokens,
};

use crate::oauth::{
    Callback, ClientConfig, ClientRegistration, CredentialSink, OAuth, OAuthError, OAuthGrant,
    PendingAuthorization, PreRegisteredClient, RefreshingTokens, RegistrationKind, TokenSet,
    TokenSource,
};

fn kind_name(kind: RegistrationKind) -> &'static str {
    match kind {
        RegistrationKind::PreRegistered => "pre_registered",
        RegistrationKind::MetadataDocument => "metadata_document",
        RegistrationKind::Dynamic => "dynamic",
    }
}

fn kind_of(name: &str) -> RegistrationKind {
    match name {
        "pre_registered" => RegistrationKind::PreRegistered,
        "metadata_document" => RegistrationKind::MetadataDocument,
        _ => RegistrationKind::Dynamic,
    }
}

fn unix(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn system_time(secs: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap_or(0))
}

fn tokens_of(tokens: &TokenSet) -> OAuthTokens {
    OAuthTokens {
        access_token: tokens.access_token.clone(),
        expires_at: tokens.expires_at.map(unix),
        refresh_token: tokens.refresh_token.clone(),
        scope: tokens.scope.clone(),
    }
}

fn grant_info(grant: &OAuthGrant) -> OAuthGrantInfo {
    OAuthGrantInfo {
        issuer: grant.issuer.clone(),
        token_endpoint: grant.token_endpoint.clone(),
        resource: grant.resource.clone(),
        client_id: grant.client.client_id.clone(),
        client_secret: grant.client.client_secret.clone(),
        auth_method: grant.client.auth_method.as_str().to_owned(),
        kind: kind_name(grant.client.kind).to_owned(),
        redirect_uri: grant.client.redirect_uri.clone(),
        scope: grant.scope.clone(),
    }
}

fn grant_of(info: &OAuthGrantInfo) -> Result<OAuthGrant, OAuthError> {
    Ok(OAuthGrant {
        issuer: info.issuer.clone(),
        token_endpoint: info.token_endpoint.clone(),
        resource: info.resource.clone(),
        client: ClientRegistration {
            client_id: info.client_id.clone(),
            client_secret: info.client_secret.clone(),
            auth_method: info.auth_method.parse()?,
            kind: kind_of(&info.kind),
            redirect_uri: info.redirect_uri.clone(),
            secret_expires_at: None,
        },
        scope: info.scope.clone(),
    })
}

/// An authorization waiting for its callback.
struct Pending {
    oauth: OAuth,
    pending: PendingAuthorization,
}

#[async_trait::async_trait]
impl OAuthPending for Pending {
    fn state(&self) -> &str {
        self.pending.state()
    }

    async fn finish(&self, callback_query: &str) -> Result<(OAuthGrantInfo, OAuthTokens), String> {
        let authorized = self
            .oauth
            .finish(&self.pending, &Callback::from_query(callback_query))
            .await
            .map_err(|err| err.to_string())?;
        Ok((grant_info(&authorized.grant), tokens_of(&authorized.tokens)))
    }
}

/// Probe, discovery, registration and the authorization request.
pub(crate) async fn start(
    oauth: OAuth,
    server_url: &str,
    request: &OAuthClientRequest,
) -> Result<OAuthStarted, String> {
    let mut config = ClientConfig::new(request.redirect_uri.clone());
    if let Some(client_id) = &request.client_id {
        config.pre_registered = Some(PreRegisteredClient {
            client_id: client_id.clone(),
            client_secret: request.client_secret.clone(),
            auth_method: None,
        });
    }
    let started = oauth
        .start_with_scope(server_url, &config, request.scope.as_deref())
        .await
        .map_err(|err| err.to_string())?;
    Ok(OAuthStarted {
        authorization_url: started.url.to_string(),
        pending: Box::new(Pending {
            oauth,
            pending: started.pending,
        }),
    })
}

/// Hands the tokens of every refresh to the engine's sink.
struct Sink(Arc<dyn OAuthSink>);

#[async_trait::async_trait]
impl CredentialSink for Sink {
    async fn store(&self, tokens: &TokenSet) -> Result<(), String> {
        self.0.store(&tokens_of(tokens)).await
    }

    async fn lost(&self, reason: &OAuthError) {
        self.0.lost(&reason.to_string()).await;
    }
}

/// The tokens of a stored grant: its access token while it lasts, then refreshes.
pub(crate) fn token_source(
    oauth: OAuth,
    credentials: &OAuthCredentials,
) -> Result<Arc<dyn TokenSource>, McpError> {
    let grant = grant_of(&credentials.grant).map_err(|e| e.to_mcp())?;
    let sink: Arc<dyn CredentialSink> = Arc::new(Sink(credentials.sink.clone()));
    let tokens = match (&credentials.access_token, &credentials.refresh_token) {
        (Some((access, expires_at)), refresh) => RefreshingTokens::new(
            oauth,
            grant,
            TokenSet {
                access_token: access.clone(),
                expires_at: expires_at.map(system_time),
                refresh_token: refresh.clone(),
                scope: credentials.grant.scope.clone(),
            },
            sink,
        ),
        (None, Some(refresh)) => {
            RefreshingTokens::from_refresh_token(oauth, grant, refresh.clone(), sink)
        }
        (None, None) => {
            return Err(OAuthError::Reauthorize(
                "the stored grant holds no token: connect it again".to_owned(),
            )
            .to_mcp());
        }
    };
    Ok(Arc::new(tokens))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_kinds_round_trip() {
        for kind in [
            RegistrationKind::PreRegistered,
            RegistrationKind::MetadataDocument,
            RegistrationKind::Dynamic,
        ] {
            assert_eq!(kind_of(kind_name(kind)), kind);
        }
        assert_eq!(unix(system_time(1_700_000_000)), 1_700_000_000);
    }
}
