//! What every HTTP adapter shares: building the client, sending a turn with retries and
//! back-off ([`ClientOptions`]), and turning HTTP failures into [`ModelError`]s that never carry
//! a secret (scrubbed with `crate::redact`). A streamed answer is handed to `crate::sse`. The
//! request goes out through the provider's `crate::transport` (in-task HTTP/1.1 or reqwest).

use std::time::Duration;

use engine::model::{ModelError, ModelEvent, ModelStream};
use futures::StreamExt;
use reqwest::Url;
use reqwest::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue, InvalidHeaderValue, USER_AGENT,
};

use crate::ProvidersError;
use crate::config::{ClientOptions, MAX_BACKOFF, ProviderConfig, WireApi};
use crate::redact::{Redactor, transport_error};
use crate::sse::{self, SseDecoder};
use crate::transport::{Answer, BodyStream, Transport, UpstreamRequest};

/// The `User-Agent` of every upstream request.
const AGENT: &str = concat!("agentd/", env!("CARGO_PKG_VERSION"));

/// The most we read of a non-streamed answer (a server that ignored the request to stream).
const MAX_JSON_BODY: usize = 16 * 1024 * 1024;
/// The most of an error body we read: enough for any error message, not a memory hazard.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// The most of an upstream error text we pass on when it is not the usual JSON envelope.
const MAX_ERROR_MESSAGE: usize = 1_000;

/// Builds the `reqwest::Client` a provider keeps for its whole life (connection pooling): for
/// its turns when they do not take the in-task client (`crate::transport`), and for its model
/// list.
///
/// The environment's proxy settings apply: operators may route model traffic through a proxy.
pub(crate) fn build_client(options: &ClientOptions) -> Result<reqwest::Client, ProvidersError> {
    // reqwest is built with `rustls-no-provider`: pick ring once per process. A second call (or
    // another crate having chosen first) returns Err, which is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .user_agent(AGENT)
        .connect_timeout(options.connect_timeout)
        .pool_max_idle_per_host(options.max_idle_connections)
        .pool_idle_timeout(options.pool_idle_timeout)
        .build()
        .map_err(ProvidersError::HttpClient)
}

/// How a provider's key travels.
#[derive(Debug, Clone)]
pub(crate) enum Credential {
    /// `Authorization: Bearer {key}`.
    Bearer,
    /// The bare key in this header (`x-api-key`, `x-goog-api-key`).
    Header(HeaderName),
}

impl Credential {
    /// How the keys of a wire API travel.
    pub(crate) fn of(api: WireApi) -> Credential {
        match api {
            WireApi::ChatCompletions | WireApi::Responses => Credential::Bearer,
            WireApi::AnthropicMessages => Credential::Header(HeaderName::from_static("x-api-key")),
            WireApi::Gemini => Credential::Header(HeaderName::from_static("x-goog-api-key")),
        }
    }

    /// The header carrying `provider`'s key (marked sensitive), or `None` without a key.
    pub(crate) fn header(
        self,
        provider: &ProviderConfig,
    ) -> Result<Option<(HeaderName, HeaderValue)>, ProvidersError> {
        let Some(key) = provider.api_key.as_deref().filter(|key| !key.is_empty()) else {
            return Ok(None);
        };
        match self {
            Credential::Bearer => bearer(key).map(|value| (AUTHORIZATION, value)),
            Credential::Header(name) => HeaderValue::from_str(key).map(|mut value| {
                value.set_sensitive(true);
                (name, value)
            }),
        }
        .map(Some)
        .map_err(|_| ProvidersError::InvalidApiKey {
            provider: provider.name.clone(),
        })
    }
}

/// The HTTP side of one provider, the same for every adapter: the pooled client, the URL, the
/// key's header, the redactor and the idle timeout.
pub(crate) struct Upstream {
    /// The provider's one HTTP client (in-task HTTP/1.1 or reqwest), so connections (and TLS
    /// sessions) are pooled across turns.
    transport: Transport,
    /// The base URL with the wire API's path appended, computed once.
    url: Url,
    /// The key's header and value (marked sensitive); `None` for a keyless server.
    credential: Option<(HeaderName, HeaderValue)>,
    /// Scrubs the key from every error text the client hands out.
    redactor: Redactor,
    /// Longest silence tolerated: before the response head and between two body chunks.
    idle_timeout: Duration,
    /// Retries of a turn that failed before its answer was accepted.
    retry: RetryPolicy,
}

impl Upstream {
    /// The client, URL (`provider.base_url` + `path`) and key header for `provider`.
    pub(crate) fn new(
        provider: &ProviderConfig,
        options: &ClientOptions,
        path: &[&str],
        credential: Credential,
    ) -> Result<Self, ProvidersError> {
        let url = endpoint(&provider.base_url, path).map_err(|reason| {
            ProvidersError::InvalidBaseUrl {
                provider: provider.name.clone(),
                reason,
            }
        })?;
        let key = provider.api_key.as_deref().filter(|key| !key.is_empty());
        let credential = credential.header(provider)?;
        Ok(Upstream {
            transport: Transport::new(&url, options, || build_client(options))?,
            url,
            credential,
            redactor: Redactor::new(key),
            idle_timeout: options.idle_timeout,
            retry: RetryPolicy::from(options),
        })
    }

    /// The URL computed at construction (with the base URL's query string, if it had one).
    pub(crate) fn url(&self) -> &Url {
        &self.url
    }

    /// A `POST` to `url` asking for an event stream.
    pub(crate) fn post(&self, url: Url) -> UpstreamRequest {
        UpstreamRequest::post(url)
            .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
            .header(USER_AGENT, HeaderValue::from_static(AGENT))
    }

    /// The client's `Debug`: the URL without its query string (some gateways take a key there),
    /// whether there is a key, and the timeout; never the key.
    pub(crate) fn debug(
        &self,
        f: &mut std::fmt::Formatter<'_>,
        name: &str,
        url_field: &str,
    ) -> std::fmt::Result {
        let mut url = self.url.clone();
        url.set_query(None);
        f.debug_struct(name)
            .field(url_field, &url.as_str())
            .field("has_api_key", &self.credential.is_some())
            .field("in_task_http1", &self.transport.is_in_task())
            .field("idle_timeout", &self.idle_timeout)
            .finish_non_exhaustive()
    }

    /// Sends one turn's `request` (with the key added) and streams its answer: an event stream
    /// decoded by `decoder`, or, from a server that ignored the request to stream, a JSON body
    /// decoded whole by `whole_body`. A non-2xx status is [`ModelError::Upstream`] with the
    /// message `error_message` finds in the body. No error carries the key.
    pub(crate) async fn turn<D: SseDecoder + Send + 'static>(
        &self,
        request: UpstreamRequest,
        error_message: fn(&[u8]) -> Option<String>,
        whole_body: fn(&[u8]) -> Result<Vec<ModelEvent>, ModelError>,
        decoder: D,
    ) -> Result<ModelStream, ModelError> {
        self.start(request, error_message, whole_body, decoder)
            .await
            .map_err(|err| self.redactor.scrub(err))
    }

    async fn start<D: SseDecoder + Send + 'static>(
        &self,
        mut request: UpstreamRequest,
        error_message: fn(&[u8]) -> Option<String>,
        whole_body: fn(&[u8]) -> Result<Vec<ModelEvent>, ModelError>,
        decoder: D,
    ) -> Result<ModelStream, ModelError> {
        if let Some((name, value)) = &self.credential {
            request = request.header(name.clone(), value.clone());
        }
        let response = self.send_with_retries(&request, error_message).await?;
        drop(request);
        let is_json = response
            .headers
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().starts_with("application/json"));
        if is_json {
            let body = read_all(response.body, MAX_JSON_BODY, self.idle_timeout).await?;
            let events = whole_body(&body)?;
            return Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))));
        }
        Ok(sse::sse_stream(
            response.body,
            decoder,
            self.idle_timeout,
            self.redactor.clone(),
        ))
    }
}

impl Upstream {
    /// Sends `request` until an answer is accepted (2xx), retrying what [`RetryPolicy`] allows.
    async fn send_with_retries(
        &self,
        request: &UpstreamRequest,
        error_message: fn(&[u8]) -> Option<String>,
    ) -> Result<Answer, ModelError> {
        let mut attempt = 0;
        loop {
            let sent = tokio::time::timeout(self.idle_timeout, self.transport.send(request))
                .await
                .map_err(|_| ModelError::Timeout)?;
            let delay = match sent {
                Ok(response) if response.status.is_success() => return Ok(response),
                Ok(response) => {
                    // The error body is read either way: it may say how long to wait (Google's
                    // RetryInfo), and a drained connection goes back to the pool.
                    let status = response.status.as_u16();
                    let body = read_all(response.body, MAX_ERROR_BODY, self.idle_timeout)
                        .await
                        .unwrap_or_default();
                    let delay = self.retry.after_status(
                        attempt,
                        status,
                        &response.headers,
                        retry_info(&body),
                    );
                    let Some(delay) = delay else {
                        return Err(error_from_body(status, &body, error_message));
                    };
                    tracing::warn!(
                        status,
                        attempt = attempt + 1,
                        wait_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                        "upstream answered with a retryable status; sending the turn again"
                    );
                    delay
                }
                Err(failure) => {
                    let delay = if failure.connect {
                        self.retry.after_failure(attempt)
                    } else {
                        None
                    };
                    let Some(delay) = delay else {
                        return Err(failure.error);
                    };
                    tracing::warn!(
                        error = %self.redactor.clean(&failure.error.to_string()),
                        attempt = attempt + 1,
                        "could not reach the upstream; trying again"
                    );
                    delay
                }
            };
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }
}

/// When a turn that failed before its answer was accepted is sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    max_retries: u32,
    base_delay: Duration,
    max_retry_after: Duration,
}

impl From<&ClientOptions> for RetryPolicy {
    fn from(options: &ClientOptions) -> Self {
        RetryPolicy {
            max_retries: options.max_retries,
            base_delay: options.retry_base_delay,
            max_retry_after: options.max_retry_after,
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt + 1` after an HTTP error status, or `None` when
    /// the error is final. The upstream's `x-should-retry` decides when present (as in the
    /// official SDKs); then the status does. `retry-after-ms`, else `retry-after` (seconds or an
    /// HTTP date), else the body's `retry_info` (Google's `RetryInfo.retryDelay`) sets the wait;
    /// a wait above `max_retry_after` is not retried.
    pub(crate) fn after_status(
        &self,
        attempt: u32,
        status: u16,
        headers: &reqwest::header::HeaderMap,
        retry_info: Option<Duration>,
    ) -> Option<Duration> {
        if attempt >= self.max_retries {
            return None;
        }
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let retryable = match header("x-should-retry").map(str::trim) {
            Some("true") => true,
            Some("false") => false,
            _ => matches!(status, 408 | 409 | 429 | 500 | 502 | 503 | 504 | 529),
        };
        if !retryable {
            return None;
        }
        let asked = header("retry-after-ms")
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| Duration::from_secs_f64(ms / 1000.0))
            .or_else(|| header("retry-after").and_then(retry_after))
            .or(retry_info);
        match asked {
            Some(wait) if wait > self.max_retry_after => None,
            Some(wait) => Some(wait),
            None => Some(self.backoff(attempt)),
        }
    }

    /// The wait before retry number `attempt + 1` after a failed connection.
    pub(crate) fn after_failure(&self, attempt: u32) -> Option<Duration> {
        (attempt < self.max_retries).then(|| self.backoff(attempt))
    }

    /// `base_delay · 2^attempt`, capped at [`MAX_BACKOFF`], minus up to a quarter of jitter so
    /// that clients failing together do not come back together.
    fn backoff(&self, attempt: u32) -> Duration {
        let full = self
            .base_delay
            .saturating_mul(1u32 << attempt.min(16))
            .min(MAX_BACKOFF);
        let jitter_source = random_u64();
        let jitter = full.mul_f64((jitter_source % 1000) as f64 / 4000.0);
        full.saturating_sub(jitter)
    }
}

/// The `retryDelay` of a Google RPC `RetryInfo` in an error body (Gemini's 429s carry it there,
/// with no `retry-after` header): `{"error": {"details": [{"@type": "…RetryInfo",
/// "retryDelay": "23s"}]}}`, or the same inside a one-element array.
fn retry_info(body: &[u8]) -> Option<Duration> {
    let json: serde_json::Value = serde_json::from_slice(body).ok()?;
    let error = json.get("error").or_else(|| json.pointer("/0/error"))?;
    error
        .get("details")?
        .as_array()?
        .iter()
        .filter(|detail| {
            detail
                .get("@type")
                .and_then(|t| t.as_str())
                .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"))
        })
        .find_map(|detail| {
            let delay = detail.get("retryDelay")?.as_str()?.trim();
            let seconds: f64 = delay.strip_suffix('s')?.parse().ok()?;
            (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
        })
}

/// A random number from the standard library's per-process hash seeds: enough for jitter and
/// unique ids, without a dependency for it.
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

/// A `retry-after` value: delay-seconds, or an HTTP date (the wait until then).
fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// `base_url` with `segments` appended to its path (a query string, as Azure's `api-version`,
/// stays in place).
pub(crate) fn endpoint(base_url: &str, segments: &[&str]) -> Result<Url, String> {
    let mut url = Url::parse(base_url.trim()).map_err(|err| err.to_string())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "the scheme must be http or https, not {:?}",
            url.scheme()
        ));
    }
    url.path_segments_mut()
        .map_err(|()| "the URL cannot have a path".to_owned())?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

/// `Authorization: Bearer {key}`, marked sensitive so that no debug output shows it.
pub(crate) fn bearer(key: &str) -> Result<HeaderValue, InvalidHeaderValue> {
    let mut value = HeaderValue::from_str(&format!("Bearer {key}"))?;
    value.set_sensitive(true);
    Ok(value)
}

/// The [`ModelError::Upstream`] of an error status and its body.
fn error_from_body(
    status: u16,
    body: &[u8],
    error_message: fn(&[u8]) -> Option<String>,
) -> ModelError {
    let message = error_message(body).unwrap_or_else(|| {
        reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|status| status.canonical_reason())
            .unwrap_or("no reason given")
            .to_owned()
    });
    ModelError::Upstream { status, message }
}

/// Reads an error response and makes the [`ModelError::Upstream`] for it: what `error_message`
/// finds in the body (usually [`error_message`]: `error.message` from the JSON envelope when
/// there is one, else the start of the body), else the status reason.
pub(crate) async fn upstream_error(
    response: reqwest::Response,
    idle_timeout: Duration,
    error_message: fn(&[u8]) -> Option<String>,
) -> ModelError {
    let status = response.status().as_u16();
    // The status is what matters; a body that breaks off or stalls still gives it.
    let body = read_body(response, MAX_ERROR_BODY, idle_timeout)
        .await
        .unwrap_or_default();
    error_from_body(status, &body, error_message)
}

/// Reads a whole reqwest body (the model lists), keeping at most `limit` bytes, with
/// `idle_timeout` between chunks.
pub(crate) async fn read_body(
    response: reqwest::Response,
    limit: usize,
    idle_timeout: Duration,
) -> Result<Vec<u8>, ModelError> {
    let body = response
        .bytes_stream()
        .map(|chunk| chunk.map_err(transport_error));
    read_all(Box::pin(body), limit, idle_timeout).await
}

/// Reads a whole answer body, keeping at most `limit` bytes, with `idle_timeout` between
/// chunks.
async fn read_all(
    mut body_stream: BodyStream,
    limit: usize,
    idle_timeout: Duration,
) -> Result<Vec<u8>, ModelError> {
    let mut body = Vec::new();
    loop {
        let chunk = tokio::time::timeout(idle_timeout, body_stream.next())
            .await
            .map_err(|_| ModelError::Timeout)?
            .transpose()?;
        let Some(chunk) = chunk else {
            return Ok(body);
        };
        let room = limit.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= limit {
            return Ok(body);
        }
    }
}

/// The message of an upstream error body, if it has one.
pub(crate) fn error_message(body: &[u8]) -> Option<String> {
    if let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) {
        // OpenAI and most compatible servers: {"error": {"message": "…"}}; some (Ollama, vLLM
        // versions) {"error": "…"}, {"message": "…"} or {"detail": "…"}.
        let candidates = [
            json.pointer("/error/message"),
            json.get("error"),
            json.get("message"),
            json.get("detail"),
        ];
        if let Some(text) = candidates.into_iter().flatten().find_map(|v| v.as_str()) {
            return Some(truncate(text.trim()));
        }
        // A JSON array envelope (Gemini's errors as an array): the first element's message.
        if let Some(text) = json.pointer("/0/error/message").and_then(|v| v.as_str()) {
            return Some(truncate(text.trim()));
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    (!text.is_empty()).then(|| truncate(text))
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_ERROR_MESSAGE) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy::from(&ClientOptions::default())
    }

    fn headers(pairs: &[(&'static str, &str)]) -> reqwest::header::HeaderMap {
        pairs
            .iter()
            .filter_map(|(name, value)| Some((HeaderName::from_static(name), value.parse().ok()?)))
            .collect()
    }

    #[test]
    fn retryable_statuses_are_retried_up_to_the_limit() {
        let none = headers(&[]);
        for status in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(
                policy().after_status(0, status, &none, None).is_some(),
                "{status}"
            );
            assert!(
                policy().after_status(1, status, &none, None).is_some(),
                "{status}"
            );
            assert_eq!(
                policy().after_status(2, status, &none, None),
                None,
                "{status}"
            );
        }
        for status in [400, 401, 403, 404, 422, 501] {
            assert_eq!(
                policy().after_status(0, status, &none, None),
                None,
                "{status}"
            );
        }
        assert!(policy().after_failure(1).is_some());
        assert_eq!(policy().after_failure(2), None);
    }

    #[test]
    fn the_upstream_decides_how_long_and_whether() {
        let wait = |pairs: &[(&'static str, &str)], status| {
            policy().after_status(0, status, &headers(pairs), None)
        };
        assert_eq!(
            wait(&[("retry-after", "3")], 429),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            wait(&[("retry-after-ms", "250"), ("retry-after", "3")], 429),
            Some(Duration::from_millis(250))
        );
        // Longer than max_retry_after: the error goes back at once.
        assert_eq!(wait(&[("retry-after", "3600")], 429), None);
        let soon = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(5));
        assert!(wait(&[("retry-after", &soon)], 503).is_some_and(|d| d <= Duration::from_secs(5)));
        assert_eq!(wait(&[("x-should-retry", "false")], 503), None);
        assert!(wait(&[("x-should-retry", "true")], 400).is_some());
        // Google's RetryInfo in the body, when no header says.
        let google = br#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"23s"}]}}"#;
        assert_eq!(retry_info(google), Some(Duration::from_secs(23)));
        assert_eq!(
            retry_info(br#"[{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}]"#),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(retry_info(br#"{"error":{"message":"x"}}"#), None);
        assert_eq!(
            policy().after_status(0, 429, &headers(&[]), retry_info(google)),
            Some(Duration::from_secs(23))
        );
        assert_eq!(
            policy().after_status(
                0,
                429,
                &headers(&[("retry-after", "2")]),
                retry_info(google)
            ),
            Some(Duration::from_secs(2))
        );
        // Unreadable values fall back to the back-off.
        assert!(wait(&[("retry-after", "soon")], 429).is_some_and(|d| d <= MAX_BACKOFF));
    }

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let policy = policy();
        for attempt in 0..6 {
            let full = Duration::from_millis(500 * (1 << attempt)).min(MAX_BACKOFF);
            let wait = policy.backoff(attempt);
            assert!(
                wait <= full && wait >= full.mul_f64(0.75),
                "{attempt}: {wait:?}"
            );
        }
        assert!(policy.backoff(40) <= MAX_BACKOFF);
    }

    #[test]
    fn error_message_reads_the_usual_envelopes() {
        let cases: [(&[u8], Option<&str>); 7] = [
            (
                br#"{"error":{"message":"Rate limit reached","type":"requests"}}"#,
                Some("Rate limit reached"),
            ),
            (br#"{"error":"model not found"}"#, Some("model not found")),
            (br#"{"message":"bad"}"#, Some("bad")),
            (br#"{"detail":"Not Found"}"#, Some("Not Found")),
            (br#"[{"error":{"message":"quota"}}]"#, Some("quota")),
            (b"  upstream exploded \n", Some("upstream exploded")),
            (b"", None),
        ];
        for (body, want) in cases {
            assert_eq!(error_message(body).as_deref(), want);
        }
    }

    #[test]
    fn long_error_text_is_cut() {
        let body = "x".repeat(5_000);
        let message = error_message(body.as_bytes()).unwrap_or_default();
        assert_eq!(message.chars().count(), MAX_ERROR_MESSAGE + 1);
    }
}
