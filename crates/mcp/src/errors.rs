//! From what rmcp, reqwest and our SSE transport report to [`McpError`], with every secret of
//! the server removed from the text.

use std::error::Error as StdError;
use std::sync::{Arc, Mutex};

use engine::mcp::McpError;
use rmcp::ServiceError;
use rmcp::model::ErrorData;
use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

/// The most of a server-supplied text (a JSON-RPC error message, an unexpected answer) kept
/// in an error message.
const MAX_MESSAGE_CHARS: usize = 300;

/// The shortest secret the [`Redactor`] looks for: replacing every "a" of a message would only
/// garble it, and a one- to three-character secret protects nothing anyway.
const MIN_REDACTED_SECRET: usize = 4;

/// Access tokens a session's redactor keeps (the newest).
const MAX_LEARNED_SECRETS: usize = 8;

/// An OAuth failure of the token source, carried through rmcp's transport error (as the
/// inner error of an `io::Error`) to be reported as itself.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub(crate) struct AuthFailure(pub(crate) McpError);

/// Removes the server's token and header values from any text that may reach an error
/// message. Errors built here never format a secret on purpose; this catches a server (or a
/// library) that echoes one back.
///
/// OAuth access tokens change during a session: the transport [`Redactor::remember`]s each
/// one it sends, in a list the clones of a redactor share.
#[derive(Clone, Default)]
pub(crate) struct Redactor {
    secrets: Vec<String>,
    learned: Arc<Mutex<Vec<String>>>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.secrets.len())
            .finish_non_exhaustive()
    }
}

impl Redactor {
    pub(crate) fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Self {
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|s| s.len() >= MIN_REDACTED_SECRET)
            .map(str::to_owned)
            .collect();
        // Longest first, so a secret that contains another is removed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Self {
            secrets,
            learned: Arc::default(),
        }
    }

    /// Adds a secret learned during the session (an access token), for this redactor and
    /// every clone of it.
    pub(crate) fn remember(&self, secret: &str) {
        if secret.len() < MIN_REDACTED_SECRET {
            return;
        }
        if let Ok(mut learned) = self.learned.lock()
            && !learned.iter().any(|s| s == secret)
        {
            // A long session refreshes now and then; the newest tokens are the ones to hide.
            if learned.len() >= MAX_LEARNED_SECRETS {
                learned.remove(0);
            }
            learned.push(secret.to_owned());
        }
    }

    /// `text` with every secret replaced by `<redacted>` and cut to a readable length.
    pub(crate) fn clean(&self, text: &str) -> String {
        let mut out = text.to_owned();
        let learned = self.learned.lock().map(|l| l.clone()).unwrap_or_default();
        let mut secrets: Vec<&String> = self.secrets.iter().chain(learned.iter()).collect();
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        for secret in secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "<redacted>");
            }
        }
        if out.chars().count() > MAX_MESSAGE_CHARS {
            out = out.chars().take(MAX_MESSAGE_CHARS).collect::<String>() + "…";
        }
        out
    }

    /// The same error with its text cleaned.
    pub(crate) fn error(&self, err: McpError) -> McpError {
        match err {
            McpError::Blocked(m) => McpError::Blocked(self.clean(&m)),
            McpError::Unreachable(m) => McpError::Unreachable(self.clean(&m)),
            McpError::Http { status, message } => McpError::Http {
                status,
                message: self.clean(&message),
            },
            McpError::Protocol(m) => McpError::Protocol(self.clean(&m)),
            other @ (McpError::TooLarge(_) | McpError::Timeout(_)) => other,
        }
    }
}

/// Why a transport ended, recorded where the transport sees it, for the session to report
/// instead of rmcp's bare "transport closed". Read once: later requests of the dead session
/// get the plain "closed" error, not the cause of someone else's failure.
#[derive(Debug, Clone, Default)]
pub(crate) struct Failure(Arc<Mutex<Option<McpError>>>);

impl Failure {
    /// Keeps the first cause.
    pub(crate) fn record(&self, err: McpError) {
        if let Ok(mut slot) = self.0.lock() {
            slot.get_or_insert(err);
        }
    }

    pub(crate) fn take(&self) -> Option<McpError> {
        self.0.lock().ok()?.take()
    }
}

/// What the session needs to know to name an error: the cap it enforces and the time it
/// waits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) request_timeout_ms: u64,
    pub(crate) max_response_bytes: usize,
}

/// A fixed, secret-free message for an HTTP status.
pub(crate) fn http_error(status: u16) -> McpError {
    let message = match status {
        401 => "unauthorized: the server wants a valid access token".to_owned(),
        403 => "forbidden: the access token does not allow this".to_owned(),
        404 => "not found: no MCP server at this URL".to_owned(),
        405 => "method not allowed: no MCP server at this URL".to_owned(),
        429 => "too many requests".to_owned(),
        _ => reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("error status")
            .to_ascii_lowercase(),
    };
    McpError::Http { status, message }
}

/// A reqwest failure: the guard's refusal, or why the server could not be reached.
pub(crate) fn from_reqwest(err: &reqwest::Error, limits: Limits) -> McpError {
    if let Some(blocked) = netguard::blocked_reason(err) {
        return McpError::Blocked(blocked.0);
    }
    if let Some(status) = err.status() {
        return http_error(status.as_u16());
    }
    if err.is_timeout() {
        return McpError::Timeout(limits.request_timeout_ms);
    }
    McpError::Unreachable(netguard::describe(err))
}

/// A JSON-RPC error answer.
pub(crate) fn from_json_rpc(data: &ErrorData) -> McpError {
    McpError::Protocol(format!(
        "JSON-RPC error {}: {}",
        data.code.0,
        data.message.as_ref()
    ))
}

/// The status of rmcp's `UnexpectedServerResponse("HTTP 404 Not Found: <body>")`, the only
/// form in which rmcp 3.11 reports a 4xx answer without a `WWW-Authenticate` challenge.
pub(crate) fn leading_http_status(text: &str) -> Option<u16> {
    let rest = text.strip_prefix("HTTP ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    match digits.len() {
        3 => digits.parse().ok(),
        _ => None,
    }
}

pub(crate) fn from_streamable(
    err: &StreamableHttpError<reqwest::Error>,
    limits: Limits,
) -> McpError {
    match err {
        StreamableHttpError::Client(e) => from_reqwest(e, limits),
        StreamableHttpError::HttpStatus(e) => http_error(e.status),
        StreamableHttpError::AuthRequired(_) => http_error(401),
        StreamableHttpError::InsufficientScope(_) => http_error(403),
        StreamableHttpError::ResponseBodyTooLarge { .. } => {
            McpError::TooLarge(limits.max_response_bytes)
        }
        StreamableHttpError::UnexpectedServerResponse(text) => match leading_http_status(text) {
            Some(status) => http_error(status),
            None => McpError::Protocol(format!("unexpected answer: {text}")),
        },
        StreamableHttpError::UnexpectedContentType(ct) => McpError::Protocol(format!(
            "unexpected content type {}",
            ct.as_deref().unwrap_or("(none)")
        )),
        StreamableHttpError::Sse(e) if is_too_large_text(&e.to_string()) => {
            McpError::TooLarge(limits.max_response_bytes)
        }
        StreamableHttpError::Io(e) => {
            match e.get_ref().and_then(|i| i.downcast_ref::<AuthFailure>()) {
                Some(AuthFailure(err)) => err.clone(),
                None => McpError::Unreachable(e.to_string()),
            }
        }
        StreamableHttpError::SessionExpired => {
            McpError::Protocol("the server ended the session (HTTP 404)".to_owned())
        }
        other => McpError::Protocol(other.to_string()),
    }
}

/// rmcp's per-event SSE limit reports itself only as text ("… maximum size of N bytes").
pub(crate) fn is_too_large_text(text: &str) -> bool {
    text.contains("maximum size of")
}

/// Walks an error chain for the first cause we know how to name.
pub(crate) fn from_chain(err: &(dyn StdError + 'static), limits: Limits) -> McpError {
    let mut current: Option<&(dyn StdError + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(sse) = e.downcast_ref::<SseError>() {
            return sse.to_mcp(limits);
        }
        if let Some(streamable) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            return from_streamable(streamable, limits);
        }
        if let Some(re) = e.downcast_ref::<reqwest::Error>() {
            return from_reqwest(re, limits);
        }
        current = e.source();
    }
    if is_too_large_text(&err.to_string()) {
        return McpError::TooLarge(limits.max_response_bytes);
    }
    McpError::Protocol(err.to_string())
}

/// A failed request of an initialized session. `closed` names why the transport ended when
/// the transport knows it (our SSE transport does).
pub(crate) fn from_service(
    err: &ServiceError,
    limits: Limits,
    closed: Option<McpError>,
) -> McpError {
    match err {
        ServiceError::McpError(data) => from_json_rpc(data),
        ServiceError::TransportSend(e) => from_chain(e, limits),
        ServiceError::TransportClosed | ServiceError::Cancelled { .. } => {
            closed.unwrap_or_else(|| {
                McpError::Unreachable("the connection to the MCP server was closed".to_owned())
            })
        }
        ServiceError::Timeout { .. } => McpError::Timeout(limits.request_timeout_ms),
        ServiceError::UnexpectedResponse => {
            McpError::Protocol("the server answered with the wrong kind of result".to_owned())
        }
        other => McpError::Protocol(other.to_string()),
    }
}

/// A failed `initialize`.
pub(crate) fn from_initialize(
    err: &ClientInitializeError,
    limits: Limits,
    closed: Option<McpError>,
) -> McpError {
    match err {
        ClientInitializeError::TransportError { error, .. } => from_chain(error, limits),
        ClientInitializeError::JsonRpcError(data) => from_json_rpc(data),
        ClientInitializeError::ConnectionClosed(_) | ClientInitializeError::Cancelled => closed
            .unwrap_or_else(|| {
                McpError::Unreachable(
                    "the MCP server closed the connection during initialize".to_owned(),
                )
            }),
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            from_initialize(fallback, limits, closed)
        }
        other => McpError::Protocol(format!("initialize failed: {other}")),
    }
}

/// Why the SSE transport failed. Carries no header value, token or body.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum SseError {
    #[error("{}", .0)]
    Mcp(McpError),
    /// An event (or one unfinished line) grew past the cap.
    #[error("an SSE event is larger than the size cap")]
    TooLarge,
    /// The stream ended.
    #[error("the SSE stream ended")]
    Closed,
}

impl SseError {
    pub(crate) fn to_mcp(&self, limits: Limits) -> McpError {
        match self {
            SseError::Mcp(e) => e.clone(),
            SseError::TooLarge => McpError::TooLarge(limits.max_response_bytes),
            SseError::Closed => McpError::Unreachable(
                "the MCP server closed its SSE stream (legacy HTTP+SSE transport)".to_owned(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    const LIMITS: Limits = Limits {
        request_timeout_ms: 1000,
        max_response_bytes: 64,
    };

    #[test]
    fn rmcp_4xx_text_becomes_http_status() {
        let err = StreamableHttpError::<reqwest::Error>::UnexpectedServerResponse(Cow::Borrowed(
            "HTTP 404 Not Found: <html>nope</html>",
        ));
        assert_eq!(
            from_streamable(&err, LIMITS),
            McpError::Http {
                status: 404,
                message: "not found: no MCP server at this URL".to_owned()
            }
        );
    }

    #[test]
    fn other_unexpected_text_is_protocol() {
        let err = StreamableHttpError::<reqwest::Error>::UnexpectedServerResponse(Cow::Borrowed(
            "HTTPS is not it",
        ));
        assert!(matches!(
            from_streamable(&err, LIMITS),
            McpError::Protocol(_)
        ));
        assert_eq!(leading_http_status("HTTP 4041"), None);
        assert_eq!(leading_http_status("HTTP 401 Unauthorized"), Some(401));
    }

    #[test]
    fn redactor_removes_secrets_and_ignores_short_ones() {
        let r = Redactor::new(["tok-123456", "abc", "Bearer tok-123456"]);
        assert_eq!(
            r.clean("got Bearer tok-123456 and tok-123456, abc"),
            "got <redacted> and <redacted>, abc"
        );
        let long = "y".repeat(1000);
        assert!(r.clean(&long).chars().count() <= MAX_MESSAGE_CHARS + 1);
    }

    #[test]
    fn learned_secrets_are_shared_by_clones() {
        let r = Redactor::new(["static-secret"]);
        let clone = r.clone();
        clone.remember("access-token-1");
        clone.remember("abc");
        assert_eq!(
            r.clean("static-secret access-token-1 abc"),
            "<redacted> <redacted> abc"
        );
        for i in 0..20 {
            r.remember(&format!("token-number-{i:02}"));
        }
        assert_eq!(r.clean("token-number-19"), "<redacted>");
    }

    #[test]
    fn auth_failures_pass_through_the_transport_error() {
        let inner = McpError::Http {
            status: 401,
            message: "unauthorized: the connector must be authorized again".into(),
        };
        let err = StreamableHttpError::<reqwest::Error>::Io(std::io::Error::other(AuthFailure(
            inner.clone(),
        )));
        assert_eq!(from_streamable(&err, LIMITS), inner);
    }

    #[test]
    fn http_messages_are_fixed_text() {
        for status in [400, 401, 403, 404, 405, 418, 500, 599] {
            let McpError::Http { message, .. } = http_error(status) else {
                panic!("not an HTTP error");
            };
            assert!(!message.is_empty());
        }
    }
}
