//! The answers of the response listing (`GET /v1/admin/responses`), of the pending approvals
//! (`GET /v1/admin/approvals`) and of a response's model turns
//! (`GET /v1/admin/responses/{id}/turns`): what the console's responses, approvals and trace
//! pages read besides the public API.

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

/// How a model turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ModelTurnStatus {
    /// The model's stream ended normally.
    Completed,
    /// The model failed (before its stream started or in the middle of it): `error` says why.
    Failed,
    /// The run was cancelled while the model answered.
    Cancelled,
}

/// The tokens the upstream reported for one model turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelTurnUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens read from the upstream's prompt cache (part of `input_tokens`).
    pub cached_tokens: u64,
    /// Input tokens written to the upstream's prompt cache (part of `input_tokens`).
    pub cache_write_tokens: u64,
    /// Reasoning tokens (part of `output_tokens`).
    pub reasoning_tokens: u64,
}

/// One call to the model within a run: a step's turn, or the next model of the chain taking a
/// failed turn over (same `step`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelTurn {
    /// The run's step (1 for the first).
    pub step: u32,
    /// The model asked (`provider/model`).
    pub model: String,
    /// When the request went to the model (Unix milliseconds).
    pub started_at_ms: i64,
    /// From the request to the end of the model's stream (or its failure), in milliseconds.
    pub duration_ms: u64,
    /// From the request to the first text, tool call or reasoning the model streamed, in
    /// milliseconds (absent when nothing came).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_first_token_ms: Option<u64>,
    pub status: ModelTurnStatus,
    /// The tokens the upstream reported (absent when it reported none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ModelTurnUsage>,
    /// Why the turn failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `GET /v1/admin/responses/{id}/turns`: the response's model turns in the order they ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelTurnList {
    /// Always `list`.
    pub object: String,
    pub response_id: String,
    pub data: Vec<ModelTurn>,
}
