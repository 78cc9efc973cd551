//! The Anthropic Messages wire API (`POST {base_url}/v1/messages`).
//!
//! Every turn is requested with `stream: true`; the SSE body is decoded event by event
//! ([`decode`]) and each delta is forwarded as soon as it arrives. A server that ignores `stream`
//! and answers one `message` JSON (some gateways) is adapted too. The key goes in `x-api-key`
//! (marked sensitive), with `anthropic-version: 2023-06-01`.
//!
//! - [`wire`]: the request body and the event types (serde); the request mapping is listed there.
//! - [`decode`]: events to [`ModelEvent`](engine::model::ModelEvent)s (pure, unit-tested).
//! - [`fast`]: `content_block_delta` read in one pass (serde map visitors instead of the
//!   internally tagged enums' buffering); any other event is left to the serde types.
//! - this file: the client and its request; the HTTP exchange, timeouts and error mapping are
//!   shared (`crate::http::Upstream`, `crate::sse`). HTTP errors (429 and Anthropic's
//!   529 `overloaded_error` included) become [`ModelError::Upstream`] with the message of
//!   Anthropic's error envelope.
//!
//! Extended thinking: `reasoning_effort` sets a `thinking` budget (`wire::thinking_budget`).
//! Its thinking blocks (signature included) come back as reasoning events, which the engine keeps
//! in the transcript and sends back with the turn, as Anthropic requires around tool calls.
//! Thinking forbids `temperature`, a `top_p` below 0.95 and a forced tool choice: [`check`]
//! refuses those combinations (and input types the API does not read) before the run starts.
//!
//! [`check`]: ModelClient::check

pub(crate) mod decode;
mod fast;
mod wire;

use engine::model::{ModelClient, ModelError, ModelRequest, ModelStream, Unsupported};
use reqwest::header::{HeaderName, HeaderValue};

use crate::ProvidersError;
use crate::config::{ClientOptions, ProviderConfig};
use crate::http::{self, Credential, Upstream};
use decode::Decoder;
use wire::MessagesRequest;

pub use wire::{DEFAULT_MAX_TOKENS, REASONING_PREFIX};

/// The API version every request names (the only stable one).
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A [`ModelClient`] for one Anthropic Messages provider.
///
/// Cheap to share behind an `Arc`: one instance per provider serves every run.
pub struct AnthropicClient {
    /// The pooled HTTP client, `{base_url}/v1/messages`, the `x-api-key` key and the timeout.
    upstream: Upstream,
}

impl std::fmt::Debug for AnthropicClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.upstream.debug(f, "AnthropicClient", "endpoint")
    }
}

impl AnthropicClient {
    /// A client for `provider` (its `api` is not checked here: the registry picks the adapter).
    pub fn new(provider: &ProviderConfig, options: &ClientOptions) -> Result<Self, ProvidersError> {
        let upstream = Upstream::new(
            provider,
            options,
            &["v1", "messages"],
            Credential::Header(HeaderName::from_static("x-api-key")),
        )?;
        Ok(AnthropicClient { upstream })
    }

    /// The URL every turn is posted to (with the base URL's query string, if it had one).
    pub fn endpoint(&self) -> &str {
        self.upstream.url().as_str()
    }
}

#[async_trait::async_trait]
impl ModelClient for AnthropicClient {
    fn check(&self, request: &ModelRequest) -> Result<(), Unsupported> {
        wire::check(request)
    }

    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let post = self
            .upstream
            .post(self.upstream.url().clone())
            .header(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(ANTHROPIC_VERSION),
            )
            .json_text(MessagesRequest::new(&request).to_json())?;
        self.upstream
            .turn(
                post,
                http::error_message,
                decode::message_events,
                Decoder::default(),
            )
            .await
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
