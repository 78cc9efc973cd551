//! Model provider adapters: each upstream wire API implemented as an
//! [`engine::model::ModelClient`], and the [`Registry`] that maps `provider/model` ids to them.
//!
//! Streaming is the primary path: every turn asks the upstream to stream and forwards each text
//! or tool-call delta as soon as it arrives. Errors never carry an API key or header value.
//!
//! Layout:
//! - [`config`]: plain configuration data: [`ProviderConfig`] and [`WireApi`], the operator
//!   contract's environment shortcuts ([`env_shortcuts`]), the HTTP client's timeouts and retries
//!   ([`ClientOptions`]) and the model-list cache ([`ModelListSettings`]).
//! - [`registry`]: the [`Registry`] (the engine's [`ModelRouter`](engine::model::ModelRouter)),
//!   which builds one adapter per configured provider and routes model ids to them.
//! - [`chat_completions`]: the OpenAI Chat Completions adapter (OpenAI, xAI, Perplexity, vLLM,
//!   Ollama, llama.cpp…).
//! - [`responses`]: the OpenAI Responses API as an upstream (`api = "responses"`).
//! - [`anthropic`]: Anthropic Messages.
//! - [`gemini`]: Gemini generateContent (thought signatures passed through on tool calls).
//! - [`models`]: each wire API's upstream model list (`GET /v1/models` shows it, cached by the
//!   [`Registry`] per [`ModelListSettings`]).
//! - `http`: what adapters share: one pooled client per provider, sending a turn (retries,
//!   back-off, the idle timeout) and error mapping.
//! - `transport`: the request type the adapters build and the two clients that send it: the
//!   in-task HTTP/1.1 client `h1_client` (plain-`http` upstreams, no proxy variable; its
//!   connection is driven by the turn's own task; `h1_wire`: the HTTP/1.1 heads and body
//!   framing it writes and decodes) or reqwest (`https`, proxies).
//! - `sse`: what streaming adapters share: the event stream read with the idle timeout and fed
//!   to each wire API's decoder; `sse_parse`: the incremental SSE parser it reads with.
//! - `redact`: keys scrubbed from error texts, transport errors described without their URL.
//! - `message_memo`: the JSON an adapter wrote for a request's messages, kept for the next
//!   request that begins with the same messages (a conversation's next turn, a run's next step).
//!
//! Modules depend one way: `config` on nothing but the error type; `message_memo` on nothing
//! of the crate; `redact`, `h1_wire` <
//! `h1_client` < `transport` < `sse_parse` < `sse` < `http` < the adapters and `models` <
//! `registry`.
//! - [`ProvidersError`]: the crate's one error type (configuration and construction).
//!
//! This crate reads no environment and no files (the server does, and passes values in), but
//! for the proxy variables reqwest itself reads: set, they keep a provider on reqwest
//! (`transport`).
//!
//! ```no_run
//! use engine::model::ModelRouter;
//! use agentd_providers::{Registry, env_shortcuts};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Registry::new(env_shortcuts(&|name| std::env::var(name).ok()))?;
//! let model = registry.resolve("openai/gpt-5.4")?;
//! assert_eq!(model.upstream_model, "gpt-5.4");
//! // model.client.stream(ModelRequest { model: model.upstream_model, .. }).await?
//! # Ok(())
//! # }
//! ```

pub mod anthropic;
pub mod chat_completions;
pub mod config;
#[cfg(test)]
mod edits;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod gemini;
mod h1_client;
mod h1_wire;
mod http;
mod logprobs;
mod message_memo;
pub mod models;
mod redact;
pub mod registry;
pub mod responses;
mod sse;
mod sse_parse;
mod transport;
#[cfg(test)]
mod wire_texts;

pub use anthropic::AnthropicClient;
pub use chat_completions::ChatCompletionsClient;
pub use config::{
    ClientOptions, ENV_SHORTCUTS, EnvShortcut, ModelListSettings, ProviderConfig, WireApi,
    env_shortcut, env_shortcuts,
};
pub use error::ProvidersError;
pub use gemini::GeminiClient;
pub use models::UpstreamModels;
pub use registry::Registry;
pub use responses::ResponsesClient;
