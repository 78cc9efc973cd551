//! The create request (`POST /v1/agent`, `POST /v1/responses`) and its tools.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::input::Input;
use crate::strict::{self, RequestError};
use crate::tagged::{self, Tagged};
use crate::written::Parameters;

/// The body of a create request. Unknown fields anywhere are refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateRequest {
    pub input: Input,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language_preference: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_budget_reminder: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_response_id: Option<String>,
    /// An OpenAI conversation (`conv_…`, or `{"id": …}`): its items come before `input`, and the
    /// run's input and output are appended to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<ConversationRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
    /// OpenAI's prompt cache retention (`in-memory`, `24h`): sent to OpenAI-wire upstreams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_retention: Option<PromptCacheRetention>,
    /// OpenAI's server-side context management: refused (see `options.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_management: Option<Value>,
    /// OpenAI's stored prompt templates: refused (see `options.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation: Option<Truncation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<ServiceTier>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileReference>,
    /// Skills the model may load with `load_skill`; any skill switches the sandbox on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<Skill>>,
    /// OpenAI's text output configuration: `format` is applied like `response_format`,
    /// `verbosity` goes to the upstreams that take it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<TextConfig>,
    /// Extra output to include (OpenAI's `include`; see `validate.rs` for what each value does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include: Option<Vec<String>>,
    /// How many most likely tokens to report with each output token's logprob (0..=20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u32>,
    /// OpenAI's end-user id: sent to OpenAI-wire upstreams, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// OpenAI's safety identifier: sent to OpenAI-wire upstreams, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_identifier: Option<String>,
}

impl CreateRequest {
    /// Parses a request body strictly: unknown fields and wrong types name the field path.
    pub fn parse(body: &[u8]) -> Result<CreateRequest, RequestError> {
        crate::strict::parse_json(body)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Reasoning {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<ReasoningEffort>,
    /// OpenAI extra (accepted and echoed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    None,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

impl ReasoningEffort {
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::None => "none",
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
            ReasoningEffort::Xhigh => "xhigh",
            ReasoningEffort::Max => "max",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ResponseFormat {
    /// Only `json_schema`.
    #[serde(rename = "type")]
    pub kind: ResponseFormatType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<JsonSchemaFormat>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormatType {
    JsonSchema,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct JsonSchemaFormat {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// `prompt_cache_retention`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum PromptCacheRetention {
    #[serde(rename = "in-memory")]
    InMemory,
    #[serde(rename = "24h")]
    Day,
}

impl PromptCacheRetention {
    pub fn as_str(self) -> &'static str {
        match self {
            PromptCacheRetention::InMemory => "in-memory",
            PromptCacheRetention::Day => "24h",
        }
    }
}

/// `conversation`: an id, or `{"id": …}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum ConversationRef {
    Id(String),
    Object(ConversationObject),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ConversationObject {
    pub id: String,
}

impl ConversationRef {
    pub fn id(&self) -> &str {
        match self {
            ConversationRef::Id(id) | ConversationRef::Object(ConversationObject { id }) => id,
        }
    }
}

/// `text`: OpenAI's text output configuration.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TextConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<TextFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<Verbosity>,
}

/// `text.format`: plain text, any JSON object, or JSON matching a schema.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TextFormat {
    Text(EmptyFormat),
    JsonObject(EmptyFormat),
    JsonSchema(TextJsonSchema),
}

impl<'de> Deserialize<'de> for TextFormat {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut map = strict::object(deserializer, "a text format object")?;
        let tag = strict::take_tag(&mut map, None)?;
        let value = Value::Object(map);
        match tag.as_str() {
            "text" => strict::from_value(value).map(TextFormat::Text),
            "json_object" => strict::from_value(value).map(TextFormat::JsonObject),
            "json_schema" => strict::from_value(value).map(TextFormat::JsonSchema),
            other => Err(strict::unknown_tag(
                "text format",
                other,
                &["text", "json_object", "json_schema"],
            )),
        }
    }
}

/// A format without parameters.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EmptyFormat {}

/// `text.format` of type `json_schema` (the Responses API's flat shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TextJsonSchema {
    pub name: String,
    pub schema: Value,
    /// Serialized as `null` when absent (Open Responses requires the field on echoes).
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// `text.verbosity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Verbosity {
    Low,
    Medium,
    High,
}

impl Verbosity {
    pub fn as_str(self) -> &'static str {
        match self {
            Verbosity::Low => "low",
            Verbosity::Medium => "medium",
            Verbosity::High => "high",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StreamOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_usage: Option<bool>,
    /// OpenAI extra (accepted and echoed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_obfuscation: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Truncation {
    Auto,
    Disabled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ServiceTier {
    Auto,
    Default,
    Flex,
    Priority,
    Fast,
}

impl ServiceTier {
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceTier::Auto => "auto",
            ServiceTier::Default => "default",
            ServiceTier::Flex => "flex",
            ServiceTier::Priority => "priority",
            ServiceTier::Fast => "fast",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ProfileReference {
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// `tool_choice`: a mode or an object (`{"name": …}`, `{"type": "web_search"}`,
/// `{"type": "function", "name": …}`, `{"type": "required"}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum ToolChoice {
    Mode(ToolChoiceMode),
    Object(ToolChoiceObject),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ToolChoiceMode {
    None,
    Auto,
    Required,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ToolChoiceObject {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(mode) => strict::from_value(Value::String(mode)).map(ToolChoice::Mode),
            value @ Value::Object(_) => strict::from_value(value).map(ToolChoice::Object),
            other => Err(serde::de::Error::custom(format!(
                "invalid type: {}, expected \"none\", \"auto\", \"required\" or an object",
                strict::kind(&other)
            ))),
        }
    }
}

/// One entry of `tools`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Tool {
    Function(FunctionTool),
    WebSearch(WebSearchTool),
    ImageSearch(ImageSearchTool),
    FetchUrl(FetchUrlTool),
    PeopleSearch(EmptyTool),
    FinanceSearch(EmptyTool),
    Sandbox(EmptyTool),
    Mcp(McpTool),
    Connector(ConnectorTool),
}

const TOOL_TYPES: &[&str] = &[
    "function",
    "web_search",
    "image_search",
    "fetch_url",
    "people_search",
    "finance_search",
    "sandbox",
    "mcp",
    "connector",
];

impl<'de> Deserialize<'de> for Tool {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        tagged::read(deserializer)
    }
}

impl Tagged for Tool {
    const EXPECTED: &'static str = "a tool object";

    fn read_variant<'de, D: Deserializer<'de>>(tag: &str, rest: D) -> Result<Self, D::Error> {
        match tag {
            "function" => FunctionTool::deserialize(rest).map(Tool::Function),
            "web_search" => WebSearchTool::deserialize(rest).map(Tool::WebSearch),
            "image_search" => ImageSearchTool::deserialize(rest).map(Tool::ImageSearch),
            "fetch_url" => FetchUrlTool::deserialize(rest).map(Tool::FetchUrl),
            "people_search" => EmptyTool::deserialize(rest).map(Tool::PeopleSearch),
            "finance_search" => EmptyTool::deserialize(rest).map(Tool::FinanceSearch),
            "sandbox" => EmptyTool::deserialize(rest).map(Tool::Sandbox),
            "mcp" => McpTool::deserialize(rest).map(Tool::Mcp),
            "connector" => ConnectorTool::deserialize(rest).map(Tool::Connector),
            other => Err(strict::unknown_tag("tool", other, TOOL_TYPES)),
        }
    }
}

impl Tool {
    /// The tool's `type` on the wire.
    pub fn type_name(&self) -> &'static str {
        match self {
            Tool::Function(_) => "function",
            Tool::WebSearch(_) => "web_search",
            Tool::ImageSearch(_) => "image_search",
            Tool::FetchUrl(_) => "fetch_url",
            Tool::PeopleSearch(_) => "people_search",
            Tool::FinanceSearch(_) => "finance_search",
            Tool::Sandbox(_) => "sandbox",
            Tool::Mcp(_) => "mcp",
            Tool::Connector(_) => "connector",
        }
    }
}

/// A custom function tool: the caller runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FunctionTool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The schema, shared: the run's registry, every model request and the response's echo
    /// hold this one value (copying a schema's maps per turn and per response cost more than
    /// the rest of a short request: docs/benchmarks.md, "Issue 18, twenty-sixth pass"), and
    /// write the compact JSON it keeps (`written.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<Value>"))]
    pub parameters: Option<Parameters>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// A built-in tool without parameters.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EmptyTool {}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WebSearchTool {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_context_size: Option<SearchContextSize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_per_page: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_results: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_type: Option<SearchType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_location: Option<UserLocation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<WebSearchFilters>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SearchContextSize {
    Low,
    Medium,
    High,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SearchType {
    Web,
    Fast,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct UserLocation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub city: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latitude: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longitude: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WebSearchFilters {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_domain_filter: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_recency_filter: Option<RecencyFilter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_after_date_filter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_before_date_filter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_after_filter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_before_filter: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RecencyFilter {
    Hour,
    Day,
    Week,
    Month,
    Year,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ImageSearchTool {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_results: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<ImageSearchFilters>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ImageSearchFilters {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_filter: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_filter: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safe_search: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FetchUrlTool {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_urls: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_budget_tokens: Option<u32>,
}

/// A remote MCP server. `authorization` and `headers` are secrets: never logged, stored or echoed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct McpTool {
    pub server_label: String,
    pub server_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_approval: Option<RequireApproval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defer_loading: Option<bool>,
}

/// A saved connector, by id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ConnectorTool {
    pub id: String,
    /// Defaults to the saved connector's label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_approval: Option<RequireApproval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defer_loading: Option<bool>,
}

/// `require_approval`: `"always"`, `"never"` or filters.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum RequireApproval {
    Mode(ApprovalMode),
    Filters(ApprovalFilters),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    Always,
    Never,
}

impl<'de> Deserialize<'de> for RequireApproval {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            value @ Value::String(_) => strict::from_value(value).map(RequireApproval::Mode),
            value @ Value::Object(_) => strict::from_value(value).map(RequireApproval::Filters),
            other => Err(serde::de::Error::custom(format!(
                "invalid type: {}, expected \"always\", \"never\" or an object",
                strict::kind(&other)
            ))),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ApprovalFilters {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always: Option<ApprovalFilter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub never: Option<ApprovalFilter>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ApprovalFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_names: Option<Vec<String>>,
}

/// One entry of `skills` (`SkillInput`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Skill {
    /// A skill that ships with the service.
    Builtin(BuiltinSkill),
    /// A skill defined in the request itself (never echoed).
    Inline(InlineSkill),
    /// A managed skill uploaded through `/v1/skills`.
    Custom(CustomSkill),
}

const SKILL_TYPES: &[&str] = &["builtin", "inline", "custom"];

impl<'de> Deserialize<'de> for Skill {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut map = strict::object(deserializer, "a skill object")?;
        let tag = strict::take_tag(&mut map, None)?;
        let value = Value::Object(map);
        match tag.as_str() {
            "builtin" => strict::from_value(value).map(Skill::Builtin),
            "inline" => strict::from_value(value).map(Skill::Inline),
            "custom" => strict::from_value(value).map(Skill::Custom),
            other => Err(strict::unknown_tag("skill", other, SKILL_TYPES)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct BuiltinSkill {
    pub name: BuiltinSkillName,
}

/// The built-in skills: `office` turns on all four leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum BuiltinSkillName {
    #[serde(rename = "office")]
    Office,
    #[serde(rename = "office/docx")]
    OfficeDocx,
    #[serde(rename = "office/pdf")]
    OfficePdf,
    #[serde(rename = "office/pptx")]
    OfficePptx,
    #[serde(rename = "office/xlsx")]
    OfficeXlsx,
}

impl BuiltinSkillName {
    pub fn as_str(self) -> &'static str {
        match self {
            BuiltinSkillName::Office => "office",
            BuiltinSkillName::OfficeDocx => "office/docx",
            BuiltinSkillName::OfficePdf => "office/pdf",
            BuiltinSkillName::OfficePptx => "office/pptx",
            BuiltinSkillName::OfficeXlsx => "office/xlsx",
        }
    }
}

/// A request-scoped skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct InlineSkill {
    /// Lowercase ASCII words joined by single hyphens.
    pub name: String,
    /// The routing trigger the model sees up front (≤ 1,024 bytes).
    pub description: String,
    /// The body `load_skill` returns (≤ 65,536 bytes; ≤ 262,144 across the request).
    pub instructions: String,
}

/// A managed skill, by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CustomSkill {
    pub id: String,
    /// A revision; the latest when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}
