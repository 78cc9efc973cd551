//! Discovery: from an MCP endpoint (and the challenge of its 401) to the authorization
//! server's metadata, following the MCP authorization spec (2025-11-25):
//!
//! 1. Protected resource metadata (RFC 9728): the challenge's `resource_metadata` URL, then
//!    the well-known URLs (path-aware, then root). Its `resource` must cover the endpoint
//!    (same origin, endpoint path at or below it), or nothing from it is used.
//! 2. Authorization server metadata for each of its `authorization_servers`, at the RFC 8414
//!    and OpenID Connect well-known URLs in the spec's order; its `issuer` must be the one
//!    asked for; it must offer PKCE with S256; every endpoint must be https.
//! 3. For servers of MCP 2025-03-26, which publish no protected resource metadata: the
//!    endpoint's origin is the authorization server (its RFC 8414 / OpenID metadata, else the
//!    default endpoints `/authorize`, `/token` and `/register`).
//!
//! Only "not found" answers move on to the next URL; a server that fails (5xx, unreachable,
//! refused by the guard) ends discovery with that failure, so a broken server is never
//! mistaken for an old one.

use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use url::Url;

use super::challenge::Challenge;
use super::error::OAuthError;
use super::http::{OAuthHttp, host, parse_json, secure, short};
use super::metadata::{
    AuthorizationServerMetadata, ProtectedResourceMetadata, authorization_server_candidates,
    canonical_resource, protected_resource_candidates, resource_matches, same_issuer,
};
use super::scope;

/// How the authorization server was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryMode {
    /// Protected resource metadata named it (the current spec).
    ProtectedResource,
    /// No protected resource metadata; the MCP server's origin published authorization
    /// server metadata (MCP 2025-03-26).
    LegacyMetadata,
    /// No metadata at all; the default endpoints at the MCP server's origin (MCP
    /// 2025-03-26). PKCE is used without the server having said it supports it.
    LegacyDefaults,
}

/// What discovery found: enough to register a client and start an authorization.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The MCP endpoint.
    pub server: Url,
    /// The RFC 8707 `resource` of authorization and token requests: the protected resource
    /// metadata's `resource`, or the endpoint's canonical URI when there is none.
    pub resource: String,
    /// The protected resource metadata, when the server publishes it.
    pub protected_resource: Option<ProtectedResourceMetadata>,
    /// The authorization server's metadata (for [`DiscoveryMode::LegacyDefaults`], made up of
    /// the default endpoints).
    pub metadata: AuthorizationServerMetadata,
    /// The challenge of the 401 discovery started from (empty when there was none).
    pub challenge: Challenge,
    pub mode: DiscoveryMode,
}

impl Discovery {
    /// The scopes of a first authorization: the scope selection strategy of the MCP spec
    /// ([`scope::select`]) plus `offline_access` when the authorization server lists it
    /// (agentd wants a refresh token: it keeps connectors working without an admin).
    pub fn scope(&self) -> Option<String> {
        let supported = self
            .protected_resource
            .as_ref()
            .and_then(|p| p.scopes_supported.as_deref());
        let selected = scope::select(self.challenge.scope(), supported);
        scope::with_offline_access(selected, self.metadata.lists_scope("offline_access"))
    }

    /// The authorization server's issuer, for messages and for naming a registration.
    pub fn issuer(&self) -> &str {
        &self.metadata.issuer
    }
}

/// One metadata URL's outcome.
enum Lookup<T> {
    Found(T),
    /// 404 or another 4xx: try the next URL.
    NotFound,
}

/// Sends an unauthenticated MCP `initialize` to `server` and returns the challenge when it
/// answers 401 (`None` when it answers anything else: it may need no authorization, or
/// only for later requests). Nothing of the answer's body is read.
pub(crate) async fn probe(http: &OAuthHttp, server: &Url) -> Result<Option<Challenge>, OAuthError> {
    let what = format!("the MCP server {}", short(server));
    let server = http.check_secure(server.as_str(), "an MCP server that uses OAuth")?;
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "agentd", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let request = http
        .client
        .post(server)
        .header(ACCEPT, "application/json, text/event-stream")
        .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
        .body(body.to_string());
    let response = match tokio::time::timeout(http.timeout, request.send()).await {
        Ok(Ok(response)) => response,
        Ok(Err(err)) => {
            return Err(match netguard::blocked_reason(&err) {
                Some(blocked) => OAuthError::Blocked(format!("{what}: {}", blocked.0)),
                None => OAuthError::Unreachable {
                    what,
                    reason: netguard::describe(&err),
                },
            });
        }
        Err(_) => {
            return Err(OAuthError::Timeout {
                what,
                ms: millis(http.timeout),
            });
        }
    };
    if let Some(addr) = response.remote_addr() {
        http.policy.check_ip(addr.ip()).map_err(|b| {
            OAuthError::Blocked(format!(
                "{what}: the answer came from a refused address: {b}"
            ))
        })?;
    }
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return Ok(None);
    }
    let challenge = response
        .headers()
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(Challenge::parse)
        .find(|c| *c != Challenge::default())
        .unwrap_or_default();
    Ok(Some(challenge))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Runs discovery for `server` (already through the guard), starting from the challenge
/// of its 401 if there was one.
pub(crate) async fn discover(
    http: &OAuthHttp,
    server: &Url,
    challenge: Option<&Challenge>,
) -> Result<Discovery, OAuthError> {
    secure(server, "an MCP server that uses OAuth")?;
    let challenge = challenge.cloned().unwrap_or_default();
    if let Some(prm) = protected_resource(http, server, &challenge).await? {
        let metadata = authorization_server(http, &prm).await?;
        return Ok(Discovery {
            server: server.clone(),
            resource: prm.resource.clone(),
            protected_resource: Some(prm),
            metadata,
            challenge,
            mode: DiscoveryMode::ProtectedResource,
        });
    }
    // MCP 2025-03-26: the MCP server's origin is the authorization server.
    let mut origin = server.clone();
    origin.set_path("/");
    origin.set_query(None);
    origin.set_fragment(None);
    tracing::debug!(host = %host(server), "no protected resource metadata: trying the 2025-03-26 discovery");
    let (metadata, mode) = match legacy_metadata(http, &origin).await? {
        Some(metadata) => (metadata, DiscoveryMode::LegacyMetadata),
        None => (default_endpoints(&origin), DiscoveryMode::LegacyDefaults),
    };
    check_endpoints(http, &metadata, mode)?;
    Ok(Discovery {
        server: server.clone(),
        resource: canonical_resource(server),
        protected_resource: None,
        metadata,
        challenge,
        mode,
    })
}

/// The protected resource metadata: the challenge's URL, then the well-known ones.
async fn protected_resource(
    http: &OAuthHttp,
    server: &Url,
    challenge: &Challenge,
) -> Result<Option<ProtectedResourceMetadata>, OAuthError> {
    let mut candidates: Vec<String> = Vec::new();
    if let Some(url) = challenge
        .resource_metadata
        .as_deref()
        .filter(|u| !u.is_empty())
    {
        // A relative reference is resolved against the endpoint.
        match server.join(url) {
            Ok(url) => candidates.push(url.to_string()),
            Err(_) => {
                return Err(OAuthError::Invalid(
                    "the MCP server's resource_metadata is not a valid URL".to_owned(),
                ));
            }
        }
    }
    for url in protected_resource_candidates(server) {
        if !candidates.contains(&url) {
            candidates.push(url);
        }
    }
    for candidate in candidates {
        let what = "the protected resource metadata";
        let url = http.check_secure(&candidate, what)?;
        let what = format!("{what} at {}", short(&url));
        match lookup::<ProtectedResourceMetadata>(http, &url, &what).await? {
            Lookup::NotFound => continue,
            Lookup::Found(prm) => {
                if !resource_matches(&prm.resource, server) {
                    return Err(OAuthError::Invalid(format!(
                        "{what} is for the resource {}, not for the MCP server {}: it is not used",
                        prm.resource,
                        short(server)
                    )));
                }
                if prm.authorization_servers.is_empty() {
                    return Err(OAuthError::Invalid(format!(
                        "{what} names no authorization server"
                    )));
                }
                tracing::debug!(url = %short(&url), "found the protected resource metadata");
                return Ok(Some(prm));
            }
        }
    }
    Ok(None)
}

/// The metadata of the first authorization server of `prm` that publishes it.
async fn authorization_server(
    http: &OAuthHttp,
    prm: &ProtectedResourceMetadata,
) -> Result<AuthorizationServerMetadata, OAuthError> {
    for issuer in &prm.authorization_servers {
        let issuer_url = http.check_secure(issuer, "the authorization server")?;
        for candidate in authorization_server_candidates(&issuer_url) {
            let url = http.check_secure(&candidate, "the authorization server metadata")?;
            let what = format!("the authorization server metadata at {}", short(&url));
            let metadata = match lookup::<AuthorizationServerMetadata>(http, &url, &what).await? {
                Lookup::NotFound => continue,
                Lookup::Found(metadata) => metadata,
            };
            if !same_issuer(&metadata.issuer, issuer) {
                return Err(OAuthError::Invalid(format!(
                    "{what} is for the issuer {}, not {issuer}",
                    metadata.issuer
                )));
            }
            check_endpoints(http, &metadata, DiscoveryMode::ProtectedResource)?;
            tracing::debug!(url = %short(&url), "found the authorization server metadata");
            return Ok(metadata);
        }
    }
    Err(OAuthError::Discovery(format!(
        "no authorization server metadata found for {} (tried the RFC 8414 and OpenID \
         Connect well-known URLs)",
        prm.authorization_servers.join(", ")
    )))
}

/// MCP 2025-03-26: the metadata at the origin's root well-known URLs, if any.
async fn legacy_metadata(
    http: &OAuthHttp,
    origin: &Url,
) -> Result<Option<AuthorizationServerMetadata>, OAuthError> {
    for candidate in authorization_server_candidates(origin) {
        let url = http.check_secure(&candidate, "the authorization server metadata")?;
        let what = format!("the authorization server metadata at {}", short(&url));
        if let Lookup::Found(metadata) = lookup(http, &url, &what).await? {
            return Ok(Some(metadata));
        }
    }
    Ok(None)
}

/// MCP 2025-03-26's default endpoints, for a server that publishes no metadata.
fn default_endpoints(origin: &Url) -> AuthorizationServerMetadata {
    let base = origin.as_str().trim_end_matches('/');
    AuthorizationServerMetadata {
        issuer: base.to_owned(),
        authorization_endpoint: format!("{base}/authorize"),
        token_endpoint: format!("{base}/token"),
        registration_endpoint: Some(format!("{base}/register")),
        scopes_supported: None,
        code_challenge_methods_supported: Some(vec!["S256".to_owned()]),
        token_endpoint_auth_methods_supported: None,
        client_id_metadata_document_supported: false,
        authorization_response_iss_parameter_supported: false,
    }
}

/// PKCE with S256, and https endpoints.
fn check_endpoints(
    http: &OAuthHttp,
    metadata: &AuthorizationServerMetadata,
    mode: DiscoveryMode,
) -> Result<(), OAuthError> {
    if mode != DiscoveryMode::LegacyDefaults && !metadata.supports_s256() {
        return Err(OAuthError::NoPkce {
            issuer: metadata.issuer.clone(),
        });
    }
    http.check_secure(
        &metadata.authorization_endpoint,
        "the authorization endpoint",
    )?;
    http.check_secure(&metadata.token_endpoint, "the token endpoint")?;
    if let Some(registration) = &metadata.registration_endpoint {
        http.check_secure(registration, "the registration endpoint")?;
    }
    Ok(())
}

/// GETs one metadata URL: the document on 200, "not found" on a 4xx, an error otherwise.
async fn lookup<T: serde::de::DeserializeOwned>(
    http: &OAuthHttp,
    url: &Url,
    what: &str,
) -> Result<Lookup<T>, OAuthError> {
    let answer = http.get(url, what).await?;
    match answer.status {
        200 => Ok(Lookup::Found(parse_json(&answer.body, what)?)),
        400..=499 => {
            tracing::debug!(url = %short(url), status = answer.status, "no metadata here");
            Ok(Lookup::NotFound)
        }
        status => Err(OAuthError::Endpoint {
            what: what.to_owned(),
            status,
            error: None,
            description: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn discovery(
        challenge_scope: Option<&str>,
        prm_scopes: Option<&[&str]>,
        as_scopes: &[&str],
    ) -> Discovery {
        let server = Url::parse("https://m.example/mcp").unwrap();
        let mut metadata = default_endpoints(&Url::parse("https://a.example/").unwrap());
        metadata.scopes_supported = Some(as_scopes.iter().map(|s| (*s).to_owned()).collect());
        Discovery {
            resource: canonical_resource(&server),
            server,
            protected_resource: Some(ProtectedResourceMetadata {
                resource: "https://m.example/mcp".into(),
                authorization_servers: vec!["https://a.example".into()],
                scopes_supported: prm_scopes.map(|s| s.iter().map(|s| (*s).to_owned()).collect()),
            }),
            metadata,
            challenge: Challenge {
                scope: challenge_scope.map(str::to_owned),
                ..Challenge::default()
            },
            mode: DiscoveryMode::ProtectedResource,
        }
    }

    #[test]
    fn scope_follows_the_strategy_and_adds_offline_access_when_listed() {
        assert_eq!(
            discovery(Some("mcp:basic"), Some(&["a", "b"]), &[])
                .scope()
                .as_deref(),
            Some("mcp:basic")
        );
        assert_eq!(
            discovery(None, Some(&["a", "b"]), &[]).scope().as_deref(),
            Some("a b")
        );
        assert_eq!(discovery(None, None, &["offline_access"]).scope(), None);
        assert_eq!(
            discovery(None, Some(&["mcp:basic"]), &["mcp:basic", "offline_access"])
                .scope()
                .as_deref(),
            Some("mcp:basic offline_access")
        );
    }

    #[test]
    fn default_endpoints_are_at_the_origin() {
        let metadata = default_endpoints(&Url::parse("http://localhost:3000/").unwrap());
        assert_eq!(
            metadata.authorization_endpoint,
            "http://localhost:3000/authorize"
        );
        assert_eq!(metadata.token_endpoint, "http://localhost:3000/token");
        assert_eq!(
            metadata.registration_endpoint.as_deref(),
            Some("http://localhost:3000/register")
        );
    }
}
