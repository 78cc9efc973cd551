//! Output items (`OutputItem`): what a response's `output` array holds.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::written::{Parameters, Written};

/// One output item (`OutputItemOutput` in the SDK schema, plus agentd's `people_search_results`
/// and `finance_results` (spec decision 4) and the preview `advisor_result`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    Message(OutputMessage),
    /// Web search hits; `results[].id` is what `[n]` markers in the text refer to.
    SearchResults(SearchResults),
    ImageSearchResults(ImageSearchResults),
    FetchUrlResults(FetchUrlResults),
    FunctionCall(FunctionCall),
    McpListTools(McpListTools),
    McpCall(McpCall),
    McpApprovalRequest(McpApprovalRequest),
    /// One search of the deferred MCP / connector tool catalog.
    ToolSearchOutput(ToolSearchOutput),
    SkillLoaded(SkillLoaded),
    /// One code execution in the sandbox (the `execute` tool).
    SandboxResults(SandboxResults),
    SandboxWriteFile(SandboxWriteFile),
    SandboxReadFile(SandboxReadFile),
    SandboxEditFile(SandboxEditFile),
    SandboxGrep(SandboxFileMatches),
    SandboxGlob(SandboxFileMatches),
    SandboxApplyPatch(SandboxApplyPatch),
    ShareFile(ShareFile),
    /// agentd: people_search hits, entries shaped like `search_results` entries.
    PeopleSearchResults(SearchResults),
    /// agentd: finance_search data (spec decision 4).
    FinanceResults(FinanceResults),
    /// Preview: a server-side advisor call; guidance for the agent loop, not a client call.
    AdvisorResult(AdvisorResult),
    /// An output variant without a typed public schema.
    Unknown(UnknownItem),
}

/// Lifecycle status of a message or function call item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum OutputStatus {
    InProgress,
    Completed,
    Incomplete,
    Failed,
}

/// An assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct OutputMessage {
    pub id: String,
    pub status: OutputStatus,
    /// Always `assistant`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "assistant")))]
    pub role: String,
    pub content: Vec<OutputContent>,
    /// `commentary` for text written between tool calls, `final_answer` for the answer; known
    /// once the turn that wrote it has ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<MessagePhase>,
}

/// What an assistant message is: intermediate commentary or the final answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MessagePhase {
    Commentary,
    FinalAnswer,
}

impl OutputMessage {
    /// The concatenated text of the message.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .map(|part| match part {
                OutputContent::OutputText(text) => text.text.as_str(),
            })
            .collect()
    }
}

/// One part of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputContent {
    OutputText(OutputText),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OutputText {
    pub text: String,
    #[serde(default)]
    pub annotations: Vec<Annotation>,
    /// Always `[]` (kept for OpenAI SDK compatibility).
    #[serde(default)]
    pub logprobs: Vec<Value>,
}

/// A citation inside message text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Annotation {
    UrlCitation {
        url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        start_index: u64,
        end_index: u64,
    },
}

/// A call of a custom function tool, handed to the caller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FunctionCall {
    pub id: String,
    pub call_id: String,
    pub name: String,
    pub arguments: String,
    pub status: OutputStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

/// The tools one MCP server offered when the run started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct McpListTools {
    pub id: String,
    pub server_label: String,
    /// The server's tools, written once (the item is written into its events, the response
    /// and the transcript: `written.rs`).
    #[cfg_attr(feature = "schema", schemars(with = "Vec<McpToolDef>"))]
    pub tools: Written<Vec<McpToolDef>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct McpToolDef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The server's schema, passed through unmodified (shared with the run's tool specs, and
    /// written as the JSON it keeps: an `mcp_list_tools` item is written into several events
    /// and the response).
    #[cfg_attr(feature = "schema", schemars(with = "Value"))]
    pub input_schema: Parameters,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<McpToolAnnotations>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct McpToolAnnotations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
}

/// One MCP tool call and its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct McpCall {
    pub id: String,
    pub server_label: String,
    pub name: String,
    pub arguments: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector_id: Option<String>,
}

/// A gated MCP call waiting for the caller's decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct McpApprovalRequest {
    pub id: String,
    pub server_label: String,
    pub name: String,
    pub arguments: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct UnknownItem {
    pub item_name: String,
    #[serde(default)]
    pub payload: Value,
}

/// `search_results` (and agentd's `people_search_results`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SearchResults {
    pub results: Vec<SearchResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queries: Option<Vec<String>>,
}

/// One search hit (`SearchResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SearchResult {
    /// The citation number (`[1]` in the text).
    pub id: u64,
    pub url: String,
    pub title: String,
    pub snippet: String,
    /// Publication date, `YYYY-MM-DD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// Last-updated date, `YYYY-MM-DD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<String>,
    /// `web` for web search (the only value the SDK schema names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// `image_search_results`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ImageSearchResults {
    pub results: Vec<ImageResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queries: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One image hit (`ImageResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ImageResult {
    pub image_url: String,
    /// The page the image was found on.
    pub origin_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub width: u32,
    pub height: u32,
}

/// `fetch_url_results`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FetchUrlResults {
    pub contents: Vec<UrlContent>,
}

/// One fetched page (`UrlContent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct UrlContent {
    pub url: String,
    pub title: String,
    /// The fetched content.
    pub snippet: String,
}

/// `tool_search_output`: the tools one catalog search found (spec decision 5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolSearchOutput {
    pub id: String,
    /// The model's call id; `null` when the server ran the search on its own.
    #[serde(default)]
    pub call_id: Option<String>,
    /// `completed` in agentd.
    pub status: String,
    /// `server` in agentd.
    pub execution: String,
    /// The JSON the model sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// One namespace per MCP server or connector.
    pub tools: Vec<NamespaceTool>,
}

/// `{"type": "namespace", name, description, tools}`: the matching tools of one server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NamespaceTool {
    #[serde(rename = "type")]
    pub kind: NamespaceType,
    /// The server's `server_label`.
    pub name: String,
    pub description: String,
    pub tools: Vec<NamespaceToolDef>,
}

/// The literal `"namespace"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum NamespaceType {
    #[default]
    #[serde(rename = "namespace")]
    Namespace,
}

/// `{"type": "function", name, description?, parameters?}` inside a namespace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NamespaceToolDef {
    #[serde(rename = "type")]
    pub kind: FunctionType,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<Value>"))]
    pub parameters: Option<Parameters>,
}

/// The literal `"function"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum FunctionType {
    #[default]
    #[serde(rename = "function")]
    Function,
}

/// `skill_loaded`: `load_skill` resolved a skill (only the name is exposed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SkillLoaded {
    pub name: String,
}

/// Status of a sandbox execution and of its `sandbox_results` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SandboxStatus {
    InProgress,
    Completed,
    Failed,
    TimedOut,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SandboxLanguage {
    Python,
    Bash,
}

/// `sandbox_results`: one code execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SandboxResults {
    pub call_id: String,
    pub code: String,
    pub language: SandboxLanguage,
    pub results: Vec<SandboxResult>,
    pub status: SandboxStatus,
    /// The workspace that ran it (reused along a response chain, spec decision 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
}

/// One execution result. `status` says whether the runner finished; `exit_code` is the
/// program's own, so `completed` may carry a non-zero `exit_code`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SandboxResult {
    pub status: SandboxStatus,
    pub exit_code: i64,
    pub stdout: String,
    pub stderr: String,
    pub duration_ms: u64,
}

/// `sandbox_write_file`: the `write` tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SandboxWriteFile {
    pub call_id: String,
    pub file_path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `sandbox_read_file`: the `read` tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SandboxReadFile {
    pub call_id: String,
    pub file_path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_lines: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `sandbox_edit_file`: the `edit` tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SandboxEditFile {
    pub call_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `sandbox_grep` and `sandbox_glob` (the `grep` and `glob` tools share one shape).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SandboxFileMatches {
    pub call_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `sandbox_apply_patch`: the `apply_patch` tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SandboxApplyPatch {
    pub call_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `share_file`: a sandbox file delivered to the caller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ShareFile {
    pub call_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// Relative download path: `/v1/responses/{id}/files/{file_id}/content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `finance_results` (agentd's definition, spec decision 4). Has no `url`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FinanceResults {
    pub queries: Vec<String>,
    pub results: Vec<FinanceResult>,
}

/// One block of financial data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FinanceResult {
    pub id: u64,
    /// Ticker, when the data is about one security.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// Company or instrument name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Data category (`quote`, `income_statement`, …).
    pub category: String,
    pub title: String,
    pub data: Map<String, Value>,
    /// The data provider.
    pub source: String,
    /// When the data was current (RFC 3339 or `YYYY-MM-DD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
}

/// `advisor_result` (preview API, `[node-0.37]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AdvisorResult {
    pub call_id: String,
    pub status: OutputStatus,
    /// The advisor's guidance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
    /// The raw JSON arguments the model passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// The question parsed from `arguments`, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// Non-fatal error code when the advisor call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}
