//! The server-sent-events side every streaming adapter shares: reading the body event by event
//! (our own parser, `sse_parse`) with the idle timeout, feeding each `data` field to the
//! adapter's decoder, scrubbing the key from errors, and leaving the connection reusable once
//! the turn is complete.

use std::pin::Pin;
use std::time::Duration;

use engine::model::{ModelError, ModelEvent, ModelStream};
use std::future::Future;
use std::task::{Context, Poll, Waker};

use futures::{FutureExt, Stream, StreamExt};
use tokio::time::{Instant, Sleep};

use crate::redact::Redactor;
use crate::sse_parse::{Data, SseError, SseParser};
use crate::transport::BodyStream;

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

    /// [`SseDecoder::data`] for a field whose bytes were not checked to be UTF-8 yet
    /// ([`Data::Unchecked`]): bytes that are not UTF-8 are refused with the parser's error, as
    /// if the parser had checked them, and nothing of them is decoded. By default checked
    /// whole, then decoded as text.
    fn data_bytes(&mut self, data: &[u8], out: &mut Vec<ModelEvent>) -> Result<Step, ModelError> {
        let data = Data::Unchecked(data).checked().map_err(parse_error)?;
        self.data(data, out)
    }

    /// The body ended without a terminal event: closes the turn if it is complete all the same,
    /// else says why it is not.
    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError>;
}

/// Decodes one event's `data` with `decoder` (checked to be UTF-8 by the parser or by the
/// decoder).
pub(crate) fn decode_data<D: SseDecoder>(
    decoder: &mut D,
    data: Data<'_>,
    out: &mut Vec<ModelEvent>,
) -> Result<Step, ModelError> {
    match data {
        Data::Text(data) => decoder.data(data, out),
        Data::Unchecked(data) => decoder.data_bytes(data, out),
    }
}

/// How an error of the SSE framing ends a turn.
pub(crate) fn parse_error(err: SseError) -> ModelError {
    ModelError::Protocol(err.to_string())
}

/// The events of an SSE `body`, decoded by `decoder`, each error scrubbed by `redactor`;
/// silence longer than `idle_timeout` between two events ends the stream with
/// [`ModelError::Timeout`].
pub(crate) fn sse_stream<D: SseDecoder + Send + 'static>(
    body: Body,
    decoder: D,
    idle_timeout: Duration,
    redactor: Redactor,
) -> ModelStream {
    Box::pin(SseTurn {
        body,
        parser: SseParser::default(),
        decoder,
        idle_timeout,
        redactor,
        ready: Vec::new(),
        end: End::Running,
        deadline: None,
        sleep: None,
        timer_waker: None,
    })
}

type Body = BodyStream;

/// One streamed turn in progress, itself the stream of its events: polled in place, so the
/// turn (parser, decoder, buffers) is never moved between events, and no future is built per
/// event.
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
    /// When the wait for the next SSE event times out: set when a read first waits, cleared
    /// when an event is read or a batch is handed out.
    deadline: Option<Instant>,
    /// The idle timer, made on the turn's first wait (see [`SseTurn::idle_timer`]).
    sleep: Option<Pin<Box<Sleep>>>,
    /// The waker the idle timer holds (it was last polled with it and is still armed).
    timer_waker: Option<Waker>,
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

// The turn is never pinned in place: its fields are only reached through `&mut` (the body and
// the timer are pinned in boxes of their own).
impl<D> Unpin for SseTurn<D> {}

impl<D: SseDecoder> Stream for SseTurn<D> {
    type Item = Result<ModelEvent, ModelError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let turn = self.get_mut();
        if turn.ready.is_empty() && matches!(turn.end, End::Running) {
            if turn.read_batch(cx).is_pending() {
                return Poll::Pending;
            }
            turn.deadline = None;
        }
        if let Some(event) = turn.ready.pop() {
            return Poll::Ready(Some(Ok(event)));
        }
        Poll::Ready(match std::mem::replace(&mut turn.end, End::Over) {
            End::Error(err) => Some(Err(err)),
            End::Running | End::Over => None,
        })
    }
}

impl<D: SseDecoder> SseTurn<D> {
    /// Reads on until an SSE event yields events or the turn ends: fills `ready` (reversed),
    /// and sets `end` when the turn is over. Pending while the body has nothing more.
    fn read_batch(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            let step = match self.parser.next_raw() {
                Ok(Some(event)) => {
                    self.deadline = None;
                    decode_data(&mut self.decoder, event.data, &mut self.ready)
                }
                Ok(None) => match self.body.poll_next_unpin(cx) {
                    Poll::Ready(Some(Ok(chunk))) => {
                        self.parser.feed(chunk);
                        continue;
                    }
                    Poll::Ready(Some(Err(err))) => Err(err),
                    Poll::Ready(None) => self.decoder.end(&mut self.ready).map(|()| Step::Done),
                    Poll::Pending => {
                        if self.idle_timer(cx).is_ready() {
                            self.ready.clear();
                            self.end = End::Error(ModelError::Timeout);
                            return Poll::Ready(());
                        }
                        return Poll::Pending;
                    }
                },
                Err(err) => Err(parse_error(err)),
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
            return Poll::Ready(());
        }
    }

    /// Polls the idle timer of the current wait (started now if the wait just began): ready
    /// once the wait's deadline passed.
    ///
    /// One timer serves the whole turn and is not moved for every wait (each move re-files it
    /// in tokio's timer wheel, as a new timer per wait did): a wait's deadline is never earlier
    /// than an earlier wait's, so the timer may be behind, never ahead; when it fires behind
    /// the current deadline it is moved to it then, at most once per idle timeout.
    ///
    /// Nor is it polled again while it is armed and holds this task's waker: the poll would
    /// only register the same waker again (most waits of a stream are for the next chunk, and
    /// the timer fires on none of them). When it fires it wakes the task, and this poll sees
    /// it elapsed.
    fn idle_timer(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let at = *self
            .deadline
            .get_or_insert_with(|| Instant::now() + self.idle_timeout);
        if let (Some(sleep), Some(waker)) = (&self.sleep, &self.timer_waker)
            && !sleep.is_elapsed()
            && waker.will_wake(cx.waker())
        {
            return Poll::Pending;
        }
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
        loop {
            if sleep.as_mut().poll(cx).is_pending() {
                match &mut self.timer_waker {
                    Some(waker) => waker.clone_from(cx.waker()),
                    None => self.timer_waker = Some(cx.waker().clone()),
                }
                return Poll::Pending;
            }
            if sleep.deadline() >= at {
                return Poll::Ready(());
            }
            sleep.as_mut().reset(at);
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
    use bytes::Bytes;
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
        let chunks: Vec<Result<Bytes, ModelError>> = chunks
            .iter()
            .map(|chunk| Ok(Bytes::from_static(chunk.as_bytes())))
            .collect();
        let body: Body = Box::pin(futures::stream::iter(chunks));
        let stream = sse_stream(body, Letters, Duration::from_secs(5), Redactor::new(None));
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

    /// The body's chunks, each after its pause (on tokio's clock), then nothing more for good.
    fn paced(chunks: Vec<(u64, &'static str)>) -> Body {
        let body = futures::stream::unfold(chunks.into_iter(), |mut chunks| async move {
            match chunks.next() {
                Some((pause, chunk)) => {
                    tokio::time::sleep(Duration::from_secs(pause)).await;
                    Some((Ok(Bytes::from_static(chunk.as_bytes())), chunks))
                }
                None => futures::future::pending().await,
            }
        });
        Box::pin(body)
    }

    async fn collect_paced(
        chunks: Vec<(u64, &'static str)>,
    ) -> Vec<Result<ModelEvent, ModelError>> {
        let stream = sse_stream(
            paced(chunks),
            Letters,
            Duration::from_secs(5),
            Redactor::new(None),
        );
        stream.collect().await
    }

    /// The idle timeout counts from the last SSE event, not from the last chunk: events 4 s
    /// apart pass (20 s in all), an event whose pieces arrive 4 s apart but span 8 s does not;
    /// events read in one batch (or one chunk) leave the timer untouched for the next wait.
    #[tokio::test(start_paused = true)]
    async fn the_idle_timeout_runs_from_the_last_event_across_waits() {
        let events = collect_paced(vec![
            (4, "data: a\n\n"),
            (4, "data: b\n\ndata: c\n\n"),
            (4, "data: d\n\n"),
            (4, "data: e\n\n"),
            (4, "data: f.\n\n"),
        ])
        .await;
        assert_eq!(
            events,
            vec![
                text("a"),
                text("b"),
                text("c"),
                text("d"),
                text("e"),
                text("f"),
                Ok(ModelEvent::Finish(FinishReason::Stop)),
            ]
        );
        let start = Instant::now();
        let events = collect_paced(vec![(1, "data: a\n\n"), (4, "da"), (4, "ta: b\n\n")]).await;
        assert_eq!(events, vec![text("a"), Err(ModelError::Timeout)]);
        assert_eq!(start.elapsed(), Duration::from_secs(6));
        // Silence from the start: the first wait times out too.
        let start = Instant::now();
        let events = collect_paced(Vec::new()).await;
        assert_eq!(events, vec![Err(ModelError::Timeout)]);
        assert_eq!(start.elapsed(), Duration::from_secs(5));
    }
}
