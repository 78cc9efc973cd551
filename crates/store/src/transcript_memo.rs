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
//! only when the row just read holds the very text they were written as, so what a
//! continuation sees is always what the store holds (a response deleted, rewritten, or written
//! by another replica in between is parsed from its row, or not found, as without the memo),
//! and the row is read, with its project, as before.
//!
//! Bounded: [`BUDGET_BYTES`] of entries, each counted as twice its JSON (the text, and the
//! items parsed from it, which take about as much); the oldest go first. A transcript shorter
//! than [`MIN_BYTES`] is not kept (parsing it again costs less than keeping it), nor one
//! larger than an eighth of the budget.

use std::sync::Arc;

use protocol::input::InputItem;

use crate::budget_map::BudgetMap;

/// The most the memo holds, counted as [`cost`].
pub(crate) const BUDGET_BYTES: usize = 32 << 20;

/// The shortest transcript JSON the memo keeps.
pub(crate) const MIN_BYTES: usize = 2 << 10;

/// See the module documentation. Shared by the clones of a store.
#[derive(Debug)]
pub(crate) struct TranscriptMemo {
    /// By response id, oldest first.
    entries: BudgetMap<Entry>,
}

impl Default for TranscriptMemo {
    fn default() -> Self {
        TranscriptMemo {
            entries: BudgetMap::new(BUDGET_BYTES),
        }
    }
}

struct Entry {
    /// The `transcript_json` the items were written as.
    json: Arc<str>,
    items: Vec<InputItem>,
}

/// What an entry of `json` counts for against [`BUDGET_BYTES`].
fn cost(json: &str) -> usize {
    json.len().saturating_mul(2)
}

impl TranscriptMemo {
    /// Keeps `items`, just stored as `json` in the row of response `id`, replacing what was
    /// kept for `id`; the oldest entries go when the budget is full.
    pub(crate) fn remember(&self, id: &Arc<str>, json: &Arc<str>, items: &[InputItem]) {
        let cost = cost(json);
        if json.len() < MIN_BYTES || cost > BUDGET_BYTES / 8 {
            // Not kept; an entry of an earlier write of this row would only be missed.
            drop(self.entries.remove(id));
            return;
        }
        let entry = Entry {
            json: Arc::clone(json),
            items: items.to_vec(),
        };
        self.entries.insert(Arc::clone(id), entry, cost);
    }

    /// The items kept for response `id`, taken out of the memo, if they were written as
    /// `json` (the row's `transcript_json` as just read); `None` leaves the parse to the
    /// caller.
    pub(crate) fn take(&self, id: &str, json: &str) -> Option<Vec<InputItem>> {
        let entry = self.entries.remove(id)?;
        (*entry.json == *json).then_some(entry.items)
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

    fn json_of(items: &[InputItem]) -> Arc<str> {
        Arc::from(InputItem::list_to_json(items).unwrap())
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
        memo.remember(&id, &json, &kept);
        assert_eq!(memo.take("resp_2", &json), None, "another id");
        assert_eq!(memo.take("resp_1", &json), Some(kept.clone()));
        assert_eq!(memo.take("resp_1", &json), None, "taken already");
        assert_eq!(memo.size(), (0, 0));

        // The row holds other text (rewritten, or by another replica): the caller parses it.
        memo.remember(&id, &json, &kept);
        let other = json_of(&long("b", 4096));
        assert_eq!(memo.take("resp_1", &other), None);
        assert_eq!(memo.size(), (0, 0), "a stale entry is dropped");
    }

    #[test]
    fn a_later_write_of_the_same_row_replaces_what_was_kept() {
        let memo = TranscriptMemo::default();
        let id: Arc<str> = Arc::from("resp_1");
        let first = long("a", 4096);
        let second = long("b", 8192);
        memo.remember(&id, &json_of(&first), &first);
        memo.remember(&id, &json_of(&second), &second);
        assert_eq!(memo.size(), (1, cost(&json_of(&second))));
        assert_eq!(memo.take("resp_1", &json_of(&first)), None);
        memo.remember(&id, &json_of(&second), &second);
        assert_eq!(memo.take("resp_1", &json_of(&second)), Some(second));

        // A short rewrite is not kept, and forgets the longer one.
        memo.remember(&id, &json_of(&first), &first);
        let short = items("hello");
        memo.remember(&id, &json_of(&short), &short);
        assert_eq!(memo.size(), (0, 0));
    }

    #[test]
    fn short_and_oversized_transcripts_are_not_kept() {
        let memo = TranscriptMemo::default();
        let short = items("hello");
        let json = json_of(&short);
        assert!(json.len() < MIN_BYTES);
        memo.remember(&Arc::from("resp_short"), &json, &short);
        let huge = long("h", BUDGET_BYTES / 16 + 1);
        memo.remember(&Arc::from("resp_huge"), &json_of(&huge), &huge);
        assert_eq!(memo.size(), (0, 0));
        assert_eq!(memo.take("resp_short", &json), None);
    }

    #[test]
    fn the_oldest_entries_go_when_the_budget_is_full() {
        let memo = TranscriptMemo::default();
        let each = long("e", 1 << 19);
        let json = json_of(&each);
        let fit = BUDGET_BYTES / cost(&json);
        assert!(fit >= 4, "{fit}");
        for n in 0..fit + 3 {
            memo.remember(&Arc::from(format!("resp_{n}")), &json, &each);
        }
        let (count, bytes) = memo.size();
        assert_eq!(count, fit);
        assert!(bytes <= BUDGET_BYTES, "{bytes}");
        for n in 0..3 {
            assert_eq!(memo.take(&format!("resp_{n}"), &json), None, "resp_{n}");
        }
        assert_eq!(memo.take(&format!("resp_{}", fit + 2), &json), Some(each));
    }
}
