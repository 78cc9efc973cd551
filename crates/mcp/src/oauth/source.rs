//! [`TokenSource`]: where the MCP client gets the bearer token of each request to an
//! OAuth-protected server, and whom it tells when the server refuses one.

use secrecy::SecretString;

use super::challenge::Challenge;
use super::error::OAuthError;

/// A request the MCP server refused.
#[derive(Debug, Clone)]
pub struct Rejection {
    /// 401, or 403 (with a `WWW-Authenticate` challenge).
    pub status: u16,
    /// The `Bearer` challenge of the answer (empty when it had none).
    pub challenge: Challenge,
    /// The access token the refused request carried (`None`: it carried none).
    pub token: Option<SecretString>,
}

/// Gives the MCP client its bearer tokens (see [`crate::McpClient::connect_authorized`]).
///
/// The client asks [`TokenSource::access_token`] before every HTTP request, and calls
/// [`TokenSource::rejected`] when the server answers 401 (or 403 with a challenge); a token
/// returned from there is used to send that request once more. A request refused again is
/// not retried: it fails with the server's status.
#[async_trait::async_trait]
pub trait TokenSource: Send + Sync {
    /// The access token to send now (`None`: send the request without one). A source
    /// refreshes a token that is about to expire here.
    async fn access_token(&self) -> Result<Option<SecretString>, OAuthError>;

    /// The server refused a request. `Ok(Some(token))`: send it again with `token`.
    /// `Ok(None)`: give up; the request fails with the server's status. `Err`: give up
    /// with this reason.
    async fn rejected(&self, rejection: &Rejection) -> Result<Option<SecretString>, OAuthError>;
}
