//! The HTTP error envelope: `{"error": {"message", "type", "code", "param"?}}` with `code` equal
//! to the HTTP status (an integer, spec decision 10).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorBody {
    pub message: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub code: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
}
