//! `POST /v1/responses/compact` (Open Responses' `compactResponse`): the body it takes and the
//! `response.compaction` object it answers, whose `compaction` item carries a summary of the
//! conversation that a new chain continues from instead of the whole history (the item itself
//! is an input item: [`crate::input::CompactionItem`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::input::Input;
use crate::response::Usage;

/// The body of a compact request (`CompactResponseMethodPublicBody`). Unknown fields are
/// refused; `model` is required (checked by the engine, so the 400 names it).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CompactRequest {
    /// The model that writes the summary (`provider/model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The conversation to compact (after the previous response's, if any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Input>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_response_id: Option<String>,
    /// The system text the conversation ran under (the summary is written with it in view).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
}

/// The answer (`CompactResource`): the conversation's user messages, then one `compaction`
/// item. Passed back as input (with a new message, without `previous_response_id`), it starts
/// a new chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CompactResource {
    pub id: String,
    #[cfg_attr(feature = "schema", schemars(extend("const" = "response.compaction")))]
    pub object: String,
    pub created_at: i64,
    /// User messages (as message items) and the `compaction` item, last.
    pub output: Vec<Value>,
    pub usage: Usage,
}
