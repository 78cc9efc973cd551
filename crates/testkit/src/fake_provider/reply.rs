//! Scripted replies: what one model turn answers ([`Reply`], built the same whatever the wire
//! API) and the [`Gate`] a streamed reply can wait at.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use tokio::sync::watch;

/// Default prompt token count reported when a reply does not set one.
const DEFAULT_INPUT_TOKENS: u64 = 10;

/// One scripted answer to one model turn. Build with the constructors, then adjust with the
/// modifiers: `Reply::text("Hi").usage(12, 1).finish_reason("length")`.
///
/// Finish reasons are given in Chat Completions' words (`stop`, `tool_calls`, `length`,
/// `content_filter`) and translated for the other wire APIs (`end_turn`/`max_tokens`…,
/// `STOP`/`MAX_TOKENS`…, `response.incomplete`); any other word is passed through.
#[derive(Debug, Clone)]
pub struct Reply {
    pub(super) kind: Kind,
    pub(super) usage: Option<(u64, u64)>,
    pub(super) cached_tokens: u64,
    pub(super) reasoning_tokens: u64,
    pub(super) finish_reason: Option<String>,
    pub(super) delay: Duration,
    /// What happens after the content: the closing events, or a stall, or a cut.
    pub(super) end: End,
    /// Reasoning blocks, sent before the answer's text and calls.
    pub(super) reasoning: Vec<Thought>,
    /// Extra response headers (`retry-after`, …), on any kind of reply.
    pub(super) headers: Vec<(String, String)>,
    /// Holds the stream after its first delta until the gate opens.
    pub(super) gate: Option<Gate>,
    /// Answer with the whole JSON body even to a streaming request (a server that ignores
    /// `stream`).
    pub(super) not_streamed: bool,
}

#[derive(Debug, Clone)]
pub(super) enum Kind {
    /// Text deltas, then tool calls (either may be empty).
    Answer {
        text: Vec<String>,
        calls: Vec<ScriptedCall>,
    },
    Error {
        status: u16,
        message: String,
    },
    /// Not even a response head.
    HangBeforeHeaders,
    /// These SSE `data` payloads verbatim, nothing added.
    RawSse(Vec<String>),
    /// This body verbatim.
    Raw {
        status: u16,
        content_type: String,
        body: Bytes,
        /// One chunk per SSE event (split after each blank line) rather than one chunk.
        per_event: bool,
    },
}

/// How a streamed body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    /// The terminal events, then the end of the body.
    Finish,
    /// No terminal events and no end, ever: the connection stays open.
    Hang,
    /// No terminal events: the connection is closed without the body's end.
    Cut,
}

#[derive(Debug, Clone)]
pub(super) struct ScriptedCall {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) arguments: String,
}

/// One reasoning block of a reply.
#[derive(Debug, Clone)]
pub(super) struct Thought {
    /// The reasoning text (`None` for a redacted block, which only has its opaque data).
    pub(super) text: Option<String>,
    /// The opaque part: the signature (Anthropic, Gemini) or `encrypted_content` (Responses);
    /// the `data` of a redacted block.
    pub(super) signature: String,
}

/// Holds a streamed reply after its first delta until the test opens it, so that a test can
/// prove a delta reached the caller while the upstream was still open. Clones share the gate.
#[derive(Debug, Clone)]
pub struct Gate {
    open: Arc<watch::Sender<bool>>,
}

impl Default for Gate {
    fn default() -> Self {
        Gate::new()
    }
}

impl Gate {
    pub fn new() -> Gate {
        Gate {
            open: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Lets the held stream go on (now, or as soon as it reaches the gate).
    pub fn open(&self) {
        self.open.send_replace(true);
    }

    pub(super) async fn wait(&self) {
        let mut open = self.open.subscribe();
        // The sender lives in `self`, so the wait only ends when the gate opens.
        let _ = open.wait_for(|open| *open).await;
    }
}

impl Reply {
    fn new(kind: Kind) -> Reply {
        Reply {
            kind,
            usage: None,
            cached_tokens: 0,
            reasoning_tokens: 0,
            finish_reason: None,
            delay: Duration::ZERO,
            end: End::Finish,
            reasoning: Vec::new(),
            headers: Vec::new(),
            gate: None,
            not_streamed: false,
        }
    }

    /// A text answer, streamed word by word (`"Hello world"` as `"Hello"`, `" world"`).
    pub fn text(text: &str) -> Reply {
        Reply::text_chunks(split_words(text))
    }

    /// A text answer streamed as exactly these deltas.
    pub fn text_chunks<S: Into<String>>(chunks: impl IntoIterator<Item = S>) -> Reply {
        Reply::new(Kind::Answer {
            text: chunks.into_iter().map(Into::into).collect(),
            calls: Vec::new(),
        })
    }

    /// Tool calls `(id, name, arguments)` in one turn; each call's arguments are streamed in
    /// several pieces (Gemini sends each call whole, with its id). The finish reason is
    /// `tool_calls`.
    pub fn tool_calls(calls: Vec<(&str, &str, &str)>) -> Reply {
        Reply::new(Kind::Answer {
            text: Vec::new(),
            calls: scripted_calls(calls),
        })
    }

    /// An HTTP error with the wire API's error body: OpenAI's `{"error": {"message", "type",
    /// …}}`, Anthropic's `{"type": "error", "error": {"type", "message"}}`, Google's
    /// `{"error": {"code", "message", "status"}}`.
    pub fn error(status: u16, message: &str) -> Reply {
        Reply::new(Kind::Error {
            status,
            message: message.to_owned(),
        })
    }

    /// Sends the response head and the opening events (Chat Completions' role chunk,
    /// `response.created`, `message_start`; nothing for Gemini), then nothing, ever (idle
    /// timeouts).
    pub fn hang() -> Reply {
        Reply::text_chunks(Vec::<String>::new()).then_hang()
    }

    /// Never answers at all, not even the response head (timeouts before the first byte).
    pub fn hang_before_headers() -> Reply {
        Reply::new(Kind::HangBeforeHeaders)
    }

    /// Streams these `data:` payloads verbatim (`"[DONE]"` included only if given), for
    /// malformed or cut-off streams.
    pub fn raw_sse<S: Into<String>>(payloads: impl IntoIterator<Item = S>) -> Reply {
        Reply::new(Kind::RawSse(payloads.into_iter().map(Into::into).collect()))
    }

    /// Serves this body verbatim with this status and content type (recorded transcripts and
    /// error bodies), as one chunk; see [`Reply::one_chunk_per_event`]. The modifiers that
    /// apply: [`Reply::header`], [`Reply::delay_between_chunks`], [`Reply::wait_for`] (after the
    /// first chunk), [`Reply::then_hang`] and [`Reply::then_cut`] (after the last chunk).
    pub fn raw(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply::new(Kind::Raw {
            status,
            content_type: content_type.to_owned(),
            body: Bytes::from(body.into()),
            per_event: false,
        })
    }

    /// A [`Reply::raw`] body sent as one chunk per SSE event (each ends after a blank line).
    pub fn one_chunk_per_event(mut self) -> Reply {
        if let Kind::Raw { per_event, .. } = &mut self.kind {
            *per_event = true;
        }
        self
    }

    /// Stalls after this answer's deltas: no finish and no end, ever (a stream that stops
    /// mid-answer; proves deltas arrive before the turn ends).
    pub fn then_hang(mut self) -> Reply {
        self.end = End::Hang;
        self
    }

    /// Closes the connection after this answer's deltas, without the terminal events and
    /// without the end of the chunked body (a connection broken mid-stream).
    pub fn then_cut(mut self) -> Reply {
        self.end = End::Cut;
        self
    }

    /// Holds the stream after its first delta (text or call) until `gate` opens.
    pub fn wait_for(mut self, gate: &Gate) -> Reply {
        self.gate = Some(gate.clone());
        self
    }

    /// Adds tool calls after the text of this answer (text and calls in one turn).
    pub fn then_tool_calls(mut self, more: Vec<(&str, &str, &str)>) -> Reply {
        if let Kind::Answer { calls, .. } = &mut self.kind {
            calls.extend(scripted_calls(more));
        }
        self
    }

    /// Adds a reasoning block before the answer: a Responses `reasoning` item (the text as its
    /// one summary, `signature` as `encrypted_content`), an Anthropic `thinking` block
    /// (`thinking_delta` pieces, then a `signature_delta`), a Gemini `thought: true` part with
    /// this `thoughtSignature`. Chat Completions has none and sends nothing.
    pub fn reasoning(mut self, text: &str, signature: &str) -> Reply {
        self.reasoning.push(Thought {
            text: Some(text.to_owned()),
            signature: signature.to_owned(),
        });
        self
    }

    /// Adds a redacted reasoning block: Anthropic's `redacted_thinking` with this `data`, a
    /// Responses `reasoning` item without summary (`data` as `encrypted_content`); Gemini and
    /// Chat Completions have none and send nothing.
    pub fn redacted_reasoning(mut self, data: &str) -> Reply {
        self.reasoning.push(Thought {
            text: None,
            signature: data.to_owned(),
        });
        self
    }

    /// Adds this header to the response (any kind of reply): `retry-after`, `retry-after-ms`,
    /// `x-should-retry`…
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Answers with the wire API's one JSON object even when the request asked to stream (a
    /// server or gateway that ignores `stream`).
    pub fn not_streamed(mut self) -> Reply {
        self.not_streamed = true;
        self
    }

    /// The reported usage: prompt and completion tokens (default: 10 and the number of
    /// deltas sent). The output count includes the reasoning tokens.
    pub fn usage(mut self, input_tokens: u64, output_tokens: u64) -> Reply {
        self.usage = Some((input_tokens, output_tokens));
        self
    }

    /// The reported cached prompt tokens (default 0), part of the input tokens.
    pub fn cached_tokens(mut self, tokens: u64) -> Reply {
        self.cached_tokens = tokens;
        self
    }

    /// The reported reasoning tokens (default 0), part of the output tokens (Anthropic does
    /// not report them apart).
    pub fn reasoning_tokens(mut self, tokens: u64) -> Reply {
        self.reasoning_tokens = tokens;
        self
    }

    /// The finish reason to send, in Chat Completions' words (default `stop`, or `tool_calls`
    /// when the answer has calls).
    pub fn finish_reason(mut self, reason: &str) -> Reply {
        self.finish_reason = Some(reason.to_owned());
        self
    }

    /// Waits this long before each chunk after the first (disconnect and streaming tests).
    pub fn delay_between_chunks(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }

    /// The text pieces and calls of an answer (empty for other kinds).
    pub(super) fn answer(&self) -> (&[String], &[ScriptedCall]) {
        match &self.kind {
            Kind::Answer { text, calls } => (text, calls),
            _ => (&[], &[]),
        }
    }

    /// The finish reason in Chat Completions' words.
    pub(super) fn finish(&self) -> String {
        let (_, calls) = self.answer();
        match &self.finish_reason {
            Some(reason) => reason.clone(),
            None if calls.is_empty() => "stop".to_owned(),
            None => "tool_calls".to_owned(),
        }
    }

    /// The token counts to report; `default_output` when the reply sets none.
    pub(super) fn counts(&self, default_output: u64) -> Counts {
        let (input, output) = self.usage.unwrap_or((DEFAULT_INPUT_TOKENS, default_output));
        Counts {
            input,
            output,
            cached: self.cached_tokens,
            reasoning: self.reasoning_tokens,
        }
    }

    /// The deltas a streamed answer sends: text pieces and argument pieces.
    pub(super) fn delta_count(&self) -> u64 {
        let (text, calls) = self.answer();
        let pieces: usize = calls
            .iter()
            .map(|call| split_arguments(&call.arguments).len())
            .sum();
        (text.len() + pieces) as u64
    }
}

/// The token counts of one answer, in the neutral sense: `input` includes `cached`, `output`
/// includes `reasoning`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Counts {
    pub(super) input: u64,
    pub(super) output: u64,
    pub(super) cached: u64,
    pub(super) reasoning: u64,
}

fn scripted_calls(calls: Vec<(&str, &str, &str)>) -> Vec<ScriptedCall> {
    calls
        .into_iter()
        .map(|(id, name, arguments)| ScriptedCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        })
        .collect()
}

/// `"Hello big world"` as `["Hello", " big", " world"]`, the way models stream words.
pub(super) fn split_words(text: &str) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut previous_was_space = true;
    for (at, c) in text.char_indices() {
        if c.is_whitespace() && !previous_was_space && at > start {
            pieces.push(text[start..at].to_owned());
            start = at;
        }
        previous_was_space = c.is_whitespace();
    }
    if start < text.len() {
        pieces.push(text[start..].to_owned());
    }
    pieces
}

/// Up to three pieces of about equal length (at least two when there are two characters).
pub(super) fn split_arguments(arguments: &str) -> Vec<String> {
    let chars: Vec<char> = arguments.chars().collect();
    if chars.len() < 2 {
        return vec![arguments.to_owned()];
    }
    let size = chars.len().div_ceil(3).max(1);
    chars
        .chunks(size)
        .map(|piece| piece.iter().collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_their_leading_space() {
        assert_eq!(split_words("Hello big world"), ["Hello", " big", " world"]);
        assert_eq!(split_words(" a  b "), [" a", "  b", " "]);
        assert!(split_words("").is_empty());
        assert_eq!(split_words("Hello big world").concat(), "Hello big world");
    }

    #[test]
    fn arguments_come_in_several_pieces() {
        let arguments = r#"{"order_id":"ORD-10042"}"#;
        let pieces = split_arguments(arguments);
        assert!(pieces.len() >= 2, "{pieces:?}");
        assert_eq!(pieces.concat(), arguments);
        assert_eq!(split_arguments("{}"), ["{", "}"]);
        assert_eq!(split_arguments(""), [""]);
    }
}
