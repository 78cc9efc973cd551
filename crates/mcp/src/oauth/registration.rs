//! Who agentd is to an authorization server: a pre-registered client, a Client ID Metadata
//! Document (a URL as client id), or a client registered on the spot with RFC 7591 dynamic
//! client registration, in the MCP spec's order of preference; and how that client
//! authenticates at the token endpoint.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use secrecy::SecretString;
use serde::Deserialize;
use url::Url;

use super::discovery::Discovery;
use super::error::OAuthError;
use super::http::{OAuthHttp, endpoint_error, host, is_loopback, parse_json};
use super::metadata::AuthorizationServerMetadata;
use crate::errors::Redactor;

/// How the client authenticates at the token endpoint (RFC 6749 §2.3, RFC 7591 §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenEndpointAuth {
    /// HTTP Basic with the client id and secret.
    ClientSecretBasic,
    /// The client id and secret in the form body.
    ClientSecretPost,
    /// A public client: the client id in the form body, no secret (PKCE protects the code).
    None,
}

impl TokenEndpointAuth {
    /// The RFC 7591 name (`client_secret_basic`, `client_secret_post`, `none`).
    pub fn as_str(self) -> &'static str {
        match self {
            TokenEndpointAuth::ClientSecretBasic => "client_secret_basic",
            TokenEndpointAuth::ClientSecretPost => "client_secret_post",
            TokenEndpointAuth::None => "none",
        }
    }

    fn needs_secret(self) -> bool {
        self != TokenEndpointAuth::None
    }
}

impl fmt::Display for TokenEndpointAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TokenEndpointAuth {
    type Err = OAuthError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "client_secret_basic" => Ok(TokenEndpointAuth::ClientSecretBasic),
            "client_secret_post" => Ok(TokenEndpointAuth::ClientSecretPost),
            "none" => Ok(TokenEndpointAuth::None),
            other => Err(OAuthError::Invalid(format!(
                "unsupported token endpoint authentication method \"{other}\" (agentd supports \
                 client_secret_basic, client_secret_post and none)"
            ))),
        }
    }
}

/// A client an admin registered with the authorization server beforehand.
#[derive(Debug, Clone)]
pub struct PreRegisteredClient {
    pub client_id: String,
    pub client_secret: Option<SecretString>,
    /// How to authenticate; `None` picks one from the server's metadata.
    pub auth_method: Option<TokenEndpointAuth>,
}

/// What agentd says about itself to authorization servers.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `client_name` of a dynamic registration ("agentd").
    pub client_name: String,
    /// Where the authorization server sends the browser back: agentd's callback route
    /// (https, or http on loopback).
    pub redirect_uri: String,
    /// The https URL of agentd's Client ID Metadata Document, if agentd serves one (see
    /// [`client_metadata_document`]); used as the client id with servers that support it.
    pub client_metadata_url: Option<String>,
    /// A client registered beforehand, used before anything else.
    pub pre_registered: Option<PreRegisteredClient>,
}

impl ClientConfig {
    /// A client named "agentd" with this callback, no metadata document, not pre-registered.
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        Self {
            client_name: "agentd".to_owned(),
            redirect_uri: redirect_uri.into(),
            client_metadata_url: None,
            pre_registered: None,
        }
    }
}

/// How the client id was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistrationKind {
    PreRegistered,
    /// The client id is the URL of a Client ID Metadata Document.
    MetadataDocument,
    /// RFC 7591 dynamic client registration.
    Dynamic,
}

/// The client agentd is at one authorization server: what a connector keeps next to its
/// refresh token (the secret sealed).
#[derive(Debug, Clone)]
pub struct ClientRegistration {
    pub client_id: String,
    pub client_secret: Option<SecretString>,
    pub auth_method: TokenEndpointAuth,
    pub kind: RegistrationKind,
    /// The redirect URI registered (or declared) for this client.
    pub redirect_uri: String,
    /// When a dynamically registered secret expires (`None`: never).
    pub secret_expires_at: Option<SystemTime>,
}

impl ClientRegistration {
    /// This client as a pre-registered one, to authorize again with the same client (no new
    /// registration).
    pub fn to_pre_registered(&self) -> PreRegisteredClient {
        PreRegisteredClient {
            client_id: self.client_id.clone(),
            client_secret: self.client_secret.clone(),
            auth_method: Some(self.auth_method),
        }
    }
}

/// The Client ID Metadata Document agentd serves at `config.client_metadata_url` (the
/// draft-ietf-oauth-client-id-metadata-document members the MCP spec requires:
/// `client_id` equal to the URL, `client_name`, `redirect_uris`), or `None` without a URL.
pub fn client_metadata_document(config: &ClientConfig) -> Option<serde_json::Value> {
    let url = config.client_metadata_url.as_ref()?;
    Some(serde_json::json!({
        "client_id": url,
        "client_name": config.client_name,
        "redirect_uris": [config.redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }))
}

/// The redirect URI must be https, or http on loopback (MCP spec, communication security).
pub(crate) fn check_redirect_uri(uri: &str) -> Result<Url, OAuthError> {
    let url = Url::parse(uri)
        .map_err(|e| OAuthError::Invalid(format!("the redirect URI is not a URL: {e}")))?;
    if url.fragment().is_some() {
        return Err(OAuthError::Invalid(
            "the redirect URI must not have a fragment".to_owned(),
        ));
    }
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        _ => Err(OAuthError::Invalid(
            "the redirect URI must be https (or http on loopback)".to_owned(),
        )),
    }
}

/// A Client ID Metadata Document URL must be https with a path (MCP spec).
fn check_metadata_url(url: &str) -> Result<(), OAuthError> {
    match Url::parse(url) {
        Ok(u) if u.scheme() == "https" && u.path() != "/" && u.fragment().is_none() => Ok(()),
        _ => Err(OAuthError::Invalid(
            "the client metadata document URL must be https and have a path".to_owned(),
        )),
    }
}

/// Whether the server lists `method` (absent means `client_secret_basic` only, RFC 8414 §2).
fn supports(metadata: &AuthorizationServerMetadata, method: TokenEndpointAuth) -> bool {
    match &metadata.token_endpoint_auth_methods_supported {
        Some(methods) => methods.iter().any(|m| m == method.as_str()),
        None => method == TokenEndpointAuth::ClientSecretBasic,
    }
}

/// The method to use: the registered one when the server accepts it and its secret is
/// there; otherwise, with a secret, Basic then post as the server supports them; else none.
pub(crate) fn select_auth_method(
    metadata: &AuthorizationServerMetadata,
    registered: Option<TokenEndpointAuth>,
    has_secret: bool,
) -> TokenEndpointAuth {
    if let Some(method) = registered
        && supports(metadata, method)
        && (has_secret || !method.needs_secret())
    {
        return method;
    }
    if has_secret {
        for method in [
            TokenEndpointAuth::ClientSecretBasic,
            TokenEndpointAuth::ClientSecretPost,
        ] {
            if supports(metadata, method) {
                return method;
            }
        }
    }
    TokenEndpointAuth::None
}

/// The method to ask for in a dynamic registration: a confidential client when the server
/// supports one (Basic first), else a public client.
fn requested_method(metadata: &AuthorizationServerMetadata) -> TokenEndpointAuth {
    [
        TokenEndpointAuth::ClientSecretBasic,
        TokenEndpointAuth::ClientSecretPost,
    ]
    .into_iter()
    .find(|m| supports(metadata, *m))
    .unwrap_or(TokenEndpointAuth::None)
}

/// Gets a client for the discovered authorization server: pre-registered, else a Client ID
/// Metadata Document, else dynamic registration.
pub(crate) async fn register(
    http: &OAuthHttp,
    discovery: &Discovery,
    config: &ClientConfig,
) -> Result<ClientRegistration, OAuthError> {
    let redirect_uri = check_redirect_uri(&config.redirect_uri)?.to_string();
    let metadata = &discovery.metadata;
    if let Some(client) = &config.pre_registered {
        let has_secret = client.client_secret.is_some();
        return Ok(ClientRegistration {
            client_id: client.client_id.clone(),
            client_secret: client.client_secret.clone(),
            auth_method: select_auth_method(metadata, client.auth_method, has_secret),
            kind: RegistrationKind::PreRegistered,
            redirect_uri,
            secret_expires_at: None,
        });
    }
    if let Some(url) = &config.client_metadata_url
        && metadata.client_id_metadata_document_supported
        && metadata
            .token_endpoint_auth_methods_supported
            .as_ref()
            .is_none_or(|m| m.iter().any(|m| m == "none"))
    {
        check_metadata_url(url)?;
        return Ok(ClientRegistration {
            client_id: url.clone(),
            client_secret: None,
            auth_method: TokenEndpointAuth::None,
            kind: RegistrationKind::MetadataDocument,
            redirect_uri,
            secret_expires_at: None,
        });
    }
    let Some(endpoint) = &metadata.registration_endpoint else {
        return Err(OAuthError::NoRegistration {
            issuer: metadata.issuer.clone(),
        });
    };
    dynamic(http, metadata, endpoint, &config.client_name, redirect_uri).await
}

/// RFC 7591 §3.2.1: what a registration answer says.
#[derive(Deserialize)]
struct RegistrationAnswer {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
    /// Seconds since the epoch; 0 means never.
    #[serde(default)]
    client_secret_expires_at: Option<u64>,
}

async fn dynamic(
    http: &OAuthHttp,
    metadata: &AuthorizationServerMetadata,
    endpoint: &str,
    client_name: &str,
    redirect_uri: String,
) -> Result<ClientRegistration, OAuthError> {
    let url = http.check_secure(endpoint, "the registration endpoint")?;
    let what = format!("the registration endpoint of {}", host(&url));
    let requested = requested_method(metadata);
    let body = serde_json::json!({
        "client_name": client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": requested.as_str(),
    });
    let request = http
        .client
        .post(url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string());
    let answer = http.post(request, &url, &what).await?;
    if answer.status != 201 && answer.status != 200 {
        return Err(endpoint_error(&answer, &what, &Redactor::default()));
    }
    let registered: RegistrationAnswer = parse_json(&answer.body, &what)?;
    if registered.client_id.is_empty() {
        return Err(OAuthError::Invalid(format!(
            "{what} gave an empty client_id"
        )));
    }
    let method = match registered.token_endpoint_auth_method.as_deref() {
        Some(name) => name.parse::<TokenEndpointAuth>()?,
        None => requested,
    };
    let secret = registered.client_secret.filter(|s| !s.is_empty());
    tracing::debug!(host = %host(&url), method = %method, "registered a client");
    Ok(ClientRegistration {
        auth_method: select_auth_method(metadata, Some(method), secret.is_some()),
        client_id: registered.client_id,
        client_secret: secret.map(SecretString::from),
        kind: RegistrationKind::Dynamic,
        redirect_uri,
        secret_expires_at: registered
            .client_secret_expires_at
            .filter(|at| *at > 0)
            .map(|at| SystemTime::UNIX_EPOCH + Duration::from_secs(at)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(methods: Option<&[&str]>) -> AuthorizationServerMetadata {
        AuthorizationServerMetadata {
            issuer: "https://a.example".into(),
            authorization_endpoint: "https://a.example/authorize".into(),
            token_endpoint: "https://a.example/token".into(),
            registration_endpoint: None,
            scopes_supported: None,
            code_challenge_methods_supported: Some(vec!["S256".into()]),
            token_endpoint_auth_methods_supported: methods
                .map(|m| m.iter().map(|s| (*s).to_owned()).collect()),
            client_id_metadata_document_supported: false,
            authorization_response_iss_parameter_supported: false,
        }
    }

    #[test]
    fn method_selection_follows_what_the_server_supports() {
        use TokenEndpointAuth::*;
        let none_only = metadata(Some(&["none"]));
        // A secret the server would not take is not used.
        assert_eq!(select_auth_method(&none_only, Some(None), true), None);
        assert_eq!(select_auth_method(&none_only, Option::None, true), None);
        let basic = metadata(Some(&["client_secret_basic"]));
        assert_eq!(
            select_auth_method(&basic, Option::None, true),
            ClientSecretBasic
        );
        assert_eq!(
            select_auth_method(&basic, Some(ClientSecretPost), true),
            ClientSecretBasic
        );
        let post = metadata(Some(&["client_secret_post", "none"]));
        assert_eq!(
            select_auth_method(&post, Option::None, true),
            ClientSecretPost
        );
        assert_eq!(select_auth_method(&post, Option::None, false), None);
        // Absent list: client_secret_basic (RFC 8414).
        let absent = metadata(Option::None);
        assert_eq!(
            select_auth_method(&absent, Option::None, true),
            ClientSecretBasic
        );
        let both = metadata(Some(&["client_secret_basic", "client_secret_post"]));
        assert_eq!(
            select_auth_method(&both, Some(ClientSecretPost), true),
            ClientSecretPost
        );
        // A registered secret method without the secret falls back.
        assert_eq!(
            select_auth_method(&both, Some(ClientSecretPost), false),
            None
        );

        assert_eq!(requested_method(&none_only), None);
        assert_eq!(requested_method(&post), ClientSecretPost);
        assert_eq!(requested_method(&absent), ClientSecretBasic);
    }

    #[test]
    fn method_names_round_trip() {
        for method in [
            TokenEndpointAuth::ClientSecretBasic,
            TokenEndpointAuth::ClientSecretPost,
            TokenEndpointAuth::None,
        ] {
            assert_eq!(
                method.as_str().parse::<TokenEndpointAuth>().unwrap(),
                method
            );
        }
        assert!("private_key_jwt".parse::<TokenEndpointAuth>().is_err());
    }

    #[test]
    fn redirect_uris_are_https_or_loopback() {
        assert!(check_redirect_uri("https://agentd.example/v1/admin/oauth/callback").is_ok());
        assert!(check_redirect_uri("http://127.0.0.1:8080/cb").is_ok());
        assert!(check_redirect_uri("http://localhost:3000/callback").is_ok());
        assert!(check_redirect_uri("http://agentd.example/cb").is_err());
        assert!(check_redirect_uri("https://agentd.example/cb#x").is_err());
        assert!(check_redirect_uri("agentd.example/cb").is_err());
        assert!(check_metadata_url("https://agentd.example/oauth/client.json").is_ok());
        assert!(check_metadata_url("https://agentd.example/").is_err());
        assert!(check_metadata_url("http://agentd.example/client.json").is_err());
    }

    #[test]
    fn the_metadata_document_names_the_client() {
        let mut config = ClientConfig::new("https://agentd.example/cb");
        assert!(client_metadata_document(&config).is_none());
        config.client_metadata_url = Some("https://agentd.example/oauth/client.json".into());
        let doc = client_metadata_document(&config).unwrap();
        assert_eq!(doc["client_id"], "https://agentd.example/oauth/client.json");
        assert_eq!(doc["client_name"], "agentd");
        assert_eq!(doc["redirect_uris"][0], "https://agentd.example/cb");
    }
}
