#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::mcp_sse::run(data));
