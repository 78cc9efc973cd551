//! Input items (`InputItem`): what a request's `input` array holds, and what a continuation
//! transcript is made of.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::output::{Annotation, McpApprovalRequest, McpCall, McpListTools, ToolSearchOutput};
use crate::strict::{self, TextOrList};
use crate::tagged::{self, Tagged};

/// `input`: a string (one user turn) or a list of items.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum Input {
    Text(String),
    Items(Vec<InputItem>),
}

impl<'de> Deserialize<'de> for Input {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match strict::text_or_list(deserializer, "a string or an array of input items")? {
            TextOrList::Text(text) => Ok(Input::Text(text)),
            TextOrList::List(items) => Ok(Input::Items(items)),
        }
    }
}

impl Input {
    /// The input as a list of items (a string becomes one user message).
    pub fn into_items(self) -> Vec<InputItem> {
        match self {
            Input::Text(text) => vec![InputItem::Message(InputMessage {
                role: Role::User,
                content: MessageContent::Text(text),
                id: None,
                status: None,
                phase: None,
            })],
            Input::Items(items) => items,
        }
    }
}

/// One input item.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InputItem {
    /// A message (`type` may be omitted on the wire).
    #[cfg_attr(feature = "schema", schemars(transform = crate::schema::optional_tag))]
    Message(InputMessage),
    FunctionCall(FunctionCallInput),
    FunctionCallOutput(FunctionCallOutput),
    Reasoning(ReasoningInput),
    McpApprovalResponse(McpApprovalResponse),
    McpApprovalRequest(McpApprovalRequest),
    McpCall(McpCall),
    McpListTools(McpListTools),
    /// A replayed `tool_search_output` item (agentd accepts it as history so a replayed
    /// `output` keeps the tools a search loaded; the SDKs' input union does not list it).
    ToolSearchOutput(ToolSearchOutput),
    /// An earlier item by id (`{"type": "item_reference", "id": …}`, or `{"id": …}` alone), resolved
    /// from the project's stored items before the run.
    ItemReference(ItemReference),
    /// A `compaction` item from `/responses/compact`: the model is sent its summary in place of
    /// the history it summarises.
    Compaction(CompactionItem),
}

/// `item_reference`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ItemReference {
    pub id: String,
}

/// The `compaction` item, as answered and as taken back in `input`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CompactionItem {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// agentd's summary of the conversation, base64 (agentd's own format: a client passes it
    /// back as it got it).
    pub encrypted_content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
}

const INPUT_ITEM_TYPES: &[&str] = &[
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "mcp_approval_response",
    "mcp_approval_request",
    "mcp_call",
    "mcp_list_tools",
    "tool_search_output",
    "item_reference",
    "compaction",
];

impl<'de> Deserialize<'de> for InputItem {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        tagged::read(deserializer)
    }
}

impl Tagged for InputItem {
    const EXPECTED: &'static str = "an input item object";

    fn read_variant<'de, D: Deserializer<'de>>(tag: &str, rest: D) -> Result<Self, D::Error> {
        match tag {
            "message" => InputMessage::deserialize(rest).map(InputItem::Message),
            "function_call" => FunctionCallInput::deserialize(rest).map(InputItem::FunctionCall),
            "function_call_output" => {
                FunctionCallOutput::deserialize(rest).map(InputItem::FunctionCallOutput)
            }
            "reasoning" => ReasoningInput::deserialize(rest).map(InputItem::Reasoning),
            "mcp_approval_response" => {
                McpApprovalResponse::deserialize(rest).map(InputItem::McpApprovalResponse)
            }
            "mcp_approval_request" => {
                McpApprovalRequest::deserialize(rest).map(InputItem::McpApprovalRequest)
            }
            "mcp_call" => McpCall::deserialize(rest).map(InputItem::McpCall),
            "mcp_list_tools" => McpListTools::deserialize(rest).map(InputItem::McpListTools),
            "tool_search_output" => {
                ToolSearchOutput::deserialize(rest).map(InputItem::ToolSearchOutput)
            }
            "item_reference" => ItemReference::deserialize(rest).map(InputItem::ItemReference),
            "compaction" => CompactionItem::deserialize(rest).map(InputItem::Compaction),
            other => Err(strict::unknown_tag("input item", other, INPUT_ITEM_TYPES)),
        }
    }

    /// Only a message has `role`.
    fn variant_of_first_key(key: &str) -> Option<&'static str> {
        (key == "role").then_some("message")
    }

    /// An object with only an `id` is an item reference (Open Responses'
    /// `ItemReferenceParam`, whose `type` is optional); any other untyped object is a message.
    fn default_variant(object: &serde_json::Map<String, Value>) -> Option<&'static str> {
        if object.len() == 1 && object.contains_key("id") {
            Some("item_reference")
        } else {
            Some("message")
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    System,
    Developer,
}

/// A message item. Replayed assistant output messages (with `id`, `status` and `output_text`
/// parts) are accepted as they were returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct InputMessage {
    pub role: Role,
    pub content: MessageContent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// An assistant message's phase (`commentary` or `final_answer`), as output messages carry
    /// it; history only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<crate::output::MessagePhase>,
}

/// Message content: a string or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl<'de> Deserialize<'de> for MessageContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match strict::text_or_list(deserializer, "a string or an array of content parts")? {
            TextOrList::Text(text) => Ok(MessageContent::Text(text)),
            TextOrList::List(parts) => Ok(MessageContent::Parts(parts)),
        }
    }
}

impl MessageContent {
    /// The text of all text parts, joined.
    pub fn text(&self) -> String {
        match self {
            MessageContent::Text(text) => text.clone(),
            MessageContent::Parts(parts) => parts
                .iter()
                .filter_map(|part| match part {
                    ContentPart::InputText { text } => Some(text.as_str()),
                    ContentPart::OutputText(out) => Some(out.text.as_str()),
                    _ => None,
                })
                .collect(),
        }
    }
}

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
// The parser reads `input_text` and `input_image` through the strict helper structs below.
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    InputText {
        text: String,
    },
    InputImage {
        image_url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<ImageDetail>,
    },
    InputFile(InputFile),
    /// Assistant text, as found in replayed output messages.
    OutputText(OutputTextPart),
}

const CONTENT_PART_TYPES: &[&str] = &["input_text", "input_image", "input_file", "output_text"];

#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
struct InputTextPart {
    text: String,
}

#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
struct InputImagePart {
    image_url: String,
    #[serde(default)]
    detail: Option<ImageDetail>,
}

impl<'de> Deserialize<'de> for ContentPart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        tagged::read(deserializer)
    }
}

impl Tagged for ContentPart {
    const EXPECTED: &'static str = "a content part object";

    fn read_variant<'de, D: Deserializer<'de>>(tag: &str, rest: D) -> Result<Self, D::Error> {
        match tag {
            "input_text" => {
                InputTextPart::deserialize(rest).map(|p| ContentPart::InputText { text: p.text })
            }
            "input_image" => InputImagePart::deserialize(rest).map(|p| ContentPart::InputImage {
                image_url: p.image_url,
                detail: p.detail,
            }),
            "input_file" => InputFile::deserialize(rest).map(ContentPart::InputFile),
            "output_text" => OutputTextPart::deserialize(rest).map(ContentPart::OutputText),
            sonar @ ("file_url" | "pdf_url" | "video_url" | "image_url") => {
                let instead = match sonar {
                    "image_url" => "; use input_image",
                    "video_url" => "",
                    _ => "; use input_file",
                };
                Err(strict::error_at(
                    "type",
                    format!(
                        "content part type \"{sonar}\" is a Sonar content type that is not \
                         supported on the Agent API{instead}"
                    ),
                ))
            }
            other => Err(strict::unknown_tag(
                "content part",
                other,
                CONTENT_PART_TYPES,
            )),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ImageDetail {
    Low,
    High,
    Auto,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct InputFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

/// An `output_text` part inside a replayed assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct OutputTextPart {
    pub text: String,
    #[serde(default)]
    pub annotations: Vec<Annotation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<Value>>,
}

/// A replayed function call (an output `function_call` item may be sent back unchanged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FunctionCallInput {
    pub call_id: String,
    pub name: String,
    pub arguments: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

/// The caller's result of a function call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FunctionCallOutput {
    pub call_id: String,
    pub output: FunctionOutput,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ItemStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
}

/// Status of `function_call_output` and `reasoning` items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    InProgress,
    Completed,
    Incomplete,
}

/// A function result: a string or text/image parts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum FunctionOutput {
    Text(String),
    #[cfg_attr(feature = "schema", schemars(with = "Vec<FunctionOutputPart>"))]
    Parts(Vec<ContentPart>),
}

/// The content parts a function output may hold (schema only: the parser refuses the others).
#[cfg(feature = "schema")]
#[derive(schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[expect(dead_code, reason = "describes the wire shape; never built")]
enum FunctionOutputPart {
    InputText(InputTextPart),
    InputImage(InputImagePart),
}

impl<'de> Deserialize<'de> for FunctionOutput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match strict::text_or_list(deserializer, "a string or an array of parts")? {
            TextOrList::Text(text) => Ok(FunctionOutput::Text(text)),
            TextOrList::List(parts) => {
                if let Some(index) = parts.iter().position(|p| {
                    !matches!(
                        p,
                        ContentPart::InputText { .. } | ContentPart::InputImage { .. }
                    )
                }) {
                    return Err(strict::error_at(
                        &format!("[{index}].type"),
                        "a function output part must be input_text or input_image",
                    ));
                }
                Ok(FunctionOutput::Parts(parts))
            }
        }
    }
}

impl FunctionOutput {
    /// The output as text for models that take only text tool results.
    pub fn to_text(&self) -> String {
        match self {
            FunctionOutput::Text(text) => text.clone(),
            FunctionOutput::Parts(parts) => MessageContent::Parts(parts.clone()).text(),
        }
    }
}

/// A replayed reasoning item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ReasoningInput {
    #[serde(default)]
    pub summary: Vec<ReasoningText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ReasoningText>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ItemStatus>,
}

/// `{type: "summary_text" | "reasoning_text", text}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ReasoningText {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: String,
}

/// The caller's decision on an `mcp_approval_request`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct McpApprovalResponse {
    pub approval_request_id: String,
    pub approve: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
