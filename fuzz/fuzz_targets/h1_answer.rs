#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::h1_answer::run(data));
