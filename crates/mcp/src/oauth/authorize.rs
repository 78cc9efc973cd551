//! The authorization request (RFC 6749 §4.1.1 with PKCE S256, `state` and the RFC 8707
//! `resource`), the pending authorization it leaves behind, and the checks of the callback
//! (state, RFC 9207 `iss`, error answers) before its code may be exchanged.

use std::fmt;
use std::time::{Duration, SystemTime};

use secrecy::{ExposeSecret, SecretString};
use url::Url;

use super::discovery::Discovery;
use super::error::OAuthError;
use super::http::OAuthHttp;
use super::pkce::{Pkce, random_token};
use super::registration::ClientRegistration;
use super::token::OAuthGrant;

/// How long a pending authorization may wait for its callback.
pub const PENDING_AUTHORIZATION_TTL: Duration = Duration::from_secs(15 * 60);

/// An authorization waiting for its callback. Keep it (in memory, by [`Self::state`])
/// from the start of the flow to the callback; it holds the PKCE verifier, which `Debug`
/// does not show.
pub struct PendingAuthorization {
    state: String,
    verifier: SecretString,
    grant: OAuthGrant,
    /// RFC 9207: the `iss` the callback must carry, when the server sends one.
    expected_issuer: Option<String>,
    created_at: SystemTime,
}

impl fmt::Debug for PendingAuthorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingAuthorization")
            .field("grant", &self.grant)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

impl PendingAuthorization {
    /// The `state` of the authorization request: the key to find this pending
    /// authorization again when the callback arrives.
    pub fn state(&self) -> &str {
        &self.state
    }

    /// What the tokens will be used with: issuer, token endpoint, resource, client, scope.
    pub fn grant(&self) -> &OAuthGrant {
        &self.grant
    }

    pub fn created_at(&self) -> SystemTime {
        self.created_at
    }

    /// Whether it waited longer than [`PENDING_AUTHORIZATION_TTL`] at `now`.
    pub fn expired(&self, now: SystemTime) -> bool {
        now.duration_since(self.created_at)
            .is_ok_and(|age| age > PENDING_AUTHORIZATION_TTL)
    }

    pub(crate) fn verifier(&self) -> &SecretString {
        &self.verifier
    }
}

/// Where to send the admin's browser, and what to keep until the callback.
#[derive(Debug)]
pub struct AuthorizationRequest {
    /// The authorization endpoint with every parameter.
    pub url: Url,
    pub pending: PendingAuthorization,
}

/// Builds the authorization request for `client` at the discovered server.
pub(crate) fn build(
    http: &OAuthHttp,
    discovery: &Discovery,
    client: ClientRegistration,
    scope: Option<String>,
    now: SystemTime,
) -> Result<AuthorizationRequest, OAuthError> {
    let metadata = &discovery.metadata;
    let mut url = http.check_secure(
        &metadata.authorization_endpoint,
        "the authorization endpoint",
    )?;
    let pkce = Pkce::new()?;
    let state = random_token()?;
    let scope = scope.filter(|s| !s.trim().is_empty());
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &client.client_id)
            .append_pair("redirect_uri", &client.redirect_uri)
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &state);
        if let Some(scope) = &scope {
            query.append_pair("scope", scope);
        }
        query.append_pair("resource", &discovery.resource);
    }
    Ok(AuthorizationRequest {
        url,
        pending: PendingAuthorization {
            state,
            verifier: pkce.verifier,
            grant: OAuthGrant {
                issuer: metadata.issuer.clone(),
                token_endpoint: metadata.token_endpoint.clone(),
                resource: discovery.resource.clone(),
                client,
                scope,
            },
            expected_issuer: metadata
                .authorization_response_iss_parameter_supported
                .then(|| metadata.issuer.clone()),
            created_at: now,
        },
    })
}

/// The parameters of the request that reached the redirect URI.
pub struct Callback {
    pub code: Option<SecretString>,
    pub state: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
    /// RFC 9207.
    pub iss: Option<String>,
}

impl fmt::Debug for Callback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Callback")
            .field("code", &self.code.as_ref().map(|_| "[REDACTED]"))
            .field("error", &self.error)
            .field("iss", &self.iss)
            .finish_non_exhaustive()
    }
}

impl Callback {
    /// From the query string of the callback request (`code=...&state=...`).
    pub fn from_query(query: &str) -> Callback {
        let mut callback = Callback {
            code: None,
            state: None,
            error: None,
            error_description: None,
            iss: None,
        };
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            let value = value.into_owned();
            match key.as_ref() {
                "code" if callback.code.is_none() => {
                    callback.code = Some(SecretString::from(value));
                }
                "state" => {
                    callback.state.get_or_insert(value);
                }
                "error" => {
                    callback.error.get_or_insert(value);
                }
                "error_description" => {
                    callback.error_description.get_or_insert(value);
                }
                "iss" => {
                    callback.iss.get_or_insert(value);
                }
                _ => {}
            }
        }
        callback
    }

    /// From the full URL the authorization server redirected to.
    pub fn from_url(url: &Url) -> Callback {
        Callback::from_query(url.query().unwrap_or_default())
    }
}

/// The code of a callback that belongs to `pending`: the state matches, the issuer (when the
/// server sends one) is the expected one, the server sent no error, and the pending
/// authorization has not expired.
pub(crate) fn check_callback(
    pending: &PendingAuthorization,
    callback: &Callback,
    now: SystemTime,
) -> Result<SecretString, OAuthError> {
    let state_matches = callback
        .state
        .as_deref()
        .is_some_and(|state| constant_time_eq(state.as_bytes(), pending.state.as_bytes()));
    if !state_matches {
        return Err(OAuthError::Callback(
            "its state does not match the authorization that was started".to_owned(),
        ));
    }
    if pending.expired(now) {
        return Err(OAuthError::Callback(
            "the authorization was started too long ago; start it again".to_owned(),
        ));
    }
    if let Some(error) = &callback.error {
        return Err(OAuthError::Denied {
            error: printable(error, 64),
            description: callback
                .error_description
                .as_deref()
                .map(|d| printable(d, 200)),
        });
    }
    if let Some(expected) = &pending.expected_issuer {
        match callback.iss.as_deref() {
            Some(iss) if iss == expected => {}
            Some(_) => {
                return Err(OAuthError::Callback(
                    "it comes from another authorization server (iss)".to_owned(),
                ));
            }
            None => {
                return Err(OAuthError::Callback(
                    "it lacks the iss parameter its authorization server promised".to_owned(),
                ));
            }
        }
    }
    match &callback.code {
        Some(code) if !code.expose_secret().is_empty() => Ok(code.clone()),
        _ => Err(OAuthError::Callback("it carries no code".to_owned())),
    }
}

/// A server-supplied text, visible characters only, cut to `max` characters.
fn printable(text: &str, max: usize) -> String {
    text.chars().filter(|c| !c.is_control()).take(max).collect()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::challenge::Challenge;
    use crate::oauth::discovery::DiscoveryMode;
    use crate::oauth::metadata::AuthorizationServerMetadata;
    use crate::oauth::pkce::s256;
    use crate::oauth::registration::{RegistrationKind, TokenEndpointAuth};

    fn http() -> OAuthHttp {
        crate::oauth::http::test_http(&[])
    }

    fn discovery(iss_supported: bool) -> Discovery {
        Discovery {
            server: Url::parse("https://m.example/mcp").unwrap(),
            resource: "https://m.example/mcp".into(),
            protected_resource: None,
            metadata: AuthorizationServerMetadata {
                issuer: "https://a.example".into(),
                authorization_endpoint: "https://a.example/authorize?tenant=t1".into(),
                token_endpoint: "https://a.example/token".into(),
                registration_endpoint: None,
                scopes_supported: None,
                code_challenge_methods_supported: Some(vec!["S256".into()]),
                token_endpoint_auth_methods_supported: None,
                client_id_metadata_document_supported: false,
                authorization_response_iss_parameter_supported: iss_supported,
            },
            challenge: Challenge::default(),
            mode: DiscoveryMode::ProtectedResource,
        }
    }

    fn client() -> ClientRegistration {
        ClientRegistration {
            client_id: "client 1".into(),
            client_secret: Some(SecretString::from("client-secret-1")),
            auth_method: TokenEndpointAuth::ClientSecretBasic,
            kind: RegistrationKind::Dynamic,
            redirect_uri: "https://agentd.example/cb".into(),
            secret_expires_at: None,
        }
    }

    fn request(scope: Option<&str>, iss: bool) -> AuthorizationRequest {
        build(
            &http(),
            &discovery(iss),
            client(),
            scope.map(str::to_owned),
            SystemTime::UNIX_EPOCH,
        )
        .unwrap()
    }

    fn param(url: &Url, name: &str) -> Option<String> {
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }

    #[test]
    fn the_url_carries_pkce_state_scope_and_resource() {
        let req = request(Some("mcp:basic offline_access"), false);
        let url = &req.url;
        assert_eq!(url.path(), "/authorize");
        assert_eq!(param(url, "tenant").as_deref(), Some("t1"));
        assert_eq!(param(url, "response_type").as_deref(), Some("code"));
        assert_eq!(param(url, "client_id").as_deref(), Some("client 1"));
        assert_eq!(
            param(url, "redirect_uri").as_deref(),
            Some("https://agentd.example/cb")
        );
        assert_eq!(param(url, "code_challenge_method").as_deref(), Some("S256"));
        assert_eq!(
            param(url, "code_challenge"),
            Some(s256(req.pending.verifier().expose_secret()))
        );
        assert_eq!(param(url, "state").as_deref(), Some(req.pending.state()));
        assert_eq!(
            param(url, "scope").as_deref(),
            Some("mcp:basic offline_access")
        );
        assert_eq!(
            param(url, "resource").as_deref(),
            Some("https://m.example/mcp")
        );
        // Nothing secret in the URL or in Debug.
        let verifier = req.pending.verifier().expose_secret().to_owned();
        assert!(!url.as_str().contains(&verifier));
        assert!(!url.as_str().contains("client-secret-1"));
        let debug = format!("{req:?}");
        assert!(
            !debug.contains(&verifier) && !debug.contains("client-secret-1"),
            "{debug}"
        );
        let pending = format!("{:?}", req.pending);
        assert!(!pending.contains(req.pending.state()), "{pending}");
        // No scope: no parameter.
        assert_eq!(param(&request(None, false).url, "scope"), None);
        assert_ne!(request(None, false).pending.state(), req.pending.state());
    }

    #[test]
    fn the_callback_must_match_the_pending_authorization() {
        let req = request(None, false);
        let state = req.pending.state().to_owned();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(60);
        let ok = Callback::from_query(&format!("code=the-code&state={state}"));
        assert_eq!(
            check_callback(&req.pending, &ok, now)
                .unwrap()
                .expose_secret(),
            "the-code"
        );
        let wrong = Callback::from_query("code=the-code&state=forged");
        assert!(matches!(
            check_callback(&req.pending, &wrong, now),
            Err(OAuthError::Callback(_))
        ));
        let missing = Callback::from_query("code=the-code");
        assert!(check_callback(&req.pending, &missing, now).is_err());
        let denied = Callback::from_query(&format!(
            "error=access_denied&error_description=The+user+said+no&state={state}"
        ));
        assert_eq!(
            check_callback(&req.pending, &denied, now)
                .unwrap_err()
                .to_string(),
            "the authorization was refused: access_denied (The user said no)"
        );
        let no_code = Callback::from_query(&format!("state={state}"));
        assert!(check_callback(&req.pending, &no_code, now).is_err());
        let late = now + PENDING_AUTHORIZATION_TTL;
        assert!(check_callback(&req.pending, &ok, late).is_err());
        assert!(!format!("{ok:?}").contains("the-code"));
    }

    #[test]
    fn rfc_9207_issuer_is_checked_when_promised() {
        let req = request(None, true);
        let state = req.pending.state().to_owned();
        let now = SystemTime::UNIX_EPOCH;
        let good =
            Callback::from_query(&format!("code=c&state={state}&iss=https%3A%2F%2Fa.example"));
        assert!(check_callback(&req.pending, &good, now).is_ok());
        let other = Callback::from_query(&format!("code=c&state={state}&iss=https%3A%2F%2Fevil"));
        assert!(check_callback(&req.pending, &other, now).is_err());
        let none = Callback::from_query(&format!("code=c&state={state}"));
        assert!(check_callback(&req.pending, &none, now).is_err());
    }
}
