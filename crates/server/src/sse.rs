//! The SSE writer: one `data: <json>` frame per event, no `event:` lines, no `[DONE]`,
//! keep-alive comments while the run is quiet (spec §7.1).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt as _};

/// How often a keep-alive comment is sent on a quiet stream.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Streams serialized events as SSE.
pub fn stream(events: impl Stream<Item = Arc<str>> + Send + 'static) -> Response {
    let frames = events.map(|line| Ok::<_, Infallible>(Event::default().data(&*line)));
    Sse::new(frames)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response()
}
