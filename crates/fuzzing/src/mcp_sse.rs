//! The MCP legacy HTTP+SSE transport's stream (`mcp/src/sse.rs`): the incremental event
//! parser with its per-event cap, the `endpoint` event's URL check, and the decoding of
//! `message` events as JSON-RPC.
//!
//! Promises: the events do not depend on how the stream was chunked; no event's data is larger
//! than the cap; an accepted endpoint keeps the SSE URL's origin and passes the network guard
//! (with a public SSE URL and the strict policy, and with a loopback one and loopback allowed).

use mcp::fuzzing::{SseEvent, endpoint, message_is_json_rpc, sse_events};
use url::Url;

use crate::chunks::split;

/// Small enough that the fuzzer reaches it.
const MAX_EVENT_BYTES: usize = 1024;

pub fn run(data: &[u8]) {
    let whole = sse_events(&[data], MAX_EVENT_BYTES);
    let pieces = sse_events(&split(data), MAX_EVENT_BYTES);
    assert_eq!(whole, pieces, "the events depend on the chunking");
    let events = match &whole {
        Ok(events) | Err(events) => events,
    };
    let strict = netguard::Policy::strict();
    let loopback = netguard::Policy::with_allowed(&["127.0.0.0/8".to_owned()]).ok();
    for SseEvent { name, data } in events {
        assert!(data.len() <= MAX_EVENT_BYTES, "an event over the cap");
        match name.as_str() {
            "endpoint" => {
                check_endpoint("https://mcp.example.com/sse?v=1", data, &strict);
                if let Some(loopback) = &loopback {
                    check_endpoint("http://127.0.0.1:8931/sse", data, loopback);
                }
            }
            "message" => {
                let _ = message_is_json_rpc(data);
            }
            _ => {}
        }
    }
}

fn check_endpoint(sse_url: &str, data: &str, policy: &netguard::Policy) {
    let Ok(sse) = Url::parse(sse_url) else {
        return;
    };
    if let Ok(url) = endpoint(&sse, data, policy) {
        assert_eq!(
            url.origin(),
            sse.origin(),
            "{data:?} left the origin: {url}"
        );
        assert!(
            policy.check_url(url.as_str()).is_ok(),
            "{data:?}: an endpoint the guard refuses: {url}"
        );
    }
}
