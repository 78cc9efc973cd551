//! Anthropic Messages (`POST {base}/v1/messages`), as Anthropic documents its stream.
//!
//! Streamed (`"stream": true`): each event as `event: {type}` + `data: {json}`:
//! `message_start` (with the input usage: `input_tokens` excludes the cached prefix, which is
//! `cache_read_input_tokens`), a `ping`, then one content block per reasoning block (`thinking`
//! with `thinking_delta` pieces and a `signature_delta`, or a whole `redacted_thinking`), the text
//! block (`text_delta` pieces), one `tool_use` block per call (`input_json_delta` pieces), each
//! closed by `content_block_stop`; then `message_delta` (the `stop_reason` and the output
//! tokens) and `message_stop`. Otherwise one `message` object. Errors are
//! `{"type": "error", "error": {"type", "message"}, "request_id"}`.

use serde_json::{Value, json};

use super::render::{Event, Part, Turn, raw_slot, with_raw};
use super::reply::{split_arguments, split_words};

/// Anthropic's error envelope, with the error type it documents for each status.
pub(super) fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message},
        "request_id": "req_fake"})
}

fn stop_reason(turn: &Turn<'_>) -> String {
    match turn.reply.finish().as_str() {
        "stop" => "end_turn".to_owned(),
        "tool_calls" => "tool_use".to_owned(),
        "length" => "max_tokens".to_owned(),
        "content_filter" => "refusal".to_owned(),
        other => other.to_owned(),
    }
}

/// The usage object: `input_tokens` without the cached prefix.
fn usage(turn: &Turn<'_>, output_tokens: u64) -> Value {
    let counts = turn.reply.counts(turn.reply.delta_count());
    json!({
        "input_tokens": counts.input.saturating_sub(counts.cached),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": counts.cached,
        "output_tokens": output_tokens,
    })
}

fn message(turn: &Turn<'_>, content: Vec<Value>, stop_reason: Value, usage: Value) -> Value {
    json!({
        "id": format!("msg_fake_{}", turn.n),
        "type": "message",
        "role": "assistant",
        "model": turn.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": usage,
    })
}

/// The SSE events of a streamed answer.
pub(super) fn stream(turn: &Turn<'_>) -> Vec<Event> {
    let reply = turn.reply;
    let (text, calls) = reply.answer();
    let mut events = Vec::new();
    let mut push = |data: Value, part: Part| events.push(Event::typed(&data, part));
    let start = message(turn, Vec::new(), Value::Null, usage(turn, 1));
    push(
        json!({"type": "message_start", "message": start}),
        Part::Opening,
    );
    push(json!({"type": "ping"}), Part::Opening);
    let mut index = 0;
    for thought in &reply.reasoning {
        match &thought.text {
            Some(thinking) => {
                push(
                    json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
                    Part::Content,
                );
                for piece in split_words(thinking) {
                    push(
                        json!({"type": "content_block_delta", "index": index,
                            "delta": {"type": "thinking_delta", "thinking": piece}}),
                        Part::Content,
                    );
                }
                push(
                    json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "signature_delta", "signature": thought.signature}}),
                    Part::Content,
                );
            }
            None => push(
                json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "redacted_thinking", "data": thought.signature}}),
                Part::Content,
            ),
        }
        push(
            json!({"type": "content_block_stop", "index": index}),
            Part::Content,
        );
        index += 1;
    }
    if !text.is_empty() {
        push(
            json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "text", "text": ""}}),
            Part::Content,
        );
        for piece in text {
            push(
                json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": piece}}),
                Part::Delta,
            );
        }
        push(
            json!({"type": "content_block_stop", "index": index}),
            Part::Content,
        );
        index += 1;
    }
    for call in calls {
        push(
            json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": call.id, "name": call.name,
                    "input": {}}}),
            Part::Delta,
        );
        for piece in split_arguments(&call.arguments) {
            push(
                json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece}}),
                Part::Delta,
            );
        }
        push(
            json!({"type": "content_block_stop", "index": index}),
            Part::Content,
        );
        index += 1;
    }
    let counts = reply.counts(reply.delta_count());
    push(
        json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason(turn), "stop_sequence": null},
            "usage": {"output_tokens": counts.output}}),
        Part::Closing,
    );
    push(json!({"type": "message_stop"}), Part::Closing);
    events
}

/// The `message` of a non-streamed answer (call inputs keep the scripted arguments' bytes).
pub(super) fn whole(turn: &Turn<'_>) -> String {
    let reply = turn.reply;
    let (text, calls) = reply.answer();
    let mut content: Vec<Value> = reply
        .reasoning
        .iter()
        .map(|thought| match &thought.text {
            Some(thinking) => {
                json!({"type": "thinking", "thinking": thinking, "signature": thought.signature})
            }
            None => json!({"type": "redacted_thinking", "data": thought.signature}),
        })
        .collect();
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text.concat()}));
    }
    let mut raws = Vec::new();
    for call in calls {
        content.push(json!({"type": "tool_use", "id": call.id, "name": call.name,
            "input": raw_slot(raws.len())}));
        raws.push(if call.arguments.trim().is_empty() {
            "{}"
        } else {
            call.arguments.as_str()
        });
    }
    let counts = reply.counts(reply.delta_count());
    let body = message(
        turn,
        content,
        json!(stop_reason(turn)),
        usage(turn, counts.output),
    );
    with_raw(&body, &raws)
}
