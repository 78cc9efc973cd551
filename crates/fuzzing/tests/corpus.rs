//! Every fuzz target on stable: the checked-in corpus (`fuzz/corpus/<target>/`) replayed, then a
//! bounded random run (seeded, so a failure replays) of mutations of that corpus. CI runs this;
//! `cargo +nightly fuzz run <target>` (docs/security.md) runs the same functions for as long as
//! one likes. `AGENTD_FUZZ_CASES=N` changes the number of random cases per target.

#![expect(clippy::expect_used, clippy::panic, reason = "test code fails loudly")]

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// Random cases per target unless `AGENTD_FUZZ_CASES` says otherwise.
const CASES: u32 = 2000;
/// Fixed: the same inputs on every run.
const SEED: [u8; 32] = *b"agentd fuzz corpus replay seed 1";
/// At least this many seeds per target are checked in.
const MIN_SEEDS: usize = 20;

/// Pieces the mutator splices in: the tokens each parser cares about.
const TOKENS: &[&[u8]] = &[
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n",
    b"\0",
    b"data: ",
    b"event: ",
    b":",
    b"[DONE]",
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b",",
    b"\\u0000",
    b"\\ud800",
    b"null",
    b"-1",
    b"1e400",
    b"18446744073709551616",
    b"*** Begin Patch\n",
    b"*** End Patch",
    b"*** Update File: ",
    b"*** Add File: ",
    b"*** Delete File: ",
    b"*** Move to: ",
    b"*** End of File\n",
    b"@@ ",
    b"\n+",
    b"\n-",
    b"\n ",
    b"http://",
    b"https://",
    b"0x7f.1",
    b"[::ffff:127.0.0.1]",
    b"localhost",
    b"@",
    b"%00",
    b"/",
    b"127.0.0.1/8,",
    b"::1",
    b"\xf0\x9f\x98",
    b"\xff",
    b"\"type\":\"function\"",
    b"\"tools\":[",
    b"\"input\":",
    b"\"model\":\"openai/x\"",
    b"\"background\":true",
    b"\"stream\":true",
    b"HTTP/1.1 200 OK\r\n",
    b"transfer-encoding: chunked\r\n",
    b"content-length: 5\r\n",
    b"\r\n0\r\n\r\n",
    b";ext=1",
    b"ffffffffffffffff",
];

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = corpus_dir(target);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
        .map(|entry| entry.expect("a corpus entry").path())
        .filter(|path| path.is_file())
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| std::fs::read(path).expect("a readable corpus file"))
        .collect()
}

#[test]
fn every_target_has_a_corpus_and_survives_it() {
    for (target, body) in fuzzing::TARGETS {
        let seeds = seeds(target);
        assert!(
            seeds.len() >= MIN_SEEDS,
            "{target}: only {} seeds in {}",
            seeds.len(),
            corpus_dir(target).display()
        );
        for seed in &seeds {
            body(seed);
        }
    }
}

/// One edit of a seed.
#[derive(Debug, Clone)]
enum Edit {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize, usize),
    Token(usize, usize),
    Duplicate(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, bits)| Edit::Flip(at, bits)),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Edit::Insert(at, byte)),
        (any::<usize>(), 1usize..32).prop_map(|(at, len)| Edit::Delete(at, len)),
        (any::<usize>(), any::<usize>()).prop_map(|(at, token)| Edit::Token(at, token)),
        (any::<usize>(), 1usize..64).prop_map(|(at, len)| Edit::Duplicate(at, len)),
    ]
}

fn mutate(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for edit in edits {
        let at = |pos: usize, len: usize| if len == 0 { 0 } else { pos % (len + 1) };
        match *edit {
            Edit::Flip(pos, bits) if !data.is_empty() => {
                let i = pos % data.len();
                data[i] ^= bits;
            }
            Edit::Flip(..) => {}
            Edit::Insert(pos, byte) => data.insert(at(pos, data.len()), byte),
            Edit::Delete(pos, len) => {
                let start = at(pos, data.len());
                let end = (start + len).min(data.len());
                data.drain(start..end);
            }
            Edit::Token(pos, token) => {
                let start = at(pos, data.len());
                let token = TOKENS[token % TOKENS.len()];
                data.splice(start..start, token.iter().copied());
            }
            Edit::Duplicate(pos, len) => {
                let start = at(pos, data.len());
                let end = (start + len).min(data.len());
                let copy = data[start..end].to_vec();
                data.splice(end..end, copy);
            }
        }
    }
    data
}

fn cases() -> u32 {
    std::env::var("AGENTD_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(CASES)
}

#[test]
fn a_seeded_random_run_of_every_target() {
    for (target, body) in fuzzing::TARGETS {
        let seeds = seeds(target);
        let config = Config {
            cases: cases(),
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &SEED));
        let count = seeds.len();
        let inputs = prop_oneof![
            4 => (0..count, prop::collection::vec(edit(), 1..8))
                .prop_map(move |(seed, edits)| mutate(&seeds[seed], &edits)),
            1 => prop::collection::vec(any::<u8>(), 0..256),
        ];
        if let Err(failure) = runner.run(&inputs, |input| {
            body(&input);
            Ok(())
        }) {
            panic!("{target}: {failure}");
        }
    }
}
