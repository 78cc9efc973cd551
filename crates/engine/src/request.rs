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

/// The first step's request, built before the run starts (the models chain's check,
/// `plan.rs`) and kept for the step that asks it: a long conversation's history is turned
/// into messages once per run, not twice.
#[derive(Debug)]
pub struct FirstStep {
    /// What [`build`] made of the plan (its `model` named for the chain's last model).
    pub(crate) request: ModelRequest,
    /// What it was built from that a run can change before its first step asks.
    transcript_len: usize,
    max_output_tokens: Option<u32>,
    step: Step,
}

impl FirstStep {
    /// The request of step 1 of `of`, tools offered, with the request's own output budget.
    pub fn build(
        request: &CreateRequest,
        registry: &Registry,
        transcript: &[InputItem],
        of: u32,
    ) -> FirstStep {
        let step = Step { number: 1, of };
        FirstStep {
            request: build(
                request,
                registry,
                transcript,
                true,
                request.max_output_tokens,
                step,
            ),
            transcript_len: transcript.len(),
            max_output_tokens: request.max_output_tokens,
            step,
        }
    }

    /// The request, if [`build`] with these arguments would make the same one: the same step,
    /// transcript length (a run's transcript only grows: approved calls run before the first
    /// step add to it) and budget; tools offered, or none to offer; and a registry without MCP
    /// servers (their tools are listed again as each step begins). `None` otherwise.
    pub fn take_if_same(
        self,
        registry: &Registry,
        transcript: &[InputItem],
        tools_on: bool,
        max_output_tokens: Option<u32>,
        step: Step,
    ) -> Option<ModelRequest> {
        let same = step == self.step
            && transcript.len() == self.transcript_len
            && max_output_tokens == self.max_output_tokens
            && (tools_on || registry.is_empty())
            && registry.servers().is_empty();
        same.then_some(self.request)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: serde_json::Value) -> CreateRequest {
        serde_json::from_value(json).expect("request parses")
    }

    fn registry(tools: serde_json::Value) -> Registry {
        let tools: Vec<protocol::request::Tool> =
            serde_json::from_value(tools).expect("tools parse");
        Registry::from_request(&tools, &crate::hosted::NoHostedTools).expect("registry")
    }

    fn transcript(texts: &[&str]) -> Vec<InputItem> {
        let items: Vec<serde_json::Value> = texts
            .iter()
            .map(|text| serde_json::json!({"type": "message", "role": "user", "content": text}))
            .collect();
        serde_json::from_value(serde_json::Value::Array(items)).expect("items parse")
    }

    const FIRST: Step = Step { number: 1, of: 4 };

    /// The check's request is sent only where the step would have built the very same one;
    /// anything the run changed before its first step asks means building it again.
    #[test]
    fn the_checked_request_stands_for_the_first_step_only_while_nothing_it_was_built_from_changed()
    {
        let request = request(serde_json::json!({
            "model": "m", "input": "hi", "max_output_tokens": 100, "instructions": "be brief",
            "step_budget_reminder": true
        }));
        let tools = registry(serde_json::json!([
            {"type": "function", "name": "f", "parameters": {"type": "object"}}
        ]));
        let none = registry(serde_json::json!([]));
        let items = transcript(&["hi"]);
        let built = |registry: &Registry, items: &[InputItem], tools_on, budget, step| {
            build(&request, registry, items, tools_on, budget, step)
        };

        // Unchanged: the same request as the step builds.
        let first = FirstStep::build(&request, &tools, &items, 4);
        let same = first.take_if_same(&tools, &items, true, Some(100), FIRST);
        assert_eq!(same, Some(built(&tools, &items, true, Some(100), FIRST)));
        // No tools to offer: whether the step offers them makes no difference.
        let first = FirstStep::build(&request, &none, &items, 4);
        let same = first.take_if_same(&none, &items, false, Some(100), FIRST);
        assert_eq!(same, Some(built(&none, &items, false, Some(100), FIRST)));

        // Changed: each makes a request other than the check's.
        let grown = transcript(&["hi", "an approved call's output"]);
        let changed: [(&[InputItem], bool, Option<u32>, Step); 4] = [
            (&grown, true, Some(100), FIRST),
            (&items, false, Some(100), FIRST),
            (&items, true, Some(40), FIRST),
            (&items, true, Some(100), Step { number: 1, of: 1 }),
        ];
        for (items_now, tools_on, budget, step) in changed {
            let first = FirstStep::build(&request, &tools, &items, 4);
            let kept = first.request.clone();
            assert_ne!(
                built(&tools, items_now, tools_on, budget, step),
                kept,
                "the case must change the request"
            );
            let first = FirstStep::build(&request, &tools, &items, 4);
            assert_eq!(
                first.take_if_same(&tools, items_now, tools_on, budget, step),
                None
            );
        }
        // An MCP server's tools are listed again as the step begins.
        let mcp = registry(serde_json::json!([
            {"type": "function", "name": "f", "parameters": {"type": "object"}},
            {"type": "mcp", "server_label": "s", "server_url": "https://mcp.example/mcp"}
        ]));
        let first = FirstStep::build(&request, &mcp, &items, 4);
        assert_eq!(
            first.take_if_same(&mcp, &items, true, Some(100), FIRST),
            None
        );
    }
}
