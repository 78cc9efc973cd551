//! The MCP client adapter: [`McpClient`] implements the engine's
//! [`McpConnector`] port over the network, behind the network guard.
//!
//! # Transports
//! - **Streamable HTTP** (MCP 2025-03-26 and later) first, through rmcp's
//!   `StreamableHttpClientTransport` with our own guarded `reqwest::Client`. rmcp handles JSON
//!   and SSE-framed answers, the `Mcp-Session-Id`, resumption with `Last-Event-ID` and the
//!   `DELETE` of the session on close.
//! - **Legacy HTTP+SSE** (MCP 2024-11-05) as a fallback, through our own transport in `sse`
//!   (rmcp has had no SSE client since 0.11): `GET` the URL as an event stream, read the
//!   `endpoint` event, `POST` messages there, read answers from the stream.
//!
//! The session asks for protocol version 2025-11-25 (rmcp's own default, 2026-07-28, is
//! unknown to most servers and to the conformance suite) and advertises no client
//! capabilities: agentd only lists and calls tools.
//!
//! # Fallback
//! The spec's backwards-compatibility rule: when the `initialize` POST fails with an HTTP 4xx
//! other than 401/403 (typically 404 or 405), or the answer is not MCP at all (an HTML page,
//! an unexpected content type), the client sends `GET` with `Accept: text/event-stream` to the
//! same URL. If that answers `text/event-stream` and its first event (within 5 s) is
//! `endpoint`, the session runs over legacy SSE; otherwise the Streamable HTTP error is
//! reported. Refusals by the guard, unreachable servers, timeouts and 401/403 never fall back.
//!
//! # Guard, secrets
//! Every server URL passes [`netguard::Policy::check_url`] before anything is sent, and all
//! HTTP goes through one client built from [`netguard::Policy::client_builder`] (resolver and
//! redirect checks); the legacy `endpoint` must pass the guard too and keep the SSE URL's
//! origin. The token (`Authorization: Bearer …`) and the extra headers go with every request
//! of both transports; they are marked sensitive, never logged (logs name the server label
//! and host only), and removed from any error text a server echoes back.
//!
//! # OAuth
//! [`oauth`] implements the MCP authorization spec for servers that want OAuth: discovery,
//! client registration, the authorization code flow with PKCE, and [`oauth::RefreshingTokens`].
//! [`McpClient::connect_authorized`] takes the bearer token of every request from an
//! [`oauth::TokenSource`] instead of `McpServer::authorization`: a request the server refuses
//! (401, or 403 with a challenge) is reported to the source and sent once more with the token
//! it gives (on both transports); every access token sent is added to the session's redactor.
//! The OAuth requests go through the same guarded client ([`McpClient::oauth`]).
//!
//! # Timeouts and caps ([`McpConfig`])
//! - `connect_timeout` bounds discovery as a whole: connect, `initialize`, and the fallback
//!   probe. It is also the TCP/TLS connect timeout of the HTTP client.
//! - `request_timeout` bounds every request (`initialize`, each `tools/list` page,
//!   `tools/call`) with our own `tokio::time::timeout`, because rmcp's own per-request
//!   timeouts have been seen to hang; a late call is cancelled (`notifications/cancelled`).
//!   The HTTP client has no overall timeout, since the SSE streams are long-lived.
//! - `max_response_bytes` caps each JSON answer and each SSE event, on both transports
//!   ([`engine::mcp::McpError::TooLarge`]). Over Streamable HTTP the session goes on; over
//!   legacy SSE an oversized event ends the session, since the one event stream carries every
//!   answer and cannot be resynchronised.
//! - `tools/list` follows `nextCursor` for at most [`MAX_TOOL_PAGES`] pages and
//!   [`MAX_TOOLS`] tools; more is a protocol error.
//!
//! # Layout
//! - here: [`McpConfig`], [`McpClient`] and the connect/fallback logic.
//! - `session`: the [`McpSession`] (list, call, changed, close) and
//!   the conversions of rmcp's tools and results.
//! - `http`: rmcp's Streamable HTTP client over the guarded client (size cap watch, the
//!   token source's bearer and the one retry after a refusal).
//! - `sse`: the legacy HTTP+SSE transport and its event parser.
//! - `handler`: our rmcp client handler (client info, `tools/list_changed`).
//! - `errors`: rmcp/reqwest errors to [`McpError`], the redactor.
//! - `connector_oauth`: the engine port's OAuth methods (an admin's authorization of a saved
//!   connector, connections with its stored grant).
//! - [`oauth`]: OAuth for MCP servers (its own layout in its docs).
//!
//! # Example
//! ```no_run
//! use engine::mcp::{McpConnector, McpServer};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = mcp::McpClient::new(mcp::McpConfig::new(netguard::Policy::strict()))?;
//! let server = McpServer {
//!     label: "docs".into(),
//!     url: "https://mcp.example.com/mcp".into(),
//!     authorization: Some("token".into()),
//!     headers: Default::default(),
//! };
//! let session = client.connect(&server).await?;
//! let names: Vec<String> = session.list_tools().await?.into_iter().map(|t| t.name).collect();
//! # let _ = names;
//! session.close().await;
//! # Ok(())
//! # }
//! ```

mod connector_oauth;
mod errors;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod handler;
mod http;
pub mod oauth;
mod session;
mod sse;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use engine::mcp::{McpConnector, McpError, McpServer, McpSession, McpTransport};
use engine::oauth::{OAuthClientRequest, OAuthCredentials, OAuthStarted};
use reqwest::Url;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use rmcp::ServiceExt;
use rmcp::service::{ClientInitializeError, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::errors::{Failure, Limits, Redactor, from_initialize};
use crate::handler::Handler;
use crate::http::GuardedHttp;
use crate::oauth::TokenSource;
use crate::oauth::http::{MAX_OAUTH_BYTES, OAuthHttp};
use crate::session::Session;
use crate::sse::Probe;

pub use crate::session::{MAX_TOOL_PAGES, MAX_TOOLS};

/// How [`McpClient`] talks to MCP servers.
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// Bound of every MCP request: `initialize`, each `tools/list` page, `tools/call`.
    pub request_timeout: Duration,
    /// Bound of discovery as a whole (connect, `initialize`, fallback probe), and the TCP/TLS
    /// connect timeout.
    pub connect_timeout: Duration,
    /// Cap of one answer (a JSON body or one SSE event).
    pub max_response_bytes: usize,
    /// Which destinations may be contacted.
    pub policy: netguard::Policy,
}

impl McpConfig {
    /// The defaults (30 s per request, 10 s to connect, 4 MiB per answer) with `policy`.
    pub fn new(policy: netguard::Policy) -> Self {
        Self {
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_response_bytes: 4 * 1024 * 1024,
            policy,
        }
    }
}

/// Why an [`McpClient`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum McpClientError {
    /// The HTTP client could not be built (for instance no TLS back end).
    #[error("could not build the MCP HTTP client: {0}")]
    HttpClient(String),
}

/// Opens MCP sessions; one per process is enough (it keeps one connection pool).
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

struct Inner {
    config: McpConfig,
    /// The guarded client every request of every session goes through.
    http: reqwest::Client,
    /// The OAuth steps, over the same client.
    oauth: oauth::OAuth,
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl McpClient {
    pub fn new(config: McpConfig) -> Result<McpClient, McpClientError> {
        // reqwest is built with `rustls-no-provider`: pick ring once per process. A second call
        // (or another crate having chosen first) returns Err, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = config
            .policy
            .client_builder()
            .connect_timeout(config.connect_timeout)
            .user_agent(concat!("agentd/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| McpClientError::HttpClient(netguard::describe(&e)))?;
        let oauth = oauth::OAuth::new(OAuthHttp {
            client: http.clone(),
            policy: config.policy.clone(),
            timeout: config.request_timeout,
            max_bytes: MAX_OAUTH_BYTES,
        });
        Ok(McpClient {
            inner: Arc::new(Inner {
                config,
                http,
                oauth,
            }),
        })
    }

    /// The OAuth steps (discovery, registration, authorization, tokens) over this client's
    /// guarded HTTP client and request timeout: see [`oauth`].
    pub fn oauth(&self) -> oauth::OAuth {
        self.inner.oauth.clone()
    }

    /// Connects like [`McpConnector::connect`], with the bearer token of every request
    /// from `tokens` (an OAuth server): `server.authorization` and any `Authorization`
    /// header of `server.headers` are ignored. A request the server refuses (401, or 403
    /// with a challenge) is reported to `tokens` and sent once more with the token it
    /// gives. The server URL must be https (or http on loopback), since it gets the token.
    pub async fn connect_authorized(
        &self,
        server: &McpServer,
        tokens: Arc<dyn TokenSource>,
    ) -> Result<Box<dyn McpSession>, McpError> {
        self.connect_authorized_over(server, tokens, McpTransport::Auto)
            .await
    }

    /// [`McpClient::connect_authorized`] over the given transport (a saved connector may pin
    /// one).
    pub async fn connect_authorized_over(
        &self,
        server: &McpServer,
        tokens: Arc<dyn TokenSource>,
        transport: McpTransport,
    ) -> Result<Box<dyn McpSession>, McpError> {
        let mut target = Target::new(server, &self.inner.config.policy)?;
        oauth::http::secure(&target.url, "an MCP server that uses OAuth")
            .map_err(|e| e.to_mcp())?;
        target.use_token_source(tokens);
        target.transport = transport;
        self.connect_target(target).await
    }

    fn limits(&self) -> Limits {
        Limits {
            request_timeout_ms: millis(self.inner.config.request_timeout),
            max_response_bytes: self.inner.config.max_response_bytes,
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[async_trait::async_trait]
impl McpConnector for McpClient {
    async fn connect(&self, server: &McpServer) -> Result<Box<dyn McpSession>, McpError> {
        let target = Target::new(server, &self.inner.config.policy)?;
        self.connect_target(target).await
    }

    async fn connect_over(
        &self,
        server: &McpServer,
        transport: McpTransport,
    ) -> Result<Box<dyn McpSession>, McpError> {
        let mut target = Target::new(server, &self.inner.config.policy)?;
        target.transport = transport;
        self.connect_target(target).await
    }

    async fn oauth_start(
        &self,
        server_url: &str,
        client: &OAuthClientRequest,
    ) -> Result<OAuthStarted, String> {
        connector_oauth::start(self.oauth(), server_url, client).await
    }

    async fn connect_oauth(
        &self,
        server: &McpServer,
        transport: McpTransport,
        credentials: Arc<OAuthCredentials>,
    ) -> Result<Box<dyn McpSession>, McpError> {
        let tokens = connector_oauth::token_source(self.oauth(), &credentials)?;
        self.connect_authorized_over(server, tokens, transport)
            .await
    }
}

impl McpClient {
    async fn connect_target(&self, target: Target) -> Result<Box<dyn McpSession>, McpError> {
        tracing::debug!(label = %target.label, host = %target.host, "connecting to MCP server");
        let connect_timeout = self.inner.config.connect_timeout;
        let result = tokio::time::timeout(connect_timeout, self.discover(&target)).await;
        let result = match result {
            Ok(result) => result.map_err(|e| target.redactor.error(e)),
            Err(_) => Err(McpError::Timeout(millis(connect_timeout))),
        };
        match &result {
            Ok(_) => {
                tracing::debug!(label = %target.label, host = %target.host, "MCP session ready")
            }
            Err(err) => {
                tracing::debug!(label = %target.label, host = %target.host, %err, "MCP connect failed");
            }
        }
        result
    }
}

/// One server to connect to, its secrets already in header form.
struct Target {
    label: String,
    host: String,
    url: Url,
    token: Option<String>,
    /// The server's extra headers, values marked sensitive.
    headers: Vec<(HeaderName, HeaderValue)>,
    redactor: Redactor,
    /// The OAuth token source, instead of `token`.
    auth: Option<Arc<dyn TokenSource>>,
    /// Streamable HTTP with the SSE fallback, or one of them only.
    transport: McpTransport,
}

/// Headers the transports set themselves; an extra header of the same name is dropped.
const TRANSPORT_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "connection",
    "transfer-encoding",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

impl Target {
    fn new(server: &McpServer, policy: &netguard::Policy) -> Result<Self, McpError> {
        let url = policy
            .check_url(&server.url)
            .map_err(|b| McpError::Blocked(b.0))?;
        let host = url.host_str().unwrap_or_default().to_owned();
        let token = server.authorization.clone().filter(|t| !t.is_empty());
        let bearer = token.as_ref().map(|t| format!("Bearer {t}"));
        let redactor = Redactor::new(
            token
                .iter()
                .chain(bearer.iter())
                .map(String::as_str)
                .chain(server.headers.values().map(String::as_str)),
        );
        let mut headers = Vec::with_capacity(server.headers.len());
        for (name, value) in &server.headers {
            let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                McpError::Protocol(format!("\"{name}\" is not a valid HTTP header name"))
            })?;
            if TRANSPORT_HEADERS.contains(&header_name.as_str())
                || (header_name == AUTHORIZATION && token.is_some())
            {
                tracing::debug!(header = %header_name, "dropped an MCP header the transport sets");
                continue;
            }
            let mut header_value = HeaderValue::from_str(value).map_err(|_| {
                McpError::Protocol(format!("the value of header \"{name}\" is not valid"))
            })?;
            header_value.set_sensitive(true);
            headers.push((header_name, header_value));
        }
        if let Some(token) = &token {
            HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                McpError::Protocol("the authorization token is not a valid header value".to_owned())
            })?;
        }
        Ok(Self {
            label: server.label.clone(),
            host,
            url,
            token,
            headers,
            redactor,
            auth: None,
            transport: McpTransport::Auto,
        })
    }

    /// Takes the bearer token of every request from `tokens`: no static token, no
    /// `Authorization` among the extra headers.
    fn use_token_source(&mut self, tokens: Arc<dyn TokenSource>) {
        self.token = None;
        self.headers.retain(|(name, _)| *name != AUTHORIZATION);
        self.auth = Some(tokens);
    }

    /// The legacy transport's view of the token source.
    fn sse_auth(&self) -> sse::Auth {
        sse::Auth {
            source: self.auth.clone(),
            redactor: self.redactor.clone(),
        }
    }

    /// Every header of a request: `Authorization` and the extra headers.
    fn header_map(&self) -> HeaderMap {
        let mut map = HeaderMap::with_capacity(self.headers.len() + 1);
        if let Some(token) = &self.token
            && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {token}"))
        {
            value.set_sensitive(true);
            map.insert(AUTHORIZATION, value);
        }
        for (name, value) in &self.headers {
            map.append(name.clone(), value.clone());
        }
        map
    }
}

impl McpClient {
    /// Streamable HTTP, then (see the crate docs) legacy SSE.
    async fn discover(&self, target: &Target) -> Result<Box<dyn McpSession>, McpError> {
        let limits = self.limits();
        let changed = Arc::new(AtomicBool::new(false));
        let failure = Failure::default();
        let streamable_error = if target.transport == McpTransport::Sse {
            None
        } else {
            match self
                .streamable(target, changed.clone(), failure.clone())
                .await
            {
                Ok(running) => return Ok(self.session(target, running, changed, failure)),
                Err(err) => Some(target.redactor.error(err)),
            }
        };
        if let Some(err) = &streamable_error
            && (target.transport == McpTransport::StreamableHttp || !falls_back(err))
        {
            return Err(err.clone());
        }
        tracing::debug!(label = %target.label, host = %target.host, streamable_error = ?streamable_error, "trying legacy SSE");
        let probe = sse::probe(
            &self.inner.http,
            &self.inner.config.policy,
            &target.url,
            &target.header_map(),
            limits,
            target.sse_auth(),
        )
        .await;
        let transport = match probe {
            Ok(Probe::Sse(transport)) => transport,
            // Not an SSE server either: the first answer is the more telling one.
            Ok(Probe::NotSse) => {
                return Err(streamable_error.unwrap_or_else(|| {
                    McpError::Protocol(
                        "the server does not speak the legacy HTTP+SSE transport (no event stream with an endpoint event)".to_owned(),
                    )
                }));
            }
            Err(err) => return Err(err),
        };
        let failure = transport.failure();
        let handler = Handler::new(changed.clone());
        let running = self.initialize(handler.serve(transport), &failure).await?;
        tracing::debug!(label = %target.label, host = %target.host, "using the legacy HTTP+SSE transport");
        Ok(self.session(target, running, changed, failure))
    }

    async fn streamable(
        &self,
        target: &Target,
        changed: Arc<AtomicBool>,
        failure: Failure,
    ) -> Result<RunningService<RoleClient, Handler>, McpError> {
        let max = self.inner.config.max_response_bytes;
        let mut config = StreamableHttpClientTransportConfig::with_uri(target.url.as_str())
            .custom_headers(target.headers.iter().cloned().collect::<HashMap<_, _>>())
            .max_json_response_size(max)
            .max_sse_event_size(max);
        if let Some(token) = &target.token {
            config = config.auth_header(token.clone());
        }
        let http = GuardedHttp {
            client: self.inner.http.clone(),
            failure: failure.clone(),
            limits: self.limits(),
            auth: target.auth.clone(),
            redactor: target.redactor.clone(),
        };
        let transport = StreamableHttpClientTransport::with_client(http, config);
        self.initialize(Handler::new(changed).serve(transport), &failure)
            .await
    }

    /// `initialize` under the request timeout.
    async fn initialize(
        &self,
        fut: impl Future<Output = Result<RunningService<RoleClient, Handler>, ClientInitializeError>>,
        failure: &Failure,
    ) -> Result<RunningService<RoleClient, Handler>, McpError> {
        let limits = self.limits();
        match tokio::time::timeout(self.inner.config.request_timeout, fut).await {
            Ok(Ok(running)) => Ok(running),
            Ok(Err(err)) => Err(from_initialize(&err, limits, failure.take())),
            Err(_) => Err(McpError::Timeout(limits.request_timeout_ms)),
        }
    }

    fn session(
        &self,
        target: &Target,
        running: RunningService<RoleClient, Handler>,
        changed: Arc<AtomicBool>,
        failure: Failure,
    ) -> Box<dyn McpSession> {
        Box::new(Session {
            label: target.label.clone(),
            host: target.host.clone(),
            peer: running.peer().clone(),
            running: tokio::sync::Mutex::new(Some(running)),
            changed,
            limits: self.limits(),
            redactor: target.redactor.clone(),
            failure,
        })
    }
}

/// Whether a failed Streamable HTTP `initialize` looks like a legacy SSE server.
fn falls_back(err: &McpError) -> bool {
    match err {
        McpError::Http { status, .. } => {
            (400..500).contains(status) && *status != 401 && *status != 403
        }
        McpError::Protocol(_) => true,
        McpError::Blocked(_)
        | McpError::Unreachable(_)
        | McpError::TooLarge(_)
        | McpError::Timeout(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn server(url: &str) -> McpServer {
        McpServer {
            label: "x".into(),
            url: url.into(),
            authorization: Some("secret-token".into()),
            headers: BTreeMap::from([
                ("X-Api-Key".to_owned(), "key-value-1".to_owned()),
                ("Accept".to_owned(), "text/html".to_owned()),
            ]),
        }
    }

    fn loopback() -> netguard::Policy {
        netguard::Policy::with_allowed(&["127.0.0.0/8".to_owned()]).unwrap()
    }

    #[test]
    fn target_builds_sensitive_headers_and_drops_transport_ones() {
        let target = Target::new(&server("http://127.0.0.1:1/mcp"), &loopback()).unwrap();
        let map = target.header_map();
        assert_eq!(map.len(), 2);
        assert!(map.get("accept").is_none());
        assert!(map.values().all(HeaderValue::is_sensitive));
        let debug = format!("{map:?}");
        assert!(
            !debug.contains("secret-token") && !debug.contains("key-value-1"),
            "{debug}"
        );
    }

    #[test]
    fn strict_policy_refuses_loopback_before_anything_is_sent() {
        let err = Target::new(
            &server("http://127.0.0.1:1/mcp"),
            &netguard::Policy::strict(),
        )
        .err()
        .unwrap();
        assert!(matches!(err, McpError::Blocked(_)), "{err:?}");
    }

    #[test]
    fn bad_header_is_an_error_without_its_value() {
        let mut s = server("http://127.0.0.1:1/mcp");
        s.headers
            .insert("X-Bad".into(), "line\nbreak-secret".into());
        let err = Target::new(&s, &loopback()).err().unwrap();
        assert!(!err.to_string().contains("break-secret"), "{err}");
    }

    #[test]
    fn fallback_rule() {
        assert!(falls_back(&errors::http_error(404)));
        assert!(falls_back(&errors::http_error(405)));
        assert!(falls_back(&errors::http_error(400)));
        assert!(!falls_back(&errors::http_error(401)));
        assert!(!falls_back(&errors::http_error(403)));
        assert!(!falls_back(&errors::http_error(500)));
        assert!(falls_back(&McpError::Protocol("html".into())));
        assert!(!falls_back(&McpError::Unreachable("refused".into())));
        assert!(!falls_back(&McpError::Timeout(1)));
    }
}
