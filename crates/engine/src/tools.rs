//! The run's tool registry: what the model is offered and how its calls are checked.
//!
//! Only custom function tools exist so far (client-executed: a call pauses the run and is handed
//! back). Built-in, MCP and connector tools arrive with their adapters and are refused until then.

use std::collections::HashMap;

use protocol::request::{FunctionTool, Tool};
use serde_json::Value;

use crate::error::EngineError;
use crate::model::ToolSpec;

/// A function tool as the run uses it.
pub struct FunctionDef {
    pub spec: ToolSpec,
    /// Compiled schema when `strict: true`.
    validator: Option<jsonschema::Validator>,
}

/// The tools of one run.
#[derive(Default)]
pub struct Registry {
    functions: Vec<FunctionDef>,
    by_name: HashMap<String, usize>,
}

impl Registry {
    /// Builds the registry from the request's tools.
    pub fn from_request(tools: &[Tool]) -> Result<Registry, EngineError> {
        let mut registry = Registry::default();
        for (index, tool) in tools.iter().enumerate() {
            match tool {
                Tool::Function(function) => {
                    let def = function_def(function, index)?;
                    registry
                        .by_name
                        .insert(def.spec.name.clone(), registry.functions.len());
                    registry.functions.push(def);
                }
                other => {
                    return Err(EngineError::NotImplemented(format!(
                        "tools[{index}]: the {} tool is not available on this server yet",
                        other.type_name()
                    )));
                }
            }
        }
        Ok(registry)
    }

    /// The definitions offered to the model, in request order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.functions.iter().map(|f| f.spec.clone()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    /// Checks one call of the model. `Err` is the error text the model gets back.
    pub fn check_call(&self, name: &str, arguments: &str) -> Result<(), String> {
        let Some(def) = self.by_name.get(name).map(|i| &self.functions[*i]) else {
            return Err(format!("error: there is no tool named \"{name}\""));
        };
        let Some(validator) = &def.validator else {
            return Ok(());
        };
        let value: Value = serde_json::from_str(arguments)
            .map_err(|err| format!("error: the arguments are not valid JSON: {err}"))?;
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
            Err(format!(
                "error: the arguments do not match the parameters schema of \"{name}\": {}. Call the tool again with corrected arguments.",
                problems.join("; ")
            ))
        }
    }
}

fn function_def(tool: &FunctionTool, index: usize) -> Result<FunctionDef, EngineError> {
    let parameters = tool
        .parameters
        .clone()
        .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
    let strict = tool.strict.unwrap_or(false);
    let validator = if strict {
        Some(jsonschema::validator_for(&parameters).map_err(|err| {
            EngineError::invalid(
                format!("tools[{index}].parameters"),
                format!("the parameters schema is not a valid JSON Schema: {err}"),
            )
        })?)
    } else {
        None
    };
    Ok(FunctionDef {
        spec: ToolSpec {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters,
            strict,
        },
        validator,
    })
}

/// The request's tools as echoed on the response: secrets (`authorization`, `headers`) removed.
pub fn redact(tools: &[Tool]) -> Vec<Tool> {
    tools
        .iter()
        .map(|tool| match tool {
            Tool::Mcp(mcp) => {
                let mut mcp = mcp.clone();
                mcp.authorization = None;
                mcp.headers = None;
                Tool::Mcp(mcp)
            }
            other => other.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(json: &str) -> Registry {
        let tools: Vec<Tool> = serde_json::from_str(json).expect("tools parse");
        Registry::from_request(&tools).expect("registry")
    }

    #[test]
    fn strict_tools_check_arguments_against_the_schema() {
        let r = registry(
            r#"[{"type":"function","name":"f","strict":true,"parameters":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}},
                {"type":"function","name":"loose","parameters":{"type":"object","properties":{"n":{"type":"integer"}}}}]"#,
        );
        assert!(r.check_call("f", r#"{"n":1}"#).is_ok());
        let err = r
            .check_call("f", r#"{"n":"one"}"#)
            .expect_err("type mismatch");
        assert!(err.contains("/n"), "{err}");
        assert!(r.check_call("f", "{").is_err());
        assert!(r.check_call("loose", r#"{"n":"one"}"#).is_ok());
        assert!(r.check_call("missing", "{}").is_err());
    }

    #[test]
    fn secrets_are_removed_from_echoed_tools() {
        let tools: Vec<Tool> = serde_json::from_str(
            r#"[{"type":"mcp","server_label":"a","server_url":"https://x","authorization":"tok","headers":{"X-Key":"v"}}]"#,
        )
        .expect("parse");
        let echoed = serde_json::to_string(&redact(&tools)).expect("serialize");
        assert!(
            !echoed.contains("tok") && !echoed.contains("X-Key"),
            "{echoed}"
        );
    }
}
