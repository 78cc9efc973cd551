//! The JSON of the long strings a thread escaped last, for the next time it writes them.
//!
//! A request's long texts are written into several JSON documents: its instructions into the
//! response object of `response.created` (shared with `response.in_progress`), into the final
//! response (shared with its row, `response.completed` and the HTTP body) and into the store's
//! text of the response; a long tool output or answer into its event, the response and the
//! transcript; and an application sends the same system prompt with every request. Escaping
//! prose whose quotes and line ends need escapes costs ~5 instructions a byte; finding a kept
//! string (its length, then its bytes compared) and copying its JSON a fraction of one
//! (docs/benchmarks.md, "Issue 18, thirty-seventh pass").
//!
//! Strings of [`MIN_LEN`] to [`MAX_LEN`] bytes that need an escape are kept, [`ENTRIES`] per
//! thread, the one used last first: four strings and their JSON, ~0.6 MB for prose and under
//! 2 MB whatever they hold (a control character's escape is six bytes). A string is found only
//! by its very bytes, so what is written is always its own JSON.

use std::cell::RefCell;
use std::collections::VecDeque;

/// Shorter strings are escaped every time: comparing and keeping them would cost about what
/// escaping them does.
pub(crate) const MIN_LEN: usize = 4 * 1024;

/// Longer strings are escaped every time, never kept.
pub(crate) const MAX_LEN: usize = 64 * 1024;

/// The strings a thread keeps.
const ENTRIES: usize = 4;

/// A string and its JSON (quoted and escaped).
struct Entry {
    text: Box<str>,
    json: Box<str>,
}

thread_local! {
    static KEPT: RefCell<VecDeque<Entry>> = const { RefCell::new(VecDeque::new()) };
}

/// Appends the JSON of `value` to `out`: the kept one when this thread escaped the same string
/// lately, else what `escape` appends (`None` from it: nothing kept, `out` as `escape` left
/// it), kept for the next time.
pub(crate) fn push(
    out: &mut String,
    value: &str,
    escape: impl FnOnce(&mut String) -> Option<()>,
) -> Option<()> {
    if !(MIN_LEN..=MAX_LEN).contains(&value.len()) {
        return escape(out);
    }
    KEPT.with(|kept| {
        let Ok(mut kept) = kept.try_borrow_mut() else {
            // Not reached (escaping calls back into nothing of ours).
            return escape(out);
        };
        if let Some(at) = kept
            .iter()
            .position(|entry| entry.text.len() == value.len() && *entry.text == *value)
        {
            let entry = kept.remove(at)?;
            out.push_str(&entry.json);
            kept.push_front(entry);
            return Some(());
        }
        let before = out.len();
        escape(out)?;
        let json = out.get(before..)?;
        if kept.len() == ENTRIES {
            kept.pop_back();
        }
        kept.push_front(Entry {
            text: Box::from(value),
            json: Box::from(json),
        });
        Some(())
    })
}

/// How many strings this thread keeps (for tests).
#[cfg(test)]
pub(crate) fn kept() -> usize {
    KEPT.with_borrow(VecDeque::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(value: &str) -> String {
        serde_json::to_string(value).unwrap()
    }

    /// A kept string's JSON is written only for the very same bytes: a string of the same
    /// length that differs in its last byte is escaped on its own; the thread keeps at most
    /// [`ENTRIES`], the one used last first.
    #[test]
    fn only_the_same_bytes_take_a_kept_json() {
        let texts: Vec<String> = (0..6)
            .map(|n| format!("{n} \"quoted\"\n").repeat(MIN_LEN / 10 + 1))
            .collect();
        let mut calls = 0;
        let write = |value: &str, calls: &mut usize| {
            let mut out = String::from("[");
            push(&mut out, value, |out| {
                *calls += 1;
                out.push_str(&escaped(value));
                Some(())
            })
            .unwrap();
            assert_eq!(out, format!("[{}", escaped(value)));
        };
        write(&texts[0], &mut calls);
        write(&texts[0], &mut calls);
        assert_eq!(calls, 1, "the second write takes the kept JSON");
        let mut other = texts[0].clone();
        other.pop();
        other.push('!');
        write(&other, &mut calls);
        assert_eq!(
            calls, 2,
            "same length, another last byte: escaped on its own"
        );
        for text in &texts[1..] {
            write(text, &mut calls);
        }
        assert_eq!(kept(), ENTRIES);
        assert_eq!(calls, 7);
        write(&texts[5], &mut calls);
        write(&texts[0], &mut calls);
        assert_eq!(calls, 8, "the oldest were let go");
    }

    /// Strings outside the bounds are escaped every time and never kept; a failed escape
    /// keeps nothing.
    #[test]
    fn short_long_and_failed_strings_are_not_kept() {
        let before = kept();
        for value in ["\"".repeat(MIN_LEN - 1), "\"".repeat(MAX_LEN + 1)] {
            for _ in 0..2 {
                let mut called = false;
                let mut out = String::new();
                push(&mut out, &value, |out| {
                    called = true;
                    out.push_str(&escaped(&value));
                    Some(())
                })
                .unwrap();
                assert!(called);
            }
        }
        let value = "\"".repeat(MIN_LEN);
        assert_eq!(push(&mut String::new(), &value, |_| None), None);
        assert_eq!(kept(), before);
    }
}
