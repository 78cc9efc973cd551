//! The response object at the start of a run: the request echoed (OpenAI's echo fields
//! included, tool secrets removed), status `in_progress` or `queued`.

use protocol::request::{CreateRequest, ToolChoice, ToolChoiceMode, Truncation};
use protocol::response::{Response, ResponseStatus};
use serde_json::json;

use crate::ids::new_id;
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
        temperature: request.temperature,
        top_p: request.top_p,
        tool_choice: request
            .tool_choice
            .clone()
            .unwrap_or(ToolChoice::Mode(ToolChoiceMode::Auto)),
        tools: tools::redact(request.tools.as_deref().unwrap_or_default()),
        parallel_tool_calls: request.parallel_tool_calls.unwrap_or(true),
        truncation: request.truncation.unwrap_or(Truncation::Disabled),
        background,
        store: request.store.unwrap_or(true),
        service_tier: request.service_tier,
        text: request
            .text
            .clone()
            .unwrap_or_else(|| json!({"format": {"type": "text"}})),
        metadata: request.metadata.clone().unwrap_or_default(),
        previous_response_id: request.previous_response_id.clone(),
        prompt_cache_key: request.prompt_cache_key.clone(),
        reasoning: request.reasoning.clone(),
        effort: request.effort.clone(),
        preset: request.preset.clone(),
        user: request.user.clone(),
        safety_identifier: request.safety_identifier.clone(),
        frequency_penalty: 0.0,
        presence_penalty: 0.0,
        top_logprobs: 0,
    }
}
