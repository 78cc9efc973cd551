//! Test support: every single-character edit of a JSON text (each character removed, and each
//! of a set of JSON-significant characters inserted before each character), for tests that
//! compare a fast decoding path with serde over near-miss inputs.

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
