//! WebSocket mode (Open Responses 2026-04-24): `GET /v1/responses` (and `/v1/agent`) upgraded,
//! with the same `Authorization` header as HTTP. The client sends text messages
//! `{"type": "response.create", …the create body}` (without `stream`, `stream_options` or
//! `background`); the server answers each with the run's events, one JSON object per message
//! (the SSE stream's objects, no framing, no `[DONE]`), ending with the terminal event.
//!
//! - One response in flight per connection; a `response.create` sent before the terminal
//!   event is refused with an error message. Responses follow each other on one connection.
//! - Errors are `{"type": "error", "status", "error": {"type", "code", "message", "param"}}`
//!   and leave the connection open.
//! - `previous_response_id` continues stored responses, and the `store: false` responses this
//!   connection made ([`Memory`]): another connection gets `previous_response_not_found` for
//!   those. A continuation that fails evicts its `previous_response_id` from the memory.
//! - After `http.websocket_lifetime_secs` the server sends `websocket_connection_limit_reached`
//!   and closes the connection.
//! - The connection keeps its slot among the server's connections (`http.max_connections`,
//!   [`ConnectionSlot`]) until it closes. With no response in progress it is closed after
//!   `http.websocket_idle_timeout_secs` without a message from the client (close code 1000), or
//!   at once when the server is full and it is the idlest connection (close code 1013, "try
//!   again later"). A message the client does not read within `http.idle_timeout_ms` ends the
//!   connection.
//!
//! A run does not depend on its connection: a client that goes away leaves it running (and a
//! stored response can be retrieved or resumed over HTTP).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::response::Response;
use engine::{Code, EngineError, EventStream};
use futures::StreamExt as _;
use protocol::request::CreateRequest;
use serde_json::{Map, Value, json};

use crate::auth::Project;
use crate::connections::{ConnectionSlot, RequestGuard};
use crate::error::ApiError;
use crate::json::MAX_BODY_BYTES;
use crate::state::AppState;

/// The fields a `response.create` message must not carry (HTTP-only modes).
const HTTP_ONLY: [&str; 3] = ["stream", "stream_options", "background"];

/// `GET /v1/{responses|agent}` with `Upgrade: websocket`: authenticated like any request, then
/// served by [`serve`].
pub(crate) async fn upgrade(
    State(state): State<AppState>,
    Project(project): Project,
    slot: Option<Extension<ConnectionSlot>>,
    upgrade: WebSocketUpgrade,
) -> Response {
    let slot = slot.map(|Extension(slot)| slot);
    upgrade
        .max_message_size(MAX_BODY_BYTES)
        .on_upgrade(move |socket| serve(Socket::new(socket, slot), state, project))
}

/// The WebSocket with its connection's slot (none when the app is driven without the accept
/// loop).
struct Socket {
    inner: WebSocket,
    slot: Option<ConnectionSlot>,
}

impl Socket {
    fn new(inner: WebSocket, slot: Option<ConnectionSlot>) -> Socket {
        Socket { inner, slot }
    }

    /// Sends one message; `false` when the connection is gone, or the client did not read for
    /// `http.idle_timeout_ms`.
    async fn send(&mut self, message: Message) -> bool {
        let send = self.inner.send(message);
        match self.slot.as_ref().map(ConnectionSlot::write_timeout) {
            Some(bound) => matches!(tokio::time::timeout(bound, send).await, Ok(Ok(()))),
            None => send.await.is_ok(),
        }
    }

    /// Sends a close frame (best effort).
    async fn close(&mut self, code: u16, reason: String) {
        let frame = CloseFrame {
            code,
            reason: reason.into(),
        };
        let _ = self.send(Message::Close(Some(frame))).await;
    }
}

/// Resolves when the server wants this connection's slot for a new one.
async fn evicted(slot: Option<&ConnectionSlot>) {
    match slot {
        Some(slot) => slot.evicted().await,
        None => std::future::pending().await,
    }
}

/// The `store: false` responses a connection made: only it may continue them.
#[derive(Default)]
struct Memory {
    unstored: HashSet<String>,
}

/// The response a connection is streaming.
struct InFlight {
    id: String,
    events: EventStream,
    store: bool,
    previous: Option<String>,
    /// Keeps the connection busy (not idle, not evicted) while the response is in progress.
    _busy: Option<RequestGuard>,
}

/// Serves one connection until the client closes it, it fails, it is idle too long, its slot is
/// wanted, or its lifetime ends.
async fn serve(mut socket: Socket, state: AppState, project: String) {
    let deadline = tokio::time::Instant::now() + state.websocket_lifetime;
    let idle_timeout = state.websocket_idle_timeout;
    let mut idle_until = tokio::time::Instant::now() + idle_timeout;
    let slot = socket.slot.clone();
    let mut memory = Memory::default();
    let mut current: Option<InFlight> = None;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => {
                let error = error_message(
                    Code::WebsocketConnectionLimitReached,
                    None,
                    format!(
                        "this connection reached its lifetime of {} s: open a new one",
                        state.websocket_lifetime.as_secs()
                    ),
                );
                if socket.send(error).await {
                    socket
                        .close(close_code::NORMAL, "websocket_connection_limit_reached".to_owned())
                        .await;
                }
                break;
            }
            () = tokio::time::sleep_until(idle_until), if current.is_none() => {
                socket.close(close_code::NORMAL, idle_reason(idle_timeout)).await;
                break;
            }
            () = evicted(slot.as_ref()), if current.is_none() => {
                socket
                    .close(
                        close_code::AGAIN,
                        "the server is at its connection limit: reconnect later".to_owned(),
                    )
                    .await;
                break;
            }
            event = next_event(&mut current) => {
                let Some(line) = event else {
                    // The response is over: idle from now.
                    current = None;
                    idle_until = tokio::time::Instant::now() + idle_timeout;
                    continue;
                };
                if let Some(flight) = &current {
                    settle(&mut memory, flight, &line);
                }
                if !socket.send(Message::Text(line.as_ref().into())).await {
                    break;
                }
            }
            message = socket.inner.recv() => {
                // Any frame from the client (pings included) is activity.
                idle_until = tokio::time::Instant::now() + idle_timeout;
                if let Some(slot) = &slot {
                    slot.touch();
                }
                let text = match message {
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break,
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Binary(_))) => {
                        let error = error_message(
                            Code::InvalidRequest,
                            None,
                            "send response.create events as JSON text messages".to_owned(),
                        );
                        if !socket.send(error).await {
                            break;
                        }
                        continue;
                    }
                    // Pings are answered by the library.
                    Some(Ok(_)) => continue,
                };
                if current.is_some() {
                    let error = error_message(
                        Code::InvalidRequest,
                        None,
                        "a response is already in progress on this connection: send the next response.create after its terminal event".to_owned(),
                    );
                    if !socket.send(error).await {
                        break;
                    }
                    continue;
                }
                match start(&state, &project, &memory, text.as_str()).await {
                    Ok(mut flight) => {
                        flight._busy = slot.as_ref().map(ConnectionSlot::busy);
                        current = Some(flight);
                    }
                    Err((refusal, previous)) => {
                        if let Some(previous) = previous {
                            memory.unstored.remove(&previous);
                        }
                        let (code, param, message) = refusal;
                        if !socket.send(error_message(code, param, message)).await {
                            break;
                        }
                    }
                }
            }
        }
    }
}

/// The close reason of an idle connection.
fn idle_reason(timeout: Duration) -> String {
    format!(
        "idle timeout: no message and no response in progress for {} s",
        timeout.as_secs_f64()
    )
}

/// The next event of the response in flight; pending while there is none.
async fn next_event(current: &mut Option<InFlight>) -> Option<Arc<str>> {
    match current {
        Some(flight) => flight.events.next().await,
        None => std::future::pending().await,
    }
}

/// At the terminal event: a completed `store: false` response is remembered, a failed
/// continuation forgets the response it continued.
fn settle(memory: &mut Memory, flight: &InFlight, line: &str) {
    let kind = serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|event| event["type"].as_str().map(str::to_owned));
    match kind.as_deref() {
        Some("response.completed") if !flight.store => {
            memory.unstored.insert(flight.id.clone());
        }
        Some("response.failed" | "response.incomplete" | "response.cancelled") => {
            if let Some(previous) = &flight.previous {
                memory.unstored.remove(previous);
            }
        }
        _ => {}
    }
}

/// Why a message was refused: code, param, message.
type Refusal = (Code, Option<String>, String);

/// Parses a `response.create` message and starts its run. On failure, the refusal and the
/// `previous_response_id` it named (to evict).
async fn start(
    state: &AppState,
    project: &str,
    memory: &Memory,
    text: &str,
) -> Result<InFlight, (Refusal, Option<String>)> {
    let request = parse(state, text).map_err(|err| (err.parts(), None))?;
    let previous = request.previous_response_id.clone();
    if let Some(id) = &previous
        && !memory.unstored.contains(id)
        && matches!(
            state.engine.get_response(project, id).await,
            Err(EngineError::NotFound(_))
        )
    {
        return Err((
            (
                Code::PreviousResponseNotFound,
                Some("previous_response_id".to_owned()),
                format!(
                    "previous response \"{id}\" not found (a store: false response can only be continued on the connection that made it)"
                ),
            ),
            previous,
        ));
    }
    let store = request.store.unwrap_or(true);
    match state.engine.start(project, request).await {
        Ok(handle) => Ok(InFlight {
            id: handle.id.clone(),
            events: Box::pin(handle.events()),
            store,
            previous,
            _busy: None,
        }),
        Err(err) => Err((ApiError::Engine(err).parts(), previous)),
    }
}

/// A `response.create` message as a create request: strict like the HTTP body, without the
/// HTTP-only fields.
fn parse(state: &AppState, text: &str) -> Result<CreateRequest, ApiError> {
    let mut object: Map<String, Value> = match serde_json::from_str(text) {
        Ok(Value::Object(object)) => object,
        Ok(_) => return Err(invalid(None, "a message must be a JSON object")),
        Err(err) => return Err(invalid(None, &format!("a message must be JSON: {err}"))),
    };
    match object.remove("type") {
        Some(Value::String(kind)) if kind == "response.create" => {}
        Some(Value::String(kind)) => {
            return Err(invalid(
                Some("type"),
                &format!("unknown client event type \"{kind}\": send response.create"),
            ));
        }
        _ => {
            return Err(invalid(
                Some("type"),
                "a message needs \"type\": \"response.create\"",
            ));
        }
    }
    if let Some(field) = HTTP_ONLY.iter().find(|field| object.contains_key(**field)) {
        return Err(invalid(
            Some(field),
            &format!(
                "{field} is not sent in WebSocket mode: every response streams its events on the connection"
            ),
        ));
    }
    let body = serde_json::to_vec(&Value::Object(object))
        .map_err(|err| ApiError::Internal(format!("cannot encode a message: {err}")))?;
    Ok(CreateRequest::parse_within(&body, &state.requests.limits)?)
}

fn invalid(param: Option<&str>, message: &str) -> ApiError {
    match param {
        Some(param) => ApiError::Request(protocol::RequestError::new(param, message)),
        None => ApiError::Other {
            code: Code::InvalidRequest,
            message: message.to_owned(),
        },
    }
}

/// An error message (`WebSocketErrorEvent`).
fn error_message(code: Code, param: Option<String>, message: String) -> Message {
    let event = json!({
        "type": "error",
        "status": code.status(),
        "error": {
            "type": code.kind(),
            "code": code.kind(),
            "message": message,
            "param": param,
        },
    });
    Message::Text(event.to_string().into())
}
