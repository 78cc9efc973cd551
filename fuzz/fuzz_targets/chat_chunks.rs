#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::chat_chunks::run(data));
