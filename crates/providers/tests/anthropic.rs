//! The Anthropic Messages adapter against a hand-written HTTP/1.1 server on 127.0.0.1 that
//! replays transcripts in Anthropic's documented SSE format (`event:` + `data:` lines, chunked
//! transfer) and records what the adapter sent.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test on a broken socket or poisoned lock"
)]

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentd_providers::{AnthropicClient, ClientOptions, ProviderConfig, WireApi};
use engine::model::{
    ContentPart, FinishReason, ModelClient, ModelError, ModelEvent, ModelMessage, ModelRequest,
    ModelStream, ModelToolChoice, TokenUsage, ToolCall, ToolSpec,
};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const KEY: &str = "sk-ant-api03-secret-test";

// ---------------------------------------------------------------------------------------------
// The scripted upstream

/// One step of a scripted response body.
enum Step {
    /// Write these bytes as one HTTP chunk and flush.
    Send(Vec<u8>),
    /// Wait until the test opens the gate.
    Wait(Arc<Notify>),
    /// Close the socket without the final chunk.
    Cut,
    /// Go silent, keeping the socket open.
    Hang,
}

enum Reply {
    /// `200 text/event-stream`, chunked, body from the steps (then the last chunk).
    Sse(Vec<Step>),
    /// Any status with a JSON body, `content-length` framed.
    Json(u16, String),
}

/// A request as the server saw it.
struct Seen {
    /// Header names lower-cased.
    headers: BTreeMap<String, String>,
    path: String,
    body: Value,
}

#[derive(Default)]
struct State {
    replies: VecDeque<Reply>,
    seen: Vec<Seen>,
}

struct Upstream {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl Upstream {
    async fn start() -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, shared.clone()));
            }
        });
        Upstream { addr, state }
    }

    fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn push(&self, reply: Reply) {
        self.state.lock().unwrap().replies.push_back(reply);
    }

    fn take_seen(&self) -> Vec<Seen> {
        std::mem::take(&mut self.state.lock().unwrap().seen)
    }
}

/// Serves one request per connection (`connection: close`), so every turn is its own socket.
async fn serve(mut socket: TcpStream, state: Arc<Mutex<State>>) {
    let mut buffer = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .unwrap_or_default()
        .to_owned();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buffer[head_end..head_end + length]).unwrap_or(Value::Null);
    let reply = {
        let mut state = state.lock().unwrap();
        state.seen.push(Seen {
            headers,
            path,
            body,
        });
        state.replies.pop_front()
    };
    let Some(reply) = reply else {
        let body = r#"{"type":"error","error":{"type":"api_error","message":"no scripted reply"}}"#;
        let _ = socket.write_all(json_response(500, body).as_bytes()).await;
        return;
    };
    match reply {
        Reply::Json(status, body) => {
            let _ = socket
                .write_all(json_response(status, &body).as_bytes())
                .await;
        }
        Reply::Sse(steps) => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                        cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\
                        connection: close\r\n\r\n";
            if socket.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            for step in steps {
                match step {
                    Step::Send(bytes) => {
                        let mut chunk = format!("{:x}\r\n", bytes.len()).into_bytes();
                        chunk.extend_from_slice(&bytes);
                        chunk.extend_from_slice(b"\r\n");
                        if socket.write_all(&chunk).await.is_err() {
                            return;
                        }
                        let _ = socket.flush().await;
                        // Let each chunk travel on its own rather than coalesced with the next.
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                    Step::Wait(gate) => gate.notified().await,
                    Step::Cut => return,
                    Step::Hang => {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        return;
                    }
                }
            }
            let _ = socket.write_all(b"0\r\n\r\n").await;
        }
    }
}

fn json_response(status: u16, body: &str) -> String {
    format!(
        "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// One SSE event as Anthropic frames it: the `event:` name repeats the data's `type`.
fn event(data: &Value) -> String {
    let name = data["type"].as_str().unwrap_or("unknown");
    format!("event: {name}\ndata: {data}\n\n")
}

/// Each event as its own chunk.
fn steps(events: &[Value]) -> Vec<Step> {
    events
        .iter()
        .map(|data| Step::Send(event(data).into_bytes()))
        .collect()
}

fn message_start(input_tokens: u64, cache_creation: u64, cache_read: u64) -> Value {
    json!({"type": "message_start", "message": {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
        "content": [], "model": "claude-sonnet-4-5-20250929",
        "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": cache_creation,
                  "cache_read_input_tokens": cache_read, "output_tokens": 1}
    }})
}

fn text_start(index: usize) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
}

fn text_delta(index: usize, text: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})
}

fn tool_start(index: usize, id: &str, name: &str) -> Value {
    json!({"type": "content_block_start", "index": index,
           "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})
}

fn json_delta(index: usize, partial_json: &str) -> Value {
    json!({"type": "content_block_delta", "index": index,
           "delta": {"type": "input_json_delta", "partial_json": partial_json}})
}

fn block_stop(index: usize) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_delta(stop_reason: &str, output_tokens: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
           "usage": {"output_tokens": output_tokens}})
}

fn message_stop() -> Value {
    json!({"type": "message_stop"})
}

// ---------------------------------------------------------------------------------------------
// Client side

fn client_with(upstream: &Upstream, options: ClientOptions) -> AnthropicClient {
    AnthropicClient::new(
        &ProviderConfig {
            name: "anthropic".into(),
            api: WireApi::AnthropicMessages,
            base_url: upstream.base_url(),
            api_key: Some(KEY.into()),
            models: vec![],
        },
        &options,
    )
    .unwrap()
}

fn client(upstream: &Upstream) -> AnthropicClient {
    client_with(upstream, ClientOptions::default())
}

fn hello() -> ModelRequest {
    ModelRequest {
        model: "claude-sonnet-4-5".into(),
        messages: vec![ModelMessage::User {
            content: vec![ContentPart::Text {
                text: "Hello".into(),
            }],
        }],
        ..ModelRequest::default()
    }
}

async fn collect(stream: ModelStream) -> Vec<Result<ModelEvent, ModelError>> {
    stream.collect().await
}

/// Tool calls assembled from their deltas: index -> (id, name, arguments).
fn assemble(
    events: &[Result<ModelEvent, ModelError>],
) -> BTreeMap<usize, (String, String, String)> {
    let mut calls: BTreeMap<usize, (String, String, String)> = BTreeMap::new();
    for event in events {
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
        }
    }
    calls
}

// ---------------------------------------------------------------------------------------------
// Tests

#[tokio::test]
async fn text_deltas_arrive_before_the_stream_ends() -> TestResult {
    let upstream = Upstream::start().await;
    let gate = Arc::new(Notify::new());
    let mut script = steps(&[
        message_start(21, 0, 0),
        text_start(0),
        json!({"type": "ping"}),
        text_delta(0, "Hel"),
    ]);
    script.push(Step::Wait(gate.clone()));
    script.extend(steps(&[
        text_delta(0, "lo!"),
        block_stop(0),
        message_delta("end_turn", 4),
        message_stop(),
    ]));
    upstream.push(Reply::Sse(script));

    let mut stream = client(&upstream).stream(hello()).await?;
    // The gate is still closed: this delta can only come from a stream in progress.
    let first = tokio::time::timeout(Duration::from_secs(5), stream.next()).await?;
    assert_eq!(first, Some(Ok(ModelEvent::TextDelta("Hel".into()))));
    gate.notify_one();
    let rest = collect(stream).await;
    assert_eq!(
        rest,
        vec![
            Ok(ModelEvent::TextDelta("lo!".into())),
            Ok(ModelEvent::Usage(TokenUsage {
                input_tokens: 21,
                output_tokens: 4,
                ..TokenUsage::default()
            })),
            Ok(ModelEvent::Finish(FinishReason::Stop)),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn a_single_tool_call() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Reply::Sse(steps(&[
        message_start(384, 0, 0),
        text_start(0),
        text_delta(0, "Let me check the weather."),
        block_stop(0),
        tool_start(1, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather"),
        json_delta(1, ""),
        json_delta(1, "{\"location\": \"San Fra"),
        json_delta(1, "ncisco, CA\", \"unit\": \"fah"),
        json_delta(1, "renheit\"}"),
        block_stop(1),
        message_delta("tool_use", 89),
        message_stop(),
    ])));
    let events = collect(client(&upstream).stream(hello()).await?).await;
    assert_eq!(
        events[0],
        Ok(ModelEvent::TextDelta("Let me check the weather.".into()))
    );
    let calls = assemble(&events);
    assert_eq!(calls.len(), 1);
    let (id, name, arguments) = &calls[&0];
    assert_eq!(
        (id.as_str(), name.as_str()),
        ("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather")
    );
    assert_eq!(
        serde_json::from_str::<Value>(arguments)?,
        json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
    );
    assert_eq!(
        events.last(),
        Some(&Ok(ModelEvent::Finish(FinishReason::ToolCalls)))
    );
    Ok(())
}

#[tokio::test]
async fn parallel_tool_calls_with_tricky_json_split_anywhere() -> TestResult {
    let first =
        json!({"city": "São Paulo", "note": "say \"olá\" 👋\\n", "nested": {"a": [1, 2.5, null]}});
    let second = json!({"query": "\"quoted\" \\ backslash", "emoji": "🇫🇷", "empty": ""});
    let (first_text, second_text) = (first.to_string(), second.to_string());

    // Split the arguments every 3 characters: pieces end inside escapes (`\`) and between the
    // halves of a flag emoji.
    let pieces = |text: &str| -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        chars
            .chunks(3)
            .map(|piece| piece.iter().collect())
            .collect()
    };
    let mut events = vec![
        message_start(500, 0, 0),
        tool_start(0, "toolu_a", "get_weather"),
    ];
    events.extend(pieces(&first_text).iter().map(|piece| json_delta(0, piece)));
    events.push(block_stop(0));
    events.push(tool_start(1, "toolu_b", "search"));
    events.extend(
        pieces(&second_text)
            .iter()
            .map(|piece| json_delta(1, piece)),
    );
    events.push(block_stop(1));
    events.push(message_delta("tool_use", 120));
    events.push(message_stop());
    // And the body itself travels in 7-byte TCP chunks: SSE lines and UTF-8 sequences are cut.
    let body: Vec<u8> = events.iter().flat_map(|e| event(e).into_bytes()).collect();
    let script = body.chunks(7).map(|c| Step::Send(c.to_vec())).collect();

    let upstream = Upstream::start().await;
    upstream.push(Reply::Sse(script));
    let events = collect(client(&upstream).stream(hello()).await?).await;
    assert!(events.iter().all(Result::is_ok), "{events:?}");
    let calls = assemble(&events);
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[&0].0.as_str(), calls[&0].1.as_str()),
        ("toolu_a", "get_weather")
    );
    assert_eq!(
        (calls[&1].0.as_str(), calls[&1].1.as_str()),
        ("toolu_b", "search")
    );
    assert_eq!(calls[&0].2, first_text);
    assert_eq!(calls[&1].2, second_text);
    assert_eq!(serde_json::from_str::<Value>(&calls[&0].2)?, first);
    assert_eq!(serde_json::from_str::<Value>(&calls[&1].2)?, second);
    // Really in pieces: more argument deltas than calls.
    let argument_deltas = events
        .iter()
        .filter(|e| matches!(e, Ok(ModelEvent::ToolCallDelta { arguments, .. }) if !arguments.is_empty()))
        .count();
    assert!(argument_deltas > 20, "{argument_deltas}");
    assert_eq!(
        events.last(),
        Some(&Ok(ModelEvent::Finish(FinishReason::ToolCalls)))
    );
    Ok(())
}

#[tokio::test]
async fn usage_counts_cache_reads_and_writes_as_input() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Reply::Sse(steps(&[
        message_start(12, 1500, 20000),
        text_start(0),
        text_delta(0, "Cached."),
        block_stop(0),
        message_delta("end_turn", 9),
        message_stop(),
    ])));
    let events = collect(client(&upstream).stream(hello()).await?).await;
    assert_eq!(
        events[1..],
        [
            Ok(ModelEvent::Usage(TokenUsage {
                input_tokens: 21512,
                output_tokens: 9,
                cached_input_tokens: 20000,
                reasoning_tokens: 0,
                cache_write_tokens: 1500,
            })),
            Ok(ModelEvent::Finish(FinishReason::Stop)),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn the_request_body_and_headers() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Reply::Sse(steps(&[
        message_start(1, 0, 0),
        message_delta("end_turn", 1),
        message_stop(),
    ])));
    let request = ModelRequest {
        model: "claude-opus-4-1".into(),
        messages: vec![
            ModelMessage::System {
                content: "You are terse.".into(),
            },
            ModelMessage::User {
                content: vec![ContentPart::Text {
                    text: "Weather in Paris and Rome?".into(),
                }],
            },
            ModelMessage::Assistant {
                content: Some("Checking both.".into()),
                tool_calls: vec![
                    ToolCall {
                        id: "toolu_1".into(),
                        name: "get_weather".into(),
                        arguments: r#"{"city":"Paris"}"#.into(),
                        thought_signature: None,
                    },
                    ToolCall {
                        id: "toolu_2".into(),
                        name: "get_weather".into(),
                        arguments: r#"{"city":"Rome"}"#.into(),
                        thought_signature: None,
                    },
                ],
            },
            ModelMessage::Tool {
                call_id: "toolu_1".into(),
                name: Some("get_weather".into()),
                content: "18°C".into(),
            },
            ModelMessage::Tool {
                call_id: "toolu_2".into(),
                name: Some("get_weather".into()),
                content: "24°C".into(),
            },
        ],
        tools: vec![ToolSpec {
            name: "get_weather".into(),
            description: Some("Current weather for a city".into()),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}).into(),
            strict: true,
        }],
        tool_choice: ModelToolChoice::Auto,
        parallel_tool_calls: Some(false),
        temperature: Some(0.2),
        max_output_tokens: Some(1024),
        ..ModelRequest::default()
    };
    collect(client(&upstream).stream(request).await?).await;

    let seen = upstream.take_seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/messages");
    let header = |name: &str| seen[0].headers.get(name).map(String::as_str);
    assert_eq!(header("x-api-key"), Some(KEY));
    assert_eq!(header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(header("content-type"), Some("application/json"));
    assert_eq!(header("accept"), Some("text/event-stream"));
    assert_eq!(header("authorization"), None);
    assert_eq!(
        seen[0].body,
        json!({
            "model": "claude-opus-4-1",
            "max_tokens": 1024,
            "system": "You are terse.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Checking both."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Rome"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18°C"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "24°C"}
                ]}
            ],
            "tools": [{
                "name": "get_weather",
                "description": "Current weather for a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
            }],
            "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
            "temperature": 0.2,
            "stream": true
        })
    );
    Ok(())
}

#[tokio::test]
async fn a_keyless_gateway_gets_no_key_header() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Reply::Sse(steps(&[
        message_delta("end_turn", 1),
        message_stop(),
    ])));
    let keyless = AnthropicClient::new(
        &ProviderConfig {
            name: "gw".into(),
            api: WireApi::AnthropicMessages,
            base_url: upstream.base_url(),
            api_key: None,
            models: vec![],
        },
        &ClientOptions::default(),
    )?;
    collect(keyless.stream(hello()).await?).await;
    let seen = upstream.take_seen();
    assert!(!seen[0].headers.contains_key("x-api-key"));
    assert_eq!(
        seen[0].headers.get("anthropic-version").map(String::as_str),
        Some("2023-06-01")
    );
    Ok(())
}

#[tokio::test]
async fn http_errors_carry_status_and_message_but_never_the_key() -> TestResult {
    let upstream = Upstream::start().await;
    let envelope = |kind: &str, message: &str| {
        json!({"type": "error", "error": {"type": kind, "message": message},
               "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"})
        .to_string()
    };
    upstream.push(Reply::Json(
        400,
        envelope(
            "invalid_request_error",
            "messages.1.content.0.tool_result: unexpected `tool_use_id`",
        ),
    ));
    upstream.push(Reply::Json(
        401,
        envelope("authentication_error", &format!("invalid x-api-key {KEY}")),
    ));
    upstream.push(Reply::Json(
        429,
        envelope(
            "rate_limit_error",
            "This request would exceed the rate limit for your organization",
        ),
    ));
    upstream.push(Reply::Json(529, envelope("overloaded_error", "Overloaded")));
    // Retries are the conformance suite's subject; here each status is seen once.
    let client = client_with(
        &upstream,
        ClientOptions {
            max_retries: 0,
            ..ClientOptions::default()
        },
    );
    let mut errors = Vec::new();
    for _ in 0..4 {
        match client.stream(hello()).await {
            Ok(_) => return Err("an HTTP error status must fail the call".into()),
            Err(err) => errors.push(err),
        }
    }
    assert_eq!(
        errors,
        vec![
            ModelError::Upstream {
                status: 400,
                message: "messages.1.content.0.tool_result: unexpected `tool_use_id`".into()
            },
            ModelError::Upstream {
                status: 401,
                message: "invalid x-api-key [redacted]".into()
            },
            ModelError::Upstream {
                status: 429,
                message: "This request would exceed the rate limit for your organization".into()
            },
            ModelError::Upstream {
                status: 529,
                message: "Overloaded".into()
            },
        ]
    );
    for err in &errors {
        let text = format!("{err} {err:?}");
        assert!(!text.contains(KEY), "{text}");
    }
    Ok(())
}

#[tokio::test]
async fn a_mid_stream_error_event_is_an_err_item() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Reply::Sse(steps(&[
        message_start(10, 0, 0),
        text_start(0),
        text_delta(0, "Partial"),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ])));
    let events = collect(client(&upstream).stream(hello()).await?).await;
    assert_eq!(
        events,
        vec![
            Ok(ModelEvent::TextDelta("Partial".into())),
            Err(ModelError::Upstream {
                status: 529,
                message: "Overloaded (reported mid-stream)".into()
            }),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn a_mid_stream_disconnect_is_a_transport_error() -> TestResult {
    let upstream = Upstream::start().await;
    let mut script = steps(&[
        message_start(10, 0, 0),
        text_start(0),
        text_delta(0, "Half"),
    ]);
    // Half an event, then the socket closes without the final chunk.
    script.push(Step::Send(
        b"event: content_block_delta\ndata: {\"type\":\"con".to_vec(),
    ));
    script.push(Step::Cut);
    upstream.push(Reply::Sse(script));
    let events = collect(client(&upstream).stream(hello()).await?).await;
    assert_eq!(events[0], Ok(ModelEvent::TextDelta("Half".into())));
    match &events[1] {
        Err(ModelError::Transport(message)) => {
            // reqwest saw the chunked body end without its last chunk.
            assert!(
                message.starts_with("the response body broke off"),
                "{message}"
            );
            assert!(!message.contains(KEY), "{message}");
            assert!(!message.contains("127.0.0.1"), "{message}");
        }
        other => return Err(format!("expected Transport, got {other:?}").into()),
    }
    assert_eq!(events.len(), 2, "{events:?}");
    Ok(())
}

#[tokio::test]
async fn a_cleanly_closed_stream_before_the_stop_is_a_transport_error() -> TestResult {
    let upstream = Upstream::start().await;
    // The body ends properly (last chunk sent) but the turn never did.
    upstream.push(Reply::Sse(steps(&[
        message_start(10, 0, 0),
        text_start(0),
        text_delta(0, "Cut"),
    ])));
    let events = collect(client(&upstream).stream(hello()).await?).await;
    assert_eq!(events[0], Ok(ModelEvent::TextDelta("Cut".into())));
    assert!(
        matches!(events[1], Err(ModelError::Transport(_))),
        "{events:?}"
    );
    assert_eq!(events.len(), 2);
    Ok(())
}

#[tokio::test]
async fn silence_mid_stream_times_out() -> TestResult {
    let upstream = Upstream::start().await;
    let mut script = steps(&[
        message_start(10, 0, 0),
        text_start(0),
        text_delta(0, "Wait"),
    ]);
    script.push(Step::Hang);
    upstream.push(Reply::Sse(script));
    let options = ClientOptions {
        connect_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_millis(500),
        ..ClientOptions::default()
    };
    let events = collect(client_with(&upstream, options).stream(hello()).await?).await;
    assert_eq!(
        events,
        vec![
            Ok(ModelEvent::TextDelta("Wait".into())),
            Err(ModelError::Timeout)
        ]
    );
    Ok(())
}

#[tokio::test]
async fn a_non_streamed_message_is_adapted() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Reply::Json(
        200,
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Hi there."}],
            "stop_reason": "max_tokens", "stop_sequence": null,
            "usage": {"input_tokens": 5, "output_tokens": 3}
        })
        .to_string(),
    ));
    let events = collect(client(&upstream).stream(hello()).await?).await;
    assert_eq!(
        events,
        vec![
            Ok(ModelEvent::TextDelta("Hi there.".into())),
            Ok(ModelEvent::Usage(TokenUsage {
                input_tokens: 5,
                output_tokens: 3,
                ..TokenUsage::default()
            })),
            Ok(ModelEvent::Finish(FinishReason::Length)),
        ]
    );
    Ok(())
}
