//! Black-box tests of the HTTP API: agentd in-process on port 0, the scripted fake provider
//! behind it over a real socket.

use std::time::Duration;

use serde_json::{Value, json};
use testkit::{FAKE_PROVIDER_KEY, Reply, TestApp, redact};

const MODEL: &str = "openai/gpt-test";

fn order_tools() -> Value {
    json!([{
        "type": "function",
        "name": "get_order_status",
        "description": "Look up the status of an order by id.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
            "additionalProperties": false
        },
        "strict": true
    }])
}

#[tokio::test]
async fn text_answer_is_returned_stored_and_retrievable() {
    let app = TestApp::spawn().await;
    app.fake.push(
        Reply::text("Hello there, world")
            .usage(12, 3)
            .cached_tokens(4),
    );
    let (status, body) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "Say hello", "instructions": "Be brief."}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    insta::assert_json_snapshot!("text_answer", redact(&body));
    assert_eq!(
        body["output"][0]["content"][0]["text"],
        "Hello there, world"
    );

    let sent = &app.fake.requests()[0];
    assert_eq!(sent["model"], "gpt-test");
    assert_eq!(
        sent["messages"][0],
        json!({"role": "system", "content": "Be brief."})
    );
    assert_eq!(sent["messages"][1]["role"], "user");

    let id = body["id"].as_str().unwrap();
    for base in ["/v1/agent", "/v1/responses"] {
        let (status, stored) = app.get(&format!("{base}/{id}")).await;
        assert_eq!(status, 200);
        assert_eq!(stored, body, "retrieve returns the stored object");
    }
}

#[tokio::test]
async fn streaming_follows_the_documented_order_and_forwards_each_delta() {
    let app = TestApp::spawn().await;
    app.fake
        .push(Reply::text_chunks(["The ", "answer ", "is 42."]).usage(7, 3));
    let transcript = app
        .post_stream(
            "/v1/responses",
            json!({"model": MODEL, "input": "?", "stream": true}),
        )
        .await;
    assert_eq!(
        transcript.types(),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let deltas: Vec<&str> = transcript
        .events
        .iter()
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(
        deltas,
        ["The ", "answer ", "is 42."],
        "deltas as the provider streamed them"
    );
    let events: Vec<Value> = transcript.events.iter().map(redact).collect();
    insta::assert_json_snapshot!("text_stream", events);

    let completed = &transcript.terminal()["response"];
    assert_eq!(completed["usage"]["total_tokens"], 10);
    let (_, stored) = app
        .get(&format!(
            "/v1/responses/{}",
            completed["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(&stored, completed);
}

#[tokio::test]
async fn deltas_reach_the_client_before_the_model_finishes() {
    let app = TestApp::spawn().await;
    app.fake
        .push(Reply::text_chunks(["first ", "second"]).then_hang());
    let response = app
        .client
        .post(app.url("/v1/responses"))
        .json(&json!({"model": MODEL, "input": "?", "stream": true}))
        .send()
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    use futures::StreamExt as _;
    while !seen.contains("\"delta\":\"second\"") {
        let chunk = tokio::time::timeout_at(deadline, body.next())
            .await
            .expect("deltas arrive while the upstream is still open")
            .expect("stream open")
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(!seen.contains("response.completed"));
}

/// The body chunks of a streamed request, as the client reads them (one per SSE write of
/// agentd: each is an HTTP chunk of its own).
#[expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test helper fails loudly"
)]
async fn body_chunks(app: &TestApp) -> Vec<String> {
    use futures::StreamExt as _;
    let response = app
        .client
        .post(app.url("/v1/responses"))
        .json(&json!({"model": MODEL, "input": "?", "stream": true}))
        .send()
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    let mut chunks = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while let Some(chunk) = tokio::time::timeout_at(deadline, body.next())
        .await
        .expect("the stream ends")
    {
        chunks.push(String::from_utf8_lossy(&chunk.unwrap()).into_owned());
    }
    chunks
}

/// 64 deltas that the upstream sends together leave in a few SSE writes, not one (or two)
/// per event, and every event is still its own frame, in order.
#[tokio::test]
async fn a_burst_of_upstream_deltas_reaches_the_client_in_a_few_writes() {
    let app = TestApp::spawn().await;
    let tokens: Vec<String> = (0..64).map(|n| format!(" tok{n}")).collect();
    app.fake.push(Reply::text_chunks(tokens.clone()));
    let chunks = body_chunks(&app).await;
    let transcript = testkit::sse::Transcript::parse(&chunks.concat());
    transcript.assert_invariants();
    assert_eq!(transcript.events.len(), 72, "{:?}", transcript.types());
    let text: String = transcript
        .events
        .iter()
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(text, tokens.concat());
    assert!(
        chunks.len() <= 12,
        "{} body chunks for 72 events",
        chunks.len()
    );
}

/// A paced upstream (a delta every 250 ms): each delta leaves as it comes, in a write of its
/// own, never held for the next.
#[tokio::test]
async fn paced_upstream_deltas_each_reach_the_client_as_they_come() {
    let app = TestApp::spawn().await;
    app.fake.push(
        Reply::text_chunks(["a ", "b ", "c ", "d"])
            .delay_between_chunks(Duration::from_millis(250)),
    );
    let chunks = body_chunks(&app).await;
    let with_deltas: Vec<usize> = chunks
        .iter()
        .map(|c| c.matches("response.output_text.delta").count())
        .filter(|n| *n > 0)
        .collect();
    assert_eq!(with_deltas, [1, 1, 1, 1], "{chunks:?}");
}

#[tokio::test]
async fn function_call_round_trip_replay_and_previous_response_id_agree() {
    let app = TestApp::spawn().await;
    let question = "What's the status of order ORD-10042?";
    app.fake.push(Reply::tool_calls(vec![(
        "call_1",
        "get_order_status",
        r#"{"order_id":"ORD-10042"}"#,
    )]));
    let (status, first) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": question, "tools": order_tools()}),
        )
        .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["status"], "completed");
    let call = &first["output"][0];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["call_id"], "call_1");
    assert_eq!(call["arguments"], r#"{"order_id":"ORD-10042"}"#);
    insta::assert_json_snapshot!("function_call", redact(&first));
    let offered = &app.fake.requests()[0]["tools"];
    assert_eq!(offered[0]["function"]["name"], "get_order_status");

    let output = json!({"type": "function_call_output", "call_id": "call_1", "output": "{\"status\":\"in_transit\"}"});
    // Continue by replaying the items.
    app.fake.push(Reply::text("Your order is in transit."));
    let (status, replayed) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "tools": order_tools(), "input": [
                {"role": "user", "content": question},
                call.clone(),
                output.clone()
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{replayed}");
    // Continue with previous_response_id.
    app.fake.push(Reply::text("Your order is in transit."));
    let (status, chained) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "tools": order_tools(), "previous_response_id": first["id"], "input": [output]}),
        )
        .await;
    assert_eq!(status, 200, "{chained}");
    assert_eq!(chained["previous_response_id"], first["id"]);
    assert_eq!(
        replayed["output"][0]["content"][0]["text"],
        "Your order is in transit."
    );

    let requests = app.fake.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[1]["messages"], requests[2]["messages"],
        "both continuations give the model the same transcript"
    );
    let messages = requests[1]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["tool_calls"][0]["id"], "call_1");
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(messages[2]["tool_call_id"], "call_1");
}

#[tokio::test]
async fn several_calls_in_one_turn_are_all_handed_back() {
    let app = TestApp::spawn().await;
    app.fake
        .push(Reply::text("Checking both.").then_tool_calls(vec![
            ("call_a", "get_order_status", r#"{"order_id":"A"}"#),
            ("call_b", "get_order_status", r#"{"order_id":"B"}"#),
        ]));
    let transcript = app
        .post_stream(
            "/v1/agent",
            json!({"model": MODEL, "input": "two orders", "tools": order_tools(), "stream": true}),
        )
        .await;
    let response = &transcript.terminal()["response"];
    assert_eq!(response["status"], "completed");
    let types: Vec<&str> = response["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["message", "function_call", "function_call"]);
    let added: Vec<&Value> = transcript
        .events
        .iter()
        .filter(|e| {
            e["type"] == "response.output_item.added" && e["item"]["type"] == "function_call"
        })
        .collect();
    assert_eq!(added.len(), 2);
    // The arguments stream as argument events; `.done` carries them whole.
    let done: Vec<&Value> = transcript
        .events
        .iter()
        .filter(|e| e["type"] == "response.function_call_arguments.done")
        .collect();
    assert_eq!(done.len(), 2);
    assert_eq!(done[1]["arguments"], r#"{"order_id":"B"}"#);
    assert_eq!(done[1]["item_id"], added[1]["item"]["id"]);
    let streamed: String = transcript
        .events
        .iter()
        .filter(|e| {
            e["type"] == "response.function_call_arguments.delta"
                && e["item_id"] == added[1]["item"]["id"]
        })
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, r#"{"order_id":"B"}"#);
}

#[tokio::test]
async fn strict_arguments_that_fail_the_schema_go_back_to_the_model() {
    let app = TestApp::spawn().await;
    app.fake.push(Reply::tool_calls(vec![(
        "call_bad",
        "get_order_status",
        r#"{"order":"X"}"#,
    )]));
    app.fake.push(Reply::tool_calls(vec![(
        "call_ok",
        "get_order_status",
        r#"{"order_id":"X"}"#,
    )]));
    let (status, body) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "?", "tools": order_tools()}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let output = body["output"].as_array().unwrap();
    assert_eq!(
        output.len(),
        1,
        "only the valid call reaches the caller: {body}"
    );
    assert_eq!(output[0]["call_id"], "call_ok");
    let second = &app.fake.requests()[1]["messages"];
    let tool_message = second.as_array().unwrap().last().unwrap();
    assert_eq!(tool_message["role"], "tool");
    assert_eq!(tool_message["tool_call_id"], "call_bad");
    assert!(
        tool_message["content"]
            .as_str()
            .unwrap()
            .contains("order_id"),
        "{tool_message}"
    );
}

#[tokio::test]
async fn the_last_step_runs_without_tools_so_the_run_ends_with_an_answer() {
    let app = TestApp::spawn().await;
    app.fake.push(Reply::tool_calls(vec![(
        "c1",
        "get_order_status",
        r#"{"nope":1}"#,
    )]));
    app.fake.push(Reply::text("I could not look it up."));
    let (status, body) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "?", "tools": order_tools(), "max_steps": 2}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "completed");
    let requests = app.fake.requests();
    assert!(requests[0].get("tools").is_some());
    assert!(
        requests[1].get("tools").is_none(),
        "last step has tools disabled: {}",
        requests[1]
    );
    assert_eq!(
        body["output"][0]["content"][0]["text"],
        "I could not look it up."
    );
}

#[tokio::test]
async fn usage_is_summed_over_steps() {
    let app = TestApp::spawn().await;
    app.fake
        .push(Reply::tool_calls(vec![("c1", "get_order_status", "{}")]).usage(100, 5));
    app.fake.push(Reply::text("done").usage(120, 7));
    let (_, body) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "?", "tools": order_tools(), "max_steps": 2}),
        )
        .await;
    assert_eq!(body["usage"]["input_tokens"], 220);
    assert_eq!(body["usage"]["output_tokens"], 12);
    assert_eq!(body["usage"]["total_tokens"], 232);
    assert_eq!(body["usage"]["tool_calls_details"], json!({}));
}

#[tokio::test]
async fn parameters_reach_the_model() {
    let app = TestApp::spawn().await;
    app.fake.push(Reply::text("ok"));
    let (status, body) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "?", "tools": order_tools(), "temperature": 0.2, "top_p": 0.9,
                   "tool_choice": "required", "max_output_tokens": 300, "parallel_tool_calls": false}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let sent = &app.fake.requests()[0];
    assert_eq!(sent["temperature"], 0.2);
    assert_eq!(sent["top_p"], 0.9);
    assert_eq!(sent["tool_choice"], "required");
    assert_eq!(sent["max_completion_tokens"], 300);
    assert_eq!(sent["parallel_tool_calls"], false);
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(body["max_output_tokens"], 300);

    app.fake.push(Reply::text("ok"));
    app.post("/v1/agent", json!({"model": MODEL, "input": "?", "tools": order_tools(), "tool_choice": {"type": "function", "name": "get_order_status"}})).await;
    assert_eq!(
        app.fake.requests()[1]["tool_choice"],
        json!({"type": "function", "function": {"name": "get_order_status"}})
    );
    app.fake.push(Reply::text("ok"));
    app.post(
        "/v1/agent",
        json!({"model": MODEL, "input": "?", "tools": order_tools(), "tool_choice": "none"}),
    )
    .await;
    assert!(app.fake.requests()[2].get("tools").is_none());
}

#[tokio::test]
async fn output_token_cap_ends_the_run_incomplete() {
    let app = TestApp::spawn().await;
    app.fake
        .push(Reply::text("a long answer that was cut").finish_reason("length"));
    let transcript = app
        .post_stream(
            "/v1/agent",
            json!({"model": MODEL, "input": "?", "max_output_tokens": 16, "stream": true}),
        )
        .await;
    let terminal = transcript.terminal();
    assert_eq!(terminal["type"], "response.incomplete");
    assert_eq!(terminal["response"]["status"], "incomplete");
    assert_eq!(
        terminal["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    assert_eq!(terminal["response"]["output"][0]["status"], "incomplete");
}

#[tokio::test]
async fn provider_errors_fail_the_run_with_http_200_and_no_secret() {
    let app = TestApp::spawn().await;
    // A 500 is retried (twice by default) before the run fails: every attempt fails here.
    for _ in 0..3 {
        app.fake.push(Reply::error(500, "upstream exploded"));
    }
    let (status, body) = app
        .post("/v1/agent", json!({"model": MODEL, "input": "?"}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "failed");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("upstream exploded"),
        "{body}"
    );
    assert!(body["error"]["code"].is_string());
    assert!(!body.to_string().contains(FAKE_PROVIDER_KEY));
    assert_eq!(app.fake.pending_replies(), 0, "each retry asked again");

    for _ in 0..3 {
        app.fake.push(Reply::error(429, "slow down"));
    }
    let transcript = app
        .post_stream(
            "/v1/agent",
            json!({"model": MODEL, "input": "?", "stream": true}),
        )
        .await;
    let failed = transcript.terminal();
    assert_eq!(failed["type"], "response.failed");
    assert_eq!(failed["error"]["code"], "rate_limit_exceeded");
    assert_eq!(failed["response"]["status"], "failed");
    assert!(!transcript.raw.contains(FAKE_PROVIDER_KEY));
    assert_eq!(app.fake.pending_replies(), 0);
}

#[tokio::test]
async fn a_retryable_upstream_error_is_retried_and_the_run_completes() {
    let app = TestApp::spawn().await;
    app.fake.push(Reply::error(503, "overloaded, try again"));
    app.fake.push(Reply::error(429, "slow down"));
    app.fake.push(Reply::text("third time lucky"));
    let (status, body) = app
        .post("/v1/agent", json!({"model": MODEL, "input": "?"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "completed", "{body}");
    assert_eq!(body["output"][0]["content"][0]["text"], "third time lucky");
    assert_eq!(app.fake.requests().len(), 3);

    // A 400 is final: asked once, and the run fails.
    app.fake.reset();
    app.fake.push(Reply::error(400, "bad request"));
    app.fake.push(Reply::text("never asked"));
    let (_, body) = app
        .post("/v1/agent", json!({"model": MODEL, "input": "?"}))
        .await;
    assert_eq!(body["status"], "failed", "{body}");
    assert_eq!(app.fake.requests().len(), 1);
}

#[tokio::test]
async fn store_false_hides_the_response_but_it_can_still_be_continued() {
    let app = TestApp::spawn().await;
    app.fake.push(Reply::text("secret plan"));
    let (_, first) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "plan", "store": false}),
        )
        .await;
    assert_eq!(first["store"], false);
    let (status, _) = app
        .get(&format!("/v1/agent/{}", first["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 404);
    app.fake.push(Reply::text("continued"));
    let (status, second) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "more", "previous_response_id": first["id"]}),
        )
        .await;
    assert_eq!(status, 200, "{second}");
    let messages = &app.fake.requests()[1]["messages"];
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": "secret plan"})
    );
}

/// A chain of continuations whose transcript is long enough for the store to keep it parsed
/// between turns (`transcript_memo.rs`): each turn's model request holds every turn so far, in
/// order; a second continuation of the same response (the memo's entry taken by the first)
/// sends the same history; and a deleted response cannot be continued.
#[tokio::test]
async fn a_long_chain_sends_every_turn_so_far_each_time() {
    let app = TestApp::spawn().await;
    let mut history: Vec<Value> = Vec::new();
    let mut previous: Option<String> = None;
    for turn in 0..4 {
        // Long enough that from the third turn the store packs the transcript, in pieces
        // each turn adds to (16 KiB: store/src/transcript_pack.rs).
        let question = format!("question {turn}: {}", "why? ".repeat(600));
        let answer = format!("answer {turn}: {}", "because. ".repeat(400));
        app.fake.push(Reply::text(&answer));
        let mut body = json!({"model": MODEL, "input": question});
        if let Some(id) = &previous {
            body["previous_response_id"] = json!(id);
        }
        let (status, response) = app.post("/v1/responses", body).await;
        assert_eq!(status, 200, "{response}");
        history.push(json!({"role": "user", "content": question}));
        let requests = app.fake.requests();
        let sent = requests.last().unwrap()["messages"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(sent, history, "turn {turn}");
        history.push(json!({"role": "assistant", "content": answer}));
        previous = Some(response["id"].as_str().unwrap().to_owned());
    }

    // The last response continued a second time: the same history again.
    let last = previous.unwrap();
    for attempt in 0..2 {
        app.fake.push(Reply::text("again"));
        let (status, response) = app
            .post(
                "/v1/responses",
                json!({"model": MODEL, "input": "once more", "previous_response_id": last}),
            )
            .await;
        assert_eq!(status, 200, "{response}");
        let requests = app.fake.requests();
        let sent = requests.last().unwrap()["messages"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(sent.len(), history.len() + 1, "attempt {attempt}");
        assert_eq!(sent[..history.len()], history[..], "attempt {attempt}");
    }

    // Deleted, it cannot be continued.
    let deleted = reqwest::Client::new()
        .delete(app.url(&format!("/v1/responses/{last}")))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    let (status, body) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "and now?", "previous_response_id": last}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "previous_response_id", "{body}");
}

#[tokio::test]
async fn a_client_that_disconnects_does_not_lose_the_run() {
    let app = TestApp::spawn().await;
    app.fake.push(
        Reply::text_chunks(["one ", "two ", "three"])
            .delay_between_chunks(Duration::from_millis(150)),
    );
    let (id, _, response) = app
        .start_stream(
            "/v1/responses",
            json!({"model": MODEL, "input": "count", "stream": true}),
        )
        .await;
    drop(response);
    let stored = app.wait_terminal(&id).await;
    assert_eq!(stored["status"], "completed");
    assert_eq!(stored["output"][0]["content"][0]["text"], "one two three");
}

#[tokio::test]
async fn a_plain_request_whose_client_disconnects_mid_run_is_still_completed_and_stored() {
    use tokio::io::AsyncWriteExt as _;
    let app = TestApp::spawn().await;
    app.fake.push(
        Reply::text_chunks(["one ", "two ", "three"])
            .delay_between_chunks(Duration::from_millis(150)),
    );
    // The plain run is polled by the request's own task: the client goes away mid-run, the
    // server drops that task's future, and the rest of the run must carry on on its own.
    let body = json!({"model": MODEL, "input": "count"}).to_string();
    let addr = app.base_url.trim_start_matches("http://");
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/responses HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    socket.write_all(body.as_bytes()).await.unwrap();
    for _ in 0..1000 {
        if !app.fake.requests().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(app.fake.requests().len(), 1, "the run asked the model");
    socket.shutdown().await.unwrap();
    drop(socket);
    // Nothing was answered to the client; the run is found by the listing once stored.
    let query = engine::ResponseQuery::default();
    let project = app.state.engine.default_project().await.unwrap();
    let mut listed = Vec::new();
    for _ in 0..1000 {
        listed = app
            .state
            .engine
            .list_responses(&project, &query)
            .await
            .unwrap()
            .data;
        if !listed.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(listed.len(), 1, "the run is stored");
    let id = listed[0].id.clone();
    let stored = app.wait_terminal(&id).await;
    assert_eq!(stored["status"], "completed");
    assert_eq!(stored["output"][0]["content"][0]["text"], "one two three");
}

#[tokio::test]
async fn request_errors_name_the_offending_field() {
    let app = TestApp::spawn().await;
    let cases = [
        (
            json!({"model": MODEL, "input": "x", "tools": [{"type": "function", "name": "f", "strictt": true}]}),
            "tools[0].strictt",
            "invalid_request",
        ),
        (
            json!({"model": MODEL, "input": "x", "max_steps": 0}),
            "max_steps",
            "invalid_request",
        ),
        (
            json!({"model": MODEL, "input": "x", "temperature": 3}),
            "temperature",
            "invalid_request",
        ),
        (
            json!({"model": MODEL, "input": "x", "top_k": 3}),
            "top_k",
            "invalid_request",
        ),
        (
            json!({"model": "anthropic/claude-sonnet-4-6", "input": "x", "max_output_tokens": 100}),
            "model",
            "invalid_model",
        ),
        (
            json!({"model": MODEL, "input": [{"type": "function_call_output", "call_id": "nope", "output": "1"}]}),
            "input[0].call_id",
            "invalid_request",
        ),
        (
            json!({"model": MODEL, "input": "x", "previous_response_id": "resp_missing"}),
            "previous_response_id",
            "invalid_request",
        ),
        (
            json!({"model": MODEL, "input": "x", "tools": [{"type": "function", "name": "web_search"}]}),
            "tools[0].name",
            "invalid_request",
        ),
    ];
    for (body, param, kind) in cases {
        let (status, error) = app.post("/v1/agent", body.clone()).await;
        assert_eq!(status, 400, "{body} -> {error}");
        assert_eq!(error["error"]["param"], param, "{body} -> {error}");
        assert_eq!(error["error"]["type"], kind, "{body} -> {error}");
        assert_eq!(error["error"]["code"], 400);
    }
    let (_, error) = app
        .post(
            "/v1/agent",
            json!({"model": "anthropic/claude-sonnet-4-6", "input": "x", "max_output_tokens": 100}),
        )
        .await;
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ANTHROPIC_API_KEY"),
        "{error}"
    );
    assert!(
        app.fake.requests().is_empty(),
        "no invalid request reached the model"
    );

    let (status, error) = app.post_raw("/v1/agent", "{\"input\": ").await;
    assert_eq!(status, 400, "{error}");
}

#[tokio::test]
async fn bodies_over_32_mib_are_refused_with_413() {
    let app = TestApp::spawn().await;
    let big = format!(
        "{{\"model\":\"{MODEL}\",\"input\":\"{}\"}}",
        "a".repeat(33 * 1024 * 1024)
    );
    let (status, error) = app.post_raw("/v1/agent", big).await;
    assert_eq!(status, 413);
    assert_eq!(error["error"]["type"], "payload_too_large");
}

#[tokio::test]
async fn keys_and_projects_isolate_responses() {
    let app = TestApp::spawn().await;
    app.fake.push(Reply::text("open mode works"));
    let (status, _) = app
        .post("/v1/agent", json!({"model": MODEL, "input": "hi"}))
        .await;
    assert_eq!(status, 200, "open mode accepts no key on loopback");

    let key_a = app.state.engine.create_key("alpha").await.unwrap();
    let key_b = app.state.engine.create_key("beta").await.unwrap();
    let (status, error) = app
        .post("/v1/agent", json!({"model": MODEL, "input": "hi"}))
        .await;
    assert_eq!(status, 401, "{error}");
    let send = |key: &str, body: Value| {
        app.client
            .post(app.url("/v1/agent"))
            .bearer_auth(key)
            .json(&body)
            .send()
    };
    let wrong = send("agd_wrong", json!({"model": MODEL, "input": "hi"}))
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);

    app.fake.push(Reply::text("for alpha"));
    let created: Value = send(&key_a, json!({"model": MODEL, "input": "hi"}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap();
    let get = |key: &str| {
        app.client
            .get(app.url(&format!("/v1/agent/{id}")))
            .bearer_auth(key)
            .send()
    };
    assert_eq!(get(&key_a).await.unwrap().status().as_u16(), 200);
    let other = get(&key_b).await.unwrap();
    assert_eq!(other.status().as_u16(), 404, "another project's id is 404");
    let continued = send(
        &key_b,
        json!({"model": MODEL, "input": "hi", "previous_response_id": id}),
    )
    .await
    .unwrap();
    assert_eq!(
        continued.status().as_u16(),
        400,
        "another project's response cannot be continued"
    );
}

#[tokio::test]
async fn models_health_and_openapi_are_served() {
    let app = TestApp::spawn().await;
    let (status, models) = app.get("/v1/models").await;
    assert_eq!(status, 200);
    assert_eq!(
        models,
        json!({"object": "list", "data": [{"id": "openai/gpt-test", "object": "model", "created": 0, "owned_by": "openai"}]})
    );
    assert_eq!(app.get("/health").await, (200, json!({"status": "ok"})));
    let (status, doc) = app.get("/openapi.json").await;
    assert_eq!(status, 200);
    assert!(doc["paths"]["/v1/agent"]["post"].is_object());
    assert!(doc["paths"]["/v1/responses/{id}"]["get"].is_object());
    let (status, error) = app.post("/v1/agent/resp_x/cancel", json!({})).await;
    assert_eq!(status, 404, "{error}");
    let (status, _) = app.get("/v1/nope").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn quiet_streams_carry_keep_alive_comments() {
    let app =
        TestApp::spawn_with(|config| config.sse_keep_alive = Duration::from_millis(100)).await;
    app.fake.push(
        Reply::text_chunks(["slow ", "answer"]).delay_between_chunks(Duration::from_millis(450)),
    );
    let transcript = app
        .post_stream(
            "/v1/agent",
            json!({"model": MODEL, "input": "?", "stream": true}),
        )
        .await;
    assert!(
        transcript.comments >= 1,
        "no keep-alive in {}",
        transcript.raw
    );
    assert_eq!(transcript.terminal()["type"], "response.completed");
}

#[tokio::test]
async fn the_event_log_is_stored_exactly_as_streamed() {
    let app = TestApp::spawn().await;
    app.fake.push(Reply::tool_calls(vec![(
        "c1",
        "get_order_status",
        r#"{"id":1}"#,
    )]));
    app.fake.push(Reply::text_chunks(["a", "b"]));
    let transcript = app
        .post_stream(
            "/v1/agent",
            json!({"model": MODEL, "input": "?", "stream": true, "tools": order_tools(), "max_steps": 2}),
        )
        .await;
    let id = transcript.terminal()["response"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let project = app.state.engine.default_project().await.unwrap();
    let stored = app.state.engine.stored_events(&project, &id).await.unwrap();
    let stored: Vec<Value> = stored
        .iter()
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect();
    assert_eq!(stored, transcript.events);
    assert!(
        app.state
            .engine
            .stored_events("proj_other", &id)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn openai_extras_are_accepted_and_echoed() {
    let app = TestApp::spawn().await;
    app.fake.push(Reply::text("ok"));
    let (status, body) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "?", "metadata": {"team": "search"}, "truncation": "disabled",
                   "text": {"format": {"type": "text"}, "verbosity": "low"}, "parallel_tool_calls": false,
                   "stream_options": {"include_usage": true}, "include": [], "user": "u-1",
                   "safety_identifier": "s-1", "service_tier": "auto", "reasoning": {"effort": "low"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["metadata"], json!({"team": "search"}));
    assert_eq!(body["truncation"], "disabled");
    assert_eq!(body["text"]["verbosity"], "low");
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(body["user"], "u-1");
    assert_eq!(body["safety_identifier"], "s-1");
    assert_eq!(body["service_tier"], "auto");
    assert_eq!(body["reasoning"], json!({"effort": "low"}));
    assert_eq!(app.fake.requests()[0]["reasoning_effort"], "low");
}

#[tokio::test]
async fn usage_can_be_left_out_of_the_terminal_snapshot() {
    let app = TestApp::spawn().await;
    app.fake.push(Reply::text("ok").usage(5, 1));
    let transcript = app
        .post_stream(
            "/v1/agent",
            json!({"model": MODEL, "input": "?", "stream": true, "stream_options": {"include_usage": false}}),
        )
        .await;
    let response = &transcript.terminal()["response"];
    assert!(response["usage"].is_null(), "{response}");
    let (_, stored) = app
        .get(&format!("/v1/agent/{}", response["id"].as_str().unwrap()))
        .await;
    assert_eq!(
        stored["usage"]["total_tokens"], 6,
        "the stored response keeps usage"
    );
}

#[tokio::test]
async fn a_running_response_is_retrievable_with_empty_output() {
    let app = TestApp::spawn().await;
    app.fake.push(
        Reply::text_chunks(["slow ", "answer"]).delay_between_chunks(Duration::from_millis(300)),
    );
    let (status, queued) = app
        .post(
            "/v1/agent",
            json!({"model": MODEL, "input": "?", "background": true}),
        )
        .await;
    assert_eq!(status, 200, "{queued}");
    assert_eq!(queued["status"], "queued");
    assert_eq!(queued["background"], true);
    let id = queued["id"].as_str().unwrap();
    let (_, running) = app.get(&format!("/v1/agent/{id}")).await;
    assert!(
        matches!(running["status"].as_str(), Some("queued" | "in_progress")),
        "{running}"
    );
    assert_eq!(running["output"], json!([]));
    let polled = app.wait_terminal(id).await;
    assert_eq!(polled["status"], "completed");
    assert_eq!(polled["output"][0]["content"][0]["text"], "slow answer");
}

/// A TestApp with an `anthropic` provider (Messages wire API) beside the fake's `openai` one.
async fn with_anthropic() -> TestApp {
    TestApp::spawn_with(|config| {
        let mut anthropic = config.providers[0].clone();
        anthropic.name = "anthropic".to_owned();
        anthropic.api = providers::WireApi::AnthropicMessages;
        anthropic.base_url = anthropic.base_url.trim_end_matches("/v1").to_owned();
        config.providers.push(anthropic);
    })
    .await
}

#[tokio::test]
async fn input_an_upstream_cannot_take_is_a_400_naming_the_field_before_anything_runs() {
    let app = with_anthropic().await;
    let docx = json!([{"role": "user", "content": [
        {"type": "input_text", "text": "Summarise this."},
        {"type": "input_file", "filename": "notes.docx",
         "file_data": "data:application/vnd.openxmlformats-officedocument.wordprocessingml.document;base64,UEsDBBQ="}
    ]}]);
    let (status, body) = app
        .post(
            "/v1/responses",
            json!({"model": "anthropic/claude-sonnet-4-5", "input": docx}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["type"], "invalid_request", "{body}");
    assert_eq!(body["error"]["param"], "input", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("anthropic/claude-sonnet-4-5"), "{message}");
    assert!(message.contains("notes.docx"), "{message}");
    assert!(app.fake.requests().is_empty(), "nothing was sent upstream");

    // A model of the chain that cannot take it refuses the run too, in every mode.
    for mode in [
        json!({}),
        json!({"stream": true}),
        json!({"background": true}),
    ] {
        let mut request = json!({
            "models": ["openai/gpt-test", "anthropic/claude-sonnet-4-5"],
            "input": docx,
        });
        request
            .as_object_mut()
            .unwrap()
            .extend(mode.as_object().unwrap().clone());
        let (status, body) = app.post("/v1/responses", request).await;
        assert_eq!(status, 400, "{mode}: {body}");
        assert_eq!(body["error"]["param"], "input");
    }

    // Extended thinking (reasoning.effort) with a temperature: refused, naming temperature.
    let (status, body) = app
        .post(
            "/v1/responses",
            json!({"model": "anthropic/claude-sonnet-4-5", "input": "hi",
                   "reasoning": {"effort": "high"}, "temperature": 0.3}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "temperature", "{body}");

    // The same file goes to a Chat Completions model.
    app.fake.push(Reply::text("Summary."));
    let (status, body) = app
        .post("/v1/responses", json!({"model": MODEL, "input": docx}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "completed");
}

#[tokio::test]
async fn thinking_blocks_stay_in_the_transcript_and_go_back_to_anthropic_only() {
    let app = with_anthropic().await;
    let tools = json!([{"type": "function", "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]);
    app.fake.push(
        Reply::tool_calls(vec![("toolu_1", "get_weather", r#"{"city":"Paris"}"#)])
            .reasoning("The user wants Paris weather; call the tool.", "EqQBsig1"),
    );
    let (status, first) = app
        .post(
            "/v1/responses",
            json!({"model": "anthropic/claude-sonnet-4-5", "input": "Weather in Paris?",
                   "tools": tools, "reasoning": {"effort": "high"}}),
        )
        .await;
    assert_eq!(status, 200, "{first}");
    let kinds: Vec<&str> = first["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(kinds, ["function_call"], "reasoning is not an output item");
    assert!(!first.to_string().contains("EqQBsig1"));
    let sent = &app.fake.requests()[0];
    assert_eq!(
        sent["thinking"],
        json!({"type": "enabled", "budget_tokens": 12288})
    );

    // The continuation sends the thinking block back, first in its assistant turn.
    app.fake.push(Reply::text("Sunny in Paris."));
    let id = first["id"].as_str().unwrap();
    let (status, second) = app
        .post(
            "/v1/responses",
            json!({"model": "anthropic/claude-sonnet-4-5", "previous_response_id": id,
                   "tools": tools, "reasoning": {"effort": "high"},
                   "input": [{"type": "function_call_output", "call_id": "toolu_1",
                              "output": "sunny"}]}),
        )
        .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["status"], "completed");
    let assistant = &app.fake.requests()[1]["messages"][1];
    assert_eq!(assistant["role"], "assistant", "{assistant}");
    assert_eq!(
        assistant["content"][0],
        json!({"type": "thinking",
               "thinking": "The user wants Paris weather; call the tool.",
               "signature": "EqQBsig1"})
    );
    assert_eq!(assistant["content"][1]["type"], "tool_use");

    // Another upstream continuing the same conversation gets no Anthropic thinking.
    app.fake.push(Reply::text("Still sunny."));
    let second_id = second["id"].as_str().unwrap();
    let (status, third) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "previous_response_id": second_id, "input": "And now?"}),
        )
        .await;
    assert_eq!(status, 200, "{third}");
    let chat = app.fake.requests()[2].to_string();
    assert!(!chat.contains("EqQBsig1"), "{chat}");
    assert!(!chat.contains("call the tool."), "{chat}");
}

#[tokio::test]
async fn anthropic_prompt_cache_usage_reaches_input_tokens_details() {
    let app = with_anthropic().await;
    let events = [
        r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Cached."}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}"#,
        r#"{"type":"message_stop"}"#,
    ];
    let body: String = events
        .iter()
        .map(|data| {
            let kind = serde_json::from_str::<Value>(data).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned();
            format!("event: {kind}\ndata: {data}\n\n")
        })
        .collect();
    app.fake.push(Reply::raw(200, "text/event-stream", body));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"model": "anthropic/claude-sonnet-4-5", "input": "hi"}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    let usage = &response["usage"];
    assert_eq!(usage["input_tokens"], 3210, "{usage}");
    assert_eq!(usage["output_tokens"], 7);
    let details = &usage["input_tokens_details"];
    assert_eq!(details["cached_tokens"], 3000, "{details}");
    assert_eq!(details["cache_read_input_tokens"], 3000);
    assert_eq!(details["cache_creation_input_tokens"], 200);
    assert_eq!(details["cache_write_tokens"], 200);
}

#[tokio::test]
async fn a_provider_with_max_retries_0_fails_at_the_first_retryable_error() {
    let app = TestApp::spawn_with(|config| {
        config.provider_options.insert(
            "openai".to_owned(),
            providers::ClientOptions {
                max_retries: 0,
                ..providers::ClientOptions::default()
            },
        );
    })
    .await;
    app.fake.push(Reply::error(503, "overloaded"));
    app.fake.push(Reply::text("not asked"));
    let (_, body) = app
        .post("/v1/responses", json!({"model": MODEL, "input": "?"}))
        .await;
    assert_eq!(body["status"], "failed", "{body}");
    assert_eq!(app.fake.requests().len(), 1);
    assert_eq!(app.fake.pending_replies(), 1);
}

#[tokio::test]
async fn images_in_a_function_result_reach_the_model() {
    let app = TestApp::spawn().await;
    let tools = json!([{"type": "function", "name": "screenshot",
        "parameters": {"type": "object", "properties": {}}}]);
    app.fake
        .push(Reply::tool_calls(vec![("call_1", "screenshot", "{}")]));
    let (_, first) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "What is on screen?", "tools": tools}),
        )
        .await;
    app.fake.push(Reply::text("A login form."));
    let (status, second) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "tools": tools, "previous_response_id": first["id"],
            "input": [{"type": "function_call_output", "call_id": "call_1", "output": [
                {"type": "input_text", "text": "captured"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
            ]}]}),
        )
        .await;
    assert_eq!(status, 200, "{second}");
    let messages = app.fake.requests()[1]["messages"].clone();
    let last = messages.as_array().unwrap().len() - 1;
    assert_eq!(messages[last - 1]["role"], "tool", "{messages}");
    assert_eq!(messages[last - 1]["content"], "captured");
    assert_eq!(messages[last]["role"], "user", "{messages}");
    assert_eq!(
        messages[last]["content"][1],
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}})
    );
}
