//! The model request of one step: the transcript as messages, the tools visible now, and the
//! request's own parameters (tool choice, sampling, budgets, structured output, reasoning,
//! language, the step budget reminder, logprobs, the OpenAI extras the upstream may take).

use protocol::input::InputItem;
use protocol::options::OutputFormat as WireFormat;
use protocol::request::{CreateRequest, ToolChoice, ToolChoiceMode};

use crate::model::{JsonSchemaFormat, ModelRequest, ModelToolChoice, OutputFormat};
use crate::tools::Registry;
use crate::transcript;

/// The schema name sent upstream when `response_format` gives none.
pub const DEFAULT_FORMAT_NAME: &str = "response";

/// Where a step stands in the run's step budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// This step's number, from 1.
    pub number: u32,
    /// `max_steps` in effect.
    pub of: u32,
}

/// The model request of one step. Tools are offered unless `tools_on` is false, the registry is
/// empty or `tool_choice` is `none`. `model` is left empty: each attempt of the models chain
/// sets its own.
pub fn build(
    request: &CreateRequest,
    registry: &Registry,
    transcript: &[InputItem],
    tools_on: bool,
    max_output_tokens: Option<u32>,
    step: Step,
) -> ModelRequest {
    let tool_choice = tool_choice(request.tool_choice.as_ref());
    let tools_on = tools_on && !registry.is_empty() && tool_choice != ModelToolChoice::None;
    let instructions = system_text(request, step);
    ModelRequest {
        model: String::new(),
        messages: transcript::to_model_messages(instructions.as_deref(), transcript),
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
        output_format: request.output_format().map(|format| match format {
            WireFormat::JsonObject => OutputFormat::JsonObject,
            WireFormat::JsonSchema(schema) => OutputFormat::JsonSchema(JsonSchemaFormat {
                name: schema
                    .name
                    .unwrap_or_else(|| DEFAULT_FORMAT_NAME.to_owned()),
                schema: schema.schema,
                description: schema.description,
                strict: schema.strict,
            }),
        }),
        reasoning_effort: request
            .reasoning
            .as_ref()
            .and_then(|r| r.effort)
            .map(|e| e.as_str().to_owned()),
        reasoning_summary: request.reasoning.as_ref().and_then(|r| r.summary.clone()),
        verbosity: request
            .text
            .as_ref()
            .and_then(|text| text.verbosity)
            .map(|v| v.as_str().to_owned()),
        prompt_cache_key: request.prompt_cache_key.clone(),
        prompt_cache_retention: request
            .prompt_cache_retention
            .map(|retention| retention.as_str().to_owned()),
        service_tier: request.service_tier.map(|tier| tier.as_str().to_owned()),
        user: request.user.clone(),
        safety_identifier: request.safety_identifier.clone(),
        logprobs: request
            .wants_logprobs()
            .then(|| request.top_logprobs.unwrap_or(0)),
    }
}

/// The system text of a step: the caller's instructions, then the answer language
/// (`language_preference`) and the steps left (`step_budget_reminder`).
fn system_text(request: &CreateRequest, step: Step) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    if let Some(instructions) = request.instructions.as_deref().filter(|i| !i.is_empty()) {
        parts.push(instructions.to_owned());
    }
    if let Some(language) = &request.language_preference {
        parts.push(format!(
            "Write your answer in the language with ISO 639-1 code \"{language}\"."
        ));
    }
    if request.step_budget_reminder == Some(true) {
        let left = step.of.saturating_sub(step.number);
        parts.push(if left == 0 {
            format!(
                "This is step {} of {}: the last one. Answer now.",
                step.number, step.of
            )
        } else {
            format!(
                "This is step {} of {}: {left} more step{} left after this one.",
                step.number,
                step.of,
                if left == 1 { "" } else { "s" }
            )
        });
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
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
