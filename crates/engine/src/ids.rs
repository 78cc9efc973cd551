//! Prefixed random ids (`resp_…`, `msg_…`, `fc_…`, `mcpl_…`, `mcpr_…`).

/// A new id: the prefix, `_`, and a random UUID.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4())
}

/// A call id for a call the upstream gave none (`call_…`, no dashes, like OpenAI's).
pub fn new_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}
