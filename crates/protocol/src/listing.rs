//! The answers of the response listing (`GET /v1/admin/responses`) and of the pending approvals
//! (`GET /v1/admin/approvals`): what the console's responses and approvals pages read.

use serde::{Deserialize, Serialize};

use crate::response::Response;

/// A page of a project's responses, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ResponseList {
    /// Always `list`.
    pub object: String,
    pub data: Vec<Response>,
    pub first_id: Option<String>,
    /// The cursor of the next page (`after=`): the last response looked at.
    pub last_id: Option<String>,
    pub has_more: bool,
}

/// One `mcp_approval_request` that no continuation has answered yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PendingApproval {
    /// The `mcp_approval_request` item's id (`approval_request_id` of the answer).
    pub id: String,
    /// The response whose output holds the request (`previous_response_id` of the answer).
    pub response_id: String,
    pub model: String,
    /// The response's creation time (Unix seconds).
    pub created_at: i64,
    pub server_label: String,
    /// The tool the model wants to call.
    pub name: String,
    /// Its arguments (JSON text).
    pub arguments: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector_id: Option<String>,
}

/// `GET /v1/admin/approvals`, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PendingApprovalList {
    /// Always `list`.
    pub object: String,
    pub data: Vec<PendingApproval>,
}
