//! A `POST /v1/responses` body, read the way the server reads it (`server/src/json.rs`): the
//! tool count straight from the raw body, the strict parser, the operator limits (defaults),
//! then the engine's validation.
//!
//! Promises: a refusal has a message (and a non-empty `param` when it names one); the server's
//! reading (`CreateRequest::parse_within`, which counts the tools of a small body only when
//! its parse fails) answers as counting them first does; a parsed request serialises and parses back to itself;
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
