//! What depends on time, under a paused clock: the 500 ms flush of a long turn, lease renewal of
//! background runs, runs whose worker died, crash recovery, and retention.

use std::sync::Arc;
use std::time::Duration;

use engine::Clock;
use engine::EngineConfig;
use engine::model::ModelEvent;
use engine::store::{JobState, JobStore};
use protocol::response::ResponseStatus;
use serde_json::json;
use tokio::sync::Notify;

use crate::common::{Harness, PROJECT, Step, Turn, read_to_first_delta, request, types};

#[tokio::test(start_paused = true)]
async fn a_long_turn_reaches_the_store_every_500_ms() {
    let h = Harness::new();
    let (handle, gate) = h
        .start_paused(
            json!({"model": "fake/m", "input": "x"}),
            "first words",
            " and the rest",
        )
        .await;
    let id = handle.id.clone();
    let mut events = Box::pin(handle.events());
    let seen = read_to_first_delta(&mut events).await;
    // Nothing is written per event: before the first tick the store has none of them.
    assert!(h.store.events_of(&id).is_empty());
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(h.store.events_of(&id).is_empty());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let stored = h.store.events_of(&id);
    assert_eq!(stored.len(), seen, "{:?}", types(&stored));
    // The first flush is the run's first write: its row and its events in one transaction.
    assert_eq!(h.store.lock().writes[&id], 1);
    assert_eq!(h.store.status_of(&id), Some(ResponseStatus::InProgress));
    // Quiet ticks write nothing more.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(h.store.lock().writes[&id], 1);
    gate.notify_one();
    let finished = handle.finish().await.unwrap();
    assert_eq!(finished.response.status, ResponseStatus::Completed);
    assert_eq!(
        types(&h.store.events_of(&id)).last().map(String::as_str),
        Some("response.completed")
    );
}

/// A turn whose model answers at once takes no time: nothing in the run waits on a timer (the
/// flush timer's first tick, awaited as the turn began, put up to 1 ms in front of every turn:
/// tokio rounds a deadline up to the next millisecond). The paused clock moves only when
/// something waits on it; it starts half-way through a millisecond.
#[tokio::test(start_paused = true)]
async fn a_turn_answered_at_once_waits_on_no_timer() {
    tokio::time::advance(Duration::from_micros(500)).await;
    let h = Harness::new();
    h.model("m").push(Turn::text("the answer"));
    let started = tokio::time::Instant::now();
    let handle = h
        .engine
        .start(PROJECT, request(json!({"model": "fake/m", "input": "x"})))
        .await
        .unwrap();
    let finished = handle.finish().await.unwrap();
    assert_eq!(finished.response.status, ResponseStatus::Completed);
    assert_eq!(started.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn a_run_that_ends_with_its_turn_stores_its_events_once_with_the_final_response() {
    let h = Harness::new();
    h.model("m").push(Turn::text("the answer"));
    let handle = h
        .engine
        .start(PROJECT, request(json!({"model": "fake/m", "input": "x"})))
        .await
        .unwrap();
    let id = handle.id.clone();
    let finished = handle.finish().await.unwrap();
    assert_eq!(finished.response.status, ResponseStatus::Completed);
    // No write of its own at the step boundary that ends the run (one less transaction on
    // the way to the answer): the end writes the whole log with the final response.
    assert_eq!(h.store.lock().flushes.get(&id), None);
    let stored = types(&h.store.events_of(&id));
    assert_eq!(stored.first().map(String::as_str), Some("response.created"));
    assert!(
        stored.iter().any(|t| t == "response.output_text.delta"),
        "{stored:?}"
    );
    assert_eq!(
        stored.last().map(String::as_str),
        Some("response.completed")
    );
}

#[tokio::test(start_paused = true)]
async fn a_background_run_renews_its_lease_while_it_runs() {
    let config = EngineConfig {
        lease: Duration::from_secs(30),
        ..EngineConfig::default()
    };
    let h = Harness::with_config(config);
    let gate = Arc::new(Notify::new());
    h.model("m").push(Turn::Stream(vec![
        Step::Wait(gate.clone()),
        Step::Event(ModelEvent::TextDelta("done".to_owned())),
    ]));
    h.engine.spawn_workers();
    let handle = h
        .engine
        .start(
            PROJECT,
            request(json!({"model": "fake/m", "input": "x", "background": true})),
        )
        .await
        .unwrap();
    assert_eq!(handle.initial.status, ResponseStatus::Queued);
    let id = handle.id.clone();
    while h.model("m").requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let first_lease = h.store.lock().jobs[&id].lease_until_ms;
    // Three leases' worth of time: the worker renews every third of a lease.
    tokio::time::sleep(Duration::from_secs(95)).await;
    let job = h.store.lock().jobs[&id].clone();
    assert_eq!(job.state, JobState::Running);
    assert!(job.lease_until_ms >= first_lease + 90_000, "{job:?}");
    assert!(job.lease_until_ms > h.clock.now_ms());
    // Nobody else can claim it meanwhile.
    let now = h.clock.now_ms();
    let other = h.store.claim_job("worker_other", now, now + 30_000).await;
    assert!(other.unwrap().is_none());
    gate.notify_one();
    assert_eq!(h.wait_terminal(&id).await, ResponseStatus::Completed);
    // The run's end removed its job row in the same write.
    assert!(!h.store.lock().jobs.contains_key(&id));
}

#[tokio::test(start_paused = true)]
async fn a_job_whose_worker_died_is_ended_failed_once_its_lease_expired() {
    let h = Harness::new();
    // A run a dead worker had claimed: its response is in progress and its lease runs out.
    h.model("m").push(Turn::text("never asked"));
    let handle = h
        .engine
        .start(
            PROJECT,
            request(json!({"model": "fake/m", "input": "x", "background": true})),
        )
        .await
        .unwrap();
    let id = handle.id.clone();
    let now = h.clock.now_ms();
    {
        let mut state = h.store.lock();
        let job = state.jobs.get_mut(&id).unwrap();
        job.state = JobState::Running;
        job.lease_owner = Some("worker_dead".to_owned());
        job.lease_until_ms = now + 5_000;
    }
    h.engine.spawn_workers();
    // Still leased: nothing happens.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(h.store.status_of(&id), Some(ResponseStatus::Queued));
    // Expired: the next claim ends it, without running it again.
    assert_eq!(h.wait_terminal(&id).await, ResponseStatus::Failed);
    let record = h.store.lock().responses[&id].clone();
    let error = record.response.error.unwrap();
    assert!(error.message.contains("server stopped"), "{error:?}");
    assert!(h.model("m").requests().is_empty());
    // Its log starts as every stream does, though the run never emitted anything (a resuming
    // client's SDK refuses a stream without `response.created`; found by the soak test).
    let events = h.store.events_of(&id);
    assert_eq!(types(&events), ["response.created", "response.failed"]);
    assert_eq!(events[0]["response"]["status"], "queued");
    assert_eq!(events[1]["sequence_number"], 1);
    assert!(!h.store.lock().jobs.contains_key(&id));
}

#[tokio::test(start_paused = true)]
async fn a_background_run_that_cannot_be_planned_fails_with_the_real_reason() {
    let h = Harness::new();
    // A job whose request no longer plans (the model id cannot be resolved).
    let handle = h
        .engine
        .start(
            PROJECT,
            request(json!({"model": "fake/m", "input": "x", "background": true})),
        )
        .await
        .unwrap();
    let id = handle.id.clone();
    {
        let mut state = h.store.lock();
        let job = state.jobs.get_mut(&id).unwrap();
        job.payload = job.payload.replace("fake/m", "unknown-provider");
    }
    h.engine.spawn_workers();
    assert_eq!(h.wait_terminal(&id).await, ResponseStatus::Failed);
    let error = h.store.lock().responses[&id]
        .response
        .error
        .clone()
        .unwrap();
    assert_eq!(error.kind.as_deref(), Some("invalid_model"), "{error:?}");
    assert!(!error.message.contains("server stopped"), "{error:?}");
}

#[tokio::test(start_paused = true)]
async fn recovery_ends_a_foreground_run_a_stop_left_in_progress() {
    let store = Arc::new(crate::common::MemoryStore::default());
    let first = Harness::on_store(store.clone(), EngineConfig::default());
    let gate = Arc::new(Notify::new());
    first.model("m").push(Turn::Stream(vec![
        Step::Event(ModelEvent::TextDelta("half".to_owned())),
        Step::Wait(gate),
    ]));
    let handle = first
        .engine
        .start(PROJECT, request(json!({"model": "fake/m", "input": "x"})))
        .await
        .unwrap();
    let id = handle.id.clone();
    // The turn's first events reach the store, then the process "dies".
    tokio::time::sleep(Duration::from_secs(1)).await;
    let flushed = store.events_of(&id).len();
    assert!(flushed > 0);
    let second = Harness::on_store(store.clone(), EngineConfig::default());
    assert_eq!(second.engine.recover().await.unwrap(), 1);
    assert_eq!(store.status_of(&id), Some(ResponseStatus::Failed));
    let events = store.events_of(&id);
    assert_eq!(events.len(), flushed + 1);
    assert_eq!(events.last().unwrap()["type"], "response.failed");
    assert_eq!(
        events.last().unwrap()["sequence_number"],
        json!(flushed as u64)
    );
}

#[tokio::test(start_paused = true)]
async fn retention_purges_event_logs_by_the_engine_clock() {
    let h = Harness::new();
    h.model("m").push(Turn::text("hello"));
    let events = h
        .stream(json!({"model": "fake/m", "input": "x", "stream": true}))
        .await;
    let id = events[0]["response"]["id"].as_str().unwrap().to_owned();
    assert_eq!(h.engine.purge_expired_events().await.unwrap(), 0);
    tokio::time::advance(Duration::from_secs(25 * 3600)).await;
    assert_eq!(
        h.engine.purge_expired_events().await.unwrap(),
        events.len() as u64
    );
    assert!(h.store.events_of(&id).is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_background_runs_mcp_credentials_are_stored_sealed_and_used_by_its_worker() {
    let h = Harness::new();
    h.mcp.add(
        "https://mcp.example/mcp",
        crate::common::FakeServer::with_tools(&["search"]),
    );
    h.model("m").push(Turn::text("done"));
    let tool = json!({"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example/mcp",
        "authorization": "tok-SECRET-1", "headers": {"X-Api-Key": "hdr-SECRET-2"}});
    let handle = h
        .engine
        .start(
            PROJECT,
            request(json!({"model": "fake/m", "input": "x", "background": true, "tools": [tool]})),
        )
        .await
        .unwrap();
    let id = handle.id.clone();
    // Queued: the job payload holds the credentials sealed, never in clear.
    let payload = h.store.lock().jobs[&id].payload.clone();
    assert!(!payload.contains("tok-SECRET-1") && !payload.contains("hdr-SECRET-2"));
    assert!(payload.contains("sealed:job|"), "{payload}");
    h.engine.spawn_workers();
    assert_eq!(h.wait_terminal(&id).await, ResponseStatus::Completed);
    // The worker connected with them.
    let seen = h.mcp.connects.lock().unwrap().clone();
    assert_eq!(seen[0].authorization.as_deref(), Some("tok-SECRET-1"));
    assert_eq!(seen[0].headers["X-Api-Key"], "hdr-SECRET-2");
    // Nothing stored holds them.
    let stored = serde_json::to_string(&h.store.lock().responses[&id]).unwrap();
    assert!(!stored.contains("SECRET"), "{stored}");
    let events = serde_json::to_string(&h.store.events_of(&id)).unwrap();
    assert!(!events.contains("SECRET"));
}

#[tokio::test]
async fn without_a_secret_key_a_background_run_with_mcp_credentials_is_refused() {
    let h = Harness::without_sealer();
    let tool = json!({"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example/mcp",
        "authorization": "tok"});
    let refused = h
        .engine
        .start(
            PROJECT,
            request(json!({"model": "fake/m", "input": "x", "background": true, "tools": [tool]})),
        )
        .await;
    match refused {
        Err(err) => {
            assert_eq!(err.param(), Some("tools[0].authorization"));
            assert!(err.to_string().contains("AGENTD_SECRET_KEY"), "{err}");
        }
        Ok(_) => panic!("accepted"),
    }
    // Nothing was stored for it.
    assert!(h.store.lock().responses.is_empty());
    assert!(h.store.lock().jobs.is_empty());
}
