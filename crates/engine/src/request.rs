//! The model request of one step: the transcript as messages, the tools visible now, and the
//! request's own parameters (tool choice, sampling, budgets, structured output, reasoning).

use protocol::input::InputItem;
use protocol::request::{CreateRequest, ToolChoice, ToolChoiceMode};

use crate::model::{JsonSchemaFormat, ModelRequest, ModelToolChoice};
use crate::tools::Registry;
use crate::transcript;

/// The model request of one step. Tools are offered unless `tools_on` is false, the registry is
/// empty or `tool_choice` is `none`. `model` is left empty: each attempt of the models chain
/// sets its own.
pub fn build(
    request: &CreateRequest,
    registry: &Registry,
    transcript: &[InputItem],
    tools_on: bool,
    max_output_tokens: Option<u32>,
) -> ModelRequest {
    let tool_choice = tool_choice(request.tool_choice.as_ref());
    let tools_on = tools_on && !registry.is_empty() && tool_choice != ModelToolChoice::None;
    ModelRequest {
        model: String::new(),
        messages: transcript::to_model_messages(request.instructions.as_deref(), transcript),
        tools: if tools_on {
            registry.specs()
        } else {
            Vec::new()
        },
        tool_choice: if tools_on {
            tool_choice
        } else {
            ModelToolChoice::None
        },
        parallel_tool_calls: if tools_on {
            request.parallel_tool_calls
        } else {
            None
        },
        temperature: request.temperature,
        top_p: request.top_p,
        max_output_tokens,
        response_format: request
            .response_format
            .as_ref()
            .and_then(|f| f.json_schema.as_ref())
            .map(|schema| JsonSchemaFormat {
                name: schema.name.clone().unwrap_or_else(|| "response".to_owned()),
                schema: schema.schema.clone(),
                description: schema.description.clone(),
                strict: schema.strict,
            }),
        reasoning_effort: request
            .reasoning
            .as_ref()
            .and_then(|r| r.effort)
            .map(|e| e.as_str().to_owned()),
        prompt_cache_key: request.prompt_cache_key.clone(),
    }
}

/// The request's `tool_choice` in the model port's terms.
fn tool_choice(choice: Option<&ToolChoice>) -> ModelToolChoice {
    match choice {
        None | Some(ToolChoice::Mode(ToolChoiceMode::Auto)) => ModelToolChoice::Auto,
        Some(ToolChoice::Mode(ToolChoiceMode::None)) => ModelToolChoice::None,
        Some(ToolChoice::Mode(ToolChoiceMode::Required)) => ModelToolChoice::Required,
        Some(ToolChoice::Object(object)) => match (&object.kind, &object.name) {
            (_, Some(name)) => ModelToolChoice::Function(name.clone()),
            (Some(kind), None) if kind == "required" => ModelToolChoice::Required,
            (Some(kind), None) => ModelToolChoice::Function(kind.clone()),
            (None, None) => ModelToolChoice::Auto,
        },
    }
}
