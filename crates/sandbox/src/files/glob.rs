//! Glob patterns as regular expressions over `/`-separated relative paths.
//!
//! `*` matches within one path component, `**` across components (`**/` also matches no
//! directory at all), `?` one character, `[abc]`, `[a-z]`, `[!abc]` a character class,
//! `{a,b}` alternatives (nestable), `\x` the character `x`.

use regex::Regex;

/// Whether `component` holds a glob metacharacter.
pub(super) fn has_meta(component: &str) -> bool {
    component.contains(['*', '?', '[', '{', '\\'])
}

/// The anchored regular expression of a glob pattern.
pub(super) fn to_regex(pattern: &str) -> Result<Regex, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::from("^");
    let mut i = 0;
    let mut braces = 0usize;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '*' if chars.get(i + 1) == Some(&'*') => {
                let starts_component = i == 0 || chars[i - 1] == '/';
                if starts_component && chars.get(i + 2) == Some(&'/') {
                    out.push_str("(?:[^/]*/)*");
                    i += 3;
                } else {
                    out.push_str(".*");
                    i += 2;
                }
                continue;
            }
            '*' => out.push_str("[^/]*"),
            '?' => out.push_str("[^/]"),
            '[' => {
                let (class, next) = class(&chars, i)
                    .ok_or_else(|| format!("invalid glob {pattern:?}: unclosed '['"))?;
                out.push_str(&class);
                i = next;
                continue;
            }
            '{' => {
                braces += 1;
                out.push_str("(?:");
            }
            '}' if braces > 0 => {
                braces -= 1;
                out.push(')');
            }
            ',' if braces > 0 => out.push('|'),
            '\\' => {
                let Some(next) = chars.get(i + 1) else {
                    return Err(format!("invalid glob {pattern:?}: it ends with '\\'"));
                };
                out.push_str(&regex::escape(&next.to_string()));
                i += 2;
                continue;
            }
            other => out.push_str(&regex::escape(&other.to_string())),
        }
        i += 1;
    }
    if braces > 0 {
        return Err(format!("invalid glob {pattern:?}: unclosed '{{'"));
    }
    out.push('$');
    Regex::new(&out).map_err(|err| format!("invalid glob {pattern:?}: {err}"))
}

/// The class starting at `chars[start] == '['`, as a regex class, and the index after it;
/// `None` when it is not closed.
fn class(chars: &[char], start: usize) -> Option<(String, usize)> {
    let mut i = start + 1;
    let negated = matches!(chars.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let first = i;
    let mut members = String::new();
    while let Some(&c) = chars.get(i) {
        if c == ']' && i > first {
            // A class never matches the separator.
            let class = if negated {
                format!("[^{members}/]")
            } else {
                format!("[{members}&&[^/]]")
            };
            return Some((class, i + 1));
        }
        let is_range = c == '-' && i > first && chars.get(i + 1).is_some_and(|next| *next != ']');
        if is_range {
            members.push('-');
        } else {
            members.push_str(&regex::escape(&c.to_string()));
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, path: &str) -> bool {
        to_regex(pattern).unwrap().is_match(path)
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
        assert!(to_regex("[abc").is_err());
        assert!(to_regex("{a,b").is_err());
    }
}
