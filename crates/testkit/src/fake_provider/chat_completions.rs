//! OpenAI Chat Completions (`POST {base}/chat/completions`), as OpenAI sends it.
//!
//! Streamed (`"stream": true`): `data:` lines only: a first chunk with the role, content deltas,
//! tool-call deltas (index, id, type and name first, then argument pieces), a chunk with the
//! `finish_reason`, a usage chunk with `"choices": []` when `stream_options.include_usage` is
//! true, then `data: [DONE]`. Otherwise one `chat.completion` JSON. Reasoning blocks are not
//! part of this wire API and are not sent. Errors (shared with the Responses API) are
//! `{"error": {"message", "type", "param", "code"}}`.

use serde_json::{Value, json};

use super::render::{CREATED, Event, Part, Turn};
use super::reply::{ScriptedCall, split_arguments};

/// The OpenAI error envelope.
pub(super) fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        401 => "authentication_error",
        429 => "rate_limit_error",
        400..=499 => "invalid_request_error",
        _ => "server_error",
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}

fn id(turn: &Turn<'_>) -> String {
    format!("chatcmpl-fake-{}", turn.n)
}

fn chunk(turn: &Turn<'_>, choices: Value) -> Value {
    let mut chunk = json!({
        "id": id(turn),
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": turn.model,
        "system_fingerprint": "fp_fake",
        "choices": choices,
    });
    if turn.include_usage {
        chunk["usage"] = Value::Null;
    }
    chunk
}

fn delta(turn: &Turn<'_>, delta: Value, finish_reason: Option<&str>) -> Value {
    chunk(
        turn,
        json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}]),
    )
}

/// The SSE events of a streamed answer.
pub(super) fn stream(turn: &Turn<'_>) -> Vec<Event> {
    let reply = turn.reply;
    let (text, calls) = reply.answer();
    let content = if calls.is_empty() || !text.is_empty() {
        json!("")
    } else {
        Value::Null
    };
    let role = json!({"role": "assistant", "content": content, "refusal": null});
    let mut events = vec![Event::data(&delta(turn, role, None), Part::Opening)];
    let mut deltas = 0;
    for piece in text {
        let data = delta(turn, json!({"content": piece}), None);
        events.push(Event::data(&data, Part::Delta));
        deltas += 1;
    }
    for (index, call) in calls.iter().enumerate() {
        let first = json!({"tool_calls": [{
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }]});
        events.push(Event::data(&delta(turn, first, None), Part::Delta));
        for piece in split_arguments(&call.arguments) {
            let more = json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]});
            events.push(Event::data(&delta(turn, more, None), Part::Delta));
            deltas += 1;
        }
    }
    let finish = delta(turn, json!({}), Some(&reply.finish()));
    events.push(Event::data(&finish, Part::Closing));
    if turn.include_usage {
        let mut usage_chunk = chunk(turn, json!([]));
        usage_chunk["usage"] = usage(turn, deltas);
        events.push(Event::data(&usage_chunk, Part::Closing));
    }
    events.push(Event {
        name: None,
        data: "[DONE]".to_owned(),
        part: Part::Closing,
    });
    events
}

/// The `chat.completion` of a non-streamed answer.
pub(super) fn whole(turn: &Turn<'_>) -> Value {
    let reply = turn.reply;
    let (text, calls) = reply.answer();
    let content = if text.is_empty() && !calls.is_empty() {
        Value::Null
    } else {
        Value::String(text.concat())
    };
    let mut message =
        json!({"role": "assistant", "content": content, "refusal": null, "annotations": []});
    if !calls.is_empty() {
        message["tool_calls"] = calls.iter().map(whole_call).collect();
    }
    let deltas = text.len() + calls.len();
    json!({
        "id": id(turn),
        "object": "chat.completion",
        "created": CREATED,
        "model": turn.model,
        "system_fingerprint": "fp_fake",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": reply.finish(),
        }],
        "usage": usage(turn, deltas),
    })
}

fn whole_call(call: &ScriptedCall) -> Value {
    json!({
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    })
}

fn usage(turn: &Turn<'_>, deltas: usize) -> Value {
    let counts = turn.reply.counts(deltas as u64);
    json!({
        "prompt_tokens": counts.input,
        "completion_tokens": counts.output,
        "total_tokens": counts.input + counts.output,
        "prompt_tokens_details": {"cached_tokens": counts.cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": counts.reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    })
}
