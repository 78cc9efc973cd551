//! The Chat Completions adapter against the scripted fake provider, over a real socket.

use std::collections::BTreeMap;
use std::time::Duration;

use agentd_providers::{
    ChatCompletionsClient, ClientOptions, ProviderConfig, ProvidersError, WireApi,
};
use engine::model::{
    ContentPart, FinishReason, JsonSchemaFormat, ModelClient, ModelError, ModelEvent, ModelMessage,
    ModelRequest, ModelStream, ModelToolChoice, OutputFormat, TokenUsage, ToolCall, ToolSpec,
};
use futures::StreamExt;
use serde_json::json;
use testkit::fake_provider::{FakeProvider, Reply};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const KEY: &str = "sk-secret-test";

fn client_for(
    base_url: &str,
    api_key: Option<&str>,
    options: ClientOptions,
) -> Result<ChatCompletionsClient, ProvidersError> {
    ChatCompletionsClient::new(
        &ProviderConfig {
            name: "openai".into(),
            api: WireApi::ChatCompletions,
            base_url: base_url.into(),
            api_key: api_key.map(str::to_owned),
            models: vec![],
        },
        &options,
    )
}

fn client(fake: &FakeProvider) -> Result<ChatCompletionsClient, ProvidersError> {
    client_for(&fake.base_url(), Some(KEY), ClientOptions::default())
}

fn hello(model: &str) -> ModelRequest {
    ModelRequest {
        model: model.into(),
        messages: vec![ModelMessage::User {
            content: vec![ContentPart::Text {
                text: "Hello".into(),
            }],
        }],
        ..ModelRequest::default()
    }
}

/// Every item of the stream, errors included.
async fn collect(stream: ModelStream) -> Vec<Result<ModelEvent, ModelError>> {
    stream.collect().await
}

#[tokio::test]
async fn text_streams_as_deltas_then_usage_then_finish() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.push(
        Reply::text_chunks(["Hel", "lo", " world"])
            .usage(12, 3)
            .cached_tokens(4)
            .reasoning_tokens(1),
    );
    let events = collect(client(&fake)?.stream(hello("gpt-5.4")).await?).await;
    assert_eq!(
        events,
        vec![
            Ok(ModelEvent::TextDelta("Hel".into())),
            Ok(ModelEvent::TextDelta("lo".into())),
            Ok(ModelEvent::TextDelta(" world".into())),
            Ok(ModelEvent::Usage(TokenUsage {
                input_tokens: 12,
                output_tokens: 3,
                cached_input_tokens: 4,
                reasoning_tokens: 1,
                cache_write_tokens: 0,
            })),
            Ok(ModelEvent::Finish(FinishReason::Stop)),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn word_split_text_adds_up_and_finish_reason_is_passed_on() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.push(Reply::text("The answer is cut").finish_reason("length"));
    let events = collect(client(&fake)?.stream(hello("m")).await?).await;
    let text: String = events
        .iter()
        .filter_map(|event| match event {
            Ok(ModelEvent::TextDelta(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "The answer is cut");
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, Ok(ModelEvent::TextDelta(_))))
            .count()
            > 1
    );
    assert_eq!(
        events.last(),
        Some(&Ok(ModelEvent::Finish(FinishReason::Length)))
    );
    Ok(())
}

#[tokio::test]
async fn two_tool_calls_in_one_turn_assemble_by_index() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.push(Reply::tool_calls(vec![
        ("call_1", "get_order_status", r#"{"order_id":"ORD-10042"}"#),
        ("call_2", "get_weather", r#"{"city":"Paris","unit":"c"}"#),
    ]));
    let events = collect(client(&fake)?.stream(hello("m")).await?).await;

    // index -> (id, name, arguments, pieces)
    let mut calls: BTreeMap<usize, (String, String, String, usize)> = BTreeMap::new();
    for event in &events {
        if let Ok(ModelEvent::ToolCallDelta {
            index,
            id,
            name,
            arguments,
            ..
        }) = event
        {
            let call = calls.entry(*index).or_default();
            if let Some(id) = id {
                call.0.clone_from(id);
            }
            if let Some(name) = name {
                call.1.clone_from(name);
            }
            call.2.push_str(arguments);
            call.3 += 1;
        }
    }
    let assembled: Vec<_> = calls
        .values()
        .map(|(id, name, arguments, _)| (id.as_str(), name.as_str(), arguments.as_str()))
        .collect();
    assert_eq!(
        assembled,
        vec![
            ("call_1", "get_order_status", r#"{"order_id":"ORD-10042"}"#),
            ("call_2", "get_weather", r#"{"city":"Paris","unit":"c"}"#),
        ]
    );
    // The arguments really came in pieces (name first, then 2+ argument pieces).
    assert!(calls.values().all(|call| call.3 >= 3), "{calls:?}");
    assert!(matches!(
        events.iter().rev().nth(1),
        Some(Ok(ModelEvent::Usage(_)))
    ));
    assert_eq!(
        events.last(),
        Some(&Ok(ModelEvent::Finish(FinishReason::ToolCalls)))
    );
    Ok(())
}

#[tokio::test]
async fn the_request_is_mapped_to_chat_completions() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.push(Reply::text("ok"));
    let request = ModelRequest {
        model: "gpt-5.4".into(),
        messages: vec![
            ModelMessage::System {
                content: "You are terse.".into(),
            },
            ModelMessage::User {
                content: vec![ContentPart::Text {
                    text: "Where is my order?".into(),
                }],
            },
            ModelMessage::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "get_order_status".into(),
                    arguments: r#"{"order_id":"ORD-10042"}"#.into(),
                    thought_signature: None,
                }],
            },
            ModelMessage::Tool {
                call_id: "call_1".into(),
                name: Some("get_order_status".into()),
                content: r#"{"status":"shipped"}"#.into(),
            },
        ],
        tools: vec![ToolSpec {
            name: "get_order_status".into(),
            description: Some("Look up an order".into()),
            parameters: json!({"type": "object", "properties": {"order_id": {"type": "string"}}})
                .into(),
            strict: true,
        }],
        tool_choice: ModelToolChoice::Required,
        parallel_tool_calls: Some(true),
        temperature: Some(0.2),
        top_p: None,
        max_output_tokens: Some(256),
        output_format: Some(OutputFormat::JsonSchema(JsonSchemaFormat {
            name: "status".into(),
            schema: json!({"type": "object"}),
            description: None,
            strict: Some(true),
        })),
        reasoning_effort: Some("low".into()),
        prompt_cache_key: Some("conv-7".into()),
        ..ModelRequest::default()
    };
    collect(client(&fake)?.stream(request).await?).await;

    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0],
        json!({
            "model": "gpt-5.4",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Where is my order?"},
                {"role": "assistant", "content": null, "tool_calls": [{
                    "id": "call_1", "type": "function",
                    "function": {"name": "get_order_status", "arguments": "{\"order_id\":\"ORD-10042\"}"}
                }]},
                {"role": "tool", "tool_call_id": "call_1", "content": "{\"status\":\"shipped\"}"}
            ],
            "tools": [{"type": "function", "function": {
                "name": "get_order_status",
                "description": "Look up an order",
                "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
                "strict": true
            }}],
            "tool_choice": "required",
            "parallel_tool_calls": true,
            "temperature": 0.2,
            "max_completion_tokens": 256,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "status", "schema": {"type": "object"}, "strict": true
            }},
            "reasoning_effort": "low",
            "prompt_cache_key": "conv-7",
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );
    Ok(())
}

#[tokio::test]
async fn no_tools_means_no_tool_fields() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.push(Reply::text("ok"));
    let request = ModelRequest {
        tool_choice: ModelToolChoice::None,
        parallel_tool_calls: Some(false),
        ..hello("m")
    };
    collect(client(&fake)?.stream(request).await?).await;
    let body = &fake.requests()[0];
    for field in ["tools", "tool_choice", "parallel_tool_calls"] {
        assert!(body.get(field).is_none(), "{field} sent: {body}");
    }
    Ok(())
}

#[tokio::test]
async fn the_key_goes_in_the_authorization_header() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.push(Reply::text("ok"));
    collect(client(&fake)?.stream(hello("m")).await?).await;
    let headers = fake.headers();
    assert_eq!(
        headers[0].get("authorization").map(|v| v.as_bytes()),
        Some(format!("Bearer {KEY}").as_bytes())
    );
    assert_eq!(
        headers[0].get("content-type").map(|v| v.as_bytes()),
        Some(&b"application/json"[..])
    );
    Ok(())
}

#[tokio::test]
async fn a_keyless_provider_sends_no_authorization() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.push(Reply::text("ok"));
    let keyless = client_for(&fake.base_url(), None, ClientOptions::default())?;
    collect(keyless.stream(hello("m")).await?).await;
    assert!(fake.headers()[0].get("authorization").is_none());
    Ok(())
}

#[tokio::test]
async fn upstream_errors_carry_status_and_message_but_never_the_key() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.push(Reply::error(
        500,
        "The server had an error while processing your request.",
    ));
    fake.push(Reply::error(429, "Rate limit reached for gpt-5.4."));
    fake.push(Reply::error(
        401,
        &format!("Incorrect API key provided: {KEY}."),
    ));
    fake.push(Reply::error(
        401,
        "Incorrect API key provided: sk-s**********test.",
    ));
    // Retries are the conformance suite's subject; here each status is seen once.
    let client = client_for(
        &fake.base_url(),
        Some(KEY),
        ClientOptions {
            max_retries: 0,
            ..ClientOptions::default()
        },
    )?;

    let mut errors = Vec::new();
    for _ in 0..4 {
        match client.stream(hello("gpt-5.4")).await {
            Ok(_) => return Err("an HTTP error status must fail the call".into()),
            Err(err) => errors.push(err),
        }
    }
    assert_eq!(
        errors[..2],
        [
            ModelError::Upstream {
                status: 500,
                message: "The server had an error while processing your request.".into()
            },
            ModelError::Upstream {
                status: 429,
                message: "Rate limit reached for gpt-5.4.".into()
            },
        ]
    );
    assert_eq!(
        errors[2],
        ModelError::Upstream {
            status: 401,
            message: "Incorrect API key provided: [redacted].".into()
        }
    );
    for err in &errors {
        let text = err.to_string();
        assert!(!text.contains(KEY), "{text}");
        assert!(!text.contains("sk-s*"), "{text}");
    }
    Ok(())
}

#[tokio::test]
async fn an_empty_script_fails_loudly() -> TestResult {
    let fake = FakeProvider::start().await;
    let result = client(&fake)?.stream(hello("m")).await;
    assert_eq!(
        result.err(),
        Some(ModelError::Upstream {
            status: 500,
            message: "fake provider: no scripted reply left".into()
        })
    );
    Ok(())
}

#[tokio::test]
async fn an_unreachable_port_is_a_transport_error() -> TestResult {
    // Bind, note the port, close: nothing listens there now.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    drop(listener);
    let base_url = format!("http://127.0.0.1:{port}/v1?token={KEY}");
    let client = client_for(&base_url, Some(KEY), ClientOptions::default())?;
    match client.stream(hello("m")).await {
        Err(ModelError::Transport(message)) => {
            assert!(message.starts_with("could not connect"), "{message}");
            assert!(!message.contains(KEY), "{message}");
            assert!(
                !message.contains("127.0.0.1"),
                "no URL in the message: {message}"
            );
        }
        Err(other) => return Err(format!("expected Transport, got {other:?}").into()),
        Ok(_) => return Err("expected Transport, got a stream".into()),
    }
    Ok(())
}

fn quick_timeouts() -> ClientOptions {
    ClientOptions {
        connect_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(1),
        ..ClientOptions::default()
    }
}

#[tokio::test]
async fn deltas_arrive_before_the_turn_ends_and_silence_times_out() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.push(Reply::text_chunks(["Hel", "lo"]).then_hang());
    let client = client_for(&fake.base_url(), Some(KEY), quick_timeouts())?;
    let mut stream = client.stream(hello("m")).await?;
    assert_eq!(
        stream.next().await,
        Some(Ok(ModelEvent::TextDelta("Hel".into())))
    );
    assert_eq!(
        stream.next().await,
        Some(Ok(ModelEvent::TextDelta("lo".into())))
    );
    assert_eq!(stream.next().await, Some(Err(ModelError::Timeout)));
    assert_eq!(stream.next().await, None);
    Ok(())
}

#[tokio::test]
async fn no_response_head_times_out() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.push(Reply::hang_before_headers());
    let client = client_for(&fake.base_url(), Some(KEY), quick_timeouts())?;
    assert_eq!(
        client.stream(hello("m")).await.err(),
        Some(ModelError::Timeout)
    );
    Ok(())
}

#[tokio::test]
async fn a_stream_cut_before_finish_reason_is_a_protocol_error() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.push(Reply::raw_sse([
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"partial"}}]}"#,
    ]));
    let events = collect(client(&fake)?.stream(hello("m")).await?).await;
    assert_eq!(events[0], Ok(ModelEvent::TextDelta("partial".into())));
    assert!(
        matches!(events[1], Err(ModelError::Protocol(_))),
        "{events:?}"
    );
    assert_eq!(events.len(), 2);
    Ok(())
}

#[tokio::test]
async fn dropping_the_stream_closes_the_upstream_connection() -> TestResult {
    let fake = FakeProvider::start().await;
    fake.push(
        Reply::text("one two three four five").delay_between_chunks(Duration::from_millis(200)),
    );
    let mut stream = client(&fake)?.stream(hello("m")).await?;
    assert_eq!(
        stream.next().await,
        Some(Ok(ModelEvent::TextDelta("one".into())))
    );
    drop(stream);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while fake.dropped_streams() == 0 {
        if tokio::time::Instant::now() > deadline {
            return Err("the fake never saw the client go away".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

#[tokio::test]
async fn one_client_serves_many_turns() -> TestResult {
    let fake = FakeProvider::start().await;
    let client = client(&fake)?;
    for n in 0..3 {
        fake.push(Reply::text(&format!("turn {n}")));
        let events = collect(client.stream(hello("m")).await?).await;
        assert_eq!(
            events.last(),
            Some(&Ok(ModelEvent::Finish(FinishReason::Stop)))
        );
    }
    assert_eq!(fake.requests().len(), 3);
    assert_eq!(fake.pending_replies(), 0);
    assert_eq!(fake.dropped_streams(), 0);
    Ok(())
}

/// Two long conversations sent turn after turn through one client, the history growing and
/// then edited: each request reaches the upstream with exactly its own messages (the client
/// keeps the JSON of the messages it sent, `message_memo.rs`).
#[tokio::test]
async fn long_conversations_reach_the_upstream_whole_at_every_turn() -> TestResult {
    let fake = FakeProvider::start().await;
    let client = client(&fake)?;
    let text = |chat: usize, turn: usize, who: &str| {
        format!("{who} {turn} of chat {chat}: \"quoted\"\n\tand é. ").repeat(40)
    };
    let mut chats: Vec<Vec<ModelMessage>> = vec![Vec::new(), Vec::new()];
    let mut sent = Vec::new();
    for turn in 0..4 {
        for (n, chat) in chats.iter_mut().enumerate() {
            if turn > 0 {
                chat.push(ModelMessage::Assistant {
                    content: Some(text(n, turn, "answer")),
                    tool_calls: vec![],
                });
            }
            chat.push(ModelMessage::User {
                content: vec![ContentPart::Text {
                    text: text(n, turn, "question"),
                }],
            });
            sent.push(chat.clone());
        }
    }
    // The first chat's history with its second answer changed, then cut after it.
    let mut edited = chats[0].clone();
    edited[3] = ModelMessage::Assistant {
        content: Some("changed".into()),
        tool_calls: vec![],
    };
    sent.push(edited.clone());
    sent.push(edited[..4].to_vec());
    sent.push(chats[0].clone());

    for messages in &sent {
        fake.push(Reply::text("ok"));
        let request = ModelRequest {
            model: "m".into(),
            messages: messages.clone(),
            ..ModelRequest::default()
        };
        collect(client.stream(request).await?).await;
    }
    let requests = fake.requests();
    assert_eq!(requests.len(), sent.len());
    for (n, (request, messages)) in requests.iter().zip(&sent).enumerate() {
        let want: Vec<serde_json::Value> = messages
            .iter()
            .map(|message| match message {
                ModelMessage::User { content } => match content.as_slice() {
                    [ContentPart::Text { text }] => json!({"role": "user", "content": text}),
                    _ => json!(null),
                },
                ModelMessage::Assistant { content, .. } => {
                    json!({"role": "assistant", "content": content})
                }
                _ => json!(null),
            })
            .collect();
        assert_eq!(request["messages"], json!(want), "request {n}");
    }
    Ok(())
}

#[tokio::test]
async fn an_invalid_key_or_url_is_refused_at_construction() {
    assert!(
        client_for(
            "http://127.0.0.1:1/v1",
            Some("sk-bad\nkey"),
            ClientOptions::default()
        )
        .is_err()
    );
    assert!(client_for("localhost:8000/v1", None, ClientOptions::default()).is_err());
}
