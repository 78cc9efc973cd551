//! When a run's response row reaches the store. A foreground run on a store no other replica
//! shares writes it with its first flush or its end, so a run that ends before its first flush
//! is stored in one write; until then every lookup by id answers the run from memory, exactly
//! as the stored in-progress row did. Background runs and runs on a shared store write it at
//! start.

use std::time::Duration;

use engine::{EngineConfig, EngineError};
use protocol::conversations::Page;
use protocol::response::ResponseStatus;
use serde_json::json;

use crate::common::{Harness, PROJECT, Turn, collect, read_to_first_delta, request, types};

fn writes(h: &Harness, id: &str) -> usize {
    h.store.lock().writes.get(id).copied().unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn a_short_run_is_stored_in_one_write() {
    let h = Harness::new();
    h.model("m").push(Turn::text("the answer"));
    let handle = h
        .engine
        .start(PROJECT, request(json!({"model": "fake/m", "input": "x"})))
        .await
        .unwrap();
    let id = handle.id.clone();
    // Nothing is written before the model is asked.
    assert_eq!(writes(&h, &id), 0);
    let finished = handle.finish().await.unwrap();
    assert_eq!(finished.response.status, ResponseStatus::Completed);
    // The row, its events and its items in one transaction.
    assert_eq!(writes(&h, &id), 1);
    assert_eq!(h.store.status_of(&id), Some(ResponseStatus::Completed));
    let stored = types(&h.store.events_of(&id));
    assert_eq!(stored.first().map(String::as_str), Some("response.created"));
    assert_eq!(
        stored.last().map(String::as_str),
        Some("response.completed")
    );
    // Continued from its stored row, as before.
    h.model("m").push(Turn::text("more"));
    let (second, _) = h
        .run(json!({"model": "fake/m", "input": "y", "previous_response_id": id}))
        .await;
    assert_eq!(second["status"], "completed", "{second}");
}

/// A continuation's final record carries the JSON of the transcript it went on from, as the
/// store read it (the store writes those bytes, not the items again), with how many items it
/// holds: the previous transcript, which the run only appended to.
#[tokio::test(start_paused = true)]
async fn a_continuations_record_carries_the_json_of_the_transcript_it_went_on_from() {
    let h = Harness::new();
    h.model("m").push(Turn::text("the answer"));
    let (first, _) = h.run(json!({"model": "fake/m", "input": "x"})).await;
    let first_id = first["id"].as_str().unwrap().to_owned();
    let before = h.store.lock().responses[&first_id].clone();
    // A first request's record carries its input items' JSON, written once for its items.
    let first_prefix = before.transcript_prefix.clone().expect("the input's JSON");
    assert_eq!(first_prefix.items, 1);
    assert_eq!(
        &*first_prefix.json,
        serde_json::to_string(&before.transcript[..1]).unwrap()
    );
    assert!(before.transcript.len() > 1);
    h.model("m").push(Turn::text("more"));
    let (second, _) = h
        .run(json!({"model": "fake/m", "input": "y", "previous_response_id": first_id}))
        .await;
    assert_eq!(second["status"], "completed", "{second}");
    let after = h.store.lock().responses[second["id"].as_str().unwrap()].clone();
    let prefix = after.transcript_prefix.expect("the record's prefix");
    assert_eq!(prefix.items, before.transcript.len());
    assert_eq!(
        &*prefix.json,
        serde_json::to_string(&before.transcript).unwrap()
    );
    assert_eq!(after.transcript[..prefix.items], before.transcript[..]);
    assert!(after.transcript.len() > prefix.items);
}

/// The store is given the engine's count of runs executing (a file-backed SQLite store's
/// writer gathers its batches by it): it counts a run through its final write, and not after.
#[tokio::test(start_paused = true)]
async fn the_store_follows_the_count_of_runs_executing_through_their_final_write() {
    let h = Harness::new();
    let runs = h.store.active_runs.lock().unwrap().clone();
    let runs = runs.expect("the engine gave the store its count of runs");
    assert_eq!(runs.get(), 0);
    for n in 1..=2 {
        h.model("m").push(Turn::text("the answer"));
        let handle = h
            .engine
            .start(PROJECT, request(json!({"model": "fake/m", "input": "x"})))
            .await
            .unwrap();
        handle.finish().await.unwrap();
        assert_eq!(h.store.lock().runs_at_end, vec![1; n]);
        assert_eq!(runs.get(), 0, "the run still counted after its end");
    }
}

/// Retrieve, turns, input items, events, delete, a continuation, resume and cancel of a run
/// whose row is not written yet answer what its stored in-progress row made them answer.
#[tokio::test(start_paused = true)]
async fn a_run_not_yet_written_answers_lookups_by_id_as_before() {
    let h = Harness::new();
    let (handle, _gate) = h
        .start_paused(
            json!({"model": "fake/m", "input": "x"}),
            "first words",
            " and the rest",
        )
        .await;
    let id = handle.id.clone();
    let mut events = Box::pin(handle.events());
    read_to_first_delta(&mut events).await;
    assert_eq!(h.store.status_of(&id), None, "not written yet");

    let got = h.engine.get_response(PROJECT, &id).await.unwrap();
    assert_eq!(
        serde_json::to_value(&got).unwrap(),
        serde_json::to_value(&handle.initial).unwrap()
    );
    assert_eq!(got.status, ResponseStatus::InProgress);
    assert!(matches!(
        h.engine.get_response("proj_other", &id).await,
        Err(EngineError::NotFound(_))
    ));
    let turns = h.engine.response_turns(PROJECT, &id).await.unwrap();
    assert!(turns.data.is_empty());
    let page = Page::from_query(None, None, Some("asc")).unwrap();
    let items = h.engine.input_items(PROJECT, &id, &page).await.unwrap();
    assert!(items.data.is_empty());
    assert!(
        h.engine
            .stored_events(PROJECT, &id)
            .await
            .unwrap()
            .is_empty()
    );
    let refused = h.engine.delete_response(PROJECT, &id).await.unwrap_err();
    assert!(
        refused.to_string().contains("is still in_progress"),
        "{refused}"
    );
    let refused = h
        .engine
        .start(
            PROJECT,
            request(json!({"model": "fake/m", "input": "y", "previous_response_id": id})),
        )
        .await
        .err()
        .unwrap();
    assert!(
        refused
            .to_string()
            .contains("has status in_progress and cannot be continued"),
        "{refused}"
    );
    let beyond = h.engine.resume(PROJECT, &id, Some(99)).await.err().unwrap();
    assert!(
        beyond.to_string().contains("beyond the last event"),
        "{beyond}"
    );
    let resumed = h.engine.resume(PROJECT, &id, Some(0)).await.unwrap();

    let ack = h.engine.cancel(PROJECT, &id).await.unwrap();
    assert_eq!(ack.response.status, ResponseStatus::Cancelled);
    assert_eq!(ack.response_id, id);
    let resumed = collect(resumed).await;
    assert_eq!(resumed[0]["sequence_number"], 1);
    assert_eq!(
        types(&resumed).last().map(String::as_str),
        Some("response.cancelled")
    );
    // Cancelled before its first write: stored once, cancelled.
    assert_eq!(writes(&h, &id), 1);
    assert_eq!(h.store.status_of(&id), Some(ResponseStatus::Cancelled));
    let got = h.engine.get_response(PROJECT, &id).await.unwrap();
    assert_eq!(got.status, ResponseStatus::Cancelled);
}

/// A run past its first flush interval has its in-progress row in the store, with its events.
#[tokio::test(start_paused = true)]
async fn a_run_longer_than_a_flush_interval_is_stored_while_it_runs() {
    let h = Harness::new();
    let (handle, gate) = h
        .start_paused(
            json!({"model": "fake/m", "input": "x"}),
            "first words",
            " and the rest",
        )
        .await;
    let id = handle.id.clone();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let stored = h.store.lock().responses.get(&id).cloned().unwrap();
    assert_eq!(stored.response.status, ResponseStatus::InProgress);
    assert_eq!(
        serde_json::to_value(&stored.response).unwrap(),
        serde_json::to_value(&handle.initial).unwrap()
    );
    assert!(stored.transcript.is_empty());
    assert_eq!(
        types(&h.store.events_of(&id)).first().map(String::as_str),
        Some("response.created")
    );
    gate.notify_one();
    let finished = handle.finish().await.unwrap();
    assert_eq!(finished.response.status, ResponseStatus::Completed);
    assert_eq!(writes(&h, &id), 2);
    assert_eq!(h.store.status_of(&id), Some(ResponseStatus::Completed));
}

/// A run whose only write fails is not answered as if it were stored: a plain request gets
/// the error a failed start write answered, a stream ends `response.failed`.
#[tokio::test(start_paused = true)]
async fn a_run_whose_only_write_fails_fails_visibly() {
    let h = Harness::new();
    h.store.lock().fail_writes = true;
    h.model("m").push(Turn::text("the answer"));
    let (response, code) = h.run(json!({"model": "fake/m", "input": "x"})).await;
    assert_eq!(code, Some(engine::Code::Internal));
    assert_eq!(response["status"], "failed", "{response}");
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the store failed"),
        "{response}"
    );

    h.model("m").push(Turn::text("the answer"));
    let events = h
        .stream(json!({"model": "fake/m", "input": "x", "stream": true}))
        .await;
    let kinds = types(&events);
    assert_eq!(kinds.first().map(String::as_str), Some("response.created"));
    assert_eq!(kinds.last().map(String::as_str), Some("response.failed"));
    assert_eq!(events.last().unwrap()["response"]["status"], "failed");
    // The store took nothing, and the run is gone from memory: not found, not in progress.
    let id = events[0]["response"]["id"].as_str().unwrap();
    assert!(matches!(
        h.engine.get_response(PROJECT, id).await,
        Err(EngineError::NotFound(_))
    ));
}

/// A run that hands a function call back is stored before the client gets it: the client
/// continues it by id at once.
#[tokio::test(start_paused = true)]
async fn a_function_call_handed_back_is_stored_first() {
    let h = Harness::new();
    let model = h.model("m");
    model.push(Turn::calls(&[("call_1", "f", "{}")]));
    let tools = json!([{"type": "function", "name": "f", "parameters": {"type": "object"}}]);
    let handle = h
        .engine
        .start(
            PROJECT,
            request(json!({"model": "fake/m", "input": "x", "tools": tools, "stream": true})),
        )
        .await
        .unwrap();
    let id = handle.id.clone();
    let events = collect(handle.events()).await;
    assert_eq!(
        types(&events).last().map(String::as_str),
        Some("response.completed")
    );
    // The terminal event is out only once the row is written.
    assert_eq!(h.store.status_of(&id), Some(ResponseStatus::Completed));
    assert_eq!(writes(&h, &id), 1);
    model.push(Turn::text("done"));
    let (second, _) = h
        .run(
            json!({"model": "fake/m", "tools": tools, "previous_response_id": id,
            "input": [{"type": "function_call_output", "call_id": "call_1", "output": "ok"}]}),
        )
        .await;
    assert_eq!(second["status"], "completed", "{second}");
}

/// `store: false`: one write too, hidden from retrieve while it runs and after.
#[tokio::test(start_paused = true)]
async fn a_hidden_run_is_stored_in_one_write_and_stays_hidden() {
    let h = Harness::new();
    let (handle, gate) = h
        .start_paused(
            json!({"model": "fake/m", "input": "x", "store": false}),
            "a",
            "b",
        )
        .await;
    let id = handle.id.clone();
    tokio::task::yield_now().await;
    assert!(matches!(
        h.engine.get_response(PROJECT, &id).await,
        Err(EngineError::NotFound(_))
    ));
    assert!(h.engine.resume(PROJECT, &id, None).await.is_err());
    gate.notify_one();
    handle.finish().await.unwrap();
    assert_eq!(writes(&h, &id), 1);
    assert!(!h.store.lock().responses[&id].visible);
    assert!(matches!(
        h.engine.get_response(PROJECT, &id).await,
        Err(EngineError::NotFound(_))
    ));
}

/// A background run's poller and worker read its row: written when it is queued.
#[tokio::test(start_paused = true)]
async fn a_background_run_is_written_when_queued() {
    let h = Harness::new();
    let handle = h
        .engine
        .start(
            PROJECT,
            request(json!({"model": "fake/m", "input": "x", "background": true})),
        )
        .await
        .unwrap();
    assert_eq!(h.store.status_of(&handle.id), Some(ResponseStatus::Queued));
}

/// With replicas, another replica must see the run in progress: written at start.
#[tokio::test(start_paused = true)]
async fn a_run_on_a_shared_store_is_written_at_start() {
    let h = Harness::with_config(EngineConfig {
        shared_store: true,
        ..EngineConfig::default()
    });
    let (handle, gate) = h
        .start_paused(json!({"model": "fake/m", "input": "x"}), "a", "b")
        .await;
    assert_eq!(
        h.store.status_of(&handle.id),
        Some(ResponseStatus::InProgress)
    );
    gate.notify_one();
    let id = handle.id.clone();
    handle.finish().await.unwrap();
    assert_eq!(writes(&h, &id), 2);
}
