//! `fake-provider`: the scripted fake model provider ([`agentd_testkit::FakeProvider`]) as a
//! process, for test suites that drive a real `agentd` binary (the Python client suite in
//! `tests/clients/`).
//!
//! It starts two HTTP servers on loopback, prints three lines on stdout and then serves until
//! it is killed:
//!
//! ```text
//! listening on http://127.0.0.1:PORT1     the fake provider (every wire API, by route)
//! base_url http://127.0.0.1:PORT1/v1      the value for OPENAI_BASE_URL
//! control_url http://127.0.0.1:PORT2      the control API below
//! ```
//!
//! The same server answers Chat Completions and Responses under `base_url`, and Anthropic
//! Messages and Gemini under the `listening on` origin (`ANTHROPIC_BASE_URL`,
//! `GEMINI_BASE_URL`); each scripted reply is rendered in the format of the route that takes it.
//!
//! Control API (JSON):
//!
//! - `POST /script` with an array of replies, queued in order, one per upstream request.
//!   A reply is an object with exactly one of
//!   `{"text": "Hello world"}` (streamed word by word),
//!   `{"text_chunks": ["Hel", "lo"]}`,
//!   `{"tool_calls": [["call_1", "get_order_status", "{\"order_id\":\"ORD-10042\"}"]]}`,
//!   `{"error": [500, "message"]}`,
//!   `{"raw_sse": ["{...}", "[DONE]"]}`,
//!   `{"hang": true}` (head and first chunk, then nothing),
//!   `{"hang_before_headers": true}`,
//!   and optionally the modifiers `"usage": [input, output]`, `"cached_tokens": n`,
//!   `"reasoning_tokens": n`, `"finish_reason": "length"`,
//!   `"then_tool_calls": [[id, name, arguments], …]`, `"delay_ms": n`, `"then_hang": true`.
//!   Answers `{"pending_replies": n}`; an unknown key or a malformed reply is a 400 and queues
//!   nothing.
//! - `GET /requests`: the request bodies received since the last reset, in order.
//! - `GET /headers`: their headers, as objects `{name: value}` (lower-case names).
//! - `GET /pending`: `{"pending_replies": n}`.
//! - `POST /reset`: forgets the requests received so far and discards unused replies; answers
//!   `{"discarded_replies": n}`.
//!
//! Load mode, for a load generator against a separate agentd process (`scripts/bench-process`):
//! `fake-provider --answer-tokens T [--answer-interval-ms MS] [--answer-prose 1]` answers every
//! turn that finds no scripted reply with the text `" tok0 tok1 …"` in T deltas (MS
//! milliseconds apart, default 0) and keeps no record of the requests (the control API's
//! `/requests` and `/headers` stay empty), so its memory stays flat over millions of requests.
//! `--answer-prose 1` writes the deltas as a model's markdown often is: every other one holds a
//! newline, a quote or a non-ASCII letter (text the JSON writers must escape or that is not
//! ASCII), the rest plain words.

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use agentd_testkit::{FakeProvider, Reply};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// What the control handlers share.
struct Control {
    fake: FakeProvider,
}

/// One scripted reply as the control API accepts it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedReply {
    text: Option<String>,
    text_chunks: Option<Vec<String>>,
    tool_calls: Option<Vec<(String, String, String)>>,
    error: Option<(u16, String)>,
    raw_sse: Option<Vec<String>>,
    #[serde(default)]
    hang: bool,
    #[serde(default)]
    hang_before_headers: bool,
    usage: Option<(u64, u64)>,
    cached_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
    finish_reason: Option<String>,
    then_tool_calls: Option<Vec<(String, String, String)>>,
    delay_ms: Option<u64>,
    #[serde(default)]
    then_hang: bool,
}

fn borrowed(calls: &[(String, String, String)]) -> Vec<(&str, &str, &str)> {
    calls
        .iter()
        .map(|(id, name, arguments)| (id.as_str(), name.as_str(), arguments.as_str()))
        .collect()
}

impl ScriptedReply {
    fn into_reply(self) -> Result<Reply, String> {
        let mut kinds = Vec::new();
        if let Some(text) = &self.text {
            kinds.push(Reply::text(text));
        }
        if let Some(chunks) = &self.text_chunks {
            kinds.push(Reply::text_chunks(chunks.clone()));
        }
        if let Some(calls) = &self.tool_calls {
            kinds.push(Reply::tool_calls(borrowed(calls)));
        }
        if let Some((status, message)) = &self.error {
            kinds.push(Reply::error(*status, message));
        }
        if let Some(payloads) = &self.raw_sse {
            kinds.push(Reply::raw_sse(payloads.clone()));
        }
        if self.hang {
            kinds.push(Reply::hang());
        }
        if self.hang_before_headers {
            kinds.push(Reply::hang_before_headers());
        }
        if kinds.len() != 1 {
            return Err(format!(
                "a reply needs exactly one of text, text_chunks, tool_calls, error, raw_sse, \
                 hang, hang_before_headers; got {}",
                kinds.len()
            ));
        }
        let mut reply = kinds.remove(0);
        if let Some((input, output)) = self.usage {
            reply = reply.usage(input, output);
        }
        if let Some(tokens) = self.cached_tokens {
            reply = reply.cached_tokens(tokens);
        }
        if let Some(tokens) = self.reasoning_tokens {
            reply = reply.reasoning_tokens(tokens);
        }
        if let Some(reason) = &self.finish_reason {
            reply = reply.finish_reason(reason);
        }
        if let Some(calls) = &self.then_tool_calls {
            reply = reply.then_tool_calls(borrowed(calls));
        }
        if let Some(ms) = self.delay_ms {
            reply = reply.delay_between_chunks(Duration::from_millis(ms));
        }
        if self.then_hang {
            reply = reply.then_hang();
        }
        Ok(reply)
    }
}

fn bad_request(message: String) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({"error": message}))).into_response()
}

async fn script(State(control): State<Arc<Control>>, body: axum::body::Bytes) -> Response {
    let replies: Vec<ScriptedReply> = match serde_json::from_slice(&body) {
        Ok(replies) => replies,
        Err(err) => return bad_request(format!("expected an array of replies: {err}")),
    };
    let mut ready = Vec::new();
    for (at, reply) in replies.into_iter().enumerate() {
        match reply.into_reply() {
            Ok(reply) => ready.push(reply),
            Err(err) => return bad_request(format!("reply {at}: {err}")),
        }
    }
    for reply in ready {
        control.fake.push(reply);
    }
    Json(json!({"pending_replies": control.fake.pending_replies()})).into_response()
}

async fn requests(State(control): State<Arc<Control>>) -> Json<Vec<Value>> {
    Json(control.fake.requests())
}

async fn headers(State(control): State<Arc<Control>>) -> Json<Vec<Value>> {
    let all = control.fake.headers();
    let as_json = all
        .iter()
        .map(|headers| {
            let map: Map<String, Value> = headers
                .iter()
                .map(|(name, value)| {
                    let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                    (name.as_str().to_owned(), Value::String(value))
                })
                .collect();
            Value::Object(map)
        })
        .collect();
    Json(as_json)
}

async fn pending(State(control): State<Arc<Control>>) -> Json<Value> {
    Json(json!({"pending_replies": control.fake.pending_replies()}))
}

async fn reset(State(control): State<Arc<Control>>) -> Json<Value> {
    Json(json!({"discarded_replies": control.fake.reset()}))
}

/// The load mode's answer, from the command line (`None` without `--answer-tokens`).
fn load_answer(mut args: impl Iterator<Item = String>) -> Result<Option<Reply>, String> {
    let mut tokens = None;
    let mut interval = Duration::ZERO;
    let mut prose = false;
    while let Some(name) = args.next() {
        let value = args.next().ok_or_else(|| format!("{name} needs a value"))?;
        let number = value
            .parse::<u64>()
            .map_err(|_| format!("{name}: {value:?} is not a number"))?;
        match name.as_str() {
            "--answer-tokens" => tokens = Some(number),
            "--answer-interval-ms" => interval = Duration::from_millis(number),
            "--answer-prose" => prose = number != 0,
            _ => return Err(format!("unknown option {name}")),
        }
    }
    Ok(tokens.map(|tokens| {
        Reply::text_chunks((0..tokens).map(|i| match (prose, i % 8) {
            (true, 1) => format!("\n\n- tok{i}"),
            (true, 3) => format!(" \"tok{i}\""),
            (true, 5) => format!(" tök{i}"),
            (true, 7) => format!(" tok{i}.\n"),
            _ => format!(" tok{i}"),
        }))
        .delay_between_chunks(interval)
    }))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let answer = load_answer(std::env::args().skip(1))
        .map_err(|message| format!("fake-provider: {message}"))?;
    let fake = FakeProvider::start().await;
    if let Some(answer) = answer {
        fake.set_recording(false);
        fake.respond_with(move |_| answer.clone());
    }
    let provider_addr = fake.addr();
    let base_url = fake.base_url();
    let control = Arc::new(Control { fake });
    let app = Router::new()
        .route("/script", post(script))
        .route("/requests", get(requests))
        .route("/headers", get(headers))
        .route("/pending", get(pending))
        .route("/reset", post(reset))
        .with_state(control);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let control_addr = listener.local_addr()?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on http://{provider_addr}")?;
        writeln!(out, "base_url {base_url}")?;
        writeln!(out, "control_url http://{control_addr}")?;
        out.flush()?;
    }
    axum::serve(listener, app).await?;
    Ok(())
}
