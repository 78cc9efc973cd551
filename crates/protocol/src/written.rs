//! A value written many times over, kept with its compact JSON, written the first time it is
//! needed: [`Written`], and the one kind that is everywhere, a tool's parameters schema
//! ([`Parameters`]: a function tool's `parameters`, an MCP tool's `inputSchema`).
//!
//! A run writes the same values again and again: its tools in the response's echo at the
//! start and at the end of the run, each model request of each turn and the limits' size
//! check; an MCP server's tool list in the `mcp_list_tools` item's events, the response and
//! the transcript. Written from the value, each write walked every map and escaped every
//! string again (docs/benchmarks.md, "Issue 18, twenty-eighth pass"); a [`Written`] copies
//! its kept bytes instead. The value stays for what reads it (the depth check, the
//! strict-mode validator, the adapters that rewrite a schema). One read back and never
//! written (a stored response's item) is never written to text.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A tool's parameters schema, as a [`Written`] value.
pub type Parameters = Written<Value>;

/// A value and its compact JSON, shared: cloning one is a reference count, and every clone
/// writes the JSON the first write kept. Never changed once made.
pub struct Written<T>(Arc<Inner<T>>);

struct Inner<T> {
    value: T,
    /// `value` as `serde_json::to_string` writes it, once it was first needed (`None` if that
    /// failed, which it cannot for a `Value` or a wire type: then `value` is written each
    /// time instead).
    json: OnceLock<Option<Box<RawValue>>>,
}

impl<T> Written<T> {
    /// The value.
    pub fn value(&self) -> &T {
        &self.0.value
    }
}

impl<T: Serialize> Written<T> {
    /// The kept compact JSON, written now if it was not yet.
    fn raw(&self) -> Option<&RawValue> {
        self.0
            .json
            .get_or_init(|| serde_json::value::to_raw_value(&self.0.value).ok())
            .as_deref()
    }

    /// The kept compact JSON (`None` only if writing the value failed, which it cannot for a
    /// `Value` or a wire type).
    pub(crate) fn json(&self) -> Option<&str> {
        self.raw().map(RawValue::get)
    }

    /// The size of the value as compact JSON, in bytes.
    pub fn json_len(&self) -> usize {
        match self.raw() {
            Some(json) => json.get().len(),
            // Not for a `Value` or a wire type; if ever, the size of what the fallback writes.
            None => serde_json::to_vec(&self.0.value).map_or(0, |json| json.len()),
        }
    }
}

impl<T> From<T> for Written<T> {
    fn from(value: T) -> Written<T> {
        Written(Arc::new(Inner {
            value,
            json: OnceLock::new(),
        }))
    }
}

impl<T> Clone for Written<T> {
    fn clone(&self) -> Written<T> {
        Written(Arc::clone(&self.0))
    }
}

impl<T> Deref for Written<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0.value
    }
}

impl<T: PartialEq> PartialEq for Written<T> {
    fn eq(&self, other: &Written<T>) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.value == other.0.value
    }
}

impl<T: fmt::Debug> fmt::Debug for Written<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0.value, f)
    }
}

impl<T: Serialize> Serialize for Written<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.raw() {
            Some(json) => json.serialize(serializer),
            None => self.0.value.serialize(serializer),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Written<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Written<T>, D::Error> {
        T::deserialize(deserializer).map(Written::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "q": {"type": "string", "description": "a \"quoted\"\nline — é"},
                "n": {"type": "integer", "minimum": 1.5e3, "maximum": -2}
            },
            "required": ["q"],
            "additionalProperties": false
        })
    }

    #[test]
    fn written_as_its_value_is_written() {
        let value = schema();
        let parameters = Parameters::from(value.clone());
        let expected = serde_json::to_string(&value).unwrap();
        assert_eq!(serde_json::to_string(&parameters).unwrap(), expected);
        assert_eq!(parameters.json_len(), expected.len());
        assert_eq!(
            crate::limits::json_size(&parameters),
            crate::limits::json_size(&value)
        );
        // Made into a `Value` (as `json!` does), it is the value again.
        assert_eq!(
            json!({"parameters": parameters}),
            json!({"parameters": value})
        );
        // Pretty-printed, the kept bytes stay compact inside: the same JSON value.
        let pretty = serde_json::to_string_pretty(&[&parameters]).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&pretty).unwrap(),
            json!([value])
        );
    }

    #[test]
    fn clones_write_the_same_json_whichever_writes_first() {
        let expected = serde_json::to_string(&schema()).unwrap();
        let first = Parameters::from(schema());
        let second = first.clone();
        assert_eq!(serde_json::to_string(&second).unwrap(), expected);
        assert_eq!(serde_json::to_string(&first).unwrap(), expected);
        assert_eq!(first.json_len(), expected.len());
        // A tool and an MCP tool list hold it as the value would be written.
        let tool: crate::request::Tool = serde_json::from_value(json!({
            "type": "function", "name": "f", "parameters": schema()
        }))
        .unwrap();
        let text = serde_json::to_string(&tool).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap()["parameters"],
            schema()
        );
        assert!(text.contains(&expected));
    }

    #[test]
    fn read_back_as_the_value_it_was() {
        let text = r#"{ "type" : "object", "properties": {"a": {"type": "string"}} }"#;
        let parameters: Parameters = serde_json::from_str(text).unwrap();
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(parameters.value(), &value);
        assert_eq!(*parameters, value);
        assert_eq!(
            serde_json::to_string(&parameters).unwrap(),
            r#"{"properties":{"a":{"type":"string"}},"type":"object"}"#
        );
        assert_eq!(parameters, Parameters::from(value));
        assert_ne!(parameters, Parameters::from(json!({})));
        assert_eq!(format!("{parameters:?}"), format!("{:?}", *parameters));
    }
}
