//! The optional request fields OpenAI's and Perplexity's SDKs send, and what agentd does with
//! each (spec decision 9: every accepted field is applied, refused here with a 400 naming it, or
//! documented as having no effect for a stated reason; none is silently dropped):
//!
//! | field | what agentd does |
//! |---|---|
//! | `text.format` | applied like `response_format` (both given: they must agree) |
//! | `text.verbosity` | sent to upstreams that take it (OpenAI wires); no effect on others |
//! | `include: message.output_text.logprobs` | logprobs on output text, where the upstream returns them |
//! | `include: reasoning.encrypted_content` | no effect: reasoning stays in agentd's transcript |
//! | `top_logprobs` | applied where the upstream returns logprobs (0..=20) |
//! | `truncation` | `disabled` is what agentd does; `auto` is refused |
//! | `service_tier`, `user`, `safety_identifier` | sent to OpenAI-wire upstreams, echoed |
//! | `reasoning.summary` | sent to the Responses wire; no effect on others |
//! | `language_preference` | the model is asked to answer in that language |
//! | `step_budget_reminder` | each step tells the model how many steps are left |
//! | `max_tool_calls` | caps tool calls of every kind over the run (at least 1) |
//! | `prompt_cache_retention` | sent to OpenAI-wire upstreams; others cache as they do |
//! | `profile`, `skills`, `prompt`, `context_management` | refused: not supported by this server |
//! | `conversation` | an OpenAI conversation: its items first, the run's appended (not with `previous_response_id`) |
//! | `prompt_cache_key`, `parallel_tool_calls`, `metadata`, `stream_options` | applied |

use crate::request::{
    CreateRequest, JsonSchemaFormat, ResponseFormat, TextFormat, TextJsonSchema, Truncation,
};
use crate::strict::RequestError;

/// Most alternatives `top_logprobs` may ask for.
pub const MAX_TOP_LOGPROBS: u32 = 20;

/// `include` value: logprobs on output text.
pub const INCLUDE_LOGPROBS: &str = "message.output_text.logprobs";
/// `include` value: encrypted reasoning items (no effect: reasoning stays server-side).
pub const INCLUDE_ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// The structured output a request asks for, from `text.format` or `response_format`.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputFormat {
    /// Any JSON object.
    JsonObject,
    /// JSON matching a schema.
    JsonSchema(JsonSchemaFormat),
}

type Check = Result<(), RequestError>;

fn fail(param: impl Into<String>, message: impl Into<String>) -> Check {
    Err(RequestError::new(param, message))
}

impl CreateRequest {
    /// Checks the optional fields of the table above.
    pub(crate) fn check_options(&self) -> Check {
        self.check_formats_agree()?;
        if let Some(conversation) = &self.conversation {
            if self.previous_response_id.is_some() {
                return fail(
                    "conversation",
                    "conversation and previous_response_id cannot be used together: send one of them",
                );
            }
            if conversation.id().trim().is_empty() {
                return fail("conversation", "conversation must name a conversation id");
            }
        }
        if let Some(include) = &self.include {
            for (i, value) in include.iter().enumerate() {
                if value != INCLUDE_LOGPROBS && value != INCLUDE_ENCRYPTED_REASONING {
                    return fail(
                        format!("include[{i}]"),
                        format!(
                            "include value \"{value}\" is not supported (this server takes \"{INCLUDE_LOGPROBS}\" and \"{INCLUDE_ENCRYPTED_REASONING}\")"
                        ),
                    );
                }
            }
        }
        if let Some(n) = self.top_logprobs
            && n > MAX_TOP_LOGPROBS
        {
            return fail(
                "top_logprobs",
                format!("top_logprobs must be between 0 and {MAX_TOP_LOGPROBS}, got {n}"),
            );
        }
        if self.truncation == Some(Truncation::Auto) {
            return fail(
                "truncation",
                "truncation \"auto\" is not supported: agentd sends the whole conversation (\"disabled\"); compact a long conversation with POST /v1/responses/compact",
            );
        }
        if self.profile.is_some() {
            return fail("profile", "profiles are not supported by this server");
        }
        if self.context_management.is_some() {
            return fail(
                "context_management",
                "server-side context management is not supported: compact a long conversation with POST /v1/responses/compact and continue from its output",
            );
        }
        if self.prompt.is_some() {
            return fail(
                "prompt",
                "stored prompt templates are not supported by this server: send instructions and input instead",
            );
        }
        if self
            .skills
            .as_ref()
            .is_some_and(|skills| !skills.is_empty())
        {
            return fail("skills", "skills are not supported by this server yet");
        }
        if self.max_tool_calls == Some(0) {
            return fail(
                "max_tool_calls",
                "max_tool_calls must be at least 1 (to offer no tools, send tool_choice \"none\")",
            );
        }
        if let Some(language) = &self.language_preference
            && !(language.len() == 2 && language.chars().all(|c| c.is_ascii_lowercase()))
        {
            return fail(
                "language_preference",
                format!(
                    "language_preference must be an ISO 639-1 code (two lower-case letters, e.g. \"de\"), got \"{language}\""
                ),
            );
        }
        Ok(())
    }

    /// `text.format` and `response_format` name one structured output, or the request is
    /// refused: both given and different is ambiguous.
    fn check_formats_agree(&self) -> Check {
        let text_format = self.text.as_ref().and_then(|t| t.format.as_ref());
        let (Some(text_format), Some(response_format)) = (text_format, &self.response_format)
        else {
            return Ok(());
        };
        let agree = match (text_format, response_format.json_schema.as_ref()) {
            (TextFormat::JsonSchema(ours), Some(theirs)) => {
                ours.schema == theirs.schema
                    && theirs.name.as_ref().is_none_or(|name| *name == ours.name)
                    && theirs.strict.is_none_or(|s| ours.strict == Some(s))
            }
            _ => false,
        };
        if agree {
            Ok(())
        } else {
            fail(
                "text.format",
                "text.format and response_format ask for different output formats: send one of them",
            )
        }
    }

    /// The structured output asked for, if any (`text.format` of type `text` asks for none).
    pub fn output_format(&self) -> Option<OutputFormat> {
        match self.text.as_ref().and_then(|t| t.format.as_ref()) {
            Some(TextFormat::JsonObject(_)) => return Some(OutputFormat::JsonObject),
            Some(TextFormat::JsonSchema(format)) => {
                return Some(OutputFormat::JsonSchema(from_text_format(format)));
            }
            Some(TextFormat::Text(_)) | None => {}
        }
        self.response_format
            .as_ref()
            .and_then(|ResponseFormat { json_schema, .. }| json_schema.clone())
            .map(OutputFormat::JsonSchema)
    }

    /// The param the output format came from, for errors about its schema.
    pub fn output_format_param(&self) -> &'static str {
        match self.text.as_ref().and_then(|t| t.format.as_ref()) {
            Some(TextFormat::JsonSchema(_)) => "text.format.schema",
            _ => "response_format.json_schema.schema",
        }
    }

    /// Whether output text should carry logprobs.
    pub fn wants_logprobs(&self) -> bool {
        self.include
            .as_ref()
            .is_some_and(|include| include.iter().any(|v| v == INCLUDE_LOGPROBS))
            || self.top_logprobs.is_some_and(|n| n > 0)
    }
}

fn from_text_format(format: &TextJsonSchema) -> JsonSchemaFormat {
    JsonSchemaFormat {
        name: Some(format.name.clone()),
        schema: format.schema.clone(),
        description: format.description.clone(),
        strict: format.strict,
    }
}
