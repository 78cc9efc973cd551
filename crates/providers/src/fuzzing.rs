//! Entry points for the fuzz targets (`crates/fuzzing`, `fuzz/`), behind the `fuzzing` feature:
//! an upstream's SSE body, in any chunking, through the same framing (`sse_parse`) and
//! the same wire decoders a streamed turn uses (see `sse.rs`), and an upstream's HTTP/1.1
//! answer through the in-task client's head and body decoding (`h1_wire`), without a socket.

use engine::model::{ModelError, ModelEvent};

use crate::config::WireApi;
use crate::sse::{SseDecoder, Step, decode_data, parse_error};
use crate::sse_parse::SseParser;

/// What a streamed turn would yield for a body arriving in these chunks: the events in order,
/// ending at the first error (the stream stops there, as `sse_stream` does).
pub fn decode_sse(wire: WireApi, chunks: &[&[u8]]) -> Vec<Result<ModelEvent, ModelError>> {
    match wire {
        WireApi::ChatCompletions => {
            run(crate::chat_completions::decode::Decoder::default(), chunks)
        }
        WireApi::Responses => run(crate::responses::decode::Decoder::default(), chunks),
        WireApi::AnthropicMessages => run(crate::anthropic::decode::Decoder::default(), chunks),
        WireApi::Gemini => run(crate::gemini::decode::Decoder::new(call_ids()), chunks),
    }
}

/// Chat Completions chunks read in order by the fast path (which keeps what it can reuse from
/// one chunk to the next) and each on its own by serde: per chunk, the fast path's reading and
/// serde's (`Debug`), `None` when the fast path left it to serde or serde refused it.
pub fn chat_chunk_readings(chunks: &[&str]) -> Vec<(Option<String>, Option<String>)> {
    crate::chat_completions::repeat::readings(chunks)
}

/// An HTTP/1.1 answer (head and body) arriving in these reads, then the connection's end, as
/// the in-task client reads it: the status and the body's data, or the error's text.
pub fn read_h1_answer(pieces: &[&[u8]]) -> Result<(u16, Vec<u8>), String> {
    crate::h1_wire::read_answer(pieces)
        .0
        .map_err(|err| err.to_string())
}

/// Gemini's non-streamed answer (one JSON object, or `streamGenerateContent`'s JSON array).
pub fn decode_gemini_body(body: &[u8]) -> Result<Vec<ModelEvent>, ModelError> {
    crate::gemini::decode::body_events(body, call_ids())
}

fn call_ids() -> crate::gemini::decode::CallIds {
    let mut n = 0_u64;
    Box::new(move || {
        n += 1;
        format!("call_{n}")
    })
}

fn run<D: SseDecoder>(mut decoder: D, chunks: &[&[u8]]) -> Vec<Result<ModelEvent, ModelError>> {
    let mut parser = SseParser::default();
    let mut chunks = chunks.iter();
    let mut out = Vec::new();
    let mut yielded = Vec::new();
    loop {
        let step = match parser.next_raw() {
            Ok(Some(event)) => decode_data(&mut decoder, event.data, &mut out),
            Ok(None) => match chunks.next() {
                Some(chunk) => {
                    parser.feed(bytes::Bytes::copy_from_slice(chunk));
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
