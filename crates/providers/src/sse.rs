//! The server-sent-events side every streaming adapter shares: reading the body event by event
//! with the idle timeout, feeding each `data` field to the adapter's decoder, scrubbing the key
//! from errors, and leaving the connection reusable once the turn is complete.

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;

use engine::model::{ModelError, ModelEvent, ModelStream};
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{FutureExt, Stream, StreamExt};

use crate::redact::{Redactor, transport_error};

/// What the stream should do after a `data` field.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Continue,
    /// The terminal event was seen (`[DONE]`, `message_stop`, …): the turn is complete.
    Done,
}

/// One wire API's stream decoder: pure, fed one SSE `data` field at a time.
pub(crate) trait SseDecoder {
    /// After an error, whether to read what is already buffered (so the connection can go back
    /// to the pool) rather than drop the connection at once.
    const DRAIN_AFTER_ERROR: bool = false;

    /// Decodes one SSE `data` field, pushing the events it yields onto `out`.
    fn data(&mut self, data: &str, out: &mut Vec<ModelEvent>) -> Result<Step, ModelError>;

    /// The body ended without a terminal event: closes the turn if it is complete all the same,
    /// else says why it is not.
    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError>;
}

/// The events of `response`'s SSE body, decoded by `decoder`, each error scrubbed by `redactor`;
/// silence longer than `idle_timeout` between two events ends the stream with
/// [`ModelError::Timeout`].
pub(crate) fn sse_stream<D: SseDecoder + Send + 'static>(
    response: reqwest::Response,
    decoder: D,
    idle_timeout: Duration,
    redactor: Redactor,
) -> ModelStream {
    let turn = SseTurn {
        events: Box::pin(without_bom(response.bytes_stream()).eventsource()),
        decoder,
        idle_timeout,
        redactor,
    };
    let batches = futures::stream::unfold(Some(turn), |turn| async move {
        let mut turn = turn?;
        let (batch, more) = turn.next_batch().await;
        Some((batch, more.then_some(turn)))
    });
    Box::pin(batches.flat_map(futures::stream::iter))
}

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// `body` without the byte order marks it may start with, even split over chunks. The SSE
/// spec strips one; `eventsource-stream` 0.2 means to, but cuts one byte off the three-byte
/// character and panics, so none may reach it first (a second mark, which the spec would
/// leave in the first field's name, is dropped too).
pub(crate) fn without_bom<S, E>(body: S) -> impl Stream<Item = Result<Bytes, E>> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Send + 'static,
{
    // The head of the body, while it might still be the start of a mark.
    let head: Option<Vec<u8>> = Some(Vec::new());
    futures::stream::unfold((Box::pin(body), head), |(mut body, mut head)| async move {
        loop {
            if head.is_none() {
                return body.next().await.map(|item| (item, (body, None)));
            }
            match body.next().await {
                Some(Ok(chunk)) => {
                    let mut bytes = head.take().unwrap_or_default();
                    bytes.extend_from_slice(&chunk);
                    while bytes.starts_with(BOM) {
                        bytes.drain(..BOM.len());
                    }
                    if bytes.len() < BOM.len() && BOM.starts_with(&bytes) {
                        head = Some(bytes);
                        continue;
                    }
                    return Some((Ok(Bytes::from(bytes)), (body, None)));
                }
                Some(Err(err)) => return Some((Err(err), (body, None))),
                None => {
                    let bytes = head.take().unwrap_or_default();
                    return (!bytes.is_empty()).then(|| (Ok(Bytes::from(bytes)), (body, None)));
                }
            }
        }
    })
}

type SseEvents =
    Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// One streamed turn in progress.
struct SseTurn<D> {
    events: SseEvents,
    decoder: D,
    idle_timeout: Duration,
    redactor: Redactor,
}

impl<D: SseDecoder> SseTurn<D> {
    /// The events of the next SSE event that yields any, and whether the turn goes on.
    async fn next_batch(&mut self) -> (Vec<Result<ModelEvent, ModelError>>, bool) {
        let mut out = Vec::new();
        loop {
            let next = match tokio::time::timeout(self.idle_timeout, self.events.next()).await {
                Ok(next) => next,
                Err(_) => return (vec![Err(ModelError::Timeout)], false),
            };
            let step = match next {
                Some(Ok(event)) => self.decoder.data(&event.data, &mut out),
                Some(Err(err)) => Err(sse_error(err)),
                None => self.decoder.end(&mut out).map(|()| Step::Done),
            };
            let step = step.map_err(|err| self.redactor.scrub(err));
            let mut batch: Vec<_> = out.drain(..).map(Ok).collect();
            match step {
                Ok(Step::Continue) if batch.is_empty() => continue,
                Ok(Step::Continue) => return (batch, true),
                Ok(Step::Done) => {
                    self.drain_ready();
                    return (batch, false);
                }
                Err(err) => {
                    batch.push(Err(err));
                    if D::DRAIN_AFTER_ERROR {
                        self.drain_ready();
                    }
                    return (batch, false);
                }
            }
        }
    }

    /// Reads what is already buffered (the body's end) without waiting, so the connection goes
    /// back to the pool instead of being dropped mid-body. (Once the body has ended, a poll
    /// just returns `None` again.)
    fn drain_ready(&mut self) {
        for _ in 0..4 {
            match self.events.next().now_or_never() {
                Some(Some(_)) => continue,
                Some(None) | None => return,
            }
        }
    }
}

fn sse_error(err: EventStreamError<reqwest::Error>) -> ModelError {
    match err {
        EventStreamError::Transport(err) => transport_error(err),
        EventStreamError::Utf8(_) => ModelError::Protocol("the stream is not valid UTF-8".into()),
        EventStreamError::Parser(_) => ModelError::Protocol("invalid SSE framing".into()),
    }
}
