//! Structured output: with `response_format.json_schema`, the final answer must be JSON that
//! matches the schema, whatever the upstream promised.

use crate::code::Code;
use crate::error::RunFailure;

use super::state::Machine;

impl Machine {
    /// Checks the final answer; a mismatch fails the run `upstream_structured_output_failed`.
    pub(super) fn check_structured_output(&self, text: Option<&str>) -> Result<(), RunFailure> {
        let Some(validator) = &self.plan.output_schema else {
            return Ok(());
        };
        let failed = |message: String| {
            RunFailure::new(
                Code::StructuredOutput,
                format!(
                    "the model's answer does not match the requested output format ({}): {message}",
                    self.plan.request.output_format_param()
                ),
            )
        };
        let value: serde_json::Value = serde_json::from_str(text.unwrap_or_default().trim())
            .map_err(|err| failed(format!("it is not JSON ({err})")))?;
        let problems: Vec<String> = validator
            .iter_errors(&value)
            .take(5)
            .map(|err| {
                let path = err.instance_path().to_string();
                if path.is_empty() {
                    err.to_string()
                } else {
                    format!("{path}: {err}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(failed(problems.join("; ")))
        }
    }
}
