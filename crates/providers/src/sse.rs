//! The server-sent-events side every streaming adapter shares: reading the body event by event
//! (our own parser, `sse_parse`) with the idle timeout, feeding each `data` field to the
//! adapter's decoder, scrubbing the key from errors, and leaving the connection reusable once
//! the turn is complete.

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;

use engine::model::{ModelError, ModelEvent, ModelStream};
use futures::{FutureExt, Stream, StreamExt};
use tokio::time::Instant;

use crate::redact::{Redactor, transport_error};
use crate::sse_parse::SseParser;

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
        body: Box::pin(response.bytes_stream()),
        parser: SseParser::default(),
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

type Body = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

/// One streamed turn in progress.
struct SseTurn<D> {
    body: Body,
    parser: SseParser,
    decoder: D,
    idle_timeout: Duration,
    redactor: Redactor,
}

impl<D: SseDecoder> SseTurn<D> {
    /// The events of the next SSE event that yields any, and whether the turn goes on.
    async fn next_batch(&mut self) -> (Vec<Result<ModelEvent, ModelError>>, bool) {
        let mut out = Vec::new();
        // When the wait for the next event times out; set when the first read waits.
        let mut deadline = None;
        loop {
            let step = match self.parser.next_event() {
                Ok(Some(event)) => {
                    deadline = None;
                    self.decoder.data(event.data, &mut out)
                }
                Ok(None) => {
                    let at = *deadline.get_or_insert_with(|| Instant::now() + self.idle_timeout);
                    match tokio::time::timeout_at(at, self.body.next()).await {
                        Err(_) => return (vec![Err(ModelError::Timeout)], false),
                        Ok(Some(Ok(chunk))) => {
                            self.parser.feed(&chunk);
                            continue;
                        }
                        Ok(Some(Err(err))) => Err(transport_error(err)),
                        Ok(None) => self.decoder.end(&mut out).map(|()| Step::Done),
                    }
                }
                Err(err) => Err(ModelError::Protocol(err.to_string())),
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
            match self.body.next().now_or_never() {
                Some(Some(Ok(_))) => continue,
                Some(Some(Err(_)) | None) | None => return,
            }
        }
    }
}
