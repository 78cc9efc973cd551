//! WebSocket mode on `GET /v1/responses` and `/v1/agent`, with a real WebSocket client
//! (tokio-tungstenite): the same events as the SSE stream one JSON object per message, one
//! response in flight, sequential responses and `previous_response_id` across turns, error
//! messages that keep the connection open, `store: false` responses remembered per connection,
//! eviction after a failed continuation, the connection's lifetime and idle timeout, its
//! connection slot (`http.max_connections`), authentication.

#![expect(clippy::unwrap_used, reason = "test helpers fail loudly")]

use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use testkit::sse::Transcript;
use testkit::{Gate, Reply, TestApp};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

const MODEL: &str = "openai/gpt-test";
/// Longest wait for one message.
const WAIT: Duration = Duration::from_secs(10);

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

async fn connect_to(app: &TestApp, path: &str, key: Option<&str>) -> Socket {
    try_connect(app, path, key).await.unwrap()
}

async fn try_connect(
    app: &TestApp,
    path: &str,
    key: Option<&str>,
) -> Result<Socket, tokio_tungstenite::tungstenite::Error> {
    let url = app.url(path).replacen("http://", "ws://", 1);
    let mut request = url.into_client_request().unwrap();
    if let Some(key) = key {
        request
            .headers_mut()
            .insert("authorization", format!("Bearer {key}").parse().unwrap());
    }
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(socket, _)| socket)
}

async fn connect(app: &TestApp) -> Socket {
    connect_to(app, "/v1/responses", None).await
}

async fn send(socket: &mut Socket, message: Value) {
    socket
        .send(Message::Text(message.to_string().into()))
        .await
        .unwrap();
}

/// The next JSON message (pings and pongs skipped); `None` once the server closed.
async fn next(socket: &mut Socket) -> Option<Value> {
    loop {
        let message = tokio::time::timeout(WAIT, socket.next()).await.unwrap()?;
        match message.unwrap() {
            Message::Text(text) => return Some(serde_json::from_str(text.as_str()).unwrap()),
            Message::Close(_) => return None,
            _ => {}
        }
    }
}

const TERMINAL: [&str; 4] = [
    "response.completed",
    "response.failed",
    "response.incomplete",
    "response.cancelled",
];

/// The messages of one response, up to and including its terminal event (checked against the
/// stream invariants).
async fn response(socket: &mut Socket) -> Transcript {
    let transcript = Transcript {
        raw: String::new(),
        events: until_terminal(socket).await,
        comments: 0,
    };
    transcript.assert_invariants();
    transcript
}

/// The messages up to and including the next terminal event.
async fn until_terminal(socket: &mut Socket) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        let event = next(socket).await.unwrap();
        assert_ne!(event["type"], "error", "{event}");
        let done = TERMINAL.contains(&event["type"].as_str().unwrap());
        events.push(event);
        if done {
            return events;
        }
    }
}

async fn create(socket: &mut Socket, body: Value) -> Transcript {
    let mut message = json!({"type": "response.create"});
    message
        .as_object_mut()
        .unwrap()
        .extend(body.as_object().unwrap().clone());
    send(socket, message).await;
    response(socket).await
}

/// The next message, which must be an error: its `error` object.
async fn error(socket: &mut Socket) -> Value {
    let event = next(socket).await.unwrap();
    assert_eq!(event["type"], "error", "{event}");
    assert!(event["status"].is_u64(), "{event}");
    event["error"].clone()
}

fn user_texts(app: &TestApp) -> Vec<String> {
    let request = app.fake.requests().pop().unwrap();
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}:{}", m["role"].as_str().unwrap(), m["content"]))
        .collect()
}

#[tokio::test]
async fn responses_stream_their_sse_events_one_per_message_turn_after_turn() {
    let app = TestApp::spawn().await;
    for path in ["/v1/responses", "/v1/agent"] {
        let mut socket = connect_to(&app, path, None).await;
        app.fake.push(Reply::text_chunks(["Hel", "lo ", "Ada."]));
        let first = create(
            &mut socket,
            json!({"model": MODEL, "input": "Hi, I am Ada.", "store": true}),
        )
        .await;
        assert_eq!(first.terminal()["type"], "response.completed");
        let id = first.terminal()["response"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let deltas: Vec<&str> = first
            .events
            .iter()
            .filter(|e| e["type"] == "response.output_text.delta")
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert_eq!(deltas, ["Hel", "lo ", "Ada."], "one message per event");

        // The same events as the SSE stream of the same run, in the same order.
        let (status, stored) = app.get(&format!("{path}/{id}")).await;
        assert_eq!(status, 200);
        assert_eq!(stored["output"], first.terminal()["response"]["output"]);
        let replay = app.get_text(&format!("{path}/{id}?stream=true")).await;
        let replay = Transcript::parse(&replay);
        assert_eq!(replay.events, first.events);

        // The next turn on the same connection continues the first.
        app.fake.push(Reply::text("Your name is Ada."));
        let second = create(
            &mut socket,
            json!({"model": MODEL, "input": "Who am I?", "previous_response_id": id}),
        )
        .await;
        assert_eq!(second.terminal()["type"], "response.completed");
        assert_ne!(second.terminal()["response"]["id"], id.as_str());
        let sent = user_texts(&app);
        assert_eq!(sent.len(), 3, "{sent:?}");
        assert!(sent[1].contains("Hello Ada."), "{sent:?}");
        socket.close(None).await.unwrap();
    }
}

#[tokio::test]
async fn errors_keep_the_connection_open() {
    let app = TestApp::spawn().await;
    let mut socket = connect(&app).await;
    for (message, param) in [
        (
            json!({"type": "response.create", "model": MODEL, "input": "x", "stream": true}),
            json!("stream"),
        ),
        (
            json!({"type": "response.create", "model": MODEL, "input": "x", "background": true}),
            json!("background"),
        ),
        (
            json!({"type": "response.create", "model": MODEL, "input": "x", "stream_options": {}}),
            json!("stream_options"),
        ),
        (
            json!({"type": "response.create", "model": MODEL, "input": "x", "temperatur": 1}),
            json!("temperatur"),
        ),
        (
            json!({"type": "response.cancel", "model": MODEL}),
            json!("type"),
        ),
        (json!({"model": MODEL, "input": "x"}), json!("type")),
        (
            json!({"type": "response.create", "model": "nobody/model", "input": "x"}),
            json!("model"),
        ),
        (
            json!({"type": "response.create", "model": MODEL, "input": "x",
                   "previous_response_id": "resp_unknown"}),
            json!("previous_response_id"),
        ),
    ] {
        send(&mut socket, message.clone()).await;
        let error = error(&mut socket).await;
        assert_eq!(error["param"], param, "{message}: {error}");
        assert!(error["code"].is_string() && error["message"].is_string());
    }
    socket.send(Message::Text("not json".into())).await.unwrap();
    let error = error(&mut socket).await;
    assert_eq!(error["code"], "invalid_request");
    send(
        &mut socket,
        json!({"type": "response.create", "model": MODEL, "input": "x",
               "previous_response_id": "resp_unknown"}),
    )
    .await;
    assert_eq!(error_code(&mut socket).await, "previous_response_not_found");

    // Still open: a valid request is answered.
    app.fake.push(Reply::text("fine"));
    let ok = create(&mut socket, json!({"model": MODEL, "input": "x"})).await;
    assert_eq!(ok.terminal()["type"], "response.completed");
}

async fn error_code(socket: &mut Socket) -> String {
    error(socket).await["code"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn one_response_at_a_time_per_connection() {
    let app = TestApp::spawn().await;
    let mut socket = connect(&app).await;
    let gate = Gate::new();
    app.fake.push(Reply::text("slow answer").wait_for(&gate));
    send(
        &mut socket,
        json!({"type": "response.create", "model": MODEL, "input": "first"}),
    )
    .await;
    let created = next(&mut socket).await.unwrap();
    assert_eq!(created["type"], "response.created");
    send(
        &mut socket,
        json!({"type": "response.create", "model": MODEL, "input": "second"}),
    )
    .await;
    // The refusal comes while the first response is held (its model waits for the gate).
    let mut first = vec![created];
    let refused = loop {
        let event = next(&mut socket).await.unwrap();
        if event["type"] == "error" {
            break event["error"].clone();
        }
        assert!(
            !TERMINAL.contains(&event["type"].as_str().unwrap()),
            "{event}"
        );
        first.push(event);
    };
    assert!(
        refused["message"].as_str().unwrap().contains("in progress"),
        "{refused}"
    );
    gate.open();
    first.extend(until_terminal(&mut socket).await);
    let whole = Transcript {
        raw: String::new(),
        events: first,
        comments: 0,
    };
    whole.assert_invariants();
    assert_eq!(whole.terminal()["type"], "response.completed");
    assert_eq!(app.fake.requests().len(), 1, "the second was never run");
}

#[tokio::test]
async fn store_false_responses_are_remembered_by_their_connection_only() {
    let app = TestApp::spawn().await;
    let mut socket = connect(&app).await;
    app.fake.push(Reply::text("secret plan"));
    let first = create(
        &mut socket,
        json!({"model": MODEL, "input": "plan", "store": false}),
    )
    .await;
    let id = first.terminal()["response"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.fake.push(Reply::text("continued"));
    let second = create(
        &mut socket,
        json!({"model": MODEL, "input": "more", "previous_response_id": id, "store": false}),
    )
    .await;
    assert_eq!(second.terminal()["type"], "response.completed");
    assert!(user_texts(&app)[1].contains("secret plan"));

    let mut other = connect(&app).await;
    send(
        &mut other,
        json!({"type": "response.create", "model": MODEL, "input": "more",
               "previous_response_id": id}),
    )
    .await;
    let error = error(&mut other).await;
    assert_eq!(error["code"], "previous_response_not_found", "{error}");
    assert_eq!(error["param"], "previous_response_id");

    // A continuation that fails evicts the response it continued from this connection.
    let second_id = second.terminal()["response"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for _ in 0..3 {
        app.fake.push(Reply::error(500, "upstream exploded"));
    }
    let failed = create(
        &mut socket,
        json!({"model": MODEL, "input": "again", "previous_response_id": second_id, "store": false}),
    )
    .await;
    assert_eq!(failed.terminal()["type"], "response.failed");
    send(
        &mut socket,
        json!({"type": "response.create", "model": MODEL, "input": "again",
               "previous_response_id": second_id}),
    )
    .await;
    assert_eq!(error_code(&mut socket).await, "previous_response_not_found");
    // The first one is still remembered.
    app.fake.push(Reply::text("still here"));
    let again = create(
        &mut socket,
        json!({"model": MODEL, "input": "again", "previous_response_id": id}),
    )
    .await;
    assert_eq!(again.terminal()["type"], "response.completed");
}

#[tokio::test]
async fn the_connection_lifetime_is_bounded() {
    let app = TestApp::spawn_with(|config| {
        config.websocket_lifetime = Duration::from_millis(300);
    })
    .await;
    let mut socket = connect(&app).await;
    let event = next(&mut socket).await.unwrap();
    assert_eq!(event["type"], "error");
    assert_eq!(event["error"]["code"], "websocket_connection_limit_reached");
    assert!(next(&mut socket).await.is_none(), "then the server closes");
}

/// The close frame the server sends next (any other message is a failure): code and reason.
async fn close_frame(socket: &mut Socket) -> (u16, String) {
    let message = tokio::time::timeout(WAIT, socket.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match message {
        Message::Close(Some(frame)) => (u16::from(frame.code), frame.reason.to_string()),
        other => unreachable!("expected a close frame, got {other:?}"),
    }
}

fn create_message(input: &str) -> Value {
    json!({"type": "response.create", "model": MODEL, "input": input})
}

#[tokio::test]
async fn an_idle_connection_is_closed_but_not_while_a_response_or_messages_go_on() {
    let idle = Duration::from_millis(600);
    let app = TestApp::spawn_with(|config| config.websocket_idle_timeout = idle).await;
    let mut socket = connect(&app).await;
    // Messages keep the connection open, however long it lasts.
    for _ in 0..5 {
        socket.send(Message::Binary(vec![1].into())).await.unwrap();
        assert_eq!(error(&mut socket).await["code"], "invalid_request");
        tokio::time::sleep(idle / 4).await;
    }
    // So does a response in progress for longer than the idle timeout.
    let gate = Gate::new();
    app.fake.push(Reply::text("slow answer").wait_for(&gate));
    send(&mut socket, create_message("hi")).await;
    assert_eq!(next(&mut socket).await.unwrap()["type"], "response.created");
    tokio::time::sleep(idle * 3).await;
    gate.open();
    let events = until_terminal(&mut socket).await;
    assert_eq!(events.last().unwrap()["type"], "response.completed");
    // Then, with nothing going on, the server closes it, saying why.
    let quiet_since = std::time::Instant::now();
    let (code, reason) = close_frame(&mut socket).await;
    assert_eq!(code, 1000, "{reason}");
    assert!(reason.contains("idle timeout"), "{reason}");
    assert!(
        quiet_since.elapsed() >= idle / 2,
        "closed after {:?}",
        quiet_since.elapsed()
    );
}

/// `GET /health` on a connection of its own; its status.
async fn health(app: &TestApp) -> u16 {
    testkit::http_client()
        .get(app.url("/health"))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_websocket_takes_a_connection_slot_until_it_closes() {
    let app = TestApp::spawn_with(|config| config.connections.max_connections = Some(1)).await;
    let mut socket = connect(&app).await;
    let gate = Gate::new();
    app.fake.push(Reply::text("slow answer").wait_for(&gate));
    send(&mut socket, create_message("hi")).await;
    assert_eq!(next(&mut socket).await.unwrap()["type"], "response.created");
    // The only slot is the WebSocket's, busy with a response: a new connection waits.
    let mut waiting = tokio::spawn({
        let app_url = app.url("/health");
        async move {
            testkit::http_client()
                .get(app_url)
                .send()
                .await
                .map(|r| r.status().as_u16())
        }
    });
    assert!(
        tokio::time::timeout(Duration::from_millis(800), &mut waiting)
            .await
            .is_err(),
        "a new connection was served while the WebSocket held the only slot"
    );
    gate.open();
    let events = until_terminal(&mut socket).await;
    assert_eq!(events.last().unwrap()["type"], "response.completed");
    // Idle now, the WebSocket is closed for the waiting connection ("try again later").
    let (code, reason) = close_frame(&mut socket).await;
    assert_eq!(code, 1013, "{reason}");
    assert_eq!(waiting.await.unwrap().unwrap(), 200);
}

#[tokio::test]
async fn an_idle_websocket_makes_room_for_a_new_connection() {
    let app = TestApp::spawn_with(|config| config.connections.max_connections = Some(1)).await;
    let mut socket = connect(&app).await;
    app.fake.push(Reply::text("hello"));
    let done = create(&mut socket, json!({"model": MODEL, "input": "hi"})).await;
    assert_eq!(done.terminal()["type"], "response.completed");
    assert_eq!(health(&app).await, 200);
    let (code, reason) = close_frame(&mut socket).await;
    assert_eq!(code, 1013, "{reason}");
    assert!(reason.contains("connection limit"), "{reason}");
}

#[tokio::test]
async fn the_upgrade_takes_the_same_key_as_http() {
    let app = TestApp::spawn().await;
    let key = app.state.engine.create_key("alpha").await.unwrap();
    let refused = try_connect(&app, "/v1/responses", None).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 401);
        }
        other => panic!("expected a 401, got {:?}", other.map(|_| ())),
    }
    assert!(
        try_connect(&app, "/v1/responses", Some("agd_wrong"))
            .await
            .is_err()
    );
    let mut socket = connect_to(&app, "/v1/agent", Some(&key)).await;
    app.fake.push(Reply::text("hello"));
    let done = create(&mut socket, json!({"model": MODEL, "input": "hi"})).await;
    assert_eq!(done.terminal()["type"], "response.completed");
    // A plain GET without the upgrade is refused on the JSON envelope.
    let plain = app
        .client
        .get(app.url("/v1/responses"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert!(plain.status().is_client_error());
    let body: Value = plain.json().await.unwrap();
    assert!(body["error"]["message"].is_string(), "{body}");
}

#[tokio::test]
async fn a_compacted_conversation_continues_over_the_websocket() {
    let app = TestApp::spawn().await;
    app.fake
        .push(Reply::text("The user is Ada, who likes maps."));
    let (status, compacted) = app
        .post(
            "/v1/responses/compact",
            json!({"model": MODEL, "input": [
                {"role": "user", "content": "I am Ada and I like maps."},
                {"role": "assistant", "content": "Noted, Ada."}]}),
        )
        .await;
    assert_eq!(status, 200, "{compacted}");
    let mut input = compacted["output"].as_array().unwrap().clone();
    input.push(json!({"role": "user", "content": "What do I like?"}));
    let mut socket = connect(&app).await;
    app.fake.push(Reply::text("Maps."));
    let done = create(&mut socket, json!({"model": MODEL, "input": input})).await;
    assert_eq!(done.terminal()["type"], "response.completed");
    let sent = user_texts(&app);
    assert!(
        sent.iter().any(|m| m.contains("who likes maps")),
        "{sent:?}"
    );
    assert!(!sent.iter().any(|m| m.contains("Noted, Ada.")), "{sent:?}");
}
