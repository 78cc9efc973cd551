//! The Gemini API's own wire format: `POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse`
//! with the key in the `x-goog-api-key` header (never in the URL, where it would reach logs).
//!
//! Every turn streams: each SSE event is one whole `GenerateContentResponse` chunk, decoded
//! ([`decode`]) and forwarded as soon as it arrives. A server that ignores `alt=sse` and answers
//! JSON (one response, or the array of chunks the non-SSE stream sends) is adapted too.
//!
//! - [`wire`]: the request body and the response types (serde), with the mapping decisions.
//! - [`decode`]: chunks to [`ModelEvent`]s (pure, unit-tested).
//! - this file: the HTTP exchange, timeouts and error mapping.
//!
//! Errors: an HTTP error status is [`ModelError::Upstream`] with Google's `status` before its
//! message (`RESOURCE_EXHAUSTED: Quota exceeded…` for a 429); an error inside the stream is
//! `Upstream` with its code too; a broken connection is [`ModelError::Transport`] and silence
//! longer than the idle timeout [`ModelError::Timeout`]. No message carries the key.

mod decode;
mod wire;

use std::pin::Pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use engine::model::{ModelClient, ModelError, ModelEvent, ModelRequest, ModelStream};
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{FutureExt, Stream, StreamExt};
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};

use crate::ProvidersError;
use crate::http::{self, ClientOptions, Redactor};
use crate::registry::ProviderConfig;
use decode::Decoder;
use wire::{ErrorBody, GenerateRequest};

/// The header Google's API keys travel in.
const API_KEY_HEADER: HeaderName = HeaderName::from_static("x-goog-api-key");
/// The most we read of a non-streamed response body.
const MAX_RESPONSE_BODY: usize = 16 * 1024 * 1024;
/// The most of an error body we read.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A [`ModelClient`] for one provider speaking the Gemini API (`google`, or a gateway with the
/// same wire format).
///
/// Cheap to share behind an `Arc`: one instance per provider serves every run.
pub struct GeminiClient {
    /// The provider's one HTTP client, so connections (and TLS sessions) are pooled across turns.
    http: reqwest::Client,
    /// `{base_url}/v1beta/models`, computed once; each turn appends `{model}:streamGenerateContent`.
    models_url: Url,
    /// The key for `x-goog-api-key`, marked sensitive; `None` for a keyless gateway.
    api_key: Option<HeaderValue>,
    /// Scrubs the key from every error text this client hands out.
    redactor: Redactor,
    /// Longest silence tolerated: before the response head and between two body chunks.
    idle_timeout: Duration,
}

impl std::fmt::Debug for GeminiClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the query string: a gateway may take a key there.
        let mut url = self.models_url.clone();
        url.set_query(None);
        f.debug_struct("GeminiClient")
            .field("models_url", &url.as_str())
            .field("has_api_key", &self.api_key.is_some())
            .field("idle_timeout", &self.idle_timeout)
            .finish_non_exhaustive()
    }
}

impl GeminiClient {
    /// A client for `provider` (its `api` is not checked here: the registry picks the adapter).
    pub fn new(provider: &ProviderConfig, options: &ClientOptions) -> Result<Self, ProvidersError> {
        let invalid_url = |reason: String| ProvidersError::InvalidBaseUrl {
            provider: provider.name.clone(),
            reason,
        };
        let models_url = models_url(&provider.base_url).map_err(invalid_url)?;
        let key = provider.api_key.as_deref().filter(|key| !key.is_empty());
        let api_key = key
            .map(|key| {
                HeaderValue::from_str(key).map(|mut value| {
                    value.set_sensitive(true);
                    value
                })
            })
            .transpose()
            .map_err(|_| ProvidersError::InvalidApiKey {
                provider: provider.name.clone(),
            })?;
        Ok(GeminiClient {
            http: http::build_client(options)?,
            models_url,
            api_key,
            redactor: Redactor::new(key),
            idle_timeout: options.idle_timeout,
        })
    }

    /// The URL a turn of `model` is posted to.
    pub fn endpoint(&self, model: &str) -> String {
        stream_url(&self.models_url, model).map_or_else(|_| String::new(), String::from)
    }

    async fn start(&self, request: &ModelRequest) -> Result<ModelStream, ModelError> {
        let url = stream_url(&self.models_url, &request.model)?;
        let mut builder = self
            .http
            .post(url)
            .header(ACCEPT, "text/event-stream")
            .json(&GenerateRequest::from(request));
        if let Some(api_key) = &self.api_key {
            builder = builder.header(API_KEY_HEADER, api_key.clone());
        }
        let response = tokio::time::timeout(self.idle_timeout, builder.send())
            .await
            .map_err(|_| ModelError::Timeout)?
            .map_err(http::transport_error)?;
        if !response.status().is_success() {
            return Err(upstream_error(response, self.idle_timeout).await);
        }
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().starts_with("application/json"));
        if is_json {
            let body = http::read_body(response, MAX_RESPONSE_BODY, self.idle_timeout).await?;
            let events = decode::body_events(&body, Box::new(next_call_id))?;
            return Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))));
        }
        let turn = SseTurn {
            events: Box::pin(response.bytes_stream().eventsource()),
            decoder: Decoder::new(Box::new(next_call_id)),
            idle_timeout: self.idle_timeout,
            redactor: self.redactor.clone(),
        };
        Ok(turn.into_stream())
    }
}

#[async_trait::async_trait]
impl ModelClient for GeminiClient {
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        self.start(&request)
            .await
            .map_err(|err| self.redactor.scrub(err))
    }
}

/// `{base_url}/v1beta/models` (a query string on the base URL stays in place).
fn models_url(base_url: &str) -> Result<Url, String> {
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
        .extend(["v1beta", "models"]);
    Ok(url)
}

/// `{models_url}/{model}:streamGenerateContent?alt=sse`. The model is one path segment (a `/` in
/// it is escaped); a `models/` prefix, as Google's SDKs accept, is dropped.
fn stream_url(models_url: &Url, model: &str) -> Result<Url, ModelError> {
    let model = model.strip_prefix("models/").unwrap_or(model);
    let mut url = models_url.clone();
    url.path_segments_mut()
        .map_err(|()| ModelError::Protocol("the base URL cannot have a path".to_owned()))?
        .push(&format!("{model}:streamGenerateContent"));
    url.query_pairs_mut().append_pair("alt", "sse");
    Ok(url)
}

/// The id of a call Gemini sent without one: `call_<n>`, unique in the process and, as `n` starts
/// from the clock (microseconds) at first use, across restarts too; ids are the correlation keys
/// of a whole conversation, not just of one turn.
fn next_call_id() -> String {
    static NEXT: OnceLock<AtomicU64> = OnceLock::new();
    let next = NEXT.get_or_init(|| {
        let micros = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|since| since.as_micros())
            .unwrap_or_default();
        AtomicU64::new(u64::try_from(micros).unwrap_or_default())
    });
    format!("call_{}", next.fetch_add(1, Ordering::Relaxed))
}

/// Reads an error response: Google's `status: message` when the body is its envelope, else what
/// the shared reader finds, else the status reason.
async fn upstream_error(response: reqwest::Response, idle_timeout: Duration) -> ModelError {
    let status = response.status();
    // The status is what matters; a body that breaks off or stalls still gives it.
    let body = http::read_body(response, MAX_ERROR_BODY, idle_timeout)
        .await
        .unwrap_or_default();
    let message = serde_json::from_slice::<ErrorBody>(&body)
        .ok()
        .and_then(|envelope| envelope.status().and_then(wire::ErrorStatus::describe))
        .or_else(|| http::error_message(&body))
        .unwrap_or_else(|| {
            status
                .canonical_reason()
                .unwrap_or("no reason given")
                .to_owned()
        });
    ModelError::Upstream {
        status: status.as_u16(),
        message,
    }
}

type SseEvents =
    Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// One streamed turn in progress.
struct SseTurn {
    events: SseEvents,
    decoder: Decoder,
    idle_timeout: Duration,
    redactor: Redactor,
}

impl SseTurn {
    fn into_stream(self) -> ModelStream {
        let batches = futures::stream::unfold(Some(self), |turn| async move {
            let mut turn = turn?;
            let (batch, more) = turn.next_batch().await;
            Some((batch, more.then_some(turn)))
        });
        Box::pin(batches.flat_map(futures::stream::iter))
    }

    /// The events of the next chunk that yields any, and whether the turn goes on.
    async fn next_batch(&mut self) -> (Vec<Result<ModelEvent, ModelError>>, bool) {
        let mut out = Vec::new();
        loop {
            let next = match tokio::time::timeout(self.idle_timeout, self.events.next()).await {
                Ok(next) => next,
                Err(_) => return (vec![Err(ModelError::Timeout)], false),
            };
            let (step, more) = match next {
                Some(Ok(event)) => (self.decoder.data(&event.data, &mut out), true),
                Some(Err(err)) => (Err(sse_error(err)), false),
                // Gemini's stream has no end marker: the body's end closes the turn.
                None => (self.decoder.end(&mut out), false),
            };
            let step = step.map_err(|err| self.redactor.scrub(err));
            let mut batch: Vec<_> = out.drain(..).map(Ok).collect();
            match step {
                Ok(()) if more && batch.is_empty() => continue,
                Ok(()) => return (batch, more),
                Err(err) => {
                    batch.push(Err(err));
                    self.drain_ready();
                    return (batch, false);
                }
            }
        }
    }

    /// After an in-band error, reads what is already buffered without waiting, so the
    /// connection can go back to the pool instead of being dropped mid-body.
    fn drain_ready(&mut self) {
        for _ in 0..4 {
            match self.events.next().now_or_never() {
                Some(Some(_)) => continue,
                Some(None) | None => return,
            }
        }
    }
}

fn sse_error(err: EventStreamError<reqwest::Error>) -> ModelError {
    match err {
        EventStreamError::Transport(err) => http::transport_error(err),
        EventStreamError::Utf8(_) => ModelError::Protocol("the stream is not valid UTF-8".into()),
        EventStreamError::Parser(_) => ModelError::Protocol("invalid SSE framing".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(base_url: &str, key: Option<&str>) -> Result<GeminiClient, ProvidersError> {
        GeminiClient::new(
            &ProviderConfig {
                name: "google".into(),
                api: crate::WireApi::Gemini,
                base_url: base_url.into(),
                api_key: key.map(str::to_owned),
                models: vec![],
            },
            &ClientOptions::default(),
        )
    }

    #[test]
    fn endpoint_appends_the_wire_path() -> Result<(), ProvidersError> {
        let cases = [
            (
                "https://generativelanguage.googleapis.com",
                "gemini-2.5-flash",
                "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            ),
            (
                "https://generativelanguage.googleapis.com/",
                "models/gemini-3-pro-preview",
                "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse",
            ),
            (
                "http://127.0.0.1:8080/gw?tenant=a",
                "x/y",
                "http://127.0.0.1:8080/gw/v1beta/models/x%2Fy:streamGenerateContent?tenant=a&alt=sse",
            ),
        ];
        for (base, model, want) in cases {
            assert_eq!(client(base, None)?.endpoint(model), want);
        }
        Ok(())
    }

    #[test]
    fn debug_shows_neither_key_nor_query() -> Result<(), ProvidersError> {
        let client = client(
            "https://gw.example/?key=query-secret",
            Some("AIza-secret-test"),
        )?;
        let text = format!("{client:?}");
        assert!(!text.contains("query-secret"), "{text}");
        assert!(!text.contains("AIza-secret-test"), "{text}");
        assert!(text.contains("https://gw.example/v1beta/models"), "{text}");
        Ok(())
    }

    #[test]
    fn bad_urls_and_keys_are_refused() {
        assert!(client("ftp://example.com", None).is_err());
        assert!(client("generativelanguage.googleapis.com", None).is_err());
        assert!(client("https://example.com", Some("bad\nkey")).is_err());
    }

    #[test]
    fn generated_call_ids_are_unique() {
        let a = next_call_id();
        let b = next_call_id();
        assert!(a.starts_with("call_") && b.starts_with("call_"), "{a} {b}");
        assert_ne!(a, b);
    }
}
