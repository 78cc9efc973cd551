//! Turning Messages stream events into [`ModelEvent`]s. Pure: no I/O, fed one SSE `data` field
//! at a time, so every rule is unit-tested here.
//!
//! - Text and tool-call deltas are forwarded as they arrive. Tool calls are numbered 0, 1, … in
//!   the order their `tool_use` blocks open (Anthropic's block index also counts text and
//!   thinking blocks); the first delta of a call carries its id and name, the `input_json_delta`
//!   pieces follow as argument pieces. A call whose input never streamed (a tool without
//!   parameters) gets `{}` when its block closes.
//! - A thinking block (its `thinking_delta` and `signature_delta` pieces) becomes one
//!   `Reasoning` event when it closes (text: the thinking, encrypted: the signature); a
//!   `redacted_thinking` block one with its data and no text. Both carry an id with
//!   [`REASONING_PREFIX`], so that this adapter sends them back only to Anthropic.
//! - At `message_stop`: one `Usage`, then one `Finish`, always last. Anthropic's `input_tokens`
//!   excludes the cached prefix, so the port's `input_tokens` is input + cache writes + cache
//!   reads, `cached_input_tokens` is the cache reads and `cache_write_tokens` the cache writes.
//! - An `error` event is an `Err` item, reported as [`ModelError::Upstream`] with the status
//!   Anthropic gives that error type over HTTP (a mid-stream `overloaded_error` is handled like a
//!   529). A body that ends before the turn did is a broken connection ([`ModelError::Transport`]).

use engine::model::{FinishReason, ModelError, ModelEvent, Reasoning, TokenUsage};

use super::wire::{
    BlockDelta, ContentBlock, ErrorBody, Message, REASONING_PREFIX, StreamEvent, Usage,
};
use crate::sse::{SseDecoder, Step};

/// The state of one streamed turn.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// The open or closed `tool_use` blocks of this turn, in call order.
    calls: Vec<Call>,
    /// The thinking blocks still open: (Anthropic's block index, the block so far).
    thinking: Vec<(usize, Reasoning)>,
    usage: Usage,
    finish: Option<FinishReason>,
}

#[derive(Debug)]
struct Call {
    /// Anthropic's content block index.
    block: usize,
    /// Whether any argument text was forwarded yet.
    has_arguments: bool,
    /// The input given whole in `content_block_start`, if not empty (non-streaming servers).
    initial_input: Option<String>,
}

impl SseDecoder for Decoder {
    /// Decodes one SSE `data` field, pushing the events it yields onto `out`.
    fn data(&mut self, data: &str, out: &mut Vec<ModelEvent>) -> Result<Step, ModelError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Step::Continue);
        }
        // Deltas (most events) in one pass; any other event, or a delta that pass declines,
        // through the serde types.
        let event = match super::fast::block_delta(data) {
            Some((index, delta)) => StreamEvent::ContentBlockDelta { index, delta },
            None => serde_json::from_str(data)
                .map_err(|err| ModelError::Protocol(format!("invalid stream event: {err}")))?,
        };
        match event {
            StreamEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.add_usage(usage);
                }
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => self.start_block(index, content_block, out),
            StreamEvent::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => {
                    if !text.is_empty() {
                        out.push(ModelEvent::TextDelta(text));
                    }
                }
                BlockDelta::InputJsonDelta { partial_json } => {
                    // A block that is no tool_use of ours (a server tool) streams input too.
                    if let Some((position, call)) = self.call_mut(index)
                        && !partial_json.is_empty()
                    {
                        call.has_arguments = true;
                        out.push(arguments_delta(position, partial_json));
                    }
                }
                BlockDelta::ThinkingDelta { thinking } => {
                    if let Some(block) = self.thinking_mut(index) {
                        block
                            .text
                            .get_or_insert_with(String::new)
                            .push_str(&thinking);
                    }
                }
                BlockDelta::SignatureDelta { signature } => {
                    if let Some(block) = self.thinking_mut(index) {
                        block
                            .encrypted
                            .get_or_insert_with(String::new)
                            .push_str(&signature);
                    }
                }
                BlockDelta::Other => {}
            },
            StreamEvent::ContentBlockStop { index } => {
                if let Some(at) = self.thinking.iter().position(|(block, _)| *block == index) {
                    let (_, block) = self.thinking.remove(at);
                    out.push(ModelEvent::Reasoning(block));
                }
                if let Some((position, call)) = self.call_mut(index)
                    && !call.has_arguments
                {
                    call.has_arguments = true;
                    let arguments = call.initial_input.take().unwrap_or_else(|| "{}".to_owned());
                    out.push(arguments_delta(position, arguments));
                }
            }
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason.filter(|reason| !reason.is_empty()) {
                    self.finish = Some(finish_reason(&reason));
                }
                if let Some(usage) = usage {
                    self.add_usage(usage);
                }
            }
            StreamEvent::MessageStop => {
                self.close_thinking(out);
                self.close_calls(out);
                let Some(finish) = self.finish.take() else {
                    return Err(ModelError::Protocol(
                        "message_stop came without a stop_reason".to_owned(),
                    ));
                };
                self.finish_with(finish, out);
                return Ok(Step::Done);
            }
            StreamEvent::Error { error } => return Err(stream_error(error)),
            StreamEvent::Ping | StreamEvent::Other => {}
        }
        Ok(Step::Continue)
    }

    /// The body ended without `message_stop`. A turn whose stop reason came (`message_delta`) is
    /// complete all the same; otherwise the connection broke.
    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let Some(finish) = self.finish.take() else {
            return Err(ModelError::Transport(
                "the stream ended before the turn was complete".to_owned(),
            ));
        };
        self.close_thinking(out);
        self.close_calls(out);
        self.finish_with(finish, out);
        Ok(())
    }
}

impl Decoder {
    fn start_block(&mut self, index: usize, block: ContentBlock, out: &mut Vec<ModelEvent>) {
        match block {
            ContentBlock::Text { text } => {
                if !text.is_empty() {
                    out.push(ModelEvent::TextDelta(text));
                }
            }
            ContentBlock::ToolUse { id, name, input } => {
                let position = self.calls.len();
                let initial_input = match input {
                    serde_json::Value::Object(map) if map.is_empty() => None,
                    serde_json::Value::Null => None,
                    other => Some(other.to_string()),
                };
                self.calls.push(Call {
                    block: index,
                    has_arguments: false,
                    initial_input,
                });
                out.push(ModelEvent::ToolCallDelta {
                    index: position,
                    id: Some(id).filter(|id| !id.is_empty()),
                    name: Some(name).filter(|name| !name.is_empty()),
                    arguments: String::new(),
                    thought_signature: None,
                });
            }
            ContentBlock::Thinking {
                thinking,
                signature,
            } => self.thinking.push((
                index,
                Reasoning {
                    id: Some(reasoning_id(index)),
                    summary: Vec::new(),
                    text: Some(thinking),
                    encrypted: Some(signature).filter(|s| !s.is_empty()),
                },
            )),
            ContentBlock::RedactedThinking { data } => out.push(ModelEvent::Reasoning(Reasoning {
                id: Some(reasoning_id(index)),
                summary: Vec::new(),
                text: None,
                encrypted: Some(data),
            })),
            ContentBlock::Other => {}
        }
    }

    fn thinking_mut(&mut self, index: usize) -> Option<&mut Reasoning> {
        self.thinking
            .iter_mut()
            .find(|(block, _)| *block == index)
            .map(|(_, block)| block)
    }

    /// Hands out thinking blocks that never saw their `content_block_stop`.
    fn close_thinking(&mut self, out: &mut Vec<ModelEvent>) {
        for (_, block) in self.thinking.drain(..) {
            out.push(ModelEvent::Reasoning(block));
        }
    }

    fn call_mut(&mut self, block: usize) -> Option<(usize, &mut Call)> {
        self.calls
            .iter_mut()
            .enumerate()
            .find(|(_, call)| call.block == block)
    }

    /// Gives `{}` (or the whole input) to calls whose block never closed with arguments.
    fn close_calls(&mut self, out: &mut Vec<ModelEvent>) {
        for (position, call) in self.calls.iter_mut().enumerate() {
            if !call.has_arguments {
                call.has_arguments = true;
                let arguments = call.initial_input.take().unwrap_or_else(|| "{}".to_owned());
                out.push(arguments_delta(position, arguments));
            }
        }
    }

    fn add_usage(&mut self, usage: Usage) {
        let current = &mut self.usage;
        current.input_tokens = usage.input_tokens.or(current.input_tokens);
        current.output_tokens = usage.output_tokens.or(current.output_tokens);
        current.cache_creation_input_tokens = usage
            .cache_creation_input_tokens
            .or(current.cache_creation_input_tokens);
        current.cache_read_input_tokens = usage
            .cache_read_input_tokens
            .or(current.cache_read_input_tokens);
    }

    fn finish_with(&mut self, finish: FinishReason, out: &mut Vec<ModelEvent>) {
        if let Some(usage) = token_usage(&self.usage) {
            out.push(ModelEvent::Usage(usage));
        }
        out.push(ModelEvent::Finish(finish));
    }
}

/// The events of a whole `message` (a server that ignored `stream: true`).
pub(crate) fn message_events(body: &[u8]) -> Result<Vec<ModelEvent>, ModelError> {
    let message: Message = serde_json::from_slice(body)
        .map_err(|err| ModelError::Protocol(format!("invalid message: {err}")))?;
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    for (index, block) in message.content.into_iter().enumerate() {
        decoder.start_block(index, block, &mut out);
    }
    decoder.close_thinking(&mut out);
    if let Some(usage) = message.usage {
        decoder.add_usage(usage);
    }
    let Some(reason) = message.stop_reason.filter(|reason| !reason.is_empty()) else {
        return Err(ModelError::Protocol(
            "the message has no stop_reason".to_owned(),
        ));
    };
    decoder.close_calls(&mut out);
    decoder.finish_with(finish_reason(&reason), &mut out);
    Ok(out)
}

/// An id for a thinking block (Anthropic gives none): the prefix, the block's index and a
/// random part, so ids do not repeat across turns.
fn reasoning_id(index: usize) -> String {
    let random = crate::http::random_u64();
    format!("{REASONING_PREFIX}{random:016x}_{index}")
}

fn arguments_delta(index: usize, arguments: String) -> ModelEvent {
    ModelEvent::ToolCallDelta {
        index,
        id: None,
        name: None,
        arguments,
        thought_signature: None,
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter,
        // `pause_turn` (a server tool paused the turn), `model_context_window_exceeded`…
        other => FinishReason::Other(other.to_owned()),
    }
}

fn token_usage(usage: &Usage) -> Option<TokenUsage> {
    let reported = usage.input_tokens.is_some()
        || usage.output_tokens.is_some()
        || usage.cache_creation_input_tokens.is_some()
        || usage.cache_read_input_tokens.is_some();
    let cache_read = usage.cache_read_input_tokens.unwrap_or(0);
    reported.then(|| TokenUsage {
        input_tokens: usage.input_tokens.unwrap_or(0)
            + usage.cache_creation_input_tokens.unwrap_or(0)
            + cache_read,
        output_tokens: usage.output_tokens.unwrap_or(0),
        cached_input_tokens: cache_read,
        // Anthropic counts thinking in output_tokens and reports no split.
        reasoning_tokens: 0,
        cache_write_tokens: usage.cache_creation_input_tokens.unwrap_or(0),
    })
}

/// The HTTP status Anthropic documents for each error type, so that a mid-stream error is
/// handled like the same error before the stream.
fn error_status(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => 500,
    }
}

fn stream_error(error: ErrorBody) -> ModelError {
    let message = error.message.trim();
    let message = if message.is_empty() {
        error.kind.as_str()
    } else {
        message
    };
    let message = if message.is_empty() {
        "no message"
    } else {
        message
    };
    ModelError::Upstream {
        status: error_status(&error.kind),
        message: format!("{message} (reported mid-stream)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reasoning events as (text, signature), each checked to carry an Anthropic id, and
    /// the other events.
    #[expect(clippy::type_complexity, reason = "a test helper's tuple")]
    fn split_reasoning(
        events: Result<Vec<ModelEvent>, ModelError>,
    ) -> (
        Vec<(Option<String>, Option<String>)>,
        Result<Vec<ModelEvent>, ModelError>,
    ) {
        let Ok(events) = events else {
            return (Vec::new(), events);
        };
        let mut thinking = Vec::new();
        let mut rest = Vec::new();
        for event in events {
            match event {
                ModelEvent::Reasoning(block) => {
                    let id = block.id.unwrap_or_default();
                    assert!(id.starts_with(REASONING_PREFIX), "{id}");
                    thinking.push((block.text, block.encrypted));
                }
                other => rest.push(other),
            }
        }
        (thinking, Ok(rest))
    }

    #[test]
    fn thinking_and_redacted_thinking_become_reasoning_events() {
        let events = decode(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"First, "}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"the weather."}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCkgIARABGAIiQL"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3p"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Sunny."}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        let (thinking, events) = split_reasoning(events);
        assert_eq!(
            thinking,
            vec![
                (
                    Some("First, the weather.".to_owned()),
                    Some("EqQBCkgIARABGAIiQL".to_owned())
                ),
                (None, Some("EmwKAhgBEgy3va3p".to_owned())),
            ]
        );
        assert_eq!(
            events.ok().and_then(|events| events.first().cloned()),
            Some(ModelEvent::TextDelta("Sunny.".into()))
        );
    }

    #[test]
    fn a_whole_message_keeps_its_thinking() {
        let body = br#"{"content":[{"type":"thinking","thinking":"Hmm.","signature":"c2ln"},{"type":"text","text":"Yes."}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":4}}"#;
        let (thinking, events) = split_reasoning(message_events(body));
        assert_eq!(
            thinking,
            vec![(Some("Hmm.".to_owned()), Some("c2ln".to_owned()))]
        );
        assert!(events.is_ok_and(|events| events.contains(&ModelEvent::TextDelta("Yes.".into()))));
    }

    /// Feeds `data` fields and returns all events, or the first error.
    fn decode(datas: &[&str]) -> Result<Vec<ModelEvent>, ModelError> {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for data in datas {
            if decoder.data(data, &mut out)? == Step::Done {
                return Ok(out);
            }
        }
        decoder.end(&mut out)?;
        Ok(out)
    }

    fn delta(index: usize, id: Option<&str>, name: Option<&str>, arguments: &str) -> ModelEvent {
        ModelEvent::ToolCallDelta {
            index,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments: arguments.to_owned(),
            thought_signature: None,
        }
    }

    const START: &str = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}"#;

    #[test]
    fn text_stream() {
        let events = decode(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::TextDelta("Hel".into()),
                ModelEvent::TextDelta("lo".into()),
                ModelEvent::Usage(TokenUsage {
                    input_tokens: 25,
                    output_tokens: 15,
                    ..TokenUsage::default()
                }),
                ModelEvent::Finish(FinishReason::Stop),
            ])
        );
    }

    #[test]
    fn tool_calls_are_numbered_apart_from_other_blocks() {
        let events = decode(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me check."}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Checking."}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_a","name":"f","input":{}}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
            r#"{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_b","name":"now","input":{}}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"1}"}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"content_block_stop","index":3}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":40}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        let (thinking, events) = split_reasoning(events);
        assert_eq!(
            thinking,
            vec![(Some("Let me check.".to_owned()), Some("EqQB".to_owned()))]
        );
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::TextDelta("Checking.".into()),
                delta(0, Some("toolu_a"), Some("f"), ""),
                delta(0, None, None, "{\"a\":"),
                delta(1, Some("toolu_b"), Some("now"), ""),
                delta(0, None, None, "1}"),
                delta(1, None, None, "{}"),
                ModelEvent::Usage(TokenUsage {
                    input_tokens: 25,
                    output_tokens: 40,
                    ..TokenUsage::default()
                }),
                ModelEvent::Finish(FinishReason::ToolCalls),
            ])
        );
    }

    #[test]
    fn cache_tokens_count_as_input_and_reads_as_cached() {
        let events = decode(&[
            r#"{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":1}}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::Usage(TokenUsage {
                    input_tokens: 3210,
                    output_tokens: 7,
                    cached_input_tokens: 3000,
                    reasoning_tokens: 0,
                    cache_write_tokens: 200,
                }),
                ModelEvent::Finish(FinishReason::Stop),
            ])
        );
    }

    #[test]
    fn finish_reasons() {
        for (wire, want) in [
            ("end_turn", FinishReason::Stop),
            ("stop_sequence", FinishReason::Stop),
            ("tool_use", FinishReason::ToolCalls),
            ("max_tokens", FinishReason::Length),
            ("refusal", FinishReason::ContentFilter),
            ("pause_turn", FinishReason::Other("pause_turn".into())),
        ] {
            let data = format!(r#"{{"type":"message_delta","delta":{{"stop_reason":"{wire}"}}}}"#);
            assert_eq!(
                decode(&[&data, r#"{"type":"message_stop"}"#]),
                Ok(vec![ModelEvent::Finish(want)])
            );
        }
    }

    #[test]
    fn error_events_carry_the_status_of_their_type() {
        let overloaded = decode(&[
            START,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ]);
        assert_eq!(
            overloaded,
            Err(ModelError::Upstream {
                status: 529,
                message: "Overloaded (reported mid-stream)".into()
            })
        );
        let bare = decode(&[r#"{"type":"error","error":{"type":"rate_limit_error"}}"#]);
        assert_eq!(
            bare,
            Err(ModelError::Upstream {
                status: 429,
                message: "rate_limit_error (reported mid-stream)".into()
            })
        );
        let unknown = decode(&[r#"{"type":"error","error":{"type":"new_error","message":"x"}}"#]);
        assert!(matches!(
            unknown,
            Err(ModelError::Upstream { status: 500, .. })
        ));
    }

    #[test]
    fn an_end_without_stop_reason_is_a_broken_connection() {
        let cut = decode(&[
            START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ]);
        assert!(matches!(cut, Err(ModelError::Transport(_))), "{cut:?}");
        let stop_only = decode(&[START, r#"{"type":"message_stop"}"#]);
        assert!(
            matches!(stop_only, Err(ModelError::Protocol(_))),
            "{stop_only:?}"
        );
    }

    #[test]
    fn a_stop_reason_without_message_stop_completes_the_turn() {
        let events = decode(&[r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"}}"#]);
        assert_eq!(events, Ok(vec![ModelEvent::Finish(FinishReason::Length)]));
    }

    #[test]
    fn garbage_and_unknown_events() {
        assert!(matches!(
            decode(&["{not json"]),
            Err(ModelError::Protocol(_))
        ));
        let events = decode(&[
            r#"{"type":"brand_new_event","x":1}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"q\":1}"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        assert_eq!(events, Ok(vec![ModelEvent::Finish(FinishReason::Stop)]));
    }

    #[test]
    fn a_whole_message_becomes_events() {
        let events = message_events(
            br#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_1","name":"f","input":{"city":"Paris"}},{"type":"tool_use","id":"toolu_2","name":"g","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4}}"#,
        );
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::TextDelta("Let me look.".into()),
                delta(0, Some("toolu_1"), Some("f"), ""),
                delta(1, Some("toolu_2"), Some("g"), ""),
                delta(0, None, None, r#"{"city":"Paris"}"#),
                delta(1, None, None, "{}"),
                ModelEvent::Usage(TokenUsage {
                    input_tokens: 3,
                    output_tokens: 4,
                    ..TokenUsage::default()
                }),
                ModelEvent::Finish(FinishReason::ToolCalls),
            ])
        );
    }
}
