//! The Anthropic Messages wire format: the request body we send and the stream events we read.
//!
//! Only the fields this adapter uses are modelled; unknown event, block and delta types parse as
//! `Other` so that a new server-side feature never breaks a turn.
//!
//! Request mapping (what [`MessagesRequest::new`] decides):
//! - System messages, wherever they stand, are joined with a blank line into the top-level
//!   `system` (the Messages API has no system role inside `messages`).
//! - Turns must alternate: consecutive messages of the same role are merged into one turn, so the
//!   results of parallel calls (several `Tool` messages) become one user turn of `tool_result`
//!   blocks. In a user turn the `tool_result` blocks are put first, as the API requires.
//! - Assistant tool calls become `tool_use` blocks whose `input` is the parsed arguments. Arguments
//!   that are not a JSON object (a call cut short, a model that wrote garbage) are sent as `{}`: the
//!   API refuses anything else, and the tool result that followed already told the model.
//! - Images: a `data:…;base64,` URL goes as a base64 source, anything else as a URL source; the
//!   `detail` hint has no equivalent. Files become `document` blocks (PDFs: base64 or URL; the
//!   filename as the title); a file whose data is an image goes as an image block.
//! - `max_tokens` is required by Anthropic: the request's `max_output_tokens`, else
//!   [`DEFAULT_MAX_TOKENS`] (4096 for the Claude 3 models, whose cap it is).
//! - `tool_choice`: auto → `auto`, required → `any`, a function → `tool`, none → `none`;
//!   `parallel_tool_calls: false` → `disable_parallel_tool_use: true`. Only sent with tools.
//! - `temperature` and `top_p` pass through unchanged: Anthropic's temperature range is 0–1 (not
//!   OpenAI's 0–2) and some recent models refuse both at once; the upstream's 400 says which.
//! - A request without tools whose history holds tool calls (the engine's last, tool-less turn)
//!   declares each tool named in the history with an open schema and `tool_choice: none`: the API
//!   refuses `tool_use`/`tool_result` blocks when no tools are defined.
//! - `reasoning_effort` turns on extended thinking: `thinking: {type: "enabled", budget_tokens}`
//!   with the budget of [`thinking_budget`]; `max_tokens` then covers the budget plus the answer
//!   (`max_output_tokens` caps both, as Anthropic counts thinking as output). `none` (or a cap
//!   too small for the minimum budget of 1024) leaves thinking off.
//! - Reasoning blocks of earlier turns that Anthropic made (thinking with its signature, or
//!   redacted thinking) go first in their assistant turn, as the API requires when thinking is
//!   on; blocks of other upstreams, and unsigned ones, are left out.
//! - A structured output (`text.format` / `response_format`) is asked for in the system text:
//!   "answer with only a JSON object (matching this JSON Schema: …)". The Messages API has no
//!   output-format parameter every model takes; the engine checks the final answer either way.
//! - `user` goes as `metadata.user_id`.
//! - Not sent: `prompt_cache_key` (Anthropic caches by `cache_control` breakpoints instead),
//!   `verbosity`, `service_tier`, `safety_identifier`, `reasoning.summary`, tools' `strict` flag,
//!   and the thought signatures of tool calls (those are Gemini's; Anthropic signs thinking
//!   blocks). Logprobs are refused before the run ([`check`]): Anthropic returns none.

use std::borrow::Cow;

use engine::model::{
    ContentPart, ModelMessage, ModelRequest, ModelToolChoice, OutputFormat, Reasoning, ToolCall,
    ToolSpec, Unsupported,
};
use protocol::written::Parameters;
use serde::{Deserialize, Serialize};

/// Prefix of the ids this adapter gives thinking blocks (Anthropic gives them none): the
/// blocks it sends back are the ones with this prefix ([`Reasoning::is_from`]), so a block of
/// another upstream never reaches Anthropic.
pub const REASONING_PREFIX: &str = "thinking_";

/// `max_tokens` when the request sets no `max_output_tokens`. Every current Claude model can
/// produce at least this many; set `max_output_tokens` for longer answers.
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The output cap of the Claude 3 (not 3.5 or 3.7) models, which refuse a larger `max_tokens`.
const CLAUDE_3_MAX_TOKENS: u32 = 4096;

// ---------------------------------------------------------------------------------------------
// Request

/// `POST /v1/messages` body, borrowing from the engine's request. Written by
/// [`MessagesRequest::to_json`]; its `Serialize` is that writer's oracle in the tests.
#[derive(Debug, Serialize)]
pub(crate) struct MessagesRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    messages: Vec<Turn<'a>>,
    #[serde(flatten)]
    options: MessagesOptions<'a>,
}

/// The body's fields after `messages`.
#[derive(Debug, Serialize)]
struct MessagesOptions<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata<'a>>,
    stream: bool,
}

/// `metadata`: the end user's id.
#[derive(Debug, Serialize)]
struct Metadata<'a> {
    user_id: &'a str,
}

/// `{"type": "enabled", "budget_tokens": N}`.
#[derive(Debug, Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

/// The smallest thinking budget Anthropic takes.
pub(crate) const MIN_THINKING_BUDGET: u32 = 1024;
/// Room kept for the answer beside the thinking budget when no output cap is given.
const ANSWER_ROOM: u32 = 4096;

/// The thinking budget of a `reasoning.effort` (`None`: thinking stays off). The largest total
/// (`max`: 28 672 + 4 096) stays within the 32 000-token output cap of the smallest current
/// Claude models.
pub(crate) fn thinking_budget(effort: Option<&str>) -> Option<u32> {
    match effort? {
        "minimal" => Some(MIN_THINKING_BUDGET),
        "low" => Some(2048),
        "medium" => Some(6144),
        "high" => Some(12_288),
        "xhigh" => Some(20_480),
        "max" => Some(28_672),
        _ => None,
    }
}

/// `(max_tokens, budget)`: the output cap and the thinking budget within it.
pub(crate) fn token_caps(request: &ModelRequest) -> (u32, Option<u32>) {
    let budget = thinking_budget(request.reasoning_effort.as_deref());
    match (request.max_output_tokens, budget) {
        (Some(cap), Some(budget)) => {
            // The cap covers thinking and answer: the budget yields room to the answer.
            let budget = budget.min(cap.saturating_sub(ANSWER_ROOM.min(cap / 2)));
            (cap, (budget >= MIN_THINKING_BUDGET).then_some(budget))
        }
        (Some(cap), None) => (cap, None),
        (None, Some(budget)) => (
            default_max_tokens(&request.model).max(budget + ANSWER_ROOM),
            Some(budget),
        ),
        (None, None) => (default_max_tokens(&request.model), None),
    }
}

impl<'a> MessagesRequest<'a> {
    pub(crate) fn new(request: &'a ModelRequest) -> Self {
        let (system, messages) = conversation(&request.messages);
        let (tools, tool_choice) = if request.tools.is_empty() {
            let stubs = history_tools(&request.messages);
            let choice = (!stubs.is_empty()).then_some(ToolChoice::None);
            (stubs, choice)
        } else {
            let disable_parallel_tool_use = request.parallel_tool_calls == Some(false);
            (
                request.tools.iter().map(Tool::from).collect(),
                Some(ToolChoice::new(
                    &request.tool_choice,
                    disable_parallel_tool_use,
                )),
            )
        };
        let (max_tokens, budget) = token_caps(request);
        let system = match (
            system,
            request.output_format.as_ref().map(format_instruction),
        ) {
            (Some(system), Some(format)) => Some(format!("{system}\n\n{format}")),
            (system, format) => system.or(format),
        };
        MessagesRequest {
            model: &request.model,
            max_tokens,
            system,
            messages,
            options: MessagesOptions {
                tools,
                tool_choice,
                temperature: request.temperature,
                top_p: request.top_p,
                thinking: budget.map(|budget_tokens| Thinking {
                    kind: "enabled",
                    budget_tokens,
                }),
                metadata: request.user.as_deref().map(|user_id| Metadata { user_id }),
                stream: true,
            },
        }
    }

    /// The body as compact JSON, byte for byte as `serde_json::to_string(self)` writes it:
    /// the turns' text and tool result blocks field by field, their text through the
    /// protocol's string writer (eight bytes at a time, where serde_json escapes a byte at a
    /// time: a long history's text was most of the body's cost), the rest by serde.
    pub(crate) fn to_json(&self) -> Result<String, serde_json::Error> {
        let text: usize = self
            .messages
            .iter()
            .flat_map(|turn| &turn.content)
            .map(Block::json_size)
            .sum();
        let system = self.system.as_ref().map_or(0, String::len);
        let mut out = String::with_capacity(512 + self.model.len() + system + text);
        out.push_str("{\"model\":");
        protocol::push_json_string(&mut out, self.model)?;
        out.push_str(",\"max_tokens\":");
        out.push_str(&self.max_tokens.to_string());
        if let Some(system) = &self.system {
            out.push_str(",\"system\":");
            protocol::push_json_string(&mut out, system)?;
        }
        out.push_str(",\"messages\":");
        protocol::push_json_list(&mut out, &self.messages, |out, turn| {
            out.push_str(match turn.role {
                Role::User => "{\"role\":\"user\",\"content\":",
                Role::Assistant => "{\"role\":\"assistant\",\"content\":",
            });
            protocol::push_json_list(out, &turn.content, |out, block| block.write_json(out))?;
            out.push('}');
            Ok(())
        })?;
        protocol::push_json_members(&mut out, &self.options)?;
        Ok(out)
    }
}

/// The system text that asks for a structured output.
fn format_instruction(format: &OutputFormat) -> String {
    match format {
        OutputFormat::JsonObject => {
            "Answer with only a JSON object: no prose, no code fences.".to_owned()
        }
        OutputFormat::JsonSchema(format) => format!(
            "Answer with only a JSON value matching this JSON Schema (\"{}\"), no prose and no code fences:\n{}",
            format.name, format.schema
        ),
    }
}

fn default_max_tokens(model: &str) -> u32 {
    let claude_3 = model.starts_with("claude-3-")
        && !model.starts_with("claude-3-5")
        && !model.starts_with("claude-3-7");
    if claude_3 {
        CLAUDE_3_MAX_TOKENS
    } else {
        DEFAULT_MAX_TOKENS
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Role {
    User,
    Assistant,
}

#[derive(Debug, Serialize)]
struct Turn<'a> {
    role: Role,
    content: Vec<Block<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    Image {
        source: Source<'a>,
    },
    Document {
        source: Source<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: serde_json::Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        /// Omitted when empty: the API refuses an empty text.
        #[serde(skip_serializing_if = "str::is_empty")]
        content: &'a str,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
}

impl Block<'_> {
    /// About the block's JSON length.
    fn json_size(&self) -> usize {
        match self {
            Block::Text { text } => 32 + text.len(),
            Block::ToolResult {
                tool_use_id,
                content,
            } => 64 + tool_use_id.len() + content.len(),
            _ => 256,
        }
    }

    /// The block as serde writes it (the tag first, then the fields in their order): text and
    /// tool results field by field, the others by serde.
    fn write_json(&self, out: &mut String) -> Result<(), serde_json::Error> {
        match self {
            Block::Text { text } => {
                out.push_str("{\"type\":\"text\",\"text\":");
                protocol::push_json_string(out, text)?;
                out.push('}');
            }
            Block::ToolResult {
                tool_use_id,
                content,
            } => {
                out.push_str("{\"type\":\"tool_result\",\"tool_use_id\":");
                protocol::push_json_string(out, tool_use_id)?;
                if !content.is_empty() {
                    out.push_str(",\"content\":");
                    protocol::push_json_string(out, content)?;
                }
                out.push('}');
            }
            other => protocol::push_json(out, other)?,
        }
        Ok(())
    }
}

/// The block of a reasoning block Anthropic made and signed (`None` for any other).
fn thinking_block(reasoning: &Reasoning) -> Option<Block<'_>> {
    if !reasoning.is_from(REASONING_PREFIX) {
        return None;
    }
    let signature = reasoning.encrypted.as_deref().filter(|s| !s.is_empty())?;
    Some(match reasoning.text.as_deref() {
        Some(thinking) => Block::Thinking {
            thinking,
            signature,
        },
        None => Block::RedactedThinking { data: signature },
    })
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Source<'a> {
    Base64 { media_type: &'a str, data: &'a str },
    Url { url: &'a str },
}

/// `(system, messages)`: the system text pulled out, the rest as alternating turns.
fn conversation(messages: &[ModelMessage]) -> (Option<String>, Vec<Turn<'_>>) {
    let mut system: Vec<&str> = Vec::new();
    let mut turns: Vec<Turn<'_>> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            ModelMessage::System { content } => {
                if !content.trim().is_empty() {
                    system.push(content);
                }
                continue;
            }
            ModelMessage::User { content } => {
                (Role::User, content.iter().filter_map(user_block).collect())
            }
            ModelMessage::Assistant {
                content,
                tool_calls,
            } => {
                let text = content
                    .as_deref()
                    .filter(|text| !text.is_empty())
                    .map(|text| Block::Text { text });
                let calls = tool_calls.iter().map(tool_use);
                (Role::Assistant, text.into_iter().chain(calls).collect())
            }
            ModelMessage::Reasoning(reasoning) => (
                Role::Assistant,
                thinking_block(reasoning).into_iter().collect(),
            ),
            ModelMessage::Tool {
                call_id, content, ..
            } => (
                Role::User,
                vec![Block::ToolResult {
                    tool_use_id: call_id,
                    content,
                }],
            ),
        };
        push_blocks(&mut turns, role, blocks);
    }
    for turn in &mut turns {
        // Stable: results keep their order, and so does the rest.
        turn.content
            .sort_by_key(|block| !matches!(block, Block::ToolResult { .. }));
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, turns)
}

/// Appends `blocks` to the last turn when it has the same role, else starts a turn. A message
/// that maps to no block (an empty text) adds nothing: the API refuses empty turns.
fn push_blocks<'a>(turns: &mut Vec<Turn<'a>>, role: Role, blocks: Vec<Block<'a>>) {
    if blocks.is_empty() {
        return;
    }
    match turns.last_mut() {
        Some(last) if last.role == role => last.content.extend(blocks),
        _ => turns.push(Turn {
            role,
            content: blocks,
        }),
    }
}

fn user_block(part: &ContentPart) -> Option<Block<'_>> {
    match part {
        ContentPart::Text { text } => (!text.is_empty()).then_some(Block::Text { text }),
        ContentPart::ImageUrl { url, .. } => Some(Block::Image {
            source: match data_url(url) {
                Some((media_type, data)) => Source::Base64 { media_type, data },
                None => Source::Url { url },
            },
        }),
        ContentPart::File {
            filename,
            file_data,
            file_url,
        } => {
            let source = match (file_data.as_deref(), file_url.as_deref()) {
                (Some(data), _) => match data_url(data) {
                    Some((media_type, data)) => Source::Base64 { media_type, data },
                    // Bare base64 (no `data:` prefix): PDF is the one type documents take.
                    None => Source::Base64 {
                        media_type: "application/pdf",
                        data,
                    },
                },
                (None, Some(url)) => Source::Url { url },
                (None, None) => return None,
            };
            let is_image = matches!(
                source,
                Source::Base64 { media_type, .. } if media_type.starts_with("image/")
            );
            Some(if is_image {
                Block::Image { source }
            } else {
                Block::Document {
                    source,
                    title: filename.as_deref(),
                }
            })
        }
    }
}

/// The image types the Messages API reads.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// What the Messages API cannot take, found before the turn is sent: images and files of other
/// types than it reads (documents are PDFs; images JPEG, PNG, GIF, WebP), and, with extended
/// thinking on, `temperature`, a `top_p` below 0.95 or a forced tool choice.
pub(crate) fn check(request: &ModelRequest) -> Result<(), Unsupported> {
    for part in request.user_parts() {
        check_part(part)?;
    }
    if let Some(n) = request.logprobs {
        let param = if n > 0 { "top_logprobs" } else { "include" };
        return Err(Unsupported::new(
            param,
            "Anthropic models return no logprobs: leave out top_logprobs and message.output_text.logprobs",
        ));
    }
    if token_caps(request).1.is_some() {
        let effort = request.reasoning_effort.as_deref().unwrap_or_default();
        let why =
            format!("reasoning.effort \"{effort}\" turns on Anthropic's extended thinking, which");
        if request.temperature.is_some() {
            return Err(Unsupported::new(
                "temperature",
                format!("{why} does not take temperature: leave temperature unset"),
            ));
        }
        if request.top_p.is_some_and(|top_p| top_p < 0.95) {
            return Err(Unsupported::new(
                "top_p",
                format!("{why} takes top_p only from 0.95 to 1"),
            ));
        }
        let forced = matches!(
            request.tool_choice,
            ModelToolChoice::Required | ModelToolChoice::Function(_)
        );
        if forced && !request.tools.is_empty() {
            return Err(Unsupported::new(
                "tool_choice",
                format!("{why} does not take a forced tool choice: use \"auto\" or \"none\""),
            ));
        }
    }
    Ok(())
}

fn check_part(part: &ContentPart) -> Result<(), Unsupported> {
    match part {
        ContentPart::Text { .. } => Ok(()),
        ContentPart::ImageUrl { url, .. } => match data_url(url) {
            Some((media_type, _)) if !IMAGE_TYPES.contains(&media_type) => Err(Unsupported::new(
                "input",
                format!("Anthropic models read JPEG, PNG, GIF and WebP images, not {media_type}"),
            )),
            _ => Ok(()),
        },
        ContentPart::File {
            filename,
            file_data: Some(data),
            ..
        } => {
            let name = filename.as_deref().unwrap_or("(unnamed)");
            let media_type = match data_url(data) {
                Some((media_type, _)) => media_type,
                // Bare base64 goes as a PDF: it must be one ("%PDF" is "JVBER" in base64).
                None if data.trim_start().starts_with("JVBER") => "application/pdf",
                None => "not a PDF",
            };
            if media_type == "application/pdf" || IMAGE_TYPES.contains(&media_type) {
                Ok(())
            } else {
                Err(Unsupported::new(
                    "input",
                    format!(
                        "Anthropic models read files only as PDF documents or images (JPEG, PNG, \
                         GIF, WebP); input_file \"{name}\" is {media_type}"
                    ),
                ))
            }
        }
        ContentPart::File { .. } => Ok(()),
    }
}

/// `(media_type, data)` of a `data:<media type>;base64,<data>` URL.
fn data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let media_type = meta.strip_suffix(";base64")?;
    // Parameters such as `;charset=…` are not part of Anthropic's media type.
    let media_type = media_type.split(';').next().unwrap_or(media_type).trim();
    (!media_type.is_empty()).then_some((media_type, data))
}

fn tool_use(call: &ToolCall) -> Block<'_> {
    let input = match serde_json::from_str::<serde_json::Value>(&call.arguments) {
        Ok(value @ serde_json::Value::Object(_)) => value,
        _ => serde_json::Value::Object(serde_json::Map::new()),
    };
    Block::ToolUse {
        id: &call.id,
        name: &call.name,
        input,
    }
}

#[derive(Debug, Serialize)]
struct Tool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: Cow<'a, Parameters>,
}

impl<'a> From<&'a ToolSpec> for Tool<'a> {
    fn from(tool: &'a ToolSpec) -> Self {
        Tool {
            name: &tool.name,
            description: tool.description.as_deref(),
            input_schema: input_schema(&tool.parameters),
        }
    }
}

/// The API wants an object schema with `type` at the root: a tool without parameters (`{}` or
/// `null`) gets an empty object schema, and a root without `type` gets `"object"`.
fn input_schema(parameters: &Parameters) -> Cow<'_, Parameters> {
    match parameters.value() {
        serde_json::Value::Object(map) if map.contains_key("type") => Cow::Borrowed(parameters),
        serde_json::Value::Object(map) => {
            let mut map = map.clone();
            map.insert("type".to_owned(), "object".into());
            Cow::Owned(serde_json::Value::Object(map).into())
        }
        _ => Cow::Owned(serde_json::json!({"type": "object", "properties": {}}).into()),
    }
}

/// Declarations for the tools named in the history, for a turn offered no tools.
fn history_tools(messages: &[ModelMessage]) -> Vec<Tool<'_>> {
    let mut names: Vec<&str> = Vec::new();
    for message in messages {
        if let ModelMessage::Assistant { tool_calls, .. } = message {
            for call in tool_calls {
                if !names.contains(&call.name.as_str()) {
                    names.push(&call.name);
                }
            }
        }
    }
    names
        .into_iter()
        .map(|name| Tool {
            name,
            description: Some("Not available in this turn."),
            input_schema: Cow::Owned(serde_json::json!({"type": "object"}).into()),
        })
        .collect()
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ToolChoice<'a> {
    Auto {
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        disable_parallel_tool_use: bool,
    },
    Any {
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        disable_parallel_tool_use: bool,
    },
    Tool {
        name: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        disable_parallel_tool_use: bool,
    },
    /// Takes no `disable_parallel_tool_use`: no call at all is made.
    None,
}

impl<'a> ToolChoice<'a> {
    fn new(choice: &'a ModelToolChoice, disable_parallel_tool_use: bool) -> Self {
        match choice {
            ModelToolChoice::Auto => ToolChoice::Auto {
                disable_parallel_tool_use,
            },
            ModelToolChoice::Required => ToolChoice::Any {
                disable_parallel_tool_use,
            },
            ModelToolChoice::Function(name) => ToolChoice::Tool {
                name,
                disable_parallel_tool_use,
            },
            ModelToolChoice::None => ToolChoice::None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Response

/// The `data` of one stream event; its `type` repeats the SSE `event` name.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum StreamEvent {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: usize,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<Usage>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorBody,
    },
    /// An event type added after this adapter was written.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
pub(crate) struct MessageStart {
    #[serde(default)]
    pub(crate) usage: Option<Usage>,
}

/// A content block as `content_block_start` opens it, or as a whole message holds it.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        /// `{}` when streamed (the input comes as `input_json_delta`s); whole otherwise.
        #[serde(default)]
        input: serde_json::Value,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    /// Server tool blocks and anything newer: not carried by the port.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        #[serde(default)]
        partial_json: String,
    },
    ThinkingDelta {
        #[serde(default)]
        thinking: String,
    },
    SignatureDelta {
        #[serde(default)]
        signature: String,
    },
    /// `citations_delta`…
    #[serde(other)]
    Other,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct MessageDelta {
    #[serde(default)]
    pub(crate) stop_reason: Option<String>,
}

/// Token counts. `message_start` has the input side, `message_delta` the running output count
/// (and, on recent API versions, the input side again): each field present replaces the last.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub(crate) struct Usage {
    #[serde(default)]
    pub(crate) input_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) output_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) cache_read_input_tokens: Option<u64>,
}

/// `{"type": "overloaded_error", "message": "Overloaded"}`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorBody {
    #[serde(default, rename = "type")]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) message: String,
}

/// A whole `message`, for a server that answers a streaming request without streaming.
#[derive(Debug, Deserialize)]
pub(crate) struct Message {
    #[serde(default)]
    pub(crate) content: Vec<ContentBlock>,
    #[serde(default)]
    pub(crate) stop_reason: Option<String>,
    #[serde(default)]
    pub(crate) usage: Option<Usage>,
}

#[cfg(test)]
mod tests {
    use engine::model::ModelRequest;
    use serde_json::json;

    use super::*;

    /// The body as the client sends it (`to_json`), checked to be serde's bytes.
    fn body(request: &ModelRequest) -> serde_json::Value {
        let messages = MessagesRequest::new(request);
        crate::wire_texts::checked(&messages, messages.to_json())
    }

    fn user(text: &str) -> ModelMessage {
        ModelMessage::User {
            content: vec![ContentPart::Text { text: text.into() }],
        }
    }

    fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            thought_signature: None,
        }
    }

    fn result(call_id: &str, content: &str) -> ModelMessage {
        ModelMessage::Tool {
            call_id: call_id.into(),
            name: None,
            content: content.into(),
        }
    }

    /// Every turn and block form the writer takes apart, each text in every form (escapes,
    /// control characters, non-ASCII, empty, long), with and without the options: the body
    /// written by hand is serde's, byte for byte.
    #[test]
    fn the_body_is_written_as_serde_writes_it() {
        for text in crate::wire_texts::TEXTS {
            let long = text.repeat(40);
            let messages = vec![
                ModelMessage::System {
                    content: text.into(),
                },
                user(&long),
                ModelMessage::Assistant {
                    content: Some(long.clone()),
                    tool_calls: vec![
                        call(&format!("toolu_{text}"), "lookup", r#"{"q":"a"}"#),
                        call("toolu_2", "lookup", "not an object"),
                    ],
                },
                result(&format!("toolu_{text}"), &long),
                result("toolu_2", ""),
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
                    content: Some(text.into()),
                    tool_calls: vec![],
                },
            ];
            body(&ModelRequest {
                model: format!("claude {text}"),
                messages: messages.clone(),
                ..ModelRequest::default()
            });
            body(&ModelRequest {
                model: "claude-sonnet-4-5".into(),
                messages,
                tools: vec![spec("lookup")],
                temperature: Some(0.5),
                reasoning_effort: Some("high".into()),
                user: Some(text.into()),
                ..ModelRequest::default()
            });
        }
        body(&ModelRequest::default());
    }

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: None,
            parameters: json!({"type": "object"}).into(),
            strict: false,
        }
    }

    #[test]
    fn minimal_request_streams_with_a_default_max_tokens() {
        let request = ModelRequest {
            model: "claude-sonnet-4-5".into(),
            messages: vec![user("Hi")],
            tool_choice: ModelToolChoice::Required,
            parallel_tool_calls: Some(false),
            prompt_cache_key: Some("k".into()),
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&request),
            json!({
                "model": "claude-sonnet-4-5",
                "max_tokens": 8192,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
                "stream": true
            })
        );
    }

    #[test]
    fn effort_turns_on_thinking_within_the_output_cap() {
        let with = |effort: Option<&str>, cap: Option<u32>| {
            let request = ModelRequest {
                model: "claude-sonnet-4-5".into(),
                messages: vec![user("Hi")],
                reasoning_effort: effort.map(str::to_owned),
                max_output_tokens: cap,
                ..ModelRequest::default()
            };
            let body = body(&request);
            (body["max_tokens"].clone(), body["thinking"].clone())
        };
        let thinking = |budget: u32| json!({"type": "enabled", "budget_tokens": budget});
        assert_eq!(with(None, None), (json!(8192), json!(null)));
        assert_eq!(with(Some("none"), None), (json!(8192), json!(null)));
        assert_eq!(with(Some("minimal"), None), (json!(8192), thinking(1024)));
        assert_eq!(with(Some("medium"), None), (json!(10240), thinking(6144)));
        assert_eq!(with(Some("high"), None), (json!(16384), thinking(12_288)));
        assert_eq!(with(Some("max"), None), (json!(32768), thinking(28_672)));
        // A cap covers thinking and answer; too small a cap leaves thinking off.
        assert_eq!(
            with(Some("high"), Some(8000)),
            (json!(8000), thinking(4000))
        );
        assert_eq!(
            with(Some("low"), Some(30_000)),
            (json!(30_000), thinking(2048))
        );
        assert_eq!(with(Some("high"), Some(1500)), (json!(1500), json!(null)));
    }

    #[test]
    fn anthropic_thinking_goes_back_first_in_its_turn_and_others_are_dropped() {
        let block = |id: &str, text: Option<&str>, signature: Option<&str>| {
            ModelMessage::Reasoning(Reasoning {
                id: Some(id.into()),
                summary: vec!["summary".into()],
                text: text.map(str::to_owned),
                encrypted: signature.map(str::to_owned),
            })
        };
        let request = ModelRequest {
            model: "claude-sonnet-4-5".into(),
            messages: vec![
                user("Weather?"),
                block("thinking_1", Some("Look it up."), Some("sig1")),
                block("thinking_2", None, Some("redacted-data")),
                block("thinking_3", Some("unsigned"), None),
                block("rs_123", Some("openai's"), Some("gAAA")),
                block("thought_1", None, Some("gemini-sig")),
                ModelMessage::Assistant {
                    content: Some("Checking.".into()),
                    tool_calls: vec![call("toolu_1", "weather", r#"{"city":"Paris"}"#)],
                },
                result("toolu_1", "sunny"),
            ],
            tools: vec![spec("weather")],
            ..ModelRequest::default()
        };
        let body = body(&request);
        assert_eq!(
            body["messages"][1],
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Look it up.", "signature": "sig1"},
                {"type": "redacted_thinking", "data": "redacted-data"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}}
            ]})
        );
    }

    #[test]
    fn check_refuses_what_the_messages_api_cannot_take() {
        let with_parts = |parts: Vec<ContentPart>| ModelRequest {
            model: "claude-sonnet-4-5".into(),
            messages: vec![ModelMessage::User { content: parts }],
            ..ModelRequest::default()
        };
        let file = |name: &str, data: &str| ContentPart::File {
            filename: Some(name.into()),
            file_data: Some(data.into()),
            file_url: None,
        };
        let ok = [
            file("a.pdf", "data:application/pdf;base64,JVBERi0x"),
            file("a.pdf", "JVBERi0xLjQK"),
            file("p.png", "data:image/png;base64,iVBOR"),
            ContentPart::ImageUrl {
                url: "https://example.com/cat.bmp".into(),
                detail: None,
            },
        ];
        for part in ok {
            assert_eq!(check(&with_parts(vec![part.clone()])), Ok(()), "{part:?}");
        }
        let refused = [
            (
                file(
                    "notes.docx",
                    "data:application/vnd.openxmlformats-officedocument.wordprocessingml.document;base64,UEsDB",
                ),
                "input_file \"notes.docx\" is application/vnd.openxmlformats",
            ),
            (
                file("a.txt", "aGVsbG8="),
                "input_file \"a.txt\" is not a PDF",
            ),
            (
                ContentPart::ImageUrl {
                    url: "data:image/tiff;base64,SUkq".into(),
                    detail: None,
                },
                "not image/tiff",
            ),
        ];
        for (part, want) in refused {
            let err = check(&with_parts(vec![part])).err();
            assert_eq!(err.as_ref().map(|e| e.param.as_str()), Some("input"));
            let message = err.map(|e| e.message).unwrap_or_default();
            assert!(message.contains(want), "{message}");
        }
        let thinking = |change: &dyn Fn(&mut ModelRequest)| {
            let mut request = with_parts(vec![ContentPart::Text { text: "x".into() }]);
            request.reasoning_effort = Some("high".into());
            request.tools = vec![spec("f")];
            change(&mut request);
            check(&request).err().map(|e| e.param)
        };
        assert_eq!(thinking(&|_| {}), None);
        assert_eq!(
            thinking(&|r| r.temperature = Some(0.2)),
            Some("temperature".into())
        );
        assert_eq!(thinking(&|r| r.top_p = Some(0.5)), Some("top_p".into()));
        assert_eq!(thinking(&|r| r.top_p = Some(0.97)), None);
        assert_eq!(
            thinking(&|r| r.tool_choice = ModelToolChoice::Required),
            Some("tool_choice".into())
        );
        // Without thinking the same request is fine.
        assert_eq!(
            thinking(&|r| {
                r.reasoning_effort = None;
                r.temperature = Some(0.2);
            }),
            None
        );
    }

    #[test]
    fn max_tokens_default_fits_the_model() {
        for (model, want) in [
            ("claude-3-haiku-20240307", 4096),
            ("claude-3-opus-latest", 4096),
            ("claude-3-5-haiku-latest", 8192),
            ("claude-3-7-sonnet-latest", 8192),
            ("claude-opus-4-1", 8192),
        ] {
            assert_eq!(default_max_tokens(model), want, "{model}");
        }
        let request = ModelRequest {
            model: "claude-3-haiku-20240307".into(),
            max_output_tokens: Some(100),
            ..ModelRequest::default()
        };
        assert_eq!(body(&request)["max_tokens"], 100);
    }

    #[test]
    fn system_messages_are_hoisted_and_joined() {
        let request = ModelRequest {
            messages: vec![
                ModelMessage::System {
                    content: "Be brief.".into(),
                },
                user("Hi"),
                ModelMessage::System {
                    content: "Answer in French.".into(),
                },
                ModelMessage::System {
                    content: "  ".into(),
                },
            ],
            ..ModelRequest::default()
        };
        let body = body(&request);
        assert_eq!(body["system"], "Be brief.\n\nAnswer in French.");
        assert_eq!(body["messages"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn parallel_results_merge_into_one_user_turn_results_first() {
        let request = ModelRequest {
            tools: vec![spec("f"), spec("g")],
            messages: vec![
                user("Do both"),
                ModelMessage::Assistant {
                    content: Some("On it.".into()),
                    tool_calls: vec![call("toolu_1", "f", r#"{"a":1}"#), call("toolu_2", "g", "")],
                },
                result("toolu_1", "one"),
                result("toolu_2", ""),
                user("And then?"),
                user(""),
            ],
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&request)["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "Do both"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "On it."},
                    {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
                    {"type": "tool_use", "id": "toolu_2", "name": "g", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "one"},
                    {"type": "tool_result", "tool_use_id": "toolu_2"},
                    {"type": "text", "text": "And then?"}
                ]}
            ])
        );
    }

    #[test]
    fn tool_results_go_before_text_in_a_merged_turn() {
        let request = ModelRequest {
            tools: vec![spec("f")],
            messages: vec![
                ModelMessage::Assistant {
                    content: None,
                    tool_calls: vec![call("toolu_1", "f", "{}")],
                },
                user("(the user typed meanwhile)"),
                result("toolu_1", "done"),
            ],
            ..ModelRequest::default()
        };
        let messages = &body(&request)["messages"];
        assert_eq!(messages[1]["content"][0]["type"], "tool_result");
        assert_eq!(messages[1]["content"][1]["type"], "text");
    }

    #[test]
    fn arguments_that_are_not_an_object_become_empty_input() {
        for arguments in ["", "{\"cut", "[1]", "null", "\"text\""] {
            let Block::ToolUse { input, .. } = tool_use(&call("i", "f", arguments)) else {
                panic!("not a tool_use block");
            };
            assert_eq!(input, json!({}), "{arguments}");
        }
        let Block::ToolUse { input, .. } = tool_use(&call("i", "f", r#"{"q":"é \"x\""}"#)) else {
            panic!("not a tool_use block");
        };
        assert_eq!(input, json!({"q": "é \"x\""}));
    }

    #[test]
    fn images_and_files_map_to_sources() {
        let request = ModelRequest {
            messages: vec![ModelMessage::User {
                content: vec![
                    ContentPart::ImageUrl {
                        url: "https://example.com/cat.png".into(),
                        detail: Some("high".into()),
                    },
                    ContentPart::ImageUrl {
                        url: "data:image/png;base64,iVBORw0K".into(),
                        detail: None,
                    },
                    ContentPart::File {
                        filename: Some("report.pdf".into()),
                        file_data: Some("data:application/pdf;base64,JVBERi0x".into()),
                        file_url: None,
                    },
                    ContentPart::File {
                        filename: None,
                        file_data: Some("JVBERi0y".into()),
                        file_url: None,
                    },
                    ContentPart::File {
                        filename: None,
                        file_data: None,
                        file_url: Some("https://example.com/a.pdf".into()),
                    },
                    ContentPart::File {
                        filename: Some("photo.jpg".into()),
                        file_data: Some("data:image/jpeg;base64,/9j/".into()),
                        file_url: None,
                    },
                    ContentPart::File {
                        filename: None,
                        file_data: None,
                        file_url: None,
                    },
                ],
            }],
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&request)["messages"][0]["content"],
            json!([
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}},
                {"type": "document", "title": "report.pdf", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0y"}},
                {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}}
            ])
        );
    }

    #[test]
    fn data_urls() {
        assert_eq!(
            data_url("data:image/png;base64,AAA"),
            Some(("image/png", "AAA"))
        );
        assert_eq!(
            data_url("data:text/plain;charset=utf-8;base64,aGk="),
            Some(("text/plain", "aGk="))
        );
        assert_eq!(data_url("data:text/plain,hello"), None);
        assert_eq!(data_url("data:;base64,AAA"), None);
        assert_eq!(data_url("https://x/y.png"), None);
    }

    #[test]
    fn tool_choice_and_parallelism() {
        let cases = [
            (ModelToolChoice::Auto, None, json!({"type": "auto"})),
            (
                ModelToolChoice::Auto,
                Some(false),
                json!({"type": "auto", "disable_parallel_tool_use": true}),
            ),
            (
                ModelToolChoice::Required,
                Some(true),
                json!({"type": "any"}),
            ),
            (
                ModelToolChoice::Required,
                Some(false),
                json!({"type": "any", "disable_parallel_tool_use": true}),
            ),
            (
                ModelToolChoice::Function("f".into()),
                Some(false),
                json!({"type": "tool", "name": "f", "disable_parallel_tool_use": true}),
            ),
            (ModelToolChoice::None, Some(false), json!({"type": "none"})),
        ];
        for (choice, parallel, want) in cases {
            let request = ModelRequest {
                tools: vec![spec("f")],
                tool_choice: choice,
                parallel_tool_calls: parallel,
                ..ModelRequest::default()
            };
            assert_eq!(body(&request)["tool_choice"], want);
        }
    }

    #[test]
    fn tools_carry_an_object_input_schema() {
        let request = ModelRequest {
            tools: vec![
                ToolSpec {
                    name: "get_weather".into(),
                    description: Some("Weather for a city".into()),
                    parameters:
                        json!({"type": "object", "properties": {"city": {"type": "string"}}}).into(),
                    strict: true,
                },
                ToolSpec {
                    name: "now".into(),
                    description: None,
                    parameters: json!({}).into(),
                    strict: false,
                },
                ToolSpec {
                    name: "ping".into(),
                    description: None,
                    parameters: serde_json::Value::Null.into(),
                    strict: false,
                },
            ],
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&request)["tools"],
            json!([
                {"name": "get_weather", "description": "Weather for a city",
                 "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
                {"name": "now", "input_schema": {"type": "object"}},
                {"name": "ping", "input_schema": {"type": "object", "properties": {}}}
            ])
        );
    }

    #[test]
    fn a_toolless_turn_after_tool_calls_declares_the_history_tools() {
        let request = ModelRequest {
            messages: vec![
                user("Weather?"),
                ModelMessage::Assistant {
                    content: None,
                    tool_calls: vec![
                        call("toolu_1", "get_weather", "{}"),
                        call("toolu_2", "get_weather", "{}"),
                        call("toolu_3", "now", "{}"),
                    ],
                },
                result("toolu_1", "sunny"),
                result("toolu_2", "rainy"),
                result("toolu_3", "noon"),
            ],
            tool_choice: ModelToolChoice::None,
            ..ModelRequest::default()
        };
        let body = body(&request);
        assert_eq!(
            body["tools"],
            json!([
                {"name": "get_weather", "description": "Not available in this turn.", "input_schema": {"type": "object"}},
                {"name": "now", "description": "Not available in this turn.", "input_schema": {"type": "object"}}
            ])
        );
        assert_eq!(body["tool_choice"], json!({"type": "none"}));
    }

    #[test]
    fn sampling_is_passed_through() {
        let request = ModelRequest {
            temperature: Some(0.3),
            top_p: Some(0.9),
            ..ModelRequest::default()
        };
        let body = body(&request);
        assert_eq!(body["temperature"], 0.3);
        assert_eq!(body["top_p"], 0.9);
    }
}
