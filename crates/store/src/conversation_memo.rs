//! The items of the conversations runs read last, kept parsed beside the JSON they were read
//! as, for the next run of the same conversation.
//!
//! A run with `conversation` reads every item of the conversation and parses each into an
//! input item; the conversation grows by the run's own items, and its next run reads and
//! parses them all again (at the hundredth turn a third of a request's instructions;
//! docs/benchmarks.md, "Issue 18, twenty-ninth pass"). The memo keeps, per conversation, each
//! item's JSON and what it parsed to, and the position of the last one; the next read asks the
//! store only for the items after it (`ports/items.rs`, `CONVERSATION_INPUT`).
//!
//! It is a memo of the parse and nothing more: what a read gives is what the store holds,
//! whoever wrote it (an item deleted or rewritten, another replica's run, SQL by hand). The
//! read of the items after the last one kept also gives, from the same statement, the
//! conversation's `item_changes` — raised by triggers at every rewrite or removal of one of its
//! items and at every insertion before an item already stored (schema version 20) — and the
//! kept items stand for those only while it is what it was when read. Otherwise every item is
//! read, and an item is taken from the memo only when the row holds the very text it was
//! parsed from. The rows are read with their project, as before.
//!
//! Bounded: [`BUDGET_BYTES`] of entries, each counted as twice its items' JSON (the text, and
//! the items parsed from it, which take about as much); the conversations read least recently
//! go first. A conversation shorter than [`MIN_BYTES`] is not kept (parsing it again costs
//! less than keeping it), nor one larger than an eighth of the budget.

use std::sync::Arc;

use engine::budget_map::BudgetMap;
use protocol::input::InputItem;

/// The most the memo holds, counted as twice the JSON of the items kept.
pub(crate) const BUDGET_BYTES: usize = 16 << 20;

/// The least JSON a conversation's items take for the memo to keep them.
pub(crate) const MIN_BYTES: usize = 2 << 10;

/// One item as read: its JSON and what it parsed to (`None`: no input item).
pub(crate) type Parsed = (Arc<str>, Option<InputItem>);

/// What the memo keeps of a conversation.
struct Entry {
    /// Its `item_changes` when read.
    changes: i64,
    /// The position of the last item read (-1: none).
    last: i64,
    /// Every item read, in order.
    items: Vec<Parsed>,
}

/// See the module documentation. Shared by the clones of a store.
pub(crate) struct ConversationMemo {
    /// By conversation id, least recently read first.
    entries: BudgetMap<Arc<str>, Entry>,
}

impl std::fmt::Debug for ConversationMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (count, bytes) = self.entries.size();
        f.debug_struct("ConversationMemo")
            .field("count", &count)
            .field("bytes", &bytes)
            .finish()
    }
}

impl Default for ConversationMemo {
    fn default() -> Self {
        ConversationMemo {
            entries: BudgetMap::new(BUDGET_BYTES),
        }
    }
}

impl ConversationMemo {
    /// The position after which a read of conversation `id` need only read its items: that
    /// of the last item kept, or -1 (every item) when nothing is kept.
    pub(crate) fn read_after(&self, id: &str) -> i64 {
        self.entries
            .read(id, |entry| entry.map_or(-1, |entry| entry.last))
    }

    /// Keeps `items`, just read as conversation `id`'s, as the most recently read; the least
    /// recently read go when the budget is full.
    fn keep(&self, id: &str, entry: Entry) {
        let cost = entry
            .items
            .iter()
            .map(|(json, _)| json.len())
            .sum::<usize>()
            .saturating_mul(2);
        if cost < MIN_BYTES.saturating_mul(2) || cost > BUDGET_BYTES / 8 {
            return;
        }
        self.entries.insert(Arc::from(id), entry, cost);
    }

    /// How many conversations and bytes (as counted against the budget) are kept.
    #[cfg(test)]
    fn size(&self) -> (usize, usize) {
        self.entries.size()
    }
}

/// Reads conversation `id` from the rows a read of its items after position `after` found
/// (`rows`: position and text, in order) and its `item_changes` (`changes`), read with them,
/// with what `memo` kept of it. For a read after a position (`after` ≥ 0) the items up to it
/// are the memo's, if the store still holds them as they were read: no change since (the
/// count is the one read with them); otherwise `Ok(None)`, and the caller reads every item
/// (`after` -1). For a read of every item, an item whose text is the one kept at its place is
/// copied, any other parsed with `parse` (given its index in `rows`). What was read is kept
/// for the next read. Returns the input items, in order, and their texts as a JSON list
/// (which reads back as them: a run's transcript begins with it).
pub(crate) fn read<'t, E>(
    memo: &ConversationMemo,
    id: &str,
    after: i64,
    changes: i64,
    rows: impl ExactSizeIterator<Item = (i64, &'t str)>,
    mut parse: impl FnMut(usize, &str) -> Result<Option<InputItem>, E>,
) -> Result<Option<(Vec<InputItem>, String)>, E> {
    let fits = |entry: &Entry| entry.last == after && entry.changes == changes;
    let (mut read, mut last, mut kept) = if after < 0 {
        let kept = memo.entries.remove(id).map(|entry| entry.items);
        (
            Vec::with_capacity(rows.len()),
            -1,
            kept.unwrap_or_default().into_iter(),
        )
    } else {
        // Left in place when it does not fit: the read of every item compares their texts.
        if !memo.entries.read(id, |entry| entry.is_some_and(fits)) {
            return Ok(None);
        }
        match memo.entries.remove(id) {
            Some(entry) if fits(&entry) => {
                let mut items = entry.items;
                items.reserve(rows.len());
                (items, after, Vec::new().into_iter())
            }
            // Replaced in between by another read's.
            _ => return Ok(None),
        }
    };
    for (index, (position, text)) in rows.enumerate() {
        let parsed = match kept.next() {
            Some((json, item)) if *json == *text => (json, item),
            _ => (Arc::from(text), parse(index, text)?),
        };
        read.push(parsed);
        last = position;
    }
    drop(kept);
    let mut items = Vec::with_capacity(read.len());
    let mut json =
        String::with_capacity(2 + read.iter().map(|(text, _)| text.len() + 1).sum::<usize>());
    json.push('[');
    for (text, item) in &read {
        if let Some(item) = item {
            if !items.is_empty() {
                json.push(',');
            }
            json.push_str(text);
            items.push(item.clone());
        }
    }
    json.push(']');
    memo.keep(
        id,
        Entry {
            changes,
            last,
            items: read,
        },
    );
    Ok(Some((items, json)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(role: &str, text: &str) -> String {
        serde_json::json!({"type": "message", "role": role, "content": text}).to_string()
    }

    /// A read of every item of a conversation without changes: `texts` at positions 0, 1, ...
    fn read_all<E>(
        memo: &ConversationMemo,
        id: &str,
        texts: &[String],
        parse: impl FnMut(usize, &str) -> Result<Option<InputItem>, E>,
    ) -> Result<(Vec<InputItem>, String), E> {
        let rows = texts
            .iter()
            .enumerate()
            .map(|(n, text)| (n as i64, text.as_str()));
        Ok(read(memo, id, -1, 0, rows, parse)?.expect("a read of every item gives them"))
    }

    /// Reads `texts` as conversation `id`, counting the parses; the JSON list read with the
    /// items is their texts, and reads back as them.
    fn read_counting(
        memo: &ConversationMemo,
        id: &str,
        texts: &[String],
    ) -> (Vec<InputItem>, usize) {
        let mut parses = 0;
        let (items, json) = read_all(memo, id, texts, |_, text| {
            parses += 1;
            Ok::<_, serde_json::Error>(serde_json::from_str(text).ok())
        })
        .unwrap();
        let listed: Vec<&String> = texts
            .iter()
            .filter(|text| serde_json::from_str::<InputItem>(text).is_ok())
            .collect();
        let joined: Vec<&str> = listed.iter().map(|text| text.as_str()).collect();
        assert_eq!(json, format!("[{}]", joined.join(",")));
        assert_eq!(
            serde_json::from_str::<Vec<InputItem>>(&json).unwrap(),
            items
        );
        (items, parses)
    }

    fn parsed_all(texts: &[String]) -> Vec<InputItem> {
        texts
            .iter()
            .filter_map(|text| serde_json::from_str(text).ok())
            .collect()
    }

    #[test]
    fn a_conversation_read_again_parses_only_what_changed() {
        let memo = ConversationMemo::default();
        let long = "why? ".repeat(300);
        let mut texts = vec![
            message("user", &long),
            message("assistant", &long),
            // JSON, but no input item.
            serde_json::json!({"type": "search_results", "results": []}).to_string(),
        ];
        let (items, parses) = read_counting(&memo, "conv_1", &texts);
        assert_eq!((items.clone(), parses), (parsed_all(&texts), 3));
        assert_eq!(items.len(), 2);

        // Two more items: only they are parsed.
        texts.push(message("user", "and then?"));
        texts.push(message("assistant", "then this."));
        let (items, parses) = read_counting(&memo, "conv_1", &texts);
        assert_eq!((items, parses), (parsed_all(&texts), 2));

        // An item rewritten, and one deleted: the items whose place now holds other text are
        // parsed again (the second, and the last, moved up).
        texts[1] = message("assistant", &format!("{long} (edited)"));
        texts.remove(3);
        let (items, parses) = read_counting(&memo, "conv_1", &texts);
        assert_eq!((items, parses), (parsed_all(&texts), 2));

        // Another conversation with the same items has its own entry.
        let (items, parses) = read_counting(&memo, "conv_2", &texts);
        assert_eq!((items, parses), (parsed_all(&texts), 4));
        assert_eq!(memo.size().0, 2);
    }

    #[test]
    fn a_parse_error_is_the_reads_and_keeps_nothing_back() {
        let memo = ConversationMemo::default();
        let long = "why? ".repeat(300);
        let texts = [message("user", &long), message("assistant", &long)];
        read_counting(&memo, "conv_1", &texts);
        let failed = read_all(&memo, "conv_1", &texts, |index, _| {
            Err::<Option<InputItem>, usize>(index)
        });
        assert_eq!(
            failed.map(|(items, _)| items),
            Ok(parsed_all(&texts)),
            "nothing to parse: all kept"
        );
        let changed = [message("user", &long), message("assistant", "short")];
        let failed = read_all(&memo, "conv_1", &changed, |index, _| {
            Err::<Option<InputItem>, usize>(index)
        });
        assert_eq!(failed.map(|(items, _)| items), Err(1));
        assert_eq!(memo.size(), (0, 0));
    }

    #[test]
    fn short_conversations_are_not_kept_and_the_least_recently_read_go_first() {
        let memo = ConversationMemo::default();
        let short = [message("user", "hi")];
        read_counting(&memo, "conv_short", &short);
        assert_eq!(memo.size(), (0, 0));

        let each = [message("user", &"x".repeat(BUDGET_BYTES / 64))];
        let fit = BUDGET_BYTES / (each[0].len() * 2);
        for n in 0..fit {
            read_counting(&memo, &format!("conv_{n}"), &each);
        }
        assert_eq!(memo.size().0, fit);
        // conv_0 read again: conv_1 is now the least recently read.
        assert_eq!(read_counting(&memo, "conv_0", &each).1, 0);
        read_counting(&memo, "conv_new", &each);
        let (count, bytes) = memo.size();
        assert_eq!(count, fit);
        assert!(bytes <= BUDGET_BYTES, "{bytes}");
        assert_eq!(read_counting(&memo, "conv_0", &each).1, 0, "kept");
        assert_eq!(read_counting(&memo, "conv_1", &each).1, 1, "gone");
    }

    /// A read of the items after the last one kept: the memo's items stand for those before
    /// only while the conversation's change count is what it was when read; otherwise the
    /// caller is sent to read every item.
    #[test]
    fn a_read_after_the_kept_items_takes_them_only_while_nothing_before_changed() {
        let memo = ConversationMemo::default();
        let long = "why? ".repeat(300);
        let texts = vec![message("user", &long), message("assistant", &long)];
        read_counting(&memo, "conv_1", &texts);
        assert_eq!(memo.read_after("conv_1"), 1);
        assert_eq!(memo.read_after("conv_2"), -1, "nothing kept");

        let new = [message("user", "and then?")];
        let after = |after, changes, parses: &mut usize| {
            read(
                &memo,
                "conv_1",
                after,
                changes,
                new.iter().map(|text| (5, text.as_str())),
                |_, text| {
                    *parses += 1;
                    Ok::<_, serde_json::Error>(serde_json::from_str(text).ok())
                },
            )
            .unwrap()
        };
        // An item rewritten, removed or put back (the count moved); after another position.
        let mut parses = 0;
        assert_eq!(after(1, 1, &mut parses), None);
        assert_eq!(after(0, 0, &mut parses), None);
        assert_eq!(parses, 0);
        assert_eq!(memo.size().0, 1, "left for the read of every item");

        // Unchanged: only the new item is parsed, and the read goes on from its position.
        let (items, json) = after(1, 0, &mut parses).expect("kept items fit");
        let mut all = texts.clone();
        all.extend(new.iter().cloned());
        assert_eq!(items, parsed_all(&all));
        assert_eq!(
            serde_json::from_str::<Vec<InputItem>>(&json).unwrap(),
            items
        );
        assert_eq!(parses, 1);
        assert_eq!(memo.read_after("conv_1"), 5);

        // The read of every item after a change compares texts, and starts the count again.
        let (items, parses) = read_counting(&memo, "conv_1", &all);
        assert_eq!((items, parses), (parsed_all(&all), 0));
        assert_eq!(memo.read_after("conv_1"), 2);
    }
}
