#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::netguard_url::run(data));
