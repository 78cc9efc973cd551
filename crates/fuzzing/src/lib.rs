//! The bodies of agentd's fuzz targets, as plain functions: `fuzz/` (cargo-fuzz, libFuzzer,
//! nightly) calls them from its `fuzz_target!`s, and `tests/corpus.rs` replays the checked-in
//! corpus (`fuzz/corpus/<target>/`) and a bounded, seeded random run through them on stable.
//!
//! Each function takes arbitrary bytes, runs one parser of agentd on them the way the server
//! does, and asserts what that parser promises beyond not panicking (see each module). A broken
//! promise panics, which is what a fuzzer reports.
//!
//! | target | what it parses |
//! |---|---|
//! | [`request`] | a `POST /v1/responses` body: the tool count probe, the strict parser, limits, validation |
//! | [`upstream_sse`] | an upstream's SSE body through all four wire decoders (and Gemini's JSON body) |
//! | [`h1_answer`] | an upstream's HTTP/1.1 answer as the in-task client reads it: head, framing, chunks |
//! | [`chat_chunks`] | Chat Completions chunks in sequence, the fast path against serde |
//! | [`mcp_sse`] | the MCP legacy HTTP+SSE stream: events, the `endpoint` check, JSON-RPC messages |
//! | [`apply_patch`] | the sandbox's `apply_patch` envelope and the application of its chunks |
//! | [`netguard_url`] | the network guard's URL, IP and allow-list checks |

pub mod apply_patch;
pub mod chat_chunks;
pub mod chunks;
pub mod h1_answer;
pub mod mcp_sse;
pub mod netguard_url;
pub mod request;
pub mod upstream_sse;

/// A target's body: arbitrary bytes in, a panic when a promise is broken.
pub type Body = fn(&[u8]);

/// Every target: its name (the `fuzz/fuzz_targets/<name>.rs` file and `fuzz/corpus/<name>/`)
/// and its body.
pub const TARGETS: [(&str, Body); 7] = [
    ("request", request::run),
    ("upstream_sse", upstream_sse::run),
    ("h1_answer", h1_answer::run),
    ("chat_chunks", chat_chunks::run),
    ("mcp_sse", mcp_sse::run),
    ("apply_patch", apply_patch::run),
    ("netguard_url", netguard_url::run),
];
