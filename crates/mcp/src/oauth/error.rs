//! [`OAuthError`]: why an OAuth step failed, in words an admin can act on and without any
//! secret (token, code, verifier, client secret) in the text.

use engine::mcp::McpError;

/// Why discovery, registration, authorization or a token request failed.
///
/// Messages name the step and the host, never a secret: values an authorization server
/// sends back (`error_description`) are cut short and cleaned of every secret the request
/// carried before they get here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    /// The network guard refused a URL, or an OAuth URL is not `https` (plain `http` is
    /// accepted on loopback only, and only when the guard allows loopback).
    #[error("refused: {0}")]
    Blocked(String),
    /// The host could not be reached (connection refused, TLS, DNS, a reset).
    #[error("could not reach {what}: {reason}")]
    Unreachable { what: String, reason: String },
    /// A request did not finish in time (milliseconds).
    #[error("{what} did not answer within {ms} ms")]
    Timeout { what: String, ms: u64 },
    /// An answer was larger than the cap (bytes).
    #[error("the answer of {what} is larger than {max} bytes")]
    TooLarge { what: String, max: usize },
    /// A document (metadata, registration, token answer) is not what the specs require.
    #[error("{0}")]
    Invalid(String),
    /// Neither the protected resource metadata nor the authorization server metadata (nor,
    /// for a 2025-03-26 server, its default endpoints) could be found.
    #[error("{0}")]
    Discovery(String),
    /// The authorization server does not support PKCE with S256.
    #[error(
        "the authorization server {issuer} does not support PKCE with S256 \
         (code_challenge_methods_supported), so agentd will not use it"
    )]
    NoPkce { issuer: String },
    /// There is no way to get a client id: no pre-registered client, no Client ID Metadata
    /// Document support, no dynamic client registration.
    #[error(
        "the authorization server {issuer} offers neither dynamic client registration nor \
         client ID metadata documents: register a client with it and configure its client id"
    )]
    NoRegistration { issuer: String },
    /// An OAuth endpoint answered with an error status (and maybe an RFC 6749 error code).
    #[error("{what} answered HTTP {status}{}", oauth_detail(.error, .description))]
    Endpoint {
        what: String,
        status: u16,
        error: Option<String>,
        description: Option<String>,
    },
    /// The authorization callback carried an error (the user denied access, ...).
    #[error("the authorization was refused: {error}{}", .description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        error: String,
        description: Option<String>,
    },
    /// The callback does not belong to the pending authorization (state or issuer mismatch,
    /// no code).
    #[error("the authorization callback is not valid: {0}")]
    Callback(String),
    /// The stored grant cannot give an access token any more (no refresh token, or the
    /// authorization server refused it): an admin must authorize the connector again.
    #[error("the connector must be authorized again: {0}")]
    Reauthorize(String),
    /// The MCP server wants scopes the connector's authorization does not grant (HTTP 403
    /// `insufficient_scope`).
    #[error(
        "the MCP server requires the scope \"{scope}\", which this authorization does not \
         grant: authorize the connector again with that scope"
    )]
    InsufficientScope { scope: String },
}

fn oauth_detail(error: &Option<String>, description: &Option<String>) -> String {
    match (error, description) {
        (Some(e), Some(d)) => format!(": {e} ({d})"),
        (Some(e), None) => format!(": {e}"),
        (None, Some(d)) => format!(" ({d})"),
        (None, None) => String::new(),
    }
}

impl OAuthError {
    /// True when only a new authorization by an admin can fix this: the refresh token was
    /// refused (`invalid_grant`), the client is no longer known (`invalid_client`,
    /// `unauthorized_client`), or there is nothing to refresh with.
    pub fn needs_reauthorization(&self) -> bool {
        match self {
            OAuthError::Reauthorize(_) | OAuthError::InsufficientScope { .. } => true,
            OAuthError::Endpoint {
                error: Some(code), ..
            } => matches!(
                code.as_str(),
                "invalid_grant" | "invalid_client" | "unauthorized_client"
            ),
            _ => false,
        }
    }

    /// The error as the MCP client reports it for a request that could not be authorized.
    pub fn to_mcp(&self) -> McpError {
        match self {
            OAuthError::Blocked(m) => McpError::Blocked(m.clone()),
            OAuthError::Timeout { ms, .. } => McpError::Timeout(*ms),
            OAuthError::Unreachable { .. } => McpError::Unreachable(self.to_string()),
            OAuthError::InsufficientScope { .. } => McpError::Http {
                status: 403,
                message: format!("forbidden: {self}"),
            },
            _ => McpError::Http {
                status: 401,
                message: format!("unauthorized: {self}"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_oauth_error_code() {
        let err = OAuthError::Endpoint {
            what: "the token endpoint of auth.example.com".into(),
            status: 400,
            error: Some("invalid_grant".into()),
            description: Some("refresh token expired".into()),
        };
        assert_eq!(
            err.to_string(),
            "the token endpoint of auth.example.com answered HTTP 400: invalid_grant \
             (refresh token expired)"
        );
        assert!(err.needs_reauthorization());
        let McpError::Http { status, message } = err.to_mcp() else {
            panic!("not an HTTP error");
        };
        assert_eq!(status, 401);
        assert!(message.starts_with("unauthorized: "), "{message}");
    }

    #[test]
    fn insufficient_scope_is_a_403() {
        let err = OAuthError::InsufficientScope {
            scope: "files:write".into(),
        };
        assert!(matches!(err.to_mcp(), McpError::Http { status: 403, .. }));
        assert!(err.to_string().contains("\"files:write\""));
        let err = OAuthError::Endpoint {
            what: "x".into(),
            status: 503,
            error: None,
            description: None,
        };
        assert!(!err.needs_reauthorization());
    }
}
