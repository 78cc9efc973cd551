//! The two metadata documents and where they live: protected resource metadata (RFC 9728)
//! and authorization server metadata (RFC 8414, or OpenID Connect Discovery), with the
//! well-known URLs to try, in the order of the MCP authorization spec (2025-11-25), and the
//! checks made on what they say.

use serde::Deserialize;
use url::Url;

/// RFC 9728 protected resource metadata: who may issue tokens for this MCP server.
/// Only the members the flow uses are read; others are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ProtectedResourceMetadata {
    /// The resource identifier (the value of the RFC 8707 `resource` parameter).
    pub resource: String,
    /// The issuers of the authorization servers that accept this resource.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes this resource uses (the fallback of the scope selection strategy).
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 authorization server metadata (or the same members of an OpenID Connect
/// Discovery document). Only the members the flow uses are read.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AuthorizationServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    /// RFC 7591 dynamic client registration, when offered.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// PKCE methods; agentd proceeds only when `S256` is listed.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Absent means `client_secret_basic` (RFC 8414 §2).
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// OAuth Client ID Metadata Documents (a URL as client id) are accepted.
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// RFC 9207: the authorization response carries `iss`, which must then match.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
}

impl AuthorizationServerMetadata {
    /// Whether PKCE with S256 is advertised (the MCP spec: absent means no PKCE, and the
    /// client must refuse to proceed).
    pub fn supports_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_ref()
            .is_some_and(|methods| methods.iter().any(|m| m == "S256"))
    }

    /// Whether the authorization server lists `scope` in `scopes_supported`.
    pub fn lists_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|scopes| scopes.iter().any(|s| s == scope))
    }
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// The path of a URL without its trailing slashes (`""` for the root).
fn trimmed_path(url: &Url) -> &str {
    url.path().trim_end_matches('/')
}

/// RFC 9728 §3.1 and the MCP spec: the well-known protected resource metadata URLs of an MCP
/// endpoint, path-aware first (`/.well-known/oauth-protected-resource/<path>`), then the
/// root; only the root for an endpoint at the root.
pub fn protected_resource_candidates(server: &Url) -> Vec<String> {
    let root = format!("{}/.well-known/oauth-protected-resource", origin(server));
    match trimmed_path(server) {
        "" => vec![root],
        path => vec![format!("{root}{path}"), root],
    }
}

/// RFC 8414 §3.1 and OpenID Connect Discovery, in the MCP spec's order. For an issuer with
/// a path (`https://a.example/tenant1`): OAuth with path insertion, OpenID with path
/// insertion, OpenID with path appending. For an issuer at the root: OAuth, then OpenID.
pub fn authorization_server_candidates(issuer: &Url) -> Vec<String> {
    let origin = origin(issuer);
    match trimmed_path(issuer) {
        "" => vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ],
        path => vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ],
    }
}

/// The canonical URI of an MCP server (RFC 8707 §2, the MCP spec): lower-case scheme and
/// host (the URL parser does that), no fragment, and no trailing slash for the root.
pub fn canonical_resource(server: &Url) -> String {
    let mut url = server.clone();
    url.set_fragment(None);
    let text = url.to_string();
    match (url.path(), url.query()) {
        ("/", None) => text.trim_end_matches('/').to_owned(),
        _ => text,
    }
}

/// Whether protected resource metadata that names `resource` may be used for the MCP
/// endpoint `server`: the same origin, and the endpoint's path at or below the resource's
/// (so `https://m.example` covers `https://m.example/mcp`, `https://evil.example/mcp` does
/// not).
pub fn resource_matches(resource: &str, server: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.origin() != server.origin() {
        return false;
    }
    let want = trimmed_path(&resource);
    let have = trimmed_path(server);
    have == want || have.starts_with(&format!("{want}/"))
}

/// RFC 8414 §3.3: the `issuer` of the metadata must be the issuer it was fetched for
/// (compared without trailing slashes, which authorization servers are loose about).
pub fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn protected_resource_urls_path_aware_then_root() {
        assert_eq!(
            protected_resource_candidates(&url("https://example.com/public/mcp")),
            [
                "https://example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            protected_resource_candidates(&url("http://localhost:3000/mcp/?x=1")),
            [
                "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
                "http://localhost:3000/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            protected_resource_candidates(&url("https://Example.COM")),
            ["https://example.com/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn authorization_server_urls_in_the_spec_order() {
        assert_eq!(
            authorization_server_candidates(&url("https://auth.example.com/tenant1")),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            authorization_server_candidates(&url("https://auth.example.com/")),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn canonical_resource_uri() {
        assert_eq!(
            canonical_resource(&url("HTTPS://MCP.Example.com/mcp#frag")),
            "https://mcp.example.com/mcp"
        );
        assert_eq!(
            canonical_resource(&url("https://mcp.example.com/")),
            "https://mcp.example.com"
        );
        assert_eq!(
            canonical_resource(&url("https://mcp.example.com:8443")),
            "https://mcp.example.com:8443"
        );
        assert_eq!(
            canonical_resource(&url("https://m.example/server/mcp/")),
            "https://m.example/server/mcp/"
        );
    }

    #[test]
    fn resource_must_cover_the_endpoint() {
        let server = url("https://m.example/mcp");
        assert!(resource_matches("https://m.example/mcp", &server));
        assert!(resource_matches("https://m.example/mcp/", &server));
        assert!(resource_matches("https://m.example", &server));
        assert!(resource_matches("https://M.EXAMPLE/", &server));
        assert!(!resource_matches("https://evil.example.com/mcp", &server));
        assert!(!resource_matches("http://m.example/mcp", &server));
        assert!(!resource_matches("https://m.example:444/mcp", &server));
        assert!(!resource_matches("https://m.example/mc", &server));
        assert!(!resource_matches("https://m.example/mcp/sub", &server));
        assert!(!resource_matches("not a url", &server));
    }

    #[test]
    fn metadata_reads_what_the_flow_needs() {
        let meta: AuthorizationServerMetadata = serde_json::from_value(serde_json::json!({
            "issuer": "https://a.example/",
            "authorization_endpoint": "https://a.example/authorize",
            "token_endpoint": "https://a.example/token",
            "code_challenge_methods_supported": ["plain", "S256"],
            "scopes_supported": ["mcp", "offline_access"],
            "something_else": {"ignored": true}
        }))
        .unwrap();
        assert!(meta.supports_s256());
        assert!(meta.lists_scope("offline_access"));
        assert!(!meta.client_id_metadata_document_supported);
        assert!(same_issuer(&meta.issuer, "https://a.example"));
        assert!(!same_issuer(&meta.issuer, "https://a.example/t"));
        let without = AuthorizationServerMetadata {
            code_challenge_methods_supported: None,
            ..meta.clone()
        };
        assert!(!without.supports_s256());
        let plain_only = AuthorizationServerMetadata {
            code_challenge_methods_supported: Some(vec!["plain".into()]),
            ..meta
        };
        assert!(!plain_only.supports_s256());
    }
}
