//! The transcripts of runs that just ended, kept parsed beside the JSON they were stored as,
//! for the continuation that is likely to read them next.
//!
//! A response stores its whole continuation transcript (`responses.transcript_json`), and a
//! request with `previous_response_id` reads it back and parses it: an agent's loop or a chat
//! that continues the response it just got parses, at every turn, every item of the
//! conversation so far (at the hundredth turn about half of a request's instructions;
//! docs/benchmarks.md, "Issue 18, twenty-ninth pass"). The memo keeps the items of such a
//! transcript, written at the run's end, until a continuation takes them.
//!
//! It is a memo of the parse and nothing more: [`TranscriptMemo::take`] hands its items over
//! only when the row just read holds the very value they were written as (the JSON text, or on
//! SQLite the packed bytes: `stored_json.rs`), so what a
//! continuation sees is always what the store holds (a response deleted, rewritten, or written
//! by another replica in between is parsed from its row, or not found, as without the memo),
//! and the row is read, with its project, as before.
//!
//! Bounded: [`BUDGET_BYTES`] of entries, each counted as its JSON's length (the items parsed
//! from it take about as much) plus the stored value's (the text again, or its packed bytes);
//! the oldest go first. A transcript shorter than [`MIN_BYTES`] is not kept (parsing it again
//! costs less than keeping it), nor one that counts for more than an eighth of the budget.

use std::sync::Arc;

use engine::budget_map::BudgetMap;
use protocol::input::InputItem;

use crate::stored_json::{StoredJson, StoredJsonRef};

/// The most the memo holds, counted as [`cost`].
pub(crate) const BUDGET_BYTES: usize = 32 << 20;

/// The shortest transcript JSON the memo keeps.
pub(crate) const MIN_BYTES: usize = 2 << 10;

/// See the module documentation. Shared by the clones of a store.
#[derive(Debug)]
pub(crate) struct TranscriptMemo {
    /// By response id, oldest first.
    entries: BudgetMap<Arc<str>, Entry>,
}

impl Default for TranscriptMemo {
    fn default() -> Self {
        TranscriptMemo {
            entries: BudgetMap::new(BUDGET_BYTES),
        }
    }
}

struct Entry {
    /// The `transcript_json` the items were written as, in its stored form.
    stored: StoredJson,
    items: Vec<InputItem>,
}

/// The items [`TranscriptMemo::remember`] is given: copied if kept, or the caller's vector,
/// taken (left empty) if kept and left as it was if not.
pub(crate) enum Items<'a> {
    Borrowed(&'a [InputItem]),
    Taken(&'a mut Vec<InputItem>),
}

impl<'a> From<&'a Vec<InputItem>> for Items<'a> {
    fn from(items: &'a Vec<InputItem>) -> Self {
        Items::Borrowed(items)
    }
}

/// What an entry counts for against [`BUDGET_BYTES`]: `stored`, of a JSON `json_len` bytes
/// long.
fn cost(stored: &StoredJson, json_len: usize) -> usize {
    json_len.saturating_add(stored.stored_len())
}

impl TranscriptMemo {
    /// Keeps `items`, just stored as `stored` (of a JSON `json_len` bytes long) in the row of
    /// response `id`, replacing what was kept for `id`; the oldest entries go when the budget
    /// is full.
    pub(crate) fn remember<'a>(
        &self,
        id: &Arc<str>,
        stored: &StoredJson,
        json_len: usize,
        items: impl Into<Items<'a>>,
    ) {
        let cost = cost(stored, json_len);
        if json_len < MIN_BYTES || cost > BUDGET_BYTES / 8 {
            // Not kept; an entry of an earlier write of this row would only be missed.
            drop(self.entries.remove(id));
            return;
        }
        let entry = Entry {
            stored: stored.clone(),
            items: match items.into() {
                Items::Borrowed(items) => items.to_vec(),
                Items::Taken(items) => std::mem::take(items),
            },
        };
        self.entries.insert(Arc::clone(id), entry, cost);
    }

    /// The items kept for response `id`, taken out of the memo, if they were written as
    /// `stored` (the row's `transcript_json` as just read, in its stored form); `None` leaves
    /// the parse to the caller.
    pub(crate) fn take(&self, id: &str, stored: StoredJsonRef<'_>) -> Option<Vec<InputItem>> {
        let entry = self.entries.remove(id)?;
        (entry.stored.as_ref() == stored).then_some(entry.items)
    }

    /// How many entries and bytes (as counted against the budget) are kept.
    #[cfg(test)]
    fn size(&self) -> (usize, usize) {
        self.entries.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(text: &str) -> Vec<InputItem> {
        serde_json::from_value(serde_json::json!([
            {"type": "message", "role": "user", "content": text},
            {"type": "message", "role": "assistant", "content": text},
        ]))
        .unwrap()
    }

    /// The items' JSON as the store writes it where it does not pack (PostgreSQL).
    fn json_of(items: &[InputItem]) -> StoredJson {
        StoredJson::Text(Arc::from(InputItem::list_to_json(items).unwrap()))
    }

    fn len(json: &StoredJson) -> usize {
        json.stored_len()
    }

    fn long(tag: &str, bytes: usize) -> Vec<InputItem> {
        items(&format!("{tag} {}", "x".repeat(bytes)))
    }

    #[test]
    fn a_transcript_is_handed_over_once_and_only_for_the_text_it_was_written_as() {
        let memo = TranscriptMemo::default();
        let id: Arc<str> = Arc::from("resp_1");
        let kept = long("a", 4096);
        let json = json_of(&kept);
        memo.remember(&id, &json, len(&json), &kept);
        assert_eq!(memo.take("resp_2", json.as_ref()), None, "another id");
        assert_eq!(memo.take("resp_1", json.as_ref()), Some(kept.clone()));
        assert_eq!(memo.take("resp_1", json.as_ref()), None, "taken already");
        assert_eq!(memo.size(), (0, 0));

        // The row holds other text (rewritten, or by another replica): the caller parses it.
        memo.remember(&id, &json, len(&json), &kept);
        let other = json_of(&long("b", 4096));
        assert_eq!(memo.take("resp_1", other.as_ref()), None);
        assert_eq!(memo.size(), (0, 0), "a stale entry is dropped");
    }

    #[test]
    fn a_later_write_of_the_same_row_replaces_what_was_kept() {
        let memo = TranscriptMemo::default();
        let id: Arc<str> = Arc::from("resp_1");
        let first = long("a", 4096);
        let second = long("b", 8192);
        memo.remember(&id, &json_of(&first), len(&json_of(&first)), &first);
        memo.remember(&id, &json_of(&second), len(&json_of(&second)), &second);
        assert_eq!(
            memo.size(),
            (1, cost(&json_of(&second), len(&json_of(&second))))
        );
        assert_eq!(memo.take("resp_1", json_of(&first).as_ref()), None);
        memo.remember(&id, &json_of(&second), len(&json_of(&second)), &second);
        assert_eq!(memo.take("resp_1", json_of(&second).as_ref()), Some(second));

        // A short rewrite is not kept, and forgets the longer one.
        memo.remember(&id, &json_of(&first), len(&json_of(&first)), &first);
        let short = items("hello");
        memo.remember(&id, &json_of(&short), len(&json_of(&short)), &short);
        assert_eq!(memo.size(), (0, 0));
    }

    #[test]
    fn a_packed_transcript_is_handed_over_for_its_packed_bytes_and_counts_them() {
        let memo = TranscriptMemo::default();
        let id: Arc<str> = Arc::from("resp_1");
        let kept = long("a", 16 << 10);
        let text = json_of(&kept);
        let StoredJson::Text(json) = &text else {
            unreachable!()
        };
        let packed = StoredJson::new(Arc::clone(json), true, |json| {
            crate::transcript_pack::pack(json)
        });
        assert!(matches!(packed, StoredJson::Packed(_)), "{packed:?}");
        memo.remember(&id, &packed, json.len(), &kept);
        assert_eq!(memo.size(), (1, json.len() + packed.stored_len()));
        assert!(memo.size().1 < json.len() + json.len() / 2);
        assert_eq!(memo.take("resp_1", packed.as_ref()), Some(kept.clone()));

        // The same JSON stored as text (an older row rewritten) is not the value kept: parsed.
        memo.remember(&id, &packed, json.len(), &kept);
        assert_eq!(memo.take("resp_1", text.as_ref()), None);
        // Nor other packed bytes.
        memo.remember(&id, &packed, json.len(), &kept);
        let StoredJson::Packed(bytes) = &packed else {
            unreachable!()
        };
        let mut other = bytes.to_vec();
        if let Some(last) = other.last_mut() {
            *last ^= 1;
        }
        assert_eq!(memo.take("resp_1", StoredJsonRef::Packed(&other)), None);
    }

    #[test]
    fn short_and_oversized_transcripts_are_not_kept() {
        let memo = TranscriptMemo::default();
        let short = items("hello");
        let json = json_of(&short);
        assert!(len(&json) < MIN_BYTES);
        memo.remember(&Arc::from("resp_short"), &json, len(&json), &short);
        let huge = long("h", BUDGET_BYTES / 16 + 1);
        memo.remember(
            &Arc::from("resp_huge"),
            &json_of(&huge),
            len(&json_of(&huge)),
            &huge,
        );
        assert_eq!(memo.size(), (0, 0));
        assert_eq!(memo.take("resp_short", json.as_ref()), None);
    }

    #[test]
    fn the_oldest_entries_go_when_the_budget_is_full() {
        let memo = TranscriptMemo::default();
        let each = long("e", 1 << 19);
        let json = json_of(&each);
        let fit = BUDGET_BYTES / cost(&json, len(&json));
        assert!(fit >= 4, "{fit}");
        for n in 0..fit + 3 {
            memo.remember(&Arc::from(format!("resp_{n}")), &json, len(&json), &each);
        }
        let (count, bytes) = memo.size();
        assert_eq!(count, fit);
        assert!(bytes <= BUDGET_BYTES, "{bytes}");
        for n in 0..3 {
            assert_eq!(
                memo.take(&format!("resp_{n}"), json.as_ref()),
                None,
                "resp_{n}"
            );
        }
        assert_eq!(
            memo.take(&format!("resp_{}", fit + 2), json.as_ref()),
            Some(each)
        );
    }
}
