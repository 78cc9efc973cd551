//! Gemini `generateContent` (`POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`
//! and `:generateContent`), as Google documents it.
//!
//! Streamed (`alt=sse`): `data:` lines only, each one whole `GenerateContentResponse`: one
//! chunk per reasoning block (a part `{text, thought: true, thoughtSignature}`), one per text
//! piece, one with every function call (Gemini sends calls whole: `{functionCall: {id, name,
//! args}}`, `args` the scripted arguments with their keys' order and strings kept, whitespace
//! between tokens dropped), then a last chunk with an empty text part,
//! the `finishReason` and the `usageMetadata`. There is no end marker: the body just ends.
//! `streamGenerateContent` without `alt=sse` answers the same chunks as one JSON array;
//! `generateContent` one response with every part. Redacted reasoning blocks have no Gemini
//! form and are not sent. Errors are `{"error": {"code", "message", "status"}}`.

use serde_json::{Value, json};

use super::render::{Event, Part, Turn, raw_slot, with_raw};

/// Google's error envelope, with the canonical status of each HTTP code.
pub(super) fn error_body(status: u16, message: &str) -> Value {
    let name = match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        409 => "ABORTED",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        501 => "NOT_IMPLEMENTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    };
    json!({"error": {"code": status, "message": message, "status": name}})
}

fn finish_reason(turn: &Turn<'_>) -> String {
    match turn.reply.finish().as_str() {
        "stop" | "tool_calls" => "STOP".to_owned(),
        "length" => "MAX_TOKENS".to_owned(),
        "content_filter" => "SAFETY".to_owned(),
        other => other.to_ascii_uppercase(),
    }
}

/// `usageMetadata`: the answer's tokens apart from the thinking (`thoughtsTokenCount`).
fn usage(turn: &Turn<'_>) -> Value {
    let counts = turn.reply.counts(turn.reply.delta_count());
    json!({
        "promptTokenCount": counts.input,
        "cachedContentTokenCount": counts.cached,
        "candidatesTokenCount": counts.output.saturating_sub(counts.reasoning),
        "thoughtsTokenCount": counts.reasoning,
        "totalTokenCount": counts.input + counts.output,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": counts.input}],
    })
}

/// One `GenerateContentResponse` with these parts (and a finish and usage on the last one).
fn response(turn: &Turn<'_>, parts: Vec<Value>, last: bool) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    let mut response = json!({
        "candidates": [],
        "modelVersion": turn.model,
        "responseId": format!("fake-response-{}", turn.n),
    });
    if last {
        candidate["finishReason"] = json!(finish_reason(turn));
        response["usageMetadata"] = usage(turn);
    }
    response["candidates"] = json!([candidate]);
    response
}

/// The reasoning parts (redacted blocks have no Gemini form).
fn thought_parts(turn: &Turn<'_>) -> Vec<Value> {
    turn.reply
        .reasoning
        .iter()
        .filter_map(|thought| {
            let text = thought.text.as_ref()?;
            Some(json!({"text": text, "thought": true, "thoughtSignature": thought.signature}))
        })
        .collect()
}

/// The function call parts, each `args` a slot for the scripted arguments' exact text.
fn call_parts<'a>(turn: &Turn<'a>) -> (Vec<Value>, Vec<&'a str>) {
    let (_, calls) = turn.reply.answer();
    let mut parts = Vec::new();
    let mut raws = Vec::new();
    for call in calls {
        parts.push(json!({"functionCall": {"id": call.id, "name": call.name,
            "args": raw_slot(raws.len())}}));
        raws.push(if call.arguments.trim().is_empty() {
            "{}"
        } else {
            call.arguments.as_str()
        });
    }
    (parts, raws)
}

/// The SSE events of a streamed answer.
pub(super) fn stream(turn: &Turn<'_>) -> Vec<Event> {
    let (text, calls) = turn.reply.answer();
    let mut events = Vec::new();
    for part in thought_parts(turn) {
        events.push(Event::data(
            &response(turn, vec![part], false),
            Part::Content,
        ));
    }
    for piece in text {
        let chunk = response(turn, vec![json!({"text": piece})], false);
        events.push(Event::data(&chunk, Part::Delta));
    }
    if !calls.is_empty() {
        let (parts, raws) = call_parts(turn);
        events.push(Event {
            name: None,
            data: with_raw(&response(turn, parts, false), &raws),
            part: Part::Delta,
        });
    }
    let last = response(turn, vec![json!({"text": ""})], true);
    events.push(Event::data(&last, Part::Closing));
    events
}

/// The one response of `generateContent`: every part, the finish and the usage.
pub(super) fn whole(turn: &Turn<'_>) -> String {
    let (text, _) = turn.reply.answer();
    let mut parts = thought_parts(turn);
    if !text.is_empty() {
        parts.push(json!({"text": text.concat()}));
    }
    let (calls, raws) = call_parts(turn);
    parts.extend(calls);
    with_raw(&response(turn, parts, true), &raws)
}
