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
use crate::sse::{SseDecoder, Step, parse_error};
use crate::sse_parse::Data;

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

    /// The usual chunk ([`Chunks::plain`]) read from its bytes: only its text is checked to be
    /// UTF-8. Anything else is checked whole and read as text.
    fn data_bytes(&mut self, data: &[u8], out: &mut Vec<ModelEvent>) -> Result<Step, ModelError> {
        if let Some(text) = self.fast.plain(data) {
            // What `data` pushes for the same chunk (`Reading::Text`).
            if !text.is_empty() {
                out.push(ModelEvent::TextDelta(text.to_owned()));
            }
            return Ok(Step::Continue);
        }
        let data = Data::Unchecked(data).checked().map_err(parse_error)?;
        self.data(data, out)
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
    use crate::sse::decode_data;
    use crate::sse_parse::SseParser;

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

    /// A turn of `body` read in these pieces as `sse.rs` reads it (the parser's unchecked data
    /// through `data_bytes`) when `unchecked`, else every data field checked by the parser and
    /// decoded as text (as before `data_bytes`): the events up to the first error.
    fn read_turn(pieces: &[&[u8]], unchecked: bool) -> Vec<Result<ModelEvent, ModelError>> {
        let mut parser = SseParser::default();
        let mut decoder = Decoder::default();
        let mut pieces = pieces.iter();
        let mut out = Vec::new();
        let mut yielded = Vec::new();
        loop {
            let event = if unchecked {
                parser
                    .next_raw()
                    .map(|event| event.map(|event| decode_data(&mut decoder, event.data, &mut out)))
            } else {
                parser
                    .next_event()
                    .map(|event| event.map(|event| decoder.data(event.data, &mut out)))
            };
            let step = match event {
                Ok(Some(step)) => step,
                Ok(None) => match pieces.next() {
                    Some(piece) => {
                        parser.feed(bytes::Bytes::copy_from_slice(piece));
                        continue;
                    }
                    None => decoder.end(&mut out).map(|()| Step::Done),
                },
                Err(err) => Err(parse_error(err)),
            };
            yielded.extend(out.drain(..).map(Ok));
            match step {
                Ok(Step::Continue) => {}
                Ok(Step::Done) => return yielded,
                Err(err) => {
                    yielded.push(Err(err));
                    return yielded;
                }
            }
        }
    }

    /// The fake provider's turn (the benchmark's upstream): a first chunk, text chunks with
    /// these texts (JSON values), the finish and the usage.
    fn fake_turn(texts: &[&str]) -> Vec<u8> {
        let text = r#"{"choices":[{"delta":{"content":{T}},"finish_reason":null,"index":0,"logprobs":null}],"created":1700000000,"id":"chatcmpl-fake-1","model":"gpt-fake","object":"chat.completion.chunk","system_fingerprint":"fp_fake","usage":null}"#;
        let mut chunks = vec![
            r#"{"choices":[{"delta":{"content":"","refusal":null,"role":"assistant"},"finish_reason":null,"index":0,"logprobs":null}],"created":1700000000,"id":"chatcmpl-fake-1","model":"gpt-fake","object":"chat.completion.chunk","system_fingerprint":"fp_fake","usage":null}"#.to_owned(),
        ];
        chunks.extend(texts.iter().map(|value| text.replace("{T}", value)));
        chunks.push(r#"{"choices":[{"delta":{},"finish_reason":"stop","index":0,"logprobs":null}],"created":1700000000,"id":"chatcmpl-fake-1","model":"gpt-fake","object":"chat.completion.chunk","system_fingerprint":"fp_fake","usage":null}"#.to_owned());
        chunks.push(r#"{"choices":[],"created":1700000000,"id":"chatcmpl-fake-1","model":"gpt-fake","object":"chat.completion.chunk","system_fingerprint":"fp_fake","usage":{"completion_tokens":64,"prompt_tokens":12,"total_tokens":76}}"#.to_owned());
        chunks.push("[DONE]".to_owned());
        let mut body = Vec::new();
        for chunk in chunks {
            body.extend_from_slice(b"data: ");
            body.extend_from_slice(chunk.as_bytes());
            body.extend_from_slice(b"\n\n");
        }
        body
    }

    const TEXTS: [&str; 8] = [
        r#"" a""#,
        r#"" b""#,
        r#"" c""#,
        r#""\u00e9\"""#,
        r#"" d""#,
        r#""é😀✓""#,
        r#""""#,
        r#"" e""#,
    ];

    /// The usual text chunks are taken from their bytes (only the text checked to be UTF-8) and
    /// yield what they yielded checked whole, in any chunking: a multi-byte character cut by a
    /// read's end is still one character.
    #[test]
    fn text_chunks_read_from_their_bytes_yield_what_checked_text_yields() {
        let body = fake_turn(&TEXTS);
        let want: Vec<Result<ModelEvent, ModelError>> =
            [" a", " b", " c", "\u{e9}\"", " d", "é😀✓", " e"]
                .iter()
                .map(|text| Ok(ModelEvent::TextDelta((*text).to_owned())))
                .chain([
                    Ok(ModelEvent::Usage(TokenUsage {
                        input_tokens: 12,
                        output_tokens: 64,
                        cached_input_tokens: 0,
                        reasoning_tokens: 0,
                        cache_write_tokens: 0,
                    })),
                    Ok(ModelEvent::Finish(FinishReason::Stop)),
                ])
                .collect();
        assert_eq!(read_turn(&[&body], true), want);
        assert_eq!(read_turn(&[&body], false), want);
        for cut in 0..=body.len() {
            let pieces = [&body[..cut], &body[cut..]];
            assert_eq!(read_turn(&pieces, true), want, "cut at {cut}");
        }
        // The text chunks from the third on are the usual ones.
        let mut decoder = Decoder::default();
        let mut plain = Vec::new();
        for data in body
            .split(|&byte| byte == b'\n')
            .filter_map(|line| line.strip_prefix(b"data: "))
        {
            plain.push(decoder.fast.plain(data).is_some());
            let mut out = Vec::new();
            decoder.data_bytes(data, &mut out).ok();
        }
        assert_eq!(
            plain,
            [
                false, false, false, true, false, true, true, true, true, false, false, false
            ]
        );
    }

    /// A text chunk with bytes that are not UTF-8 anywhere (a byte replaced or inserted), or
    /// with whitespace the decoder trims, yields what it yielded checked whole by the parser:
    /// the same events, and the parser's error at the same point.
    #[test]
    fn edited_text_chunks_read_from_their_bytes_yield_what_checked_text_yields() {
        let body = fake_turn(&TEXTS);
        // The fifth text chunk (` d`), read by the usual path when unedited.
        let start = body
            .windows(4)
            .position(|window| window == br#"" d""#)
            .and_then(|at| body[..at].iter().rposition(|&byte| byte == b'\n'))
            .map_or(0, |at| at + 1);
        let end = start
            + body[start..]
                .iter()
                .position(|&byte| byte == b'\n')
                .unwrap_or(0);
        let mut refused = 0;
        for at in start..=end {
            for edit in 0..6 {
                let mut edited = body.clone();
                match edit {
                    0 if at < end => edited[at] = 0xFF,
                    1 if at < end => edited[at] = 0x80,
                    2 => edited.insert(at, 0xC3),
                    3 => edited.splice(at..at, [0xE2, 0x9C]).for_each(drop),
                    4 => edited.splice(at..at, "\u{a0}".bytes()).for_each(drop),
                    5 => edited.insert(at, b' '),
                    _ => continue,
                }
                let checked = read_turn(&[&edited], false);
                refused += usize::from(checked.last().is_some_and(|last| {
                    last == &Err(ModelError::Protocol("the stream is not valid UTF-8".into()))
                }));
                assert_eq!(read_turn(&[&edited], true), checked, "edit {edit} at {at}");
                let cut = at.min(edited.len());
                let pieces = [&edited[..cut], &edited[cut..]];
                assert_eq!(
                    read_turn(&pieces, true),
                    checked,
                    "edit {edit} at {at}, cut"
                );
            }
        }
        // Nearly every edit of the first four kinds is refused (not those in the field's name,
        // which is never decoded: the line is then an unknown field).
        assert!(refused >= 4 * (end - start) - 40, "{refused}");
    }
}
