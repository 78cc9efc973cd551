//! Chat Completions chunks, one per line, read in order by the providers' fast path (which
//! reads a chunk from its text on when it begins as the chunk before did, and only its text
//! when it also ends as that one did) and each on its own by serde.
//!
//! Promise: whatever the fast path takes, in whatever sequence, is serde's reading of that
//! chunk (the same wire values; anything else is left to serde, errors included).

use providers::fuzzing::chat_chunk_readings;

pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let lines: Vec<&str> = text.split('\n').collect();
    check(&lines);
    // Each line twice as well: a chunk after itself takes the shortest way.
    let twice: Vec<&str> = lines.iter().flat_map(|line| [*line, *line]).collect();
    check(&twice);
}

fn check(chunks: &[&str]) {
    for (at, (fast, serde)) in chat_chunk_readings(chunks).into_iter().enumerate() {
        if let Some(fast) = fast {
            assert_eq!(
                serde.as_deref(),
                Some(fast.as_str()),
                "chunk {at} of {chunks:?}: the fast path and serde disagree"
            );
        }
    }
}
