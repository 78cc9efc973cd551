//! The Gemini adapter against a hand-written HTTP/1.1 server on 127.0.0.1 that replays SSE in
//! Gemini's documented format (each event one whole `GenerateContentResponse`, no end marker) and
//! records every request.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a poisoned lock or a broken test socket should fail the test loudly"
)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentd_providers::{ClientOptions, GeminiClient, ProviderConfig, ProvidersError, WireApi};
use engine::model::{
    ContentPart, FinishReason, JsonSchemaFormat, ModelClient, ModelError, ModelEvent, ModelMessage,
    ModelRequest, ModelStream, ModelToolChoice, OutputFormat, TokenUsage, ToolCall, ToolSpec,
};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const KEY: &str = "AIzaSy-secret-test-key";

// ---------------------------------------------------------------------------------------------
// The scripted upstream

/// What the upstream answers to one request.
enum Script {
    /// `200 text/event-stream`: each payload as one `data:` event, then the body's end.
    Sse(Vec<String>),
    /// The first payloads, then a wait for the test's go-ahead, then the rest.
    Gated(Vec<String>, Arc<Notify>, Vec<String>),
    /// The payloads, then the connection dropped mid-body (no final chunk).
    SseThenDrop(Vec<String>),
    /// The payloads, then silence with the connection open.
    SseThenHang(Vec<String>),
    /// An error status with a JSON body.
    Error(u16, String),
    /// `200 application/json` with this body.
    Json(String),
}

struct Recorded {
    /// The request target: path and query.
    target: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Recorded {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

#[derive(Clone)]
struct Upstream {
    base_url: String,
    scripts: Arc<Mutex<VecDeque<Script>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Upstream {
    async fn start() -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream = Upstream {
            base_url: format!("http://{}", listener.local_addr().unwrap()),
            scripts: Arc::default(),
            requests: Arc::default(),
        };
        let server = upstream.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let server = server.clone();
                tokio::spawn(async move { server.serve(socket).await });
            }
        });
        upstream
    }

    fn push(&self, script: Script) {
        self.scripts.lock().unwrap().push_back(script);
    }

    fn requests(&self) -> std::sync::MutexGuard<'_, Vec<Recorded>> {
        self.requests.lock().unwrap()
    }

    /// One request per connection (`Connection: close`).
    async fn serve(&self, mut socket: TcpStream) {
        let Some(recorded) = read_request(&mut socket).await else {
            return;
        };
        self.requests.lock().unwrap().push(recorded);
        let script = self.scripts.lock().unwrap().pop_front();
        let script = script.unwrap_or_else(|| {
            Script::Error(
                500,
                r#"{"error":{"message":"no scripted reply"}}"#.to_owned(),
            )
        });
        let _ = respond(&mut socket, script).await;
    }
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buffer = Vec::new();
    let head_end = loop {
        let mut chunk = [0_u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let target = lines.next()?.split(' ').nth(1)?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end..].to_vec();
    while body.len() < length {
        let mut chunk = [0_u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Recorded {
        target,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

async fn respond(socket: &mut TcpStream, script: Script) -> std::io::Result<()> {
    const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    match script {
        Script::Sse(payloads) => {
            socket.write_all(SSE_HEAD.as_bytes()).await?;
            send_events(socket, &payloads).await?;
            socket.write_all(b"0\r\n\r\n").await?;
        }
        Script::Gated(first, gate, rest) => {
            socket.write_all(SSE_HEAD.as_bytes()).await?;
            send_events(socket, &first).await?;
            gate.notified().await;
            send_events(socket, &rest).await?;
            socket.write_all(b"0\r\n\r\n").await?;
        }
        Script::SseThenDrop(payloads) => {
            socket.write_all(SSE_HEAD.as_bytes()).await?;
            send_events(socket, &payloads).await?;
            // Give the client time to read the events, then vanish without the final chunk.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Script::SseThenHang(payloads) => {
            socket.write_all(SSE_HEAD.as_bytes()).await?;
            send_events(socket, &payloads).await?;
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
        Script::Error(status, body) => {
            let head = format!(
                "HTTP/1.1 {status} Error\r\nContent-Type: application/json; charset=UTF-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body.as_bytes()).await?;
        }
        Script::Json(body) => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=UTF-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(body.as_bytes()).await?;
        }
    }
    socket.flush().await
}

/// Each payload as its own HTTP chunk holding one SSE event (`\r\n\r\n`-separated, as Google
/// sends them).
async fn send_events(socket: &mut TcpStream, payloads: &[String]) -> std::io::Result<()> {
    for payload in payloads {
        let event = format!("data: {payload}\r\n\r\n");
        let chunk = format!("{:x}\r\n{event}\r\n", event.len());
        socket.write_all(chunk.as_bytes()).await?;
        socket.flush().await?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Gemini-shaped payloads

fn text_chunk(text: &str) -> String {
    json!({
        "candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}],
        "usageMetadata": {"promptTokenCount": 11, "totalTokenCount": 11},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-1"
    })
    .to_string()
}

fn last_chunk(text: &str, finish: &str) -> String {
    json!({
        "candidates": [{
            "content": {"parts": [{"text": text}], "role": "model"},
            "finishReason": finish,
            "index": 0
        }],
        "usageMetadata": {
            "promptTokenCount": 11,
            "candidatesTokenCount": 4,
            "cachedContentTokenCount": 3,
            "thoughtsTokenCount": 20,
            "totalTokenCount": 35,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 11}]
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-1"
    })
    .to_string()
}

/// One chunk with these `(name, args, thoughtSignature)` calls, finishing with STOP.
fn calls_chunk(calls: &[(&str, Value, Option<&str>)]) -> String {
    let parts: Vec<Value> = calls
        .iter()
        .map(|(name, args, signature)| {
            let mut part = json!({"functionCall": {"name": name, "args": args}});
            if let Some(signature) = signature {
                part["thoughtSignature"] = json!(signature);
            }
            part
        })
        .collect();
    json!({
        "candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 12, "totalTokenCount": 62}
    })
    .to_string()
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn client_with(
    base_url: &str,
    key: Option<&str>,
    options: ClientOptions,
) -> Result<GeminiClient, ProvidersError> {
    GeminiClient::new(
        &ProviderConfig {
            name: "google".into(),
            api: WireApi::Gemini,
            base_url: base_url.into(),
            api_key: key.map(str::to_owned),
            models: vec![],
        },
        &options,
    )
}

fn client(upstream: &Upstream) -> Result<GeminiClient, ProvidersError> {
    client_with(&upstream.base_url, Some(KEY), ClientOptions::default())
}

fn quick_timeouts() -> ClientOptions {
    ClientOptions {
        connect_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_millis(500),
        ..ClientOptions::default()
    }
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

async fn collect(stream: ModelStream) -> Vec<Result<ModelEvent, ModelError>> {
    stream.collect().await
}

/// The tool calls of a turn as the engine would assemble them (Gemini sends each whole).
fn calls_of(events: &[Result<ModelEvent, ModelError>]) -> Vec<ToolCall> {
    let mut calls: Vec<ToolCall> = Vec::new();
    for event in events {
        if let Ok(ModelEvent::ToolCallDelta {
            index,
            id,
            name,
            arguments,
            thought_signature,
        }) = event
        {
            assert_eq!(*index, calls.len(), "one delta per call, in order");
            calls.push(ToolCall {
                id: id.clone().unwrap_or_default(),
                name: name.clone().unwrap_or_default(),
                arguments: arguments.clone(),
                thought_signature: thought_signature.clone(),
            });
        }
    }
    calls
}

// ---------------------------------------------------------------------------------------------
// Tests

#[tokio::test]
async fn text_deltas_arrive_before_the_stream_ends_then_usage_then_finish() -> TestResult {
    let upstream = Upstream::start().await;
    let gate = Arc::new(Notify::new());
    upstream.push(Script::Gated(
        vec![text_chunk("Hel")],
        gate.clone(),
        vec![text_chunk("lo"), last_chunk(" world", "STOP")],
    ));
    let mut stream = client(&upstream)?.stream(hello("gemini-2.5-flash")).await?;
    // The upstream holds the rest back until this first delta has been seen.
    let first = tokio::time::timeout(Duration::from_secs(5), stream.next()).await?;
    assert_eq!(first, Some(Ok(ModelEvent::TextDelta("Hel".into()))));
    gate.notify_one();
    let rest = collect(stream).await;
    assert_eq!(
        rest,
        vec![
            Ok(ModelEvent::TextDelta("lo".into())),
            Ok(ModelEvent::TextDelta(" world".into())),
            Ok(ModelEvent::Usage(TokenUsage {
                input_tokens: 11,
                output_tokens: 24,
                cached_input_tokens: 3,
                reasoning_tokens: 20,
                cache_write_tokens: 0,
            })),
            Ok(ModelEvent::Finish(FinishReason::Stop)),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn the_request_goes_to_the_stream_path_with_the_key_in_the_header() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Script::Sse(vec![last_chunk("ok", "STOP")]));
    collect(client(&upstream)?.stream(hello("gemini-2.5-flash")).await?).await;
    let requests = upstream.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        request.target,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert!(!request.target.contains(KEY));
    assert_eq!(request.header("x-goog-api-key"), Some(KEY));
    assert_eq!(request.header("authorization"), None);
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(
        request.body,
        json!({"contents": [{"role": "user", "parts": [{"text": "Hello"}]}]})
    );
    Ok(())
}

#[tokio::test]
async fn a_keyless_gateway_gets_no_key_header() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Script::Sse(vec![last_chunk("ok", "STOP")]));
    let keyless = client_with(&upstream.base_url, None, ClientOptions::default())?;
    collect(keyless.stream(hello("m")).await?).await;
    assert_eq!(upstream.requests()[0].header("x-goog-api-key"), None);
    Ok(())
}

#[tokio::test]
async fn a_call_with_its_signature_round_trips_into_the_continuation() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Script::Sse(vec![calls_chunk(&[(
        "get_order_status",
        json!({"order_id": "ORD-10042"}),
        Some("CiQBcsjafAbc+/Signature=="),
    )])]));
    upstream.push(Script::Sse(vec![last_chunk("It shipped.", "STOP")]));
    let client = client(&upstream)?;
    let tools = vec![ToolSpec {
        name: "get_order_status".into(),
        description: Some("Look up an order".into()),
        parameters: json!({"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}).into(),
        strict: false,
    }];
    let mut request = ModelRequest {
        tools: tools.clone(),
        ..hello("gemini-3-pro-preview")
    };

    let events = collect(client.stream(request.clone()).await?).await;
    let calls = calls_of(&events);
    assert_eq!(calls.len(), 1);
    assert!(calls[0].id.starts_with("call_"), "{:?}", calls[0]);
    assert_eq!(calls[0].name, "get_order_status");
    assert_eq!(calls[0].arguments, r#"{"order_id":"ORD-10042"}"#);
    assert_eq!(
        calls[0].thought_signature.as_deref(),
        Some("CiQBcsjafAbc+/Signature==")
    );
    assert_eq!(
        events[events.len() - 2],
        Ok(ModelEvent::Usage(TokenUsage {
            input_tokens: 50,
            output_tokens: 12,
            ..TokenUsage::default()
        }))
    );
    assert_eq!(
        events.last(),
        Some(&Ok(ModelEvent::Finish(FinishReason::ToolCalls)))
    );

    // The engine's next turn: the call, then its result.
    request.messages.push(ModelMessage::Assistant {
        content: None,
        tool_calls: calls.clone(),
    });
    request.messages.push(ModelMessage::Tool {
        call_id: calls[0].id.clone(),
        name: Some("get_order_status".into()),
        content: r#"{"status":"shipped"}"#.into(),
    });
    let events = collect(client.stream(request).await?).await;
    assert_eq!(
        events.last(),
        Some(&Ok(ModelEvent::Finish(FinishReason::Stop)))
    );

    let requests = upstream.requests();
    assert_eq!(
        requests[1].body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Hello"}]},
            {"role": "model", "parts": [{
                "functionCall": {"name": "get_order_status", "args": {"order_id": "ORD-10042"}},
                "thoughtSignature": "CiQBcsjafAbc+/Signature=="
            }]},
            {"role": "user", "parts": [{
                "functionResponse": {"name": "get_order_status", "response": {"result": {"status": "shipped"}}}
            }]}
        ])
    );
    assert_eq!(
        requests[1].body["tools"],
        json!([{"functionDeclarations": [{
            "name": "get_order_status",
            "description": "Look up an order",
            "parametersJsonSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
        }]}])
    );
    Ok(())
}

#[tokio::test]
async fn parallel_calls_get_distinct_ids_and_keep_their_own_signatures() -> TestResult {
    let upstream = Upstream::start().await;
    let chunk = calls_chunk(&[
        ("get_weather", json!({"city": "Paris"}), Some("sig-first")),
        ("get_weather", json!({"city": "Tokyo"}), None),
        ("get_time", json!({}), None),
    ]);
    upstream.push(Script::Sse(vec![chunk.clone()]));
    upstream.push(Script::Sse(vec![chunk]));
    let client = client(&upstream)?;

    let first = calls_of(&collect(client.stream(hello("gemini-3-flash-preview")).await?).await);
    let second = calls_of(&collect(client.stream(hello("gemini-3-flash-preview")).await?).await);
    let summary: Vec<_> = first
        .iter()
        .map(|call| {
            (
                call.name.as_str(),
                call.arguments.as_str(),
                call.thought_signature.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("get_weather", r#"{"city":"Paris"}"#, Some("sig-first")),
            ("get_weather", r#"{"city":"Tokyo"}"#, None),
            ("get_time", "{}", None),
        ]
    );
    // Ids correlate results across a whole conversation: unique across turns, not just within one.
    let mut ids: Vec<&str> = first.iter().chain(&second).map(|c| c.id.as_str()).collect();
    assert!(ids.iter().all(|id| id.starts_with("call_")), "{ids:?}");
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 6);
    Ok(())
}

#[tokio::test]
async fn several_calls_replayed_keep_order_and_results_travel_together() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Script::Sse(vec![last_chunk("Sunny and noon.", "STOP")]));
    let request = ModelRequest {
        messages: vec![
            ModelMessage::User {
                content: vec![ContentPart::Text {
                    text: "Weather and time?".into(),
                }],
            },
            ModelMessage::Assistant {
                content: None,
                tool_calls: vec![
                    ToolCall {
                        id: "call_7".into(),
                        name: "get_weather".into(),
                        arguments: r#"{"city":"Paris"}"#.into(),
                        thought_signature: Some("sig-a".into()),
                    },
                    ToolCall {
                        id: "call_8".into(),
                        name: "get_time".into(),
                        arguments: "{}".into(),
                        thought_signature: None,
                    },
                ],
            },
            ModelMessage::Tool {
                call_id: "call_7".into(),
                name: Some("get_weather".into()),
                content: "sunny".into(),
            },
            ModelMessage::Tool {
                call_id: "call_8".into(),
                name: Some("get_time".into()),
                content: "12:00".into(),
            },
        ],
        ..hello("gemini-3-pro-preview")
    };
    collect(client(&upstream)?.stream(request).await?).await;
    assert_eq!(
        upstream.requests()[0].body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Weather and time?"}]},
            {"role": "model", "parts": [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "sig-a"},
                {"functionCall": {"name": "get_time", "args": {}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"result": "sunny"}}},
                {"functionResponse": {"name": "get_time", "response": {"result": "12:00"}}}
            ]}
        ])
    );
    Ok(())
}

#[tokio::test]
async fn tricky_arguments_come_through_exactly() -> TestResult {
    let upstream = Upstream::start().await;
    // Written by hand so the raw text (key order, escapes, spacing) is what Gemini would send.
    let args = r#"{"query": "He said \"hi\" \\ then\nleft — ünïcödé 😀 \u00e9", "filters": {"z": [1, 2.5e3, -0.0, null, true], "a": {}}, "empty": ""}"#;
    let chunk = format!(
        r#"{{"candidates": [{{"content": {{"parts": [{{"functionCall": {{"name": "search", "args": {args}}}, "thoughtSignature": "s"}}], "role": "model"}}, "finishReason": "STOP", "index": 0}}]}}"#
    );
    upstream.push(Script::Sse(vec![chunk]));
    let events = collect(client(&upstream)?.stream(hello("m")).await?).await;
    let calls = calls_of(&events);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].arguments, args);
    let parsed: Value = serde_json::from_str(&calls[0].arguments)?;
    assert_eq!(
        parsed["query"],
        "He said \"hi\" \\ then\nleft — ünïcödé 😀 é"
    );
    Ok(())
}

#[tokio::test]
async fn structured_output_and_generation_settings_are_mapped() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Script::Sse(vec![last_chunk(r#"{"status":"ok"}"#, "STOP")]));
    let schema = json!({
        "type": "object",
        "properties": {"status": {"type": "string", "enum": ["ok", "late"]}},
        "required": ["status"],
        "additionalProperties": false
    });
    let request = ModelRequest {
        messages: vec![
            ModelMessage::System {
                content: "You are terse.".into(),
            },
            ModelMessage::User {
                content: vec![
                    ContentPart::Text {
                        text: "Status of this?".into(),
                    },
                    ContentPart::ImageUrl {
                        url: "data:image/png;base64,iVBORw0KGgo=".into(),
                        detail: None,
                    },
                    ContentPart::ImageUrl {
                        url: "https://example.com/receipt.webp".into(),
                        detail: None,
                    },
                ],
            },
        ],
        tools: vec![ToolSpec {
            name: "lookup".into(),
            description: None,
            parameters: json!({"type": "object"}).into(),
            strict: true,
        }],
        tool_choice: ModelToolChoice::Function("lookup".into()),
        parallel_tool_calls: Some(false),
        temperature: Some(0.2),
        top_p: Some(0.95),
        max_output_tokens: Some(256),
        output_format: Some(OutputFormat::JsonSchema(JsonSchemaFormat {
            name: "status".into(),
            schema: schema.clone(),
            description: None,
            strict: Some(true),
        })),
        reasoning_effort: Some("low".into()),
        prompt_cache_key: Some("conv-7".into()),
        ..hello("gemini-2.5-flash")
    };
    let events = collect(client(&upstream)?.stream(request).await?).await;
    assert_eq!(
        events[0],
        Ok(ModelEvent::TextDelta(r#"{"status":"ok"}"#.into()))
    );
    assert_eq!(
        upstream.requests()[0].body,
        json!({
            "systemInstruction": {"parts": [{"text": "You are terse."}]},
            "contents": [{"role": "user", "parts": [
                {"text": "Status of this?"},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                {"fileData": {"mimeType": "image/webp", "fileUri": "https://example.com/receipt.webp"}}
            ]}],
            "tools": [{"functionDeclarations": [{"name": "lookup", "parametersJsonSchema": {"type": "object"}}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["lookup"]}},
            "generationConfig": {
                "temperature": 0.2,
                "topP": 0.95,
                "maxOutputTokens": 256,
                "responseMimeType": "application/json",
                "responseJsonSchema": schema,
                "thinkingConfig": {"thinkingBudget": 1024}
            }
        })
    );
    Ok(())
}

#[tokio::test]
async fn http_errors_carry_status_and_google_status_but_never_the_key() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Script::Error(
        400,
        json!({"error": {"code": 400, "message": "* GenerateContentRequest.contents: contents is not specified\n", "status": "INVALID_ARGUMENT"}}).to_string(),
    ));
    upstream.push(Script::Error(
        403,
        json!({"error": {"code": 403, "message": format!("Method doesn't allow unregistered callers. API key {KEY} is not valid."), "status": "PERMISSION_DENIED"}}).to_string(),
    ));
    upstream.push(Script::Error(
        429,
        json!({"error": {
            "code": 429,
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "23s"}]
        }})
        .to_string(),
    ));
    upstream.push(Script::Error(
        503,
        "upstream connect error or disconnect/reset before headers".to_owned(),
    ));
    // Retries are the conformance suite's subject; here each status is seen once.
    let client = client_with(
        &upstream.base_url,
        Some(KEY),
        ClientOptions {
            max_retries: 0,
            ..ClientOptions::default()
        },
    )?;
    let mut errors = Vec::new();
    for _ in 0..4 {
        match client.stream(hello("gemini-2.5-pro")).await {
            Ok(_) => return Err("an HTTP error status must fail the call".into()),
            Err(err) => errors.push(err),
        }
    }
    assert_eq!(
        errors,
        vec![
            ModelError::Upstream {
                status: 400,
                message: "INVALID_ARGUMENT: * GenerateContentRequest.contents: contents is not specified".into()
            },
            ModelError::Upstream {
                status: 403,
                message: "PERMISSION_DENIED: Method doesn't allow unregistered callers. API key [redacted] is not valid.".into()
            },
            ModelError::Upstream {
                status: 429,
                message: "RESOURCE_EXHAUSTED: You exceeded your current quota, please check your plan and billing details.".into()
            },
            ModelError::Upstream {
                status: 503,
                message: "upstream connect error or disconnect/reset before headers".into()
            },
        ]
    );
    for err in &errors {
        let text = err.to_string();
        assert!(!text.contains(KEY), "{text}");
    }
    Ok(())
}

#[tokio::test]
async fn an_error_inside_the_stream_keeps_its_code() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Script::Sse(vec![
        text_chunk("Par"),
        json!({"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}).to_string(),
    ]));
    let events = collect(client(&upstream)?.stream(hello("m")).await?).await;
    assert_eq!(
        events,
        vec![
            Ok(ModelEvent::TextDelta("Par".into())),
            Err(ModelError::Upstream {
                status: 503,
                message: "UNAVAILABLE: The model is overloaded. Please try again later.".into()
            }),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn a_mid_stream_disconnect_is_a_transport_error_after_the_deltas() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Script::SseThenDrop(vec![
        text_chunk("The answer"),
        text_chunk(" is"),
    ]));
    let events = collect(client(&upstream)?.stream(hello("m")).await?).await;
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[0], Ok(ModelEvent::TextDelta("The answer".into())));
    assert_eq!(events[1], Ok(ModelEvent::TextDelta(" is".into())));
    match &events[2] {
        Err(ModelError::Transport(message)) => {
            assert!(!message.contains(KEY), "{message}");
            assert!(!message.contains("127.0.0.1"), "no URL: {message}");
        }
        other => return Err(format!("expected Transport, got {other:?}").into()),
    }
    Ok(())
}

#[tokio::test]
async fn a_body_that_ends_without_a_finish_reason_is_a_protocol_error() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Script::Sse(vec![text_chunk("partial")]));
    let events = collect(client(&upstream)?.stream(hello("m")).await?).await;
    assert_eq!(events[0], Ok(ModelEvent::TextDelta("partial".into())));
    assert!(
        matches!(events[1], Err(ModelError::Protocol(_))),
        "{events:?}"
    );
    assert_eq!(events.len(), 2);
    Ok(())
}

#[tokio::test]
async fn silence_mid_stream_times_out() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Script::SseThenHang(vec![text_chunk("Hel")]));
    let client = client_with(&upstream.base_url, Some(KEY), quick_timeouts())?;
    let mut stream = client.stream(hello("m")).await?;
    assert_eq!(
        stream.next().await,
        Some(Ok(ModelEvent::TextDelta("Hel".into())))
    );
    assert_eq!(stream.next().await, Some(Err(ModelError::Timeout)));
    assert_eq!(stream.next().await, None);
    Ok(())
}

#[tokio::test]
async fn a_json_answer_instead_of_sse_is_adapted() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Script::Json(format!(
        "[{},{}]",
        text_chunk("Hi"),
        last_chunk(" there", "MAX_TOKENS")
    )));
    let events = collect(client(&upstream)?.stream(hello("m")).await?).await;
    assert_eq!(events[0], Ok(ModelEvent::TextDelta("Hi".into())));
    assert_eq!(events[1], Ok(ModelEvent::TextDelta(" there".into())));
    assert!(matches!(events[2], Ok(ModelEvent::Usage(_))));
    assert_eq!(events[3], Ok(ModelEvent::Finish(FinishReason::Length)));
    Ok(())
}

#[tokio::test]
async fn an_unreachable_port_is_a_transport_error_without_the_key() -> TestResult {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    drop(listener);
    let client = client_with(
        &format!("http://127.0.0.1:{port}"),
        Some(KEY),
        ClientOptions::default(),
    )?;
    match client.stream(hello("m")).await {
        Err(ModelError::Transport(message)) => {
            assert!(message.starts_with("could not connect"), "{message}");
            assert!(!message.contains(KEY), "{message}");
        }
        Err(other) => return Err(format!("expected Transport, got {other:?}").into()),
        Ok(_) => return Err("expected Transport, got a stream".into()),
    }
    Ok(())
}

#[tokio::test]
async fn a_quota_error_waits_the_retry_delay_google_puts_in_the_body() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Script::Error(
        429,
        json!({"error": {"code": 429, "message": "Resource has been exhausted.",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]}})
        .to_string(),
    ));
    upstream.push(Script::Sse(vec![last_chunk("ok", "STOP")]));
    // A base back-off far below the asked delay: the wait below can only be the body's.
    let client = client_with(
        &upstream.base_url,
        Some(KEY),
        ClientOptions {
            retry_base_delay: Duration::from_millis(1),
            ..ClientOptions::default()
        },
    )?;
    let started = std::time::Instant::now();
    let events = collect(client.stream(hello("gemini-2.5-flash")).await?).await;
    assert!(started.elapsed() >= Duration::from_millis(950));
    assert_eq!(upstream.requests().len(), 2);
    assert_eq!(
        events.last(),
        Some(&Ok(ModelEvent::Finish(FinishReason::Stop)))
    );
    Ok(())
}
