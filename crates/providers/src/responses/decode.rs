//! Turning Responses stream events into [`ModelEvent`]s. Pure: no I/O, fed one SSE `data` field
//! at a time, so every rule is unit-tested here.
//!
//! - Text: each `response.output_text.delta` (and `response.refusal.delta`: a refusal is the
//!   model's answer too) is forwarded as it arrives.
//! - Function calls: numbered 0, 1, … in the order their items appear in the output (reasoning
//!   and message items take no number). `output_item.added` gives the `call_id` (our id) and the
//!   name; each `function_call_arguments.delta` is forwarded as an arguments piece.
//! - The `done` events (`output_text.done`, `function_call_arguments.done`,
//!   `output_item.done`) and the final response's `output` only fill in what was not streamed,
//!   so a server that sends whole items (or answers without streaming) gives the same events.
//! - A reasoning item becomes one `Reasoning` event when it is done (its id, summary texts and
//!   `encrypted_content`); the final response's copy of it is not repeated.
//! - The terminal event closes the turn: `Usage`, then `Finish`, always last.
//!   `response.completed` finishes with `ToolCalls` when the turn made a call, else `Stop`;
//!   `response.incomplete` with `Length` for `max_output_tokens`; `response.failed` and `error`
//!   are errors.

use std::collections::HashSet;

use engine::model::{FinishReason, ModelError, ModelEvent, Reasoning, TokenUsage};

use super::wire::{ErrorBody, OutputContent, OutputItem, ResponseObject, StreamEvent, Usage};
use crate::sse::{SseDecoder, Step};

/// The state of one streamed turn.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// The function calls seen so far; a call's position here is its `ModelEvent` index.
    calls: Vec<Call>,
    /// `output_index`es of message items whose text was already forwarded.
    texts: HashSet<usize>,
    /// A text delta came without an `output_index`: `done` events then never repeat text.
    unindexed_text: bool,
    /// `output_index`es of reasoning items already handed out (the terminal event repeats
    /// them).
    reasonings: HashSet<usize>,
}

#[derive(Debug)]
struct Call {
    output_index: Option<usize>,
    item_id: Option<String>,
    /// Whether the id and name were forwarded.
    announced: bool,
    /// The arguments forwarded so far, to tell what a `done` event still adds.
    arguments: String,
}

impl SseDecoder for Decoder {
    /// Decodes one SSE `data` field, pushing the events it yields onto `out`.
    fn data(&mut self, data: &str, out: &mut Vec<ModelEvent>) -> Result<Step, ModelError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Step::Continue);
        }
        // Not part of the Responses protocol, but some compatible servers end with it anyway.
        if data == "[DONE]" {
            return Err(ended_early());
        }
        // Deltas (most events) in one pass; any other event, or a delta that pass declines,
        // through the serde types.
        let event = match super::fast::delta(data) {
            Some(event) => event,
            None => serde_json::from_str::<StreamEvent>(data)
                .map_err(|err| ModelError::Protocol(format!("invalid stream event: {err}")))?,
        };
        match event {
            StreamEvent::OutputItemAdded { output_index, item } => {
                if let OutputItem::FunctionCall {
                    id,
                    call_id,
                    name,
                    arguments,
                } = item
                {
                    let index = self.call_index(Some(output_index), id.as_deref());
                    self.announce(index, call_id, name, out);
                    self.arguments_so_far(index, &arguments, out);
                }
            }
            StreamEvent::TextDelta {
                output_index,
                delta,
                logprobs,
            } => {
                if let Some(tokens) = (crate::logprobs::Logprobs {
                    content: Some(logprobs),
                })
                .into_tokens()
                {
                    out.push(ModelEvent::Logprobs(tokens));
                }
                match output_index {
                    Some(output_index) => {
                        self.texts.insert(output_index);
                    }
                    None => self.unindexed_text = true,
                }
                if !delta.is_empty() {
                    out.push(ModelEvent::TextDelta(delta));
                }
            }
            StreamEvent::TextDone { output_index, text }
            | StreamEvent::RefusalDone {
                output_index,
                refusal: text,
            } => self.whole_text(output_index, text, out),
            StreamEvent::ArgumentsDelta {
                output_index,
                item_id,
                delta,
            } => {
                let index = self.call_index(output_index, item_id.as_deref());
                if let Some(call) = self.calls.get_mut(index) {
                    call.arguments.push_str(&delta);
                }
                out.push(arguments_piece(index, delta));
            }
            StreamEvent::ArgumentsDone {
                output_index,
                item_id,
                arguments,
            } => {
                let index = self.call_index(output_index, item_id.as_deref());
                self.arguments_so_far(index, &arguments, out);
            }
            StreamEvent::OutputItemDone { output_index, item } => {
                self.item_done(output_index, item, out);
            }
            StreamEvent::Completed { response } => {
                self.completed(response, out);
                return Ok(Step::Done);
            }
            StreamEvent::Incomplete { response } => {
                self.incomplete(response, out);
                return Ok(Step::Done);
            }
            StreamEvent::Failed { response } => {
                return Err(failure(response.error.as_ref()));
            }
            StreamEvent::Error {
                code,
                message,
                error,
            } => {
                let body = match error {
                    Some(body) => body,
                    None => ErrorBody { code, message },
                };
                return Err(failure(Some(&body)));
            }
            StreamEvent::Other => {}
        }
        Ok(Step::Continue)
    }

    /// The body ended before a terminal event: the turn was cut short.
    fn end(&mut self, _out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        // The inherent `end` (inherent methods win over the trait's).
        Err(Decoder::end(self))
    }
}

impl Decoder {
    /// The body ended (or `[DONE]` came) before a terminal event: the turn was cut short.
    pub(crate) fn end(&mut self) -> ModelError {
        ended_early()
    }

    /// The index of the call at `output_index` (or with item id `item_id`), numbering a call not
    /// seen before.
    fn call_index(&mut self, output_index: Option<usize>, item_id: Option<&str>) -> usize {
        let found = self.calls.iter().position(|call| {
            (output_index.is_some() && call.output_index == output_index)
                || (item_id.is_some() && call.item_id.as_deref() == item_id)
        });
        if let Some(index) = found {
            let call = &mut self.calls[index];
            call.output_index = call.output_index.or(output_index);
            if call.item_id.is_none() {
                call.item_id = item_id.map(str::to_owned);
            }
            return index;
        }
        self.calls.push(Call {
            output_index,
            item_id: item_id.map(str::to_owned),
            announced: false,
            arguments: String::new(),
        });
        self.calls.len() - 1
    }

    /// Forwards the id and name of call `index`, once.
    fn announce(&mut self, index: usize, id: String, name: String, out: &mut Vec<ModelEvent>) {
        let Some(call) = self.calls.get_mut(index) else {
            return;
        };
        if call.announced {
            return;
        }
        call.announced = true;
        out.push(ModelEvent::ToolCallDelta {
            index,
            id: Some(id),
            name: Some(name),
            arguments: String::new(),
            thought_signature: None,
        });
    }

    /// Given the whole arguments of call `index` so far, forwards the part not yet forwarded.
    /// When they disagree with what was streamed, the streamed pieces stand: they cannot be
    /// taken back.
    fn arguments_so_far(&mut self, index: usize, whole: &str, out: &mut Vec<ModelEvent>) {
        let Some(call) = self.calls.get_mut(index) else {
            return;
        };
        let Some(rest) = whole.strip_prefix(call.arguments.as_str()) else {
            return;
        };
        if rest.is_empty() {
            return;
        }
        let rest = rest.to_owned();
        call.arguments.push_str(&rest);
        out.push(arguments_piece(index, rest));
    }

    /// Forwards the text of a message item that was not streamed as deltas.
    fn whole_text(&mut self, output_index: Option<usize>, text: String, out: &mut Vec<ModelEvent>) {
        if self.unindexed_text {
            return;
        }
        if let Some(output_index) = output_index
            && !self.texts.insert(output_index)
        {
            return;
        }
        if !text.is_empty() {
            out.push(ModelEvent::TextDelta(text));
        }
    }

    fn item_done(&mut self, output_index: usize, item: OutputItem, out: &mut Vec<ModelEvent>) {
        match item {
            OutputItem::FunctionCall {
                id,
                call_id,
                name,
                arguments,
            } => {
                let index = self.call_index(Some(output_index), id.as_deref());
                self.announce(index, call_id, name, out);
                self.arguments_so_far(index, &arguments, out);
            }
            OutputItem::Message { content } => {
                let text: String = content
                    .into_iter()
                    .map(|part| match part {
                        OutputContent::OutputText { text } => text,
                        OutputContent::Refusal { refusal } => refusal,
                        OutputContent::Other => String::new(),
                    })
                    .collect();
                self.whole_text(Some(output_index), text, out);
            }
            OutputItem::Reasoning {
                id,
                summary,
                content,
                encrypted_content,
            } => {
                let empty = summary.is_empty()
                    && content.as_ref().is_none_or(Vec::is_empty)
                    && encrypted_content.as_deref().is_none_or(str::is_empty);
                // An empty item (nothing asked for) says nothing and could not go back.
                if !empty && self.reasonings.insert(output_index) {
                    let text = content.map(|parts| {
                        parts
                            .into_iter()
                            .map(|part| part.text)
                            .collect::<Vec<_>>()
                            .join("\n")
                    });
                    out.push(ModelEvent::Reasoning(Reasoning {
                        id,
                        summary: summary.into_iter().map(|part| part.text).collect(),
                        text: text.filter(|text| !text.is_empty()),
                        encrypted: encrypted_content.filter(|e| !e.is_empty()),
                    }));
                }
            }
            OutputItem::Other => {}
        }
    }

    /// `response.completed`: what did not stream, the usage, and `ToolCalls` if the turn made a
    /// call, else `Stop`.
    fn completed(&mut self, response: ResponseObject, out: &mut Vec<ModelEvent>) {
        self.response_output(response.output, out);
        push_usage(response.usage.as_ref(), out);
        let finish = if self.calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        };
        out.push(ModelEvent::Finish(finish));
    }

    /// `response.incomplete`: what did not stream, the usage, and the reason it stopped.
    fn incomplete(&mut self, response: ResponseObject, out: &mut Vec<ModelEvent>) {
        let reason = response
            .incomplete_details
            .and_then(|details| details.reason);
        self.response_output(response.output, out);
        push_usage(response.usage.as_ref(), out);
        out.push(ModelEvent::Finish(incomplete_reason(reason)));
    }

    /// The final `output` of a terminal event: fills in any item that did not stream.
    fn response_output(&mut self, output: Vec<OutputItem>, out: &mut Vec<ModelEvent>) {
        for (output_index, item) in output.into_iter().enumerate() {
            self.item_done(output_index, item, out);
        }
    }
}

/// The events of a whole response object (a server that ignored `stream: true`).
pub(crate) fn response_events(body: &[u8]) -> Result<Vec<ModelEvent>, ModelError> {
    let response: ResponseObject = serde_json::from_slice(body)
        .map_err(|err| ModelError::Protocol(format!("invalid response: {err}")))?;
    let completed = match response.status.as_deref() {
        Some("completed") => true,
        Some("incomplete") => false,
        Some("failed") => return Err(failure(response.error.as_ref())),
        other => {
            return Err(ModelError::Protocol(format!(
                "the response is not finished (status {})",
                other.unwrap_or("missing")
            )));
        }
    };
    let mut decoder = Decoder::default();
    let mut out = Vec::new();
    if completed {
        decoder.completed(response, &mut out);
    } else {
        decoder.incomplete(response, &mut out);
    }
    Ok(out)
}

fn arguments_piece(index: usize, arguments: String) -> ModelEvent {
    ModelEvent::ToolCallDelta {
        index,
        id: None,
        name: None,
        arguments,
        thought_signature: None,
    }
}

fn push_usage(usage: Option<&Usage>, out: &mut Vec<ModelEvent>) {
    if let Some(usage) = usage {
        out.push(ModelEvent::Usage(token_usage(usage)));
    }
}

fn token_usage(usage: &Usage) -> TokenUsage {
    TokenUsage {
        input_tokens: usage.input_tokens.unwrap_or(0),
        output_tokens: usage.output_tokens.unwrap_or(0),
        cached_input_tokens: usage
            .input_tokens_details
            .as_ref()
            .and_then(|details| details.cached_tokens)
            .unwrap_or(0),
        reasoning_tokens: usage
            .output_tokens_details
            .as_ref()
            .and_then(|details| details.reasoning_tokens)
            .unwrap_or(0),
        cache_write_tokens: 0,
    }
}

fn incomplete_reason(reason: Option<String>) -> FinishReason {
    match reason.as_deref() {
        Some("max_output_tokens") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
        None => FinishReason::Other("incomplete".to_owned()),
    }
}

/// A failure reported inside a 200 stream (`response.failed`, `error`). There is no HTTP status
/// to give, so it is a protocol-level error, worded as the Chat Completions adapter words one.
fn failure(error: Option<&ErrorBody>) -> ModelError {
    let message = error.and_then(|error| error.message.as_deref());
    let code = error.and_then(|error| error.code.as_deref());
    let text = match (message, code) {
        (Some(message), Some(code)) => format!("{message} ({code})"),
        (Some(message), None) => message.to_owned(),
        (None, Some(code)) => code.to_owned(),
        (None, None) => "no message".to_owned(),
    };
    ModelError::Protocol(format!("the upstream reported an error mid-stream: {text}"))
}

/// A stream that stops without a terminal event was cut: by the upstream, a proxy or the network.
fn ended_early() -> ModelError {
    ModelError::Transport("the stream ended before the response was complete".to_owned())
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
        Err(decoder.end())
    }

    fn call(index: usize, id: Option<&str>, name: Option<&str>, arguments: &str) -> ModelEvent {
        ModelEvent::ToolCallDelta {
            index,
            id: id.map(str::to_owned),
            name: name.map(str::to_owned),
            arguments: arguments.to_owned(),
            thought_signature: None,
        }
    }

    const CREATED: &str = r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}"#;

    #[test]
    fn reasoning_items_become_one_event_each() {
        let events = decode(&[
            r#"{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}"#,
            r#"{"type":"response.reasoning_summary_text.delta","output_index":0,"delta":"Checking"}"#,
            r#"{"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Checking the order."}],"encrypted_content":"gAAAAB"}}"#,
            r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":""}}"#,
            r#"{"type":"response.completed","response":{"status":"completed","output":[{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Checking the order."}],"encrypted_content":"gAAAAB"},{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{}"}]}}"#,
        ]);
        let reasoning: Vec<ModelEvent> = events
            .unwrap_or_default()
            .into_iter()
            .filter(|event| matches!(event, ModelEvent::Reasoning(_)))
            .collect();
        assert_eq!(
            reasoning,
            vec![ModelEvent::Reasoning(Reasoning {
                id: Some("rs_1".into()),
                summary: vec!["Checking the order.".into()],
                text: None,
                encrypted: Some("gAAAAB".into()),
            })]
        );
    }

    #[test]
    fn openai_text_stream() {
        let events = decode(&[
            CREATED,
            r#"{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","status":"in_progress"}}"#,
            r#"{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}"#,
            r#"{"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}"#,
            r#"{"type":"response.output_item.added","sequence_number":4,"output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}"#,
            r#"{"type":"response.content_part.added","sequence_number":5,"item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}"#,
            r#"{"type":"response.output_text.delta","sequence_number":6,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"Hel","logprobs":[]}"#,
            r#"{"type":"response.output_text.delta","sequence_number":7,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"lo","logprobs":[]}"#,
            r#"{"type":"response.output_text.done","sequence_number":8,"item_id":"msg_1","output_index":1,"content_index":0,"text":"Hello","logprobs":[]}"#,
            r#"{"type":"response.content_part.done","sequence_number":9,"item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":"Hello","annotations":[]}}"#,
            r#"{"type":"response.output_item.done","sequence_number":10,"output_index":1,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello","annotations":[]}]}}"#,
            r#"{"type":"response.completed","sequence_number":11,"response":{"id":"resp_1","status":"completed","output":[{"id":"rs_1","type":"reasoning","summary":[]},{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello","annotations":[]}]}],"usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":4},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":18},"total_tokens":29}}}"#,
        ]);
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::TextDelta("Hel".into()),
                ModelEvent::TextDelta("lo".into()),
                ModelEvent::Usage(TokenUsage {
                    input_tokens: 9,
                    output_tokens: 20,
                    cached_input_tokens: 4,
                    reasoning_tokens: 18,
                    cache_write_tokens: 0,
                }),
                ModelEvent::Finish(FinishReason::Stop),
            ])
        );
    }

    #[test]
    fn parallel_calls_are_numbered_by_output_order() {
        let events = decode(&[
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1"}}"#,
            r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_a","call_id":"call_a","name":"f","arguments":"","status":"in_progress"}}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_a","output_index":1,"delta":"{\"a\":"}"#,
            r#"{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","id":"fc_b","call_id":"call_b","name":"g","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_b","output_index":2,"delta":"{}"}"#,
            r#"{"type":"response.function_call_arguments.delta","item_id":"fc_a","output_index":1,"delta":"1}"}"#,
            r#"{"type":"response.function_call_arguments.done","item_id":"fc_a","output_index":1,"arguments":"{\"a\":1}"}"#,
            r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_a","call_id":"call_a","name":"f","arguments":"{\"a\":1}","status":"completed"}}"#,
            r#"{"type":"response.function_call_arguments.done","item_id":"fc_b","output_index":2,"arguments":"{}"}"#,
            r#"{"type":"response.completed","response":{"status":"completed","output":[{"type":"reasoning"},{"type":"function_call","id":"fc_a","call_id":"call_a","name":"f","arguments":"{\"a\":1}"},{"type":"function_call","id":"fc_b","call_id":"call_b","name":"g","arguments":"{}"}]}}"#,
        ]);
        assert_eq!(
            events,
            Ok(vec![
                call(0, Some("call_a"), Some("f"), ""),
                call(0, None, None, "{\"a\":"),
                call(1, Some("call_b"), Some("g"), ""),
                call(1, None, None, "{}"),
                call(0, None, None, "1}"),
                ModelEvent::Finish(FinishReason::ToolCalls),
            ])
        );
    }

    #[test]
    fn done_events_fill_in_what_did_not_stream() {
        // A server that sends whole items only: no deltas at all.
        let events = decode(&[
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message","content":[]}}"#,
            r#"{"type":"response.output_text.done","output_index":0,"content_index":0,"text":"Hi there"}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"message","content":[{"type":"output_text","text":"Hi there"}]}}"#,
            r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{\"x\":[1,2]}"}}"#,
            r#"{"type":"response.completed","response":{"status":"completed","output":[]}}"#,
        ]);
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::TextDelta("Hi there".into()),
                call(0, Some("call_1"), Some("f"), ""),
                call(0, None, None, "{\"x\":[1,2]}"),
                ModelEvent::Finish(FinishReason::ToolCalls),
            ])
        );
    }

    #[test]
    fn arguments_done_adds_only_the_missing_tail() {
        let events = decode(&[
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":0,"item_id":"fc_1","delta":"{\"q\":"}"#,
            r#"{"type":"response.function_call_arguments.done","output_index":0,"item_id":"fc_1","arguments":"{\"q\":\"x\"}"}"#,
            r#"{"type":"response.completed","response":{"status":"completed"}}"#,
        ]);
        assert_eq!(
            events,
            Ok(vec![
                call(0, Some("call_1"), Some("f"), ""),
                call(0, None, None, "{\"q\":"),
                call(0, None, None, "\"x\"}"),
                ModelEvent::Finish(FinishReason::ToolCalls),
            ])
        );
    }

    #[test]
    fn deltas_without_output_index_are_not_repeated_by_done_events() {
        let events = decode(&[
            r#"{"type":"response.output_text.delta","delta":"Hi"}"#,
            r#"{"type":"response.output_text.done","output_index":0,"text":"Hi"}"#,
            r#"{"type":"response.completed","response":{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"Hi"}]}]}}"#,
        ]);
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::TextDelta("Hi".into()),
                ModelEvent::Finish(FinishReason::Stop),
            ])
        );
    }

    #[test]
    fn refusal_is_forwarded_as_text() {
        let events = decode(&[
            r#"{"type":"response.refusal.delta","output_index":0,"content_index":0,"delta":"I can't help"}"#,
            r#"{"type":"response.refusal.done","output_index":0,"content_index":0,"refusal":"I can't help"}"#,
            r#"{"type":"response.completed","response":{"status":"completed"}}"#,
        ]);
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::TextDelta("I can't help".into()),
                ModelEvent::Finish(FinishReason::Stop),
            ])
        );
    }

    #[test]
    fn incomplete_reasons() {
        for (reason, want) in [
            (r#""max_output_tokens""#, FinishReason::Length),
            (r#""content_filter""#, FinishReason::ContentFilter),
            (r#""other_cap""#, FinishReason::Other("other_cap".into())),
            ("null", FinishReason::Other("incomplete".into())),
        ] {
            let event = format!(
                r#"{{"type":"response.incomplete","response":{{"status":"incomplete","incomplete_details":{{"reason":{reason}}},"usage":{{"input_tokens":5,"output_tokens":16}}}}}}"#
            );
            assert_eq!(
                decode(&[&event]),
                Ok(vec![
                    ModelEvent::Usage(TokenUsage {
                        input_tokens: 5,
                        output_tokens: 16,
                        ..TokenUsage::default()
                    }),
                    ModelEvent::Finish(want)
                ])
            );
        }
    }

    #[test]
    fn failures_in_the_stream_are_errors() {
        let failed = decode(&[
            r#"{"type":"response.output_text.delta","output_index":0,"delta":"a"}"#,
            r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"The model failed."}}}"#,
        ]);
        assert_eq!(
            failed,
            Err(ModelError::Protocol(
                "the upstream reported an error mid-stream: The model failed. (server_error)"
                    .into()
            ))
        );
        let error = decode(&[
            r#"{"type":"error","code":"rate_limit_exceeded","message":"Slow down","param":null,"sequence_number":3}"#,
        ]);
        assert_eq!(
            error,
            Err(ModelError::Protocol(
                "the upstream reported an error mid-stream: Slow down (rate_limit_exceeded)".into()
            ))
        );
        let nested = decode(&[r#"{"type":"error","error":{"message":"overloaded"}}"#]);
        assert_eq!(
            nested,
            Err(ModelError::Protocol(
                "the upstream reported an error mid-stream: overloaded".into()
            ))
        );
    }

    #[test]
    fn a_stream_without_terminal_event_was_cut() {
        let cut = decode(&[
            CREATED,
            r#"{"type":"response.output_text.delta","output_index":0,"delta":"a"}"#,
        ]);
        assert!(matches!(cut, Err(ModelError::Transport(_))), "{cut:?}");
        let done = decode(&[CREATED, "[DONE]"]);
        assert!(matches!(done, Err(ModelError::Transport(_))), "{done:?}");
    }

    #[test]
    fn garbage_is_a_protocol_error() {
        assert!(matches!(
            decode(&["{not json"]),
            Err(ModelError::Protocol(_))
        ));
        // A known event missing a required field.
        assert!(matches!(
            decode(&[r#"{"type":"response.output_text.delta","output_index":0}"#]),
            Err(ModelError::Protocol(_))
        ));
    }

    #[test]
    fn a_whole_response_becomes_events() {
        let events = response_events(
            br#"{"id":"resp_1","object":"response","status":"completed","output":[{"type":"reasoning","id":"rs"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Calling."}]},{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{}"}],"usage":{"input_tokens":3,"output_tokens":4}}"#,
        );
        assert_eq!(
            events,
            Ok(vec![
                ModelEvent::TextDelta("Calling.".into()),
                call(0, Some("call_1"), Some("f"), ""),
                call(0, None, None, "{}"),
                ModelEvent::Usage(TokenUsage {
                    input_tokens: 3,
                    output_tokens: 4,
                    ..TokenUsage::default()
                }),
                ModelEvent::Finish(FinishReason::ToolCalls),
            ])
        );
        assert!(matches!(
            response_events(br#"{"status":"failed","error":{"message":"boom"}}"#),
            Err(ModelError::Protocol(_))
        ));
        assert!(matches!(
            response_events(br#"{"status":"in_progress"}"#),
            Err(ModelError::Protocol(_))
        ));
    }
}
