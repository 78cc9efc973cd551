//! agentd's wire types: the create request, input and output items, the response object, stream
//! events and the HTTP error envelope, exactly as Perplexity's Agent API puts them on the wire
//! (the SDK schema `perplexity/generated/api.py` wins on names and types). serde only by default
//! (JSON Schemas behind the `schema` feature), no I/O.
//!
//! Layout: [`request`] (the create request, its tools and skills), [`validate`] (the request
//! limits of spec §2–§4: [`request::CreateRequest::validate`]), [`limits`] (size limits against
//! memory amplification: the operator's [`limits::RequestLimits`] and the fixed schema depth),
//! [`input`] (input items), [`compact`] (`/responses/compact` and the `compaction` item),
//! [`conversations`] (the Conversations API's bodies and objects), [`listing`] (the response
//! listing, pending approvals and model turns the console reads),
//! [`output`] (output items: the SDK's union plus agentd's `people_search_results` and
//! `finance_results`), [`response`] (the response object and other bodies), [`events`] (stream
//! events), [`error`] (the HTTP error envelope), `strict` (path-aware strict parsing), `schema`
//! (JSON Schema helpers, feature `schema`).
//!
//! Requests are parsed strictly: an unknown field anywhere is refused with its path, and the
//! removed Sonar parameters say that they are not supported on the Agent API. Parsing checks
//! shapes; [`request::CreateRequest::validate`] then checks limits, reporting the first violation
//! in field order.
//!
//! With the `schema` feature, every wire type also implements `schemars::JsonSchema`; the server
//! builds `/openapi.json` from those schemas (requests as serde deserializes them, answers as
//! it serializes them), and its tests check the request schema against
//! [`request::CreateRequest::parse`] and real answers against the document. To keep the schema
//! true when adding a wire type:
//! - put `#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]` under its `#[derive]`
//!   (schemars reads the `#[serde]` attributes: tags, renames, `default`, `skip_serializing_if`,
//!   `flatten`, `deny_unknown_fields`);
//! - where a hand-written `Deserialize` accepts something else than those attributes say, say
//!   it with `#[cfg_attr(feature = "schema", schemars(...))]` next to it, as `input.rs` does
//!   (`InputItem`'s optional `type`, `ContentPart`'s strict parts, `FunctionOutput`'s parts);
//! - a new endpoint or body is added in the server's route table and `openapi` module;
//! - add a request using the type to `accepted_requests` in `crates/server/tests/openapi.rs`
//!   (and a streamed run, if it brings an event or output item), so the tests cover it.
//!
//! ```
//! use agentd_protocol::request::CreateRequest;
//!
//! let err = CreateRequest::parse(br#"{"input":"hi","tools":[{"type":"function","name":"f","strictt":true}]}"#)
//!     .unwrap_err();
//! assert_eq!(err.param.as_deref(), Some("tools[0].strictt"));
//!
//! let request = CreateRequest::parse(br#"{"model":"openai/gpt-5.4","input":"hi","max_steps":0}"#).unwrap();
//! assert_eq!(request.validate().unwrap_err().param.as_deref(), Some("max_steps"));
//! ```

pub mod admin;
pub mod compact;
pub mod conversations;
pub mod error;
mod escape_memo;
mod event_line;
pub mod events;
pub mod input;
mod item_json;
mod json_string;
pub mod limits;
pub mod listing;
pub mod options;
pub mod output;
pub mod request;
pub mod response;
mod response_json;
#[cfg(feature = "schema")]
mod schema;
mod strict;
mod tagged;
pub mod validate;
pub mod written;

pub use strict::{RequestError, parse_json};

/// Appends a string as JSON (quoted, escaped), byte for byte as `serde_json` writes it, but
/// checked for escapes many bytes at a time (`json_string.rs`): for writers of JSON by hand
/// (the provider wires' message lists).
pub fn push_json_string(out: &mut String, value: &str) -> Result<(), serde_json::Error> {
    json_string::push_quoted(out, value)
}

/// Appends `value` as `serde_json::to_string` writes it (through a buffer kept per thread).
pub fn push_json<T: serde::Serialize + ?Sized>(
    out: &mut String,
    value: &T,
) -> Result<(), serde_json::Error> {
    json_string::push_serde(out, value)
}

/// Appends a JSON array of `items`, each written by `write`, a `,` between two.
pub fn push_json_list<T>(
    out: &mut String,
    items: impl IntoIterator<Item = T>,
    mut write: impl FnMut(&mut String, T) -> Result<(), serde_json::Error>,
) -> Result<(), serde_json::Error> {
    out.push('[');
    for (n, item) in items.into_iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        write(out, item)?;
    }
    out.push(']');
    Ok(())
}

/// Ends the JSON object being written in `out`, whose members so far stand before, with the
/// members of `value` (which serde writes as an object): a `,` and its members, then the `}`;
/// only the `}` when it has none. What serde writes for a struct whose last fields are
/// `value`'s (`#[serde(flatten)]`), byte for byte.
pub fn push_json_members<T: serde::Serialize + ?Sized>(
    out: &mut String,
    value: &T,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    json_string::push_serde(out, value)?;
    if !out[start..].starts_with('{') {
        out.truncate(start);
        return Err(<serde_json::Error as serde::ser::Error>::custom(
            "the members to append are not an object",
        ));
    }
    if out.len() == start + 2 {
        out.truncate(start);
        out.push('}');
    } else {
        out.replace_range(start..start + 1, ",");
    }
    Ok(())
}
