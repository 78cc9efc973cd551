//! Entry points for the fuzz targets (`crates/fuzzing`, `fuzz/`), behind the `fuzzing` feature:
//! the legacy HTTP+SSE transport's event parser, its `endpoint` check and its message decoding,
//! fed from memory.

use reqwest::Url;
use rmcp::model::ServerJsonRpcMessage;

use crate::sse::{EventParser, endpoint_url};

/// One server-sent event: `event:` (default `message`) and the `data:` lines joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub name: String,
    pub data: String,
}

/// The events of a stream arriving in these chunks, each capped at `max_event_bytes`
/// (`Err(events so far)` once one is over the cap: the transport stops there).
pub fn sse_events(
    chunks: &[&[u8]],
    max_event_bytes: usize,
) -> Result<Vec<SseEvent>, Vec<SseEvent>> {
    let mut parser = EventParser::new(max_event_bytes);
    let mut events = Vec::new();
    for chunk in chunks {
        let fed = parser.feed(chunk);
        while let Some(event) = parser.next_event() {
            events.push(SseEvent {
                name: event.name,
                data: event.data,
            });
        }
        if fed.is_err() {
            return Err(events);
        }
    }
    Ok(events)
}

/// What the transport does with an `endpoint` event's data (the URL its POSTs go to).
pub fn endpoint(sse_url: &Url, data: &str, policy: &netguard::Policy) -> Result<Url, String> {
    endpoint_url(sse_url, data, policy).map_err(|e| e.to_string())
}

/// Whether a `message` event's data is a JSON-RPC message rmcp accepts.
pub fn message_is_json_rpc(data: &str) -> bool {
    serde_json::from_str::<ServerJsonRpcMessage>(data).is_ok()
}
