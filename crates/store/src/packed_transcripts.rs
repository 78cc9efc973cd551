//! The transcript packed last for each conversation, with its text, so that the next response
//! of the conversation packs only the items it adds (`transcript_pack.rs`, [`pack_after`]).
//!
//! A memo of the packing and nothing more: what it holds is used only when the new transcript
//! goes on from the text kept, byte for byte, so a transcript that does not (a branch of the
//! conversation, a write of another replica, an entry gone) is packed whole, as without it.
//! Bounded: [`BUDGET_BYTES`] of entries, each counted as its text and its packed bytes; the
//! oldest go first.
//!
//! [`pack_after`]: crate::transcript_pack::pack_after

use std::sync::Arc;

use crate::budget_map::BudgetMap;
use crate::transcript_pack;

/// The most the memo holds.
pub(crate) const BUDGET_BYTES: usize = 8 << 20;

/// See the module documentation. Shared by the clones of a store.
#[derive(Debug)]
pub(crate) struct PackedTranscripts {
    /// By conversation, oldest first.
    entries: BudgetMap<Entry>,
}

impl Default for PackedTranscripts {
    fn default() -> Self {
        PackedTranscripts {
            entries: BudgetMap::new(BUDGET_BYTES),
        }
    }
}

struct Entry {
    json: Arc<str>,
    packed: Arc<[u8]>,
}

impl PackedTranscripts {
    /// `json`, the transcript of a response of `conversation`, packed: after the transcript
    /// packed last for `conversation` when `json` goes on from it, whole otherwise; `None` when
    /// it is better stored as it is. What is packed is kept as `conversation`'s last.
    pub(crate) fn pack(&self, conversation: &str, json: &Arc<str>) -> Option<Arc<[u8]>> {
        if json.len() < transcript_pack::MIN_PACKED {
            return None;
        }
        let before = self.entries.remove(conversation);
        let packed = before
            .and_then(|b| transcript_pack::pack_after(json, &b.json, &b.packed))
            .or_else(|| transcript_pack::pack(json))?;
        let cost = json.len().saturating_add(packed.len());
        if cost <= BUDGET_BYTES / 8 {
            let entry = Entry {
                json: Arc::clone(json),
                packed: Arc::clone(&packed),
            };
            self.entries.insert(Arc::from(conversation), entry, cost);
        }
        Some(packed)
    }

    /// How many entries and bytes are kept.
    #[cfg(test)]
    fn size(&self) -> (usize, usize) {
        self.entries.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transcript of `turns` turns of a conversation, each different from the others.
    fn transcript(tag: &str, turns: usize) -> Arc<str> {
        let items: Vec<String> = (0..turns)
            .map(|n| {
                format!(
                    r#"{{"type":"message","role":"user","content":"{tag} {n}: {}"}}"#,
                    (0..40)
                        .map(|w| format!("w{} ", (n * 40 + w) * 7919 % 997))
                        .collect::<String>()
                )
            })
            .collect();
        Arc::from(format!("[{}]", items.join(",")))
    }

    fn pieces(packed: &[u8]) -> usize {
        // The pieces' count, from the packed transcript itself: its text reads back whole.
        let mut at = 5;
        let mut count = 0;
        while at < packed.len() {
            let block = u32::from_le_bytes(packed[at + 4..at + 8].try_into().unwrap());
            at += 8 + block as usize;
            count += 1;
        }
        count
    }

    #[test]
    fn a_conversations_next_transcript_is_packed_after_its_last() {
        let packs = PackedTranscripts::default();
        let first = transcript("a", 80);
        let packed = packs.pack("conv_1", &first).unwrap();
        assert_eq!(pieces(&packed), 2);
        let second = transcript("a", 81);
        let next = packs.pack("conv_1", &second).unwrap();
        assert_eq!(pieces(&next), 3, "packed after the first");
        assert_eq!(transcript_pack::unpack(&next).unwrap(), *second);
        assert_eq!(packs.size(), (1, second.len() + next.len()));

        // Another conversation's is packed whole, and kept beside it.
        let other = packs.pack("conv_2", &transcript("b", 90)).unwrap();
        assert_eq!(pieces(&other), 2);
        assert_eq!(packs.size().0, 2);

        // A transcript that does not go on from the last (a branch): packed whole.
        let branch = transcript("c", 82);
        let packed = packs.pack("conv_1", &branch).unwrap();
        assert_eq!(pieces(&packed), 2);
        assert_eq!(transcript_pack::unpack(&packed).unwrap(), *branch);

        // A short one is not packed, and leaves the entry as it was.
        assert_eq!(packs.pack("conv_1", &transcript("c", 2)), None);
        let longer = transcript("c", 83);
        assert_eq!(pieces(&packs.pack("conv_1", &longer).unwrap()), 3);
    }

    #[test]
    fn the_oldest_conversations_go_when_the_budget_is_full() {
        let packs = PackedTranscripts::default();
        let each = transcript("e", 2000);
        let mut count = 0;
        while packs.size().1 + 2 * each.len() <= BUDGET_BYTES {
            packs.pack(&format!("conv_{count}"), &each).unwrap();
            count += 1;
        }
        for n in count..count + 5 {
            packs.pack(&format!("conv_{n}"), &each).unwrap();
        }
        let (kept, bytes) = packs.size();
        assert!(bytes <= BUDGET_BYTES, "{bytes}");
        assert!(kept < count + 5, "{kept}");
        // The first is gone: its next transcript is packed whole.
        let next = transcript("e", 2001);
        assert_eq!(pieces(&packs.pack("conv_0", &next).unwrap()), 2);
    }
}
