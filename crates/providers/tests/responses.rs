//! The Responses adapter against a hand-written HTTP/1.1 upstream on 127.0.0.1 that replays SSE
//! in OpenAI's documented format, over a real socket.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a broken test upstream should fail the test loudly"
)]

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentd_providers::{ClientOptions, ProviderConfig, ProvidersError, ResponsesClient, WireApi};
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

const KEY: &str = "sk-secret-test";

// ---------------------------------------------------------------------------------------------
// The scripted upstream

/// One piece of a scripted SSE body.
enum Piece {
    /// One SSE event (`event:` is taken from the JSON's `type`).
    Event(Value),
    /// Send nothing more until the test notifies.
    Wait(Arc<Notify>),
}

/// How a scripted SSE body ends.
enum End {
    /// The final zero-length chunk: a clean end of the body.
    Close,
    /// Drop the connection without ending the chunked body.
    Cut,
    /// Keep the connection open and send nothing more.
    Hang,
}

enum Reply {
    Sse(Vec<Piece>, End),
    /// A status with a JSON (or any) body.
    Status(u16, String),
    /// A 200 `application/json` body (a server that does not stream).
    Json(Value),
}

impl Reply {
    fn sse(events: impl IntoIterator<Item = Value>) -> Reply {
        Reply::Sse(events.into_iter().map(Piece::Event).collect(), End::Close)
    }
}

/// One request as the upstream received it.
struct Seen {
    request_line: String,
    headers: HashMap<String, String>,
    body: Value,
}

#[derive(Clone)]
struct Upstream {
    addr: SocketAddr,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Upstream {
    async fn start() -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream = Upstream {
            addr: listener.local_addr().unwrap(),
            replies: Arc::default(),
            seen: Arc::default(),
        };
        let server = upstream.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(server.clone().serve(socket));
            }
        });
        upstream
    }

    fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    fn push(&self, reply: Reply) {
        self.replies.lock().unwrap().push_back(reply);
    }

    fn bodies(&self) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|seen| seen.body.clone())
            .collect()
    }

    /// Serves requests on one (keep-alive) connection until it closes or a reply ends it.
    async fn serve(self, mut socket: TcpStream) {
        let mut buffer = Vec::new();
        loop {
            let Some(seen) = read_request(&mut socket, &mut buffer).await else {
                return;
            };
            self.seen.lock().unwrap().push(seen);
            let reply = self.replies.lock().unwrap().pop_front();
            let reply = reply.unwrap_or_else(|| {
                Reply::Status(500, r#"{"error":{"message":"no script"}}"#.into())
            });
            if !write_reply(&mut socket, reply).await {
                return;
            }
        }
    }
}

/// Reads one request (head and `content-length` body); `None` when the peer closed.
async fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Seen> {
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            break at;
        }
        let mut chunk = [0u8; 8192];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buffer[..head_end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .map_or(0, |value| value.parse().unwrap());
    let body_start = head_end + 4;
    while buffer.len() < body_start + length {
        let mut chunk = [0u8; 8192];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buffer[body_start..body_start + length]).unwrap();
    buffer.drain(..body_start + length);
    Some(Seen {
        request_line,
        headers,
        body,
    })
}

/// Writes one reply; `false` when the connection must not be used again.
async fn write_reply(socket: &mut TcpStream, reply: Reply) -> bool {
    match reply {
        Reply::Status(status, body) => {
            let head = format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await.is_ok()
                && socket.write_all(body.as_bytes()).await.is_ok()
        }
        Reply::Json(value) => {
            let body = value.to_string();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await.is_ok()
                && socket.write_all(body.as_bytes()).await.is_ok()
        }
        Reply::Sse(pieces, end) => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
            if socket.write_all(head.as_bytes()).await.is_err() {
                return false;
            }
            for piece in pieces {
                match piece {
                    Piece::Event(event) => {
                        let kind = event["type"].as_str().unwrap_or_default().to_owned();
                        let frame = format!("event: {kind}\ndata: {event}\n\n");
                        let chunk = format!("{:x}\r\n{frame}\r\n", frame.len());
                        if socket.write_all(chunk.as_bytes()).await.is_err() {
                            return false;
                        }
                        let _ = socket.flush().await;
                    }
                    Piece::Wait(gate) => gate.notified().await,
                }
            }
            match end {
                End::Close => socket.write_all(b"0\r\n\r\n").await.is_ok(),
                End::Cut => false,
                End::Hang => {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    false
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Events in OpenAI's documented shapes

fn created() -> Value {
    json!({"type": "response.created", "sequence_number": 0, "response": {
        "id": "resp_1", "object": "response", "status": "in_progress", "output": [], "usage": null
    }})
}

fn reasoning_item(output_index: usize) -> [Value; 2] {
    let item = json!({"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": null});
    [
        json!({"type": "response.output_item.added", "output_index": output_index, "item": item}),
        json!({"type": "response.output_item.done", "output_index": output_index, "item": item}),
    ]
}

fn message_added(output_index: usize) -> Value {
    json!({"type": "response.output_item.added", "output_index": output_index, "item": {
        "id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []
    }})
}

fn text_delta(output_index: usize, delta: &str) -> Value {
    json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": output_index,
        "content_index": 0, "delta": delta, "logprobs": []})
}

fn message_done(output_index: usize, text: &str) -> [Value; 2] {
    [
        json!({"type": "response.output_text.done", "item_id": "msg_1", "output_index": output_index,
            "content_index": 0, "text": text, "logprobs": []}),
        json!({"type": "response.output_item.done", "output_index": output_index, "item": {
            "id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]
        }}),
    ]
}

fn call_added(output_index: usize, call_id: &str, name: &str) -> Value {
    json!({"type": "response.output_item.added", "output_index": output_index, "item": {
        "id": format!("fc_{call_id}"), "type": "function_call", "status": "in_progress",
        "call_id": call_id, "name": name, "arguments": ""
    }})
}

fn arguments_delta(output_index: usize, call_id: &str, delta: &str) -> Value {
    json!({"type": "response.function_call_arguments.delta", "item_id": format!("fc_{call_id}"),
        "output_index": output_index, "delta": delta})
}

fn call_done(output_index: usize, call_id: &str, name: &str, arguments: &str) -> [Value; 2] {
    [
        json!({"type": "response.function_call_arguments.done", "item_id": format!("fc_{call_id}"),
            "output_index": output_index, "arguments": arguments}),
        json!({"type": "response.output_item.done", "output_index": output_index, "item": {
            "id": format!("fc_{call_id}"), "type": "function_call", "status": "completed",
            "call_id": call_id, "name": name, "arguments": arguments
        }}),
    ]
}

fn usage(input: u64, cached: u64, output: u64, reasoning: u64) -> Value {
    json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output, "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input + output})
}

fn completed(usage: Value) -> Value {
    json!({"type": "response.completed", "response": {
        "id": "resp_1", "object": "response", "status": "completed", "output": [], "usage": usage
    }})
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn client_for(base_url: &str, options: ClientOptions) -> Result<ResponsesClient, ProvidersError> {
    ResponsesClient::new(
        &ProviderConfig {
            name: "openai".into(),
            api: WireApi::Responses,
            base_url: base_url.into(),
            api_key: Some(KEY.into()),
            models: vec![],
        },
        &options,
    )
}

fn client(upstream: &Upstream) -> Result<ResponsesClient, ProvidersError> {
    client_for(&upstream.base_url(), ClientOptions::default())
}

fn hello() -> ModelRequest {
    ModelRequest {
        model: "gpt-5.4".into(),
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

/// The next event, or a failure after 5 s (so a test that waits for a delta cannot hang).
async fn next(stream: &mut ModelStream) -> Option<Result<ModelEvent, ModelError>> {
    tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("the event came in time")
}

/// index -> (id, name, arguments, argument pieces)
fn assemble(
    events: &[Result<ModelEvent, ModelError>],
) -> BTreeMap<usize, (String, String, String, usize)> {
    let mut calls: BTreeMap<usize, (String, String, String, usize)> = BTreeMap::new();
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
            if !arguments.is_empty() {
                call.2.push_str(arguments);
                call.3 += 1;
            }
        }
    }
    calls
}

/// `text` cut into pieces of `size` characters.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size)
        .map(|chunk| chunk.iter().collect())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Tests

#[tokio::test]
async fn text_deltas_arrive_before_the_stream_ends_then_usage_then_finish() -> TestResult {
    let upstream = Upstream::start().await;
    let gate = Arc::new(Notify::new());
    let mut script = vec![
        Piece::Event(created()),
        Piece::Event(message_added(1)),
        Piece::Event(text_delta(1, "Hel")),
        Piece::Wait(gate.clone()),
        Piece::Event(text_delta(1, "lo")),
    ];
    let mut rest: Vec<Value> = reasoning_item(0).into();
    rest.extend(message_done(1, "Hello"));
    rest.push(completed(usage(120, 100, 40, 32)));
    script.extend(rest.into_iter().map(Piece::Event));
    upstream.push(Reply::Sse(script, End::Close));

    let mut stream = client(&upstream)?.stream(hello()).await?;
    // The upstream is holding the rest back: this delta can only have been streamed.
    assert_eq!(
        next(&mut stream).await,
        Some(Ok(ModelEvent::TextDelta("Hel".into())))
    );
    gate.notify_one();
    assert_eq!(
        collect(stream).await,
        vec![
            Ok(ModelEvent::TextDelta("lo".into())),
            Ok(ModelEvent::Usage(TokenUsage {
                input_tokens: 120,
                output_tokens: 40,
                cached_input_tokens: 100,
                reasoning_tokens: 32,
                cache_write_tokens: 0,
            })),
            Ok(ModelEvent::Finish(FinishReason::Stop)),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn one_function_call_with_tricky_json_in_pieces() -> TestResult {
    let arguments = r#"{"q":"say \"hi\" {not a brace}","path":"C:\\dir\\n","emoji":"é😀","nested":{"list":[1,2.5e3,{"k":null}],"empty":""}}"#;
    // Three characters a piece: cuts land inside escapes, between `\` and `"`, and in strings.
    let chunks = pieces(arguments, 3);
    let mut events = vec![created(), call_added(0, "call_1", "search")];
    events.extend(
        chunks
            .iter()
            .map(|chunk| arguments_delta(0, "call_1", chunk)),
    );
    events.extend(call_done(0, "call_1", "search", arguments));
    events.push(completed(usage(10, 0, 5, 0)));
    let upstream = Upstream::start().await;
    upstream.push(Reply::sse(events));

    let events = collect(client(&upstream)?.stream(hello()).await?).await;
    let calls = assemble(&events);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[&0],
        (
            "call_1".to_owned(),
            "search".to_owned(),
            arguments.to_owned(),
            chunks.len()
        )
    );
    let parsed: Value = serde_json::from_str(&calls[&0].2)?;
    assert_eq!(parsed["q"], json!("say \"hi\" {not a brace}"));
    // The id and name come first, before any arguments.
    assert_eq!(
        events[0],
        Ok(ModelEvent::ToolCallDelta {
            index: 0,
            id: Some("call_1".into()),
            name: Some("search".into()),
            arguments: String::new(),
            thought_signature: None,
        })
    );
    assert_eq!(
        events.last(),
        Some(&Ok(ModelEvent::Finish(FinishReason::ToolCalls)))
    );
    Ok(())
}

#[tokio::test]
async fn parallel_function_calls_are_indexed_by_output_order() -> TestResult {
    let first = r#"{"order_id":"ORD-10042"}"#;
    let second = r#"{"city":"Paris","unit":"c"}"#;
    let mut events = vec![created()];
    events.extend(reasoning_item(0));
    events.push(call_added(1, "call_a", "get_order_status"));
    events.push(call_added(2, "call_b", "get_weather"));
    // Interleaved pieces of both calls.
    let (a, b) = (pieces(first, 5), pieces(second, 4));
    for i in 0..a.len().max(b.len()) {
        if let Some(piece) = a.get(i) {
            events.push(arguments_delta(1, "call_a", piece));
        }
        if let Some(piece) = b.get(i) {
            events.push(arguments_delta(2, "call_b", piece));
        }
    }
    events.extend(call_done(1, "call_a", "get_order_status", first));
    events.extend(call_done(2, "call_b", "get_weather", second));
    events.push(completed(usage(50, 0, 20, 0)));
    let upstream = Upstream::start().await;
    upstream.push(Reply::sse(events));

    let events = collect(client(&upstream)?.stream(hello()).await?).await;
    let calls = assemble(&events);
    let assembled: Vec<_> = calls
        .values()
        .map(|(id, name, arguments, _)| (id.as_str(), name.as_str(), arguments.as_str()))
        .collect();
    assert_eq!(
        assembled,
        vec![
            ("call_a", "get_order_status", first),
            ("call_b", "get_weather", second),
        ]
    );
    assert!(calls.values().all(|call| call.3 > 1), "{calls:?}");
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
async fn a_continuation_is_sent_as_instructions_and_input_items() -> TestResult {
    let upstream = Upstream::start().await;
    let mut events = vec![created(), message_added(0), text_delta(0, "Shipped.")];
    events.extend(message_done(0, "Shipped."));
    events.push(completed(usage(1, 0, 1, 0)));
    upstream.push(Reply::sse(events));
    let request = ModelRequest {
        model: "gpt-5.4".into(),
        messages: vec![
            ModelMessage::System {
                content: "You are terse.".into(),
            },
            ModelMessage::User {
                content: vec![
                    ContentPart::Text {
                        text: "Where is my order?".into(),
                    },
                    ContentPart::ImageUrl {
                        url: "https://example.com/receipt.png".into(),
                        detail: None,
                    },
                ],
            },
            ModelMessage::Assistant {
                content: Some("Checking.".into()),
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
        tool_choice: ModelToolChoice::Auto,
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
    let events = collect(client(&upstream)?.stream(request).await?).await;
    assert_eq!(
        events.last(),
        Some(&Ok(ModelEvent::Finish(FinishReason::Stop)))
    );

    assert_eq!(
        upstream.bodies(),
        vec![json!({
            "model": "gpt-5.4",
            "include": ["reasoning.encrypted_content"],
            "instructions": "You are terse.",
            "input": [
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "Where is my order?"},
                    {"type": "input_image", "image_url": "https://example.com/receipt.png", "detail": "auto"}
                ]},
                {"type": "message", "role": "assistant", "content": "Checking."},
                {"type": "function_call", "call_id": "call_1", "name": "get_order_status",
                    "arguments": "{\"order_id\":\"ORD-10042\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "{\"status\":\"shipped\"}"}
            ],
            "tools": [{
                "type": "function",
                "name": "get_order_status",
                "description": "Look up an order",
                "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
                "strict": true
            }],
            "tool_choice": "auto",
            "parallel_tool_calls": true,
            "temperature": 0.2,
            "max_output_tokens": 256,
            "text": {"format": {"type": "json_schema", "name": "status", "schema": {"type": "object"}, "strict": true}},
            "reasoning": {"effort": "low"},
            "prompt_cache_key": "conv-7",
            "store": false,
            "stream": true
        })]
    );
    let seen = upstream.seen.lock().unwrap();
    assert_eq!(seen[0].request_line, "POST /v1/responses HTTP/1.1");
    assert_eq!(
        seen[0].headers.get("authorization"),
        Some(&format!("Bearer {KEY}"))
    );
    assert_eq!(
        seen[0].headers.get("accept").map(String::as_str),
        Some("text/event-stream")
    );
    Ok(())
}

/// Two long conversations with tool calls sent turn after turn through one client, then one
/// edited in its middle and cut short: each request reaches the upstream with exactly its own
/// input items (the client keeps the JSON of the items it sent, `message_memo.rs`).
#[tokio::test]
async fn long_conversations_reach_the_upstream_whole_at_every_turn() -> TestResult {
    let upstream = Upstream::start().await;
    let client = client(&upstream)?;
    let text = |chat: usize, turn: usize, who: &str| {
        format!("{who} {turn} of chat {chat}: \"quoted\"\n\tand é. ").repeat(40)
    };
    let mut chats: Vec<Vec<ModelMessage>> = vec![Vec::new(), Vec::new()];
    let mut sent = Vec::new();
    for turn in 0..4 {
        for (n, chat) in chats.iter_mut().enumerate() {
            if turn > 0 {
                let id = format!("call_{n}_{turn}");
                chat.push(ModelMessage::Assistant {
                    content: Some(text(n, turn, "answer")),
                    tool_calls: vec![ToolCall {
                        id: id.clone(),
                        name: "lookup".into(),
                        arguments: "{}".into(),
                        thought_signature: None,
                    }],
                });
                chat.push(ModelMessage::Tool {
                    call_id: id,
                    name: None,
                    content: text(n, turn, "found"),
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
    // The first chat's second tool output changed, then the history cut after it.
    let mut edited = chats[0].clone();
    edited[5] = ModelMessage::Tool {
        call_id: "call_0_2".into(),
        name: None,
        content: "changed".into(),
    };
    sent.push(edited.clone());
    sent.push(edited[..6].to_vec());
    sent.push(chats[0].clone());

    for messages in &sent {
        let mut events = vec![created(), message_added(0), text_delta(0, "ok")];
        events.extend(message_done(0, "ok"));
        events.push(completed(usage(1, 0, 1, 0)));
        upstream.push(Reply::sse(events));
        let request = ModelRequest {
            model: "m".into(),
            messages: messages.clone(),
            ..ModelRequest::default()
        };
        collect(client.stream(request).await?).await;
    }
    let bodies = upstream.bodies();
    assert_eq!(bodies.len(), sent.len());
    for (n, (body, messages)) in bodies.iter().zip(&sent).enumerate() {
        let mut want = Vec::new();
        for message in messages {
            match message {
                ModelMessage::User { content } => {
                    let [ContentPart::Text { text }] = content.as_slice() else {
                        panic!("a text");
                    };
                    want.push(json!({"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": text}]}));
                }
                ModelMessage::Assistant {
                    content,
                    tool_calls,
                } => {
                    want.push(json!({"type": "message", "role": "assistant", "content": content}));
                    for call in tool_calls {
                        want.push(json!({"type": "function_call", "call_id": call.id,
                            "name": call.name, "arguments": call.arguments}));
                    }
                }
                ModelMessage::Tool {
                    call_id, content, ..
                } => want.push(json!({"type": "function_call_output", "call_id": call_id,
                    "output": content})),
                _ => panic!("not sent"),
            }
        }
        assert_eq!(body["input"], json!(want), "request {n}");
    }
    Ok(())
}

#[tokio::test]
async fn http_errors_carry_status_and_message_but_never_the_key() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Reply::Status(
        400,
        json!({"error": {"message": "Invalid value for 'input[2].call_id'.", "type": "invalid_request_error", "param": "input[2].call_id", "code": null}}).to_string(),
    ));
    upstream.push(Reply::Status(
        401,
        json!({"error": {"message": format!("Incorrect API key provided: {KEY}."), "type": "invalid_request_error", "code": "invalid_api_key"}}).to_string(),
    ));
    upstream.push(Reply::Status(
        401,
        json!({"error": {"message": "Incorrect API key provided: sk-s******test. You can find your API key at https://platform.openai.com/account/api-keys.", "code": "invalid_api_key"}}).to_string(),
    ));
    upstream.push(Reply::Status(
        429,
        json!({"error": {"message": "Rate limit reached for gpt-5.4.", "type": "requests", "code": "rate_limit_exceeded"}}).to_string(),
    ));
    // Retries are the conformance suite's subject; here each status is seen once.
    let client = client_for(
        &upstream.base_url(),
        ClientOptions {
            max_retries: 0,
            ..ClientOptions::default()
        },
    )?;
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
                message: "Invalid value for 'input[2].call_id'.".into()
            },
            ModelError::Upstream {
                status: 401,
                message: "Incorrect API key provided: [redacted].".into()
            },
            ModelError::Upstream {
                status: 401,
                message: "Incorrect API key provided: [redacted] You can find your API key at https://platform.openai.com/account/api-keys.".into()
            },
            ModelError::Upstream {
                status: 429,
                message: "Rate limit reached for gpt-5.4.".into()
            },
        ]
    );
    for err in &errors {
        let text = format!("{err} {err:?}");
        assert!(!text.contains(KEY), "{text}");
        assert!(!text.contains("sk-s*"), "{text}");
    }
    Ok(())
}

#[tokio::test]
async fn an_incomplete_response_finishes_with_length() -> TestResult {
    let mut events = vec![created(), message_added(0), text_delta(0, "The answer is")];
    events.push(json!({"type": "response.incomplete", "response": {
        "id": "resp_1", "object": "response", "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"id": "msg_1", "type": "message", "status": "incomplete", "role": "assistant",
            "content": [{"type": "output_text", "text": "The answer is", "annotations": []}]}],
        "usage": usage(30, 0, 16, 0)
    }}));
    let upstream = Upstream::start().await;
    upstream.push(Reply::sse(events));
    let events = collect(client(&upstream)?.stream(hello()).await?).await;
    assert_eq!(
        events,
        vec![
            Ok(ModelEvent::TextDelta("The answer is".into())),
            Ok(ModelEvent::Usage(TokenUsage {
                input_tokens: 30,
                output_tokens: 16,
                ..TokenUsage::default()
            })),
            Ok(ModelEvent::Finish(FinishReason::Length)),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn a_mid_stream_disconnect_is_a_transport_error() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Reply::Sse(
        [created(), message_added(0), text_delta(0, "partial")]
            .into_iter()
            .map(Piece::Event)
            .collect(),
        End::Cut,
    ));
    // The same cut, at a clean chunk boundary: the body ends without a terminal event.
    upstream.push(Reply::sse([created(), text_delta(0, "partial")]));
    let client = client(&upstream)?;
    let mut messages = Vec::new();
    for _ in 0..2 {
        let events = collect(client.stream(hello()).await?).await;
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(events[0], Ok(ModelEvent::TextDelta("partial".into())));
        match &events[1] {
            Err(ModelError::Transport(message)) => messages.push(message.clone()),
            other => return Err(format!("expected Transport, got {other:?}").into()),
        }
    }
    assert!(
        messages[0].starts_with("the response body broke off"),
        "{messages:?}"
    );
    assert_eq!(
        messages[1],
        "the stream ended before the response was complete"
    );
    Ok(())
}

#[tokio::test]
async fn failures_reported_in_the_stream_are_errors() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Reply::sse([
        created(),
        message_added(0),
        text_delta(0, "Hal"),
        json!({"type": "response.failed", "response": {
            "id": "resp_1", "object": "response", "status": "failed",
            "error": {"code": "server_error", "message": "The model produced invalid content."},
            "output": [], "usage": null
        }}),
    ]));
    upstream.push(Reply::sse([
        created(),
        json!({"type": "error", "code": "rate_limit_exceeded", "message": format!("Too fast for key {KEY}"), "param": null, "sequence_number": 1}),
    ]));
    let client = client(&upstream)?;

    let failed = collect(client.stream(hello()).await?).await;
    assert_eq!(
        failed,
        vec![
            Ok(ModelEvent::TextDelta("Hal".into())),
            Err(ModelError::Protocol(
                "the upstream reported an error mid-stream: The model produced invalid content. (server_error)".into()
            )),
        ]
    );
    let error = collect(client.stream(hello()).await?).await;
    assert_eq!(
        error,
        vec![Err(ModelError::Protocol(
            "the upstream reported an error mid-stream: Too fast for key [redacted] (rate_limit_exceeded)".into()
        ))]
    );
    Ok(())
}

#[tokio::test]
async fn silence_mid_stream_times_out() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Reply::Sse(
        [created(), message_added(0), text_delta(0, "Hel")]
            .into_iter()
            .map(Piece::Event)
            .collect(),
        End::Hang,
    ));
    let options = ClientOptions {
        connect_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_millis(500),
        ..ClientOptions::default()
    };
    let mut stream = client_for(&upstream.base_url(), options)?
        .stream(hello())
        .await?;
    assert_eq!(
        next(&mut stream).await,
        Some(Ok(ModelEvent::TextDelta("Hel".into())))
    );
    assert_eq!(next(&mut stream).await, Some(Err(ModelError::Timeout)));
    assert_eq!(next(&mut stream).await, None);
    Ok(())
}

#[tokio::test]
async fn a_non_streamed_answer_is_adapted() -> TestResult {
    let upstream = Upstream::start().await;
    upstream.push(Reply::Json(json!({
        "id": "resp_1", "object": "response", "status": "completed",
        "output": [
            {"id": "rs_1", "type": "reasoning", "summary": []},
            {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1",
                "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}
        ],
        "usage": usage(8, 2, 6, 4)
    })));
    let events = collect(client(&upstream)?.stream(hello()).await?).await;
    assert_eq!(
        assemble(&events).into_values().collect::<Vec<_>>(),
        vec![(
            "call_1".to_owned(),
            "get_weather".to_owned(),
            r#"{"city":"Paris"}"#.to_owned(),
            1
        )]
    );
    assert_eq!(
        &events[events.len() - 2..],
        [
            Ok(ModelEvent::Usage(TokenUsage {
                input_tokens: 8,
                output_tokens: 6,
                cached_input_tokens: 2,
                reasoning_tokens: 4,
                cache_write_tokens: 0,
            })),
            Ok(ModelEvent::Finish(FinishReason::ToolCalls)),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn one_client_serves_many_turns() -> TestResult {
    let upstream = Upstream::start().await;
    let client = client(&upstream)?;
    for n in 0..3 {
        let text = format!("turn {n}");
        let mut events = vec![created(), message_added(0), text_delta(0, &text)];
        events.extend(message_done(0, &text));
        events.push(completed(usage(1, 0, 1, 0)));
        upstream.push(Reply::sse(events));
        let events = collect(client.stream(hello()).await?).await;
        assert_eq!(events[0], Ok(ModelEvent::TextDelta(text)));
        assert_eq!(
            events.last(),
            Some(&Ok(ModelEvent::Finish(FinishReason::Stop)))
        );
    }
    assert_eq!(upstream.bodies().len(), 3);
    Ok(())
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_transport_error() -> TestResult {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    drop(listener);
    let client = client_for(
        &format!("http://127.0.0.1:{port}/v1?token={KEY}"),
        ClientOptions::default(),
    )?;
    match client.stream(hello()).await {
        Err(ModelError::Transport(message)) => {
            assert!(message.starts_with("could not connect"), "{message}");
            assert!(!message.contains(KEY), "{message}");
        }
        Err(other) => return Err(format!("expected Transport, got {other:?}").into()),
        Ok(_) => return Err("expected Transport, got a stream".into()),
    }
    Ok(())
}
