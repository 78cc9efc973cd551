//! Background runs, stream resume, cancel and limits, against agentd in-process.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use std::time::Duration;

use serde_json::{Value, json};
use testkit::sse::Transcript;
use testkit::{Reply, TestApp};

const MODEL: &str = "openai/gpt-test";

async fn get_stream(app: &TestApp, path: &str) -> (u16, String) {
    let response = app.client.get(app.url(path)).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

#[tokio::test]
async fn resume_from_any_cursor_reproduces_the_original_events() {
    let app = TestApp::spawn().await;
    app.fake.push(Reply::text_chunks(["one ", "two ", "three"]));
    let original = app
        .post_stream(
            "/v1/responses",
            json!({"model": MODEL, "input": "count", "stream": true}),
        )
        .await;
    let id = original.terminal()["response"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let last = original.events.len() as u64 - 1;
    for cursor in [0, 3, last - 1] {
        let (status, raw) = get_stream(
            &app,
            &format!("/v1/responses/{id}?stream=true&starting_after={cursor}"),
        )
        .await;
        assert_eq!(status, 200, "{raw}");
        let resumed = Transcript::parse(&raw);
        assert_eq!(
            resumed.events,
            original.events[cursor as usize + 1..],
            "cursor {cursor}"
        );
    }
    let (status, raw) = get_stream(&app, &format!("/v1/agent/{id}?stream=true")).await;
    assert_eq!(status, 200);
    assert_eq!(
        Transcript::parse(&raw).events,
        original.events,
        "no cursor: the whole log"
    );
    let (status, raw) = get_stream(
        &app,
        &format!("/v1/responses/{id}?stream=true&starting_after={last}"),
    )
    .await;
    assert_eq!(
        (status, Transcript::parse(&raw).events.len()),
        (200, 0),
        "nothing after the end"
    );

    let (status, raw) = get_stream(
        &app,
        &format!("/v1/responses/{id}?stream=true&starting_after={}", last + 5),
    )
    .await;
    assert_eq!(status, 400, "{raw}");
    let error: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(error["error"]["param"], "starting_after");
    let (status, _) = get_stream(
        &app,
        "/v1/responses/resp_unknown?stream=true&starting_after=1",
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = get_stream(
        &app,
        &format!("/v1/responses/{id}?stream=true&starting_after=-1"),
    )
    .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn a_background_stream_can_be_left_and_resumed_while_the_run_goes_on() {
    let app = TestApp::spawn().await;
    app.fake.push(
        Reply::text_chunks(["a ", "b ", "c ", "d"])
            .delay_between_chunks(Duration::from_millis(200)),
    );
    let response = app
        .client
        .post(app.url("/v1/responses"))
        .json(&json!({"model": MODEL, "input": "go", "stream": true, "background": true}))
        .send()
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    use futures::StreamExt as _;
    let mut seen = String::new();
    while !seen.contains("response.in_progress") {
        seen.push_str(&String::from_utf8_lossy(
            &body.next().await.unwrap().unwrap(),
        ));
    }
    drop(body);
    let first = Transcript::parse(
        seen.split("\n\n")
            .take(2)
            .collect::<Vec<_>>()
            .join("\n\n")
            .as_str(),
    );
    let id = first.events[0]["response"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(first.events[0]["response"]["status"], "queued");
    // Resume while the run is still streaming: the rest arrives live, to the terminal event.
    let (status, raw) = get_stream(
        &app,
        &format!("/v1/responses/{id}?stream=true&starting_after=1"),
    )
    .await;
    assert_eq!(status, 200);
    let rest = Transcript::parse(&raw);
    assert_eq!(rest.events[0]["sequence_number"], 2);
    assert_eq!(rest.terminal()["type"], "response.completed");
    let text: String = rest
        .events
        .iter()
        .filter_map(|e| e["delta"].as_str())
        .collect();
    assert_eq!(text, "a b c d");
}

#[tokio::test]
async fn cancel_stops_a_slow_foreground_run_promptly() {
    let app = TestApp::spawn().await;
    app.fake.push(
        Reply::text_chunks(["slow ", "slower ", "slowest"])
            .delay_between_chunks(Duration::from_secs(2)),
    );
    let (id, mut raw, mut rest) = app
        .start_stream(
            "/v1/agent",
            json!({"model": MODEL, "input": "?", "stream": true}),
        )
        .await;
    // Wait for the first delta so the cancel lands mid-stream.
    while !raw.contains("output_text.delta") {
        raw.push_str(&String::from_utf8_lossy(
            &rest.chunk().await.unwrap().unwrap(),
        ));
    }
    let started = tokio::time::Instant::now();
    let (status, ack) = app.post(&format!("/v1/agent/{id}/cancel"), json!({})).await;
    assert_eq!(status, 200, "{ack}");
    // The answer waits for the run to stop: the response object, cancelled.
    assert_eq!(ack["response_id"], id);
    assert_eq!(ack["id"], id);
    assert_eq!(ack["object"], "response");
    assert_eq!(ack["status"], "cancelled", "{ack}");
    while let Some(chunk) = rest.chunk().await.unwrap() {
        raw.push_str(&String::from_utf8_lossy(&chunk));
    }
    // The rest of the answer would take 6 s more; the cancel ends the stream at once.
    assert!(
        started.elapsed() < Duration::from_millis(3500),
        "the stream ended {:?} after the cancel",
        started.elapsed()
    );
    let tail = Transcript::parse(&raw);
    assert_eq!(tail.terminal()["type"], "response.cancelled");
    let final_ = app.wait_terminal(&id).await;
    assert_eq!(final_["status"], "cancelled");
    assert_eq!(
        final_["output"][0]["status"], "incomplete",
        "the cut message is kept: {final_}"
    );
    assert_eq!(
        app.fake.dropped_streams(),
        1,
        "the upstream stream was closed"
    );

    // Cancelling a cancelled response again answers it again.
    let (status, again) = app.post(&format!("/v1/agent/{id}/cancel"), json!({})).await;
    assert_eq!(status, 200, "cancelling a cancelled run again: {again}");
    assert_eq!(again["status"], "cancelled");
    // A run that ended otherwise cannot be cancelled.
    app.fake.push(Reply::text("done"));
    let (_, completed) = app
        .post("/v1/agent", json!({"model": MODEL, "input": "?"}))
        .await;
    let done = completed["id"].as_str().unwrap();
    let (status, error) = app
        .post(&format!("/v1/agent/{done}/cancel"), json!({}))
        .await;
    assert_eq!(status, 400, "cancelling an ended run: {error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("completed")
    );
    let (status, _) = app.post("/v1/responses/resp_nope/cancel", json!({})).await;
    assert_eq!(status, 404);
}

/// A foreground run's row is written by its first flush (500 ms) or its end (issue 18): in its
/// first flush interval it is retrieved, listed by its input items, resumed from a cursor and
/// refused as a continuation over HTTP as its stored in-progress row was.
#[tokio::test]
async fn a_run_in_its_first_flush_interval_answers_lookups_by_id() {
    let app = TestApp::spawn().await;
    app.fake.push(
        Reply::text_chunks(["one ", "two"]).delay_between_chunks(Duration::from_millis(1500)),
    );
    let (id, mut raw, mut rest) = app
        .start_stream(
            "/v1/responses",
            json!({"model": MODEL, "input": "?", "stream": true}),
        )
        .await;
    while !raw.contains("output_text.delta") {
        raw.push_str(&String::from_utf8_lossy(
            &rest.chunk().await.unwrap().unwrap(),
        ));
    }
    let (status, got) = app.get(&format!("/v1/responses/{id}")).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["status"], "in_progress");
    assert_eq!(got["id"], id);
    let (status, items) = app.get(&format!("/v1/responses/{id}/input_items")).await;
    assert_eq!(status, 200, "{items}");
    let (status, refused) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "more", "previous_response_id": id}),
        )
        .await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("has status in_progress"),
        "{refused}"
    );
    let (status, resumed) = get_stream(
        &app,
        &format!("/v1/responses/{id}?stream=true&starting_after=0"),
    )
    .await;
    assert_eq!(status, 200, "{resumed}");
    while let Some(chunk) = rest.chunk().await.unwrap() {
        raw.push_str(&String::from_utf8_lossy(&chunk));
    }
    let original = Transcript::parse(&raw);
    let resumed = Transcript::parse(&resumed);
    assert_eq!(resumed.events, original.events[1..]);
    assert_eq!(app.wait_terminal(&id).await["status"], "completed");
}

#[tokio::test]
async fn another_projects_run_cannot_be_cancelled_or_resumed() {
    let app = TestApp::spawn().await;
    app.fake.push(Reply::text("mine"));
    let key_a = app.state.engine.create_key("a").await.unwrap();
    let key_b = app.state.engine.create_key("b").await.unwrap();
    let created: Value = app
        .client
        .post(app.url("/v1/agent"))
        .bearer_auth(&key_a)
        .json(&json!({"model": MODEL, "input": "hi", "background": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap();
    let cancel = app
        .client
        .post(app.url(&format!("/v1/agent/{id}/cancel")))
        .bearer_auth(&key_b)
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status().as_u16(), 404);
    let resume = app
        .client
        .get(app.url(&format!("/v1/agent/{id}?stream=true&starting_after=0")))
        .bearer_auth(&key_b)
        .send()
        .await
        .unwrap();
    assert_eq!(resume.status().as_u16(), 404);
}

#[tokio::test]
async fn queued_runs_are_bounded_per_project_and_cancel_at_once() {
    let app = TestApp::spawn_with(|config| {
        config.engine.workers = 1;
        config.engine.max_queued_per_project = 1;
    })
    .await;
    app.fake
        .push(Reply::text_chunks(["busy ", "worker"]).delay_between_chunks(Duration::from_secs(1)));
    let body = json!({"model": MODEL, "input": "?", "background": true});
    let (_, running) = app.post("/v1/agent", body.clone()).await;
    // Wait until the worker holds the first run, so the next one stays queued.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while app.fake.requests().is_empty() {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (status, queued) = app.post("/v1/agent", body.clone()).await;
    assert_eq!(status, 200, "{queued}");
    let (status, refused) = app.post("/v1/agent", body.clone()).await;
    assert_eq!(status, 429, "{refused}");
    assert_eq!(refused["error"]["type"], "request_rate_limit_exceeded");
    let metrics = app.get_text("/metrics").await;
    assert!(
        metrics.contains("agentd_background_queue_depth 1"),
        "{metrics}"
    );
    assert!(metrics.contains("agentd_runs_active 1"), "{metrics}");

    let queued_id = queued["id"].as_str().unwrap();
    let started = tokio::time::Instant::now();
    let (status, _) = app
        .post(&format!("/v1/agent/{queued_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200);
    let ended = app.wait_terminal(queued_id).await;
    assert_eq!(ended["status"], "cancelled");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "a queued run does not wait for a worker to cancel"
    );
    assert_eq!(
        app.fake.requests().len(),
        1,
        "the cancelled run never reached the model"
    );
    let (status, raw) = get_stream(&app, &format!("/v1/agent/{queued_id}?stream=true")).await;
    assert_eq!(status, 200);
    assert_eq!(
        Transcript::parse(&raw).terminal()["type"],
        "response.cancelled"
    );

    let first = app.wait_terminal(running["id"].as_str().unwrap()).await;
    assert_eq!(first["status"], "completed");
    let metrics = app.get_text("/metrics").await;
    assert!(
        metrics.contains("agentd_runs_finished_total{status=\"completed\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("agentd_runs_finished_total{status=\"cancelled\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("agentd_run_duration_seconds_count 2"),
        "{metrics}"
    );
}

#[tokio::test]
async fn two_hundred_concurrent_background_runs_all_finish() {
    let app = TestApp::spawn().await;
    for i in 0..200 {
        app.fake.push(Reply::text(&format!("answer {i}")));
    }
    let creates = (0..200).map(|i| {
        let app = &app;
        async move {
            let (status, body) = app
                .post(
                    "/v1/responses",
                    json!({"model": MODEL, "input": format!("q{i}"), "background": true}),
                )
                .await;
            assert_eq!(status, 200, "{body}");
            body["id"].as_str().unwrap().to_owned()
        }
    });
    let ids = futures::future::join_all(creates).await;
    let finals = futures::future::join_all(ids.iter().map(|id| app.wait_terminal(id))).await;
    let mut answers: Vec<String> = finals
        .iter()
        .map(|r| {
            assert_eq!(r["status"], "completed", "{r}");
            r["output"][0]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    answers.sort();
    answers.dedup();
    assert_eq!(answers.len(), 200, "every run got its own answer");
    assert_eq!(app.fake.pending_replies(), 0);
}

#[tokio::test]
async fn an_expired_event_log_is_a_clear_400() {
    let app = TestApp::spawn_with(|config| config.engine.event_retention = Duration::ZERO).await;
    app.fake.push(Reply::text("old"));
    let (_, body) = app
        .post("/v1/agent", json!({"model": MODEL, "input": "?"}))
        .await;
    let id = body["id"].as_str().unwrap();
    let (status, _) = get_stream(
        &app,
        &format!("/v1/agent/{id}?stream=true&starting_after=0"),
    )
    .await;
    assert_eq!(status, 200, "the log is there before the purge");
    // Logs of responses created before this second are purged.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(app.state.engine.purge_expired_events().await.unwrap() > 0);
    let (status, raw) = get_stream(
        &app,
        &format!("/v1/agent/{id}?stream=true&starting_after=0"),
    )
    .await;
    assert_eq!(status, 400, "{raw}");
    assert!(raw.contains("expired"), "{raw}");
    let (status, _) = app.get(&format!("/v1/agent/{id}")).await;
    assert_eq!(status, 200, "the response itself is kept");
}

#[tokio::test]
async fn a_models_chain_falls_back_before_output_and_names_the_model_that_answered() {
    let app = TestApp::spawn().await;
    let chain = json!(["openai/gpt-a", "openai/gpt-b", "openai/gpt-c"]);
    // gpt-a: a 503 and its two retries; gpt-b: a 400, not retried; gpt-c answers.
    for _ in 0..3 {
        app.fake.push(Reply::error(503, "overloaded"));
    }
    app.fake.push(Reply::error(400, "this model cannot"));
    app.fake.push(Reply::text("from c"));
    let (status, response) = app
        .post("/v1/responses", json!({"models": chain, "input": "hi"}))
        .await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["status"], "completed");
    assert_eq!(response["model"], "openai/gpt-c");
    let asked: Vec<Value> = app
        .fake
        .requests()
        .iter()
        .map(|r| r["model"].clone())
        .collect();
    assert_eq!(
        asked,
        ["gpt-a", "gpt-a", "gpt-a", "gpt-b", "gpt-c"].map(|m| json!(m))
    );

    // A failure after output is not retried elsewhere: the run fails.
    app.fake.reset();
    app.fake.push(Reply::raw_sse([
        r#"{"choices":[{"index":0,"delta":{"content":"partial"}}]}"#,
    ]));
    app.fake.push(Reply::text("never asked"));
    let (_, failed) = app
        .post("/v1/responses", json!({"models": chain, "input": "hi"}))
        .await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(app.fake.requests().len(), 1);

    // Every model failing: the last error ends the run.
    app.fake.reset();
    for _ in 0..3 {
        app.fake.push(Reply::error(400, "down"));
    }
    let (_, failed) = app
        .post("/v1/responses", json!({"models": chain, "input": "hi"}))
        .await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(app.fake.requests().len(), 3);

    // An unconfigured model anywhere in the chain is refused up front.
    let (status, error) = app
        .post(
            "/v1/responses",
            json!({"models": ["openai/gpt-a", "nope/x"], "input": "hi"}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(error["error"]["param"], "models[1]");
}

#[tokio::test]
async fn the_final_answer_is_checked_against_response_format() {
    let app = TestApp::spawn().await;
    let format = json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": {
        "type": "object", "properties": {"answer": {"type": "integer"}},
        "required": ["answer"], "additionalProperties": false}}});
    app.fake.push(Reply::text(r#"{"answer": 42}"#));
    let (_, ok) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "response_format": format}),
        )
        .await;
    assert_eq!(ok["status"], "completed", "{ok}");
    // The schema reached the upstream.
    assert_eq!(
        app.fake.requests()[0]["response_format"]["json_schema"]["schema"]["required"],
        json!(["answer"])
    );

    for bad in [r#"{"answer": "forty-two"}"#, "The answer is 42."] {
        app.fake.push(Reply::text(bad));
        let (status, failed) = app
            .post(
                "/v1/responses",
                json!({"model": MODEL, "input": "x", "response_format": format}),
            )
            .await;
        assert_eq!(status, 200);
        assert_eq!(failed["status"], "failed", "{failed}");
        assert_eq!(failed["error"]["code"], "upstream_structured_output_failed");
    }

    let (status, error) = app
        .post(
            "/v1/responses",
            json!({"model": MODEL, "input": "x", "response_format":
                   {"type": "json_schema", "json_schema": {"schema": {"type": 12}}}}),
        )
        .await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(
        error["error"]["param"],
        "response_format.json_schema.schema"
    );
}

#[tokio::test]
async fn usage_cost_comes_from_the_operators_price_table() {
    let app = TestApp::spawn_with(|config| {
        let mut prices = engine::Prices::default();
        prices.models.insert(
            MODEL.to_owned(),
            engine::ModelPrice {
                input_per_million: 2.0,
                output_per_million: 10.0,
                cache_read_per_million: None,
                cache_write_per_million: None,
            },
        );
        config.engine.prices = std::sync::Arc::new(prices);
    })
    .await;
    app.fake.push(Reply::text("priced").usage(1000, 500));
    let (_, response) = app
        .post("/v1/responses", json!({"model": MODEL, "input": "x"}))
        .await;
    let cost = &response["usage"]["cost"];
    assert_eq!(cost["currency"], "USD", "{response}");
    let total = cost["total_cost"].as_f64().unwrap();
    assert!((total - 0.007).abs() < 1e-9, "{cost}");
    // Without a price there is no cost.
    app.fake.push(Reply::text("free"));
    let (_, unpriced) = app
        .post(
            "/v1/responses",
            json!({"model": "openai/other", "input": "x"}),
        )
        .await;
    assert!(unpriced["usage"].get("cost").is_none(), "{unpriced}");
}

#[tokio::test]
async fn presets_supply_defaults_that_request_fields_override() {
    let app = TestApp::spawn_with(|config| {
        let tools: Vec<protocol::request::Tool> = serde_json::from_value(json!([
            {"type": "fetch_url", "max_urls": 3},
            {"type": "function", "name": "lookup", "parameters": {"type": "object"}}
        ]))
        .unwrap();
        let preset = engine::Preset {
            model: Some("openai/gpt-low".to_owned()),
            max_steps: Some(3),
            instructions: Some("Answer briefly.".to_owned()),
            tools,
            ..engine::Preset::default()
        };
        config.engine.presets =
            std::sync::Arc::new([("low".to_owned(), preset)].into_iter().collect());
    })
    .await;

    // The legacy alias selects the preset; its model, steps, instructions and tools apply.
    app.fake.push(Reply::text("brief"));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"preset": "pro-search", "input": "x"}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["model"], "openai/gpt-low");
    assert_eq!(response["max_steps"], 3);
    let request = &app.fake.requests()[0];
    assert_eq!(request["model"], "gpt-low");
    assert_eq!(request["messages"][0]["content"], "Answer briefly.");
    let names = |request: &Value| {
        request["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(request), ["lookup", "fetch_url"]);

    // Request fields win; a request tool replaces the preset's tool of its type only, and
    // `effort` wins over `preset`.
    app.fake.reset();
    app.fake.push(Reply::text("mine"));
    let (status, response) = app
        .post(
            "/v1/responses",
            json!({"effort": "low", "preset": "nope", "model": MODEL, "max_steps": 5,
                   "instructions": "Be thorough.", "input": "x",
                   "tools": [{"type": "function", "name": "mine", "parameters": {"type": "object"}}]}),
        )
        .await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["model"], MODEL);
    assert_eq!(response["max_steps"], 5);
    let request = &app.fake.requests()[0];
    assert_eq!(request["messages"][0]["content"], "Be thorough.");
    assert_eq!(names(request), ["mine", "fetch_url"]);

    // An unknown preset names what exists.
    let (status, error) = app
        .post("/v1/responses", json!({"preset": "xhigh", "input": "x"}))
        .await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["error"]["param"], "preset");
    assert!(error["error"]["message"].as_str().unwrap().contains("low"));
}

/// A plain request's body, the stored response and the `response.completed` event's response
/// are the same bytes (the final response is serialized once and shared by all three).
#[tokio::test]
async fn the_plain_body_is_the_stored_response_and_the_completed_events_byte_for_byte() {
    let app = TestApp::spawn().await;
    app.fake
        .push(Reply::text_chunks(["quote \" and ", "é 🎉 ", "</done>"]));
    let answer = app
        .client
        .post(app.url("/v1/responses"))
        .json(&json!({"model": MODEL, "input": "hi", "metadata": {"k": "v\n"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    assert_eq!(
        answer.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    let body = answer.text().await.unwrap();
    let parsed: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(parsed["status"], "completed", "{body}");
    assert_eq!(
        parsed["output"][0]["content"][0]["text"],
        "quote \" and é 🎉 </done>"
    );
    let id = parsed["id"].as_str().unwrap();

    let stored = app
        .client
        .get(app.url(&format!("/v1/responses/{id}")))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(stored, body, "the stored response");

    let (status, raw) = get_stream(&app, &format!("/v1/responses/{id}?stream=true")).await;
    assert_eq!(status, 200, "{raw}");
    let line = raw
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .find(|data| data.starts_with(r#"{"type":"response.completed","#))
        .unwrap();
    let inner = line
        .strip_prefix(r#"{"type":"response.completed","response":"#)
        .and_then(|rest| rest.rsplit_once(r#","sequence_number":"#))
        .map(|(response, _)| response)
        .unwrap();
    assert_eq!(inner, body, "the response.completed event's response");
}
