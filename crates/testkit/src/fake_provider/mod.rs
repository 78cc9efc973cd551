//! A scripted fake model provider: a real HTTP server on `127.0.0.1:0` speaking every upstream
//! wire API the adapters know, so adapters and the whole app are exercised over real sockets.
//!
//! Each upstream request takes the next [`Reply`] from one FIFO queue, whatever the route. The
//! route the adapter calls picks the wire format the reply is rendered in:
//!
//! | route (base URLs as the operator contract defaults them) | wire API |
//! |---|---|
//! | `POST {base}/chat/completions` (base `…/v1`) | OpenAI Chat Completions ([`chat_completions`]) |
//! | `POST {base}/responses` (base `…/v1`) | OpenAI Responses ([`responses`]) |
//! | `POST {base}/v1/messages` | Anthropic Messages ([`anthropic`]) |
//! | `POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse` and `:generateContent` | Gemini ([`gemini`]) |
//!
//! A streaming request (`"stream": true`, or Gemini's `streamGenerateContent`) gets the
//! provider's documented SSE stream (`event:` lines for Anthropic and Responses, `data:` only for
//! Chat Completions and Gemini); other requests get the provider's one JSON object. The same
//! reply renders the same answer on every wire: text deltas, tool calls (arguments in pieces where
//! the wire streams them), usage, the finish reason, reasoning blocks, errors in each provider's
//! error envelope. An empty queue answers HTTP 500 "fake provider: no scripted reply left", so a
//! test that scripts too few replies fails loudly, unless the test set a responder
//! ([`FakeProvider::respond_with`]) that picks each reply from the request.
//!
//! Model lists ([`FakeProvider::set_models`], counted by [`FakeProvider::model_list_requests`]):
//! `GET {base}/models` (OpenAI), `GET /v1/models` with an `anthropic-version` header
//! (Anthropic, paginated with `limit`/`after_id`), `GET /v1beta/models` (Gemini, paginated with
//! `pageSize`/`pageToken`); see [`models`].
//!
//! Layout: `reply.rs` ([`Reply`] and [`Gate`], the same for every wire API), one module per
//! wire API rendering a reply in its format, [`models`] (the model lists), and this file: the
//! server, routing, the request record and sending a body (gates, delays, hangs, cuts).
//!
//! ```no_run
//! # async fn demo() {
//! use agentd_testkit::fake_provider::{FakeProvider, Reply};
//!
//! let fake = FakeProvider::start().await;
//! fake.push(Reply::tool_calls(vec![("call_1", "get_order_status", r#"{"order_id":"ORD-10042"}"#)]));
//! fake.push(Reply::text("Your order has shipped.").usage(120, 6));
//! // point the adapter at fake.base_url() (or fake.base_url_for(wire)), run, then inspect
//! // fake.requests()
//! # }
//! ```

pub mod anthropic;
pub mod chat_completions;
mod errors;
pub mod gemini;
pub mod models;
mod render;
mod reply;
pub mod responses;
mod template;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use errors::error_response;
pub use providers::WireApi;
use render::{Frames, Part, Turn, json_response, percent_decode, query_param};
use reply::{End, Kind};
pub use reply::{Gate, Reply};
use serde_json::{Value, json};

/// A running fake provider. Dropping it stops accepting connections.
pub struct FakeProvider {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// The accept loop, aborted on drop.
    server: tokio::task::JoinHandle<()>,
}

/// What the handler and the test share.
#[derive(Default)]
struct Shared {
    /// Scripted replies, one per upstream model turn, in order.
    replies: Mutex<VecDeque<Reply>>,
    /// Every model-turn request body received (JSON; a body that is not JSON is kept as a
    /// string).
    requests: Mutex<Vec<Value>>,
    /// The headers of every model-turn request received, in the same order.
    headers: Mutex<Vec<HeaderMap>>,
    /// Every request on a known route (turns and model lists), with its path.
    received: Mutex<Vec<Received>>,
    /// The model ids the model-list routes answer.
    models: Mutex<Vec<String>>,
    /// Requests to the model-list routes.
    model_list_requests: AtomicUsize,
    /// Streams whose client went away before the last byte.
    dropped_streams: AtomicUsize,
    /// Numbers the answers (completion, response and message ids).
    next_id: AtomicU64,
    /// Answers a turn when no scripted reply is left ([`FakeProvider::respond_with`]).
    responder: Mutex<Option<Responder>>,
    /// Set by [`FakeProvider::set_recording`]`(false)`: requests are answered but not kept.
    unrecorded: AtomicBool,
}

/// Picks the reply of a turn from its request body (see [`FakeProvider::respond_with`]).
pub type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding the lock has already failed; keep the data readable.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One request the fake received on a known route.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: Method,
    /// The path as sent (percent-encoding kept), e.g. `/v1beta/models/gemini-2.5-flash:streamGenerateContent`.
    pub path: String,
    /// The query string, if any (`alt=sse`).
    pub query: Option<String>,
    pub headers: HeaderMap,
    /// The JSON body (`Null` for a request without one; a body that is not JSON as a string).
    pub body: Value,
    pub route: Route,
}

/// What a request asked for, as told by its method, path and headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// A model turn in this wire API; `streaming` when the answer is an SSE stream.
    Turn { wire: WireApi, streaming: bool },
    /// A model list in this wire API's shape (`ChatCompletions` for OpenAI's, which the
    /// Responses API shares).
    ModelList { wire: WireApi },
}

impl FakeProvider {
    /// Binds `127.0.0.1:0` and starts serving.
    #[expect(
        clippy::expect_used,
        reason = "a test utility: a machine that cannot bind loopback cannot run the tests"
    )]
    pub async fn start() -> FakeProvider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("fake provider: bind 127.0.0.1:0");
        let addr = listener
            .local_addr()
            .expect("fake provider: read the bound address");
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let server = tokio::spawn(async move {
            // Ends only when the task is aborted (on drop); an accept error ends the test's
            // requests with connection errors, which is loud enough.
            // Like real providers, no Nagle delay between stream chunks.
            let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let _ = axum::serve(listener, app).await;
        });
        FakeProvider {
            addr,
            shared,
            server,
        }
    }

    /// `http://127.0.0.1:PORT/v1`, the value for `OPENAI_BASE_URL` or a Chat Completions or
    /// Responses provider's `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The `base_url` a provider of this wire API is configured with: `…/v1` for the OpenAI wire
    /// APIs, the bare origin for Anthropic and Gemini (their adapters append `/v1/messages` and
    /// `/v1beta/models/…`).
    pub fn base_url_for(&self, wire: WireApi) -> String {
        match wire {
            WireApi::ChatCompletions | WireApi::Responses => self.base_url(),
            WireApi::AnthropicMessages | WireApi::Gemini => format!("http://{}", self.addr),
        }
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues the reply for the next model turn (first in, first out).
    pub fn push(&self, reply: Reply) {
        lock(&self.shared.replies).push_back(reply);
    }

    /// Forgets unused replies and everything received so far (the model-list count included);
    /// returns how many replies were discarded.
    pub fn reset(&self) -> usize {
        let discarded = {
            let mut replies = lock(&self.shared.replies);
            let n = replies.len();
            replies.clear();
            n
        };
        lock(&self.shared.requests).clear();
        lock(&self.shared.headers).clear();
        lock(&self.shared.received).clear();
        self.shared.model_list_requests.store(0, Ordering::SeqCst);
        discarded
    }

    /// From now on, a turn that finds no scripted reply left is answered by `responder`, called
    /// with the turn's request body (in its wire API's JSON): for tests whose many concurrent
    /// runs cannot share one FIFO queue (each run's reply is picked from its own messages).
    /// Scripted replies still come first.
    pub fn respond_with(&self, responder: impl Fn(&Value) -> Reply + Send + Sync + 'static) {
        *lock(&self.shared.responder) = Some(Arc::new(responder));
    }

    /// Whether requests are kept for [`requests`](Self::requests), [`headers`](Self::headers)
    /// and [`received`](Self::received) (the default). A load generator's hundreds of thousands
    /// of requests turn it off, so the fake's memory stays flat over a long run.
    pub fn set_recording(&self, on: bool) {
        self.shared.unrecorded.store(!on, Ordering::Relaxed);
    }

    /// How many scripted replies have not been used yet.
    pub fn pending_replies(&self) -> usize {
        lock(&self.shared.replies).len()
    }

    /// Every model-turn request body received, in order (whatever its wire API).
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.requests).clone()
    }

    /// The headers of every model-turn request received, in order.
    pub fn headers(&self) -> Vec<HeaderMap> {
        lock(&self.shared.headers).clone()
    }

    /// Every request on a known route, model turns and model lists, in order, with its path.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.shared.received).clone()
    }

    /// How many streamed replies were cut short because the client went away (disconnect and
    /// cancellation tests).
    pub fn dropped_streams(&self) -> usize {
        self.shared.dropped_streams.load(Ordering::SeqCst)
    }

    /// The model ids the model-list routes answer from now on (in this order).
    pub fn set_models(&self, models: Vec<String>) {
        *lock(&self.shared.models) = models;
    }

    /// How many model-list requests arrived (any wire API, every page counted).
    pub fn model_list_requests(&self) -> usize {
        self.shared.model_list_requests.load(Ordering::SeqCst)
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.server.abort();
    }
}

// ---------------------------------------------------------------------------------------------
// Routing

/// Every request: the route picks the wire API, or it is a 404.
async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let query = uri.query().map(str::to_owned);
    let Some(target) = route(&method, &path, query.as_deref(), &headers) else {
        return error_response(
            WireApi::ChatCompletions,
            404,
            &format!("fake provider: no route for {method} {path}"),
        );
    };
    let json = if body.is_empty() {
        Ok(Value::Null)
    } else {
        serde_json::from_slice::<Value>(&body)
    };
    let recording = !shared.unrecorded.load(Ordering::Relaxed);
    if recording {
        let recorded = match &json {
            Ok(json) => json.clone(),
            Err(_) => Value::String(String::from_utf8_lossy(&body).into_owned()),
        };
        lock(&shared.received).push(Received {
            method,
            path,
            query: query.clone(),
            headers: headers.clone(),
            body: recorded.clone(),
            route: target.route.clone(),
        });
        if let Route::Turn { .. } = target.route {
            lock(&shared.requests).push(recorded);
            lock(&shared.headers).push(headers);
        }
    }
    match target.route {
        Route::ModelList { wire } => {
            shared.model_list_requests.fetch_add(1, Ordering::SeqCst);
            let models = lock(&shared.models).clone();
            models::list(wire, &models, query.as_deref())
        }
        Route::Turn { wire, streaming } => {
            let request = match json {
                Ok(json) => json,
                Err(err) => {
                    let message = format!("fake provider: the body is not JSON: {err}");
                    return error_response(wire, 400, &message);
                }
            };
            turn(shared, wire, streaming, &target, &request).await
        }
    }
}

/// Where a request goes.
struct Target {
    route: Route,
    /// The model named in the path (Gemini).
    model: Option<String>,
    /// Gemini's `streamGenerateContent` without `alt=sse`: the chunks as one JSON array.
    json_array: bool,
}

fn route(method: &Method, path: &str, query: Option<&str>, headers: &HeaderMap) -> Option<Target> {
    let plain = |route| {
        Some(Target {
            route,
            model: None,
            json_array: false,
        })
    };
    if method == Method::GET {
        return match path.trim_end_matches('/') {
            "/v1/models" if headers.contains_key("anthropic-version") => plain(Route::ModelList {
                wire: WireApi::AnthropicMessages,
            }),
            "/v1/models" | "/models" => plain(Route::ModelList {
                wire: WireApi::ChatCompletions,
            }),
            "/v1beta/models" => plain(Route::ModelList {
                wire: WireApi::Gemini,
            }),
            _ => None,
        };
    }
    if method != Method::POST {
        return None;
    }
    if path == "/v1/messages" {
        return plain(Route::Turn {
            wire: WireApi::AnthropicMessages,
            streaming: true,
        });
    }
    if path.ends_with("/chat/completions") {
        return plain(Route::Turn {
            wire: WireApi::ChatCompletions,
            streaming: true,
        });
    }
    if path.ends_with("/responses") {
        return plain(Route::Turn {
            wire: WireApi::Responses,
            streaming: true,
        });
    }
    let model_action = path.strip_prefix("/v1beta/models/")?;
    let (model, action) = model_action.rsplit_once(':')?;
    let streaming = match action {
        "streamGenerateContent" => query_param(query, "alt").as_deref() == Some("sse"),
        "generateContent" => false,
        _ => return None,
    };
    Some(Target {
        route: Route::Turn {
            wire: WireApi::Gemini,
            streaming,
        },
        model: Some(percent_decode(model)),
        json_array: action == "streamGenerateContent" && !streaming,
    })
}

// ---------------------------------------------------------------------------------------------
// Answering a turn

async fn turn(
    shared: Arc<Shared>,
    wire: WireApi,
    streaming_route: bool,
    target: &Target,
    request: &Value,
) -> Response {
    let scripted = lock(&shared.replies).pop_front();
    let responder = lock(&shared.responder).clone();
    let Some(reply) = scripted.or_else(|| responder.map(|respond| respond(request))) else {
        return error_response(wire, 500, "fake provider: no scripted reply left");
    };
    let streaming = match wire {
        WireApi::Gemini => streaming_route,
        _ => request.get("stream") == Some(&json!(true)),
    };
    let turn = Turn {
        n: shared.next_id.fetch_add(1, Ordering::SeqCst) + 1,
        model: target
            .model
            .clone()
            .or_else(|| {
                request
                    .get("model")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| "fake-model".to_owned()),
        include_usage: request.pointer("/stream_options/include_usage") == Some(&json!(true)),
        reply: &reply,
    };
    let mut response = match &reply.kind {
        Kind::Error { status, message } => error_response(wire, *status, message),
        Kind::HangBeforeHeaders => hang_forever().await,
        Kind::RawSse(payloads) => {
            let frames = payloads
                .iter()
                .map(|payload| Bytes::from(format!("data: {payload}\n\n")))
                .collect();
            streamed(shared, 200, SSE, frames, None, reply.delay, End::Finish)
        }
        Kind::Raw {
            status,
            content_type,
            body,
            per_event,
        } => {
            let frames = if *per_event {
                split_events(body)
            } else {
                vec![body.clone()]
            };
            let gate = reply.gate.clone().map(|gate| (1, gate));
            streamed(
                shared,
                *status,
                content_type,
                frames,
                gate,
                reply.delay,
                reply.end,
            )
        }
        Kind::Answer { .. } if streaming && !reply.not_streamed => {
            let frames = match wire {
                WireApi::ChatCompletions => chat_completions::stream(&turn),
                WireApi::Responses => Frames::from_events(&responses::stream(&turn)),
                WireApi::AnthropicMessages => Frames::from_events(&anthropic::stream(&turn)),
                WireApi::Gemini => Frames::from_events(&gemini::stream(&turn)),
            };
            sse_reply(shared, &reply, frames)
        }
        // A server that does not stream has nothing to stall after.
        Kind::Answer { .. } if reply.end == End::Hang => hang_forever().await,
        Kind::Answer { .. } => {
            let body = match wire {
                WireApi::ChatCompletions => chat_completions::whole(&turn).to_string(),
                WireApi::Responses => responses::whole(&turn).to_string(),
                WireApi::AnthropicMessages => anthropic::whole(&turn),
                // `streamGenerateContent` without `alt=sse` answers a JSON array of chunks.
                WireApi::Gemini if target.json_array => {
                    let chunks: Vec<String> =
                        gemini::stream(&turn).into_iter().map(|e| e.data).collect();
                    format!("[{}]", chunks.join(",\n"))
                }
                WireApi::Gemini => gemini::whole(&turn),
            };
            json_response(200, body)
        }
    };
    for (name, value) in &reply.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}

const SSE: &str = "text/event-stream; charset=utf-8";

/// The SSE response of a rendered answer, with the reply's gate, delay and end applied.
fn sse_reply(shared: Arc<Shared>, reply: &Reply, mut frames: Frames) -> Response {
    if reply.end != End::Finish {
        frames.retain(|part| part != Part::Closing);
    }
    let gate = reply.gate.clone().map(|gate| {
        let first_delta = frames.parts().position(|part| part == Part::Delta);
        let opening = frames
            .parts()
            .take_while(|part| *part == Part::Opening)
            .count();
        (first_delta.map_or(opening, |at| at + 1), gate)
    });
    let frames = frames.into_chunks();
    streamed(shared, 200, SSE, frames, gate, reply.delay, reply.end)
}

/// A recorded body cut after each SSE event (a blank line, `\n\n` or `\r\n\r\n`).
fn split_events(body: &Bytes) -> Vec<Bytes> {
    let mut frames = Vec::new();
    let mut start = 0;
    let mut at = 0;
    while at < body.len() {
        let rest = &body[at..];
        let boundary = if rest.starts_with(b"\r\n\r\n") {
            4
        } else if rest.starts_with(b"\n\n") {
            2
        } else {
            0
        };
        if boundary > 0 {
            frames.push(body.slice(start..at + boundary));
            at += boundary;
            start = at;
        } else {
            at += 1;
        }
    }
    if start < body.len() {
        frames.push(body.slice(start..));
    }
    frames
}

async fn hang_forever() -> Response {
    std::future::pending::<()>().await;
    StatusCode::GATEWAY_TIMEOUT.into_response()
}

// ---------------------------------------------------------------------------------------------
// Sending a streamed body

/// A chunked response sending `frames` one chunk each: `delay` before every chunk after the
/// first, a stop at `gate` (after that many frames) until it opens, and the `end`.
fn streamed(
    shared: Arc<Shared>,
    status: u16,
    content_type: &str,
    frames: Vec<Bytes>,
    gate: Option<(usize, Gate)>,
    delay: Duration,
    end: End,
) -> Response {
    let transmit = Transmit {
        frames: frames.into(),
        sent: 0,
        delay,
        gate,
        end,
        watch: DropWatch {
            shared,
            finished: false,
        },
    };
    let body = futures::stream::unfold(transmit, |mut transmit| async move {
        if let Some((after, gate)) = &transmit.gate
            && transmit.sent == *after
        {
            gate.wait().await;
            transmit.gate = None;
        }
        let Some(frame) = transmit.frames.pop_front() else {
            match transmit.end {
                End::Finish => {}
                End::Hang => std::future::pending::<()>().await,
                End::Cut => {
                    // Let what was sent leave the server's buffer first (hyper flushes while
                    // the body is pending), then break the body off: hyper closes the
                    // connection without the last chunk.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    transmit.watch.finish();
                    transmit.end = End::Finish;
                    let cut = std::io::Error::other("fake provider: cut mid-stream");
                    return Some((Err(cut), transmit));
                }
            }
            transmit.watch.finish();
            return None;
        };
        if transmit.sent > 0 && !transmit.delay.is_zero() {
            tokio::time::sleep(transmit.delay).await;
        }
        transmit.sent += 1;
        Some((Ok::<_, std::io::Error>(frame), transmit))
    });
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(content_type)
            .unwrap_or_else(|_| HeaderValue::from_static("application/octet-stream")),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The state of one streamed body being sent.
struct Transmit {
    frames: VecDeque<Bytes>,
    sent: usize,
    delay: Duration,
    gate: Option<(usize, Gate)>,
    end: End,
    watch: DropWatch,
}

/// Counts a stream as dropped when its body goes away before the end.
struct DropWatch {
    shared: Arc<Shared>,
    finished: bool,
}

impl DropWatch {
    fn finish(&mut self) {
        self.finished = true;
    }
}

impl Drop for DropWatch {
    fn drop(&mut self) {
        if !self.finished {
            self.shared.dropped_streams.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_pick_the_wire() {
        let none = HeaderMap::new();
        let mut anthropic = HeaderMap::new();
        anthropic.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
        let turn = |path: &str, query: Option<&str>| {
            route(&Method::POST, path, query, &none).map(|target| (target.route, target.model))
        };
        let stream = |wire| Route::Turn {
            wire,
            streaming: true,
        };
        assert_eq!(
            turn("/v1/chat/completions", None),
            Some((stream(WireApi::ChatCompletions), None))
        );
        assert_eq!(
            turn("/v1/responses", None),
            Some((stream(WireApi::Responses), None))
        );
        assert_eq!(
            turn("/v1/messages", None),
            Some((stream(WireApi::AnthropicMessages), None))
        );
        assert_eq!(
            turn(
                "/v1beta/models/x%2Fy:streamGenerateContent",
                Some("alt=sse")
            ),
            Some((stream(WireApi::Gemini), Some("x/y".to_owned())))
        );
        let whole = Route::Turn {
            wire: WireApi::Gemini,
            streaming: false,
        };
        assert_eq!(
            turn("/v1beta/models/g:streamGenerateContent", None),
            Some((whole.clone(), Some("g".to_owned())))
        );
        assert_eq!(
            turn("/v1beta/models/g:generateContent", None),
            Some((whole, Some("g".to_owned())))
        );
        assert!(turn("/v1beta/models/g:countTokens", None).is_none());
        assert!(turn("/v2/else", None).is_none());
        let list = |path: &str, headers: &HeaderMap| {
            route(&Method::GET, path, None, headers).map(|target| target.route)
        };
        let listed = |wire| Some(Route::ModelList { wire });
        assert_eq!(list("/v1/models", &none), listed(WireApi::ChatCompletions));
        assert_eq!(
            list("/v1/models", &anthropic),
            listed(WireApi::AnthropicMessages)
        );
        assert_eq!(list("/v1beta/models", &none), listed(WireApi::Gemini));
        assert!(list("/v1/chat/completions", &none).is_none());
    }

    #[test]
    fn queries_are_decoded() {
        assert_eq!(
            query_param(Some("a=1&after_id=m%2F1&b"), "after_id").as_deref(),
            Some("m/1")
        );
        assert_eq!(query_param(Some("b"), "b").as_deref(), Some(""));
        assert_eq!(query_param(None, "a"), None);
        assert_eq!(percent_decode("50%"), "50%");
        assert_eq!(percent_decode("a+b%20c"), "a b c");
    }

    #[test]
    fn recorded_bodies_split_after_each_event() {
        let body = Bytes::from_static(b"event: a\ndata: 1\n\ndata: 2\r\n\r\ndata: 3");
        let frames = split_events(&body);
        assert_eq!(
            frames,
            [
                Bytes::from_static(b"event: a\ndata: 1\n\n"),
                Bytes::from_static(b"data: 2\r\n\r\n"),
                Bytes::from_static(b"data: 3"),
            ]
        );
    }
}
