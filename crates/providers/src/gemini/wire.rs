//! The Gemini `generateContent` wire format: the request body we send and the response chunks we
//! read back.
//!
//! Only the fields this adapter uses are modelled; unknown response fields are ignored.
//!
//! Mapping decisions (the engine's provider-neutral request to Gemini's):
//! - System messages, wherever they sit, become the one `systemInstruction` (one text part each).
//! - Assistant turns are `model` contents: a text part, then one `functionCall` part per call with
//!   its `thoughtSignature` echoed. Gemini 3 rejects a replayed call turn without a signature (a
//!   transcript from another provider, or one that lost it): for `gemini-3*` models the first call
//!   of such a turn gets Google's documented `skip_thought_signature_validator` sentinel.
//! - Call ids are not sent back: Gemini matches results to calls by order and name, and the ids
//!   the adapter invents (`call_<n>`) mean nothing to it.
//! - Tool results are `user` contents of `functionResponse` parts named after the function (looked
//!   up from the call when the result carries no name), with
//!   `response: {"result": …}` (the result parsed as JSON when it is JSON, else the text).
//!   Consecutive contents of one role are merged, so parallel results travel together.
//! - Images and files: `data:…;base64,` URLs go inline (`inlineData`), other URLs by reference
//!   (`fileData`, with a MIME type guessed from the extension when it has a known one).
//! - Tools are declared with `parametersJsonSchema` (full JSON Schema) rather than `parameters`
//!   (Gemini's OpenAPI subset, which rejects `additionalProperties` and friends); the structured
//!   output schema likewise goes in `responseJsonSchema`.
//! - `tool_choice`: auto is Gemini's default (nothing sent), none is `NONE`, required is `ANY`, a
//!   named function is `ANY` with `allowedFunctionNames`. Gemini has no `parallel_tool_calls`, no
//!   `prompt_cache_key` (its caching is implicit) and no image `detail`: those are dropped.
//! - A reasoning block Gemini made (thought summary and signature) goes back first in its model
//!   turn as a `thought: true` part carrying the signature; one without a signature (it tells
//!   the model nothing) and blocks of other upstreams are left out.
//! - `reasoning_effort` becomes `thinkingConfig` only for model families whose accepted values are
//!   known, since a wrong field is a 400: see [`thinking_config`].

use engine::model::{
    ContentPart, ModelMessage, ModelRequest, ModelToolChoice, OutputFormat, Reasoning, ToolCall,
    ToolSpec, Unsupported,
};
use protocol::written::Parameters;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Prefix of the ids this adapter gives reasoning blocks (Gemini's thoughts have no id): the
/// blocks it sends back are the ones with this prefix ([`Reasoning::is_from`]), so a block of
/// another upstream never reaches Gemini.
pub const REASONING_PREFIX: &str = "thought_";

/// The sentinel Google documents for a replayed Gemini 3 function call that has no signature.
pub(crate) const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

// ---------------------------------------------------------------------------------------------
// Request

/// `POST …:streamGenerateContent` body, borrowing from the engine's request. Written by
/// [`GenerateRequest::to_json`]; its `Serialize` is that writer's oracle in the tests.
#[derive(Debug, Serialize)]
pub(crate) struct GenerateRequest<'a> {
    contents: Vec<Content<'a>>,
    #[serde(flatten)]
    options: GenerateOptions<'a>,
}

/// The body's fields after `contents`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerateOptions<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<SystemInstruction<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<ToolConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    generation_config: Option<GenerationConfig<'a>>,
}

impl<'a> From<&'a ModelRequest> for GenerateRequest<'a> {
    fn from(request: &'a ModelRequest) -> Self {
        let mut system = Vec::new();
        let mut contents: Vec<Content<'a>> = Vec::new();
        let gemini_3 = is_gemini_3(&request.model);
        for message in &request.messages {
            let (role, parts) = match message {
                ModelMessage::System { content } => {
                    system.push(Part::new(PartData::Text(content)));
                    continue;
                }
                ModelMessage::User { content } => ("user", content.iter().map(user_part).collect()),
                ModelMessage::Assistant {
                    content,
                    tool_calls,
                } => (
                    "model",
                    model_parts(content.as_deref(), tool_calls, gemini_3),
                ),
                ModelMessage::Reasoning(reasoning) => {
                    ("model", thought_part(reasoning).into_iter().collect())
                }
                ModelMessage::Tool {
                    call_id,
                    name,
                    content,
                } => {
                    let name = name
                        .as_deref()
                        .or_else(|| call_name(&request.messages, call_id))
                        .unwrap_or_default();
                    let response = FunctionResponse {
                        name,
                        response: ToolResult {
                            result: ResultValue::from(content.as_str()),
                        },
                    };
                    (
                        "user",
                        vec![Part::new(PartData::FunctionResponse(response))],
                    )
                }
            };
            match contents.last_mut() {
                Some(last) if last.role == role => last.parts.extend(parts),
                _ => contents.push(Content { role, parts }),
            }
        }
        // Gemini refuses a content without parts (an empty user message, say).
        for content in &mut contents {
            if content.parts.is_empty() {
                content.parts.push(Part::new(PartData::Text("")));
            }
        }
        let has_tools = !request.tools.is_empty();
        GenerateRequest {
            contents,
            options: GenerateOptions {
                system_instruction: (!system.is_empty())
                    .then_some(SystemInstruction { parts: system }),
                tools: if has_tools {
                    vec![Tool {
                        function_declarations: request
                            .tools
                            .iter()
                            .map(Declaration::from)
                            .collect(),
                    }]
                } else {
                    Vec::new()
                },
                tool_config: if has_tools {
                    ToolConfig::from_choice(&request.tool_choice)
                } else {
                    None
                },
                generation_config: GenerationConfig::from_request(request),
            },
        }
    }
}

impl GenerateRequest<'_> {
    /// The body as compact JSON, byte for byte as `serde_json::to_string(self)` writes it:
    /// the contents' text parts field by field, their text through the protocol's string
    /// writer (eight bytes at a time, where serde_json escapes a byte at a time: a long
    /// history's text was most of the body's cost), the other parts and the rest by serde.
    pub(crate) fn to_json(&self) -> Result<String, serde_json::Error> {
        let text: usize = self
            .contents
            .iter()
            .flat_map(|content| &content.parts)
            .map(Part::json_size)
            .sum();
        let mut out = String::with_capacity(512 + text);
        out.push_str("{\"contents\":");
        protocol::push_json_list(&mut out, &self.contents, |out, content| {
            out.push_str("{\"role\":");
            protocol::push_json_string(out, content.role)?;
            out.push_str(",\"parts\":");
            protocol::push_json_list(out, &content.parts, |out, part| part.write_json(out))?;
            out.push('}');
            Ok(())
        })?;
        protocol::push_json_members(&mut out, &self.options)?;
        Ok(out)
    }
}

/// The name of the call `call_id` in an earlier assistant turn (a tool result without a name).
fn call_name<'a>(messages: &'a [ModelMessage], call_id: &str) -> Option<&'a str> {
    messages.iter().find_map(|message| match message {
        ModelMessage::Assistant { tool_calls, .. } => tool_calls
            .iter()
            .find(|call| call.id == call_id)
            .map(|call| call.name.as_str()),
        _ => None,
    })
}

/// `gemini-3…` (and `models/gemini-3…`): the family that validates thought signatures and takes
/// `thinkingLevel`.
fn is_gemini_3(model: &str) -> bool {
    let model = model.strip_prefix("models/").unwrap_or(model);
    model.starts_with("gemini-3-") || model.starts_with("gemini-3.")
}

/// The part of a reasoning block Gemini made and signed (`None` for any other).
fn thought_part(reasoning: &Reasoning) -> Option<Part<'_>> {
    if !reasoning.is_from(REASONING_PREFIX) {
        return None;
    }
    let signature = reasoning.encrypted.as_deref().filter(|s| !s.is_empty())?;
    let text = reasoning.summary.first().map_or("", String::as_str);
    Some(Part {
        data: PartData::Text(text),
        thought: true,
        thought_signature: Some(signature),
    })
}

fn model_parts<'a>(text: Option<&'a str>, calls: &'a [ToolCall], gemini_3: bool) -> Vec<Part<'a>> {
    let mut parts = Vec::with_capacity(calls.len() + 1);
    if let Some(text) = text.filter(|text| !text.is_empty()) {
        parts.push(Part::new(PartData::Text(text)));
    }
    for (position, call) in calls.iter().enumerate() {
        let signature = call.thought_signature.as_deref().or_else(|| {
            // Only the first call of a step carries a signature (parallel calls share it).
            (gemini_3 && position == 0).then_some(SKIP_SIGNATURE)
        });
        parts.push(Part {
            data: PartData::FunctionCall(FunctionCall {
                name: &call.name,
                args: Args::from(call.arguments.as_str()),
            }),
            thought: false,
            thought_signature: signature,
        });
    }
    parts
}

#[derive(Debug, Serialize)]
struct Content<'a> {
    role: &'static str,
    parts: Vec<Part<'a>>,
}

#[derive(Debug, Serialize)]
struct SystemInstruction<'a> {
    parts: Vec<Part<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(flatten)]
    data: PartData<'a>,
    /// Marks a thought (summary) part.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    thought: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: Option<&'a str>,
}

impl<'a> Part<'a> {
    fn new(data: PartData<'a>) -> Self {
        Part {
            data,
            thought: false,
            thought_signature: None,
        }
    }

    /// About the part's JSON length.
    fn json_size(&self) -> usize {
        match self.data {
            PartData::Text(text) => 48 + text.len(),
            _ => 256,
        }
    }

    /// The part as serde writes it (its data's field, then its marks): a text part field by
    /// field, any other by serde.
    fn write_json(&self, out: &mut String) -> Result<(), serde_json::Error> {
        let PartData::Text(text) = self.data else {
            return protocol::push_json(out, self);
        };
        out.push_str("{\"text\":");
        protocol::push_json_string(out, text)?;
        if self.thought {
            out.push_str(",\"thought\":true");
        }
        if let Some(signature) = self.thought_signature {
            out.push_str(",\"thoughtSignature\":");
            protocol::push_json_string(out, signature)?;
        }
        out.push('}');
        Ok(())
    }
}

/// The one data field of a part (`{"text": …}`, `{"functionCall": …}`…).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
enum PartData<'a> {
    Text(&'a str),
    InlineData(Blob<'a>),
    FileData(FileData<'a>),
    FunctionCall(FunctionCall<'a>),
    FunctionResponse(FunctionResponse<'a>),
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Blob<'a> {
    mime_type: &'a str,
    data: &'a str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FileData<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'a str>,
    file_uri: &'a str,
}

#[derive(Debug, Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    args: Args<'a>,
}

/// A call's arguments: the model's JSON text as it was (no re-ordering or re-formatting), `{}`
/// for none. Text that is not JSON goes as a string, which Gemini refuses with a 400 that names
/// the part: better than silently sending different arguments.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Args<'a> {
    Json(&'a RawValue),
    Empty(serde_json::Map<String, serde_json::Value>),
    Text(&'a str),
}

impl<'a> From<&'a str> for Args<'a> {
    fn from(text: &'a str) -> Self {
        if text.trim().is_empty() {
            return Args::Empty(serde_json::Map::new());
        }
        match serde_json::from_str::<&RawValue>(text) {
            Ok(raw) => Args::Json(raw),
            Err(_) => Args::Text(text),
        }
    }
}

#[derive(Debug, Serialize)]
struct FunctionResponse<'a> {
    name: &'a str,
    response: ToolResult<'a>,
}

#[derive(Debug, Serialize)]
struct ToolResult<'a> {
    result: ResultValue<'a>,
}

/// A tool's output: its JSON when it is a JSON document, else its text.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ResultValue<'a> {
    Json(&'a RawValue),
    Text(&'a str),
}

impl<'a> From<&'a str> for ResultValue<'a> {
    fn from(text: &'a str) -> Self {
        match serde_json::from_str::<&RawValue>(text) {
            Ok(raw) => ResultValue::Json(raw),
            Err(_) => ResultValue::Text(text),
        }
    }
}

fn user_part(part: &ContentPart) -> Part<'_> {
    Part::new(match part {
        ContentPart::Text { text } => PartData::Text(text),
        ContentPart::ImageUrl { url, .. } => media(url, None),
        ContentPart::File {
            filename,
            file_data,
            file_url,
        } => match (file_data.as_deref(), file_url.as_deref()) {
            (Some(data), _) if data.starts_with("data:") => media(data, filename.as_deref()),
            // Bare base64: the type can only come from the file name.
            (Some(data), _) => PartData::InlineData(Blob {
                mime_type: filename
                    .as_deref()
                    .and_then(guess_mime)
                    .unwrap_or("application/octet-stream"),
                data,
            }),
            (None, Some(url)) => media(url, filename.as_deref()),
            (None, None) => PartData::Text(""),
        },
    })
}

/// Whether Gemini reads inline data of this type: images, audio, video, text and PDF.
fn readable(mime_type: &str) -> bool {
    ["image/", "audio/", "video/", "text/"]
        .iter()
        .any(|prefix| mime_type.starts_with(prefix))
        || mime_type == "application/pdf"
}

/// What Gemini cannot take, found before the turn is sent: inline data of a type it does not
/// read, or whose type cannot be told (bare base64 without a file name it can come from).
pub(crate) fn check(request: &ModelRequest) -> Result<(), Unsupported> {
    if let Some(n) = request.logprobs {
        let param = if n > 0 { "top_logprobs" } else { "include" };
        return Err(Unsupported::new(
            param,
            "agentd does not read Gemini's logprobs yet: leave out top_logprobs and message.output_text.logprobs",
        ));
    }
    for part in request.user_parts() {
        let (mime_type, what) = match part {
            ContentPart::ImageUrl { url, .. } => match split_data_url(url) {
                Some((mime_type, _)) => (mime_type, "input_image".to_owned()),
                None => continue,
            },
            ContentPart::File {
                filename,
                file_data: Some(data),
                ..
            } => {
                let name = filename.as_deref().unwrap_or("(unnamed)");
                let mime_type = match split_data_url(data) {
                    Some((mime_type, _)) => mime_type,
                    None => filename
                        .as_deref()
                        .and_then(guess_mime)
                        .unwrap_or("of unknown type"),
                };
                (mime_type, format!("input_file \"{name}\""))
            }
            _ => continue,
        };
        if !readable(mime_type) {
            return Err(Unsupported::new(
                "input",
                format!(
                    "Gemini models read images, audio, video, text and PDF files; {what} is \
                     {mime_type} (give file_data as a data: URL with its media type)"
                ),
            ));
        }
    }
    Ok(())
}

/// A `data:` URL inline, anything else by reference.
fn media<'a>(url: &'a str, filename: Option<&'a str>) -> PartData<'a> {
    if let Some((mime_type, data)) = split_data_url(url) {
        return PartData::InlineData(Blob { mime_type, data });
    }
    PartData::FileData(FileData {
        mime_type: guess_mime(url).or_else(|| filename.and_then(guess_mime)),
        file_uri: url,
    })
}

/// `data:image/png;base64,AAAA` as (`image/png`, `AAAA`). A data URL that is not base64 is not
/// split (it then goes as a `fileData` URI, which Gemini refuses with a clear 400).
pub(crate) fn split_data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let mime_type = meta.strip_suffix(";base64")?;
    // Parameters such as `;charset=…` sit between the type and `;base64`.
    let mime_type = mime_type.split(';').next().unwrap_or_default();
    let mime_type = if mime_type.is_empty() {
        "application/octet-stream"
    } else {
        mime_type
    };
    Some((mime_type, data))
}

/// The MIME type of the media types Gemini reads, from a URL's or file name's extension.
pub(crate) fn guess_mime(name: &str) -> Option<&'static str> {
    let path = name.split(['?', '#']).next().unwrap_or_default();
    let (_, extension) = path.rsplit_once('.')?;
    let mime = match extension.to_ascii_lowercase().as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "gif" => "image/gif",
        "heic" => "image/heic",
        "heif" => "image/heif",
        "pdf" => "application/pdf",
        "txt" => "text/plain",
        "md" => "text/markdown",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "mp3" => "audio/mp3",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        _ => return None,
    };
    Some(mime)
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Tool<'a> {
    function_declarations: Vec<Declaration<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Declaration<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    /// Absent for a tool without parameters (a `null` schema).
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters_json_schema: Option<&'a Parameters>,
}

impl<'a> From<&'a ToolSpec> for Declaration<'a> {
    fn from(tool: &'a ToolSpec) -> Self {
        Declaration {
            name: &tool.name,
            description: tool.description.as_deref(),
            parameters_json_schema: Some(&tool.parameters).filter(|schema| !schema.is_null()),
        }
    }
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig<'a> {
    function_calling_config: FunctionCallingConfig<'a>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCallingConfig<'a> {
    mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    allowed_function_names: Option<[&'a str; 1]>,
}

impl<'a> ToolConfig<'a> {
    /// `None` for auto, Gemini's default.
    fn from_choice(choice: &'a ModelToolChoice) -> Option<Self> {
        let (mode, allowed_function_names) = match choice {
            ModelToolChoice::Auto => return None,
            ModelToolChoice::None => ("NONE", None),
            ModelToolChoice::Required => ("ANY", None),
            ModelToolChoice::Function(name) => ("ANY", Some([name.as_str()])),
        };
        Some(ToolConfig {
            function_calling_config: FunctionCallingConfig {
                mode,
                allowed_function_names,
            },
        })
    }
}

#[derive(Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<ThinkingConfig>,
}

impl<'a> GenerationConfig<'a> {
    /// `None` when nothing is set, so the field is left out.
    fn from_request(request: &'a ModelRequest) -> Option<Self> {
        let schema = match &request.output_format {
            Some(OutputFormat::JsonSchema(format)) => Some(&format.schema),
            _ => None,
        };
        let config = GenerationConfig {
            temperature: request.temperature,
            top_p: request.top_p,
            max_output_tokens: request.max_output_tokens,
            response_mime_type: request.output_format.as_ref().map(|_| "application/json"),
            response_json_schema: schema,
            thinking_config: request
                .reasoning_effort
                .as_deref()
                .and_then(|effort| thinking_config(&request.model, effort)),
        };
        (config != GenerationConfig::default()).then_some(config)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThinkingConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_budget: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_level: Option<&'static str>,
}

/// `reasoning.effort` as a `thinkingConfig`, only where every model of the family accepts it:
/// - `gemini-3*`: `thinkingLevel` `low` (for `minimal`/`low`) or `high` (for `medium`/`high`/
///   `xhigh`); `minimal` and `medium` exist on Flash only, so they are rounded to what Pro takes.
/// - `gemini-2.5*`: a `thinkingBudget` inside every 2.5 model's range (Pro 128–32768, Flash
///   0–24576, Flash-Lite 512–24576): `low` 1024, `medium` 8192, `high`/`xhigh` 24576. `none` and
///   `minimal` send nothing (Pro cannot turn thinking off), leaving the model's dynamic default.
/// - anything else (older or non-thinking models, unknown values): nothing, as a budget there is
///   a 400.
pub(crate) fn thinking_config(model: &str, effort: &str) -> Option<ThinkingConfig> {
    let bare = model.strip_prefix("models/").unwrap_or(model);
    let effort = effort.trim().to_ascii_lowercase();
    if is_gemini_3(bare) {
        let level = match effort.as_str() {
            "minimal" | "low" => "low",
            "medium" | "high" | "xhigh" => "high",
            _ => return None,
        };
        return Some(ThinkingConfig {
            thinking_budget: None,
            thinking_level: Some(level),
        });
    }
    if bare.starts_with("gemini-2.5-") {
        let budget = match effort.as_str() {
            "low" => 1024,
            "medium" => 8192,
            "high" | "xhigh" => 24576,
            _ => return None,
        };
        return Some(ThinkingConfig {
            thinking_budget: Some(budget),
            thinking_level: None,
        });
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Response

/// One `GenerateContentResponse`: a whole response, or one chunk of a stream (same shape).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateResponse {
    #[serde(default)]
    pub(crate) candidates: Vec<Candidate>,
    #[serde(default)]
    pub(crate) usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    pub(crate) prompt_feedback: Option<PromptFeedback>,
    /// An error reported inside a 200 stream.
    #[serde(default)]
    pub(crate) error: Option<ErrorStatus>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Candidate {
    #[serde(default)]
    pub(crate) index: Option<u32>,
    #[serde(default)]
    pub(crate) content: Option<CandidateContent>,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CandidateContent {
    #[serde(default)]
    pub(crate) parts: Vec<ResponsePart>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResponsePart {
    #[serde(default)]
    pub(crate) text: Option<String>,
    /// A thought summary (only sent with `includeThoughts`, which this adapter never asks for).
    #[serde(default)]
    pub(crate) thought: Option<bool>,
    #[serde(default)]
    pub(crate) function_call: Option<ResponseFunctionCall>,
    #[serde(default)]
    pub(crate) thought_signature: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ResponseFunctionCall {
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) name: Option<String>,
    /// Kept as the JSON text Gemini sent.
    #[serde(default)]
    pub(crate) args: Option<Box<RawValue>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UsageMetadata {
    /// Includes the cached tokens.
    #[serde(default)]
    pub(crate) prompt_token_count: u64,
    #[serde(default)]
    pub(crate) tool_use_prompt_token_count: u64,
    /// Excludes the thinking tokens.
    #[serde(default)]
    pub(crate) candidates_token_count: u64,
    #[serde(default)]
    pub(crate) cached_content_token_count: u64,
    #[serde(default)]
    pub(crate) thoughts_token_count: u64,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptFeedback {
    #[serde(default)]
    pub(crate) block_reason: Option<String>,
}

/// Google's error status: `{"error": {"code": 429, "message": "…", "status": "RESOURCE_EXHAUSTED"}}`.
#[derive(Debug, Deserialize)]
pub(crate) struct ErrorStatus {
    #[serde(default)]
    pub(crate) code: Option<u16>,
    #[serde(default)]
    pub(crate) message: Option<String>,
    #[serde(default)]
    pub(crate) status: Option<String>,
}

impl ErrorStatus {
    /// `STATUS: message`, or whichever of the two there is.
    pub(crate) fn describe(&self) -> Option<String> {
        let message = self
            .message
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty());
        let status = self
            .status
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        match (status, message) {
            (Some(status), Some(message)) => Some(format!("{status}: {message}")),
            (None, Some(text)) | (Some(text), None) => Some(text.to_owned()),
            (None, None) => None,
        }
    }
}

/// The error envelope of an HTTP error body (a JSON array of them from the non-SSE stream).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum ErrorBody {
    One { error: ErrorStatus },
    Many(Vec<ErrorBody>),
}

impl ErrorBody {
    pub(crate) fn status(&self) -> Option<&ErrorStatus> {
        match self {
            ErrorBody::One { error } => Some(error),
            ErrorBody::Many(many) => many.first().and_then(ErrorBody::status),
        }
    }
}

#[cfg(test)]
mod tests {
    use engine::model::ModelRequest;
    use serde_json::json;

    use super::*;
    use engine::model::JsonSchemaFormat;

    /// The body as the client sends it (`to_json`), checked to be serde's bytes.
    fn body(request: &ModelRequest) -> serde_json::Value {
        let generate = GenerateRequest::from(request);
        crate::wire_texts::checked(&generate, generate.to_json())
    }

    fn user(text: &str) -> ModelMessage {
        ModelMessage::User {
            content: vec![ContentPart::Text { text: text.into() }],
        }
    }

    fn tool() -> ToolSpec {
        ToolSpec {
            name: "f".into(),
            description: None,
            parameters: json!({"type": "object", "additionalProperties": false}).into(),
            strict: true,
        }
    }

    #[test]
    fn gemini_thoughts_go_back_first_in_their_turn_and_others_are_dropped() {
        let block = |id: &str, summary: &str, signature: Option<&str>| {
            ModelMessage::Reasoning(Reasoning {
                id: Some(id.into()),
                summary: vec![summary.into()],
                text: None,
                encrypted: signature.map(str::to_owned),
            })
        };
        let request = ModelRequest {
            model: "gemini-2.5-flash".into(),
            messages: vec![
                user("Hi"),
                block("thought_1", "Greeting back.", Some("c2lnMQ==")),
                block("thought_2", "unsigned", None),
                block("rs_1", "openai's", Some("gAAA")),
                ModelMessage::Assistant {
                    content: Some("Hello!".into()),
                    tool_calls: Vec::new(),
                },
            ],
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&request)["contents"][1],
            json!({"role": "model", "parts": [
                {"text": "Greeting back.", "thought": true, "thoughtSignature": "c2lnMQ=="},
                {"text": "Hello!"}
            ]})
        );
    }

    /// Every content and part form the writer takes apart, each text in every form (escapes,
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
                ModelMessage::User { content: vec![] },
                ModelMessage::Reasoning(Reasoning {
                    id: Some("thought_1".into()),
                    summary: vec![long.clone()],
                    text: None,
                    encrypted: Some(format!("sig {text}")),
                }),
                ModelMessage::Assistant {
                    content: Some(long.clone()),
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "lookup".into(),
                        arguments: format!("{{\"q\":{}}}", json!(text)),
                        thought_signature: Some(format!("sig {text}")),
                    }],
                },
                ModelMessage::Tool {
                    call_id: "call_1".into(),
                    name: Some("lookup".into()),
                    content: long.clone(),
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
            ];
            for model in ["gemini-2.5-flash", "gemini-3-pro-preview"] {
                body(&ModelRequest {
                    model: model.into(),
                    messages: messages.clone(),
                    ..ModelRequest::default()
                });
                body(&ModelRequest {
                    model: model.into(),
                    messages: messages.clone(),
                    tools: vec![tool()],
                    temperature: Some(0.5),
                    max_output_tokens: Some(100),
                    reasoning_effort: Some("high".into()),
                    ..ModelRequest::default()
                });
            }
        }
        body(&ModelRequest::default());
    }

    #[test]
    fn check_refuses_inline_data_gemini_cannot_read() {
        let with = |part: ContentPart| ModelRequest {
            model: "gemini-2.5-flash".into(),
            messages: vec![ModelMessage::User {
                content: vec![part],
            }],
            ..ModelRequest::default()
        };
        let file = |name: Option<&str>, data: &str| ContentPart::File {
            filename: name.map(str::to_owned),
            file_data: Some(data.into()),
            file_url: None,
        };
        for part in [
            file(Some("a.pdf"), "data:application/pdf;base64,JVBER"),
            file(Some("a.csv"), "YSxi"),
            file(None, "data:audio/wav;base64,UklGR"),
            ContentPart::ImageUrl {
                url: "data:image/png;base64,iVBOR".into(),
                detail: None,
            },
        ] {
            assert_eq!(check(&with(part.clone())), Ok(()), "{part:?}");
        }
        for (part, want) in [
            (
                file(Some("a.zip"), "data:application/zip;base64,UEsD"),
                "input_file \"a.zip\" is application/zip",
            ),
            (
                file(None, "UEsD"),
                "input_file \"(unnamed)\" is of unknown type",
            ),
        ] {
            let err = check(&with(part));
            assert!(
                err.as_ref()
                    .is_err_and(|e| e.param == "input" && e.message.contains(want)),
                "{err:?}"
            );
        }
    }

    #[test]
    fn minimal_request_has_only_contents() {
        let request = ModelRequest {
            model: "gemini-2.5-flash".into(),
            messages: vec![user("Hi")],
            tool_choice: ModelToolChoice::Required,
            parallel_tool_calls: Some(false),
            prompt_cache_key: Some("k".into()),
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&request),
            json!({"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]})
        );
    }

    #[test]
    fn a_conversation_with_calls_and_results() {
        let request = ModelRequest {
            model: "gemini-2.5-pro".into(),
            messages: vec![
                ModelMessage::System {
                    content: "Be brief.".into(),
                },
                user("Weather?"),
                ModelMessage::Assistant {
                    content: Some("Checking.".into()),
                    tool_calls: vec![
                        ToolCall {
                            id: "call_1".into(),
                            name: "weather".into(),
                            arguments: r#"{"city": "Paris"}"#.into(),
                            thought_signature: Some("sig-1".into()),
                        },
                        ToolCall {
                            id: "call_2".into(),
                            name: "time".into(),
                            arguments: String::new(),
                            thought_signature: None,
                        },
                    ],
                },
                ModelMessage::Tool {
                    call_id: "call_1".into(),
                    name: Some("weather".into()),
                    content: r#"{"temp": 21}"#.into(),
                },
                ModelMessage::Tool {
                    call_id: "call_2".into(),
                    name: None,
                    content: "noon".into(),
                },
                ModelMessage::System {
                    content: "Use Celsius.".into(),
                },
                user("Thanks"),
            ],
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&request),
            json!({
                "systemInstruction": {"parts": [{"text": "Be brief."}, {"text": "Use Celsius."}]},
                "contents": [
                    {"role": "user", "parts": [{"text": "Weather?"}]},
                    {"role": "model", "parts": [
                        {"text": "Checking."},
                        {"functionCall": {"name": "weather", "args": {"city": "Paris"}}, "thoughtSignature": "sig-1"},
                        {"functionCall": {"name": "time", "args": {}}}
                    ]},
                    {"role": "user", "parts": [
                        {"functionResponse": {"name": "weather", "response": {"result": {"temp": 21}}}},
                        {"functionResponse": {"name": "time", "response": {"result": "noon"}}},
                        {"text": "Thanks"}
                    ]}
                ]
            })
        );
    }

    #[test]
    fn gemini_3_replays_get_the_documented_sentinel_on_the_first_call_only() {
        let calls = |signature: Option<&str>| ModelMessage::Assistant {
            content: None,
            tool_calls: ["a", "b"]
                .map(|name| ToolCall {
                    id: name.into(),
                    name: name.into(),
                    arguments: "{}".into(),
                    thought_signature: (name == "a")
                        .then(|| signature.map(str::to_owned))
                        .flatten(),
                })
                .to_vec(),
        };
        for (model, signature, want) in [
            ("gemini-3-pro-preview", None, Some(SKIP_SIGNATURE)),
            ("models/gemini-3.1-flash", None, Some(SKIP_SIGNATURE)),
            ("gemini-3-pro-preview", Some("real"), Some("real")),
            ("gemini-2.5-flash", None, None),
        ] {
            let request = ModelRequest {
                model: model.into(),
                messages: vec![user("go"), calls(signature)],
                ..ModelRequest::default()
            };
            let body = body(&request);
            let parts = &body["contents"][1]["parts"];
            assert_eq!(parts[0]["thoughtSignature"].as_str(), want, "{model}");
            assert!(parts[1].get("thoughtSignature").is_none(), "{model}");
        }
    }

    #[test]
    fn images_and_files() {
        let request = ModelRequest {
            messages: vec![ModelMessage::User {
                content: vec![
                    ContentPart::ImageUrl {
                        url: "data:image/png;base64,iVBORw0K".into(),
                        detail: Some("high".into()),
                    },
                    ContentPart::ImageUrl {
                        url: "https://example.com/cat.JPG?size=2".into(),
                        detail: None,
                    },
                    ContentPart::ImageUrl {
                        url: "https://example.com/render".into(),
                        detail: None,
                    },
                    ContentPart::File {
                        filename: Some("report.pdf".into()),
                        file_data: Some("JVBERi0x".into()),
                        file_url: None,
                    },
                    ContentPart::File {
                        filename: None,
                        file_data: Some("data:application/pdf;base64,JVBERi0y".into()),
                        file_url: None,
                    },
                    ContentPart::File {
                        filename: Some("notes.txt".into()),
                        file_data: None,
                        file_url: Some("https://files.example/abc".into()),
                    },
                ],
            }],
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&request)["contents"][0]["parts"],
            json!([
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0K"}},
                {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/cat.JPG?size=2"}},
                {"fileData": {"fileUri": "https://example.com/render"}},
                {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0x"}},
                {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0y"}},
                {"fileData": {"mimeType": "text/plain", "fileUri": "https://files.example/abc"}}
            ])
        );
    }

    #[test]
    fn data_urls() {
        assert_eq!(
            split_data_url("data:image/webp;base64,AAA"),
            Some(("image/webp", "AAA"))
        );
        assert_eq!(
            split_data_url("data:text/plain;charset=utf-8;base64,aGk="),
            Some(("text/plain", "aGk="))
        );
        assert_eq!(
            split_data_url("data:;base64,AAA"),
            Some(("application/octet-stream", "AAA"))
        );
        assert_eq!(split_data_url("data:text/plain,hello"), None);
        assert_eq!(split_data_url("https://x/y.png"), None);
    }

    #[test]
    fn tool_choice_and_declarations() {
        for (choice, want) in [
            (ModelToolChoice::Auto, None),
            (
                ModelToolChoice::None,
                Some(json!({"functionCallingConfig": {"mode": "NONE"}})),
            ),
            (
                ModelToolChoice::Required,
                Some(json!({"functionCallingConfig": {"mode": "ANY"}})),
            ),
            (
                ModelToolChoice::Function("f".into()),
                Some(
                    json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}}),
                ),
            ),
        ] {
            let request = ModelRequest {
                messages: vec![user("x")],
                tools: vec![tool()],
                tool_choice: choice,
                ..ModelRequest::default()
            };
            let body = body(&request);
            assert_eq!(body.get("toolConfig").cloned(), want);
            assert_eq!(
                body["tools"],
                json!([{"functionDeclarations": [{
                    "name": "f",
                    "parametersJsonSchema": {"type": "object", "additionalProperties": false}
                }]}])
            );
        }
    }

    #[test]
    fn generation_config_and_structured_output() {
        let request = ModelRequest {
            model: "gemini-2.5-flash".into(),
            messages: vec![user("x")],
            temperature: Some(0.5),
            top_p: Some(0.9),
            max_output_tokens: Some(100),
            output_format: Some(OutputFormat::JsonSchema(JsonSchemaFormat {
                name: "out".into(),
                schema: json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
                description: None,
                strict: Some(true),
            })),
            reasoning_effort: Some("medium".into()),
            ..ModelRequest::default()
        };
        assert_eq!(
            body(&request)["generationConfig"],
            json!({
                "temperature": 0.5,
                "topP": 0.9,
                "maxOutputTokens": 100,
                "responseMimeType": "application/json",
                "responseJsonSchema": {"type": "object", "properties": {"a": {"type": "integer"}}},
                "thinkingConfig": {"thinkingBudget": 8192}
            })
        );
    }

    #[test]
    fn reasoning_effort_only_where_it_is_safe() {
        let level = |level| {
            Some(ThinkingConfig {
                thinking_budget: None,
                thinking_level: Some(level),
            })
        };
        let budget = |budget| {
            Some(ThinkingConfig {
                thinking_budget: Some(budget),
                thinking_level: None,
            })
        };
        assert_eq!(
            thinking_config("gemini-3-pro-preview", "minimal"),
            level("low")
        );
        assert_eq!(
            thinking_config("gemini-3-flash-preview", "medium"),
            level("high")
        );
        assert_eq!(thinking_config("gemini-3.1-pro", "HIGH"), level("high"));
        assert_eq!(
            thinking_config("gemini-2.5-flash-lite", "low"),
            budget(1024)
        );
        assert_eq!(
            thinking_config("models/gemini-2.5-pro", "high"),
            budget(24576)
        );
        assert_eq!(thinking_config("gemini-2.5-pro", "none"), None);
        assert_eq!(thinking_config("gemini-2.0-flash", "high"), None);
        assert_eq!(thinking_config("gemma-3-27b-it", "high"), None);
        assert_eq!(thinking_config("gemini-3-pro-preview", "extreme"), None);
        let request = ModelRequest {
            model: "gemini-2.0-flash".into(),
            messages: vec![user("x")],
            reasoning_effort: Some("high".into()),
            ..ModelRequest::default()
        };
        assert!(body(&request).get("generationConfig").is_none());
    }

    #[test]
    fn odd_arguments_and_results() {
        let request = ModelRequest {
            messages: vec![
                ModelMessage::Assistant {
                    content: None,
                    tool_calls: vec![ToolCall {
                        id: "c".into(),
                        name: "f".into(),
                        arguments: "not json".into(),
                        thought_signature: None,
                    }],
                },
                ModelMessage::Tool {
                    call_id: "c".into(),
                    name: None,
                    content: "42".into(),
                },
                ModelMessage::User { content: vec![] },
            ],
            ..ModelRequest::default()
        };
        let body = body(&request);
        assert_eq!(
            body["contents"][0]["parts"][0]["functionCall"]["args"],
            json!("not json")
        );
        assert_eq!(
            body["contents"][1]["parts"][0]["functionResponse"],
            json!({"name": "f", "response": {"result": 42}})
        );
        assert_eq!(
            body["contents"][1]["parts"].as_array().map(Vec::len),
            Some(1)
        );
    }

    #[test]
    fn error_envelopes() {
        let one: Result<ErrorBody, _> = serde_json::from_str(
            r#"{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED"}}"#,
        );
        assert_eq!(
            one.ok()
                .as_ref()
                .and_then(ErrorBody::status)
                .and_then(ErrorStatus::describe)
                .as_deref(),
            Some("RESOURCE_EXHAUSTED: Quota exceeded.")
        );
        let many: Result<ErrorBody, _> =
            serde_json::from_str(r#"[{"error":{"code":400,"message":"Bad."}}]"#);
        assert_eq!(
            many.ok()
                .as_ref()
                .and_then(ErrorBody::status)
                .and_then(ErrorStatus::describe)
                .as_deref(),
            Some("Bad.")
        );
    }
}
