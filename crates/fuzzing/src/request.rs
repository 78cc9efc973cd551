//! A `POST /v1/responses` body, read the way the server reads it (`server/src/json.rs`): the
//! tool count straight from the raw body, the strict parser, the operator limits (defaults),
//! then the engine's validation.
//!
//! Promises: a refusal has a message (and a non-empty `param` when it names one); the server's
//! reading (`CreateRequest::parse_within`, which counts the tools of a small body only when
//! its parse fails) answers as counting them first does; whether a body is accepted, and as
//! what, does not depend on the order of its objects' keys (a tool, an input item or a content
//! part whose first key names its variant is read in one pass, another is buffered first: the
//! body's JSON written with every object's keys sorted, and again with them reversed, which
//! puts `type` and `role` first, parses alike); a parsed request serialises and parses back to itself;
//! a request that passes validation can be stored and read back (the stored copy is JSON that
//! serde_json reads, whatever its nesting: issue 13's 124-level schema was accepted and then
//! failed the run).

use protocol::RequestError;
use protocol::limits::{RequestLimits, count_tools};
use protocol::request::CreateRequest;

pub fn run(data: &[u8]) {
    let limits = RequestLimits::default();
    let counted = count_tools(data);
    let counted_first = counted
        .map_or(Ok(()), |count| limits.check_tool_count(count))
        .and_then(|()| CreateRequest::parse(data))
        .and_then(|request| request.check_limits(&limits).map(|()| request));
    assert_eq!(
        CreateRequest::parse_within(data, &limits),
        counted_first,
        "the server's reading disagrees with counting the tools first"
    );
    key_order_does_not_matter(data);
    let request = match CreateRequest::parse(data) {
        Ok(request) => request,
        Err(err) => return refusal(&err),
    };
    if let (Some(count), Some(tools)) = (counted, &request.tools) {
        assert_eq!(
            count,
            tools.len(),
            "the tool count probe disagrees with the parser"
        );
    }
    let json = serde_json::to_vec(&request).unwrap_or_default();
    assert!(!json.is_empty(), "a parsed request does not serialise");
    let again = CreateRequest::parse(&json).map_err(|err| err.message);
    assert!(
        again.as_ref().is_ok_and(|again| *again == request),
        "a parsed request does not round-trip: {again:?}\nsent {}",
        String::from_utf8_lossy(&json)
    );
    if let Err(err) = request.check_limits(&limits) {
        return refusal(&err);
    }
    if let Err(err) = request.validate() {
        return refusal(&err);
    }
    // What the store keeps of an accepted request reads back.
    let stored =
        serde_json::to_string(&serde_json::json!({ "request": request })).unwrap_or_default();
    assert!(
        serde_json::from_str::<serde_json::Value>(&stored).is_ok(),
        "an accepted request cannot be read back from the store"
    );
}

fn refusal(err: &RequestError) {
    assert!(!err.message.is_empty(), "a refusal without a message");
    assert!(
        err.param.as_deref() != Some(""),
        "a refusal naming an empty param"
    );
}

/// The body with its objects' keys sorted and reversed parses alike (see the module's
/// promises); a body that is not JSON has no key order to change.
fn key_order_does_not_matter(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let sorted = serde_json::to_string(&value).unwrap_or_default();
    let mut reversed = String::new();
    write_reversed(&value, &mut reversed);
    let parse = |body: &str| CreateRequest::parse(body.as_bytes()).ok();
    assert_eq!(
        parse(&sorted),
        parse(&reversed),
        "the order of the keys changes what is accepted:\n{sorted}\n{reversed}"
    );
}

/// `value` as JSON with every object's keys in reverse order.
fn write_reversed(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::Object(map) => {
            out.push('{');
            for (n, (key, value)) in map.iter().rev().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::Value::from(key.as_str()).to_string());
                out.push(':');
                write_reversed(value, out);
            }
            out.push('}');
        }
        serde_json::Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                write_reversed(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}
