//! The OpenAI Responses wire API (`POST {base_url}/responses`), chosen with
//! `api = "responses"`.
//!
//! Every turn is sent whole (agentd keeps the transcript) with `store: false` and
//! `stream: true`; the SSE body is decoded event by event ([`decode`]) and each text or
//! arguments delta is forwarded as soon as it arrives. A server that ignores `stream` and answers
//! one response object is adapted too.
//!
//! Reasoning items are not carried from one turn to the next: the engine's port has no place for
//! them yet, so none is requested (`include: ["reasoning.encrypted_content"]` is not sent) and the
//! ones in the output are skipped. The model then reasons afresh each turn, as over Chat
//! Completions.
//!
//! - [`wire`]: the request body and the event types (serde).
//! - [`decode`]: events to [`ModelEvent`]s (pure, unit-tested).
//! - this file: the HTTP exchange, timeouts and error mapping.

mod decode;
mod wire;

use std::pin::Pin;
use std::time::Duration;

use engine::model::{ModelClient, ModelError, ModelEvent, ModelRequest, ModelStream};
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{FutureExt, Stream, StreamExt};
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};

use crate::ProvidersError;
use crate::chat_completions::endpoint;
use crate::http::{self, ClientOptions, Redactor};
use crate::registry::ProviderConfig;
use decode::{Decoder, Step};
use wire::ResponsesRequest;

/// The most we read of a non-streamed response body.
const MAX_RESPONSE_BODY: usize = 16 * 1024 * 1024;

/// A [`ModelClient`] for one provider speaking the Responses API.
///
/// Cheap to share behind an `Arc`: one instance per provider serves every run.
pub struct ResponsesClient {
    /// The provider's one HTTP client, so connections (and TLS sessions) are pooled across turns.
    http: reqwest::Client,
    /// `{base_url}/responses`, computed once.
    endpoint: Url,
    /// `Bearer {key}`, marked sensitive; `None` for keyless local servers.
    authorization: Option<HeaderValue>,
    /// Scrubs the key from every error text this client hands out.
    redactor: Redactor,
    /// Longest silence tolerated: before the response head and between two body chunks.
    idle_timeout: Duration,
}

impl std::fmt::Debug for ResponsesClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the query string: some gateways take a key there.
        let mut endpoint = self.endpoint.clone();
        endpoint.set_query(None);
        f.debug_struct("ResponsesClient")
            .field("endpoint", &endpoint.as_str())
            .field("has_api_key", &self.authorization.is_some())
            .field("idle_timeout", &self.idle_timeout)
            .finish_non_exhaustive()
    }
}

impl ResponsesClient {
    /// A client for `provider` (its `api` is not checked here: the registry picks the adapter).
    pub fn new(provider: &ProviderConfig, options: &ClientOptions) -> Result<Self, ProvidersError> {
        let endpoint = endpoint(&provider.base_url, &["responses"]).map_err(|reason| {
            ProvidersError::InvalidBaseUrl {
                provider: provider.name.clone(),
                reason,
            }
        })?;
        let key = provider.api_key.as_deref().filter(|key| !key.is_empty());
        let authorization =
            key.map(http::bearer)
                .transpose()
                .map_err(|_| ProvidersError::InvalidApiKey {
                    provider: provider.name.clone(),
                })?;
        Ok(ResponsesClient {
            http: http::build_client(options)?,
            endpoint,
            authorization,
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
            .json(&ResponsesRequest::from(request));
        if let Some(authorization) = &self.authorization {
            builder = builder.header(AUTHORIZATION, authorization.clone());
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
            let body = http::read_body(response, MAX_RESPONSE_BODY, self.idle_timeout).await?;
            let events = decode::response_events(&body)?;
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
impl ModelClient for ResponsesClient {
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
                None => Err(self.decoder.end()),
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

    /// After the terminal event, reads what is already buffered (the body's end) without
    /// waiting, so the connection goes back to the pool instead of being dropped mid-body.
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
            name: "openai".into(),
            api: crate::WireApi::Responses,
            base_url: base_url.into(),
            api_key: api_key.map(str::to_owned),
            models: vec![],
        }
    }

    #[test]
    fn endpoint_appends_responses() -> Result<(), ProvidersError> {
        for (base, want) in [
            (
                "https://api.openai.com/v1",
                "https://api.openai.com/v1/responses",
            ),
            (
                "https://api.openai.com/v1/",
                "https://api.openai.com/v1/responses",
            ),
            (
                "https://x.openai.azure.com/openai/v1?api-version=preview",
                "https://x.openai.azure.com/openai/v1/responses?api-version=preview",
            ),
        ] {
            let client = ResponsesClient::new(&config(base, None), &ClientOptions::default())?;
            assert_eq!(client.endpoint(), want);
        }
        Ok(())
    }

    #[test]
    fn debug_shows_neither_key_nor_query() -> Result<(), ProvidersError> {
        let client = ResponsesClient::new(
            &config(
                "https://gw.example/v1?key=query-secret",
                Some("sk-secret-test"),
            ),
            &ClientOptions::default(),
        )?;
        let text = format!("{client:?}");
        assert!(!text.contains("query-secret"), "{text}");
        assert!(!text.contains("sk-secret-test"), "{text}");
        assert!(text.contains("https://gw.example/v1/responses"), "{text}");
        Ok(())
    }

    #[test]
    fn bad_url_or_key_is_refused() {
        let options = ClientOptions::default();
        assert!(matches!(
            ResponsesClient::new(&config("ftp://example.com", None), &options),
            Err(ProvidersError::InvalidBaseUrl { .. })
        ));
        assert!(matches!(
            ResponsesClient::new(&config("https://example.com", Some("a\nb")), &options),
            Err(ProvidersError::InvalidApiKey { .. })
        ));
    }
}
