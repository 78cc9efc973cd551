//! Size limits on what a request may hold, against memory amplification: a request grows the
//! server's memory with its tool count and schema sizes far beyond its own size (every tool is
//! copied into the run's registry, each model request, the stored response and the event log).
//!
//! - [`RequestLimits`] (the operator may change them: agentd's `[limits]`): the number of
//!   `tools`, their total size, and the size of one function tool's `parameters`, checked by
//!   [`CreateRequest::check_limits`] where requests arrive ([`CreateRequest::parse_within`]:
//!   in a body larger than [`PARSE_BEFORE_COUNTING`], [`count_tools`] reads the number from the
//!   raw body first, so that a request with far too many tools is refused before they are
//!   built).
//! - [`MAX_SCHEMA_DEPTH`] (fixed): how deep a JSON value a request carries for the server to
//!   keep (function `parameters`, `response_format.json_schema.schema`, `text`) may nest.
//!   Checked by [`CreateRequest::validate`]: a stored copy nests a few levels deeper than the
//!   request did, and serde_json refuses to read back anything deeper than 128 levels.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::request::{CreateRequest, Tool};
use crate::response_json::Writer;
use crate::strict::RequestError;

/// How deep a schema or other free-form JSON value of a request may nest (arrays and objects
/// count one level each; a scalar at the top is depth 0).
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// Limits an operator may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    /// Entries in `tools`.
    pub max_tools: usize,
    /// Size of all of `tools` as compact JSON, in bytes (descriptions included).
    pub max_tools_bytes: usize,
    /// Size of one function tool's `parameters` as compact JSON, in bytes.
    pub max_tool_schema_bytes: usize,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits {
            max_tools: 128,
            max_tools_bytes: 1024 * 1024,
            max_tool_schema_bytes: 64 * 1024,
        }
    }
}

impl RequestLimits {
    /// Refuses more than `max_tools` tools, naming `tools`.
    pub fn check_tool_count(&self, count: usize) -> Result<(), RequestError> {
        if count > self.max_tools {
            return Err(RequestError::new(
                "tools",
                format!(
                    "a request may have at most {} tools, got {count}",
                    self.max_tools
                ),
            ));
        }
        Ok(())
    }
}

/// How many entries a request body's `tools` array has, read without building them; `None`
/// when the body is not a JSON object with a `tools` array (the strict parser then says why).
pub fn count_tools(body: &[u8]) -> Option<usize> {
    #[derive(Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        tools: Option<&'a RawValue>,
    }
    let probe: Probe<'_> = serde_json::from_slice(body).ok()?;
    let tools: Vec<IgnoredAny> = serde_json::from_str(probe.tools?.get()).ok()?;
    Some(tools.len())
}

/// Bodies up to this many bytes are parsed before their tools are counted: the tools such a
/// body can hold are few (a tool takes at least a dozen bytes), so building them costs little,
/// while [`count_tools`] reads the whole body once more (~15 instructions a byte; a chat history
/// of 8 KB and five tools spent ~130 k instructions on it: docs/benchmarks.md, "Issue 18,
/// twenty-sixth pass"). Larger bodies are counted first, as before.
pub const PARSE_BEFORE_COUNTING: usize = 64 * 1024;

impl CreateRequest {
    /// Parses a create request's body ([`CreateRequest::parse`]) and checks it against the
    /// operator's [`RequestLimits`] ([`CreateRequest::check_limits`]). Far too many tools are
    /// refused before they are built when the body is larger than [`PARSE_BEFORE_COUNTING`];
    /// whatever the size, a body with too many tools is refused for them first, as when they
    /// are always counted first (the count is read when the parse fails).
    pub fn parse_within(
        body: &[u8],
        limits: &RequestLimits,
    ) -> Result<CreateRequest, RequestError> {
        let count_first = body.len() > PARSE_BEFORE_COUNTING;
        if count_first && let Some(count) = count_tools(body) {
            limits.check_tool_count(count)?;
        }
        let request = match CreateRequest::parse(body) {
            Ok(request) => request,
            Err(err) => {
                if !count_first && let Some(count) = count_tools(body) {
                    limits.check_tool_count(count)?;
                }
                return Err(err);
            }
        };
        request.check_limits(limits)?;
        Ok(request)
    }

    /// Checks the operator's [`RequestLimits`]: the first violation, naming `tools` or
    /// `tools[i].parameters` and the limit.
    pub fn check_limits(&self, limits: &RequestLimits) -> Result<(), RequestError> {
        let tools = self.tools.as_deref().unwrap_or_default();
        limits.check_tool_count(tools.len())?;
        let total = tools_json_size(tools);
        if total > limits.max_tools_bytes {
            return Err(RequestError::new(
                "tools",
                format!(
                    "the tools may total at most {} bytes of JSON, got {total}",
                    limits.max_tools_bytes
                ),
            ));
        }
        for (i, tool) in tools.iter().enumerate() {
            if let Tool::Function(function) = tool
                && let Some(parameters) = &function.parameters
            {
                let bytes = parameters.json_len();
                if bytes > limits.max_tool_schema_bytes {
                    return Err(RequestError::new(
                        format!("tools[{i}].parameters"),
                        format!(
                            "a function's parameters schema may be at most {} bytes of JSON, got {bytes}",
                            limits.max_tool_schema_bytes
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The tools' sizes as compact JSON, summed (the limits' check): each written as the echo
/// writes it, one after the other into one buffer.
pub(crate) fn tools_json_size(tools: &[Tool]) -> usize {
    let mut out = Writer(String::new());
    tools
        .iter()
        .map(|tool| {
            let start = out.0.len();
            match out.tool(tool) {
                Ok(()) => out.0.len() - start,
                // Should writing it ever fail: as serde counts it.
                Err(_) => {
                    out.0.truncate(start);
                    json_size(tool)
                }
            }
        })
        .sum()
}

/// The size of `value` written as compact JSON, without writing it anywhere.
pub fn json_size(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing our wire types or a `Value` to a writer that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// How deep `value` nests: 0 for a scalar, 1 for `{}` or `[]`, one more per level inside.
pub fn json_depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((value, depth)) = stack.pop() {
        match value {
            Value::Array(items) => {
                deepest = deepest.max(depth + 1);
                stack.extend(items.iter().map(|child| (child, depth + 1)));
            }
            Value::Object(map) => {
                deepest = deepest.max(depth + 1);
                stack.extend(map.values().map(|child| (child, depth + 1)));
            }
            _ => {}
        }
    }
    deepest
}

/// Refuses a value nested deeper than [`MAX_SCHEMA_DEPTH`], naming `param`.
pub(crate) fn check_depth(param: &str, value: &Value) -> Result<(), RequestError> {
    let depth = json_depth(value);
    if depth > MAX_SCHEMA_DEPTH {
        return Err(RequestError::new(
            param,
            format!("{param} may nest at most {MAX_SCHEMA_DEPTH} levels deep, got {depth}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn depth_and_size_are_measured() {
        assert_eq!(json_depth(&json!(1)), 0);
        assert_eq!(json_depth(&json!({})), 1);
        assert_eq!(json_depth(&json!({"a": [1, {"b": {}}]})), 4);
        assert_eq!(json_size(&json!({"a": [1, 2]})), r#"{"a":[1,2]}"#.len());
    }

    #[test]
    fn tools_are_counted_without_building_them() {
        assert_eq!(
            count_tools(br#"{"model":"m","tools":[{"a":1},2,[3]],"x":{}}"#),
            Some(3)
        );
        assert_eq!(count_tools(br#"{"tools":[]}"#), Some(0));
        assert_eq!(count_tools(br#"{"model":"m"}"#), None);
        assert_eq!(count_tools(br#"{"tools":{}}"#), None);
        assert_eq!(count_tools(br#"{"tools":[1,"#), None);
        assert_eq!(count_tools(b"[]"), None);
    }
}
