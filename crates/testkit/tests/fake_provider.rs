//! Self-test of `testkit::fake_provider` over plain HTTP: the routes of each wire API, the
//! model lists and their pagination, extra headers, raw bodies, cuts and the request record.
//! (What each wire's stream means to its adapter is the providers crate's conformance suite.)

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on a broken socket"
)]

use agentd_testkit::fake_provider::{Route, WireApi};
use agentd_testkit::{FakeProvider, Gate, Reply, http_client};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

async fn get(url: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = http_client().get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn models() -> Vec<String> {
    ["gpt-a", "gpt-b", "gpt-c"].map(str::to_owned).to_vec()
}

#[tokio::test]
async fn openai_model_list() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.set_models(models());
    let (status, body) = get(&format!("{}/models", fake.base_url()), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(body["object"], "list");
    assert_eq!(
        body["data"][0],
        json!({"id": "gpt-a", "object": "model", "created": 1_700_000_000, "owned_by": "fake"})
    );
    assert_eq!(body["data"].as_array().map(Vec::len), Some(3));
    assert_eq!(fake.model_list_requests(), 1);
    // A model list is no model turn.
    assert!(fake.requests().is_empty());
    let received = fake.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/models");
    assert_eq!(
        received[0].route,
        Route::ModelList {
            wire: WireApi::ChatCompletions
        }
    );
    Ok(())
}

#[tokio::test]
async fn anthropic_model_list_is_told_by_its_header_and_paginates() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.set_models(models());
    let base = fake.base_url_for(WireApi::AnthropicMessages);
    let version = [("anthropic-version", "2023-06-01")];
    let (status, first) = get(&format!("{base}/v1/models?limit=2"), &version).await;
    assert_eq!(status, 200);
    assert_eq!(first["data"][0]["id"], "gpt-a");
    assert_eq!(first["data"][0]["type"], "model");
    assert_eq!(first["has_more"], true);
    assert_eq!(first["last_id"], "gpt-b");
    let (_, second) = get(
        &format!("{base}/v1/models?limit=2&after_id=gpt-b"),
        &version,
    )
    .await;
    assert_eq!(second["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(second["first_id"], "gpt-c");
    assert_eq!(second["has_more"], false);
    let (status, error) = get(&format!("{base}/v1/models?after_id=nope"), &version).await;
    assert_eq!(status, 400);
    assert_eq!(error["type"], "error");
    assert_eq!(fake.model_list_requests(), 3);
    Ok(())
}

#[tokio::test]
async fn gemini_model_list_paginates_with_tokens() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.set_models(vec!["gemini-2.5-flash".into(), "text-embedding-004".into()]);
    let base = fake.base_url_for(WireApi::Gemini);
    let (status, first) = get(&format!("{base}/v1beta/models?pageSize=1"), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(first["models"][0]["name"], "models/gemini-2.5-flash");
    assert_eq!(
        first["models"][0]["supportedGenerationMethods"][0],
        "generateContent"
    );
    let token = first["nextPageToken"].as_str().unwrap().to_owned();
    let (_, second) = get(
        &format!("{base}/v1beta/models?pageSize=1&pageToken={token}"),
        &[],
    )
    .await;
    assert_eq!(second["models"][0]["name"], "models/text-embedding-004");
    assert_eq!(
        second["models"][0]["supportedGenerationMethods"],
        json!(["embedContent"])
    );
    assert!(second.get("nextPageToken").is_none());
    assert_eq!(fake.model_list_requests(), 2);
    fake.reset();
    assert_eq!(fake.model_list_requests(), 0);
    Ok(())
}

/// Posts `body` and returns the status, the headers and the body text.
async fn post(url: &str, body: &Value) -> (u16, reqwest::header::HeaderMap, String) {
    let response = http_client().post(url).json(body).send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap_or_default())
}

#[tokio::test]
async fn every_wire_has_its_route_and_error_envelope() -> TestResult {
    let fake = FakeProvider::start().await;
    let origin = fake.base_url_for(WireApi::Gemini);
    let cases = [
        (format!("{}/chat/completions", fake.base_url()), "error"),
        (format!("{}/responses", fake.base_url()), "error"),
        (format!("{origin}/v1/messages"), "type"),
        (
            format!("{origin}/v1beta/models/gemini-2.5-flash:generateContent"),
            "error",
        ),
    ];
    for (url, _) in &cases {
        fake.push(Reply::error(429, "slow down").header("retry-after", "7"));
        let (status, headers, body) = post(url, &json!({"model": "m"})).await;
        assert_eq!(status, 429, "{url}");
        assert_eq!(headers["retry-after"], "7", "{url}");
        assert!(body.contains("slow down"), "{url}: {body}");
    }
    let bodies: Vec<Value> = fake.requests();
    assert_eq!(bodies.len(), 4);
    let routes: Vec<Route> = fake.received().into_iter().map(|r| r.route).collect();
    assert_eq!(
        routes,
        [
            WireApi::ChatCompletions,
            WireApi::Responses,
            WireApi::AnthropicMessages,
        ]
        .map(|wire| Route::Turn {
            wire,
            streaming: true
        })
        .into_iter()
        .chain([Route::Turn {
            wire: WireApi::Gemini,
            streaming: false
        }])
        .collect::<Vec<_>>()
    );
    // Each provider's envelope.
    fake.push(Reply::error(529, "Overloaded"));
    let (_, _, body) = post(&cases[2].0, &json!({})).await;
    let body: Value = serde_json::from_str(&body)?;
    assert_eq!(body["error"]["type"], "overloaded_error");
    fake.push(Reply::error(429, "quota"));
    let (_, _, body) = post(&cases[3].0, &json!({})).await;
    let body: Value = serde_json::from_str(&body)?;
    assert_eq!(
        body,
        json!({"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}})
    );
    // No reply left: a 500, loudly.
    let (status, _, body) = post(&cases[0].0, &json!({})).await;
    assert_eq!(status, 500);
    assert!(body.contains("no scripted reply left"), "{body}");
    Ok(())
}

#[tokio::test]
async fn gemini_stream_without_sse_is_a_json_array() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.push(Reply::tool_calls(vec![(
        "c1",
        "f",
        r#"{"b":1, "a":[true]}"#,
    )]));
    let url = format!(
        "{}/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        fake.base_url_for(WireApi::Gemini)
    );
    let (status, _, body) = post(&url, &json!({"contents": []})).await;
    assert_eq!(status, 200);
    // The arguments keep their keys' order and text, without the whitespace between tokens.
    assert!(body.contains(r#""args":{"b":1,"a":[true]}"#), "{body}");
    let chunks: Vec<Value> = serde_json::from_str(&body)?;
    let last = chunks.last().unwrap();
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    Ok(())
}

#[tokio::test]
async fn raw_bodies_go_out_verbatim_one_event_per_chunk() -> TestResult {
    let fake = FakeProvider::start().await;
    let body = "event: a\ndata: {\"x\":1}\n\nevent: b\ndata: {}\n\n";
    fake.push(Reply::raw(200, "text/event-stream", body).one_chunk_per_event());
    let response = http_client()
        .post(format!("{}/responses", fake.base_url()))
        .json(&json!({"stream": true}))
        .send()
        .await?;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut response = response;
    let mut chunks = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        chunks.push(String::from_utf8(chunk.to_vec())?);
    }
    assert_eq!(chunks.concat(), body);
    assert!(chunks.len() >= 2, "{chunks:?}");
    Ok(())
}

#[tokio::test]
async fn a_cut_stream_breaks_off_after_the_deltas_and_a_gate_holds_it() -> TestResult {
    let fake = FakeProvider::start().await;
    let gate = Gate::new();
    fake.push(Reply::text_chunks(["Hel", "lo"]).wait_for(&gate).then_cut());
    let mut response = http_client()
        .post(format!(
            "{}/v1/messages",
            fake.base_url_for(WireApi::AnthropicMessages)
        ))
        .json(&json!({"stream": true}))
        .send()
        .await?;
    let mut seen = String::new();
    // Up to the gate: message_start, ping, the block start and the first text delta.
    while !seen.contains("\"Hel\"") {
        let chunk = response.chunk().await?.unwrap();
        seen.push_str(std::str::from_utf8(&chunk)?);
    }
    assert!(!seen.contains("\"lo\""), "{seen}");
    gate.open();
    let mut broke = false;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => seen.push_str(std::str::from_utf8(&chunk)?),
            Ok(None) => break,
            Err(_) => {
                broke = true;
                break;
            }
        }
    }
    assert!(broke, "the body must break off, not end: {seen}");
    assert!(seen.contains("\"lo\""), "{seen}");
    assert!(!seen.contains("message_stop"), "{seen}");
    Ok(())
}

/// The load mode's switch: with recording off every request is still answered, but none is
/// kept (a load generator's millions of requests would otherwise grow the fake's memory); on
/// again, requests are recorded as before.
#[tokio::test]
async fn recording_off_answers_without_keeping_requests() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.set_recording(false);
    let url = format!("{}/chat/completions", fake.base_url());
    fake.push(Reply::text("unrecorded"));
    let (status, _, body) = post(&url, &json!({"model": "m", "stream": true})).await;
    assert_eq!(status, 200);
    assert!(body.contains("unrecorded"), "{body}");
    assert!(fake.requests().is_empty());
    assert!(fake.headers().is_empty());
    assert!(fake.received().is_empty());

    fake.set_recording(true);
    fake.push(Reply::text("recorded"));
    let (status, _, _) = post(&url, &json!({"model": "m2"})).await;
    assert_eq!(status, 200);
    assert_eq!(fake.requests(), vec![json!({"model": "m2"})]);
    assert_eq!(fake.received().len(), 1);
    Ok(())
}
