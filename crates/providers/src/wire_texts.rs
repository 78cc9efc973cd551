//! Test support for the hand-written request bodies (`to_json` in each wire): the texts every
//! string they write is tried in, and the check that a body is serde's bytes.

/// Escapes, control characters, non-ASCII, empty, and long enough to span many words.
pub(crate) const TEXTS: [&str; 7] = [
    "",
    "plain words",
    "a \"quote\", a \\ backslash and a / slash",
    "lines\nand\ttabs\r\u{1}\u{1f}\u{7f}",
    "é, 漢字 and 🦀",
    "</script><!-- -->",
    "The long answer goes on and on, as answers do, past the eight bytes a word holds. ",
];

/// A body as a wire's `to_json` wrote it (`written`), checked to be serde's bytes for `body`,
/// read back as JSON.
pub(crate) fn checked<T: serde::Serialize>(
    body: &T,
    written: Result<String, serde_json::Error>,
) -> serde_json::Value {
    let written = written.expect("written");
    assert_eq!(
        written,
        serde_json::to_string(body).expect("serde writes it")
    );
    serde_json::from_str(&written).expect("JSON")
}
