#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::upstream_sse::run(data));
