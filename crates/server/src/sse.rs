//! The SSE writer: one `data: <json>` frame per event, no `event:` lines, no `[DONE]`,
//! keep-alive comments while the run is quiet (spec §7.1).
//!
//! Events that a run pushes in one burst (the deltas of upstream chunks that arrived together,
//! a step's closing events) are written as one body chunk, so they cost one socket write rather
//! than one each (`sse_batch`: the writer yields once or a few times for the events already on
//! their way); every event is still its own SSE frame, and nothing waits for a timer.

use std::convert::Infallible;
use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use bytes::{BufMut as _, Bytes, BytesMut};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt as _};
use http_body::Frame;
use tokio::time::{Instant, Sleep};

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
    response(SseBody::new(events.boxed(), keep_alive))
}

/// [`stream`] for a run just started: answered once its first batch of events is gathered
/// (or its events ended), so the response head and the first frame leave in one socket write.
/// (Answered at once, the head went alone: the run had not yet appended `response.created`
/// when the body was first polled. Answered at its first event, the head still went alone: the
/// body's first poll gathered `response.created` and `response.in_progress` and yielded for
/// more, and hyper wrote the head while it waited.) A run appends its first events as it
/// starts; a resume, which may wait long for the next event, answers with [`stream`] at once.
pub async fn stream_started(
    events: impl Stream<Item = Arc<str>> + Send + 'static,
    keep_alive: Duration,
) -> Response {
    let mut body = SseBody::new(events.boxed(), keep_alive);
    // The same gathering (and yields) as the body's, before the head rather than after it.
    body.first = futures::future::poll_fn(|cx| body.batches.poll_write(cx, frames)).await;
    response(body)
}

/// The response of an SSE body.
fn response(body: SseBody) -> Response {
    (
        [
            (CONTENT_TYPE, "text/event-stream"),
            (CACHE_CONTROL, "no-cache"),
        ],
        Body::new(body),
    )
        .into_response()
}

/// The body: each batch of events as one data frame, and a keep-alive comment whenever
/// `keep_alive` has passed since the last frame.
///
/// One timer serves the whole stream: a frame only notes its time, and the timer, when it
/// fires, either sends the comment (nothing was written for `keep_alive`) or is set again for
/// `keep_alive` after the last frame. (A timeout per frame registered a timer and removed it
/// again for every chunk of a fast stream.)
struct SseBody {
    batches: Batches<BoxStream<'static, Arc<str>>>,
    /// The first frame, gathered before the response was answered ([`stream_started`]).
    first: Option<Bytes>,
    keep_alive: Duration,
    /// When the last frame (or comment) was written.
    last_write: Instant,
    /// Fires at or before `last_write + keep_alive`, never after.
    timer: Pin<Box<Sleep>>,
}

impl SseBody {
    fn new(events: BoxStream<'static, Arc<str>>, keep_alive: Duration) -> SseBody {
        let now = Instant::now();
        SseBody {
            batches: Batches::new(events, MAX_EVENTS_PER_WRITE, sse_batch::MAX_YIELDS),
            first: None,
            keep_alive,
            last_write: now,
            timer: Box::pin(tokio::time::sleep_until(after(now, keep_alive))),
        }
    }
}

/// `from + by`, or `from` if that is past what an `Instant` holds.
fn after(from: Instant, by: Duration) -> Instant {
    from.checked_add(by).unwrap_or(from)
}

impl http_body::Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if let Some(first) = this.first.take() {
            this.last_write = Instant::now();
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        match this.batches.poll_write(cx, frames) {
            Poll::Ready(Some(frames)) => {
                this.last_write = Instant::now();
                return Poll::Ready(Some(Ok(Frame::data(frames))));
            }
            Poll::Ready(None) => return Poll::Ready(None),
            // A yield while a batch gathers: the task is woken again at once, and the batch
            // leaves within a few polls; the timer need not be looked at.
            Poll::Pending if this.batches.holds_events() => return Poll::Pending,
            Poll::Pending => {}
        }
        loop {
            ready!(this.timer.as_mut().poll(cx));
            let now = Instant::now();
            let due = after(this.last_write, this.keep_alive);
            if due > now {
                // Frames were written since the timer was set: wait for the rest of the
                // silence.
                this.timer.as_mut().reset(due);
                continue;
            }
            this.last_write = now;
            this.timer.as_mut().reset(after(now, this.keep_alive));
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(KEEP_ALIVE)))));
        }
    }
}

/// The SSE frames of a batch of events, in one buffer: `data: <line>\n` per line of the event
/// (serialized JSON has none, but a frame must never break), then a blank line.
fn frames(events: &[Arc<str>]) -> Bytes {
    let size = events.iter().map(|e| e.len() + 8).sum();
    let mut buffer = BytesMut::with_capacity(size);
    for event in events {
        if memchr::memchr(b'\n', event.as_bytes()).is_none() {
            // One line (every serialized event): one vectorized scan instead of `split`'s.
            frame_line(&mut buffer, event);
        } else {
            for line in event.split('\n') {
                frame_line(&mut buffer, line);
            }
        }
        buffer.put_u8(b'\n');
    }
    buffer.freeze()
}

/// `data: <line>\n`, the line without its trailing carriage returns.
fn frame_line(buffer: &mut BytesMut, line: &str) {
    buffer.put_slice(b"data: ");
    buffer.put_slice(line.trim_end_matches('\r').as_bytes());
    buffer.put_u8(b'\n');
}

#[cfg(test)]
mod tests {
    use futures::channel::mpsc;
    use http_body::Body as _;

    use super::*;

    /// The body's next frame's bytes (`None` at its end).
    async fn next(body: &mut SseBody) -> Option<Bytes> {
        let frame = futures::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx)).await;
        frame.map(|frame| {
            frame
                .ok()
                .and_then(|f| f.into_data().ok())
                .unwrap_or_default()
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_comment_follows_keep_alive_of_silence_after_the_last_frame() {
        let keep_alive = Duration::from_secs(10);
        let (events, rx) = mpsc::unbounded::<Arc<str>>();
        let mut body = SseBody::new(rx.boxed(), keep_alive);
        let start = Instant::now();
        let sender = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(6)).await;
            let _ = events.unbounded_send(Arc::from("a"));
            tokio::time::sleep(Duration::from_secs(32)).await;
            let _ = events.unbounded_send(Arc::from("b"));
        });
        assert_eq!(next(&mut body).await.as_deref(), Some(&b"data: a\n\n"[..]));
        assert_eq!(start.elapsed(), Duration::from_secs(6));
        // Silence from 6 s on: a comment at 16 s (not at 10 s, when the timer first ran out),
        // then every 10 s.
        for at in [16, 26, 36] {
            assert_eq!(next(&mut body).await.as_deref(), Some(KEEP_ALIVE));
            assert_eq!(start.elapsed(), Duration::from_secs(at));
        }
        // The next event (at 38 s) leaves as it comes.
        assert_eq!(next(&mut body).await.as_deref(), Some(&b"data: b\n\n"[..]));
        assert_eq!(start.elapsed(), Duration::from_secs(38));
        sender.await.unwrap();
        assert_eq!(
            next(&mut body).await,
            None,
            "the stream ended with the events"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn events_closer_than_keep_alive_get_no_comment() {
        let keep_alive = Duration::from_secs(10);
        let (events, rx) = mpsc::unbounded::<Arc<str>>();
        let mut body = SseBody::new(rx.boxed(), keep_alive);
        tokio::spawn(async move {
            for n in 0..5 {
                tokio::time::sleep(Duration::from_secs(7)).await;
                let _ = events.unbounded_send(Arc::from(format!("{n}")));
            }
        });
        for n in 0..5 {
            let frame = next(&mut body).await.unwrap();
            assert_eq!(&frame[..], format!("data: {n}\n\n").as_bytes());
        }
        assert_eq!(next(&mut body).await, None);
    }

    /// A started run's response waits for its first event (the head then leaves with it),
    /// and the event is still the body's first frame.
    #[tokio::test]
    async fn a_started_runs_response_waits_for_its_first_event() {
        let (events, rx) = mpsc::unbounded::<Arc<str>>();
        let mut response = Box::pin(stream_started(rx, Duration::from_secs(10)));
        for _ in 0..3 {
            assert!(futures::poll!(response.as_mut()).is_pending());
            tokio::task::yield_now().await;
        }
        let _ = events.unbounded_send(Arc::from("first"));
        let response = tokio::time::timeout(Duration::from_secs(5), response)
            .await
            .unwrap();
        let mut body = response.into_body().into_data_stream();
        let frame = tokio::time::timeout(Duration::from_secs(5), body.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(&frame[..], b"data: first\n\n");
        drop(events);
        assert!(body.next().await.is_none());
    }

    /// The events a started run appends at once (`response.created`, `response.in_progress`)
    /// are gathered before the response is answered: the body's first poll has them as one
    /// frame, so hyper writes the head with them (a first poll that yielded for more made it
    /// write the head alone).
    #[tokio::test]
    async fn a_started_runs_first_events_are_ready_with_its_response() {
        let (events, rx) = mpsc::unbounded::<Arc<str>>();
        let _ = events.unbounded_send(Arc::from("created"));
        let _ = events.unbounded_send(Arc::from("in_progress"));
        let response = stream_started(rx, Duration::from_secs(10)).await;
        let mut body = response.into_body();
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let first = match Pin::new(&mut body).poll_frame(&mut cx) {
            Poll::Ready(Some(Ok(frame))) => frame.into_data().unwrap_or_default(),
            other => panic!("the first frame was not ready: {other:?}"),
        };
        assert_eq!(&first[..], b"data: created\n\ndata: in_progress\n\n");
        let _ = events.unbounded_send(Arc::from("next"));
        drop(events);
        let rest = futures::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx))
            .await
            .and_then(|frame| frame.ok())
            .and_then(|frame| frame.into_data().ok());
        assert_eq!(rest.as_deref(), Some(&b"data: next\n\n"[..]));
    }

    /// A started run whose events ended before any came answers an empty body.
    #[tokio::test]
    async fn a_started_run_without_events_has_an_empty_body() {
        let (events, rx) = mpsc::unbounded::<Arc<str>>();
        drop(events);
        let response = stream_started(rx, Duration::from_secs(10)).await;
        let mut body = response.into_body().into_data_stream();
        assert!(body.next().await.is_none());
    }

    #[test]
    fn every_event_is_its_own_frame_in_one_buffer() {
        let events: Vec<Arc<str>> = vec![
            Arc::from(r#"{"type":"a"}"#),
            Arc::from("two\nlines"),
            Arc::from("cr\r\r"),
            Arc::from("crlf\r\nlines\r"),
            Arc::from(r#"{"type":"b"}"#),
        ];
        assert_eq!(
            &frames(&events)[..],
            b"data: {\"type\":\"a\"}\n\ndata: two\ndata: lines\n\ndata: cr\n\n\
              data: crlf\ndata: lines\n\ndata: {\"type\":\"b\"}\n\n"
        );
    }
}
