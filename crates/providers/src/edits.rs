//! Test support for the fast decoding paths (`fast.rs`): every single-character edit of a JSON
//! text (each character removed, and each of a set of JSON-significant characters inserted
//! before each character), and the check that a fast path's reading is serde's.

/// Characters inserted: JSON punctuation, a digit, a sign, whitespace, an escape, a letter and a
/// non-ASCII character.
const INSERTS: [&str; 13] = [
    "\"", ",", ":", "{", "}", "[", "]", "0", "-", " ", "\\", "n", "é",
];

/// The edits of `base`, removals and insertions.
pub(crate) fn single_character_edits(base: &str) -> Vec<String> {
    let mut edits = Vec::new();
    for (at, c) in base.char_indices() {
        edits.push(format!("{}{}", &base[..at], &base[at + c.len_utf8()..]));
        for insert in INSERTS {
            edits.push(format!("{}{insert}{}", &base[..at], &base[at..]));
        }
    }
    edits
}

/// Whether a fast path took `data` (`fast` is what it read); when it did, serde's reading of
/// the same text (`serde`) must be the very same event.
pub(crate) fn agrees_with_serde<T: std::fmt::Debug, E>(
    data: &str,
    fast: Option<T>,
    serde: Result<T, E>,
) -> bool {
    match fast {
        Some(fast) => {
            assert_eq!(
                serde.as_ref().map(|event| format!("{event:?}")).ok(),
                Some(format!("{fast:?}")),
                "{data}"
            );
            true
        }
        None => false,
    }
}
