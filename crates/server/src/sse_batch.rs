//! The events of a stream gathered into write batches: the events a run pushes in one burst
//! (the deltas of upstream chunks that arrived together, a step's closing events) leave in one
//! socket write, not one write each.
//!
//! A run pushes its events one at a time, and the stream's task is woken by the first; taking
//! only what is ready at that moment gave one write per event (69 `writev`s per streamed
//! 64-token answer, measured). So once a batch has its first event, the task yields (lets the
//! tasks that are already runnable, the run among them, go first) and takes what arrived
//! meanwhile; it yields again only while that brought more, at most [`MAX_YIELDS`] times.
//! Nothing waits for a timer or for events that are not on their way: a lone event is written
//! after one yield.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt as _};

/// Most yields before a batch is written, however fast events keep coming.
pub const MAX_YIELDS: u32 = 16;

/// The most room the batch's buffer takes at once (a larger `max_events` grows it as needed).
const MAX_FIRST_CAPACITY: usize = 64;

/// See the module docs.
pub struct Batches<S> {
    events: S,
    /// Most events in one batch.
    max_events: usize,
    /// How many yields a batch may wait (0: take what is ready, as `ready_chunks`).
    max_yields: u32,
    batch: Vec<Arc<str>>,
    yields: u32,
    ended: bool,
}

impl<S> Batches<S> {
    pub fn new(events: S, max_events: usize, max_yields: u32) -> Batches<S> {
        Batches {
            events,
            max_events: max_events.max(1),
            max_yields,
            batch: Vec::new(),
            yields: 0,
            ended: false,
        }
    }

    /// Whether a batch is being gathered: a `Pending` from [`Stream::poll_next`] was then a
    /// yield (the task is already woken), not a wait for events.
    pub fn holds_events(&self) -> bool {
        !self.batch.is_empty()
    }
}

impl<S: Stream<Item = Arc<str>> + Unpin> Batches<S> {
    /// Gathers the next batch and hands it to `write` (the SSE writer's frames); the batch's
    /// buffer is kept for the next one, so a batch allocates no list of its own (one grew
    /// 4, 8, …, 64 events and was freed after each write). `None` at the end of the events.
    pub fn poll_write<T>(
        &mut self,
        cx: &mut Context<'_>,
        write: impl FnOnce(&[Arc<str>]) -> T,
    ) -> Poll<Option<T>> {
        match self.poll_gather(cx) {
            Poll::Ready(true) => {
                let written = write(&self.batch);
                self.batch.clear();
                Poll::Ready(Some(written))
            }
            Poll::Ready(false) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Gathers events into `batch`: ready with `true` when the batch is to be written, with
    /// `false` at the end of the events.
    fn poll_gather(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        let before = self.batch.len();
        while !self.ended && self.batch.len() < self.max_events {
            match self.events.poll_next_unpin(cx) {
                Poll::Ready(Some(event)) => {
                    if self.batch.capacity() == 0 {
                        // The stream's first event: room for a whole batch once.
                        self.batch.reserve(self.max_events.min(MAX_FIRST_CAPACITY));
                    }
                    self.batch.push(event);
                }
                Poll::Ready(None) => self.ended = true,
                Poll::Pending => break,
            }
        }
        if self.batch.is_empty() {
            return if self.ended {
                Poll::Ready(false)
            } else {
                Poll::Pending
            };
        }
        let more_may_come = !self.ended && self.batch.len() < self.max_events;
        if more_may_come && self.batch.len() > before && self.yields < self.max_yields {
            self.yields += 1;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.yields = 0;
        Poll::Ready(true)
    }
}

impl<S: Stream<Item = Arc<str>> + Unpin> Stream for Batches<S> {
    type Item = Vec<Arc<str>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match this.poll_gather(cx) {
            Poll::Ready(true) => Poll::Ready(Some(std::mem::take(&mut this.batch))),
            Poll::Ready(false) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    use futures::channel::mpsc;

    use super::*;

    fn event(n: usize) -> Arc<str> {
        Arc::from(format!("e{n}"))
    }

    /// Counts its wakes.
    #[derive(Default)]
    struct Wakes(AtomicUsize);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The batches stream over a channel, polled by hand.
    struct Harness {
        tx: mpsc::UnboundedSender<Arc<str>>,
        batches: Batches<mpsc::UnboundedReceiver<Arc<str>>>,
        wakes: Arc<Wakes>,
    }

    impl Harness {
        fn new(max_events: usize, max_yields: u32) -> Harness {
            let (tx, rx) = mpsc::unbounded();
            Harness {
                tx,
                batches: Batches::new(rx, max_events, max_yields),
                wakes: Arc::default(),
            }
        }

        fn push(&self, n: usize) {
            let _ = self.tx.unbounded_send(event(n));
        }

        fn poll(&mut self) -> Poll<Option<Vec<Arc<str>>>> {
            let waker = std::task::Waker::from(self.wakes.clone());
            let mut cx = Context::from_waker(&waker);
            Pin::new(&mut self.batches).poll_next(&mut cx)
        }
    }

    #[test]
    fn events_pushed_while_the_writer_yields_leave_in_one_batch() {
        let mut h = Harness::new(64, MAX_YIELDS);
        h.push(0);
        assert!(!h.batches.holds_events());
        // The first event: the task yields (woken again at once) instead of writing it alone.
        assert_eq!(h.poll(), Poll::Pending);
        assert_eq!(h.wakes.0.load(Ordering::SeqCst), 1);
        assert!(h.batches.holds_events());
        h.push(1);
        h.push(2);
        assert_eq!(h.poll(), Poll::Pending);
        // Nothing more came during the last yield: the batch leaves.
        assert_eq!(
            h.poll(),
            Poll::Ready(Some(vec![event(0), event(1), event(2)]))
        );
        // Waiting for events is not a yield: no wake of its own.
        let wakes = h.wakes.0.load(Ordering::SeqCst);
        assert_eq!(h.poll(), Poll::Pending);
        assert!(!h.batches.holds_events());
        assert_eq!(h.wakes.0.load(Ordering::SeqCst), wakes);
    }

    #[test]
    fn a_lone_event_leaves_after_one_yield() {
        let mut h = Harness::new(64, MAX_YIELDS);
        h.push(0);
        assert_eq!(h.poll(), Poll::Pending);
        assert_eq!(h.poll(), Poll::Ready(Some(vec![event(0)])));
        drop(h.tx);
        assert_eq!(
            Pin::new(&mut h.batches).poll_next(&mut Context::from_waker(&std::task::Waker::from(
                h.wakes.clone()
            ))),
            Poll::Ready(None)
        );
    }

    #[test]
    fn events_that_keep_coming_leave_after_max_yields() {
        let mut h = Harness::new(1_000, MAX_YIELDS);
        let mut n = 0;
        loop {
            h.push(n);
            n += 1;
            if let Poll::Ready(batch) = h.poll() {
                assert_eq!(batch.map(|b| b.len()), Some(MAX_YIELDS as usize + 1));
                break;
            }
            assert!(n <= MAX_YIELDS as usize, "held back beyond MAX_YIELDS");
        }
    }

    #[test]
    fn without_yields_what_is_ready_leaves_at_once() {
        let mut h = Harness::new(64, 0);
        h.push(0);
        h.push(1);
        assert_eq!(h.poll(), Poll::Ready(Some(vec![event(0), event(1)])));
        assert_eq!(h.poll(), Poll::Pending);
        assert_eq!(h.wakes.0.load(Ordering::SeqCst), 0);
    }

    /// Written in place, batches are the same as the stream's, and every batch is gathered in
    /// the one buffer the first event made room in (no list allocated or grown per batch).
    #[test]
    fn batches_written_in_place_reuse_one_buffer() {
        let mut h = Harness::new(64, MAX_YIELDS);
        let waker = std::task::Waker::from(h.wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let mut buffer = None;
        for round in 0..3 {
            for n in 0..=round * 20 {
                h.push(n);
            }
            let written = loop {
                match h.batches.poll_write(&mut cx, <[Arc<str>]>::to_vec) {
                    Poll::Ready(batch) => break batch,
                    Poll::Pending => {}
                }
            };
            let expected: Vec<Arc<str>> = (0..=round * 20).map(event).collect();
            assert_eq!(written, Some(expected));
            assert!(!h.batches.holds_events());
            assert_eq!(h.batches.batch.capacity(), 64);
            let at = h.batches.batch.as_ptr();
            assert_eq!(*buffer.get_or_insert(at), at, "round {round}");
        }
        drop(h.tx);
        assert_eq!(
            h.batches.poll_write(&mut cx, <[Arc<str>]>::len),
            Poll::Ready(None)
        );
    }

    #[test]
    fn a_batch_holds_at_most_max_events_and_the_end_is_not_waited_for() {
        let mut h = Harness::new(2, MAX_YIELDS);
        for n in 0..5 {
            h.push(n);
        }
        h.tx.close_channel();
        assert_eq!(h.poll(), Poll::Ready(Some(vec![event(0), event(1)])));
        assert_eq!(h.poll(), Poll::Ready(Some(vec![event(2), event(3)])));
        assert_eq!(h.poll(), Poll::Ready(Some(vec![event(4)])));
        assert_eq!(h.poll(), Poll::Ready(None));
    }
}
