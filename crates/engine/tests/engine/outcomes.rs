//! Every way a run ends: completed, paused for function calls, incomplete (output budget, step
//! budget), failed (provider, structured output), cancelled; and the models fallback chain.

use std::sync::Arc;

use engine::Code;
use engine::model::{FinishReason, ModelError, ModelEvent, ModelMessage};
use protocol::response::ResponseStatus;
use serde_json::json;
use tokio::sync::Notify;

use crate::common::{
    Harness, PROJECT, Step, Turn, items, paused, read_to_first_delta, request, types,
};

#[tokio::test]
async fn a_text_answer_completes_with_its_events_in_order_and_stored() {
    let h = Harness::new();
    h.model("m").push(Turn::text("Paris is the capital."));
    let events = h
        .stream(json!({"model": "fake/m", "input": "Capital of France?", "stream": true}))
        .await;
    assert_eq!(
        types(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let seqs: Vec<u64> = events
        .iter()
        .map(|e| e["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..10).collect::<Vec<u64>>());
    let done = &events[9]["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(
        done["output"][0]["content"][0]["text"],
        "Paris is the capital."
    );
    assert_eq!(done["usage"]["total_tokens"], 15);
    // The store holds the final response and exactly the streamed events.
    let id = done["id"].as_str().unwrap();
    assert_eq!(h.store.status_of(id), Some(ResponseStatus::Completed));
    assert_eq!(h.store.events_of(id), events);
    // The stored transcript ends with the answer, ready for a continuation.
    let transcript = h.store.lock().responses[id].transcript.clone();
    assert_eq!(transcript.len(), 2);
}

#[tokio::test]
async fn a_function_call_pauses_the_run_and_a_continuation_hands_the_result_to_the_model() {
    let h = Harness::new();
    let model = h.model("m");
    model.push(Turn::calls(&[(
        "call_1",
        "get_order_status",
        r#"{"order_id":"ORD-1"}"#,
    )]));
    let tools = json!([{"type": "function", "name": "get_order_status",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}]);
    let (first, _) = h
        .run(json!({"model": "fake/m", "input": "Where is ORD-1?", "tools": tools}))
        .await;
    assert_eq!(first["status"], "completed");
    let calls = items(&first, "function_call");
    assert_eq!(calls.len(), 1, "{first}");
    assert_eq!(calls[0]["call_id"], "call_1");
    assert_eq!(calls[0]["arguments"], r#"{"order_id":"ORD-1"}"#);

    model.push(Turn::text("It is in transit."));
    let (second, _) = h
        .run(json!({"model": "fake/m", "tools": tools, "previous_response_id": first["id"],
            "input": [{"type": "function_call_output", "call_id": "call_1", "output": "in_transit"}]}))
        .await;
    assert_eq!(second["status"], "completed", "{second}");
    let last = model.requests().pop().unwrap();
    assert!(
        last.messages.iter().any(|m| matches!(m,
            ModelMessage::Tool { call_id, content, .. } if call_id == "call_1" && content == "in_transit")),
        "{:?}",
        last.messages
    );
}

#[tokio::test]
async fn a_call_that_fails_the_strict_schema_goes_back_to_the_model() {
    let h = Harness::new();
    let model = h.model("m");
    model.push(Turn::calls(&[("call_1", "f", r#"{"n":"not a number"}"#)]));
    model.push(Turn::calls(&[("call_2", "f", r#"{"n":3}"#)]));
    let (response, _) = h
        .run(json!({"model": "fake/m", "input": "x", "tools": [{"type": "function", "name": "f", "strict": true,
            "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}}]}))
        .await;
    let calls = items(&response, "function_call");
    assert_eq!(calls.len(), 1, "{response}");
    assert_eq!(calls[0]["call_id"], "call_2");
    let second = &model.requests()[1];
    assert!(
        second.messages.iter().any(|m| matches!(m,
            ModelMessage::Tool { call_id, content, .. } if call_id == "call_1" && content.contains("do not match"))),
        "{:?}",
        second.messages
    );
}

#[tokio::test]
async fn the_output_token_cap_ends_the_run_incomplete() {
    let h = Harness::new();
    h.model("m").push(Turn::Stream(vec![
        Step::Event(ModelEvent::TextDelta("A long".to_owned())),
        Step::Event(ModelEvent::Finish(FinishReason::Length)),
    ]));
    let (response, _) = h
        .run(json!({"model": "fake/m", "input": "x", "max_output_tokens": 16}))
        .await;
    assert_eq!(response["status"], "incomplete");
    assert_eq!(
        response["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    assert_eq!(response["output"][0]["status"], "incomplete");
}

#[tokio::test]
async fn the_last_step_has_no_tools_and_a_spent_step_budget_is_incomplete() {
    let h = Harness::new();
    h.mcp.add(
        "https://mcp.example/a",
        crate::common::FakeServer::with_tools(&["look"]),
    );
    let model = h.model("m");
    model.push(Turn::calls(&[("call_1", "srv__look", r#"{"q":"a"}"#)]));
    // The model calls again on the last step although it was offered no tools.
    model.push(Turn::calls(&[("call_2", "srv__look", r#"{"q":"b"}"#)]));
    let (response, _) = h
        .run(
            json!({"model": "fake/m", "input": "x", "max_steps": 2, "tools": [
            {"type": "mcp", "server_label": "srv", "server_url": "https://mcp.example/a"}]}),
        )
        .await;
    assert_eq!(response["status"], "incomplete", "{response}");
    assert_eq!(response["incomplete_details"]["reason"], "max_steps");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(!requests[0].tools.is_empty());
    assert!(
        requests[1].tools.is_empty(),
        "the last step offers no tools"
    );
}

#[tokio::test]
async fn a_provider_error_fails_the_run_with_its_code() {
    let h = Harness::new();
    h.model("m").push(Turn::Refuse(ModelError::Upstream {
        status: 429,
        message: "slow down".to_owned(),
    }));
    let (response, start_error) = h.run(json!({"model": "fake/m", "input": "x"})).await;
    assert_eq!(response["status"], "failed");
    assert_eq!(response["error"]["type"], "bad_gateway");
    assert_eq!(response["error"]["code"], "rate_limit_exceeded");
    // A provider failure is in-band (HTTP 200), not a start error.
    assert_eq!(start_error, None);
}

#[tokio::test]
async fn an_answer_that_breaks_the_structured_output_schema_fails_the_run() {
    let h = Harness::new();
    h.model("m").push(Turn::text(r#"{"city": 7}"#));
    let (response, _) = h
        .run(json!({"model": "fake/m", "input": "x", "response_format": {"type": "json_schema",
            "json_schema": {"name": "c", "schema": {"type": "object", "properties": {"city": {"type": "string"}}}}}}))
        .await;
    assert_eq!(response["status"], "failed");
    assert_eq!(response["error"]["code"], Code::StructuredOutput.in_band());
}

#[tokio::test]
async fn a_cancel_stops_a_streaming_turn_and_keeps_what_it_wrote() {
    let h = Harness::new();
    let (handle, _gate) = h
        .start_paused(
            json!({"model": "fake/m", "input": "x"}),
            "partial",
            " never",
        )
        .await;
    let id = handle.id.clone();
    // Wait until the delta is out, then cancel.
    let mut events = Box::pin(handle.events());
    read_to_first_delta(&mut events).await;
    // The answer waits for the run to stop: the response object, already cancelled.
    let ack = h.engine.cancel(PROJECT, &id).await.unwrap();
    assert_eq!(ack.response_id, id);
    assert_eq!(ack.response.status, ResponseStatus::Cancelled);
    let finished = handle.finish().await.unwrap();
    assert_eq!(finished.response.status, ResponseStatus::Cancelled);
    let response = serde_json::to_value(&finished.response).unwrap();
    assert_eq!(response["output"][0]["status"], "incomplete");
    assert_eq!(response["output"][0]["content"][0]["text"], "partial");
    let stored = h.store.events_of(&id);
    assert_eq!(stored.last().unwrap()["type"], "response.cancelled");
    // Cancelling it again answers it again; cancelling a run that completed is refused.
    let again = h.engine.cancel(PROJECT, &id).await.unwrap();
    assert_eq!(again.response.status, ResponseStatus::Cancelled);
    h.model("m").push(Turn::text("done"));
    let (completed, _) = h.run(json!({"model": "fake/m", "input": "x"})).await;
    let refused = h
        .engine
        .cancel(PROJECT, completed["id"].as_str().unwrap())
        .await;
    assert!(
        matches!(refused, Err(engine::EngineError::NotCancellable(_))),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_queued_run_is_cancelled_at_once() {
    let h = Harness::new();
    let handle = h
        .engine
        .start(
            PROJECT,
            request(json!({"model": "fake/m", "input": "x", "background": true})),
        )
        .await
        .unwrap();
    // No workers run here: the job waits in the queue, and the cancel ends it itself.
    let ack = h.engine.cancel(PROJECT, &handle.id).await.unwrap();
    assert_eq!(ack.response.status, ResponseStatus::Cancelled);
    assert!(h.model("m").requests().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_run_that_has_not_stopped_within_the_wait_is_answered_cancelling() {
    let h = Harness::new();
    let gate = Arc::new(Notify::new());
    // The run's final write hangs: the run cannot have ended when the cancel's wait is over.
    *h.store.end_gate.lock().unwrap() = Some(gate.clone());
    h.model("m")
        .push(Turn::Stream(vec![Step::Wait(Arc::new(Notify::new()))]));
    let handle = h
        .engine
        .start(PROJECT, request(json!({"model": "fake/m", "input": "x"})))
        .await
        .unwrap();
    let ack = h.engine.cancel(PROJECT, &handle.id).await.unwrap();
    assert_eq!(ack.response.status, ResponseStatus::Cancelling);
    assert_eq!(serde_json::to_value(&ack).unwrap()["status"], "cancelling");
    gate.notify_one();
    let finished = handle.finish().await.unwrap();
    assert_eq!(finished.response.status, ResponseStatus::Cancelled);
}

#[tokio::test]
async fn the_models_chain_hands_a_failed_turn_to_the_next_model_before_any_output() {
    let h = Harness::new();
    h.model("a").push(Turn::Refuse(ModelError::Upstream {
        status: 503,
        message: "down".to_owned(),
    }));
    h.model("b").push(Turn::text("from b"));
    let (response, _) = h
        .run(json!({"models": ["fake/a", "fake/b"], "input": "x"}))
        .await;
    assert_eq!(response["status"], "completed");
    assert_eq!(response["model"], "fake/b");
    assert_eq!(response["output"][0]["content"][0]["text"], "from b");

    // Once a model has written output, its failure fails the run: no other model takes over.
    h.model("a").push(Turn::Stream(vec![
        Step::Event(ModelEvent::TextDelta("half".to_owned())),
        Step::Fail(ModelError::Transport("cut".to_owned())),
    ]));
    let (response, _) = h
        .run(json!({"models": ["fake/a", "fake/b"], "input": "x"}))
        .await;
    assert_eq!(response["status"], "failed");
    assert_eq!(h.model("b").requests().len(), 1);
}

/// Results a built-in tool numbered without a page (finance tables) still take their number:
/// the next call of the run starts after them, so no two results of a run share a `[n]`, and
/// the answer's markers cite the pages they name.
#[tokio::test]
async fn numbers_shown_without_a_page_are_not_given_out_again() {
    let h = Harness::new();
    let model = h.model("m");
    model.push(Turn::calls(&[("call_1", "finance_search", "{}")]));
    model.push(Turn::calls(&[("call_2", "finance_search", "{}")]));
    model.push(Turn::text("Up [2], down [5]."));
    let (done, _) = h
        .run(json!({"model": "fake/m", "input": "?", "tools": [{"type": "finance_search"}]}))
        .await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(*h.hosted.numbering.first_numbers.lock().unwrap(), [1, 4]);
    let message = items(&done, "message")[0];
    let cited: Vec<&str> = message["content"][0]["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["url"].as_str().unwrap())
        .collect();
    assert_eq!(cited, ["https://example.com/2", "https://example.com/5"]);
}

/// A plain run whose caller goes away before it ends (the client of a non-streaming request
/// disconnected: its handler dropped the handle) still runs to its end and is stored.
#[tokio::test]
async fn a_plain_run_whose_caller_goes_away_still_ends_and_is_stored() {
    let h = Harness::new();
    let (mut steps, gate) = paused("one ", "two");
    steps.push(Step::Event(ModelEvent::Finish(FinishReason::Stop)));
    h.model("m").push(Turn::Stream(steps));
    let handle = h
        .engine
        .start(PROJECT, request(json!({"model": "fake/m", "input": "x"})))
        .await
        .unwrap();
    let id = handle.id.clone();
    // The run has asked the model and waits mid-answer: the caller goes away.
    let asked = async {
        while h.model("m").requests().is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), asked)
        .await
        .expect("the run asks the model within 10 s");
    drop(handle);
    gate.notify_one();
    assert_eq!(h.wait_terminal(&id).await, ResponseStatus::Completed);
    let stored = serde_json::to_value(&h.store.lock().responses[&id].response).unwrap();
    assert_eq!(
        items(&stored, "message")[0]["content"][0]["text"],
        "one two"
    );
    let events = h.store.events_of(&id);
    assert_eq!(
        events.last().unwrap()["type"],
        "response.completed",
        "the event log is stored to its end"
    );
}

/// The ids of the tasks a model's turns were polled in.
type TurnTasks = Arc<std::sync::Mutex<Vec<Option<tokio::task::Id>>>>;

/// Scripts a one-turn text answer that records the task its stream is polled in.
fn turn_tasks(h: &Harness, text: &str) -> TurnTasks {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    h.model("m").push(Turn::Stream(vec![
        Step::Call(Arc::new(move || {
            record.lock().unwrap().push(tokio::task::try_id());
        })),
        Step::Event(ModelEvent::TextDelta(text.to_owned())),
        Step::Event(ModelEvent::Finish(FinishReason::Stop)),
    ]));
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_run_started_inline_runs_in_the_task_that_awaits_it() {
    let h = Harness::new();
    for inline in [true, false] {
        let seen = turn_tasks(&h, "done");
        let engine = h.engine.clone();
        let caller = tokio::spawn(async move {
            let body = request(json!({"model": "fake/m", "input": "x"}));
            let handle = if inline {
                engine.start_inline(PROJECT, body).await.unwrap()
            } else {
                engine.start(PROJECT, body).await.unwrap()
            };
            let id = handle.id.clone();
            let finished = handle.finish().await.unwrap();
            assert_eq!(finished.response.status, ResponseStatus::Completed);
            (tokio::task::id(), id)
        });
        let (caller, id) = caller.await.unwrap();
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1);
        // `start` runs it in a task of its own; `start_inline` in the caller's.
        assert_eq!(seen[0] == Some(caller), inline, "inline: {inline}");
        assert_eq!(h.store.status_of(&id), Some(ResponseStatus::Completed));
    }
    let metrics = h.engine.metrics().await.unwrap();
    assert_eq!(metrics.active_runs.get(), 0, "both runs counted as ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_run_started_inline_whose_caller_goes_away_still_ends_and_is_stored() {
    let h = Harness::new();
    let (mut steps, gate) = paused("one ", "two");
    steps.push(Step::Event(ModelEvent::Finish(FinishReason::Stop)));
    h.model("m").push(Turn::Stream(steps));
    let (id_tx, id_rx) = tokio::sync::oneshot::channel();
    let engine = h.engine.clone();
    let caller = tokio::spawn(async move {
        let handle = engine
            .start_inline(PROJECT, request(json!({"model": "fake/m", "input": "x"})))
            .await
            .unwrap();
        let _ = id_tx.send(handle.id.clone());
        handle.finish().await
    });
    let id = id_rx.await.unwrap();
    // The run has asked the model (from the caller's task) and waits mid-answer: the caller
    // goes away, its future dropped.
    let asked = async {
        while h.model("m").requests().is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), asked)
        .await
        .expect("the run asks the model within 10 s");
    caller.abort();
    assert!(caller.await.unwrap_err().is_cancelled());
    gate.notify_one();
    assert_eq!(h.wait_terminal(&id).await, ResponseStatus::Completed);
    let stored = serde_json::to_value(&h.store.lock().responses[&id].response).unwrap();
    assert_eq!(
        items(&stored, "message")[0]["content"][0]["text"],
        "one two"
    );
    let events = h.store.events_of(&id);
    assert_eq!(
        events.last().unwrap()["type"],
        "response.completed",
        "the event log is stored to its end"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_run_started_inline_and_never_awaited_still_runs_to_its_end() {
    let h = Harness::new();
    h.model("m").push(Turn::text("never awaited"));
    let handle = h
        .engine
        .start_inline(PROJECT, request(json!({"model": "fake/m", "input": "x"})))
        .await
        .unwrap();
    let id = handle.id.clone();
    drop(handle);
    assert_eq!(h.wait_terminal(&id).await, ResponseStatus::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_run_started_inline_is_cancelled_while_its_caller_awaits_it() {
    let h = Harness::new();
    let (steps, _gate) = paused("one ", "two");
    h.model("m").push(Turn::Stream(steps));
    let handle = h
        .engine
        .start_inline(PROJECT, request(json!({"model": "fake/m", "input": "x"})))
        .await
        .unwrap();
    let id = handle.id.clone();
    let engine = h.engine.clone();
    let models = h.models.clone();
    let canceller = tokio::spawn(async move {
        while models.get("m").requests().is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        engine.cancel(PROJECT, &id).await.unwrap()
    });
    let finished = tokio::time::timeout(std::time::Duration::from_secs(10), handle.finish())
        .await
        .expect("the cancelled run ends within 10 s")
        .unwrap();
    assert_eq!(finished.response.status, ResponseStatus::Cancelled);
    let ack = canceller.await.unwrap();
    assert_eq!(ack.response.status, ResponseStatus::Cancelled);
}
