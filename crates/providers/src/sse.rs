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
    events(
        Box::pin(response.bytes_stream()),
        decoder,
        idle_timeout,
        redactor,
    )
}

/// The events of an SSE `body` (see [`sse_stream`]).
fn events<D: SseDecoder + Send + 'static>(
    body: Body,
    decoder: D,
    idle_timeout: Duration,
    redactor: Redactor,
) -> ModelStream {
    let turn = SseTurn {
        body,
        parser: SseParser::default(),
        decoder,
        idle_timeout,
        redactor,
        ready: Vec::new(),
        end: End::Running,
    };
    // One event at a time from the turn's own buffer (reused for the whole turn): no
    // allocation per upstream event.
    Box::pin(futures::stream::unfold(turn, |mut turn| async move {
        let item = turn.next_item().await?;
        Some((item, turn))
    }))
}

type Body = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

/// One streamed turn in progress.
struct SseTurn<D> {
    body: Body,
    parser: SseParser,
    decoder: D,
    idle_timeout: Duration,
    redactor: Redactor,
    /// Events decoded and not yet handed out, in reverse order (the next one is last).
    ready: Vec<ModelEvent>,
    /// What comes once `ready` is empty.
    end: End,
}

/// Whether the turn goes on once its decoded events are handed out.
enum End {
    /// Read the next SSE event.
    Running,
    /// Yield this error, then end.
    Error(ModelError),
    /// The stream is over.
    Over,
}

impl<D: SseDecoder> SseTurn<D> {
    /// The next item of the stream, `None` once it ended.
    async fn next_item(&mut self) -> Option<Result<ModelEvent, ModelError>> {
        if self.ready.is_empty() && matches!(self.end, End::Running) {
            self.read_batch().await;
        }
        if let Some(event) = self.ready.pop() {
            return Some(Ok(event));
        }
        match std::mem::replace(&mut self.end, End::Over) {
            End::Error(err) => Some(Err(err)),
            End::Running | End::Over => None,
        }
    }

    /// Reads on until an SSE event yields events or the turn ends: fills `ready` (reversed),
    /// and sets `end` when the turn is over.
    async fn read_batch(&mut self) {
        // When the wait for the next event times out; set when the first read waits.
        let mut deadline = None;
        loop {
            let step = match self.parser.next_event() {
                Ok(Some(event)) => {
                    deadline = None;
                    self.decoder.data(event.data, &mut self.ready)
                }
                Ok(None) => {
                    let at = *deadline.get_or_insert_with(|| Instant::now() + self.idle_timeout);
                    match tokio::time::timeout_at(at, self.body.next()).await {
                        Err(_) => {
                            self.ready.clear();
                            self.end = End::Error(ModelError::Timeout);
                            return;
                        }
                        Ok(Some(Ok(chunk))) => {
                            self.parser.feed(&chunk);
                            continue;
                        }
                        Ok(Some(Err(err))) => Err(transport_error(err)),
                        Ok(None) => self.decoder.end(&mut self.ready).map(|()| Step::Done),
                    }
                }
                Err(err) => Err(ModelError::Protocol(err.to_string())),
            };
            let step = step.map_err(|err| self.redactor.scrub(err));
            match step {
                Ok(Step::Continue) if self.ready.is_empty() => continue,
                Ok(Step::Continue) => {}
                Ok(Step::Done) => {
                    self.drain_ready();
                    self.end = End::Over;
                }
                Err(err) => {
                    if D::DRAIN_AFTER_ERROR {
                        self.drain_ready();
                    }
                    self.end = End::Error(err);
                }
            }
            self.ready.reverse();
            return;
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

#[cfg(test)]
mod tests {
    use engine::model::FinishReason;

    use super::*;

    /// One `TextDelta` per character of a `data` field; `!` fails after the characters before
    /// it; `.` ends the turn with a finish.
    struct Letters;

    impl SseDecoder for Letters {
        fn data(&mut self, data: &str, out: &mut Vec<ModelEvent>) -> Result<Step, ModelError> {
            for letter in data.chars() {
                match letter {
                    '!' => return Err(ModelError::Protocol("bang".into())),
                    '.' => {
                        out.push(ModelEvent::Finish(FinishReason::Stop));
                        return Ok(Step::Done);
                    }
                    letter => out.push(ModelEvent::TextDelta(letter.to_string())),
                }
            }
            Ok(Step::Continue)
        }

        fn end(&mut self, _out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
            Err(ModelError::Transport("cut".into()))
        }
    }

    async fn collect(chunks: &[&'static str]) -> Vec<Result<ModelEvent, ModelError>> {
        let chunks: Vec<Result<Bytes, reqwest::Error>> = chunks
            .iter()
            .map(|chunk| Ok(Bytes::from_static(chunk.as_bytes())))
            .collect();
        let body: Body = Box::pin(futures::stream::iter(chunks));
        let stream = events(body, Letters, Duration::from_secs(5), Redactor::new(None));
        stream.collect().await
    }

    fn text(letter: &str) -> Result<ModelEvent, ModelError> {
        Ok(ModelEvent::TextDelta(letter.into()))
    }

    /// The events of each SSE event come out one by one in their order, across events and
    /// chunks; events that yield nothing are passed over; the stream ends after the terminal
    /// event.
    #[tokio::test]
    async fn events_come_out_in_order_and_the_turn_ends_at_its_terminal_event() {
        let events = collect(&[
            "data: ab\n\ndata:\n\nda",
            "ta: c\n\ndata: d.\n\ndata: e\n\n",
        ])
        .await;
        assert_eq!(
            events,
            vec![
                text("a"),
                text("b"),
                text("c"),
                text("d"),
                Ok(ModelEvent::Finish(FinishReason::Stop)),
            ]
        );
    }

    /// An error comes after the events its SSE event yielded before it, and ends the stream; so
    /// does a body that ends before the terminal event.
    #[tokio::test]
    async fn an_error_follows_the_events_before_it_and_ends_the_stream() {
        let events = collect(&["data: a\n\ndata: bc!d\n\ndata: e\n\n"]).await;
        assert_eq!(
            events,
            vec![
                text("a"),
                text("b"),
                text("c"),
                Err(ModelError::Protocol("bang".into())),
            ]
        );
        let cut = collect(&["data: a\n\n"]).await;
        assert_eq!(
            cut,
            vec![text("a"), Err(ModelError::Transport("cut".into()))]
        );
    }
}
