//! Helpers for the JSON Schemas of the wire types (feature `schema`), where a hand-written
//! `Deserialize` accepts more than the serde attributes say.

use schemars::Schema;
use serde_json::{Value, json};

/// Makes the `type` tag of one internally tagged variant optional (absent or `null`), as
/// `strict::take_tag` with a default does: an input item without `type` is a message.
pub(crate) fn optional_tag(schema: &mut Schema) {
    if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|name| name != "type");
    }
    if let Some(tag) = schema
        .get_mut("properties")
        .and_then(|properties| properties.get_mut("type"))
    {
        let constant = tag.get("const").cloned().unwrap_or(Value::Null);
        *tag = json!({"enum": [constant, null]});
    }
}
