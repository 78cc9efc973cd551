//! The items of the conversations runs read last, kept parsed beside the JSON they were read
//! as, for the next run of the same conversation.
//!
//! A run with `conversation` reads every item of the conversation and parses each into an
//! input item; the conversation grows by the run's own items, and its next run reads and
//! parses them all again (at the hundredth turn a third of a request's instructions;
//! docs/benchmarks.md, "Issue 18, twenty-ninth pass"). The memo keeps, per conversation, each
//! item's JSON and what it parsed to; a read parses only the items whose text is not the one
//! kept at their place, and takes a copy of the others.
//!
//! It is a memo of the parse and nothing more: an item is taken from it only when the row just
//! read holds the very text it was parsed from, so a read gives what the store holds, whoever
//! wrote it (an item deleted or rewritten, another replica's run) and the rows are read, with
//! their project, as before.
//!
//! Bounded: [`BUDGET_BYTES`] of entries, each counted as twice its items' JSON (the text, and
//! the items parsed from it, which take about as much); the conversations read least recently
//! go first. A conversation shorter than [`MIN_BYTES`] is not kept (parsing it again costs
//! less than keeping it), nor one larger than an eighth of the budget.

use std::sync::Arc;

use protocol::input::InputItem;

use crate::budget_map::BudgetMap;

/// The most the memo holds, counted as twice the JSON of the items kept.
pub(crate) const BUDGET_BYTES: usize = 16 << 20;

/// The least JSON a conversation's items take for the memo to keep them.
pub(crate) const MIN_BYTES: usize = 2 << 10;

/// One item as read: its JSON and what it parsed to (`None`: no input item).
pub(crate) type Parsed = (Arc<str>, Option<InputItem>);

/// See the module documentation. Shared by the clones of a store.
#[derive(Debug)]
pub(crate) struct ConversationMemo {
    /// By conversation id, least recently read first.
    entries: BudgetMap<Vec<Parsed>>,
}

impl Default for ConversationMemo {
    fn default() -> Self {
        ConversationMemo {
            entries: BudgetMap::new(BUDGET_BYTES),
        }
    }
}

impl ConversationMemo {
    /// The items kept for conversation `id`, taken out of the memo (the caller puts back
    /// what it read with [`ConversationMemo::keep`]).
    pub(crate) fn take(&self, id: &str) -> Vec<Parsed> {
        self.entries.remove(id).unwrap_or_default()
    }

    /// Keeps `items`, just read as conversation `id`'s, as the most recently read; the least
    /// recently read go when the budget is full.
    pub(crate) fn keep(&self, id: &str, items: Vec<Parsed>) {
        let cost = items
            .iter()
            .map(|(json, _)| json.len())
            .sum::<usize>()
            .saturating_mul(2);
        if cost < MIN_BYTES.saturating_mul(2) || cost > BUDGET_BYTES / 8 {
            return;
        }
        self.entries.insert(Arc::from(id), items, cost);
    }

    /// How many conversations and bytes (as counted against the budget) are kept.
    #[cfg(test)]
    fn size(&self) -> (usize, usize) {
        self.entries.size()
    }
}

/// Reads a conversation's rows (`texts`, in order) with what `memo` kept of it: an item whose
/// text is the one kept at its place is copied, any other parsed with `parse`; what was read
/// is kept for the next read. Returns the input items, in order, and their texts as a JSON
/// list (which reads back as them: a run's transcript begins with it).
pub(crate) fn read<'t, E>(
    memo: &ConversationMemo,
    id: &str,
    texts: impl ExactSizeIterator<Item = &'t str>,
    mut parse: impl FnMut(usize, &str) -> Result<Option<InputItem>, E>,
) -> Result<(Vec<InputItem>, String), E> {
    let mut kept = memo.take(id).into_iter();
    let mut read: Vec<Parsed> = Vec::with_capacity(texts.len());
    for (index, text) in texts.enumerate() {
        let parsed = match kept.next() {
            Some((json, item)) if *json == *text => (json, item),
            _ => (Arc::from(text), parse(index, text)?),
        };
        read.push(parsed);
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
    memo.keep(id, read);
    Ok((items, json))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(role: &str, text: &str) -> String {
        serde_json::json!({"type": "message", "role": role, "content": text}).to_string()
    }

    /// Reads `texts` as conversation `id`, counting the parses; the JSON list read with the
    /// items is their texts, and reads back as them.
    fn read_counting(
        memo: &ConversationMemo,
        id: &str,
        texts: &[String],
    ) -> (Vec<InputItem>, usize) {
        let mut parses = 0;
        let (items, json) = read(memo, id, texts.iter().map(String::as_str), |_, text| {
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
        let failed = read(
            &memo,
            "conv_1",
            texts.iter().map(String::as_str),
            |index, _| Err::<Option<InputItem>, usize>(index),
        );
        assert_eq!(
            failed.map(|(items, _)| items),
            Ok(parsed_all(&texts)),
            "nothing to parse: all kept"
        );
        let changed = [message("user", &long), message("assistant", "short")];
        let failed = read(
            &memo,
            "conv_1",
            changed.iter().map(String::as_str),
            |index, _| Err::<Option<InputItem>, usize>(index),
        );
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
}
