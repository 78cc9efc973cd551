//! The Anthropic Messages wire API (`POST {base_url}/v1/messages`).
//!
//! Every turn is requested with `stream: true`; the SSE body is decoded event by event
//! ([`decode`]) and each delta is forwarded as soon as it arrives. A server that ignores `stream`
//! and answers one `message` JSON (some gateways) is adapted too. The key goes in `x-api-key`
//! (marked sensitive), with `anthropic-version: 2023-06-01`.
//!
//! - [`wire`]: the request body and the event types (serde); the request mapping is listed there.
//! - [`decode`]: events to [`ModelEvent`]s (pure, unit-tested).
//! - this file: the HTTP exchange, timeouts and error mapping. HTTP errors (429 and Anthropic's
//!   529 `overloaded_error` included) become [`ModelError::Upstream`] with the message of
//!   Anthropic's error envelope.
//!
//! Extended thinking is not requested: `reasoning_effort` is not mapped to a `thinking` budget.
//! With tools, Anthropic requires the thinking blocks of the assistant turn (signature included)
//! to be sent back with the tool results, and the port has no place for them yet, so every
//! continuation after a tool call would be refused. Thinking also forbids `temperature`, forced
//! tool choice (`any`/`tool`) and needs `max_tokens` above the budget. Thinking blocks a gateway
//! enables on its own are dropped.

mod decode;
mod wire;

use std::pin::Pin;
use std::time::Duration;

use engine::model::{ModelClient, ModelError, ModelEvent, ModelRequest, ModelStream};
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{FutureExt, Stream, StreamExt};
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};

use crate::ProvidersError;
use crate::chat_completions::endpoint;
use crate::http::{self, ClientOptions, Redactor};
use crate::registry::ProviderConfig;
use decode::{Decoder, Step};
use wire::MessagesRequest;

pub use wire::DEFAULT_MAX_TOKENS;

/// The API version every request names (the only stable one).
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The most we read of a non-streamed message body.
const MAX_MESSAGE_BODY: usize = 16 * 1024 * 1024;

/// A [`ModelClient`] for one Anthropic Messages provider.
///
/// Cheap to share behind an `Arc`: one instance per provider serves every run.
pub struct AnthropicClient {
    /// The provider's one HTTP client, so connections (and TLS sessions) are pooled across turns.
    http: reqwest::Client,
    /// `{base_url}/v1/messages`, computed once.
    endpoint: Url,
    /// The `x-api-key` value, marked sensitive; `None` for a keyless gateway.
    api_key: Option<HeaderValue>,
    /// Scrubs the key from every error text this client hands out.
    redactor: Redactor,
    /// Longest silence tolerated: before the response head and between two body chunks.
    idle_timeout: Duration,
}

impl std::fmt::Debug for AnthropicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the query string: some gateways take a key there.
        let mut endpoint = self.endpoint.clone();
        endpoint.set_query(None);
        f.debug_struct("AnthropicClient")
            .field("endpoint", &endpoint.as_str())
            .field("has_api_key", &self.api_key.is_some())
            .field("idle_timeout", &self.idle_timeout)
            .finish_non_exhaustive()
    }
}

impl AnthropicClient {
    /// A client for `provider` (its `api` is not checked here: the registry picks the adapter).
    pub fn new(provider: &ProviderConfig, options: &ClientOptions) -> Result<Self, ProvidersError> {
        let endpoint = endpoint(&provider.base_url, &["v1", "messages"]).map_err(|reason| {
            ProvidersError::InvalidBaseUrl {
                provider: provider.name.clone(),
                reason,
            }
        })?;
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
        Ok(AnthropicClient {
            http: http::build_client(options)?,
            endpoint,
            api_key,
            redactor: Redactor::new(key),
            idle_timeout: options.idle_timeout,
        })
    }

    /// The URL every turn is posted to (with the base URL's query string, if it had one).
    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    async fn start(&self, request: &ModelRequest) -> Result<ModelStream, ModelError> {
        let mut builder = self
            .http
            .post(self.endpoint.clone())
            .header(ACCEPT, "text/event-stream")
            .header(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(ANTHROPIC_VERSION),
            )
            .json(&MessagesRequest::new(request));
        if let Some(api_key) = &self.api_key {
            builder = builder.header(HeaderName::from_static("x-api-key"), api_key.clone());
        }
        let response = tokio::time::timeout(self.idle_timeout, builder.send())
            .await
            .map_err(|_| ModelError::Timeout)?
            .map_err(http::transport_error)?;
        if !response.status().is_success() {
            return Err(http::upstream_error(response, self.idle_timeout).await);
        }
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().starts_with("application/json"));
        if is_json {
            let body = http::read_body(response, MAX_MESSAGE_BODY, self.idle_timeout).await?;
            let events = decode::message_events(&body)?;
            return Ok(Box::pin(futures::stream::iter(events.into_iter().map(Ok))));
        }
        let turn = SseTurn {
            events: Box::pin(response.bytes_stream().eventsource()),
            decoder: Decoder::default(),
            idle_timeout: self.idle_timeout,
            redactor: self.redactor.clone(),
        };
        Ok(turn.into_stream())
    }
}

#[async_trait::async_trait]
impl ModelClient for AnthropicClient {
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        self.start(&request)
            .await
            .map_err(|err| self.redactor.scrub(err))
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

    /// The events of the next SSE event that yields any, and whether the turn goes on.
    async fn next_batch(&mut self) -> (Vec<Result<ModelEvent, ModelError>>, bool) {
        let mut out = Vec::new();
        loop {
            let next = match tokio::time::timeout(self.idle_timeout, self.events.next()).await {
                Ok(next) => next,
                Err(_) => return (vec![Err(ModelError::Timeout)], false),
            };
            let step = match next {
                Some(Ok(event)) => self.decoder.data(&event.data, &mut out),
                Some(Err(err)) => Err(sse_error(err)),
                None => self.decoder.end(&mut out).map(|()| Step::Done),
            };
            let step = step.map_err(|err| self.redactor.scrub(err));
            let mut batch: Vec<_> = out.drain(..).map(Ok).collect();
            match step {
                Ok(Step::Continue) if batch.is_empty() => continue,
                Ok(Step::Continue) => return (batch, true),
                Ok(Step::Done) => {
                    self.drain_ready();
                    return (batch, false);
                }
                Err(err) => {
                    batch.push(Err(err));
                    return (batch, false);
                }
            }
        }
    }

    /// After `message_stop`, reads what is already buffered (the body's end) without waiting, so
    /// the connection goes back to the pool instead of being dropped mid-body.
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

    fn config(base_url: &str, api_key: Option<&str>) -> ProviderConfig {
        ProviderConfig {
            name: "anthropic".into(),
            api: crate::WireApi::AnthropicMessages,
            base_url: base_url.into(),
            api_key: api_key.map(str::to_owned),
            models: vec![],
        }
    }

    #[test]
    fn endpoint_appends_v1_messages() -> Result<(), ProvidersError> {
        for (base, want) in [
            (
                "https://api.anthropic.com",
                "https://api.anthropic.com/v1/messages",
            ),
            (
                "https://api.anthropic.com/",
                "https://api.anthropic.com/v1/messages",
            ),
            (
                "http://127.0.0.1:8080/proxy/anthropic",
                "http://127.0.0.1:8080/proxy/anthropic/v1/messages",
            ),
        ] {
            let client = AnthropicClient::new(&config(base, None), &ClientOptions::default())?;
            assert_eq!(client.endpoint(), want);
        }
        Ok(())
    }

    #[test]
    fn debug_shows_neither_key_nor_query() -> Result<(), ProvidersError> {
        let client = AnthropicClient::new(
            &config(
                "https://gw.example?key=query-secret",
                Some("sk-ant-secret-test"),
            ),
            &ClientOptions::default(),
        )?;
        let text = format!("{client:?}");
        assert!(!text.contains("query-secret"), "{text}");
        assert!(!text.contains("sk-ant-secret-test"), "{text}");
        assert!(text.contains("https://gw.example/v1/messages"), "{text}");
        assert!(text.contains("has_api_key: true"), "{text}");
        Ok(())
    }

    #[test]
    fn a_bad_key_or_url_is_refused() {
        let options = ClientOptions::default();
        assert!(matches!(
            AnthropicClient::new(&config("https://api.anthropic.com", Some("a\nb")), &options),
            Err(ProvidersError::InvalidApiKey { .. })
        ));
        assert!(matches!(
            AnthropicClient::new(&config("api.anthropic.com", None), &options),
            Err(ProvidersError::InvalidBaseUrl { .. })
        ));
    }
}
