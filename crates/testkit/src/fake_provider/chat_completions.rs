//! OpenAI Chat Completions (`POST {base}/chat/completions`), as OpenAI sends it.
//!
//! Streamed (`"stream": true`): `data:` lines only: a first chunk with the role, content deltas,
//! tool-call deltas (index, id, type and name first, then argument pieces), a chunk with the
//! `finish_reason`, a usage chunk with `"choices": []` when `stream_options.include_usage` is
//! true, then `data: [DONE]`. Otherwise one `chat.completion` JSON. Reasoning blocks are not
//! part of this wire API and are not sent. Errors (shared with the Responses API) are
//! `{"error": {"message", "type", "param", "code"}}`.

use serde_json::{Value, json};

use super::render::{CREATED, Event, Frames, Part, Turn};
use super::reply::{ScriptedCall, split_arguments};
use super::template::{self, Template};

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

/// The SSE frames of a streamed answer. The text deltas, all but the text the same, are
/// written from one [`Template`] serialized once per answer; every other chunk is serialized
/// whole. The bytes are those of each chunk serialized by serde (the tests check that against
/// the chunks built and serialized one by one).
pub(super) fn stream(turn: &Turn<'_>) -> Frames {
    let reply = turn.reply;
    let (text, calls) = reply.answer();
    let content = if calls.is_empty() || !text.is_empty() {
        json!("")
    } else {
        Value::Null
    };
    let role = json!({"role": "assistant", "content": content, "refusal": null});
    let opening = Event::data(&delta(turn, role, None), Part::Opening);
    let template = Template::new(&delta(turn, json!({"content": template::slot()}), None));
    let per_delta = template.as_ref().map_or(opening.data.len(), Template::len) + 8;
    let text_bytes: usize = text.iter().map(|piece| piece.len() + 8).sum();
    let mut frames =
        Frames::with_capacity((text.len() + 4) * per_delta + text_bytes, text.len() + 4);
    frames.push(&opening);
    let mut deltas = 0;
    for piece in text {
        match &template {
            Some(template) => frames.push_data(Part::Delta, |out| template.write(out, piece)),
            None => {
                let data = delta(turn, json!({"content": piece}), None);
                frames.push(&Event::data(&data, Part::Delta));
            }
        }
        deltas += 1;
    }
    for (index, call) in calls.iter().enumerate() {
        let first = json!({"tool_calls": [{
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }]});
        frames.push(&Event::data(&delta(turn, first, None), Part::Delta));
        for piece in split_arguments(&call.arguments) {
            let more = json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]});
            frames.push(&Event::data(&delta(turn, more, None), Part::Delta));
            deltas += 1;
        }
    }
    let finish = delta(turn, json!({}), Some(&reply.finish()));
    frames.push(&Event::data(&finish, Part::Closing));
    if turn.include_usage {
        let mut usage_chunk = chunk(turn, json!([]));
        usage_chunk["usage"] = usage(turn, deltas);
        frames.push(&Event::data(&usage_chunk, Part::Closing));
    }
    frames.push_data(Part::Closing, |out| out.extend_from_slice(b"[DONE]"));
    frames
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake_provider::Reply;

    /// The stream as it was built before the template: each chunk a `Value`, serialized.
    fn stream_serialized_one_by_one(turn: &Turn<'_>) -> Vec<Event> {
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
                let more =
                    json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]});
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

    /// Each frame's bytes and part, then checks the bytes against `format!`'s `data:` framing.
    fn frames_of(frames: Frames) -> Vec<(String, Part)> {
        let parts: Vec<Part> = frames.parts().collect();
        let chunks = frames.into_chunks();
        assert_eq!(chunks.len(), parts.len());
        chunks
            .iter()
            .zip(parts)
            .map(|(chunk, part)| (String::from_utf8_lossy(chunk).into_owned(), part))
            .collect()
    }

    #[test]
    fn the_templated_stream_is_the_chunks_serialized_one_by_one() {
        let tokens = |n: usize| Reply::text_chunks((0..n).map(|i| format!(" tok{i}")));
        let calls = vec![
            ("call_1", "get_order_status", r#"{"order_id":"ORD-10042"}"#),
            ("call_2", "say \"hi\"", "{}"),
        ];
        let replies = [
            tokens(0),
            tokens(1),
            tokens(64),
            tokens(64)
                .usage(120, 64)
                .cached_tokens(100)
                .reasoning_tokens(7),
            tokens(3).finish_reason("length"),
            tokens(5).delay_between_chunks(std::time::Duration::from_millis(3)),
            Reply::text("Hello \"big\"\\ world\n\t\u{1}\u{7f} é 😀 \u{2028}</script>"),
            Reply::text("\u{0}slot\u{0} in the text"),
            Reply::tool_calls(calls.clone()),
            Reply::text("Let me look.").then_tool_calls(calls),
            Reply::hang(),
            tokens(4).then_cut(),
        ];
        let models = ["gpt-test", "we\"ird\\model é", "has \u{0}slot\u{0} in it"];
        let mut compared = 0;
        for reply in &replies {
            for model in models {
                for include_usage in [false, true] {
                    for n in [1, 12345] {
                        let turn = Turn {
                            n,
                            model: model.to_owned(),
                            include_usage,
                            reply,
                        };
                        let expected: Vec<(String, Part)> = stream_serialized_one_by_one(&turn)
                            .iter()
                            .map(|event| (format!("data: {}\n\n", event.data), event.part))
                            .collect();
                        assert_eq!(frames_of(stream(&turn)), expected, "{model} {reply:?}");
                        compared += 1;
                    }
                }
            }
        }
        assert_eq!(compared, replies.len() * models.len() * 4);
    }
}
