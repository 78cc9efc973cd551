//! The chunks of one streamed turn, read knowing the previous ones.
//!
//! An upstream writes every text chunk of a turn with the same bytes before the text
//! (`{"id":"chatcmpl-…","object":"chat.completion.chunk","created":…,"model":"…",
//! "choices":[{"index":0,"delta":{"content":`) and, often, the same bytes after it
//! (`},"logprobs":null,"finish_reason":null}],"usage":null}`). Reading those again costs
//! ~3.5 k instructions per chunk (docs/benchmarks.md, "fifth pass"); comparing them costs tens.
//!
//! So the reader's state where a chunk's first choice's text begins is kept with the bytes
//! before it ([`fast::Mark`]). A chunk that begins with the very same bytes puts the reader in
//! the very same state there (the reader is a function of the bytes it has read), so the
//! reading resumes at the text: same state, same bytes from there on, same reading as the
//! whole chunk's, by construction. And when the bytes after the text are also the same as the
//! previous chunk's read from that state, the rest reads the same too, whatever the text (the
//! reader only notes that the text was seen): the previous reading is reused with the new text.
//! Nothing is assumed about which fields may differ (`created`, `id`, `obfuscation`, a role, a
//! tool call, a finish reason, a usage): any byte that differs in the prefix means a whole read,
//! and any that differs after the text means reading the rest.

use super::fast::{self, AtText};
use super::wire::{Chunk, ChunkChoice, Delta};

/// The fast path across the chunks of one turn: [`fast::chunk`], resumed at the text when a
/// chunk begins as the one its state was taken from.
#[derive(Debug, Default)]
pub(crate) struct Chunks {
    last: Option<Template>,
}

/// How a chunk was read (for the tests: that the fast paths are taken).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Path {
    /// From its start.
    Whole,
    /// From its text on (same bytes before it).
    Resumed,
    /// Only its text (same bytes before and after it), put in a copy of the kept reading.
    Text,
    /// Only its text, and the kept reading holds nothing else: the text alone
    /// ([`Reading::Text`]), no reading copied.
    Plain,
}

/// What the fast path read in a chunk.
#[derive(Debug)]
pub(crate) enum Reading {
    /// The chunk's reading.
    Chunk(Chunk),
    /// A chunk whose reading is one choice, index 0, whose delta holds this text and nothing
    /// else: no tool call, finish reason, logprobs, other choice, usage or error (what serde
    /// reads is [`Reading::into_chunk`]).
    Text(Option<String>),
}

impl Reading {
    /// The chunk this reading stands for.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn into_chunk(self) -> Chunk {
        match self {
            Reading::Chunk(chunk) => chunk,
            Reading::Text(content) => Chunk {
                choices: vec![ChunkChoice {
                    index: 0,
                    delta: Some(Delta {
                        content,
                        tool_calls: None,
                    }),
                    finish_reason: None,
                    logprobs: None,
                }],
                usage: None,
                error: None,
            },
        }
    }
}

/// A chunk's bytes up to its first choice's text and the reader's state there.
#[derive(Debug)]
struct Template {
    prefix: String,
    state: AtText,
    /// The bytes after the text of the last chunk read from this state, and (once two chunks
    /// in a row had the same) the reading of that rest, its text left out.
    suffix: String,
    rest: Option<Rest>,
}

/// The reading of a kept rest, its text left out.
#[derive(Debug)]
enum Rest {
    /// Nothing but the text's empty place ([`Reading::Text`]'s chunk without its text).
    Plain,
    /// Anything else, copied for each chunk.
    Kept(Chunk),
}

impl Rest {
    /// `chunk`, its text taken out. (The patterns name every field: a field added to the
    /// reading must be decided on here.)
    fn of(chunk: Chunk) -> Rest {
        let plain = match &chunk {
            Chunk {
                choices,
                usage: None,
                error: None,
            } => matches!(
                choices.as_slice(),
                [ChunkChoice {
                    index: 0,
                    delta: Some(Delta {
                        content: None,
                        tool_calls: None,
                    }),
                    finish_reason: None,
                    logprobs: None,
                }]
            ),
            Chunk { .. } => false,
        };
        if plain {
            Rest::Plain
        } else {
            Rest::Kept(chunk)
        }
    }
}

impl Chunks {
    /// The chunk `data` holds, or `None`: not read by the fast path (then serde reads it).
    #[cfg(feature = "fuzzing")]
    pub(crate) fn chunk(&mut self, data: &str) -> Option<Chunk> {
        self.next(data).map(Reading::into_chunk)
    }

    /// What `data` holds, or `None`: not read by the fast path (then serde reads it).
    pub(crate) fn next(&mut self, data: &str) -> Option<Reading> {
        self.read(data).0
    }

    /// The text of `data`, a chunk whose bytes were not checked to be UTF-8, when it is the
    /// usual one: it begins with the kept prefix, a text without escapes follows, then the kept
    /// rest, whose reading holds nothing but the text (what [`Chunks::next`] reads as
    /// [`Reading::Text`], [`Path::Plain`], without a state to change). The prefix and the rest
    /// being the bytes of kept strings, `data` is UTF-8 when the text is, which is checked
    /// here; and its first and last bytes are visible ASCII, so it is what the decoder's trim
    /// leaves of it. `None` for anything else (then the caller checks `data` whole and reads it
    /// as text).
    pub(crate) fn plain<'a>(&self, data: &'a [u8]) -> Option<&'a str> {
        let last = self.last.as_ref()?;
        if !matches!(last.rest, Some(Rest::Plain))
            || !data.starts_with(last.prefix.as_bytes())
            || !data.first()?.is_ascii_graphic()
            || !data.last()?.is_ascii_graphic()
        {
            return None;
        }
        let at = last.prefix.len();
        let end = fast::plain_text_end(data, at)?;
        if data.get(end + 1..)? != last.suffix.as_bytes() {
            return None;
        }
        std::str::from_utf8(data.get(at + 1..end)?).ok()
    }

    pub(super) fn read(&mut self, data: &str) -> (Option<Reading>, Path) {
        if let Some(last) = &mut self.last
            && data.as_bytes().starts_with(last.prefix.as_bytes())
        {
            return last.resume(data);
        }
        let (chunk, mark) = fast::chunk(data);
        if let Some(mark) = mark
            && let (Some(prefix), Some(suffix)) = (data.get(..mark.at), data.get(mark.end..))
        {
            self.last = Some(Template {
                prefix: prefix.to_owned(),
                state: mark.state,
                suffix: suffix.to_owned(),
                rest: None,
            });
        }
        (chunk.map(Reading::Chunk), Path::Whole)
    }
}

impl Template {
    /// `data`, which begins with `self.prefix`, read from its text on.
    fn resume(&mut self, data: &str) -> (Option<Reading>, Path) {
        if let Some(Rest::Plain) = self.rest
            && let Some((text, end)) = fast::plain_text_at(data, self.prefix.len())
            && data.as_bytes().get(end..) == Some(self.suffix.as_bytes())
        {
            // The usual chunk: a plain text between the same bytes.
            return (Some(Reading::Text(Some(text.to_owned()))), Path::Plain);
        }
        let Some((text, end)) = fast::text_at(data, self.prefix.len()) else {
            return (None, Path::Resumed);
        };
        let after = data.as_bytes().get(end..).unwrap_or_default();
        let same_rest = after == self.suffix.as_bytes();
        match &self.rest {
            Some(Rest::Plain) if same_rest => return (Some(Reading::Text(text)), Path::Plain),
            Some(Rest::Kept(rest)) if same_rest => {
                let mut chunk = rest.clone();
                if let Some(slot) = text_slot(&mut chunk) {
                    *slot = text;
                    return (Some(Reading::Chunk(chunk)), Path::Text);
                }
            }
            _ => {}
        }
        let Some(mut chunk) = fast::after_text(data, end, self.state.clone(), text) else {
            return (None, Path::Resumed);
        };
        if same_rest {
            if let Some(slot) = text_slot(&mut chunk) {
                let text = slot.take();
                self.rest = Some(Rest::of(chunk.clone()));
                if let Some(slot) = text_slot(&mut chunk) {
                    *slot = text;
                }
            }
        } else if let Some(after) = data.get(end..) {
            self.suffix.clear();
            self.suffix.push_str(after);
            self.rest = None;
        }
        (Some(Reading::Chunk(chunk)), Path::Resumed)
    }
}

/// `chunks` read in order by [`Chunks`] and each by serde (the fuzz target's entry point,
/// `crate::fuzzing`).
#[cfg(feature = "fuzzing")]
pub(crate) fn readings(chunks: &[&str]) -> Vec<(Option<String>, Option<String>)> {
    let mut fast = Chunks::default();
    chunks
        .iter()
        .map(|data| {
            let taken = fast.chunk(data).map(|chunk| format!("{chunk:?}"));
            let serde = serde_json::from_str::<Chunk>(data)
                .ok()
                .map(|chunk| format!("{chunk:?}"));
            (taken, serde)
        })
        .collect()
}

/// Where the first choice's text is in a chunk's reading.
fn text_slot(chunk: &mut Chunk) -> Option<&mut Option<String>> {
    Some(&mut chunk.choices.first_mut()?.delta.as_mut()?.content)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `chunks` in order through one [`Chunks`], checks every chunk it takes against
    /// serde's reading of the same text, and returns how each was read (`None`: left to serde).
    fn read_all<S: AsRef<str>>(chunks: &[S]) -> Vec<Option<Path>> {
        let mut fast = Chunks::default();
        chunks
            .iter()
            .map(|data| {
                let data = data.as_ref();
                let (reading, path) = fast.read(data);
                let chunk = reading.map(Reading::into_chunk);
                let serde = serde_json::from_str::<Chunk>(data);
                crate::edits::agrees_with_serde(data, chunk, serde).then_some(path)
            })
            .collect()
    }

    /// The chunks of a turn as one upstream writes them: `text` is a text chunk with `{T}` where
    /// the text's JSON value goes and `{N}` where a per-chunk counter goes (OpenAI's
    /// `obfuscation`), between the upstream's first chunk and its last ones.
    fn turn(first: &str, text: &str, last: &[&str]) -> Vec<String> {
        let texts = [
            r#"" tok1""#,
            r#""Hello""#,
            r#""""#,
            r#""a\"b\\n\u00e9\ud83d\ude00""#,
            r#""é😀""#,
            "null",
            r#"" world""#,
            r#"" tok12""#,
            r#"" tok13""#,
        ];
        let mut chunks = vec![first.to_owned()];
        for (n, value) in texts.iter().enumerate() {
            chunks.push(text.replace("{T}", value).replace("{N}", &n.to_string()));
        }
        chunks.extend(last.iter().map(|chunk| (*chunk).to_owned()));
        chunks
    }

    /// Real upstreams' turns: (first chunk, text chunk, last chunks).
    const UPSTREAMS: [(&str, &str, &[&str]); 9] = [
        // OpenAI, with `obfuscation` (a value that changes on every chunk, after the text).
        (
            r#"{"id":"chatcmpl-C1a","object":"chat.completion.chunk","created":1754000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"mYq3"}"#,
            r#"{"id":"chatcmpl-C1a","object":"chat.completion.chunk","created":1754000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":[{"index":0,"delta":{"content":{T}},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"Xo9v{N}"}"#,
            &[
                r#"{"id":"chatcmpl-C1a","object":"chat.completion.chunk","created":1754000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null,"obfuscation":"a"}"#,
                r#"{"id":"chatcmpl-C1a","object":"chat.completion.chunk","created":1754000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":3,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":2,"audio_tokens":0}},"obfuscation":"b"}"#,
            ],
        ),
        // agentd's fake provider (the benchmark's upstream): keys in alphabetical order, the
        // text first and everything else after it.
        (
            r#"{"choices":[{"delta":{"content":"","refusal":null,"role":"assistant"},"finish_reason":null,"index":0,"logprobs":null}],"created":1700000000,"id":"chatcmpl-fake-1","model":"gpt-fake","object":"chat.completion.chunk","system_fingerprint":"fp_fake","usage":null}"#,
            r#"{"choices":[{"delta":{"content":{T}},"finish_reason":null,"index":0,"logprobs":null}],"created":1700000000,"id":"chatcmpl-fake-1","model":"gpt-fake","object":"chat.completion.chunk","system_fingerprint":"fp_fake","usage":null}"#,
            &[
                r#"{"choices":[{"delta":{},"finish_reason":"stop","index":0,"logprobs":null}],"created":1700000000,"id":"chatcmpl-fake-1","model":"gpt-fake","object":"chat.completion.chunk","system_fingerprint":"fp_fake","usage":null}"#,
                r#"{"choices":[],"created":1700000000,"id":"chatcmpl-fake-1","model":"gpt-fake","object":"chat.completion.chunk","system_fingerprint":"fp_fake","usage":{"completion_tokens":64,"prompt_tokens":12,"total_tokens":76}}"#,
            ],
        ),
        // vLLM: stop_reason after the text.
        (
            r#"{"id":"chatcmpl-8a7d","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"id":"chatcmpl-8a7d","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":{T}},"logprobs":null,"finish_reason":null,"stop_reason":null}]}"#,
            &[
                r#"{"id":"chatcmpl-8a7d","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null}]}"#,
                r#"{"id":"chatcmpl-8a7d","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":10,"total_tokens":12,"completion_tokens":2}}"#,
            ],
        ),
        // Ollama: the role on every chunk, no logprobs key.
        (
            r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1720000000,"model":"llama3.2","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"Hmm"},"finish_reason":null}]}"#,
            r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1720000000,"model":"llama3.2","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":{T}},"finish_reason":null}]}"#,
            &[
                r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1720000000,"model":"llama3.2","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}"#,
                r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1720000000,"model":"llama3.2","system_fingerprint":"fp_ollama","choices":[],"usage":{"prompt_tokens":26,"completion_tokens":9,"total_tokens":35}}"#,
            ],
        ),
        // OpenRouter: provider, reasoning fields after the text, native_finish_reason.
        (
            r#"{"id":"gen-1754-Ab","provider":"OpenAI","model":"openai/gpt-4o","object":"chat.completion.chunk","created":1754000000,"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":null,"reasoning_details":[]},"finish_reason":null,"native_finish_reason":null,"logprobs":null}]}"#,
            r#"{"id":"gen-1754-Ab","provider":"OpenAI","model":"openai/gpt-4o","object":"chat.completion.chunk","created":1754000000,"choices":[{"index":0,"delta":{"role":"assistant","content":{T},"reasoning":null,"reasoning_details":[]},"finish_reason":null,"native_finish_reason":null,"logprobs":null}]}"#,
            &[
                r#"{"id":"gen-1754-Ab","provider":"OpenAI","model":"openai/gpt-4o","object":"chat.completion.chunk","created":1754000000,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop","native_finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":8,"completion_tokens":2,"total_tokens":10,"cost":0.0000195,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}"#,
            ],
        ),
        // Groq: x_groq on the first and last chunks only.
        (
            r#"{"id":"chatcmpl-f51b","object":"chat.completion.chunk","created":1720000000,"model":"llama-3.1-8b-instant","system_fingerprint":"fp_179b0f92c9","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"x_groq":{"id":"req_01j"}}"#,
            r#"{"id":"chatcmpl-f51b","object":"chat.completion.chunk","created":1720000000,"model":"llama-3.1-8b-instant","system_fingerprint":"fp_179b0f92c9","choices":[{"index":0,"delta":{"content":{T}},"logprobs":null,"finish_reason":null}]}"#,
            &[
                r#"{"id":"chatcmpl-f51b","object":"chat.completion.chunk","created":1720000000,"model":"llama-3.1-8b-instant","system_fingerprint":"fp_179b0f92c9","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"x_groq":{"id":"req_01j","usage":{"queue_time":0.021,"prompt_tokens":10,"prompt_time":1.2e-3,"completion_tokens":5,"completion_time":0.01,"total_tokens":15,"total_time":-0.5E+2}}}"#,
            ],
        ),
        // Azure OpenAI: the prompt filter chunk first, filter results before the delta.
        (
            r#"{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]}"#,
            r#"{"choices":[{"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}},"delta":{"content":{T}},"finish_reason":null,"index":0,"logprobs":null}],"created":1720000000,"id":"chatcmpl-9","model":"gpt-4o-2024-05-13","object":"chat.completion.chunk","system_fingerprint":"fp_abc"}"#,
            &[
                r#"{"choices":[{"content_filter_results":{},"delta":{},"finish_reason":"stop","index":0,"logprobs":null}],"created":1720000000,"id":"chatcmpl-9","model":"gpt-4o-2024-05-13","object":"chat.completion.chunk","system_fingerprint":"fp_abc"}"#,
            ],
        ),
        // llama.cpp: timings after the text.
        (
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"created":1720000000,"id":"chatcmpl-Z","model":"gpt-3.5-turbo","system_fingerprint":"b4000-12ab","object":"chat.completion.chunk"}"#,
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":{T}}}],"created":1720000000,"id":"chatcmpl-Z","model":"gpt-3.5-turbo","system_fingerprint":"b4000-12ab","object":"chat.completion.chunk","timings":{"prompt_n":1,"prompt_ms":1.5,"predicted_per_second":50.25}}"#,
            &[
                r#"{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":1720000000,"id":"chatcmpl-Z","model":"gpt-3.5-turbo","system_fingerprint":"b4000-12ab","object":"chat.completion.chunk","usage":{"completion_tokens":9,"prompt_tokens":4,"total_tokens":13}}"#,
            ],
        ),
        // Gemini's compatible endpoint: the role before the text, a call with its thought
        // signature at the end.
        (
            r#"{"choices":[{"delta":{"content":"Hi","role":"assistant"},"index":0}],"created":1720000000,"model":"gemini-2.5-flash","object":"chat.completion.chunk"}"#,
            r#"{"choices":[{"delta":{"content":{T},"role":"assistant"},"index":0}],"created":1720000000,"model":"gemini-2.5-flash","object":"chat.completion.chunk"}"#,
            &[
                r#"{"choices":[{"delta":{"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"f"},"id":"x","type":"function","extra_content":{"google":{"thought_signature":"c2ln"}}}]},"finish_reason":"tool_calls","index":0}],"created":1720000000,"model":"gemini-2.5-flash","object":"chat.completion.chunk","usage":{"completion_tokens":5,"prompt_tokens":3,"total_tokens":8}}"#,
            ],
        ),
    ];

    /// The `data` fields of an SSE fixture.
    fn fixture(sse: &str) -> Vec<&str> {
        sse.lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter(|data| *data != "[DONE]")
            .collect()
    }

    #[test]
    fn upstream_turns_are_read_from_their_text_as_serde_reads_them() {
        for (first, text, last) in UPSTREAMS {
            let chunks = turn(first, text, last);
            let paths = read_all(&chunks);
            // The text chunks after the first two (which set the state and the rest up) are
            // read from their text on: every one of them, and only the text when what follows
            // it is the same (all but OpenAI's, whose `obfuscation` changes).
            let texts = &paths[3..chunks.len() - last.len()];
            assert!(
                texts
                    .iter()
                    .all(|path| matches!(path, Some(Path::Resumed | Path::Text | Path::Plain))),
                "{text}: {paths:?}"
            );
            let only_text = texts
                .iter()
                .filter(|path| matches!(path, Some(Path::Text | Path::Plain)))
                .count();
            assert_eq!(only_text == 0, text.contains("{N}"), "{text}: {paths:?}");
            // Where only the text differs, the text goes straight to its reading: none of these
            // upstreams' rests holds anything the reading keeps but the text.
            if !text.contains("{N}") {
                assert!(
                    texts[1..].iter().all(|path| *path == Some(Path::Plain)),
                    "{text}: {paths:?}"
                );
            }
            // Every chunk is taken by the fast path.
            assert!(paths.iter().all(Option::is_some), "{text}: {paths:?}");
        }
    }

    #[test]
    fn fixture_streams_are_read_as_serde_reads_them() {
        for sse in [
            include_str!("../../tests/fixtures/chat_completions/text.sse"),
            include_str!("../../tests/fixtures/chat_completions/tool_calls.sse"),
            include_str!("../../tests/fixtures/chat_completions/reasoning.sse"),
            include_str!("../../tests/fixtures/chat_completions/cut.sse"),
        ] {
            let chunks = fixture(sse);
            let paths = read_all(&chunks);
            assert!(paths.iter().all(Option::is_some), "{paths:?}");
        }
        let paths = read_all(&fixture(include_str!(
            "../../tests/fixtures/chat_completions/text.sse"
        )));
        assert!(paths.contains(&Some(Path::Plain)), "{paths:?}");
    }

    const PREFIX: &str = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"#;
    const REST: &str = r#"},"logprobs":null,"finish_reason":null}],"usage":null}"#;

    /// A text chunk: `prefix`, the text's JSON value, `rest`.
    fn text_chunk(prefix: &str, value: &str, rest: &str) -> String {
        format!("{prefix}{value}{rest}")
    }

    #[test]
    fn a_prefix_or_rest_that_changes_mid_stream_is_read_again() {
        let warm = |n: usize| -> Vec<String> {
            (0..n)
                .map(|i| text_chunk(PREFIX, &format!("\"w{i}\""), REST))
                .collect()
        };
        // (the chunk, how it must be read after three plain ones: `None` when left to serde).
        let cases: Vec<(String, Option<Path>)> = vec![
            // The prefix differs: an id, a created time, a model, an index, a key order, a
            // usage or a role or a tool call or a finish reason before the text, whitespace.
            (PREFIX.replace("chatcmpl-1", "chatcmpl-2"), Some(Path::Whole)),
            (PREFIX.replace("\"created\":1", "\"created\":2"), Some(Path::Whole)),
            (PREFIX.replace("\"m\"", "\"n\""), Some(Path::Whole)),
            (PREFIX.replace("\"index\":0", "\"index\":1"), Some(Path::Whole)),
            (
                PREFIX.replace(r#""id":"chatcmpl-1","object":"chat.completion.chunk""#, r#""object":"chat.completion.chunk","id":"chatcmpl-1""#),
                Some(Path::Whole),
            ),
            // (Here `usage` and `finish_reason` come again after the text: serde refuses the
            // repeat.)
            (
                PREFIX.replace(r#""choices""#, r#""usage":{"prompt_tokens":3,"completion_tokens":1},"choices""#),
                None,
            ),
            (
                PREFIX.replace(r#"{"content":"#, r#"{"role":"assistant","content":"#),
                Some(Path::Whole),
            ),
            (
                PREFIX.replace(r#"{"content":"#, r#"{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":"{"}}],"content":"#),
                Some(Path::Whole),
            ),
            (
                PREFIX.replace(r#"{"index":0,"#, r#"{"finish_reason":"length","index":0,"#),
                None,
            ),
            (PREFIX.replace(r#""content":"#, r#""content" :"#), Some(Path::Whole)),
            (PREFIX.replace(r#""delta":"#, r#""delta": "#), Some(Path::Whole)),
            (PREFIX.replace("chat.completion.chunk", "chat.completion.chunK"), Some(Path::Whole)),
            // The same prefix, then whitespace before the text.
            (format!("{PREFIX} \n"), Some(Path::Plain)),
        ]
        .into_iter()
        .map(|(prefix, path)| (text_chunk(&prefix, "\"x\"", REST), path))
        .chain(
            [
                // The rest differs: a finish reason, a usage, another field, another choice,
                // whitespace, another role.
                (
                    REST.replace(r#""finish_reason":null"#, r#""finish_reason":"stop""#),
                    Some(Path::Resumed),
                ),
                (
                    REST.replace(r#""usage":null"#, r#""usage":{"prompt_tokens":9,"completion_tokens":2}"#),
                    Some(Path::Resumed),
                ),
                (REST.replace("}],", r#"}],"obfuscation":"q","#), Some(Path::Resumed)),
                (
                    REST.replace("}],", r#"},{"index":1,"delta":{"content":"other"}}],"#),
                    Some(Path::Resumed),
                ),
                (REST.replace("},", "} ,"), Some(Path::Resumed)),
                // (the same length, two keys swapped)
                (
                    REST.replace(
                        r#""logprobs":null,"finish_reason":null"#,
                        r#""finish_reason":null,"logprobs":null"#,
                    ),
                    Some(Path::Resumed),
                ),
                (format!(r#","role":"assistant"{REST}"#), Some(Path::Resumed)),
                (format!("{REST}\n"), Some(Path::Resumed)),
                // And serde's alone: a repeated text, logprobs, trailing garbage, cut short.
                (format!(r#","content":"y"{REST}"#), None),
                (REST.replace(r#""logprobs":null"#, r#""logprobs":{"content":[]}"#), None),
                (format!("{REST}x"), None),
                (format!("{REST}{{}}"), None),
                (REST.replace("}],", "}]"), None),
                (REST[..REST.len() - 1].to_owned(), None),
            ]
            .into_iter()
            .map(|(rest, path)| (text_chunk(PREFIX, "\"x\"", &rest), path)),
        )
        .chain([
            // A usage or a finish reason before the text, not repeated after it.
            (
                text_chunk(
                    &PREFIX.replace(r#""choices""#, r#""usage":{"prompt_tokens":3},"choices""#),
                    "\"x\"",
                    &REST.replace(r#","usage":null"#, ""),
                ),
                Some(Path::Whole),
            ),
            (
                text_chunk(
                    &PREFIX.replace(r#"{"index":0,"#, r#"{"finish_reason":"length","index":0,"#),
                    "\"x\"",
                    &REST.replace(r#","finish_reason":null"#, ""),
                ),
                Some(Path::Whole),
            ),
        ])
        .chain(
            [
                // The text itself: null, escapes, non-ASCII, and values serde refuses or reads
                // otherwise.
                ("null", Some(Path::Plain)),
                (r#""a\"b\\\/\b\f\n\r\t\u00e9\ud83d\ude00""#, Some(Path::Plain)),
                ("\"é 😀\"", Some(Path::Plain)),
                (r#""\ud800""#, None),
                (r#""\ud800\u0041""#, None),
                ("\"a\tb\"", None),
                (r#""\x""#, None),
                ("7", None),
                ("[]", None),
                ("{}", None),
                ("nul", None),
                ("\"a", None),
            ]
            .into_iter()
            .map(|(value, path)| (text_chunk(PREFIX, value, REST), path)),
        )
        .collect();
        for (chunk, want) in cases {
            let mut chunks = warm(4);
            chunks.push(chunk.clone());
            chunks.extend(warm(3));
            let paths = read_all(&chunks);
            assert_eq!(paths[4], want, "{chunk}: {paths:?}");
            // The plain chunks before and after it are all taken.
            assert!(
                paths
                    .iter()
                    .enumerate()
                    .all(|(at, path)| at == 4 || path.is_some()),
                "{chunk}: {paths:?}"
            );
        }
    }

    /// A rest that repeats but holds more than the text (a running usage, a finish reason, a
    /// choice index other than 0, a second choice, a tool call) keeps its reading and copies
    /// it for each chunk: never the text alone.
    #[test]
    fn a_repeated_rest_with_more_than_the_text_is_not_read_as_text_alone() {
        // (The fake provider's layout: the choice's index after the text.)
        let index_after = r#"{"choices":[{"delta":{"content":"#;
        let index_after_rest = r#"},"finish_reason":null,"index":0,"logprobs":null}]}"#;
        let cases = [
            (
                PREFIX,
                REST,
                REST.replace(
                    r#""usage":null"#,
                    r#""usage":{"prompt_tokens":9,"completion_tokens":2}"#,
                ),
            ),
            (
                PREFIX,
                REST,
                REST.replace(r#""finish_reason":null"#, r#""finish_reason":"stop""#),
            ),
            (
                PREFIX,
                REST,
                REST.replace(r#""finish_reason":null"#, r#""finish_reason":"""#),
            ),
            (
                PREFIX,
                REST,
                REST.replace("}],", r#"},{"index":1,"delta":{"content":"other"}}],"#),
            ),
            (
                index_after,
                index_after_rest,
                index_after_rest.replace(r#""index":0"#, r#""index":1"#),
            ),
            (PREFIX, REST, format!(r#","tool_calls":[]{REST}"#)),
            (
                PREFIX,
                REST,
                format!(r#","tool_calls":[{{"index":0,"function":{{"arguments":"{{}}"}}}}]{REST}"#),
            ),
        ];
        for (prefix, plain, rest) in cases {
            let mut chunks: Vec<String> = (0..4)
                .map(|i| text_chunk(prefix, &format!("\"w{i}\""), plain))
                .collect();
            chunks.extend((0..4).map(|i| text_chunk(prefix, &format!("\"x{i}\""), &rest)));
            let paths = read_all(&chunks);
            assert_eq!(paths[3], Some(Path::Plain), "{rest}: {paths:?}");
            assert_eq!(
                paths[4..],
                [
                    Some(Path::Resumed),
                    Some(Path::Resumed),
                    Some(Path::Text),
                    Some(Path::Text)
                ],
                "{rest}: {paths:?}"
            );
            assert_same_events(&chunks);
        }
    }

    /// `chunks` through the turn's decoder (the fast path) and, each read by serde, through
    /// the same decoder's reading of a chunk: the same events, or the same error.
    fn assert_same_events<S: AsRef<str>>(chunks: &[S]) {
        use crate::sse::SseDecoder;
        use engine::model::ModelError;
        let mut fast = super::super::decode::Decoder::default();
        let mut slow = super::super::decode::Decoder::default();
        let (mut fast_events, mut slow_events) = (Vec::new(), Vec::new());
        for data in chunks {
            let data = data.as_ref();
            let fast_step = fast.data(data, &mut fast_events).map(|_| ());
            let slow_step = serde_json::from_str::<Chunk>(data)
                .map_err(|err| ModelError::Protocol(format!("invalid stream chunk: {err}")))
                .and_then(|chunk| slow.chunk_events(chunk, &mut slow_events));
            assert_eq!(fast_step, slow_step, "{data}");
            assert_eq!(fast_events, slow_events, "{data}");
        }
        assert_eq!(
            fast.end(&mut fast_events),
            slow.end(&mut slow_events),
            "the end"
        );
        assert_eq!(fast_events, slow_events, "the end");
    }

    #[test]
    fn a_turns_events_are_those_of_serdes_readings() {
        for (first, text, last) in UPSTREAMS {
            assert_same_events(&turn(first, text, last));
        }
        for sse in [
            include_str!("../../tests/fixtures/chat_completions/text.sse"),
            include_str!("../../tests/fixtures/chat_completions/tool_calls.sse"),
            include_str!("../../tests/fixtures/chat_completions/reasoning.sse"),
            include_str!("../../tests/fixtures/chat_completions/cut.sse"),
        ] {
            assert_same_events(&fixture(sse));
        }
        // Texts that are empty or null make no event either way.
        let chunks: Vec<String> = ["\"a\"", "\"\"", "null", "\"b\"", "\"\"", "null"]
            .iter()
            .map(|value| text_chunk(PREFIX, value, REST))
            .collect();
        assert_eq!(read_all(&chunks)[3..], [Some(Path::Plain); 3]);
        assert_same_events(&chunks);
    }

    #[test]
    fn every_one_character_edit_in_a_turn_reads_as_serde_reads_it() {
        let mut taken = [0_usize; 4];
        let mut edits = 0;
        // The fake provider's turn (the text's rest repeats) and OpenAI's (it does not).
        for (first, text, last) in [UPSTREAMS[1], UPSTREAMS[0]] {
            let chunks: Vec<String> = turn(first, text, last).into_iter().take(6).collect();
            // The chunk that sets the state up, the one whose rest is kept, one read from its
            // text, one after that.
            for position in [1, 3, 4, 5] {
                for edited in crate::edits::single_character_edits(&chunks[position]) {
                    let mut turn = chunks.clone();
                    turn[position] = edited;
                    let paths = read_all(&turn);
                    edits += 1;
                    match paths[position] {
                        Some(Path::Whole) => taken[0] += 1,
                        Some(Path::Resumed) => taken[1] += 1,
                        Some(Path::Text) => taken[2] += 1,
                        Some(Path::Plain) => taken[3] += 1,
                        None => {}
                    }
                }
            }
        }
        // Each way of reading was taken by many of the edited chunks (only the text's own edits
        // keep both its prefix and its rest).
        assert!(
            taken[0] > 5_000 && taken[1] > 5_000 && taken[2] + taken[3] > 100 && taken[3] > 100,
            "{taken:?} of {edits}"
        );
    }
}
