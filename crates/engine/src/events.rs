//! The event fan-out of one run: an append-only in-memory log of serialized wire events.
//!
//! The run appends each event once (serialized once); any number of readers follow it from any
//! position (the SSE writer from 0, a resume from `starting_after + 1`), so a slow reader never
//! makes the run wait and never loses an event. The same lines are flushed to the store.
//!
//! The run appends the events of one burst (the deltas of upstream chunks that arrived
//! together, a step's closing events) without waking the readers, then wakes them once
//! ([`EventLog::announce`]): before it waits for anything (the next upstream event, a tool, the
//! store, the end), and at the latest every [`MAX_HELD_EVENTS`] events or [`MAX_HELD_BYTES`], so
//! the SSE writer takes a burst in one socket write, a large burst does not hold back its first
//! bytes, and a paced upstream's events leave one by one as they come. (The events of a run's
//! end that wait only for its last store write are woken for with the terminal event, after
//! that write: `run/driver.rs`.)
//!
//! The run appends a burst's events under one hold of the log's lock ([`EventLog::appender`]),
//! not one per event: a lock and an unlock are two atomic read-modify-writes, which were ~2% of
//! the server's CPU per non-streamed request at 64 in flight with one per event
//! (docs/benchmarks.md, "Issue 18, twenty-second pass").

use std::future::Future as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use futures::Stream;
use protocol::events::{EventData, StreamEvent};
use tokio::sync::Notify;
use tokio::sync::futures::OwnedNotified;

use crate::store::EventRecord;

/// The largest buffer a run keeps for writing its event lines (`Appender::push_line`).
const MAX_SCRATCH: usize = 64 * 1024;

/// Most events appended without waking the readers (see the module docs).
pub(crate) const MAX_HELD_EVENTS: usize = 64;

/// Most bytes of lines appended without waking the readers.
pub(crate) const MAX_HELD_BYTES: usize = 32 * 1024;

/// The lines a log has room for from the start: a short answer's (its deltas and a dozen
/// events around them) without growing the list (which grew 4, 8, …, 128, copying it each
/// time, six times for a 64-token answer). 1.5 KiB per run.
const FIRST_CAPACITY: usize = 96;

/// The events of one run.
#[derive(Debug)]
pub struct EventLog {
    state: Mutex<LogState>,
    /// The number of events appended (`state.events.len()`, set under the lock by each
    /// append): the next sequence number, read without the lock. Only the run appends to its
    /// log, so the number stays free between its read and the append.
    appended: AtomicUsize,
    /// Wakes the readers waiting for a change (an append, the close). One `Notify`: a `watch`
    /// channel woke through eight of them per event, with nobody waiting most of the time.
    changed: Arc<Notify>,
}

#[derive(Debug)]
struct LogState {
    /// One line of JSON per event; index = sequence number.
    events: Vec<Arc<str>>,
    closed: bool,
    /// Events appended since the readers were last woken, and their bytes.
    held_events: usize,
    held_bytes: usize,
    /// How many times the lock was taken to append ([`EventLog::append_holds`]).
    append_holds: usize,
}

impl EventLog {
    pub fn new() -> Arc<EventLog> {
        Arc::new(EventLog {
            state: Mutex::new(LogState {
                events: Vec::with_capacity(FIRST_CAPACITY),
                closed: false,
                held_events: 0,
                held_bytes: 0,
                append_holds: 0,
            }),
            appended: AtomicUsize::new(0),
            changed: Arc::new(Notify::new()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends an event with the next sequence number and wakes the readers; returns the
    /// record.
    pub fn push(&self, data: EventData) -> EventRecord {
        let record = record(self.next_sequence_number(), data);
        self.publish(&record);
        record
    }

    /// Takes the lock to append the events of a burst under one hold: [`Appender`].
    pub(crate) fn appender(&self) -> Appender<'_> {
        let mut state = self.lock();
        state.append_holds += 1;
        Appender {
            log: self,
            state,
            wake: false,
        }
    }

    /// How many times the log's lock was taken to append events: a burst's events are
    /// appended under one hold ([`EventLog::appender`]). A measure for tests and benchmarks.
    pub fn append_holds(&self) -> usize {
        self.lock().append_holds
    }

    /// Serializes an event with the next sequence number without publishing it: the run stores
    /// its final response and terminal event together, then publishes. Only the run appends to
    /// its log, so the number stays free until then.
    pub fn prepare(&self, data: EventData) -> EventRecord {
        record(self.next_sequence_number(), data)
    }

    /// The sequence number of the next event appended.
    pub(crate) fn next_sequence_number(&self) -> u64 {
        self.appended.load(Ordering::Acquire) as u64
    }

    /// Appends a prepared event and wakes the readers.
    pub fn publish(&self, record: &EventRecord) {
        self.append(record);
        self.announce();
    }

    /// Appends a prepared event, held from the readers until [`EventLog::announce`] (or the
    /// bound of a burst: then they are woken now).
    pub(crate) fn append(&self, record: &EventRecord) {
        self.appender().append(record);
    }

    /// Wakes the readers if events were appended since they were last woken.
    pub(crate) fn announce(&self) {
        let mut state = self.lock();
        if state.held_events == 0 {
            return;
        }
        state.held_events = 0;
        state.held_bytes = 0;
        drop(state);
        self.changed.notify_waiters();
    }

    /// Marks the log complete (and wakes the readers): readers end after the last event.
    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.held_events = 0;
        state.held_bytes = 0;
        drop(state);
        self.changed.notify_waiters();
    }

    /// Events from `from` on, as records sharing the log's bytes.
    pub fn records_from(&self, from: usize) -> Vec<EventRecord> {
        let state = self.lock();
        state
            .events
            .iter()
            .enumerate()
            .skip(from)
            .map(|(seq, line)| EventRecord {
                sequence_number: seq as u64,
                data: Arc::clone(line),
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        self.appended.load(Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Follows the log from sequence number `from`, ending after the last event once closed.
    pub fn follow(self: &Arc<Self>, from: usize) -> Follow {
        Follow {
            log: self.clone(),
            next: from,
            buffer: Vec::new(),
            waiting: Box::pin(Arc::clone(&self.changed).notified_owned()),
            wait: Wait::Unarmed,
        }
    }
}

/// The log's lock, held to append the events of one burst ([`EventLog::appender`]). Each
/// event takes the next sequence number, as [`EventLog::push`]'s would; the readers are
/// woken when the appender is dropped if the burst reached the bound of events or bytes held
/// from them (or [`Appender::announce`] asked), and otherwise by the run's next
/// [`EventLog::announce`]. Hold it only for work that does not wait: a reader looking at the
/// log meanwhile waits for it.
pub(crate) struct Appender<'a> {
    log: &'a EventLog,
    state: MutexGuard<'a, LogState>,
    /// Whether to wake the readers when dropped.
    wake: bool,
}

impl Appender<'_> {
    /// The sequence number of the next event appended.
    pub(crate) fn next_sequence_number(&self) -> u64 {
        self.state.events.len() as u64
    }

    /// Appends an event with the next sequence number, writing the line in `scratch` first, a
    /// buffer the run reuses for every event: the log keeps each line in an `Arc<str>` of its
    /// own (shared with the store and the readers), so the line is copied once into it either
    /// way, and writing it in a reused buffer saves the allocation of a `String` per event.
    pub(crate) fn push_in(&mut self, data: EventData, scratch: &mut String) {
        self.push_line(scratch, |out, sequence_number| {
            StreamEvent {
                data,
                sequence_number,
            }
            .write_json_line(out)
        })
    }

    /// Appends the line `write` writes (in `scratch`) for the next sequence number, as
    /// [`Appender::push_in`]'s. (The line's only reference goes to the log: the store and the
    /// readers take theirs from it.)
    pub(crate) fn push_line(
        &mut self,
        scratch: &mut String,
        write: impl FnOnce(&mut String, u64) -> Result<(), serde_json::Error>,
    ) {
        let sequence_number = self.next_sequence_number();
        scratch.clear();
        if let Err(err) = write(scratch, sequence_number) {
            *scratch = failed_line(&err, sequence_number);
        }
        let line: Arc<str> = Arc::from(scratch.as_str());
        if scratch.capacity() > MAX_SCRATCH {
            // One large event (a big tool result) does not keep its buffer for the whole run.
            *scratch = String::new();
        }
        self.append_line(line);
    }

    /// Appends a prepared event (its sequence number the next one: see
    /// [`EventLog::prepare`]).
    pub(crate) fn append(&mut self, record: &EventRecord) {
        self.append_line(Arc::clone(&record.data));
    }

    /// Wakes the readers when the appender is dropped if events were appended since they were
    /// last woken: [`EventLog::announce`] without taking the lock again.
    pub(crate) fn announce(&mut self) {
        if self.state.held_events > 0 {
            self.state.held_events = 0;
            self.state.held_bytes = 0;
            self.wake = true;
        }
    }

    fn append_line(&mut self, line: Arc<str>) {
        let state = &mut *self.state;
        state.held_bytes += line.len();
        state.events.push(line);
        self.log
            .appended
            .store(state.events.len(), Ordering::Release);
        state.held_events += 1;
        if state.held_events >= MAX_HELD_EVENTS || state.held_bytes >= MAX_HELD_BYTES {
            state.held_events = 0;
            state.held_bytes = 0;
            self.wake = true;
        }
    }
}

impl Drop for Appender<'_> {
    fn drop(&mut self) {
        if self.wake {
            // Under the lock, released right after: a reader woken takes it once it is.
            self.log.changed.notify_waiters();
        }
    }
}

/// A reader of a log ([`EventLog::follow`]): a stream polled in place (no future made per
/// line). It takes every line there is under one lock and hands them out one by one; once it
/// has handed out all and a look found nothing new, it is parked: its polls then poll only the
/// wait for the log's next change, and it looks at the log again only once woken. So a burst
/// the run holds back is seen when the run announces it, not line by line as it is appended
/// (the SSE writer's yields poll the reader while a burst is being appended).
pub struct Follow {
    log: Arc<EventLog>,
    next: usize,
    /// Lines taken under one lock, handed out one by one (the next one last).
    buffer: Vec<Arc<str>>,
    /// The wait for the log's next change, kept for the reader's whole life and made again in
    /// place for each wait.
    waiting: Pin<Box<OwnedNotified>>,
    wait: Wait,
}

/// Where a [`Follow`]'s wait stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Wait {
    /// Not registered: registered before the next look.
    Unarmed,
    /// Registered before the last look, which found lines: the next look (when those are
    /// handed out) needs no registration of its own, a change since then has woken `waiting`.
    Armed,
    /// Registered, and the last look found nothing: only `waiting` is polled until it fires.
    Parked,
}

impl Stream for Follow {
    type Item = Arc<str>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Arc<str>>> {
        let this = self.get_mut();
        loop {
            if let Some(line) = this.buffer.pop() {
                return Poll::Ready(Some(line));
            }
            if this.wait == Wait::Parked {
                match this.waiting.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    // Changed since the registration: register anew, then look.
                    Poll::Ready(()) => this.wait = Wait::Unarmed,
                }
            }
            if this.wait == Wait::Unarmed {
                // Register for the next wake-up *before* looking, so a change made after the
                // look wakes the wait (`notify_waiters` wakes only registered waiters).
                this.waiting
                    .set(Arc::clone(&this.log.changed).notified_owned());
                this.waiting.as_mut().enable();
                this.wait = Wait::Armed;
            }
            let state = this.log.lock();
            if this.next < state.events.len() {
                this.buffer
                    .extend(state.events[this.next..].iter().rev().cloned());
                this.next = state.events.len();
                continue;
            }
            if state.closed {
                return Poll::Ready(None);
            }
            drop(state);
            this.wait = Wait::Parked;
        }
    }
}

/// One event serialized with its sequence number, as the log and the store keep it.
pub(crate) fn record(sequence_number: u64, data: EventData) -> EventRecord {
    let event = StreamEvent {
        data,
        sequence_number,
    };
    let line = event
        .to_json_line()
        .unwrap_or_else(|err| failed_line(&err, sequence_number));
    EventRecord {
        sequence_number,
        data: Arc::from(line),
    }
}

/// Serializing wire types to JSON cannot fail (string keys, no non-finite floats are produced
/// by the engine); the line of an event that did anyway is an error event rather than a panic.
fn failed_line(err: &serde_json::Error, sequence_number: u64) -> String {
    format!(
        r#"{{"type":"error","message":"event serialization failed: {err}","sequence_number":{sequence_number}}}"#
    )
}

impl crate::hosted::EventSink for EventLog {
    fn emit(&self, event: EventData) {
        self.push(event);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures::StreamExt;
    use protocol::events::EventData;

    use super::{EventLog, MAX_HELD_EVENTS};

    fn delta(text: &str) -> EventData {
        EventData::OutputTextDelta {
            item_id: "msg_1".to_owned(),
            output_index: 0,
            content_index: 0,
            delta: text.to_owned(),
            logprobs: Vec::new(),
        }
    }

    /// An event is serialized once: the record the run gets back, the rows flushed to the store
    /// and the lines a reader (the SSE writer) follows are the same bytes, not copies.
    #[tokio::test]
    async fn the_log_the_store_rows_and_the_readers_share_each_events_bytes() {
        let log = EventLog::new();
        let first = log.push(delta("Hel"));
        let second = log.push(delta("lo"));
        log.close();
        let flushed = log.records_from(0);
        assert_eq!(flushed.len(), 2);
        assert_eq!(flushed[0].sequence_number, 0);
        assert_eq!(flushed[1].sequence_number, 1);
        assert!(Arc::ptr_eq(&flushed[0].data, &first.data));
        assert!(Arc::ptr_eq(&flushed[1].data, &second.data));
        let followed: Vec<Arc<str>> = log.follow(1).collect().await;
        assert_eq!(followed.len(), 1);
        assert!(Arc::ptr_eq(&followed[0], &second.data));
        assert!(second.data.contains(r#""delta":"lo""#));
        assert!(second.data.contains(r#""sequence_number":1"#));
    }

    /// Lines written in a buffer reused from event to event are each event's own line (nothing
    /// left from the one before), and one large event does not leave its buffer behind.
    #[test]
    fn lines_written_in_a_reused_buffer_are_each_events_line() {
        let log = EventLog::new();
        let mut scratch = String::new();
        let large = "x".repeat(100_000);
        let texts = ["Hello", "", large.as_str(), "lo"];
        for text in texts {
            log.appender().push_in(delta(text), &mut scratch);
            assert!(scratch.capacity() <= super::MAX_SCRATCH);
        }
        let records = log.records_from(0);
        for (sequence_number, (record, text)) in (0u64..).zip(records.iter().zip(texts)) {
            let expected = protocol::events::StreamEvent {
                data: delta(text),
                sequence_number,
            }
            .to_json_line()
            .unwrap_or_default();
            assert_eq!(record.sequence_number, sequence_number);
            assert_eq!(*record.data, *expected);
        }
        assert_eq!(records.len(), 4);
    }

    /// A reader waiting for the next event is woken by each append and by the close, however
    /// the appends and its waits interleave (each round lets the reader run first or not).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waiting_reader_sees_every_append_and_the_close() {
        for round in 0..200 {
            let log = EventLog::new();
            let reader = tokio::spawn(log.follow(0).collect::<Vec<Arc<str>>>());
            for n in 0..5 {
                if (round + n) % 3 == 0 {
                    tokio::task::yield_now().await;
                }
                log.push(delta(&n.to_string()));
            }
            if round % 2 == 0 {
                tokio::task::yield_now().await;
            }
            log.close();
            let lines = tokio::time::timeout(std::time::Duration::from_secs(5), reader)
                .await
                .map(|joined| joined.map(|lines| lines.len()));
            assert!(matches!(lines, Ok(Ok(5))), "round {round}: {lines:?}");
        }
    }

    /// Counts its wakes.
    #[derive(Default)]
    struct Wakes(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// A reader polled by hand: it hands out every line there is (held ones too) when it
    /// looks; once a look found nothing it is parked, and a held append is not seen by its
    /// polls (the SSE writer's yields) until the announce wakes it; it reads on from where it
    /// was after each wake, and ends at the close.
    #[test]
    fn a_parked_reader_looks_again_only_when_woken() {
        use std::task::{Context, Poll};

        let log = EventLog::new();
        let mut scratch = String::new();
        let wakes = Arc::new(Wakes::default());
        let waker = std::task::Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let mut reader = log.follow(0);
        let mut poll = |cx: &mut Context<'_>| match reader.poll_next_unpin(cx) {
            Poll::Ready(Some(line)) => Some(Some(line.to_string())),
            Poll::Ready(None) => Some(None),
            Poll::Pending => None,
        };
        let count = || wakes.0.load(std::sync::atomic::Ordering::SeqCst);
        let delta_of = |line: Option<Option<String>>| {
            let line = line.flatten().unwrap_or_default();
            let event: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
            event["delta"].as_str().unwrap_or_default().to_owned()
        };
        // Held lines there at the first look are handed out.
        log.appender().push_in(delta("a"), &mut scratch);
        log.appender().push_in(delta("b"), &mut scratch);
        assert_eq!(delta_of(poll(&mut cx)), "a");
        assert_eq!(delta_of(poll(&mut cx)), "b");
        assert_eq!(poll(&mut cx), None);
        // Parked: held appends are not looked for, however often it is polled.
        log.appender().push_in(delta("c"), &mut scratch);
        log.appender().push_in(delta("d"), &mut scratch);
        for _ in 0..4 {
            assert_eq!(poll(&mut cx), None);
        }
        assert_eq!(count(), 0);
        // The announce wakes it, and it takes the burst.
        log.announce();
        assert_eq!(count(), 1);
        assert_eq!(delta_of(poll(&mut cx)), "c");
        // A line held while it hands out a burst is taken at the look that follows the burst.
        log.appender().push_in(delta("e"), &mut scratch);
        assert_eq!(delta_of(poll(&mut cx)), "d");
        assert_eq!(delta_of(poll(&mut cx)), "e");
        assert_eq!(poll(&mut cx), None);
        // A change between its look and its next poll is seen at that poll.
        log.push(delta("f"));
        assert_eq!(count(), 2);
        log.push(delta("g"));
        assert_eq!(delta_of(poll(&mut cx)), "f");
        assert_eq!(delta_of(poll(&mut cx)), "g");
        assert_eq!(poll(&mut cx), None);
        log.close();
        assert_eq!(count(), 3);
        assert_eq!(poll(&mut cx), Some(None));
    }

    /// A burst appended through one appender takes the lock once: its lines get the next
    /// sequence numbers in order, a parked reader is not woken while it is held, and is woken
    /// once when it is dropped if the burst reached the bound (or the appender announced).
    #[test]
    fn an_appenders_burst_takes_the_lock_once_and_wakes_at_its_end() {
        use std::task::{Context, Poll};

        let log = EventLog::new();
        let mut scratch = String::new();
        let wakes = Arc::new(Wakes::default());
        let waker = std::task::Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let mut reader = log.follow(0);
        let count = || wakes.0.load(std::sync::atomic::Ordering::SeqCst);
        assert!(reader.poll_next_unpin(&mut cx).is_pending());
        let before = log.append_holds();
        {
            let mut appender = log.appender();
            for n in 0..MAX_HELD_EVENTS + 36 {
                assert_eq!(appender.next_sequence_number(), n as u64);
                appender.push_in(delta(&n.to_string()), &mut scratch);
            }
            assert_eq!(count(), 0, "woken while the burst is appended");
        }
        assert_eq!(log.append_holds(), before + 1);
        assert_eq!(count(), 1, "woken once, at the burst's end");
        let mut seen = Vec::new();
        while let Poll::Ready(Some(line)) = reader.poll_next_unpin(&mut cx) {
            let event: serde_json::Value = serde_json::from_str(&line).unwrap();
            seen.push((
                event["sequence_number"].as_u64().unwrap(),
                event["delta"].clone(),
            ));
        }
        let expected: Vec<_> = (0..MAX_HELD_EVENTS + 36)
            .map(|n| (n as u64, serde_json::json!(n.to_string())))
            .collect();
        assert_eq!(seen, expected);
        // A short burst is held from the reader until an announce, then woken for once.
        log.appender().push_in(delta("x"), &mut scratch);
        assert_eq!(count(), 1);
        log.appender().announce();
        assert_eq!(count(), 2);
        // With nothing held, an announce wakes no one.
        log.appender().announce();
        assert_eq!(count(), 2);
        assert_eq!(log.append_holds(), before + 4);
    }

    /// No wake-up is lost: many readers, each on a task of its own, follow a log a writer on
    /// another thread appends to in announced bursts of every size (and yields between, so
    /// the readers' looks and parks interleave with the appends every way); each reader gets
    /// every line in order and ends at the close. A lost wake-up would leave a reader parked
    /// for ever (the timeout).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_readers_of_a_log_written_concurrently_see_every_line() {
        const READERS: usize = 16;
        const LINES: usize = 300;
        for round in 0..40 {
            let log = EventLog::new();
            let readers: Vec<_> = (0..READERS)
                .map(|_| {
                    let lines = log.follow(0);
                    tokio::spawn(async move {
                        futures::pin_mut!(lines);
                        let mut seen = Vec::new();
                        while let Some(line) = lines.next().await {
                            seen.push(line);
                            if seen.len() % 7 == 0 {
                                tokio::task::yield_now().await;
                            }
                        }
                        seen
                    })
                })
                .collect();
            let writer = {
                let log = log.clone();
                std::thread::spawn(move || {
                    let mut scratch = String::new();
                    let mut n = 0;
                    while n < LINES {
                        let burst = 1 + (n * 7 + round) % 5;
                        for _ in 0..burst.min(LINES - n) {
                            log.appender().push_in(delta(&n.to_string()), &mut scratch);
                            n += 1;
                        }
                        log.announce();
                        if (n + round) % 3 == 0 {
                            std::thread::yield_now();
                        }
                    }
                    log.close();
                })
            };
            for reader in readers {
                let seen = tokio::time::timeout(std::time::Duration::from_secs(10), reader)
                    .await
                    .unwrap_or_else(|_| panic!("round {round}: a reader was never woken"))
                    .unwrap_or_default();
                assert_eq!(seen.len(), LINES, "round {round}");
                for (n, line) in seen.iter().enumerate() {
                    assert!(
                        line.contains(&format!(r#""delta":"{n}""#)),
                        "round {round}: {line}"
                    );
                }
            }
            assert!(writer.join().is_ok());
        }
    }
}
