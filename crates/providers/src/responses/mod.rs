//! The OpenAI Responses wire API (`POST {base_url}/responses`), chosen with
//! `api = "responses"`.
//!
//! Every turn is sent whole (agentd keeps the transcript) with `store: false` and
//! `stream: true`; the SSE body is decoded event by event ([`decode`]) and each text or
//! arguments delta is forwarded as soon as it arrives. A server that ignores `stream` and answers
//! one response object is adapted too.
//!
//! A reasoning model's reasoning items are asked for with their encrypted content
//! (`include: ["reasoning.encrypted_content"]`, see `wire::wants_reasoning` for when), kept
//! in the transcript, and sent back, id and all, before the turn they belong to.
//!
//! - [`wire`]: the request body and the event types (serde).
//! - [`decode`]: events to [`ModelEvent`](engine::model::ModelEvent)s (pure, unit-tested).
//! - [`fast`]: the text and arguments deltas read in one pass (a serde map visitor instead of
//!   the internally tagged enum's buffering); any other event is left to the serde types.
//! - this file: the client and its request (its input items' JSON kept for the next turn:
//!   `crate::message_memo`); the HTTP exchange, timeouts and error mapping are shared
//!   (`crate::http::Upstream`, `crate::sse`).

pub(crate) mod decode;
mod fast;
mod wire;

use engine::model::{ModelClient, ModelError, ModelRequest, ModelStream};

use crate::ProvidersError;
use crate::config::{ClientOptions, ProviderConfig};
use crate::http::{self, Credential, Upstream};
use crate::message_memo::MessageMemo;
use decode::Decoder;
use wire::ResponsesRequest;

/// A [`ModelClient`] for one provider speaking the Responses API.
///
/// Cheap to share behind an `Arc`: one instance per provider serves every run.
pub struct ResponsesClient {
    /// The pooled HTTP client, `{base_url}/responses`, the `Bearer` key and the timeout.
    upstream: Upstream,
    /// The JSON of the input items of the last requests, for the next that begins with them.
    messages: MessageMemo,
}

impl std::fmt::Debug for ResponsesClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.upstream.debug(f, "ResponsesClient", "endpoint")
    }
}

impl ResponsesClient {
    /// A client for `provider` (its `api` is not checked here: the registry picks the adapter).
    pub fn new(provider: &ProviderConfig, options: &ClientOptions) -> Result<Self, ProvidersError> {
        let upstream = Upstream::new(provider, options, &["responses"], Credential::Bearer)?;
        Ok(ResponsesClient {
            upstream,
            messages: MessageMemo::default(),
        })
    }

    /// The URL every turn is posted to (with the base URL's query string, if it had one).
    pub fn endpoint(&self) -> &str {
        self.upstream.url().as_str()
    }
}

#[async_trait::async_trait]
impl ModelClient for ResponsesClient {
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let post = self
            .upstream
            .post(self.upstream.url().clone())
            .json_text(ResponsesRequest::from(&request).to_json_with(&self.messages))?;
        self.upstream
            .turn(
                post,
                http::error_message,
                decode::response_events,
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
