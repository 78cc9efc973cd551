//! How a run's followers are woken: once per burst of upstream events that are ready together
//! (so the SSE writer takes the burst in one socket write), and at once for each event of a
//! paced upstream (a burst is never waited for).

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use engine::EventStream;
use engine::model::{FinishReason, ModelEvent};
use futures::{Stream, StreamExt as _};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::common::{Harness, PROJECT, Step, Turn, request};

/// Starts a streamed run of model `m` whose turn is `steps`.
async fn start_streamed(h: &Harness, steps: Vec<Step>) -> engine::RunHandle {
    h.model("m").push(Turn::Stream(steps));
    h.engine
        .start(
            PROJECT,
            request(json!({"model": "fake/m", "input": "x", "stream": true})),
        )
        .await
        .expect("the request starts")
}

/// Counts its wakes.
#[derive(Default)]
struct Wakes(AtomicUsize);

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A follower polled by hand from inside the model's stream: the lines it has read so far.
struct Follower {
    events: EventStream,
    waker: Waker,
    lines: Vec<String>,
}

impl Follower {
    /// Reads every line that is there now; `true` once the stream ended.
    fn drain(&mut self) -> bool {
        let mut cx = Context::from_waker(&self.waker);
        loop {
            match Pin::new(&mut self.events).poll_next(&mut cx) {
                Poll::Ready(Some(line)) => self.lines.push(line.to_string()),
                Poll::Ready(None) => return true,
                Poll::Pending => return false,
            }
        }
    }
}

/// A follower that waits when a burst starts, its wakes counted: the turn's first steps wait
/// for [`Watched::attach`], then have the follower read what is there and count its wakes from
/// 0 on.
#[derive(Default)]
struct Watched {
    gate: Arc<Notify>,
    wakes: Arc<Wakes>,
    follower: Arc<Mutex<Option<Follower>>>,
}

impl Watched {
    /// The steps before the burst.
    fn first_steps(&self) -> Vec<Step> {
        let (follower, wakes) = (self.follower.clone(), self.wakes.clone());
        vec![
            Step::Wait(self.gate.clone()),
            Step::Call(Arc::new(move || {
                if let Some(f) = follower.lock().unwrap().as_mut() {
                    assert!(!f.drain());
                }
                wakes.0.store(0, Ordering::SeqCst);
            })),
        ]
    }

    /// Follows the run's events, then lets its turn go on.
    fn attach(&self, handle: &engine::RunHandle) {
        *self.follower.lock().unwrap() = Some(Follower {
            events: Box::pin(handle.events()),
            waker: Waker::from(self.wakes.clone()),
            lines: Vec::new(),
        });
        self.gate.notify_one();
    }

    /// Runs the turn `steps` (then its finish) streamed, with the follower attached, to the end.
    async fn run(&self, h: &Harness, mut steps: Vec<Step>) -> Arc<engine::Finished> {
        steps.push(Step::Event(ModelEvent::Finish(FinishReason::Stop)));
        let handle = start_streamed(h, steps).await;
        self.attach(&handle);
        tokio::time::timeout(Duration::from_secs(10), handle.finish())
            .await
            .unwrap()
            .unwrap()
    }

    /// A step that records how often the follower was woken so far in `into`.
    fn count_into(&self, into: &Arc<Mutex<Vec<usize>>>) -> Step {
        let (wakes, into) = (self.wakes.clone(), into.clone());
        Step::Call(Arc::new(move || {
            into.lock().unwrap().push(wakes.0.load(Ordering::SeqCst));
        }))
    }

    /// The follower, once the run is over.
    fn take(&self) -> Follower {
        self.follower.lock().unwrap().take().unwrap()
    }
}

/// 32 deltas that the upstream has ready at once reach the followers in one wake: a follower
/// waiting when the burst starts is not woken before its last delta is there (it was woken by
/// the first, then read the burst in pieces, one socket write each).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_ready_upstream_events_wakes_the_followers_once() {
    let h = Harness::new();
    let watched = Watched::default();
    // Wakes seen during the burst (from its first delta to its last).
    let during: Arc<Mutex<Vec<usize>>> = Arc::default();
    let mut steps = watched.first_steps();
    for n in 0..32 {
        steps.push(Step::Event(ModelEvent::TextDelta(format!("t{n} "))));
    }
    // After the last delta of the burst: how often was the follower woken?
    steps.push(watched.count_into(&during));
    let finished = watched.run(&h, steps).await;
    assert_eq!(*during.lock().unwrap(), [0], "woken during the burst");
    // The follower then reads every event, in order, to the terminal one.
    let mut f = watched.take();
    assert!(f.drain(), "the log is closed");
    let events: Vec<Value> = f
        .lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (n, event) in events.iter().enumerate() {
        assert_eq!(event["sequence_number"], n as u64);
    }
    let text: String = events.iter().filter_map(|e| e["delta"].as_str()).collect();
    assert_eq!(text, (0..32).map(|n| format!("t{n} ")).collect::<String>());
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some(json!("response.completed"))
    );
    assert_eq!(
        finished.response.status,
        protocol::response::ResponseStatus::Completed
    );
}

/// The run appends a burst of ready upstream events to its log under one hold of the log's
/// lock per bound of events, not one per event (a lock and an unlock were ~2% of the server's
/// CPU per request at 64 in flight): a whole 100-delta answer, from `response.created` to the
/// terminal event, takes a handful; every line still has its sequence number, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_ready_upstream_events_is_appended_under_few_holds_of_the_logs_lock() {
    let h = Harness::new();
    let mut steps: Vec<Step> = (0..100)
        .map(|n| Step::Event(ModelEvent::TextDelta(format!("d{n} "))))
        .collect();
    steps.push(Step::Event(ModelEvent::Finish(FinishReason::Stop)));
    let handle = start_streamed(&h, steps).await;
    // The run is a task of its own: the log is complete once its readers' stream ends.
    let lines: Vec<Arc<str>> =
        tokio::time::timeout(Duration::from_secs(10), handle.events().collect())
            .await
            .unwrap();
    let holds = handle.append_holds();
    let finished = tokio::time::timeout(Duration::from_secs(10), handle.finish())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        finished.response.status,
        protocol::response::ResponseStatus::Completed
    );
    // One per 64 events of the burst and one at its end, one for the events before and after
    // the turn each, one for the terminal event (one per event before: 100 and more).
    assert!(
        holds <= 8,
        "{holds} holds of the log's lock for {} events",
        lines.len()
    );
    let events: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (n, event) in events.iter().enumerate() {
        assert_eq!(event["sequence_number"], n as u64);
    }
    let text: String = events.iter().filter_map(|e| e["delta"].as_str()).collect();
    assert_eq!(text, (0..100).map(|n| format!("d{n} ")).collect::<String>());
    assert!(events.len() > 100, "{} events", events.len());
}

/// A long burst of ready upstream events does not hold back its first lines until it ends: a
/// follower waiting when it starts is woken once the bound of held events is reached (64),
/// while the rest of the burst is still being taken, not before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_burst_wakes_the_followers_at_the_bound_of_held_events() {
    let h = Harness::new();
    let watched = Watched::default();
    // Wakes seen after the 20th delta and after the 150th.
    let seen: Arc<Mutex<Vec<usize>>> = Arc::default();
    let mut steps = watched.first_steps();
    for n in 0..200 {
        steps.push(Step::Event(ModelEvent::TextDelta(format!("t{n} "))));
        if n == 20 || n == 150 {
            steps.push(watched.count_into(&seen));
        }
    }
    watched.run(&h, steps).await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0], 0, "woken after 20 deltas of the burst");
    assert!(seen[1] >= 1, "not woken after 150 deltas of the burst");
    let mut f = watched.take();
    assert!(f.drain(), "the log is closed");
    let text: String = f
        .lines
        .iter()
        .filter_map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["delta"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, (0..200).map(|n| format!("t{n} ")).collect::<String>());
}

/// A paced upstream (the next delta only once the follower has read the one before): each
/// delta reaches the follower while the upstream waits, never held for a burst to end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paced_upstreams_deltas_reach_the_follower_one_by_one() {
    let h = Harness::new();
    let gate = Arc::new(Notify::new());
    let mut steps = Vec::new();
    for n in 0..6 {
        steps.push(Step::Event(ModelEvent::TextDelta(format!("p{n} "))));
        steps.push(Step::Wait(gate.clone()));
    }
    steps.push(Step::Event(ModelEvent::Finish(FinishReason::Stop)));
    let handle = start_streamed(&h, steps).await;
    let mut events = Box::pin(handle.events());
    for n in 0..6 {
        let expected = format!("p{n} ");
        loop {
            let line = tokio::time::timeout(Duration::from_secs(5), events.next())
                .await
                .unwrap_or_else(|_| panic!("delta {n} held while the upstream waits"))
                .unwrap();
            let event: Value = serde_json::from_str(&line).unwrap();
            if event["type"] == "response.output_text.delta" {
                assert_eq!(event["delta"], expected.as_str());
                break;
            }
        }
        gate.notify_one();
    }
    let rest: Vec<Arc<str>> = tokio::time::timeout(Duration::from_secs(5), events.collect())
        .await
        .unwrap();
    assert!(rest.last().unwrap().contains("response.completed"));
}

/// The events of a run's end that wait only for its last store write (the message's closing
/// events) are published with the terminal event once that write is done, in one wake: the
/// stream's end is one socket write, not the closing events first and the terminal event after
/// the write.
#[tokio::test(start_paused = true)]
async fn a_runs_closing_events_leave_with_its_terminal_event() {
    let h = Harness::new();
    let end_gate = Arc::new(Notify::new());
    *h.store.end_gate.lock().unwrap() = Some(end_gate.clone());
    let (first, last) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let steps = vec![
        Step::Event(ModelEvent::TextDelta("a ".to_owned())),
        Step::Wait(first.clone()),
        Step::Event(ModelEvent::TextDelta("b".to_owned())),
        Step::Wait(last.clone()),
        Step::Event(ModelEvent::Finish(FinishReason::Stop)),
    ];
    let handle = start_streamed(&h, steps).await;
    let mut events = Box::pin(handle.events());
    // Each delta the upstream makes the run wait after is published at once.
    for (delta, upstream) in [("a ", &first), ("b", &last)] {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(5), events.next())
                .await
                .expect("a delta is published while the upstream waits")
                .unwrap();
            let event: Value = serde_json::from_str(&line).unwrap();
            if event["type"] == "response.output_text.delta" {
                assert_eq!(event["delta"], delta);
                break;
            }
        }
        upstream.notify_one();
    }
    // The follower waits (its wakes counted) while the turn ends and the run goes to its
    // final write: it is not woken before that write is done, then once.
    let wakes = Arc::new(Wakes::default());
    let waker = Waker::from(wakes.clone());
    let mut cx = Context::from_waker(&waker);
    assert!(events.as_mut().poll_next(&mut cx).is_pending());
    last.notify_one();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        wakes.0.load(Ordering::SeqCst),
        0,
        "woken before the run's final write"
    );
    end_gate.notify_one();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(wakes.0.load(Ordering::SeqCst), 1);
    let mut lines = Vec::new();
    loop {
        match events.as_mut().poll_next(&mut cx) {
            Poll::Ready(Some(line)) => lines.push(line),
            Poll::Ready(None) => break,
            Poll::Pending => panic!("the stream did not end with its terminal event"),
        }
    }
    let events: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        crate::common::types(&events),
        [
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    handle.finish().await.unwrap();
}
