//! The legacy HTTP+SSE transport (MCP 2024-11-05), which rmcp dropped in 0.11.
//!
//! The client opens `GET <sse url>` (`Accept: text/event-stream`); the server's first event is
//! `endpoint`, whose data is the URL (usually relative, with a session id in the query) to
//! `POST` JSON-RPC messages to. Every reply and server notification then arrives on the GET
//! stream as a `message` event. The endpoint must pass the network guard and share the SSE
//! URL's origin, so a server cannot steer our POSTs (and their `Authorization`) elsewhere.
//!
//! [`SseTransport`] implements rmcp's `Transport`, so rmcp runs the session over it exactly as
//! over Streamable HTTP. Each event is capped at `max_response_bytes` while it is read.
//!
//! With an OAuth token source ([`Auth`]), the GET and every POST carry its current token, and
//! one refused with 401 (or 403 with a challenge) is sent once more with the token the source
//! gives after hearing of the refusal.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use engine::mcp::McpError;
use futures::{Stream, StreamExt};
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;

use crate::errors::{Failure, Limits, Redactor, SseError, from_reqwest, http_error};
use crate::oauth::{Challenge, ExposeSecret, Rejection, SecretString, TokenSource};

/// How long the probe waits for the `endpoint` event.
const ENDPOINT_WAIT: Duration = Duration::from_secs(5);

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// `event:` (default `message`).
    pub(crate) name: String,
    /// The `data:` lines joined by newlines.
    pub(crate) data: String,
}

/// An incremental `text/event-stream` parser that refuses any event (counted as the bytes of
/// its lines) larger than `max_event_bytes` before buffering more of it.
#[derive(Debug)]
pub(crate) struct EventParser {
    max_event_bytes: usize,
    /// The unfinished line.
    line: Vec<u8>,
    /// The previous chunk ended in `\r`: a `\n` starting the next one belongs to it.
    skip_lf: bool,
    name: Option<String>,
    data: String,
    has_data: bool,
    /// Bytes of the event so far (its finished lines).
    event_bytes: usize,
    ready: VecDeque<Event>,
}

impl EventParser {
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        Self {
            max_event_bytes,
            line: Vec::new(),
            skip_lf: false,
            name: None,
            data: String::new(),
            has_data: false,
            event_bytes: 0,
            ready: VecDeque::new(),
        }
    }

    /// Feeds a chunk; complete events become available from [`EventParser::next_event`].
    pub(crate) fn feed(&mut self, mut chunk: &[u8]) -> Result<(), SseError> {
        // An empty chunk between a `\r` and its `\n` must not end the wait for the `\n`.
        if chunk.is_empty() {
            return Ok(());
        }
        if self.skip_lf {
            self.skip_lf = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while let Some(pos) = chunk.iter().position(|b| *b == b'\n' || *b == b'\r') {
            self.line.extend_from_slice(&chunk[..pos]);
            self.check_size()?;
            let line = std::mem::take(&mut self.line);
            self.line_done(&line);
            let ending = chunk[pos];
            chunk = &chunk[pos + 1..];
            if ending == b'\r' {
                match chunk.first() {
                    Some(b'\n') => chunk = &chunk[1..],
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
        }
        self.line.extend_from_slice(chunk);
        self.check_size()
    }

    fn check_size(&self) -> Result<(), SseError> {
        if self.event_bytes + self.line.len() > self.max_event_bytes {
            return Err(SseError::TooLarge);
        }
        Ok(())
    }

    fn line_done(&mut self, line: &[u8]) {
        if line.is_empty() {
            self.dispatch();
            return;
        }
        self.event_bytes += line.len() + 1;
        if line.first() == Some(&b':') {
            return;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "event" => self.name = Some(value.to_owned()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // `id` and `retry` matter for reconnecting, which the legacy transport does not do.
            _ => {}
        }
    }

    fn dispatch(&mut self) {
        let name = self.name.take();
        let data = std::mem::take(&mut self.data);
        let has_data = std::mem::replace(&mut self.has_data, false);
        self.event_bytes = 0;
        if has_data {
            self.ready.push_back(Event {
                name: name
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| "message".to_owned()),
                data,
            });
        }
    }

    pub(crate) fn next_event(&mut self) -> Option<Event> {
        self.ready.pop_front()
    }
}

type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

/// The GET stream, parsed into events.
struct Events {
    body: ByteStream,
    parser: EventParser,
    limits: Limits,
}

impl Events {
    async fn next(&mut self) -> Result<Event, SseError> {
        loop {
            if let Some(event) = self.parser.next_event() {
                return Ok(event);
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.parser.feed(&chunk)?,
                Some(Err(e)) => return Err(SseError::Mcp(from_reqwest(&e, self.limits))),
                None => return Err(SseError::Closed),
            }
        }
    }
}

/// What the POSTs need; shared by the concurrent sends.
struct Poster {
    client: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
    limits: Limits,
    auth: Auth,
}

/// The OAuth side of the legacy transport: each request carries the source's current
/// token; a 401 (or a 403 with a challenge) is reported to the source and the request sent
/// once more with the token it gives.
#[derive(Clone, Default)]
pub(crate) struct Auth {
    pub(crate) source: Option<Arc<dyn TokenSource>>,
    pub(crate) redactor: Redactor,
}

impl Auth {
    async fn token(&self) -> Result<Option<SecretString>, McpError> {
        let Some(source) = &self.source else {
            return Ok(None);
        };
        let token = source.access_token().await.map_err(|e| e.to_mcp())?;
        if let Some(token) = &token {
            self.redactor.remember(token.expose_secret());
        }
        Ok(token)
    }

    /// Sends `build(headers)`, `headers` with the token, and handles one refusal.
    async fn send(
        &self,
        headers: &HeaderMap,
        limits: Limits,
        build: impl Fn(HeaderMap) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, McpError> {
        let mut token = self.token().await?;
        let mut retried = false;
        loop {
            let response = build(with_bearer(headers, token.as_ref())?)
                .send()
                .await
                .map_err(|e| from_reqwest(&e, limits))?;
            let status = response.status().as_u16();
            let challenge = response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .map(Challenge::parse);
            let refused = status == 401 || (status == 403 && challenge.is_some());
            let Some(source) = self.source.as_ref().filter(|_| refused && !retried) else {
                return Ok(response);
            };
            let rejection = Rejection {
                status,
                challenge: challenge.unwrap_or_default(),
                token: token.clone(),
            };
            match source.rejected(&rejection).await {
                Ok(Some(new)) => {
                    self.redactor.remember(new.expose_secret());
                    token = Some(new);
                    retried = true;
                }
                Ok(None) => return Ok(response),
                Err(err) => return Err(err.to_mcp()),
            }
        }
    }
}

/// `headers` with `Authorization: Bearer <token>` (marked sensitive) when there is a token.
fn with_bearer(headers: &HeaderMap, token: Option<&SecretString>) -> Result<HeaderMap, McpError> {
    let mut headers = headers.clone();
    if let Some(token) = token {
        let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose_secret()))
            .map_err(|_| {
                McpError::Protocol("the access token is not a valid header value".to_owned())
            })?;
        value.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    Ok(headers)
}

/// The outcome of probing a URL for a legacy SSE server.
pub(crate) enum Probe {
    /// It is one: here is the transport, already past the `endpoint` event.
    Sse(SseTransport),
    /// It is not (no event stream, or no `endpoint` event first).
    NotSse,
}

/// Opens the GET stream and reads the `endpoint` event.
pub(crate) async fn probe(
    client: &reqwest::Client,
    policy: &netguard::Policy,
    url: &Url,
    headers: &HeaderMap,
    limits: Limits,
    auth: Auth,
) -> Result<Probe, McpError> {
    let response = auth
        .send(headers, limits, |headers| {
            client
                .get(url.clone())
                .headers(headers)
                .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
        })
        .await?;
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
        return Err(http_error(status.as_u16()));
    }
    let is_event_stream = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/event-stream"))
        });
    if !status.is_success() || !is_event_stream {
        return Ok(Probe::NotSse);
    }
    let mut events = Events {
        body: Box::pin(response.bytes_stream()),
        parser: EventParser::new(limits.max_response_bytes),
        limits,
    };
    // A legacy server sends `endpoint` at once. A Streamable HTTP server may also answer the
    // GET with an event stream (its notification stream) that stays silent: that is not a
    // legacy server, and must not hold discovery until the connect timeout.
    let wait = Duration::from_millis(limits.request_timeout_ms).min(ENDPOINT_WAIT);
    let first = match tokio::time::timeout(wait, events.next()).await {
        Ok(Ok(event)) => event,
        Ok(Err(SseError::Closed)) | Err(_) => return Ok(Probe::NotSse),
        Ok(Err(e)) => return Err(e.to_mcp(limits)),
    };
    if first.name != "endpoint" {
        return Ok(Probe::NotSse);
    }
    let endpoint = endpoint_url(url, &first.data, policy)?;
    Ok(Probe::Sse(SseTransport {
        events,
        poster: Arc::new(Poster {
            client: client.clone(),
            endpoint,
            headers: headers.clone(),
            limits,
            auth,
        }),
        failure: Failure::default(),
        closed: false,
    }))
}

/// The URL an `endpoint` event's data names, resolved against the SSE URL: it must pass the
/// network guard and keep the SSE URL's origin.
pub(crate) fn endpoint_url(
    sse_url: &Url,
    data: &str,
    policy: &netguard::Policy,
) -> Result<Url, McpError> {
    let endpoint = sse_url.join(data.trim()).map_err(|e| {
        McpError::Protocol(format!("the SSE endpoint event is not a valid URL: {e}"))
    })?;
    let endpoint = policy
        .check_url(endpoint.as_str())
        .map_err(|b| McpError::Blocked(b.0))?;
    if endpoint.origin() != sse_url.origin() {
        return Err(McpError::Protocol(
            "the SSE endpoint event names another origin than the SSE URL".to_owned(),
        ));
    }
    Ok(endpoint)
}

/// rmcp's view of a legacy SSE session: sends are POSTs to the endpoint, receives are the
/// `message` events of the GET stream.
pub(crate) struct SseTransport {
    events: Events,
    poster: Arc<Poster>,
    /// Why the stream ended, for the session to report instead of rmcp's "transport closed".
    failure: Failure,
    closed: bool,
}

impl SseTransport {
    /// A handle on the reason the stream ended (set once it has).
    pub(crate) fn failure(&self) -> Failure {
        self.failure.clone()
    }

    fn fail(&mut self, error: SseError) {
        self.failure.record(error.to_mcp(self.events.limits));
        self.closed = true;
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let poster = self.poster.clone();
        let body = serde_json::to_vec(&item);
        async move {
            let body = body.map_err(|e| {
                SseError::Mcp(McpError::Protocol(format!(
                    "could not encode a message: {e}"
                )))
            })?;
            let response = poster
                .auth
                .send(&poster.headers, poster.limits, |headers| {
                    poster
                        .client
                        .post(poster.endpoint.clone())
                        .headers(headers)
                        .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                        .body(body.clone())
                })
                .await
                .map_err(SseError::Mcp)?;
            let status = response.status();
            if !status.is_success() {
                return Err(SseError::Mcp(http_error(status.as_u16())));
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        if self.closed {
            return None;
        }
        loop {
            match self.events.next().await {
                Ok(event) if event.name == "message" => {
                    match serde_json::from_str::<ServerJsonRpcMessage>(&event.data) {
                        Ok(message) => return Some(message),
                        Err(e) => {
                            self.fail(SseError::Mcp(McpError::Protocol(format!(
                                "the server sent a message that is not JSON-RPC: {e}"
                            ))));
                            return None;
                        }
                    }
                }
                // Another `endpoint` or a custom event: nothing for rmcp.
                Ok(event) => {
                    tracing::debug!(event = %event.name, "ignored an SSE event");
                }
                Err(e) => {
                    self.fail(e);
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.closed = true;
        // Dropping the body ends the GET, which ends the server's session.
        self.events.body = Box::pin(futures::stream::empty());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(parser: &mut EventParser) -> Vec<Event> {
        std::iter::from_fn(|| parser.next_event()).collect()
    }

    fn ev(name: &str, data: &str) -> Event {
        Event {
            name: name.to_owned(),
            data: data.to_owned(),
        }
    }

    #[test]
    fn parses_endpoint_and_messages() {
        let mut p = EventParser::new(1024);
        p.feed(b"event: endpoint\ndata: /messages/?session_id=1\n\n: ping\n\ndata: {\"a\":1}\n\n")
            .unwrap();
        assert_eq!(
            events(&mut p),
            vec![
                ev("endpoint", "/messages/?session_id=1"),
                ev("message", "{\"a\":1}")
            ]
        );
    }

    #[test]
    fn any_chunking_and_line_ending_gives_the_same_events() {
        let text = "event: message\r\ndata: one\r\ndata:two\r\n\r\ndata: three\r\rdata: x\n\n";
        let mut whole = EventParser::new(1024);
        whole.feed(text.as_bytes()).unwrap();
        let expected = events(&mut whole);
        assert_eq!(
            expected,
            vec![
                ev("message", "one\ntwo"),
                ev("message", "three"),
                ev("message", "x")
            ]
        );
        for split in 0..text.len() {
            let mut p = EventParser::new(1024);
            let (a, b) = text.as_bytes().split_at(split);
            p.feed(a).unwrap();
            p.feed(b).unwrap();
            assert_eq!(events(&mut p), expected, "split at {split}");
        }
        for size in 1..4 {
            let mut p = EventParser::new(1024);
            for chunk in text.as_bytes().chunks(size) {
                p.feed(chunk).unwrap();
            }
            assert_eq!(events(&mut p), expected, "chunks of {size}");
        }
    }

    #[test]
    fn an_empty_chunk_between_cr_and_lf_changes_nothing() {
        // Found by the `mcp_sse` fuzz target: the `\n` after an empty chunk was read as a blank
        // line, which ended the event and lost its name.
        let mut p = EventParser::new(1024);
        for chunk in [
            &b"event: endpoint\r"[..],
            b"",
            b"\ndata: /m\r",
            b"",
            b"\n\r\n",
        ] {
            p.feed(chunk).unwrap();
        }
        assert_eq!(events(&mut p), vec![ev("endpoint", "/m")]);
    }

    #[test]
    fn an_event_over_the_cap_is_refused_before_it_ends() {
        let mut p = EventParser::new(32);
        p.feed(b"data: small\n\n").unwrap();
        assert_eq!(events(&mut p), vec![ev("message", "small")]);
        // One long unfinished line.
        let mut p = EventParser::new(32);
        assert!(matches!(p.feed(&[b'x'; 40]), Err(SseError::TooLarge)));
        // Many short lines of one event.
        let mut p = EventParser::new(32);
        let many = "data: abcd\n".repeat(5);
        assert!(matches!(p.feed(many.as_bytes()), Err(SseError::TooLarge)));
    }

    #[test]
    fn an_event_without_data_is_not_dispatched() {
        let mut p = EventParser::new(1024);
        p.feed(b"id: 1\nretry: 500\n\nevent: x\n\n").unwrap();
        assert!(events(&mut p).is_empty());
    }
}
