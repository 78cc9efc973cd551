//! The SSE writer: one `data: <json>` frame per event, no `event:` lines, no `[DONE]`,
//! keep-alive comments while the run is quiet (spec §7.1).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt as _};

/// Streams serialized events as SSE, with a keep-alive comment after `keep_alive` of silence.
pub fn stream(
    events: impl Stream<Item = Arc<str>> + Send + 'static,
    keep_alive: Duration,
) -> Response {
    let frames = events.map(|line| Ok::<_, Infallible>(Event::default().data(&*line)));
    Sse::new(frames)
        .keep_alive(KeepAlive::new().interval(keep_alive))
        .into_response()
}
