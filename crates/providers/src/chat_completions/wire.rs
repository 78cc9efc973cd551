//! The Chat Completions wire format: the request body we send and the chunks we read back.
//!
//! Only the fields this adapter uses are modelled; unknown response fields are ignored so that
//! OpenAI-compatible servers with extras (reasoning text, citations…) parse too.

use engine::model::{
    ContentPart, ModelMessage, ModelRequest, ModelToolChoice, OutputFormat, ToolCall, ToolSpec,
};
use protocol::written::Parameters;
use serde::{Deserialize, Serialize};

use crate::message_memo::MessageMemo;

// ---------------------------------------------------------------------------------------------
// Request

/// `POST /chat/completions` body, borrowing from the engine's request. Written by
/// [`ChatRequest::to_json`]; its `Serialize` is that writer's oracle in the tests.
#[derive(Debug, Serialize)]
pub(crate) struct ChatRequest<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    /// The engine's message each of `messages` is written from (what the memo compares).
    #[serde(skip)]
    sources: Vec<&'a ModelMessage>,
    #[serde(flatten)]
    options: ChatOptions<'a>,
}

/// The body's fields after `messages`.
#[derive(Debug, Serialize)]
struct ChatOptions<'a> {
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
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verbosity: Option<&'a str>,
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
    logprobs: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_logprobs: Option<u32>,
    stream: bool,
    stream_options: StreamOptions,
}

impl<'a> From<&'a ModelRequest> for ChatRequest<'a> {
    fn from(request: &'a ModelRequest) -> Self {
        // Chat Completions takes no reasoning back (the servers that show reasoning text do not
        // want it again).
        let sources: Vec<&ModelMessage> = request
            .messages
            .iter()
            .filter(|message| !matches!(message, ModelMessage::Reasoning(_)))
            .collect();
        ChatRequest {
            model: &request.model,
            messages: sources
                .iter()
                .map(|message| Message::from(*message))
                .collect(),
            sources,
            options: ChatOptions::from(request),
        }
    }
}

impl ChatRequest<'_> {
    /// The body as compact JSON, byte for byte as `serde_json::to_string(self)` writes it:
    /// the messages field by field, their text through the protocol's string writer (eight
    /// bytes at a time, where serde_json escapes a byte at a time: a long history's text was
    /// most of the body's cost), the rest by serde.
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> Result<String, serde_json::Error> {
        self.to_json_with(&MessageMemo::default())
    }

    /// [`Self::to_json`], the JSON of the first messages taken from `memo` where they are those
    /// of a request written before (`message_memo.rs`): the same bytes.
    pub(crate) fn to_json_with(&self, memo: &MessageMemo) -> Result<String, serde_json::Error> {
        let text: usize = self.messages.iter().map(Message::json_size).sum();
        let mut out = String::with_capacity(512 + self.model.len() + text);
        out.push_str("{\"model\":");
        protocol::push_json_string(&mut out, self.model)?;
        out.push_str(",\"messages\":");
        memo.write_list(&mut out, &self.sources, text, |out, i| {
            match self.messages.get(i) {
                Some(message) => message.write_json(out),
                None => Ok(()),
            }
        })?;
        protocol::push_json_members(&mut out, &self.options)?;
        Ok(out)
    }
}

impl<'a> From<&'a ModelRequest> for ChatOptions<'a> {
    fn from(request: &'a ModelRequest) -> Self {
        let has_tools = !request.tools.is_empty();
        ChatOptions {
            tools: request.tools.iter().map(Tool::from).collect(),
            // Without tools, tool_choice and parallel_tool_calls are rejected by OpenAI.
            tool_choice: has_tools.then(|| ToolChoice::from(&request.tool_choice)),
            parallel_tool_calls: request.parallel_tool_calls.filter(|_| has_tools),
            temperature: request.temperature,
            top_p: request.top_p,
            max_completion_tokens: request.max_output_tokens,
            response_format: request.output_format.as_ref().map(ResponseFormat::from),
            reasoning_effort: request.reasoning_effort.as_deref(),
            verbosity: request.verbosity.as_deref(),
            prompt_cache_key: request.prompt_cache_key.as_deref(),
            prompt_cache_retention: request.prompt_cache_retention.as_deref(),
            service_tier: request.service_tier.as_deref(),
            user: request.user.as_deref(),
            safety_identifier: request.safety_identifier.as_deref(),
            logprobs: request.logprobs.map(|_| true),
            top_logprobs: request.logprobs.filter(|n| *n > 0),
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
        }
    }
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum Message<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        /// `null` when the turn is only tool calls (serialized, not omitted: some compatible
        /// servers require the field).
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<OutgoingToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

impl Message<'_> {
    /// About the message's JSON length.
    fn json_size(&self) -> usize {
        64 + match self {
            Message::System { content } | Message::Tool { content, .. } => content.len(),
            Message::User {
                content: UserContent::Text(text),
            } => text.len(),
            Message::User { .. } => 256,
            Message::Assistant {
                content,
                tool_calls,
            } => content.map_or(0, str::len) + 256 * tool_calls.len(),
        }
    }

    /// The message as serde writes it (the tag first, then the fields in their order), its
    /// text through the protocol's string writer; parts and tool calls by serde.
    fn write_json(&self, out: &mut String) -> Result<(), serde_json::Error> {
        match self {
            Message::System { content } => {
                out.push_str("{\"role\":\"system\",\"content\":");
                protocol::push_json_string(out, content)?;
            }
            Message::User { content } => {
                out.push_str("{\"role\":\"user\",\"content\":");
                match content {
                    UserContent::Text(text) => protocol::push_json_string(out, text)?,
                    UserContent::Parts(parts) => protocol::push_json(out, parts)?,
                }
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                out.push_str("{\"role\":\"assistant\",\"content\":");
                match content {
                    Some(text) => protocol::push_json_string(out, text)?,
                    None => out.push_str("null"),
                }
                if !tool_calls.is_empty() {
                    out.push_str(",\"tool_calls\":");
                    protocol::push_json(out, tool_calls)?;
                }
            }
            Message::Tool {
                tool_call_id,
                content,
            } => {
                out.push_str("{\"role\":\"tool\",\"tool_call_id\":");
                protocol::push_json_string(out, tool_call_id)?;
                out.push_str(",\"content\":");
                protocol::push_json_string(out, content)?;
            }
        }
        out.push('}');
        Ok(())
    }
}

impl<'a> From<&'a ModelMessage> for Message<'a> {
    fn from(message: &'a ModelMessage) -> Self {
        match message {
            ModelMessage::System { content } => Message::System { content },
            ModelMessage::User { content } => Message::User {
                content: UserContent::from(content.as_slice()),
            },
            ModelMessage::Assistant {
                content,
                tool_calls,
            } => Message::Assistant {
                // An assistant turn with neither text nor calls still needs a content.
                content: match (content.as_deref(), tool_calls.is_empty()) {
                    (None, true) => Some(""),
                    (content, _) => content,
                },
                tool_calls: tool_calls.iter().map(OutgoingToolCall::from).collect(),
            },
            // Filtered out by the caller; were one to come, it would say nothing.
            ModelMessage::Reasoning(_) => Message::System { content: "" },
            // The tool's name has no place in a Chat Completions tool message.
            ModelMessage::Tool {
                call_id, content, ..
            } => Message::Tool {
                tool_call_id: call_id,
                content,
            },
        }
    }
}

/// A user message whose only part is text goes as a plain string (every compatible server
/// understands that form); anything else as an array of parts.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(&'a str),
    Parts(Vec<Part<'a>>),
}

impl<'a> From<&'a [ContentPart]> for UserContent<'a> {
    fn from(parts: &'a [ContentPart]) -> Self {
        match parts {
            [] => UserContent::Text(""),
            [ContentPart::Text { text }] => UserContent::Text(text),
            parts => UserContent::Parts(parts.iter().map(Part::from).collect()),
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
    File { file: FilePart<'a> },
}

#[derive(Debug, Serialize)]
struct ImageUrl<'a> {
    url: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
}

#[derive(Debug, Serialize)]
struct FilePart<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    filename: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    file_data: Option<&'a str>,
}

impl<'a> From<&'a ContentPart> for Part<'a> {
    fn from(part: &'a ContentPart) -> Self {
        match part {
            ContentPart::Text { text } => Part::Text { text },
            ContentPart::ImageUrl { url, detail } => Part::ImageUrl {
                image_url: ImageUrl {
                    url,
                    detail: detail.as_deref(),
                },
            },
            // Chat Completions has no file-by-URL form. A URL goes in `file_data`: a `data:` URL
            // is exactly what OpenAI wants there, and compatible routers accept https URLs;
            // OpenAI itself rejects those with a 400 the caller then sees.
            ContentPart::File {
                filename,
                file_data,
                file_url,
            } => Part::File {
                file: FilePart {
                    filename: filename.as_deref(),
                    file_data: file_data.as_deref().or(file_url.as_deref()),
                },
            },
        }
    }
}

#[derive(Debug, Serialize)]
struct OutgoingToolCall<'a> {
    id: &'a str,
    r#type: &'static str,
    function: OutgoingFunction<'a>,
    /// Gemini's OpenAI-compatible endpoint wants a call's thought signature echoed here.
    #[serde(skip_serializing_if = "Option::is_none")]
    extra_content: Option<ExtraContent<&'a str>>,
}

#[derive(Debug, Serialize)]
struct OutgoingFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

impl<'a> From<&'a ToolCall> for OutgoingToolCall<'a> {
    fn from(call: &'a ToolCall) -> Self {
        OutgoingToolCall {
            id: &call.id,
            r#type: "function",
            function: OutgoingFunction {
                name: &call.name,
                arguments: &call.arguments,
            },
            extra_content: call
                .thought_signature
                .as_deref()
                .map(|signature| ExtraContent {
                    google: Some(GoogleExtra {
                        thought_signature: Some(signature),
                    }),
                }),
        }
    }
}

#[derive(Debug, Serialize)]
struct Tool<'a> {
    r#type: &'static str,
    function: FunctionDefinition<'a>,
}

#[derive(Debug, Serialize)]
struct FunctionDefinition<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    parameters: &'a Parameters,
    /// Only sent when set: several compatible servers reject the field.
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}

impl<'a> From<&'a ToolSpec> for Tool<'a> {
    fn from(tool: &'a ToolSpec) -> Self {
        Tool {
            r#type: "function",
            function: FunctionDefinition {
                name: &tool.name,
                description: tool.description.as_deref(),
                parameters: &tool.parameters,
                strict: tool.strict.then_some(true),
            },
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ToolChoice<'a> {
    Mode(&'static str),
    Function {
        r#type: &'static str,
        function: NamedFunction<'a>,
    },
}

#[derive(Debug, Serialize)]
struct NamedFunction<'a> {
    name: &'a str,
}

impl<'a> From<&'a ModelToolChoice> for ToolChoice<'a> {
    fn from(choice: &'a ModelToolChoice) -> Self {
        match choice {
            ModelToolChoice::Auto => ToolChoice::Mode("auto"),
            ModelToolChoice::None => ToolChoice::Mode("none"),
            ModelToolChoice::Required => ToolChoice::Mode("required"),
            ModelToolChoice::Function(name) => ToolChoice::Function {
                r#type: "function",
                function: NamedFunction { name },
            },
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResponseFormat<'a> {
    JsonSchema { json_schema: JsonSchema<'a> },
    JsonObject,
}

#[derive(Debug, Serialize)]
struct JsonSchema<'a> {
    name: &'a str,
    schema: &'a serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}

impl<'a> From<&'a OutputFormat> for ResponseFormat<'a> {
    fn from(format: &'a OutputFormat) -> Self {
        match format {
            OutputFormat::JsonObject => ResponseFormat::JsonObject,
            OutputFormat::JsonSchema(format) => ResponseFormat::JsonSchema {
                json_schema: JsonSchema {
                    name: &format.name,
                    schema: &format.schema,
                    description: format.description.as_deref(),
                    strict: format.strict,
                },
            },
        }
    }
}

/// `extra_content.google.thought_signature`, both ways.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ExtraContent<S> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) google: Option<GoogleExtra<S>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct GoogleExtra<S> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) thought_signature: Option<S>,
}

// ---------------------------------------------------------------------------------------------
// Response

/// One `chat.completion.chunk` of the stream.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Chunk {
    #[serde(default)]
    pub(crate) choices: Vec<ChunkChoice>,
    #[serde(default)]
    pub(crate) usage: Option<Usage>,
    /// Some servers report a failure inside a 200 stream.
    #[serde(default)]
    pub(crate) error: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ChunkChoice {
    #[serde(default)]
    pub(crate) index: u32,
    #[serde(default)]
    pub(crate) delta: Option<Delta>,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
    #[serde(default)]
    pub(crate) logprobs: Option<crate::logprobs::Logprobs>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Delta {
    #[serde(default)]
    pub(crate) content: Option<String>,
    #[serde(default)]
    pub(crate) tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ToolCallDelta {
    /// Missing on a few compatible servers that only ever send one call per chunk.
    #[serde(default)]
    pub(crate) index: Option<usize>,
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) function: Option<FunctionDelta>,
    #[serde(default)]
    pub(crate) extra_content: Option<ExtraContent<String>>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct FunctionDelta {
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) arguments: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Usage {
    #[serde(default)]
    pub(crate) prompt_tokens: u64,
    #[serde(default)]
    pub(crate) completion_tokens: u64,
    #[serde(default)]
    pub(crate) prompt_tokens_details: Option<PromptTokensDetails>,
    #[serde(default)]
    pub(crate) completion_tokens_details: Option<CompletionTokensDetails>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct PromptTokensDetails {
    #[serde(default)]
    pub(crate) cached_tokens: Option<u64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct CompletionTokensDetails {
    #[serde(default)]
    pub(crate) reasoning_tokens: Option<u64>,
}

/// A whole `chat.completion`, for servers that answer a streaming request without streaming.
#[derive(Debug, Deserialize)]
pub(crate) struct Completion {
    #[serde(default)]
    pub(crate) choices: Vec<CompletionChoice>,
    #[serde(default)]
    pub(crate) usage: Option<Usage>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CompletionChoice {
    #[serde(default)]
    pub(crate) index: u32,
    pub(crate) message: CompletionMessage,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
    #[serde(default)]
    pub(crate) logprobs: Option<crate::logprobs::Logprobs>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CompletionMessage {
    #[serde(default)]
    pub(crate) content: Option<String>,
    #[serde(default)]
    pub(crate) tool_calls: Vec<CompletionToolCall>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CompletionToolCall {
    #[serde(default)]
    pub(crate) id: Option<String>,
    pub(crate) function: FunctionDelta,
    #[serde(default)]
    pub(crate) extra_content: Option<ExtraContent<String>>,
}

#[cfg(test)]
mod tests {
    use engine::model::ModelRequest;
    use serde_json::json;

    use super::*;
    use engine::model::JsonSchemaFormat;

    /// The body as the client sends it (`to_json`), checked to be serde's bytes.
    fn body(request: &ModelRequest) -> serde_json::Value {
        let chat = ChatRequest::from(request);
        crate::wire_texts::checked(&chat, chat.to_json())
    }

    /// Every message kind and field form, each text in every form, with and without the
    /// options: the body written by hand is serde's, byte for byte.
    #[test]
    fn the_body_is_written_as_serde_writes_it() {
        for text in crate::wire_texts::TEXTS {
            let long = text.repeat(40);
            let call = |signature: Option<&str>| ToolCall {
                id: format!("call_{text}"),
                name: "get_weather".into(),
                arguments: format!("{{\"q\":{}}}", serde_json::json!(text)),
                thought_signature: signature.map(str::to_owned),
            };
            let messages = vec![
                ModelMessage::System {
                    content: text.into(),
                },
                ModelMessage::User {
                    content: vec![ContentPart::Text { text: long.clone() }],
                },
                ModelMessage::User { content: vec![] },
                ModelMessage::User {
                    content: vec![
                        ContentPart::Text { text: text.into() },
                        ContentPart::ImageUrl {
                            url: format!("https://example.com/{text}"),
                            detail: Some(text.into()),
                        },
                        ContentPart::File {
                            filename: Some(text.into()),
                            file_data: None,
                            file_url: Some("https://example.com/a.pdf".into()),
                        },
                    ],
                },
                ModelMessage::Assistant {
                    content: None,
                    tool_calls: vec![call(None), call(Some(text))],
                },
                ModelMessage::Assistant {
                    content: Some(long.clone()),
                    tool_calls: vec![],
                },
                ModelMessage::Assistant {
                    content: None,
                    tool_calls: vec![],
                },
                ModelMessage::Tool {
                    call_id: format!("call_{text}"),
                    name: Some("get_weather".into()),
                    content: long.clone(),
                },
            ];
            let bare = ModelRequest {
                model: format!("model {text}"),
                messages: messages.clone(),
                ..ModelRequest::default()
            };
            body(&bare);
            let full = ModelRequest {
                model: "m".into(),
                messages,
                tools: vec![ToolSpec {
                    name: "get_weather".into(),
                    description: Some(text.into()),
                    parameters: serde_json::json!({"type": "object"}).into(),
                    strict: true,
                }],
                temperature: Some(0.5),
                top_p: Some(1.0),
                max_output_tokens: Some(100),
                reasoning_effort: Some(text.into()),
                user: Some(text.into()),
                logprobs: Some(2),
                ..ModelRequest::default()
            };
            body(&full);
            body(&ModelRequest::default());
        }
    }

    /// A run's steps and a conversation's turns written with one memo, each message kind in
    /// every text form, reasoning between them, another conversation and an edited history
    /// in between: every body is serde's, byte for byte.
    #[test]
    fn bodies_written_with_the_memo_are_serde_bodies() {
        let memo = MessageMemo::default();
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
            let call_id = format!("call_{turn}_{text}");
            messages.extend([
                ModelMessage::User {
                    content: vec![
                        ContentPart::Text { text: long.clone() },
                        ContentPart::ImageUrl {
                            url: format!("https://example.com/{text}"),
                            detail: None,
                        },
                    ],
                },
                ModelMessage::Reasoning(engine::model::Reasoning {
                    text: Some(long.clone()),
                    ..Default::default()
                }),
                ModelMessage::Assistant {
                    content: None,
                    tool_calls: vec![ToolCall {
                        id: call_id.clone(),
                        name: "lookup".into(),
                        arguments: format!("{{\"q\":{}}}", serde_json::json!(text)),
                        thought_signature: Some(text.to_string()),
                    }],
                },
            ]);
            let step = ModelRequest {
                model: "m".into(),
                messages: messages.clone(),
                ..ModelRequest::default()
            };
            let chat = ChatRequest::from(&step);
            crate::wire_texts::checked(&chat, chat.to_json_with(&memo));
            messages.extend([
                ModelMessage::Tool {
                    call_id,
                    name: None,
                    content: long.clone(),
                },
                ModelMessage::Assistant {
                    content: Some(long),
                    tool_calls: vec![],
                },
            ]);
            for request in [&messages, &other] {
                let next = ModelRequest {
                    model: "m".into(),
                    messages: request.clone(),
                    ..ModelRequest::default()
                };
                let chat = ChatRequest::from(&next);
                crate::wire_texts::checked(&chat, chat.to_json_with(&memo));
            }
            other.push(ModelMessage::User {
                content: vec![ContentPart::Text {
                    text: text.to_string(),
                }],
            });
        }
        // The history edited in its middle, then cut short.
        messages[3] = ModelMessage::Assistant {
            content: Some("edited".into()),
            tool_calls: vec![],
        };
        for count in [messages.len(), 5, 2] {
            let edited = ModelRequest {
                model: "m".into(),
                messages: messages[..count].to_vec(),
                ..ModelRequest::default()
            };
            let chat = ChatRequest::from(&edited);
            crate::wire_texts::checked(&chat, chat.to_json_with(&memo));
        }
    }

    #[test]
    fn minimal_request_streams_with_usage_and_omits_the_rest() {
        let request = ModelRequest {
            model: "gpt-5.4".into(),
            messages: vec![ModelMessage::User {
                content: vec![ContentPart::Text { text: "Hi".into() }],
            }],
            tool_choice: ModelToolChoice::Required,
            parallel_tool_calls: Some(false),
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&request),
            json!({
                "model": "gpt-5.4",
                "messages": [{"role": "user", "content": "Hi"}],
                "stream": true,
                "stream_options": {"include_usage": true}
            })
        );
    }

    #[test]
    fn messages_map_to_chat_roles() {
        let request = ModelRequest {
            model: "m".into(),
            messages: vec![
                ModelMessage::System {
                    content: "Be brief.".into(),
                },
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
                    ],
                },
                ModelMessage::Assistant {
                    content: None,
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "get_weather".into(),
                        arguments: r#"{"city":"Paris"}"#.into(),
                        thought_signature: None,
                    }],
                },
                ModelMessage::Tool {
                    call_id: "call_1".into(),
                    name: Some("get_weather".into()),
                    content: "18C".into(),
                },
                ModelMessage::Assistant {
                    content: Some("It is 18C.".into()),
                    tool_calls: vec![],
                },
                ModelMessage::User { content: vec![] },
            ],
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&request)["messages"],
            json!([
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                    {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBE"}}
                ]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
                {"role": "assistant", "content": "It is 18C."},
                {"role": "user", "content": ""}
            ])
        );
    }

    #[test]
    fn thought_signature_is_echoed_in_extra_content() {
        let request = ModelRequest {
            messages: vec![ModelMessage::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: "c".into(),
                    name: "f".into(),
                    arguments: "{}".into(),
                    thought_signature: Some("sig==".into()),
                }],
            }],
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&request)["messages"][0]["tool_calls"][0]["extra_content"],
            json!({"google": {"thought_signature": "sig=="}})
        );
    }

    #[test]
    fn tools_options_and_formats() {
        let request = ModelRequest {
            model: "m".into(),
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
                description: None,
                strict: Some(true),
            })),
            reasoning_effort: Some("low".into()),
            verbosity: Some("low".into()),
            prompt_cache_key: Some("conv-1".into()),
            prompt_cache_retention: Some("in-memory".into()),
            service_tier: Some("flex".into()),
            user: Some("u-1".into()),
            safety_identifier: Some("s-1".into()),
            logprobs: Some(3),
            ..ModelRequest::default()
        };
        let body = body(&request);
        assert_eq!(
            body["tools"],
            json!([
                {"type": "function", "function": {"name": "get_weather", "description": "Weather now", "parameters": {"type": "object"}, "strict": true}},
                {"type": "function", "function": {"name": "noop", "parameters": {}}}
            ])
        );
        assert_eq!(
            body["tool_choice"],
            json!({"type": "function", "function": {"name": "get_weather"}})
        );
        assert_eq!(body["parallel_tool_calls"], json!(false));
        assert_eq!(body["temperature"], json!(0.5));
        assert_eq!(body["top_p"], json!(0.9));
        assert_eq!(body["max_completion_tokens"], json!(100));
        assert_eq!(
            body["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": true}})
        );
        assert_eq!(body["reasoning_effort"], json!("low"));
        assert_eq!(body["prompt_cache_key"], json!("conv-1"));
        assert_eq!(body["prompt_cache_retention"], json!("in-memory"));
        assert_eq!(body["verbosity"], json!("low"));
        assert_eq!(body["service_tier"], json!("flex"));
        assert_eq!(body["user"], json!("u-1"));
        assert_eq!(body["safety_identifier"], json!("s-1"));
        assert_eq!(body["logprobs"], json!(true));
        assert_eq!(body["top_logprobs"], json!(3));
        // A JSON object, and no logprobs unless asked.
        let plain = super::tests::body(&ModelRequest {
            output_format: Some(OutputFormat::JsonObject),
            ..ModelRequest::default()
        });
        assert_eq!(plain["response_format"], json!({"type": "json_object"}));
        assert!(plain.get("logprobs").is_none() && plain.get("top_logprobs").is_none());
        assert!(plain.get("user").is_none() && plain.get("service_tier").is_none());
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
}
