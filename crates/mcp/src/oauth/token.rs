//! The token endpoint (RFC 6749 §3.2, §4.1.3, §6): the authorization code exchange (with the
//! PKCE verifier and the RFC 8707 `resource`), refreshes, client authentication, and
//! [`TokenSet`], the tokens held in types that never print.

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Deserializer};

use super::error::OAuthError;
use super::http::{OAuthHttp, endpoint_error, host, parse_json};
use super::registration::{ClientRegistration, TokenEndpointAuth};
use crate::errors::Redactor;

/// What a connector keeps, besides its tokens, to use and refresh them: the token endpoint,
/// the resource the tokens are for, and the client (its secret sealed by the caller).
#[derive(Debug, Clone)]
pub struct OAuthGrant {
    /// The authorization server's issuer.
    pub issuer: String,
    pub token_endpoint: String,
    /// The RFC 8707 `resource` sent with every token request.
    pub resource: String,
    pub client: ClientRegistration,
    /// The scopes that were asked for.
    pub scope: Option<String>,
}

/// Tokens from the token endpoint. The secrets are [`SecretString`]s: `Debug` shows
/// `[REDACTED]`.
#[derive(Debug, Clone)]
pub struct TokenSet {
    pub access_token: SecretString,
    /// When the access token expires, if the server said (`expires_in`).
    pub expires_at: Option<SystemTime>,
    /// The refresh token, when the server issued one. After a refresh it is the new one
    /// (or the old one again when the server did not rotate it).
    pub refresh_token: Option<SecretString>,
    /// The scopes granted (the server's `scope`, else the ones asked for).
    pub scope: Option<String>,
}

/// RFC 6749 §5.1.
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default, deserialize_with = "lenient_seconds")]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

/// `expires_in` as a number, or (as some servers send it) a string of digits.
fn lenient_seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Seconds {
        Int(u64),
        Float(f64),
        Text(String),
    }
    Ok(match Option::<Seconds>::deserialize(d)? {
        Some(Seconds::Int(n)) => Some(n),
        Some(Seconds::Float(f)) if f.is_finite() && f >= 0.0 => Some(f as u64),
        Some(Seconds::Text(t)) => t.trim().parse().ok(),
        _ => None,
    })
}

/// The code exchange of an authorization (RFC 6749 §4.1.3 with RFC 7636 and RFC 8707).
pub(crate) async fn exchange_code(
    http: &OAuthHttp,
    grant: &OAuthGrant,
    code: &SecretString,
    verifier: &SecretString,
    now: SystemTime,
) -> Result<TokenSet, OAuthError> {
    let form = vec![
        ("grant_type", "authorization_code".to_owned()),
        ("code", code.expose_secret().to_owned()),
        ("redirect_uri", grant.client.redirect_uri.clone()),
        ("code_verifier", verifier.expose_secret().to_owned()),
        ("resource", grant.resource.clone()),
    ];
    let secrets = [code.expose_secret(), verifier.expose_secret()];
    let tokens = request(http, grant, form, &secrets, now).await?;
    Ok(TokenSet {
        scope: tokens.scope.or_else(|| grant.scope.clone()),
        ..tokens
    })
}

/// A refresh (RFC 6749 §6). A server that does not rotate the refresh token leaves the old
/// one in the result; one that does not name the scopes leaves `previous_scope`.
pub(crate) async fn refresh(
    http: &OAuthHttp,
    grant: &OAuthGrant,
    refresh_token: &SecretString,
    previous_scope: Option<&str>,
    now: SystemTime,
) -> Result<TokenSet, OAuthError> {
    let form = vec![
        ("grant_type", "refresh_token".to_owned()),
        ("refresh_token", refresh_token.expose_secret().to_owned()),
        ("resource", grant.resource.clone()),
    ];
    let tokens = request(http, grant, form, &[refresh_token.expose_secret()], now).await?;
    Ok(TokenSet {
        refresh_token: tokens.refresh_token.or_else(|| Some(refresh_token.clone())),
        scope: tokens
            .scope
            .or_else(|| previous_scope.map(str::to_owned))
            .or_else(|| grant.scope.clone()),
        ..tokens
    })
}

/// One token request with the client's authentication.
async fn request(
    http: &OAuthHttp,
    grant: &OAuthGrant,
    mut form: Vec<(&'static str, String)>,
    secrets: &[&str],
    now: SystemTime,
) -> Result<TokenSet, OAuthError> {
    let url = http.check_secure(&grant.token_endpoint, "the token endpoint")?;
    let what = format!("the token endpoint of {}", host(&url));
    let client = &grant.client;
    let secret = client.client_secret.as_ref().map(|s| s.expose_secret());
    let mut request = http.client.post(url.clone());
    // RFC 6749 §3.2.1 lets a client name itself with `client_id` whatever its
    // authentication; some servers (the official Python SDK's) require it even with Basic.
    form.push(("client_id", client.client_id.clone()));
    match client.auth_method {
        TokenEndpointAuth::ClientSecretBasic => {
            let Some(secret) = secret else {
                return Err(OAuthError::Invalid(
                    "client_secret_basic needs a client secret, and there is none".to_owned(),
                ));
            };
            request = request.header(AUTHORIZATION, basic_auth(&client.client_id, secret)?);
        }
        TokenEndpointAuth::ClientSecretPost => {
            let Some(secret) = secret else {
                return Err(OAuthError::Invalid(
                    "client_secret_post needs a client secret, and there is none".to_owned(),
                ));
            };
            form.push(("client_secret", secret.to_owned()));
        }
        TokenEndpointAuth::None => {}
    }
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
        .finish();
    let request = request
        .header(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        )
        .body(body);
    let answer = http.post(request, &url, &what).await?;
    let redactor = Redactor::new(secrets.iter().copied().chain(secret));
    if answer.status != 200 {
        return Err(endpoint_error(&answer, &what, &redactor));
    }
    let tokens: TokenAnswer = parse_json(&answer.body, &what)?;
    if tokens.access_token.is_empty() {
        return Err(OAuthError::Invalid(format!(
            "{what} answered without an access token"
        )));
    }
    if let Some(kind) = &tokens.token_type
        && !kind.eq_ignore_ascii_case("bearer")
    {
        return Err(OAuthError::Invalid(format!(
            "{what} issued a \"{}\" token; agentd sends bearer tokens only",
            redactor.clean(kind)
        )));
    }
    tracing::debug!(host = %host(&url), expires_in = ?tokens.expires_in, rotated = tokens.refresh_token.is_some(), "token endpoint answered");
    Ok(TokenSet {
        access_token: SecretString::from(tokens.access_token),
        expires_at: tokens
            .expires_in
            .and_then(|s| now.checked_add(Duration::from_secs(s))),
        refresh_token: tokens
            .refresh_token
            .filter(|t| !t.is_empty())
            .map(SecretString::from),
        scope: tokens.scope.filter(|s| !s.trim().is_empty()),
    })
}

/// RFC 6749 §2.3.1: HTTP Basic over the form-urlencoded client id and secret.
fn basic_auth(client_id: &str, secret: &str) -> Result<HeaderValue, OAuthError> {
    let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let credentials = STANDARD.encode(format!("{}:{}", encode(client_id), encode(secret)));
    let mut value = HeaderValue::from_str(&format!("Basic {credentials}"))
        .map_err(|_| OAuthError::Invalid("the client credentials are not valid".to_owned()))?;
    value.set_sensitive(true);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_auth_encodes_id_and_secret_as_rfc_6749_says() {
        let value = basic_auth("my client", "p@ss:word").unwrap();
        assert!(value.is_sensitive());
        let encoded = value.to_str().unwrap().strip_prefix("Basic ").unwrap();
        let decoded = String::from_utf8(STANDARD.decode(encoded).unwrap()).unwrap();
        assert_eq!(decoded, "my+client:p%40ss%3Aword");
    }

    #[test]
    fn token_answers_accept_string_and_float_lifetimes() {
        let parse = |json: &str| {
            serde_json::from_str::<TokenAnswer>(json)
                .unwrap()
                .expires_in
        };
        assert_eq!(
            parse(r#"{"access_token":"a","expires_in":3600}"#),
            Some(3600)
        );
        assert_eq!(
            parse(r#"{"access_token":"a","expires_in":"3600"}"#),
            Some(3600)
        );
        assert_eq!(parse(r#"{"access_token":"a","expires_in":59.9}"#), Some(59));
        assert_eq!(parse(r#"{"access_token":"a","expires_in":null}"#), None);
        assert_eq!(parse(r#"{"access_token":"a"}"#), None);
        assert_eq!(parse(r#"{"access_token":"a","expires_in":"soon"}"#), None);
    }

    #[test]
    fn token_sets_do_not_print_their_secrets() {
        let tokens = TokenSet {
            access_token: SecretString::from("access-secret-1"),
            expires_at: None,
            refresh_token: Some(SecretString::from("refresh-secret-1")),
            scope: Some("mcp".into()),
        };
        let debug = format!("{tokens:?}");
        assert!(!debug.contains("access-secret-1") && !debug.contains("refresh-secret-1"));
        assert!(debug.contains("mcp"), "{debug}");
    }
}
