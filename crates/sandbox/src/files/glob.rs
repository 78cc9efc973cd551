//! Glob patterns over `/`-separated relative paths, compiled by `globset`.
//!
//! `*` matches within one path component, `**` across components (`**/` also matches no
//! directory at all), `?` one character (see below), `[abc]`, `[a-z]`, `[!abc]` a character class,
//! `{a,b}` alternatives (nestable, one may be empty), `\x` the character `x`. Nothing but a
//! literal `/` matches the separator. globset matches bytes: `?` and a class stand for one
//! byte, so they do not match a non-ASCII character (`*` does).

use globset::{GlobBuilder, GlobMatcher};

/// Whether `component` holds a glob metacharacter.
pub(super) fn has_meta(component: &str) -> bool {
    component.contains(['*', '?', '[', '{', '\\'])
}

/// The matcher of a glob pattern, anchored at both ends.
pub(super) fn matcher(pattern: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .empty_alternates(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|err| format!("invalid glob {pattern:?}: {}", err.kind()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, path: &str) -> bool {
        matcher(pattern).unwrap().is_match(path)
    }

    #[test]
    fn stars() {
        assert!(matches("*.py", "a.py"));
        assert!(!matches("*.py", "dir/a.py"));
        assert!(matches("**/*.py", "a.py"));
        assert!(matches("**/*.py", "dir/sub/a.py"));
        assert!(matches("src/**", "src/a/b.rs"));
        assert!(matches("src/**/x.rs", "src/x.rs"));
        assert!(matches("src/**/x.rs", "src/a/b/x.rs"));
        assert!(!matches("src/**/x.rs", "srcx.rs"));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "a/c"));
    }

    #[test]
    fn classes_braces_escapes() {
        assert!(matches("[a-c].txt", "b.txt"));
        assert!(!matches("[!a-c].txt", "b.txt"));
        assert!(matches("[!a-c].txt", "d.txt"));
        assert!(matches("[]].txt", "].txt"));
        assert!(!matches("a[!x]b", "a/b"));
        assert!(!matches("a[/]b", "a/b"));
        assert!(matches("*.{csv,json}", "x.json"));
        assert!(!matches("*.{csv,json}", "x.txt"));
        assert!(matches("{a,b/{c,d}}.x", "b/d.x"));
        assert!(matches(r"\*.txt", "*.txt"));
        assert!(!matches(r"\*.txt", "a.txt"));
        assert!(matches("a.b", "a.b"));
        assert!(!matches("a.b", "axb"));
        assert!(matcher("[abc").is_err());
        assert!(matcher("{a,b").is_err());
    }

    #[test]
    fn an_empty_alternative_matches_nothing_there() {
        // As the hand-written matcher did; globset drops empty alternatives by default.
        assert!(matches("x{,.bak}", "x"));
        assert!(matches("x{,.bak}", "x.bak"));
        assert!(!matches("x{,.bak}", "x.b"));
    }
}
