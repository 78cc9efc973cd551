//! An upstream model's SSE body through every wire decoder (Chat Completions, Responses,
//! Anthropic Messages, Gemini), framed by the same SSE parser (the providers' `sse_parse`) a
//! streamed turn uses; and the same bytes as Gemini's non-streamed JSON body.
//!
//! Promises: the events do not depend on how the body was chunked on the wire; a stream yields
//! at most one error and nothing after it; at most one `Finish`, and nothing but usage after it.

use engine::model::{ModelError, ModelEvent};
use providers::WireApi;
use providers::fuzzing::{decode_gemini_body, decode_sse};

use crate::chunks::split;

const WIRES: [WireApi; 4] = [
    WireApi::ChatCompletions,
    WireApi::Responses,
    WireApi::AnthropicMessages,
    WireApi::Gemini,
];

pub fn run(data: &[u8]) {
    let chunked = split(data);
    for wire in WIRES {
        let whole = decode_sse(wire, &[data]);
        check(wire, &whole);
        let pieces = decode_sse(wire, &chunked);
        assert_eq!(
            without_ids(whole),
            without_ids(pieces),
            "{wire:?}: the events depend on the chunking"
        );
    }
    if let Ok(events) = decode_gemini_body(data) {
        let events: Vec<Result<ModelEvent, ModelError>> = events.into_iter().map(Ok).collect();
        check(WireApi::Gemini, &events);
    }
}

/// The events with the ids adapters mint at random (reasoning blocks) left out.
fn without_ids(events: Vec<Result<ModelEvent, ModelError>>) -> Vec<Result<ModelEvent, ModelError>> {
    events
        .into_iter()
        .map(|event| match event {
            Ok(ModelEvent::Reasoning(mut reasoning)) => {
                reasoning.id = None;
                Ok(ModelEvent::Reasoning(reasoning))
            }
            other => other,
        })
        .collect()
}

fn check(wire: WireApi, events: &[Result<ModelEvent, ModelError>]) {
    if let Some(at) = events.iter().position(Result::is_err) {
        assert_eq!(
            at + 1,
            events.len(),
            "{wire:?}: events after an error: {events:?}"
        );
    }
    let ok: Vec<&ModelEvent> = events.iter().filter_map(|e| e.as_ref().ok()).collect();
    let finishes = ok
        .iter()
        .filter(|e| matches!(e, ModelEvent::Finish(_)))
        .count();
    assert!(
        finishes <= 1,
        "{wire:?}: {finishes} Finish events: {events:?}"
    );
    if let Some(at) = ok.iter().position(|e| matches!(e, ModelEvent::Finish(_))) {
        assert!(
            ok[at + 1..]
                .iter()
                .all(|e| matches!(e, ModelEvent::Usage(_))),
            "{wire:?}: events after Finish: {events:?}"
        );
    }
}
