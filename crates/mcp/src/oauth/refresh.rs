//! [`RefreshingTokens`]: the [`TokenSource`] of a stored grant. It refreshes the access
//! token shortly before it expires and once when the MCP server answers 401, hands every
//! new token set to a [`CredentialSink`] (the caller seals and stores the refresh token,
//! which the server may have rotated), and says plainly when an admin must authorize again.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use secrecy::{ExposeSecret, SecretString};

use super::error::OAuthError;
use super::flow::OAuth;
use super::source::{Rejection, TokenSource};
use super::token::{OAuthGrant, TokenSet};

/// A token is refreshed this long before it expires (or at half its lifetime, if shorter).
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// Where refreshed tokens go. The connectors side implements it: seal the refresh token and
/// store it (and, if it likes, the access token and its expiry).
#[async_trait::async_trait]
pub trait CredentialSink: Send + Sync {
    /// Called after every successful refresh, before the new access token is used.
    /// `tokens.refresh_token` is the refresh token to keep from now on. An error is logged
    /// (without its text reaching the MCP request) and the request goes on; the next
    /// refresh tries to store again.
    async fn store(&self, tokens: &TokenSet) -> Result<(), String>;

    /// The grant can give no more tokens (the refresh token was refused, or there is none):
    /// the connector needs an admin to authorize it again. Called once.
    async fn lost(&self, _reason: &OAuthError) {}
}

/// The [`TokenSource`] of one connector's grant.
pub struct RefreshingTokens {
    oauth: OAuth,
    grant: OAuthGrant,
    sink: Arc<dyn CredentialSink>,
    state: tokio::sync::Mutex<State>,
}

impl std::fmt::Debug for RefreshingTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RefreshingTokens")
            .field("grant", &self.grant)
            .finish_non_exhaustive()
    }
}

struct State {
    access: Option<SecretString>,
    /// When to refresh before using `access` again.
    refresh_at: Option<SystemTime>,
    refresh_token: Option<SecretString>,
    scope: Option<String>,
    /// Set once the grant is lost: every later call fails the same way without a request.
    lost: Option<OAuthError>,
}

impl State {
    fn take(&mut self, tokens: &TokenSet, now: SystemTime) {
        self.access = Some(tokens.access_token.clone());
        self.refresh_at = tokens.expires_at.map(|at| refresh_time(now, at));
        if let Some(refresh) = &tokens.refresh_token {
            self.refresh_token = Some(refresh.clone());
        }
        if tokens.scope.is_some() {
            self.scope = tokens.scope.clone();
        }
    }

    fn fresh(&self, now: SystemTime) -> Option<SecretString> {
        let access = self.access.as_ref()?;
        match self.refresh_at {
            Some(at) if now >= at => None,
            _ => Some(access.clone()),
        }
    }
}

/// `expires_at` less [`REFRESH_MARGIN`], or less half the lifetime for a short-lived token.
fn refresh_time(now: SystemTime, expires_at: SystemTime) -> SystemTime {
    let lifetime = expires_at.duration_since(now).unwrap_or_default();
    expires_at
        .checked_sub(REFRESH_MARGIN.min(lifetime / 2))
        .unwrap_or(expires_at)
}

impl RefreshingTokens {
    /// From a full token set (e.g. right after the authorization, or an access token the
    /// caller stored with its expiry).
    pub fn new(
        oauth: OAuth,
        grant: OAuthGrant,
        tokens: TokenSet,
        sink: Arc<dyn CredentialSink>,
    ) -> Self {
        let now = oauth.now();
        let mut state = State {
            access: None,
            refresh_at: None,
            refresh_token: None,
            scope: grant.scope.clone(),
            lost: None,
        };
        state.take(&tokens, now);
        Self {
            oauth,
            grant,
            sink,
            state: tokio::sync::Mutex::new(state),
        }
    }

    /// From a stored refresh token alone: the first request refreshes.
    pub fn from_refresh_token(
        oauth: OAuth,
        grant: OAuthGrant,
        refresh_token: SecretString,
        sink: Arc<dyn CredentialSink>,
    ) -> Self {
        let state = State {
            access: None,
            refresh_at: None,
            refresh_token: Some(refresh_token),
            scope: grant.scope.clone(),
            lost: None,
        };
        Self {
            oauth,
            grant,
            sink,
            state: tokio::sync::Mutex::new(state),
        }
    }

    /// Refreshes (the state is locked by the caller).
    async fn refresh(&self, state: &mut State) -> Result<SecretString, OAuthError> {
        if let Some(lost) = &state.lost {
            return Err(lost.clone());
        }
        let Some(refresh_token) = state.refresh_token.clone() else {
            return Err(self
                .lose(
                    state,
                    OAuthError::Reauthorize(
                        "the access token expired and the authorization server issued no \
                         refresh token"
                            .to_owned(),
                    ),
                )
                .await);
        };
        let result = self
            .oauth
            .refresh(&self.grant, &refresh_token, state.scope.as_deref())
            .await;
        match result {
            Ok(tokens) => {
                let now = self.oauth.now();
                state.take(&tokens, now);
                if let Err(reason) = self.sink.store(&tokens).await {
                    tracing::warn!(issuer = %self.grant.issuer, %reason, "could not store refreshed OAuth tokens");
                }
                tracing::debug!(issuer = %self.grant.issuer, "refreshed the access token");
                Ok(tokens.access_token)
            }
            Err(err) if err.needs_reauthorization() => {
                let err = OAuthError::Reauthorize(err.to_string());
                Err(self.lose(state, err).await)
            }
            Err(err) => {
                tracing::debug!(issuer = %self.grant.issuer, %err, "refresh failed");
                Err(err)
            }
        }
    }

    async fn lose(&self, state: &mut State, err: OAuthError) -> OAuthError {
        state.access = None;
        state.lost = Some(err.clone());
        tracing::warn!(issuer = %self.grant.issuer, %err, "OAuth grant lost");
        self.sink.lost(&err).await;
        err
    }
}

#[async_trait::async_trait]
impl TokenSource for RefreshingTokens {
    async fn access_token(&self) -> Result<Option<SecretString>, OAuthError> {
        let mut state = self.state.lock().await;
        if let Some(lost) = &state.lost {
            return Err(lost.clone());
        }
        if let Some(token) = state.fresh(self.oauth.now()) {
            return Ok(Some(token));
        }
        self.refresh(&mut state).await.map(Some)
    }

    async fn rejected(&self, rejection: &Rejection) -> Result<Option<SecretString>, OAuthError> {
        match rejection.status {
            401 => {
                let mut state = self.state.lock().await;
                // Another request refreshed since this one was sent: use its token.
                if let (Some(current), Some(sent)) = (&state.access, &rejection.token)
                    && current.expose_secret() != sent.expose_secret()
                {
                    return Ok(Some(current.clone()));
                }
                self.refresh(&mut state).await.map(Some)
            }
            403 if rejection.challenge.is_insufficient_scope() => {
                Err(OAuthError::InsufficientScope {
                    scope: rejection
                        .challenge
                        .scope()
                        .unwrap_or("(not named by the server)")
                        .to_owned(),
                })
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_a_minute_early_or_at_half_life() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        assert_eq!(
            refresh_time(now, now + Duration::from_secs(3600)),
            now + Duration::from_secs(3540)
        );
        assert_eq!(
            refresh_time(now, now + Duration::from_secs(30)),
            now + Duration::from_secs(15)
        );
        assert_eq!(refresh_time(now, now), now);
        assert_eq!(
            refresh_time(now, now - Duration::from_secs(5)),
            now - Duration::from_secs(5)
        );
    }
}
