//! The SSE writer: one `data: <json>` frame per event, no `event:` lines, no `[DONE]`,
//! keep-alive comments while the run is quiet (spec §7.1).
//!
//! Events that a run pushes in one burst (the deltas of upstream chunks that arrived together,
//! a step's closing events) are written as one body chunk, so they cost one socket write rather
//! than one each (`sse_batch`: the writer yields once or a few times for the events already on
//! their way); every event is still its own SSE frame, and nothing waits for a timer.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use bytes::{BufMut as _, Bytes, BytesMut};
use futures::{Stream, StreamExt as _};

use crate::sse_batch::{self, Batches};

/// Most events written as one body chunk (bounds the chunk's size).
const MAX_EVENTS_PER_WRITE: usize = 64;

/// The keep-alive comment (an empty comment, as axum's default).
const KEEP_ALIVE: &[u8] = b":\n\n";

/// Streams serialized events as SSE, with a keep-alive comment after `keep_alive` of silence.
pub fn stream(
    events: impl Stream<Item = Arc<str>> + Send + 'static,
    keep_alive: Duration,
) -> Response {
    let chunks = Batches::new(events.boxed(), MAX_EVENTS_PER_WRITE, sse_batch::MAX_YIELDS)
        .map(|batch| frames(&batch))
        .boxed();
    let body = futures::stream::unfold(chunks, move |mut chunks| async move {
        // `next` is cancel safe: a timed-out wait loses nothing.
        match tokio::time::timeout(keep_alive, chunks.next()).await {
            Ok(Some(chunk)) => Some((Ok::<_, Infallible>(chunk), chunks)),
            Ok(None) => None,
            Err(_) => Some((Ok(Bytes::from_static(KEEP_ALIVE)), chunks)),
        }
    });
    (
        [
            (CONTENT_TYPE, "text/event-stream"),
            (CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// The SSE frames of a batch of events, in one buffer: `data: <line>\n` per line of the event
/// (serialized JSON has none, but a frame must never break), then a blank line.
fn frames(events: &[Arc<str>]) -> Bytes {
    let size = events.iter().map(|e| e.len() + 8).sum();
    let mut buffer = BytesMut::with_capacity(size);
    for event in events {
        for line in event.split('\n') {
            buffer.put_slice(b"data: ");
            buffer.put_slice(line.trim_end_matches('\r').as_bytes());
            buffer.put_u8(b'\n');
        }
        buffer.put_u8(b'\n');
    }
    buffer.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_is_its_own_frame_in_one_buffer() {
        let events: Vec<Arc<str>> = vec![
            Arc::from(r#"{"type":"a"}"#),
            Arc::from("two\nlines"),
            Arc::from(r#"{"type":"b"}"#),
        ];
        assert_eq!(
            &frames(&events)[..],
            b"data: {\"type\":\"a\"}\n\ndata: two\ndata: lines\n\ndata: {\"type\":\"b\"}\n\n"
        );
    }
}
