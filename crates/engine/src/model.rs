//! The model port: what the engine asks of any upstream wire API.
//!
//! The engine speaks to models only through [`ModelClient`]; adapters in the `providers` crate map
//! these provider-neutral types to each upstream wire format. Streaming is the primary (and only)
//! path: a non-streaming upstream is adapted into a stream of one or more events.

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use protocol::written::Parameters;
use serde::{Deserialize, Serialize};

/// One message of the conversation as the model sees it.
///
/// This is the canonical "what the model saw" form: the engine turns the wire transcript (input
/// items) into this list, and the fake provider in `testkit` records what reached it in an upstream
/// format derived from it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ModelMessage {
    /// System or developer instructions.
    System { content: String },
    /// A user turn: text and images.
    User { content: Vec<ContentPart> },
    /// An assistant turn: text and/or tool calls (several calls in one turn are allowed).
    Assistant {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// A reasoning block the model produced with the assistant turn that follows it (thinking
    /// models need it back with that turn, above all around tool calls). Adapters send back only
    /// the blocks their upstream made ([`Reasoning::id`] tells) and skip the others.
    Reasoning(Reasoning),
    /// The result of one tool call.
    Tool {
        call_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        content: String,
    },
}

/// One part of a user message.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text {
        text: String,
    },
    /// An image by URL (`https://…` or a `data:` URL).
    ImageUrl {
        url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// A file given inline (base64 `data`) or by URL.
    File {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file_data: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file_url: Option<String>,
    },
}

/// A complete tool call made by the model.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolCall {
    /// The model's call id (`call_…`), the correlation key for the result.
    pub id: String,
    pub name: String,
    /// The arguments exactly as the model produced them (a JSON document as text).
    pub arguments: String,
    /// Opaque signature some thinking models attach to a call; echoed back verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

/// One reasoning block of a turn, as the upstream returned it.
///
/// Only the kind of upstream that made a block can read it back, so its id tells which one did:
/// the upstream's own id where it gives one, else an id the adapter mints with a prefix of its
/// own. Each adapter sends back only the blocks with its own ids (checked with
/// [`Reasoning::is_from`] and its prefix) and leaves the others out. In the transcript a block
/// is a `reasoning` item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Reasoning {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Summary texts, where the upstream summarises its reasoning.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<String>,
    /// The full reasoning text, where the upstream shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Opaque data the upstream needs back, echoed verbatim (a signature, encrypted reasoning,
    /// or the data of a block the upstream redacted and shows no text of).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<String>,
}

impl Reasoning {
    /// Whether the block carries this id prefix (blocks without an id match any prefix: they
    /// were replayed by a caller who knows where they came from).
    pub fn is_from(&self, prefix: &str) -> bool {
        self.id.as_deref().is_none_or(|id| id.starts_with(prefix))
    }
}

/// A tool offered to the model (always as a function definition).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments, shared (a run's turns, its model requests and their
    /// retries hold the one value: [`protocol::request::FunctionTool::parameters`]) and
    /// written as the compact JSON it keeps.
    pub parameters: Parameters,
    #[serde(default)]
    pub strict: bool,
}

/// How the model may use the tools of this turn.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelToolChoice {
    #[default]
    Auto,
    None,
    Required,
    /// Force a call of this tool.
    Function(String),
}

/// Structured-output request passed through to the upstream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSchemaFormat {
    pub name: String,
    pub schema: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// The structured output a turn must produce (the engine checks the final answer too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputFormat {
    /// Any JSON object.
    JsonObject,
    /// JSON matching a schema.
    JsonSchema(JsonSchemaFormat),
}

/// One model turn to run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The model name sent upstream unchanged (the part after `provider/`).
    pub model: String,
    pub messages: Vec<ModelMessage>,
    /// Empty when tools are disabled for this turn.
    pub tools: Vec<ToolSpec>,
    pub tool_choice: ModelToolChoice,
    pub parallel_tool_calls: Option<bool>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_output_tokens: Option<u32>,
    /// `text.format` / `response_format`.
    pub output_format: Option<OutputFormat>,
    /// `reasoning.effort` as given by the caller.
    pub reasoning_effort: Option<String>,
    /// `reasoning.summary` as given by the caller (`auto`, `concise`, `detailed`).
    pub reasoning_summary: Option<String>,
    /// `text.verbosity` (`low`, `medium`, `high`).
    pub verbosity: Option<String>,
    pub prompt_cache_key: Option<String>,
    /// `prompt_cache_retention` (`in-memory`, `24h`), for upstreams that take it.
    pub prompt_cache_retention: Option<String>,
    /// `service_tier`, `user` and `safety_identifier`, for upstreams that take them.
    pub service_tier: Option<String>,
    pub user: Option<String>,
    pub safety_identifier: Option<String>,
    /// Logprobs of the output tokens: `Some(n)` asks for them with the `n` most likely
    /// alternatives of each token (`Some(0)`: the chosen tokens only).
    pub logprobs: Option<u32>,
}

impl ModelRequest {
    /// Every part of every user message, in order (what input checks look at).
    pub fn user_parts(&self) -> impl Iterator<Item = &ContentPart> {
        self.messages.iter().flat_map(|message| match message {
            ModelMessage::User { content } => content.as_slice(),
            _ => &[],
        })
    }
}

/// Token counts reported by the upstream for one turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    pub reasoning_tokens: u64,
    /// Input tokens the upstream wrote to its prompt cache, counted in `input_tokens` too.
    pub cache_write_tokens: u64,
}

/// The log probability of one output token, with the most likely alternatives.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TokenLogprob {
    pub token: String,
    pub logprob: f64,
    #[serde(default)]
    pub bytes: Vec<u8>,
    #[serde(default)]
    pub top_logprobs: Vec<TopLogprob>,
}

/// One alternative of a token.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TopLogprob {
    pub token: String,
    pub logprob: f64,
    #[serde(default)]
    pub bytes: Vec<u8>,
}

/// Why the upstream stopped this turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    /// The output token cap was reached.
    Length,
    ContentFilter,
    Other(String),
}

/// One event of a streamed model turn.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    /// A piece of answer text, forwarded to the client as it arrives.
    TextDelta(String),
    /// A piece of tool call `index` of this turn. `id` and `name` arrive at least once (usually
    /// first); `arguments` pieces are concatenated in order.
    ToolCallDelta {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
        thought_signature: Option<String>,
    },
    /// The logprobs of the text delta that follows (adapters send them just before it).
    Logprobs(Vec<TokenLogprob>),
    /// A finished reasoning block of this turn (kept in the transcript, not shown as output).
    Reasoning(Reasoning),
    /// Token usage (may arrive once, at the end).
    Usage(TokenUsage),
    /// The turn ended.
    Finish(FinishReason),
}

/// Errors a model adapter reports. The message never contains a key, token or header value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The upstream answered with an HTTP error status.
    #[error("upstream returned HTTP {status}: {message}")]
    Upstream { status: u16, message: String },
    /// The upstream could not be reached or the connection broke.
    #[error("upstream connection failed: {0}")]
    Transport(String),
    /// The upstream answered something we could not understand.
    #[error("upstream sent an invalid response: {0}")]
    Protocol(String),
    /// The upstream took too long.
    #[error("upstream timed out")]
    Timeout,
}

pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send>>;

/// A request the upstream cannot take, found before anything is sent: the run is refused with
/// 400 `invalid_request` naming `param`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Unsupported {
    /// The request field at fault (`input`, `temperature`, `tool_choice`…).
    pub param: String,
    pub message: String,
}

impl Unsupported {
    pub fn new(param: impl Into<String>, message: impl Into<String>) -> Self {
        Unsupported {
            param: param.into(),
            message: message.into(),
        }
    }
}

/// A model upstream (one provider and wire API).
#[async_trait::async_trait]
pub trait ModelClient: Send + Sync {
    /// Checks, before the run starts, that the upstream can take what `request` asks: input
    /// types (images, files), parameter combinations. The engine calls it with the run's first
    /// request (tools, messages, parameters; `model` set). The default takes everything.
    fn check(&self, request: &ModelRequest) -> Result<(), Unsupported> {
        let _ = request;
        Ok(())
    }

    /// Start one turn. Errors before the first event (HTTP status, connect failure) come back
    /// as `Err`; errors mid-stream come as an `Err` item of the stream.
    async fn stream(&self, request: ModelRequest) -> Result<ModelStream, ModelError>;
}

/// Why a model id could not be resolved to a client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The id is not of the form `provider/model`.
    #[error("model \"{0}\" is not of the form provider/model")]
    Malformed(String),
    /// The provider exists by name but is not configured; `hint` says what to set.
    #[error("provider \"{provider}\" is not configured: {hint}")]
    NotConfigured { provider: String, hint: String },
}

/// A resolved model: the client plus the upstream model name.
#[derive(Clone)]
pub struct ResolvedModel {
    pub client: Arc<dyn ModelClient>,
    /// The part after the first `/`, sent upstream unchanged.
    pub upstream_model: String,
}

/// Maps `provider/model` ids to clients (implemented by `providers::Registry`).
#[async_trait::async_trait]
pub trait ModelRouter: Send + Sync {
    fn resolve(&self, model_id: &str) -> Result<ResolvedModel, ResolveError>;
    /// Model ids this router advertises on `GET /v1/models`: each configured provider's models,
    /// and what its upstream lists where it has a list (the router caches these and falls back
    /// to the configured models when an upstream fails). Never fails.
    async fn list_models(&self) -> Vec<ModelInfo>;
}

/// One entry of the model list: `id` is `provider/model`, `owned_by` the provider's name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub id: String,
    pub owned_by: String,
}
