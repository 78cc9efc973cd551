//! The OpenAI Responses API (`POST {base}/responses`), as OpenAI documents its streaming events.
//!
//! Streamed (`"stream": true`): each event as `event: {type}` + `data: {json}`, with increasing
//! `sequence_number`s: `response.created`, `response.in_progress`; per reasoning block a
//! `reasoning` output item (`rs_…` id, its summary streamed as
//! `response.reasoning_summary_part.added` / `…_text.delta` / `…_text.done` / `…_part.done`,
//! and `encrypted_content` on the done item); the message item (`output_item.added`,
//! `content_part.added`, `output_text.delta` pieces, `output_text.done`, `content_part.done`,
//! `output_item.done`); per call a `function_call` item with `function_call_arguments.delta`
//! pieces and `.done`; then `response.completed` (or `response.incomplete` for the `length` and
//! `content_filter` finishes) carrying the whole output and the usage. Otherwise one response
//! object. Errors use the OpenAI envelope (see [`super::chat_completions`]).

use serde_json::{Value, json};

use super::render::{CREATED, Event, Part, Turn};
use super::reply::{ScriptedCall, Thought, split_arguments, split_words};

/// Numbers the events of one stream.
struct Sequence {
    events: Vec<Event>,
}

impl Sequence {
    fn push(&mut self, mut data: Value, part: Part) {
        data["sequence_number"] = json!(self.events.len());
        self.events.push(Event::typed(&data, part));
    }
}

fn response_id(turn: &Turn<'_>) -> String {
    format!("resp_fake_{}", turn.n)
}

/// The id of the `k`-th reasoning item of this answer.
fn reasoning_id(turn: &Turn<'_>, k: usize) -> String {
    format!("rs_fake_{}_{k}", turn.n)
}

fn message_id(turn: &Turn<'_>) -> String {
    format!("msg_fake_{}", turn.n)
}

fn call_item_id(turn: &Turn<'_>, k: usize) -> String {
    format!("fc_fake_{}_{k}", turn.n)
}

/// The response object: `in_progress` with no output, or finished with all of it.
fn response(turn: &Turn<'_>, status: &str, output: Vec<Value>, usage: Value) -> Value {
    let mut response = json!({
        "id": response_id(turn),
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "error": null,
        "incomplete_details": null,
        "model": turn.model,
        "output": output,
        "parallel_tool_calls": true,
        "store": false,
        "usage": usage,
    });
    if status == "incomplete" {
        let reason = match turn.reply.finish().as_str() {
            "content_filter" => "content_filter",
            _ => "max_output_tokens",
        };
        response["incomplete_details"] = json!({"reason": reason});
    }
    response
}

/// `completed`, or `incomplete` for a `length` or `content_filter` finish.
fn final_status(turn: &Turn<'_>) -> &'static str {
    match turn.reply.finish().as_str() {
        "length" | "content_filter" => "incomplete",
        _ => "completed",
    }
}

fn reasoning_item(turn: &Turn<'_>, k: usize, thought: &Thought, done: bool) -> Value {
    let summary: Vec<Value> = match (&thought.text, done) {
        (Some(text), true) => vec![json!({"type": "summary_text", "text": text})],
        _ => Vec::new(),
    };
    let encrypted = if done {
        json!(thought.signature)
    } else {
        Value::Null
    };
    json!({"id": reasoning_id(turn, k), "type": "reasoning", "summary": summary,
        "encrypted_content": encrypted})
}

fn message_item(turn: &Turn<'_>, text: Option<&str>) -> Value {
    let (status, content) = match text {
        Some(text) => (
            "completed",
            json!([{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]),
        ),
        None => ("in_progress", json!([])),
    };
    json!({"id": message_id(turn), "type": "message", "status": status, "role": "assistant",
        "content": content})
}

fn call_item(turn: &Turn<'_>, k: usize, call: &ScriptedCall, done: bool) -> Value {
    let (status, arguments) = if done {
        ("completed", call.arguments.as_str())
    } else {
        ("in_progress", "")
    };
    json!({"id": call_item_id(turn, k), "type": "function_call", "status": status,
        "arguments": arguments, "call_id": call.id, "name": call.name})
}

/// Every output item of the finished answer, in order.
fn output(turn: &Turn<'_>) -> Vec<Value> {
    let (text, calls) = turn.reply.answer();
    let mut output: Vec<Value> = turn
        .reply
        .reasoning
        .iter()
        .enumerate()
        .map(|(k, thought)| reasoning_item(turn, k, thought, true))
        .collect();
    if !text.is_empty() {
        output.push(message_item(turn, Some(&text.concat())));
    }
    for (k, call) in calls.iter().enumerate() {
        output.push(call_item(turn, k, call, true));
    }
    output
}

fn usage(turn: &Turn<'_>) -> Value {
    let counts = turn.reply.counts(turn.reply.delta_count());
    json!({
        "input_tokens": counts.input,
        "input_tokens_details": {"cached_tokens": counts.cached},
        "output_tokens": counts.output,
        "output_tokens_details": {"reasoning_tokens": counts.reasoning},
        "total_tokens": counts.input + counts.output,
    })
}

/// The SSE events of a streamed answer.
pub(super) fn stream(turn: &Turn<'_>) -> Vec<Event> {
    let (text, calls) = turn.reply.answer();
    let mut seq = Sequence { events: Vec::new() };
    let start = response(turn, "in_progress", Vec::new(), Value::Null);
    seq.push(
        json!({"type": "response.created", "response": start}),
        Part::Opening,
    );
    seq.push(
        json!({"type": "response.in_progress", "response": start}),
        Part::Opening,
    );
    let mut output_index = 0;
    for (k, thought) in turn.reply.reasoning.iter().enumerate() {
        let item_id = reasoning_id(turn, k);
        seq.push(
            json!({"type": "response.output_item.added", "output_index": output_index,
                "item": reasoning_item(turn, k, thought, false)}),
            Part::Content,
        );
        if let Some(summary) = &thought.text {
            let at = json!({"item_id": item_id, "output_index": output_index, "summary_index": 0});
            let with = |kind: &str, extra: Value| {
                let mut event = at.clone();
                event["type"] = json!(kind);
                if let (Some(event), Some(extra)) = (event.as_object_mut(), extra.as_object()) {
                    event.extend(extra.clone());
                }
                event
            };
            seq.push(
                with(
                    "response.reasoning_summary_part.added",
                    json!({"part": {"type": "summary_text", "text": ""}}),
                ),
                Part::Content,
            );
            for piece in split_words(summary) {
                seq.push(
                    with(
                        "response.reasoning_summary_text.delta",
                        json!({"delta": piece}),
                    ),
                    Part::Content,
                );
            }
            seq.push(
                with(
                    "response.reasoning_summary_text.done",
                    json!({"text": summary}),
                ),
                Part::Content,
            );
            seq.push(
                with(
                    "response.reasoning_summary_part.done",
                    json!({"part": {"type": "summary_text", "text": summary}}),
                ),
                Part::Content,
            );
        }
        seq.push(
            json!({"type": "response.output_item.done", "output_index": output_index,
                "item": reasoning_item(turn, k, thought, true)}),
            Part::Content,
        );
        output_index += 1;
    }
    if !text.is_empty() {
        let item_id = message_id(turn);
        let whole = text.concat();
        seq.push(
            json!({"type": "response.output_item.added", "output_index": output_index,
                "item": message_item(turn, None)}),
            Part::Content,
        );
        seq.push(
            json!({"type": "response.content_part.added", "item_id": item_id,
                "output_index": output_index, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []}}),
            Part::Content,
        );
        for piece in text {
            seq.push(
                json!({"type": "response.output_text.delta", "item_id": item_id,
                    "output_index": output_index, "content_index": 0, "delta": piece,
                    "logprobs": []}),
                Part::Delta,
            );
        }
        seq.push(
            json!({"type": "response.output_text.done", "item_id": item_id,
                "output_index": output_index, "content_index": 0, "text": whole,
                "logprobs": []}),
            Part::Content,
        );
        seq.push(
            json!({"type": "response.content_part.done", "item_id": item_id,
                "output_index": output_index, "content_index": 0,
                "part": {"type": "output_text", "text": whole, "annotations": []}}),
            Part::Content,
        );
        seq.push(
            json!({"type": "response.output_item.done", "output_index": output_index,
                "item": message_item(turn, Some(&whole))}),
            Part::Content,
        );
        output_index += 1;
    }
    for (k, call) in calls.iter().enumerate() {
        let item_id = call_item_id(turn, k);
        seq.push(
            json!({"type": "response.output_item.added", "output_index": output_index,
                "item": call_item(turn, k, call, false)}),
            Part::Delta,
        );
        for piece in split_arguments(&call.arguments) {
            seq.push(
                json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
                    "output_index": output_index, "delta": piece}),
                Part::Delta,
            );
        }
        seq.push(
            json!({"type": "response.function_call_arguments.done", "item_id": item_id,
                "output_index": output_index, "arguments": call.arguments}),
            Part::Content,
        );
        seq.push(
            json!({"type": "response.output_item.done", "output_index": output_index,
                "item": call_item(turn, k, call, true)}),
            Part::Content,
        );
        output_index += 1;
    }
    let status = final_status(turn);
    let done = response(turn, status, output(turn), usage(turn));
    seq.push(
        json!({"type": format!("response.{status}"), "response": done}),
        Part::Closing,
    );
    seq.events
}

/// The response object of a non-streamed answer.
pub(super) fn whole(turn: &Turn<'_>) -> Value {
    response(turn, final_status(turn), output(turn), usage(turn))
}
