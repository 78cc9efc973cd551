//! The OpenAI Chat Completions wire API (`POST {base_url}/chat/completions`), spoken by OpenAI,
//! xAI, Perplexity and the local OpenAI-compatible servers (vLLM, Ollama, llama.cpp).
//!
//! Every turn is requested with `stream: true` and `stream_options.include_usage`; the SSE body
//! is decoded chunk by chunk ([`decode`]) and each delta is forwarded as soon as it arrives. A
//! server that ignores `stream` and answers one `chat.completion` JSON is adapted too.
//!
//! - [`wire`]: the request body and the chunk types (serde).
//! - [`decode`]: chunks to [`ModelEvent`](engine::model::ModelEvent)s (pure, unit-tested).
//! - [`fast`]: the common chunk read in one pass, serde's reading by construction (the rest goes
//!   through serde).
//! - [`repeat`]: the fast path across a turn's chunks: a chunk that begins as the previous one
//!   did is read from its text on.
//! - this file: the client and its request (its messages' JSON kept for the next turn:
//!   `crate::message_memo`); the HTTP exchange, timeouts and error mapping are
//!   shared (`crate::http::Upstream`, `crate::sse`).

pub(crate) mod decode;
mod fast;
pub(crate) mod repeat;
mod wire;

use engine::model::{ModelClient, ModelError, ModelRequest, ModelStream};

use crate::ProvidersError;
use crate::config::{ClientOptions, ProviderConfig};
#[cfg(test)]
use crate::http::endpoint;
use crate::http::{self, Credential, Upstream};
use crate::message_memo::MessageMemo;
use decode::Decoder;
use wire::ChatRequest;

/// A [`ModelClient`] for one Chat Completions provider.
///
/// Cheap to share behind an `Arc`: one instance per provider serves every run.
pub struct ChatCompletionsClient {
    /// The pooled HTTP client, `{base_url}/chat/completions`, the `Bearer` key and the timeout.
    upstream: Upstream,
    /// The JSON of the messages of the last requests, for the next that begins with them.
    messages: MessageMemo,
}

impl std::fmt::Debug for ChatCompletionsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.upstream.debug(f, "ChatCompletionsClient", "endpoint")
    }
}

impl ChatCompletionsClient {
    /// A client for `provider` (its `api` is not checked here: the registry picks the adapter).
    pub fn new(provider: &ProviderConfig, options: &ClientOptions) -> Result<Self, ProvidersError> {
        let upstream = Upstream::new(
            provider,
            options,
            &["chat", "completions"],
            Credential::Bearer,
        )?;
        Ok(ChatCompletionsClient {
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
impl ModelClient for ChatCompletionsClient {
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError> {
        let post = self
            .upstream
            .post(self.upstream.url().clone())
            .json_text(ChatRequest::from(&request).to_json_with(&self.messages))?;
        self.upstream
            .turn(
                post,
                http::error_message,
                decode::completion_events,
                Decoder::default(),
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_appends_the_wire_path() {
        let cases = [
            (
                "https://api.openai.com/v1",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "https://api.openai.com/v1/",
                "https://api.openai.com/v1/chat/completions",
            ),
            (
                "https://api.perplexity.ai",
                "https://api.perplexity.ai/chat/completions",
            ),
            (
                "http://127.0.0.1:11434/v1",
                "http://127.0.0.1:11434/v1/chat/completions",
            ),
            (
                "https://x.openai.azure.com/openai/deployments/d?api-version=2024-10-21",
                "https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21",
            ),
        ];
        for (base, want) in cases {
            assert_eq!(
                endpoint(base, &["chat", "completions"]).map(String::from),
                Ok(want.to_owned())
            );
        }
    }

    #[test]
    fn debug_shows_neither_key_nor_query() -> Result<(), ProvidersError> {
        let client = ChatCompletionsClient::new(
            &ProviderConfig {
                name: "gw".into(),
                api: crate::WireApi::ChatCompletions,
                base_url: "https://gw.example/v1?key=query-secret".into(),
                api_key: Some("sk-secret-test".into()),
                models: vec![],
            },
            &ClientOptions::default(),
        )?;
        let text = format!("{client:?}");
        assert!(!text.contains("query-secret"), "{text}");
        assert!(!text.contains("sk-secret-test"), "{text}");
        assert!(
            text.contains("https://gw.example/v1/chat/completions"),
            "{text}"
        );
        Ok(())
    }

    #[test]
    fn endpoint_rejects_non_http() {
        assert!(endpoint("ftp://example.com", &["x"]).is_err());
        assert!(endpoint("api.openai.com/v1", &["x"]).is_err());
        assert!(endpoint("mailto:a@b.c", &["x"]).is_err());
    }
}
