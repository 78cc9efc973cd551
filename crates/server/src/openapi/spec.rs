//! What an operation is made of ([`Spec`]) and the pieces every group of operations shares:
//! the error statuses any authenticated route can give and a JSON answer.

use serde_json::{Value, json};

/// What differs between endpoints.
pub(super) struct Spec {
    pub(super) summary: &'static str,
    pub(super) authenticated: bool,
    pub(super) query: Vec<Value>,
    pub(super) body: Option<Value>,
    pub(super) ok: Value,
    pub(super) errors: Vec<(u16, &'static str)>,
}

/// No key, or an unknown one.
pub(super) const UNAUTHORIZED: (u16, &str) = (
    401,
    "Missing or unknown API key (only when the server has keys)",
);
/// The store failed.
pub(super) const INTERNAL: (u16, &str) = (500, "The store failed; the request may be retried");

/// A JSON answer with its schema.
pub(super) fn json_answer(description: &str, schema: Value) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": schema}}})
}
