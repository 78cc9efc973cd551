//! Turning Gemini response chunks into [`ModelEvent`]s. Pure: no I/O, fed one SSE `data` field
//! (one whole `GenerateContentResponse`) at a time, so every rule is unit-tested here.
//!
//! - Text parts are forwarded as they arrive; empty parts are skipped. Thought summaries
//!   (`thought: true` parts) and the signature Gemini may put on a part that is not a call are
//!   gathered into one `Reasoning` event (id with [`REASONING_PREFIX`]) handed out when
//!   the turn ends.
//! - Gemini sends each function call whole, so each `functionCall` part is exactly one
//!   `ToolCallDelta` with the complete arguments, its own `thoughtSignature` (Gemini puts one on
//!   the first call of a step) and Gemini's id, or a generated `call_<n>` when it gives none.
//! - Gemini's stream has no end marker: the turn ends with the body. The finish reason and the
//!   usage (every chunk may repeat a running total; the last wins) are held until then, so that
//!   `Usage` then `Finish` come last. A body that ends without a finish reason was cut short.
//! - A finish of `STOP` after function calls is [`FinishReason::ToolCalls`] (Gemini has no such
//!   reason); a prompt blocked before any candidate is [`FinishReason::ContentFilter`].
//! - Usage: `input_tokens` is the prompt (cached tokens included, as the engine counts them) plus
//!   the tool-use prompt; `output_tokens` is the answer plus the thinking, which Gemini counts
//!   apart but bills as output; `reasoning_tokens` is the thinking.

use engine::model::{FinishReason, ModelError, ModelEvent, Reasoning, TokenUsage};

use super::wire::{ErrorStatus, GenerateResponse, REASONING_PREFIX, UsageMetadata};
use crate::sse::{SseDecoder, Step};

/// Makes the id of a call Gemini sent without one.
pub(crate) type CallIds = Box<dyn FnMut() -> String + Send>;

/// The state of one streamed turn.
pub(crate) struct Decoder {
    next_id: CallIds,
    /// Function calls seen so far: the next call's index.
    calls: usize,
    finish: Option<FinishReason>,
    usage: Option<TokenUsage>,
    /// `promptFeedback.blockReason`: the prompt was refused before any candidate.
    blocked: bool,
    /// Thought summary text and the signature of a non-call part, gathered over the turn.
    thought: String,
    signature: Option<String>,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("calls", &self.calls)
            .field("finish", &self.finish)
            .field("usage", &self.usage)
            .field("blocked", &self.blocked)
            .finish_non_exhaustive()
    }
}

impl Decoder {
    pub(crate) fn new(next_id: CallIds) -> Self {
        Decoder {
            next_id,
            calls: 0,
            finish: None,
            usage: None,
            blocked: false,
            thought: String::new(),
            signature: None,
        }
    }

    /// Decodes one whole `GenerateContentResponse`.
    pub(crate) fn response(
        &mut self,
        response: GenerateResponse,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        if let Some(error) = response.error {
            return Err(inband_error(&error));
        }
        // One candidate is ever asked for; a server that sends more is ignored beyond the first.
        for candidate in response
            .candidates
            .into_iter()
            .filter(|candidate| candidate.index.unwrap_or(0) == 0)
        {
            let parts = candidate.content.map(|content| content.parts);
            for part in parts.unwrap_or_default() {
                if let Some(call) = part.function_call {
                    let id = call
                        .id
                        .filter(|id| !id.is_empty())
                        .unwrap_or_else(|| (self.next_id)());
                    out.push(ModelEvent::ToolCallDelta {
                        index: self.calls,
                        id: Some(id),
                        name: call.name.filter(|name| !name.is_empty()),
                        arguments: call
                            .args
                            .map_or_else(|| "{}".to_owned(), |args| args.get().to_owned()),
                        thought_signature: part.thought_signature.filter(|sig| !sig.is_empty()),
                    });
                    self.calls += 1;
                    continue;
                }
                if let Some(signature) = part.thought_signature.filter(|sig| !sig.is_empty()) {
                    self.signature = Some(signature);
                }
                if part.thought == Some(true) {
                    if let Some(text) = part.text {
                        self.thought.push_str(&text);
                    }
                    continue;
                }
                if let Some(text) = part.text.filter(|text| !text.is_empty()) {
                    out.push(ModelEvent::TextDelta(text));
                }
            }
            if let Some(reason) = candidate.finish_reason.filter(|reason| !reason.is_empty()) {
                self.finish = Some(finish_reason(&reason));
            }
        }
        if response
            .prompt_feedback
            .and_then(|feedback| feedback.block_reason)
            .is_some_and(|reason| !reason.is_empty())
        {
            self.blocked = true;
        }
        if let Some(usage) = response.usage_metadata {
            self.usage = Some(token_usage(&usage));
        }
        Ok(())
    }
}

impl SseDecoder for Decoder {
    /// After an in-band error, what is already buffered is read so that the connection can go
    /// back to the pool.
    const DRAIN_AFTER_ERROR: bool = true;

    /// Decodes one SSE `data` field, pushing the events it yields onto `out`. Gemini's stream
    /// has no end marker: the turn goes on until the body ends.
    fn data(&mut self, data: &str, out: &mut Vec<ModelEvent>) -> Result<Step, ModelError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Step::Continue);
        }
        let response: GenerateResponse = serde_json::from_str(data)
            .map_err(|err| ModelError::Protocol(format!("invalid stream chunk: {err}")))?;
        self.response(response, out).map(|()| Step::Continue)
    }

    /// Closes the turn when the body ends: the usage, then the finish.
    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let finish = match self.finish.take() {
            Some(FinishReason::Stop) if self.calls > 0 => FinishReason::ToolCalls,
            Some(finish) => finish,
            None if self.blocked => FinishReason::ContentFilter,
            None => {
                return Err(ModelError::Protocol(
                    "the stream ended without a finishReason".to_owned(),
                ));
            }
        };
        if !self.thought.is_empty() || self.signature.is_some() {
            let summary = std::mem::take(&mut self.thought);
            out.push(ModelEvent::Reasoning(Reasoning {
                id: Some(format!("{REASONING_PREFIX}{}", (self.next_id)())),
                summary: if summary.is_empty() {
                    Vec::new()
                } else {
                    vec![summary]
                },
                text: None,
                encrypted: self.signature.take(),
            }));
        }
        if let Some(usage) = self.usage.take() {
            out.push(ModelEvent::Usage(usage));
        }
        out.push(ModelEvent::Finish(finish));
        Ok(())
    }
}

/// The events of a whole JSON body: one response, or the JSON array a server sends when it
/// ignores `alt=sse`.
pub(crate) fn body_events(body: &[u8], next_id: CallIds) -> Result<Vec<ModelEvent>, ModelError> {
    // Not an untagged enum: serde buffers those, and the raw call arguments cannot be buffered.
    let is_array = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    let responses = if is_array {
        serde_json::from_slice::<Vec<GenerateResponse>>(body)
    } else {
        serde_json::from_slice::<GenerateResponse>(body).map(|one| vec![one])
    }
    .map_err(|err| ModelError::Protocol(format!("invalid response: {err}")))?;
    let mut decoder = Decoder::new(next_id);
    let mut out = Vec::new();
    for response in responses {
        decoder.response(response, &mut out)?;
    }
    decoder.end(&mut out)?;
    Ok(out)
}

/// An error inside a 200 stream (Gemini sends e.g. a 503 "overloaded" that way): with its HTTP
/// code as an upstream error, so that a rate limit still reads as one.
fn inband_error(error: &ErrorStatus) -> ModelError {
    let message = error.describe().unwrap_or_else(|| "no message".to_owned());
    match error.code.filter(|code| (400..=599).contains(code)) {
        Some(status) => ModelError::Upstream { status, message },
        None => ModelError::Protocol(format!(
            "the upstream reported an error mid-stream: {message}"
        )),
    }
}

pub(crate) fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_ascii_lowercase()),
    }
}

fn token_usage(usage: &UsageMetadata) -> TokenUsage {
    TokenUsage {
        input_tokens: usage
            .prompt_token_count
            .saturating_add(usage.tool_use_prompt_token_count),
        output_tokens: usage
            .candidates_token_count
            .saturating_add(usage.thoughts_token_count),
        cached_input_tokens: usage.cached_content_token_count,
        reasoning_tokens: usage.thoughts_token_count,
        cache_write_tokens: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter() -> CallIds {
        let mut n = 0;
        Box::new(move || {
            n += 1;
            format!("call_{n}")
        })
    }

    /// Feeds `data` fields, then ends the body; all events, or the first error.
    fn decode(datas: &[&str]) -> Result<Vec<ModelEvent>, ModelError> {
        let mut decoder = Decoder::new(counter());
        let mut out = Vec::new();
        for data in datas {
            decoder.data(data, &mut out)?;
        }
        decoder.end(&mut out)?;
        Ok(out)
    }

    fn call(index: usize, id: &str, name: &str, args: &str, sig: Option<&str>) -> ModelEvent {
        ModelEvent::ToolCallDelta {
            index,
            id: Some(id.to_owned()),
            name: Some(name.to_owned()),
            arguments: args.to_owned(),
            thought_signature: sig.map(str::to_owned),
        }
    }

    #[test]
    fn text_stream_with_usage_last_and_signature_kept_as_reasoning() {
        let events = decode(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"Hel"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9},"modelVersion":"gemini-2.5-flash"}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"lo"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":1}}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"","thoughtSignature":"c2ln"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":2,"cachedContentTokenCount":4,"thoughtsTokenCount":7,"totalTokenCount":18}}"#,
        ]);
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::TextDelta("Hel".into()),
                ModelEvent::TextDelta("lo".into()),
                ModelEvent::Reasoning(Reasoning {
                    id: Some("thought_call_1".into()),
                    summary: Vec::new(),
                    text: None,
                    encrypted: Some("c2ln".into()),
                }),
                ModelEvent::Usage(TokenUsage {
                    input_tokens: 9,
                    output_tokens: 9,
                    cached_input_tokens: 4,
                    reasoning_tokens: 7,
                    cache_write_tokens: 0,
                }),
                ModelEvent::Finish(FinishReason::Stop),
            ])
        );
    }

    #[test]
    fn parallel_calls_are_whole_with_ids_and_the_first_signature() {
        let events = decode(&[
            r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"U0lHMQ=="},{"functionCall":{"name":"get_weather","args":{"city":"Tokyo"}}},{"functionCall":{"id":"fc-9","name":"now"}}]},"finishReason":"STOP","index":0}]}"#,
        ]);
        assert_eq!(
            events,
            Ok(vec![
                call(
                    0,
                    "call_1",
                    "get_weather",
                    r#"{"city":"Paris"}"#,
                    Some("U0lHMQ==")
                ),
                call(1, "call_2", "get_weather", r#"{"city":"Tokyo"}"#, None),
                call(2, "fc-9", "now", "{}", None),
                ModelEvent::Finish(FinishReason::ToolCalls),
            ])
        );
    }

    #[test]
    fn arguments_are_kept_as_sent() {
        let args = r#"{"q": "a \"quoted\" \\ path\nline — ü 😀", "n": [1, 2.50, null], "o": {"z": 1, "a": 2}}"#;
        let chunk = format!(
            r#"{{"candidates":[{{"content":{{"parts":[{{"functionCall":{{"name":"f","args":{args}}}}}]}},"finishReason":"STOP"}}]}}"#
        );
        let events = decode(&[&chunk]);
        assert_eq!(
            events,
            Ok(vec![
                call(0, "call_1", "f", args, None),
                ModelEvent::Finish(FinishReason::ToolCalls),
            ])
        );
    }

    #[test]
    fn calls_across_chunks_keep_counting_and_text_may_precede_them() {
        let events = decode(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"Let me check."}]}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"a","args":{}},"thoughtSignature":"s1"}]}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"b","args":{}}}]},"finishReason":"STOP"}]}"#,
        ]);
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::TextDelta("Let me check.".into()),
                call(0, "call_1", "a", "{}", Some("s1")),
                call(1, "call_2", "b", "{}", None),
                ModelEvent::Finish(FinishReason::ToolCalls),
            ])
        );
    }

    #[test]
    fn thoughts_are_reasoning_and_other_candidates_are_skipped() {
        let events = decode(&[
            r#"{"candidates":[{"index":0,"content":{"parts":[{"text":"hmm","thought":true},{"text":"mine"}]},"finishReason":"STOP"},{"index":1,"content":{"parts":[{"text":"other"}]},"finishReason":"MAX_TOKENS"}]}"#,
        ]);
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::TextDelta("mine".into()),
                ModelEvent::Reasoning(Reasoning {
                    id: Some("thought_call_1".into()),
                    summary: vec!["hmm".into()],
                    text: None,
                    encrypted: None,
                }),
                ModelEvent::Finish(FinishReason::Stop),
            ])
        );
    }

    #[test]
    fn finish_reasons() {
        for (wire, want) in [
            ("STOP", FinishReason::Stop),
            ("MAX_TOKENS", FinishReason::Length),
            ("SAFETY", FinishReason::ContentFilter),
            ("RECITATION", FinishReason::ContentFilter),
            ("PROHIBITED_CONTENT", FinishReason::ContentFilter),
            (
                "MALFORMED_FUNCTION_CALL",
                FinishReason::Other("malformed_function_call".into()),
            ),
            ("OTHER", FinishReason::Other("other".into())),
        ] {
            let chunk = format!(r#"{{"candidates":[{{"finishReason":"{wire}"}}]}}"#);
            assert_eq!(decode(&[&chunk]), Ok(vec![ModelEvent::Finish(want)]));
        }
    }

    #[test]
    fn a_call_cut_by_max_tokens_keeps_length() {
        let events = decode(&[
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}]},"finishReason":"MAX_TOKENS"}]}"#,
        ]);
        assert_eq!(
            events.map(|events| events.last().cloned()),
            Ok(Some(ModelEvent::Finish(FinishReason::Length)))
        );
    }

    #[test]
    fn a_blocked_prompt_is_a_content_filter_finish() {
        let events = decode(&[
            r#"{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":5}}"#,
        ]);
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::Usage(TokenUsage {
                    input_tokens: 5,
                    ..TokenUsage::default()
                }),
                ModelEvent::Finish(FinishReason::ContentFilter),
            ])
        );
    }

    #[test]
    fn a_body_without_finish_reason_is_a_protocol_error() {
        let cut = decode(&[r#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}"#]);
        assert!(matches!(cut, Err(ModelError::Protocol(_))), "{cut:?}");
    }

    #[test]
    fn garbage_and_inband_errors() {
        assert!(matches!(
            decode(&["{not json"]),
            Err(ModelError::Protocol(_))
        ));
        assert_eq!(
            decode(&[
                r#"{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#
            ]),
            Err(ModelError::Upstream {
                status: 503,
                message: "UNAVAILABLE: The model is overloaded.".into()
            })
        );
        assert_eq!(
            decode(&[r#"{"error":{"message":"odd"}}"#]),
            Err(ModelError::Protocol(
                "the upstream reported an error mid-stream: odd".into()
            ))
        );
    }

    #[test]
    fn a_json_array_body_becomes_events() {
        let events = body_events(
            br#"[{"candidates":[{"content":{"parts":[{"text":"a"}]}}]},{"candidates":[{"content":{"parts":[{"text":"b"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":2}}]"#,
            counter(),
        );
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::TextDelta("a".into()),
                ModelEvent::TextDelta("b".into()),
                ModelEvent::Usage(TokenUsage {
                    input_tokens: 1,
                    output_tokens: 2,
                    ..TokenUsage::default()
                }),
                ModelEvent::Finish(FinishReason::Stop),
            ])
        );
        let one = body_events(
            br#"{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"STOP"}]}"#,
            counter(),
        );
        assert_eq!(
            one,
            Ok(vec![
                ModelEvent::TextDelta("x".into()),
                ModelEvent::Finish(FinishReason::Stop),
            ])
        );
    }
}
