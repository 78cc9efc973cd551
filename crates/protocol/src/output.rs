//! Output items (`OutputItem`): what a response's `output` array holds.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One output item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    Message(OutputMessage),
    FunctionCall(FunctionCall),
    McpListTools(McpListTools),
    McpCall(McpCall),
    McpApprovalRequest(McpApprovalRequest),
    /// An output variant without a typed public schema.
    Unknown(UnknownItem),
}

/// Lifecycle status of a message or function call item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputStatus {
    InProgress,
    Completed,
    Incomplete,
    Failed,
}

/// An assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputMessage {
    pub id: String,
    pub status: OutputStatus,
    /// Always `assistant`.
    pub role: String,
    pub content: Vec<OutputContent>,
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
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputContent {
    OutputText(OutputText),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[serde(deny_unknown_fields)]
pub struct McpListTools {
    pub id: String,
    pub server_label: String,
    pub tools: Vec<McpToolDef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpToolDef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The server's schema, passed through unmodified.
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<McpToolAnnotations>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpToolAnnotations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
}

/// One MCP tool call and its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
pub struct UnknownItem {
    pub item_name: String,
    #[serde(default)]
    pub payload: Value,
}
