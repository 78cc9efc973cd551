//! Test support for the hand-written request bodies (`to_json` in each wire): the texts every
//! string they write is tried in.

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
