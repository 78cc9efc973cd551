//! The response object at the start of a run: the request echoed (OpenAI's echo fields
//! included, tool secrets removed), status `in_progress` or `queued`.

use protocol::options::OutputFormat;
use protocol::request::{
    ConversationObject, CreateRequest, EmptyFormat, TextConfig, TextFormat, TextJsonSchema,
    ToolChoice, ToolChoiceMode, Truncation,
};
use protocol::response::{Response, ResponseStatus};

use crate::ids::new_id;
use crate::request::DEFAULT_FORMAT_NAME;
use crate::tools;

/// The response object at the start of a run, echoing the request.
pub(crate) fn initial(
    request: &CreateRequest,
    model_id: &str,
    background: bool,
    created_at: i64,
) -> Response {
    Response {
        id: new_id("resp"),
        object: "response".to_owned(),
        created_at,
        completed_at: None,
        status: if background {
            ResponseStatus::Queued
        } else {
            ResponseStatus::InProgress
        },
        model: model_id.to_owned(),
        output: Vec::new(),
        usage: None,
        error: None,
        incomplete_details: None,
        instructions: request.instructions.clone(),
        max_output_tokens: request.effective_max_output_tokens(),
        max_tool_calls: request.max_tool_calls,
        max_steps: request.max_steps,
        temperature: request.temperature.unwrap_or(1.0),
        top_p: request.top_p.unwrap_or(1.0),
        tool_choice: request
            .tool_choice
            .clone()
            .unwrap_or(ToolChoice::Mode(ToolChoiceMode::Auto)),
        tools: tools::echo(request.tools.as_deref().unwrap_or_default()),
        parallel_tool_calls: request.parallel_tool_calls.unwrap_or(true),
        truncation: request.truncation.unwrap_or(Truncation::Disabled),
        background,
        store: request.store.unwrap_or(true),
        service_tier: request
            .service_tier
            .map_or("default", |tier| tier.as_str())
            .to_owned(),
        text: text_in_effect(request),
        metadata: request.metadata.clone().unwrap_or_default(),
        previous_response_id: request.previous_response_id.clone(),
        conversation: request.conversation.as_ref().map(|c| ConversationObject {
            id: c.id().to_owned(),
        }),
        prompt_cache_key: request.prompt_cache_key.clone(),
        prompt_cache_retention: request.prompt_cache_retention,
        reasoning: request.reasoning.clone(),
        effort: request.effort.clone(),
        preset: request.preset.clone(),
        user: request.user.clone(),
        safety_identifier: request.safety_identifier.clone(),
        frequency_penalty: 0.0,
        presence_penalty: 0.0,
        top_logprobs: request.top_logprobs.unwrap_or(0),
    }
}

/// `text` as applied: the request's, with the format in effect (`response_format` shows as its
/// `text.format` equivalent; plain text when nothing asks for structure).
fn text_in_effect(request: &CreateRequest) -> TextConfig {
    let format = match request.output_format() {
        Some(OutputFormat::JsonObject) => TextFormat::JsonObject(EmptyFormat {}),
        Some(OutputFormat::JsonSchema(format)) => TextFormat::JsonSchema(TextJsonSchema {
            name: format
                .name
                .unwrap_or_else(|| DEFAULT_FORMAT_NAME.to_owned()),
            schema: format.schema,
            description: format.description,
            strict: Some(format.strict.unwrap_or(false)),
        }),
        None => TextFormat::Text(EmptyFormat {}),
    };
    TextConfig {
        format: Some(format),
        verbosity: request.text.as_ref().and_then(|text| text.verbosity),
    }
}
