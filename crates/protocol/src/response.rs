//! The response object and the other bodies the API returns.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::output::OutputItem;
use crate::request::{ConversationObject, Reasoning, TextConfig, Tool, ToolChoice, Truncation};

/// Run status. `cancelling` exists only in the answer to a cancel ([`CancelAck`]) while the
/// run is still stopping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ResponseStatus {
    Queued,
    InProgress,
    Completed,
    Failed,
    Cancelled,
    RequiresAction,
    Incomplete,
    Cancelling,
}

impl ResponseStatus {
    /// Whether the run has ended for good.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ResponseStatus::Completed
                | ResponseStatus::Failed
                | ResponseStatus::Cancelled
                | ResponseStatus::Incomplete
                | ResponseStatus::RequiresAction
        )
    }

    /// Whether a request may continue a response in this status (`previous_response_id`):
    /// one that finished its answer, or that waits on the client's function results.
    pub fn is_continuable(self) -> bool {
        matches!(
            self,
            ResponseStatus::Completed | ResponseStatus::RequiresAction
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ResponseStatus::Queued => "queued",
            ResponseStatus::InProgress => "in_progress",
            ResponseStatus::Completed => "completed",
            ResponseStatus::Failed => "failed",
            ResponseStatus::Cancelled => "cancelled",
            ResponseStatus::RequiresAction => "requires_action",
            ResponseStatus::Incomplete => "incomplete",
            ResponseStatus::Cancelling => "cancelling",
        }
    }
}

/// The response object (`object: "response"`), with the OpenAI echo fields (spec decision 11).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Response {
    pub id: String,
    /// Always `response`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "response")))]
    pub object: String,
    /// Unix seconds.
    pub created_at: i64,
    pub completed_at: Option<i64>,
    pub status: ResponseStatus,
    /// The model that served (the `provider/model` id).
    pub model: String,
    pub output: Vec<OutputItem>,
    pub usage: Option<Usage>,
    pub error: Option<ErrorInfo>,
    pub incomplete_details: Option<IncompleteDetails>,
    pub instructions: Option<String>,
    pub max_output_tokens: Option<u32>,
    pub max_tool_calls: Option<u32>,
    pub max_steps: Option<u32>,
    /// The value in effect (1 when the request gave none, as OpenAI echoes it).
    pub temperature: f64,
    /// The value in effect (1 when the request gave none).
    pub top_p: f64,
    pub tool_choice: ToolChoice,
    /// The request's tools with secrets (`authorization`, `headers`) removed.
    pub tools: Vec<Tool>,
    pub parallel_tool_calls: bool,
    pub truncation: Truncation,
    pub background: bool,
    pub store: bool,
    /// The request's tier, `default` when it gave none.
    pub service_tier: String,
    pub text: TextConfig,
    pub metadata: BTreeMap<String, String>,
    pub previous_response_id: Option<String>,
    /// The OpenAI conversation the response belongs to (`{"id": "conv_…"}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<ConversationObject>,
    pub prompt_cache_key: Option<String>,
    /// The request's `prompt_cache_retention`, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_retention: Option<crate::request::PromptCacheRetention>,
    pub reasoning: Option<Reasoning>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(default)]
    pub safety_identifier: Option<String>,
    pub frequency_penalty: f64,
    pub presence_penalty: f64,
    pub top_logprobs: u32,
}

/// `incomplete_details`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IncompleteDetails {
    /// `max_output_tokens`, or `max_steps` when the step budget ran out.
    pub reason: String,
}

/// A run-level error (`response.error`): `code` is a string here (spec decision 10).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorInfo {
    pub message: String,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// Token usage summed over every step of a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
    #[serde(default)]
    pub input_tokens_details: InputTokensDetails,
    /// Not in the Perplexity SDK schema (OpenAI's field); defaults when absent.
    #[serde(default)]
    pub output_tokens_details: OutputTokensDetails,
    /// Per-tool counts, keyed by billing name (`search_web`, `fetch_url`, …).
    #[serde(default)]
    pub tool_calls_details: BTreeMap<String, ToolCallDetails>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct InputTokensDetails {
    /// OpenAI's name for cache reads.
    #[serde(default)]
    pub cached_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    /// OpenAI's name for cache writes (required by the OpenAI SDK's `ResponseUsage`).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OutputTokensDetails {
    pub reasoning_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolCallDetails {
    #[serde(default)]
    pub invocation: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<Vec<Value>>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Cost {
    pub currency: String,
    pub input_cost: f64,
    pub output_cost: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls_cost: Option<f64>,
    pub total_cost: f64,
    /// Per-tool cost breakdown (`[migration-notes]` only; shape undocumented).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls_cost_details: Option<serde_json::Map<String, Value>>,
}

/// The answer to `POST …/{id}/cancel`: the response object itself, plus `response_id` (the
/// Perplexity SDK reads `{response_id, status}`, the OpenAI SDKs a `Response`). `status` is
/// `cancelled` when the run stopped within the server's short wait, `cancelling` while it is
/// still stopping (spec decision 8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CancelAck {
    pub response_id: String,
    #[serde(flatten)]
    pub response: Response,
}

/// `GET …/{id}/files`: the files a response delivered with `share_file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ResponseFileList {
    /// Always `list`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "list")))]
    pub object: String,
    pub data: Vec<ResponseFile>,
}

/// One shared file (`ResponseFile`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ResponseFile {
    /// Scoped to the parent response; distinct from the response id.
    pub id: String,
    /// Always `file`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "file")))]
    pub object: String,
    pub filename: String,
    pub bytes: u64,
    /// Unix seconds.
    pub created_at: i64,
}

/// `GET /v1/models`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelList {
    /// Always `list`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "list")))]
    pub object: String,
    pub data: Vec<Model>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Model {
    pub id: String,
    /// Always `model`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "model")))]
    pub object: String,
    pub created: i64,
    pub owned_by: String,
}
