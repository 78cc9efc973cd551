//! The Responses wire format: the request body we send and the stream events we read back.
//!
//! Only the fields this adapter uses are modelled. Unknown event types and unknown output item
//! types (hosted tool calls…) parse to an `Other` variant and are skipped, so a new upstream
//! event never breaks a turn.
//!
//! Reasoning: as nothing is stored upstream (`store: false`), a reasoning model's reasoning
//! items are asked for with their `encrypted_content` (`include`) and sent back, id and all,
//! before the turn they belong to; see [`wants_reasoning`] for when.

use engine::model::{
    ContentPart, ModelMessage, ModelRequest, ModelToolChoice, OutputFormat,
    Reasoning as ReasoningBlock, ToolSpec,
};
use protocol::written::Parameters;
use serde::{Deserialize, Serialize};

use crate::message_memo::MessageMemo;

// ---------------------------------------------------------------------------------------------
// Request

/// `POST /responses` body, borrowing from the engine's request. Written by
/// [`ResponsesRequest::to_json`]; its `Serialize` is that writer's oracle in the tests.
#[derive(Debug, Serialize)]
pub(crate) struct ResponsesRequest<'a> {
    model: &'a str,
    /// The leading system messages, joined by a blank line.
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<String>,
    input: Vec<InputItem<'a>>,
    /// The engine's messages `input` is written from (what the memo compares), and where the
    /// items of each end in `input`.
    #[serde(skip)]
    sources: Vec<&'a ModelMessage>,
    #[serde(skip)]
    ends: Vec<usize>,
    #[serde(flatten)]
    options: ResponsesOptions<'a>,
}

/// The body's fields after `input`.
#[derive(Debug, Serialize)]
struct ResponsesOptions<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<TextConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_retention: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    service_tier: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    safety_identifier: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_logprobs: Option<u32>,
    /// `reasoning.encrypted_content` for reasoning models, `message.output_text.logprobs` when
    /// logprobs are asked for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    /// Always `false`: agentd keeps its own transcript and resends it every turn, so nothing
    /// needs to live (or be retained) upstream.
    store: bool,
    stream: bool,
}

impl<'a> From<&'a ModelRequest> for ResponsesRequest<'a> {
    fn from(request: &'a ModelRequest) -> Self {
        // Only the system messages before the conversation become `instructions`; one that
        // comes later (a developer note mid-conversation) keeps its place as an input message.
        let leading = request
            .messages
            .iter()
            .take_while(|message| matches!(message, ModelMessage::System { .. }))
            .count();
        let instructions: Vec<&str> = request.messages[..leading]
            .iter()
            .filter_map(|message| match message {
                ModelMessage::System { content } if !content.is_empty() => Some(content.as_str()),
                _ => None,
            })
            .collect();
        let mut input = Vec::with_capacity(request.messages.len());
        let sources: Vec<&ModelMessage> = request.messages[leading..].iter().collect();
        let mut ends = Vec::with_capacity(sources.len());
        for message in &sources {
            push_items(message, &mut input);
            ends.push(input.len());
        }
        ResponsesRequest {
            model: &request.model,
            instructions: (!instructions.is_empty()).then(|| instructions.join("\n\n")),
            input,
            sources,
            ends,
            options: ResponsesOptions::new(request),
        }
    }
}

impl ResponsesRequest<'_> {
    /// The body as compact JSON, byte for byte as `serde_json::to_string(self)` writes it:
    /// the input items field by field (but reasoning, by serde), their text through the
    /// protocol's string writer (eight bytes at a time, where serde_json escapes a byte at a
    /// time: a long history's text was most of the body's cost), the rest by serde.
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> Result<String, serde_json::Error> {
        self.to_json_with(&MessageMemo::default())
    }

    /// [`Self::to_json`], the JSON of the first messages' items taken from `memo` where they are
    /// those of a request written before (`message_memo.rs`): the same bytes.
    pub(crate) fn to_json_with(&self, memo: &MessageMemo) -> Result<String, serde_json::Error> {
        let text: usize = self.input.iter().map(InputItem::json_size).sum();
        let instructions = self.instructions.as_ref().map_or(0, String::len);
        let mut out = String::with_capacity(512 + self.model.len() + instructions + text);
        out.push_str("{\"model\":");
        protocol::push_json_string(&mut out, self.model)?;
        if let Some(instructions) = &self.instructions {
            out.push_str(",\"instructions\":");
            protocol::push_json_string(&mut out, instructions)?;
        }
        out.push_str(",\"input\":");
        memo.write_list(&mut out, &self.sources, text, |out, i| {
            // Message `i`'s items: from the end of the message before's to its own.
            let from = i
                .checked_sub(1)
                .and_then(|before| self.ends.get(before))
                .copied()
                .unwrap_or(0);
            let to = self.ends.get(i).copied().unwrap_or(from);
            for (n, item) in self
                .input
                .get(from..to)
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                if n > 0 {
                    out.push(',');
                }
                item.write_json(out)?;
            }
            Ok(())
        })?;
        protocol::push_json_members(&mut out, &self.options)?;
        Ok(out)
    }
}

impl<'a> ResponsesOptions<'a> {
    fn new(request: &'a ModelRequest) -> Self {
        let has_tools = !request.tools.is_empty();
        ResponsesOptions {
            tools: request.tools.iter().map(Tool::from).collect(),
            // Without tools, tool_choice and parallel_tool_calls say nothing; leave them out.
            tool_choice: has_tools.then(|| ToolChoice::from(&request.tool_choice)),
            parallel_tool_calls: request.parallel_tool_calls.filter(|_| has_tools),
            temperature: request.temperature,
            top_p: request.top_p,
            max_output_tokens: request.max_output_tokens,
            text: (request.output_format.is_some() || request.verbosity.is_some()).then(|| {
                TextConfig {
                    format: request.output_format.as_ref().map(TextFormat::from),
                    verbosity: request.verbosity.as_deref(),
                }
            }),
            reasoning: (request.reasoning_effort.is_some() || request.reasoning_summary.is_some())
                .then_some(Reasoning {
                    effort: request.reasoning_effort.as_deref(),
                    summary: request.reasoning_summary.as_deref(),
                }),
            prompt_cache_key: request.prompt_cache_key.as_deref(),
            prompt_cache_retention: request.prompt_cache_retention.as_deref(),
            service_tier: request.service_tier.as_deref(),
            user: request.user.as_deref(),
            safety_identifier: request.safety_identifier.as_deref(),
            top_logprobs: request.logprobs.filter(|n| *n > 0),
            include: {
                let mut include = Vec::new();
                if wants_reasoning(request) {
                    include.push("reasoning.encrypted_content");
                }
                if request.logprobs.is_some() {
                    include.push("message.output_text.logprobs");
                }
                include
            },
            store: false,
            stream: true,
        }
    }
}

/// Whether to ask for encrypted reasoning: a `reasoning_effort` other than `none`, a model of
/// OpenAI's reasoning families (`o1`…`o4`, `gpt-5*`, `codex-*`), or reasoning items of this API
/// in the history. Other models refuse the `include`.
pub(crate) fn wants_reasoning(request: &ModelRequest) -> bool {
    let effort = request
        .reasoning_effort
        .as_deref()
        .is_some_and(|effort| effort != "none");
    let model = request.model.rsplit('/').next().unwrap_or_default();
    let reasoning_family = model.starts_with("gpt-5")
        || model.starts_with("codex-")
        || (model.starts_with('o') && model[1..].starts_with(|c: char| c.is_ascii_digit()));
    let history = request
        .messages
        .iter()
        .any(|message| matches!(message, ModelMessage::Reasoning(block) if replayable(block)));
    effort || reasoning_family || history
}

/// A reasoning block this API made and can take back: its own `rs_` id with the encrypted
/// content (with `store: false` the id alone points at nothing).
fn replayable(block: &ReasoningBlock) -> bool {
    block.id.as_deref().is_some_and(|id| id.starts_with("rs_"))
        && block.encrypted.as_deref().is_some_and(|e| !e.is_empty())
}

/// The input items of one message: a message item, and for an assistant turn one
/// `function_call` item per call; a tool result is a `function_call_output` item.
fn push_items<'a>(message: &'a ModelMessage, input: &mut Vec<InputItem<'a>>) {
    match message {
        ModelMessage::System { content } => input.push(InputItem::Message {
            role: "system",
            content: MessageContent::Text(content),
        }),
        ModelMessage::User { content } => input.push(InputItem::Message {
            role: "user",
            content: if content.is_empty() {
                MessageContent::Text("")
            } else {
                MessageContent::Parts(content.iter().map(InputPart::from).collect())
            },
        }),
        ModelMessage::Assistant {
            content,
            tool_calls,
        } => {
            // An assistant turn with neither text nor calls carries nothing: no item.
            if let Some(text) = content.as_deref().filter(|text| !text.is_empty()) {
                input.push(InputItem::Message {
                    role: "assistant",
                    content: MessageContent::Text(text),
                });
            }
            // `thought_signature` is Gemini's; the Responses API has no place for it.
            input.extend(tool_calls.iter().map(|call| InputItem::FunctionCall {
                call_id: &call.id,
                name: &call.name,
                arguments: &call.arguments,
            }));
        }
        ModelMessage::Reasoning(block) => {
            if let (true, Some(id), Some(encrypted)) = (
                replayable(block),
                block.id.as_deref(),
                block.encrypted.as_deref(),
            ) {
                input.push(InputItem::Reasoning {
                    id,
                    summary: block
                        .summary
                        .iter()
                        .map(|text| SummaryText {
                            kind: "summary_text",
                            text,
                        })
                        .collect(),
                    encrypted_content: encrypted,
                });
            }
        }
        ModelMessage::Tool {
            call_id, content, ..
        } => input.push(InputItem::FunctionCallOutput {
            call_id,
            output: content,
        }),
    }
}

/// `{"type": "summary_text", "text": …}`.
#[derive(Debug, Serialize)]
struct SummaryText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InputItem<'a> {
    Message {
        role: &'static str,
        content: MessageContent<'a>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: &'a str,
    },
    Reasoning {
        id: &'a str,
        summary: Vec<SummaryText<'a>>,
        encrypted_content: &'a str,
    },
}

impl InputItem<'_> {
    /// About the item's JSON length.
    fn json_size(&self) -> usize {
        match self {
            InputItem::Message {
                content: MessageContent::Text(text),
                ..
            } => 64 + text.len(),
            InputItem::FunctionCall {
                call_id,
                name,
                arguments,
            } => 64 + call_id.len() + name.len() + arguments.len(),
            InputItem::FunctionCallOutput { call_id, output } => 64 + call_id.len() + output.len(),
            _ => 256,
        }
    }

    /// The item as serde writes it (the tag first, then the fields in their order): messages
    /// with text content, function calls and their outputs field by field, the others by
    /// serde.
    fn write_json(&self, out: &mut String) -> Result<(), serde_json::Error> {
        match self {
            InputItem::Message {
                role,
                content: MessageContent::Text(text),
            } => {
                out.push_str("{\"type\":\"message\",\"role\":");
                protocol::push_json_string(out, role)?;
                out.push_str(",\"content\":");
                protocol::push_json_string(out, text)?;
            }
            InputItem::FunctionCall {
                call_id,
                name,
                arguments,
            } => {
                out.push_str("{\"type\":\"function_call\",\"call_id\":");
                protocol::push_json_string(out, call_id)?;
                out.push_str(",\"name\":");
                protocol::push_json_string(out, name)?;
                out.push_str(",\"arguments\":");
                protocol::push_json_string(out, arguments)?;
            }
            InputItem::FunctionCallOutput { call_id, output } => {
                out.push_str("{\"type\":\"function_call_output\",\"call_id\":");
                protocol::push_json_string(out, call_id)?;
                out.push_str(",\"output\":");
                protocol::push_json_string(out, output)?;
            }
            other => return protocol::push_json(out, other),
        }
        out.push('}');
        Ok(())
    }
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum MessageContent<'a> {
    Text(&'a str),
    Parts(Vec<InputPart<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type")]
enum InputPart<'a> {
    #[serde(rename = "input_text")]
    Text { text: &'a str },
    #[serde(rename = "input_image")]
    Image {
        image_url: &'a str,
        /// Required by OpenAI's schema; `auto` when the caller gave none.
        detail: &'a str,
    },
    #[serde(rename = "input_file")]
    File {
        #[serde(skip_serializing_if = "Option::is_none")]
        filename: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_data: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_url: Option<&'a str>,
    },
}

impl<'a> From<&'a ContentPart> for InputPart<'a> {
    fn from(part: &'a ContentPart) -> Self {
        match part {
            ContentPart::Text { text } => InputPart::Text { text },
            ContentPart::ImageUrl { url, detail } => InputPart::Image {
                image_url: url,
                detail: detail.as_deref().unwrap_or("auto"),
            },
            ContentPart::File {
                filename,
                file_data,
                file_url,
            } => InputPart::File {
                filename: filename.as_deref(),
                file_data: file_data.as_deref(),
                file_url: file_url.as_deref(),
            },
        }
    }
}

#[derive(Debug, Serialize)]
struct Tool<'a> {
    r#type: &'static str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    parameters: &'a Parameters,
    /// Always sent: the Responses API defaults `strict` to true, which would reject the
    /// loose schemas of non-strict tools.
    strict: bool,
}

impl<'a> From<&'a ToolSpec> for Tool<'a> {
    fn from(tool: &'a ToolSpec) -> Self {
        Tool {
            r#type: "function",
            name: &tool.name,
            description: tool.description.as_deref(),
            parameters: &tool.parameters,
            strict: tool.strict,
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ToolChoice<'a> {
    Mode(&'static str),
    Function { r#type: &'static str, name: &'a str },
}

impl<'a> From<&'a ModelToolChoice> for ToolChoice<'a> {
    fn from(choice: &'a ModelToolChoice) -> Self {
        match choice {
            ModelToolChoice::Auto => ToolChoice::Mode("auto"),
            ModelToolChoice::None => ToolChoice::Mode("none"),
            ModelToolChoice::Required => ToolChoice::Mode("required"),
            ModelToolChoice::Function(name) => ToolChoice::Function {
                r#type: "function",
                name,
            },
        }
    }
}

#[derive(Debug, Serialize)]
struct TextConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<TextFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verbosity: Option<&'a str>,
}

/// `text.format`: unlike Chat Completions, the schema fields sit beside `type`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum TextFormat<'a> {
    JsonSchema {
        name: &'a str,
        schema: &'a serde_json::Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        strict: Option<bool>,
    },
    JsonObject,
}

impl<'a> From<&'a OutputFormat> for TextFormat<'a> {
    fn from(format: &'a OutputFormat) -> Self {
        match format {
            OutputFormat::JsonObject => TextFormat::JsonObject,
            OutputFormat::JsonSchema(format) => TextFormat::JsonSchema {
                name: &format.name,
                schema: &format.schema,
                description: format.description.as_deref(),
                strict: format.strict,
            },
        }
    }
}

#[derive(Debug, Serialize)]
struct Reasoning<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a str>,
}

// ---------------------------------------------------------------------------------------------
// Response

/// One event of the stream (the SSE `data` field; its `type` repeats the SSE `event` name).
#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub(crate) enum StreamEvent {
    #[serde(rename = "response.output_item.added")]
    OutputItemAdded {
        output_index: usize,
        item: OutputItem,
    },
    #[serde(rename = "response.output_item.done")]
    OutputItemDone {
        output_index: usize,
        item: OutputItem,
    },
    #[serde(
        rename = "response.output_text.delta",
        alias = "response.refusal.delta"
    )]
    TextDelta {
        #[serde(default)]
        output_index: Option<usize>,
        delta: String,
        /// With `include: ["message.output_text.logprobs"]`: this delta's tokens.
        #[serde(default)]
        logprobs: Vec<crate::logprobs::WireLogprob>,
    },
    #[serde(rename = "response.output_text.done")]
    TextDone {
        #[serde(default)]
        output_index: Option<usize>,
        text: String,
    },
    #[serde(rename = "response.refusal.done")]
    RefusalDone {
        #[serde(default)]
        output_index: Option<usize>,
        refusal: String,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    ArgumentsDelta {
        #[serde(default)]
        output_index: Option<usize>,
        #[serde(default)]
        item_id: Option<String>,
        delta: String,
    },
    #[serde(rename = "response.function_call_arguments.done")]
    ArgumentsDone {
        #[serde(default)]
        output_index: Option<usize>,
        #[serde(default)]
        item_id: Option<String>,
        arguments: String,
    },
    #[serde(rename = "response.completed")]
    Completed { response: ResponseObject },
    #[serde(rename = "response.incomplete")]
    Incomplete { response: ResponseObject },
    #[serde(rename = "response.failed")]
    Failed { response: ResponseObject },
    /// OpenAI sends `code` and `message` at the top; some compatible servers nest an `error`.
    #[serde(rename = "error")]
    Error {
        #[serde(default)]
        code: Option<String>,
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        error: Option<ErrorBody>,
    },
    /// `response.created`, `response.in_progress`, content part and reasoning events…
    #[serde(other)]
    Other,
}

/// An item of `response.output`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum OutputItem {
    Message {
        #[serde(default)]
        content: Vec<OutputContent>,
    },
    FunctionCall {
        /// The item id (`fc_…`), which argument events name as `item_id`.
        #[serde(default)]
        id: Option<String>,
        /// The correlation key (`call_…`) the result must carry.
        call_id: String,
        name: String,
        #[serde(default)]
        arguments: String,
    },
    Reasoning {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        summary: Vec<ReasoningPart>,
        /// Open-weight models served over this API show their reasoning text here.
        #[serde(default)]
        content: Option<Vec<ReasoningPart>>,
        #[serde(default)]
        encrypted_content: Option<String>,
    },
    /// Hosted tool calls…
    #[serde(other)]
    Other,
}

/// `{"type": "summary_text" | "reasoning_text", "text": …}`.
#[derive(Debug, Deserialize)]
pub(crate) struct ReasoningPart {
    #[serde(default)]
    pub(crate) text: String,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum OutputContent {
    OutputText {
        text: String,
    },
    Refusal {
        refusal: String,
    },
    #[serde(other)]
    Other,
}

/// The response object of the terminal events (and of a non-streamed answer).
#[derive(Debug, Deserialize)]
pub(crate) struct ResponseObject {
    #[serde(default)]
    pub(crate) status: Option<String>,
    #[serde(default)]
    pub(crate) output: Vec<OutputItem>,
    #[serde(default)]
    pub(crate) usage: Option<Usage>,
    #[serde(default)]
    pub(crate) incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    pub(crate) error: Option<ErrorBody>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct IncompleteDetails {
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ErrorBody {
    #[serde(default)]
    pub(crate) code: Option<String>,
    #[serde(default)]
    pub(crate) message: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Usage {
    #[serde(default)]
    pub(crate) input_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) output_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) input_tokens_details: Option<InputTokensDetails>,
    #[serde(default)]
    pub(crate) output_tokens_details: Option<OutputTokensDetails>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct InputTokensDetails {
    #[serde(default)]
    pub(crate) cached_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct OutputTokensDetails {
    #[serde(default)]
    pub(crate) reasoning_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use engine::model::{ModelRequest, ToolCall};
    use serde_json::json;

    use super::*;
    use engine::model::JsonSchemaFormat;

    /// The body as the client sends it (`to_json`), checked to be serde's bytes.
    fn body(request: &ModelRequest) -> serde_json::Value {
        let responses = ResponsesRequest::from(request);
        crate::wire_texts::checked(&responses, responses.to_json())
    }

    /// A run's steps and turns written with one memo: instructions before them, messages of
    /// no item (an assistant turn with neither text nor calls, a reasoning block of another
    /// upstream) and of several (text and two calls), replayable reasoning, every text form,
    /// another conversation between them and an edited history: every body is serde's.
    #[test]
    fn bodies_written_with_the_memo_are_serde_bodies() {
        let memo = MessageMemo::default();
        let checked = |messages: &[ModelMessage]| {
            let request = ModelRequest {
                model: "gpt-5.4".into(),
                messages: messages.to_vec(),
                ..ModelRequest::default()
            };
            let responses = ResponsesRequest::from(&request);
            crate::wire_texts::checked(&responses, responses.to_json_with(&memo));
        };
        let mut other = vec![ModelMessage::User {
            content: vec![ContentPart::Text {
                text: "another conversation ".repeat(200),
            }],
        }];
        let mut messages = vec![ModelMessage::System {
            content: "Answer \"briefly\".\n".repeat(100),
        }];
        for (turn, text) in crate::wire_texts::TEXTS.iter().enumerate() {
            let long = text.repeat(40);
            let call = |n: usize| ToolCall {
                id: format!("call_{turn}_{n}"),
                name: "lookup".into(),
                arguments: format!("{{\"q\":{}}}", serde_json::json!(text)),
                thought_signature: None,
            };
            messages.extend([
                ModelMessage::User {
                    content: vec![ContentPart::Text { text: long.clone() }],
                },
                ModelMessage::Reasoning(ReasoningBlock {
                    id: Some(format!("rs_{turn}")),
                    summary: vec![long.clone()],
                    text: None,
                    encrypted: Some("opaque".into()),
                }),
                ModelMessage::Reasoning(ReasoningBlock {
                    id: Some(format!("anthropic_{turn}")),
                    text: Some(long.clone()),
                    ..ReasoningBlock::default()
                }),
                ModelMessage::Assistant {
                    content: None,
                    tool_calls: vec![],
                },
                ModelMessage::Assistant {
                    content: Some(long.clone()),
                    tool_calls: vec![call(0), call(1)],
                },
            ]);
            checked(&messages);
            messages.extend([0, 1].map(|n| ModelMessage::Tool {
                call_id: call(n).id,
                name: None,
                content: long.clone(),
            }));
            checked(&messages);
            checked(&other);
            other.push(ModelMessage::Assistant {
                content: Some(text.to_string()),
                tool_calls: vec![],
            });
        }
        messages[4] = ModelMessage::Assistant {
            content: Some("edited".into()),
            tool_calls: vec![],
        };
        for count in [messages.len(), 6, 2, 1] {
            checked(&messages[..count]);
        }
    }

    /// Every item form the writer takes apart, each text in every form (escapes, control
    /// characters, non-ASCII, empty, long), with and without the options: the body written
    /// by hand is serde's, byte for byte.
    #[test]
    fn the_body_is_written_as_serde_writes_it() {
        for text in crate::wire_texts::TEXTS {
            let long = text.repeat(40);
            let messages = vec![
                ModelMessage::System {
                    content: text.into(),
                },
                ModelMessage::User {
                    content: vec![ContentPart::Text { text: long.clone() }],
                },
                ModelMessage::User {
                    content: vec![
                        ContentPart::Text { text: text.into() },
                        ContentPart::ImageUrl {
                            url: "https://example.com/a.png".into(),
                            detail: None,
                        },
                    ],
                },
                ModelMessage::Assistant {
                    content: Some(long.clone()),
                    tool_calls: vec![ToolCall {
                        id: format!("call_{text}"),
                        name: "lookup".into(),
                        arguments: format!("{{\"q\":{}}}", serde_json::json!(text)),
                        thought_signature: None,
                    }],
                },
                ModelMessage::Tool {
                    call_id: format!("call_{text}"),
                    name: Some("lookup".into()),
                    content: long.clone(),
                },
                ModelMessage::System {
                    content: format!("later: {text}"),
                },
            ];
            body(&ModelRequest {
                model: format!("gpt {text}"),
                messages: messages.clone(),
                ..ModelRequest::default()
            });
            body(&ModelRequest {
                model: "gpt-5.4".into(),
                messages,
                temperature: Some(0.5),
                reasoning_effort: Some("high".into()),
                logprobs: Some(1),
                user: Some(text.into()),
                ..ModelRequest::default()
            });
        }
        body(&ModelRequest::default());
    }

    fn user(text: &str) -> ModelMessage {
        ModelMessage::User {
            content: vec![ContentPart::Text { text: text.into() }],
        }
    }

    #[test]
    fn minimal_request_streams_unstored_and_omits_the_rest() {
        let request = ModelRequest {
            model: "gpt-5.4".into(),
            messages: vec![user("Hi")],
            tool_choice: ModelToolChoice::Required,
            parallel_tool_calls: Some(false),
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&request),
            json!({
                "include": ["reasoning.encrypted_content"],
                "model": "gpt-5.4",
                "input": [{"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "Hi"}
                ]}],
                "store": false,
                "stream": true
            })
        );
    }

    #[test]
    fn leading_system_messages_become_instructions_later_ones_stay_in_place() {
        let request = ModelRequest {
            messages: vec![
                ModelMessage::System {
                    content: "Be brief.".into(),
                },
                ModelMessage::System {
                    content: String::new(),
                },
                ModelMessage::System {
                    content: "Answer in French.".into(),
                },
                user("Hi"),
                ModelMessage::System {
                    content: "Now in German.".into(),
                },
            ],
            ..ModelRequest::default()
        };
        let body = body(&request);
        assert_eq!(
            body["instructions"],
            json!("Be brief.\n\nAnswer in French.")
        );
        assert_eq!(
            body["input"][1],
            json!({"type": "message", "role": "system", "content": "Now in German."})
        );
        assert_eq!(body["input"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn messages_map_to_input_items() {
        let request = ModelRequest {
            messages: vec![
                ModelMessage::User {
                    content: vec![
                        ContentPart::Text {
                            text: "What is this?".into(),
                        },
                        ContentPart::ImageUrl {
                            url: "https://example.com/a.png".into(),
                            detail: Some("low".into()),
                        },
                        ContentPart::ImageUrl {
                            url: "data:image/png;base64,AAAA".into(),
                            detail: None,
                        },
                        ContentPart::File {
                            filename: Some("a.pdf".into()),
                            file_data: Some("data:application/pdf;base64,JVBE".into()),
                            file_url: None,
                        },
                        ContentPart::File {
                            filename: None,
                            file_data: None,
                            file_url: Some("https://example.com/b.pdf".into()),
                        },
                    ],
                },
                ModelMessage::Assistant {
                    content: Some("Let me look.".into()),
                    tool_calls: vec![
                        ToolCall {
                            id: "call_1".into(),
                            name: "get_weather".into(),
                            arguments: r#"{"city":"Paris"}"#.into(),
                            thought_signature: Some("ignored".into()),
                        },
                        ToolCall {
                            id: "call_2".into(),
                            name: "get_time".into(),
                            arguments: "{}".into(),
                            thought_signature: None,
                        },
                    ],
                },
                ModelMessage::Tool {
                    call_id: "call_1".into(),
                    name: Some("get_weather".into()),
                    content: "18C".into(),
                },
                ModelMessage::Tool {
                    call_id: "call_2".into(),
                    name: None,
                    content: "noon".into(),
                },
                ModelMessage::Assistant {
                    content: Some("It is 18C at noon.".into()),
                    tool_calls: vec![],
                },
                ModelMessage::Assistant {
                    content: None,
                    tool_calls: vec![],
                },
                ModelMessage::User { content: vec![] },
            ],
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&request)["input"],
            json!([
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "What is this?"},
                    {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "low"},
                    {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
                    {"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBE"},
                    {"type": "input_file", "file_url": "https://example.com/b.pdf"}
                ]},
                {"type": "message", "role": "assistant", "content": "Let me look."},
                {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
                {"type": "function_call", "call_id": "call_2", "name": "get_time", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "18C"},
                {"type": "function_call_output", "call_id": "call_2", "output": "noon"},
                {"type": "message", "role": "assistant", "content": "It is 18C at noon."},
                {"type": "message", "role": "user", "content": ""}
            ])
        );
    }

    #[test]
    fn tools_options_and_formats() {
        let request = ModelRequest {
            model: "m".into(),
            messages: vec![user("x")],
            tools: vec![
                ToolSpec {
                    name: "get_weather".into(),
                    description: Some("Weather now".into()),
                    parameters: json!({"type": "object"}).into(),
                    strict: true,
                },
                ToolSpec {
                    name: "noop".into(),
                    description: None,
                    parameters: json!({}).into(),
                    strict: false,
                },
            ],
            tool_choice: ModelToolChoice::Function("get_weather".into()),
            parallel_tool_calls: Some(false),
            temperature: Some(0.5),
            top_p: Some(0.9),
            max_output_tokens: Some(100),
            output_format: Some(OutputFormat::JsonSchema(JsonSchemaFormat {
                name: "answer".into(),
                schema: json!({"type": "object"}),
                description: Some("The answer".into()),
                strict: Some(true),
            })),
            reasoning_effort: Some("low".into()),
            reasoning_summary: Some("auto".into()),
            verbosity: Some("high".into()),
            prompt_cache_key: Some("conv-1".into()),
            prompt_cache_retention: Some("24h".into()),
            service_tier: Some("priority".into()),
            user: Some("u-1".into()),
            safety_identifier: Some("s-1".into()),
            logprobs: Some(2),
        };
        let body = body(&request);
        assert_eq!(
            body["tools"],
            json!([
                {"type": "function", "name": "get_weather", "description": "Weather now", "parameters": {"type": "object"}, "strict": true},
                {"type": "function", "name": "noop", "parameters": {}, "strict": false}
            ])
        );
        assert_eq!(
            body["tool_choice"],
            json!({"type": "function", "name": "get_weather"})
        );
        assert_eq!(body["parallel_tool_calls"], json!(false));
        assert_eq!(body["temperature"], json!(0.5));
        assert_eq!(body["top_p"], json!(0.9));
        assert_eq!(body["max_output_tokens"], json!(100));
        assert_eq!(
            body["text"],
            json!({"format": {"type": "json_schema", "name": "answer", "schema": {"type": "object"}, "description": "The answer", "strict": true}, "verbosity": "high"})
        );
        assert_eq!(
            body["reasoning"],
            json!({"effort": "low", "summary": "auto"})
        );
        assert_eq!(body["prompt_cache_key"], json!("conv-1"));
        assert_eq!(body["prompt_cache_retention"], json!("24h"));
        assert_eq!(body["store"], json!(false));
        assert_eq!(body["service_tier"], json!("priority"));
        assert_eq!(body["user"], json!("u-1"));
        assert_eq!(body["safety_identifier"], json!("s-1"));
        assert_eq!(body["top_logprobs"], json!(2));
        assert_eq!(
            body["include"],
            json!([
                "reasoning.encrypted_content",
                "message.output_text.logprobs"
            ])
        );
        let plain = super::tests::body(&ModelRequest {
            model: "m".into(),
            output_format: Some(OutputFormat::JsonObject),
            ..ModelRequest::default()
        });
        assert_eq!(plain["text"], json!({"format": {"type": "json_object"}}));
        assert!(plain.get("include").is_none() && plain.get("top_logprobs").is_none());
    }

    #[test]
    fn tool_choice_modes() {
        let tool = ToolSpec {
            name: "t".into(),
            description: None,
            parameters: json!({}).into(),
            strict: false,
        };
        for (choice, want) in [
            (ModelToolChoice::Auto, json!("auto")),
            (ModelToolChoice::None, json!("none")),
            (ModelToolChoice::Required, json!("required")),
        ] {
            let request = ModelRequest {
                tools: vec![tool.clone()],
                tool_choice: choice,
                ..ModelRequest::default()
            };
            assert_eq!(body(&request)["tool_choice"], want);
        }
    }

    #[test]
    fn unknown_events_and_items_parse_as_other() {
        let event: Result<StreamEvent, _> =
            serde_json::from_str(r#"{"type":"response.reasoning_summary_text.delta","delta":"x"}"#);
        assert!(matches!(event, Ok(StreamEvent::Other)), "{event:?}");
        let item: Result<OutputItem, _> =
            serde_json::from_str(r#"{"type":"web_search_call","id":"ws_1","status":"completed"}"#);
        assert!(matches!(item, Ok(OutputItem::Other)), "{item:?}");
    }

    #[test]
    fn reasoning_is_asked_for_and_sent_back_before_its_turn() {
        let block = |id: &str, encrypted: Option<&str>| {
            ModelMessage::Reasoning(ReasoningBlock {
                id: Some(id.into()),
                summary: vec!["Looked up the order.".into()],
                text: None,
                encrypted: encrypted.map(str::to_owned),
            })
        };
        let request = ModelRequest {
            model: "gpt-4.1".into(),
            messages: vec![
                user("Where is my order?"),
                block("rs_abc", Some("gAAAAB")),
                block("rs_lost", None),
                block("thinking_1", Some("anthropic-signature")),
                ModelMessage::Assistant {
                    content: None,
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "order_status".into(),
                        arguments: "{}".into(),
                        thought_signature: None,
                    }],
                },
                ModelMessage::Tool {
                    call_id: "call_1".into(),
                    name: None,
                    content: "shipped".into(),
                },
            ],
            ..ModelRequest::default()
        };
        let body = body(&request);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(
            body["input"][1],
            json!({"type": "reasoning", "id": "rs_abc", "encrypted_content": "gAAAAB",
                   "summary": [{"type": "summary_text", "text": "Looked up the order."}]})
        );
        assert_eq!(body["input"][2]["type"], "function_call");
        assert_eq!(body["input"].as_array().map(Vec::len), Some(4));

        // `include` only for reasoning models (others refuse it).
        let include = |model: &str, effort: Option<&str>| {
            let request = ModelRequest {
                model: model.into(),
                messages: vec![user("Hi")],
                reasoning_effort: effort.map(str::to_owned),
                ..ModelRequest::default()
            };
            body_of(&request)["include"].clone()
        };
        fn body_of(request: &ModelRequest) -> serde_json::Value {
            serde_json::to_value(ResponsesRequest::from(request)).unwrap_or_default()
        }
        let asked = json!(["reasoning.encrypted_content"]);
        assert_eq!(include("gpt-5.4", None), asked);
        assert_eq!(include("o4-mini", None), asked);
        assert_eq!(include("gpt-4.1", Some("low")), asked);
        assert_eq!(include("gpt-4.1", None), json!(null));
        assert_eq!(include("gpt-4.1", Some("none")), json!(null));
        assert_eq!(include("omni-moderation", None), json!(null));
    }
}
