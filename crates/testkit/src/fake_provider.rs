//! A scripted fake model provider: a real HTTP server on `127.0.0.1:0` speaking the OpenAI Chat
//! Completions wire API, so adapters and the whole app are exercised over real sockets.
//!
//! Each upstream request takes the next [`Reply`] from a FIFO queue. Streaming requests
//! (`"stream": true`) get SSE exactly as OpenAI sends it: a first chunk with the role, content
//! deltas, tool-call deltas (index, id, type and name first, then argument pieces), a chunk with
//! the `finish_reason`, a usage chunk with `"choices": []` when
//! `stream_options.include_usage` is true, then `data: [DONE]`. Other requests get one
//! `chat.completion` JSON. An empty queue answers HTTP 500 "fake provider: no scripted reply
//! left", so a test that scripts too few replies fails loudly.
//!
//! ```no_run
//! # async fn demo() {
//! use agentd_testkit::fake_provider::{FakeProvider, Reply};
//!
//! let fake = FakeProvider::start().await;
//! fake.push(Reply::tool_calls(vec![("call_1", "get_order_status", r#"{"order_id":"ORD-10042"}"#)]));
//! fake.push(Reply::text("Your order has shipped.").usage(120, 6));
//! // point the adapter at fake.base_url(), run, then inspect fake.requests()
//! # }
//! ```

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// The `created` timestamp of every fake completion (fixed, for stable snapshots).
const CREATED: u64 = 1_700_000_000;
/// Default prompt token count reported when a reply does not set one.
const DEFAULT_INPUT_TOKENS: u64 = 10;

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
    /// Scripted replies, one per upstream request, in order.
    replies: Mutex<VecDeque<Reply>>,
    /// Every request body received (JSON; a body that is not JSON is kept as a string).
    requests: Mutex<Vec<Value>>,
    /// The headers of every request received, in the same order.
    headers: Mutex<Vec<HeaderMap>>,
    /// Streams whose client went away before the last byte.
    dropped_streams: AtomicUsize,
    /// Numbers the completion ids.
    next_id: AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding the lock has already failed; keep the data readable.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
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
            .route("/v1/chat/completions", post(chat_completions))
            .fallback(unknown_route)
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

    /// `http://127.0.0.1:PORT/v1`, the value for `OPENAI_BASE_URL` or a provider's `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues the reply for the next request (first in, first out).
    pub fn push(&self, reply: Reply) {
        lock(&self.shared.replies).push_back(reply);
    }

    /// Forgets unused replies and everything received so far; returns how many replies were
    /// discarded.
    pub fn reset(&self) -> usize {
        let discarded = {
            let mut replies = lock(&self.shared.replies);
            let n = replies.len();
            replies.clear();
            n
        };
        lock(&self.shared.requests).clear();
        lock(&self.shared.headers).clear();
        discarded
    }

    /// How many scripted replies have not been used yet.
    pub fn pending_replies(&self) -> usize {
        lock(&self.shared.replies).len()
    }

    /// Every request body received, in order.
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.requests).clone()
    }

    /// The headers of every request received, in order.
    pub fn headers(&self) -> Vec<HeaderMap> {
        lock(&self.shared.headers).clone()
    }

    /// How many streamed replies were cut short because the client went away (disconnect and
    /// cancellation tests).
    pub fn dropped_streams(&self) -> usize {
        self.shared.dropped_streams.load(Ordering::SeqCst)
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// One scripted answer to one upstream request. Build with the constructors, then adjust with
/// the modifiers: `Reply::text("Hi").usage(12, 1).finish_reason("length")`.
#[derive(Debug, Clone)]
pub struct Reply {
    kind: Kind,
    usage: Option<(u64, u64)>,
    cached_tokens: u64,
    reasoning_tokens: u64,
    finish_reason: Option<String>,
    delay: Duration,
    /// Stall after the deltas: no finish chunk, no end, ever.
    hang_after: bool,
}

#[derive(Debug, Clone)]
enum Kind {
    /// Text deltas, then tool calls (either may be empty).
    Answer {
        text: Vec<String>,
        calls: Vec<ScriptedCall>,
    },
    Error {
        status: u16,
        message: String,
    },
    /// Not even a response head.
    HangBeforeHeaders,
    /// These SSE `data` payloads verbatim, nothing added.
    RawSse(Vec<String>),
}

#[derive(Debug, Clone)]
struct ScriptedCall {
    id: String,
    name: String,
    arguments: String,
}

impl Reply {
    fn new(kind: Kind) -> Reply {
        Reply {
            kind,
            usage: None,
            cached_tokens: 0,
            reasoning_tokens: 0,
            finish_reason: None,
            delay: Duration::ZERO,
            hang_after: false,
        }
    }

    /// A text answer, streamed word by word (`"Hello world"` as `"Hello"`, `" world"`).
    pub fn text(text: &str) -> Reply {
        Reply::text_chunks(split_words(text))
    }

    /// A text answer streamed as exactly these deltas.
    pub fn text_chunks<S: Into<String>>(chunks: impl IntoIterator<Item = S>) -> Reply {
        Reply::new(Kind::Answer {
            text: chunks.into_iter().map(Into::into).collect(),
            calls: Vec::new(),
        })
    }

    /// Tool calls `(id, name, arguments)` in one turn; each call's arguments are streamed in
    /// several pieces. The finish reason is `tool_calls`.
    pub fn tool_calls(calls: Vec<(&str, &str, &str)>) -> Reply {
        Reply::new(Kind::Answer {
            text: Vec::new(),
            calls: scripted_calls(calls),
        })
    }

    /// An HTTP error with OpenAI's error body `{"error": {"message", "type", …}}`.
    pub fn error(status: u16, message: &str) -> Reply {
        Reply::new(Kind::Error {
            status,
            message: message.to_owned(),
        })
    }

    /// Sends the response head and the first chunk, then nothing, ever (idle timeouts).
    pub fn hang() -> Reply {
        Reply::text_chunks(Vec::<String>::new()).then_hang()
    }

    /// Never answers at all, not even the response head (timeouts before the first byte).
    pub fn hang_before_headers() -> Reply {
        Reply::new(Kind::HangBeforeHeaders)
    }

    /// Streams these `data:` payloads verbatim (`"[DONE]"` included only if given), for
    /// malformed or cut-off streams.
    pub fn raw_sse<S: Into<String>>(payloads: impl IntoIterator<Item = S>) -> Reply {
        Reply::new(Kind::RawSse(payloads.into_iter().map(Into::into).collect()))
    }

    /// Stalls after this answer's deltas: no finish chunk and no end, ever (a stream that stops
    /// mid-answer; proves deltas arrive before the turn ends).
    pub fn then_hang(mut self) -> Reply {
        self.hang_after = true;
        self
    }

    /// Adds tool calls after the text of this answer (text and calls in one turn).
    pub fn then_tool_calls(mut self, more: Vec<(&str, &str, &str)>) -> Reply {
        if let Kind::Answer { calls, .. } = &mut self.kind {
            calls.extend(scripted_calls(more));
        }
        self
    }

    /// The reported usage: prompt and completion tokens (default: 10 and the number of
    /// deltas sent).
    pub fn usage(mut self, input_tokens: u64, output_tokens: u64) -> Reply {
        self.usage = Some((input_tokens, output_tokens));
        self
    }

    /// The reported `prompt_tokens_details.cached_tokens` (default 0).
    pub fn cached_tokens(mut self, tokens: u64) -> Reply {
        self.cached_tokens = tokens;
        self
    }

    /// The reported `completion_tokens_details.reasoning_tokens` (default 0).
    pub fn reasoning_tokens(mut self, tokens: u64) -> Reply {
        self.reasoning_tokens = tokens;
        self
    }

    /// The finish reason to send (default `stop`, or `tool_calls` when the answer has calls).
    pub fn finish_reason(mut self, reason: &str) -> Reply {
        self.finish_reason = Some(reason.to_owned());
        self
    }

    /// Waits this long before each chunk after the first (disconnect and streaming tests).
    pub fn delay_between_chunks(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

fn scripted_calls(calls: Vec<(&str, &str, &str)>) -> Vec<ScriptedCall> {
    calls
        .into_iter()
        .map(|(id, name, arguments)| ScriptedCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        })
        .collect()
}

/// `"Hello big world"` as `["Hello", " big", " world"]`, the way models stream words.
fn split_words(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut previous_was_space = true;
    for (at, c) in text.char_indices() {
        if c.is_whitespace() && !previous_was_space && at > start {
            pieces.push(text[start..at].to_owned());
            start = at;
        }
        previous_was_space = c.is_whitespace();
    }
    if start < text.len() {
        pieces.push(text[start..].to_owned());
    }
    pieces
}

/// Up to three pieces of about equal length (at least two when there are two characters).
fn split_arguments(arguments: &str) -> Vec<String> {
    let chars: Vec<char> = arguments.chars().collect();
    if chars.len() < 2 {
        return vec![arguments.to_owned()];
    }
    let size = chars.len().div_ceil(3).max(1);
    chars
        .chunks(size)
        .map(|piece| piece.iter().collect())
        .collect()
}

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = serde_json::from_slice::<Value>(&body);
    lock(&shared.requests).push(match &request {
        Ok(json) => json.clone(),
        Err(_) => Value::String(String::from_utf8_lossy(&body).into_owned()),
    });
    lock(&shared.headers).push(headers);
    let request = match request {
        Ok(json) => json,
        Err(err) => {
            return error_response(400, &format!("fake provider: the body is not JSON: {err}"));
        }
    };
    let Some(reply) = lock(&shared.replies).pop_front() else {
        return error_response(500, "fake provider: no scripted reply left");
    };
    let turn = Turn {
        id: format!(
            "chatcmpl-fake-{}",
            shared.next_id.fetch_add(1, Ordering::SeqCst) + 1
        ),
        model: request
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("fake-model")
            .to_owned(),
        include_usage: request.pointer("/stream_options/include_usage") == Some(&json!(true)),
    };
    let streaming = request.get("stream") == Some(&json!(true));
    match (&reply.kind, streaming) {
        (Kind::Error { status, message }, _) => error_response(*status, message),
        (Kind::HangBeforeHeaders, _) => hang_forever().await,
        (Kind::Answer { .. }, false) if reply.hang_after => hang_forever().await,
        (Kind::RawSse(payloads), _) => sse(shared, payloads.clone(), reply.delay, false),
        (Kind::Answer { text, calls }, true) => sse(
            shared,
            turn.stream(&reply, text, calls),
            reply.delay,
            reply.hang_after,
        ),
        (Kind::Answer { text, calls }, false) => {
            axum::Json(turn.completion(&reply, text, calls)).into_response()
        }
    }
}

async fn hang_forever() -> Response {
    std::future::pending::<()>().await;
    StatusCode::GATEWAY_TIMEOUT.into_response()
}

async fn unknown_route(method: Method, uri: Uri) -> Response {
    error_response(
        404,
        &format!("fake provider: no route for {method} {}", uri.path()),
    )
}

fn error_response(status: u16, message: &str) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let kind = match status.as_u16() {
        401 => "authentication_error",
        429 => "rate_limit_error",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    };
    let body = json!({"error": {"message": message, "type": kind, "param": null, "code": null}});
    (status, axum::Json(body)).into_response()
}

/// The per-request facts every chunk repeats.
struct Turn {
    id: String,
    model: String,
    include_usage: bool,
}

impl Turn {
    fn chunk(&self, choices: Value) -> Value {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": self.model,
            "system_fingerprint": "fp_fake",
            "choices": choices,
        });
        if self.include_usage {
            chunk["usage"] = Value::Null;
        }
        chunk
    }

    fn delta(&self, delta: Value, finish_reason: Option<&str>) -> String {
        self.chunk(
            json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}]),
        )
        .to_string()
    }

    fn role_chunk(&self, with_text: bool) -> String {
        let content = if with_text { json!("") } else { Value::Null };
        self.delta(
            json!({"role": "assistant", "content": content, "refusal": null}),
            None,
        )
    }

    /// The SSE `data` payloads of a streamed answer.
    fn stream(&self, reply: &Reply, text: &[String], calls: &[ScriptedCall]) -> Vec<String> {
        let mut payloads = vec![self.role_chunk(calls.is_empty() || !text.is_empty())];
        let mut deltas = 0;
        for piece in text {
            payloads.push(self.delta(json!({"content": piece}), None));
            deltas += 1;
        }
        for (index, call) in calls.iter().enumerate() {
            payloads.push(self.delta(
                json!({"tool_calls": [{
                    "index": index,
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }]}),
                None,
            ));
            for piece in split_arguments(&call.arguments) {
                payloads.push(self.delta(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                    None,
                ));
                deltas += 1;
            }
        }
        if reply.hang_after {
            return payloads;
        }
        payloads.push(self.delta(json!({}), Some(&finish_reason(reply, calls))));
        if self.include_usage {
            let mut usage_chunk = self.chunk(json!([]));
            usage_chunk["usage"] = usage(reply, deltas);
            payloads.push(usage_chunk.to_string());
        }
        payloads.push("[DONE]".to_owned());
        payloads
    }

    /// The `chat.completion` of a non-streamed answer.
    fn completion(&self, reply: &Reply, text: &[String], calls: &[ScriptedCall]) -> Value {
        let content = if text.is_empty() && !calls.is_empty() {
            Value::Null
        } else {
            Value::String(text.concat())
        };
        let mut message =
            json!({"role": "assistant", "content": content, "refusal": null, "annotations": []});
        if !calls.is_empty() {
            message["tool_calls"] = calls
                .iter()
                .map(|call| {
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    })
                })
                .collect();
        }
        let deltas = text.len() + calls.len();
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": CREATED,
            "model": self.model,
            "system_fingerprint": "fp_fake",
            "choices": [{
                "index": 0,
                "message": message,
                "logprobs": null,
                "finish_reason": finish_reason(reply, calls),
            }],
            "usage": usage(reply, deltas),
        })
    }
}

fn finish_reason(reply: &Reply, calls: &[ScriptedCall]) -> String {
    match &reply.finish_reason {
        Some(reason) => reason.clone(),
        None if calls.is_empty() => "stop".to_owned(),
        None => "tool_calls".to_owned(),
    }
}

fn usage(reply: &Reply, deltas: usize) -> Value {
    let (input, output) = reply.usage.unwrap_or((DEFAULT_INPUT_TOKENS, deltas as u64));
    json!({
        "prompt_tokens": input,
        "completion_tokens": output,
        "total_tokens": input + output,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": reply.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    })
}

/// An SSE response sending each payload as `data: {payload}\n\n`.
fn sse(shared: Arc<Shared>, payloads: Vec<String>, delay: Duration, hang: bool) -> Response {
    let transmit = Transmit {
        payloads: payloads.into(),
        delay,
        sent_any: false,
        hang,
        watch: DropWatch {
            shared,
            finished: false,
        },
    };
    let body = futures::stream::unfold(transmit, |mut transmit| async move {
        let Some(payload) = transmit.payloads.pop_front() else {
            if transmit.hang {
                std::future::pending::<()>().await;
            }
            transmit.watch.finish();
            return None;
        };
        if transmit.sent_any && !transmit.delay.is_zero() {
            tokio::time::sleep(transmit.delay).await;
        }
        transmit.sent_any = true;
        let frame = Bytes::from(format!("data: {payload}\n\n"));
        Some((Ok::<_, Infallible>(frame), transmit))
    });
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The state of one SSE body being sent.
struct Transmit {
    payloads: VecDeque<String>,
    delay: Duration,
    sent_any: bool,
    /// After the payloads, stay open forever instead of ending.
    hang: bool,
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
    fn words_keep_their_leading_space() {
        assert_eq!(split_words("Hello big world"), ["Hello", " big", " world"]);
        assert_eq!(split_words(" a  b "), [" a", "  b", " "]);
        assert!(split_words("").is_empty());
        assert_eq!(split_words("Hello big world").concat(), "Hello big world");
    }

    #[test]
    fn arguments_come_in_several_pieces() {
        let arguments = r#"{"order_id":"ORD-10042"}"#;
        let pieces = split_arguments(arguments);
        assert!(pieces.len() >= 2, "{pieces:?}");
        assert_eq!(pieces.concat(), arguments);
        assert_eq!(split_arguments("{}"), ["{", "}"]);
        assert_eq!(split_arguments(""), [""]);
    }
}
