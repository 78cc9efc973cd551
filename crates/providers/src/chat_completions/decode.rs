//! Turning Chat Completions chunks into [`ModelEvent`]s. Pure: no I/O, fed one SSE `data` field
//! at a time, so every rule is unit-tested here.
//!
//! Order of events: text and tool-call deltas as they arrive (never held back), then at the end
//! one `Usage` (the last report wins: some servers repeat a running total on every chunk) and one
//! `Finish`, always last. The finish reason arrives before the usage chunk on the wire; it is kept
//! until `[DONE]` so that a consumer that stops at `Finish` has seen everything.

use engine::model::{FinishReason, ModelError, ModelEvent, TokenUsage};

use super::repeat::{Chunks, Reading};
use super::wire::{Chunk, Completion, ExtraContent, FunctionDelta, Usage};
use crate::sse::{SseDecoder, Step};

/// The state of one streamed turn.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// The fast path, which keeps what it can reuse from one chunk to the next.
    fast: Chunks,
    finish: Option<FinishReason>,
    usage: Option<TokenUsage>,
}

impl SseDecoder for Decoder {
    /// Decodes one SSE `data` field, pushing the events it yields onto `out`.
    fn data(&mut self, data: &str, out: &mut Vec<ModelEvent>) -> Result<Step, ModelError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Step::Continue);
        }
        if data == "[DONE]" {
            self.end(out)?;
            return Ok(Step::Done);
        }
        // The common chunk in one pass (from its text when it begins as the previous one did);
        // anything else (and every error) through serde.
        let chunk: Chunk = match self.fast.next(data) {
            // A text and nothing else: what `chunk_events` yields for its chunk.
            Some(Reading::Text(text)) => {
                if let Some(text) = text.filter(|text| !text.is_empty()) {
                    out.push(ModelEvent::TextDelta(text));
                }
                return Ok(Step::Continue);
            }
            Some(Reading::Chunk(chunk)) => chunk,
            None => serde_json::from_str(data)
                .map_err(|err| ModelError::Protocol(format!("invalid stream chunk: {err}")))?,
        };
        self.chunk_events(chunk, out)?;
        Ok(Step::Continue)
    }

    /// Closes the turn (at `[DONE]`, or when the body ends without it): the usage, then the
    /// finish. A turn without a finish reason was cut short.
    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let Some(finish) = self.finish.take() else {
            return Err(ModelError::Protocol(
                "the stream ended without a finish_reason".to_owned(),
            ));
        };
        if let Some(usage) = self.usage.take() {
            out.push(ModelEvent::Usage(usage));
        }
        out.push(ModelEvent::Finish(finish));
        Ok(())
    }
}

impl Decoder {
    /// The events of one chunk's reading, pushed onto `out`.
    pub(super) fn chunk_events(
        &mut self,
        chunk: Chunk,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        if let Some(error) = chunk.error {
            let message = match error {
                serde_json::Value::String(text) => text,
                other => crate::http::error_message(other.to_string().as_bytes())
                    .unwrap_or_else(|| "no message".to_owned()),
            };
            return Err(ModelError::Protocol(format!(
                "the upstream reported an error mid-stream: {message}"
            )));
        }
        // n > 1 is never requested; a server that sends extra choices anyway is ignored there.
        for choice in chunk.choices.into_iter().filter(|choice| choice.index == 0) {
            // The logprobs of this chunk's text go just before it.
            if let Some(tokens) = choice.logprobs.and_then(|l| l.into_tokens()) {
                out.push(ModelEvent::Logprobs(tokens));
            }
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
                    out.push(ModelEvent::TextDelta(text));
                }
                for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate()
                {
                    let (name, arguments) = split_function(call.function);
                    out.push(ModelEvent::ToolCallDelta {
                        index: call.index.unwrap_or(position),
                        id: call.id.filter(|id| !id.is_empty()),
                        name,
                        arguments,
                        thought_signature: thought_signature(call.extra_content),
                    });
                }
            }
            if let Some(reason) = choice.finish_reason.filter(|reason| !reason.is_empty()) {
                self.finish = Some(finish_reason(&reason));
            }
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(token_usage(&usage));
        }
        Ok(())
    }
}

/// The events of a whole `chat.completion` (a server that ignored `stream: true`).
pub(crate) fn completion_events(body: &[u8]) -> Result<Vec<ModelEvent>, ModelError> {
    let completion: Completion = serde_json::from_slice(body)
        .map_err(|err| ModelError::Protocol(format!("invalid completion: {err}")))?;
    let Some(choice) = completion
        .choices
        .into_iter()
        .find(|choice| choice.index == 0)
    else {
        return Err(ModelError::Protocol(
            "the completion has no choices".to_owned(),
        ));
    };
    let mut out = Vec::new();
    if let Some(tokens) = choice.logprobs.and_then(|l| l.into_tokens()) {
        out.push(ModelEvent::Logprobs(tokens));
    }
    if let Some(text) = choice.message.content.filter(|text| !text.is_empty()) {
        out.push(ModelEvent::TextDelta(text));
    }
    for (index, call) in choice.message.tool_calls.into_iter().enumerate() {
        let (name, arguments) = split_function(Some(call.function));
        out.push(ModelEvent::ToolCallDelta {
            index,
            id: call.id.filter(|id| !id.is_empty()),
            name,
            arguments,
            thought_signature: thought_signature(call.extra_content),
        });
    }
    if let Some(usage) = completion.usage {
        out.push(ModelEvent::Usage(token_usage(&usage)));
    }
    let Some(reason) = choice.finish_reason.filter(|reason| !reason.is_empty()) else {
        return Err(ModelError::Protocol(
            "the completion has no finish_reason".to_owned(),
        ));
    };
    out.push(ModelEvent::Finish(finish_reason(&reason)));
    Ok(out)
}

fn split_function(function: Option<FunctionDelta>) -> (Option<String>, String) {
    match function {
        Some(function) => (
            function.name.filter(|name| !name.is_empty()),
            function.arguments.unwrap_or_default(),
        ),
        None => (None, String::new()),
    }
}

fn thought_signature(extra: Option<ExtraContent<String>>) -> Option<String> {
    extra?.google?.thought_signature
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        // `function_call` is the pre-tools name some older compatible servers still send.
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

fn token_usage(usage: &Usage) -> TokenUsage {
    TokenUsage {
        input_tokens: usage.prompt_tokens,
        output_tokens: usage.completion_tokens,
        cached_input_tokens: usage
            .prompt_tokens_details
            .as_ref()
            .and_then(|details| details.cached_tokens)
            .unwrap_or(0),
        reasoning_tokens: usage
            .completion_tokens_details
            .as_ref()
            .and_then(|details| details.reasoning_tokens)
            .unwrap_or(0),
        cache_write_tokens: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn openai_text_stream() {
        let events = decode(&[
            r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}],"usage":null}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}],"usage":null}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}],"usage":null}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":1}}}"#,
            "[DONE]",
        ]);
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::TextDelta("Hel".into()),
                ModelEvent::TextDelta("lo".into()),
                ModelEvent::Usage(TokenUsage {
                    input_tokens: 9,
                    output_tokens: 2,
                    cached_input_tokens: 4,
                    reasoning_tokens: 1,
                    cache_write_tokens: 0,
                }),
                ModelEvent::Finish(FinishReason::Stop),
            ])
        );
    }

    #[test]
    fn tool_call_pieces_keep_their_index() {
        let events = decode(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"g","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ]);
        let delta = |index, id: Option<&str>, name: Option<&str>, arguments: &str| {
            ModelEvent::ToolCallDelta {
                index,
                id: id.map(str::to_owned),
                name: name.map(str::to_owned),
                arguments: arguments.to_owned(),
                thought_signature: None,
            }
        };
        assert_eq!(
            events,
            Ok(vec![
                delta(0, Some("call_a"), Some("f"), ""),
                delta(0, None, None, "{\"a\":"),
                delta(1, Some("call_b"), Some("g"), "{}"),
                delta(0, None, None, "1}"),
                ModelEvent::Finish(FinishReason::ToolCalls),
            ])
        );
    }

    #[test]
    fn gemini_style_call_without_index_and_with_signature() {
        let events = decode(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"x","type":"function","function":{"name":"f","arguments":"{}"},"extra_content":{"google":{"thought_signature":"sig"}}}]},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::ToolCallDelta {
                    index: 0,
                    id: Some("x".into()),
                    name: Some("f".into()),
                    arguments: "{}".into(),
                    thought_signature: Some("sig".into()),
                },
                ModelEvent::Finish(FinishReason::ToolCalls),
            ])
        );
    }

    #[test]
    fn finish_reasons() {
        for (wire, want) in [
            ("stop", FinishReason::Stop),
            ("tool_calls", FinishReason::ToolCalls),
            ("function_call", FinishReason::ToolCalls),
            ("length", FinishReason::Length),
            ("content_filter", FinishReason::ContentFilter),
            ("eos", FinishReason::Other("eos".into())),
        ] {
            let chunk =
                format!(r#"{{"choices":[{{"index":0,"delta":{{}},"finish_reason":"{wire}"}}]}}"#);
            assert_eq!(
                decode(&[&chunk, "[DONE]"]),
                Ok(vec![ModelEvent::Finish(want)])
            );
        }
    }

    #[test]
    fn last_usage_wins_and_comes_before_finish() {
        let events = decode(&[
            r#"{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":1}}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#,
        ]);
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::TextDelta("a".into()),
                ModelEvent::TextDelta("b".into()),
                ModelEvent::Usage(TokenUsage {
                    input_tokens: 5,
                    output_tokens: 2,
                    ..TokenUsage::default()
                }),
                ModelEvent::Finish(FinishReason::Stop),
            ])
        );
    }

    #[test]
    fn missing_finish_reason_is_a_protocol_error() {
        let cut = decode(&[r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#]);
        assert!(matches!(cut, Err(ModelError::Protocol(_))), "{cut:?}");
        let done_early = decode(&[
            r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#,
            "[DONE]",
        ]);
        assert!(
            matches!(done_early, Err(ModelError::Protocol(_))),
            "{done_early:?}"
        );
    }

    #[test]
    fn garbage_and_inband_errors() {
        assert!(matches!(
            decode(&["{not json"]),
            Err(ModelError::Protocol(_))
        ));
        let inband = decode(&[r#"{"error":{"message":"overloaded","type":"server_error"}}"#]);
        assert_eq!(
            inband,
            Err(ModelError::Protocol(
                "the upstream reported an error mid-stream: overloaded".into()
            ))
        );
    }

    #[test]
    fn other_choices_are_ignored() {
        let events = decode(&[
            r#"{"choices":[{"index":1,"delta":{"content":"other"},"finish_reason":"length"},{"index":0,"delta":{"content":"mine"},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::TextDelta("mine".into()),
                ModelEvent::Finish(FinishReason::Stop),
            ])
        );
    }

    #[test]
    fn a_whole_completion_becomes_events() {
        let events = completion_events(
            br#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
        );
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::ToolCallDelta {
                    index: 0,
                    id: Some("call_1".into()),
                    name: Some("f".into()),
                    arguments: "{}".into(),
                    thought_signature: None,
                },
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
