#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::apply_patch::run(data));
