//! The transcript packed last for each conversation, with its text, so that the next response
//! of the conversation packs only the items it adds (`transcript_pack.rs`, [`pack_after_parts`]).
//!
//! A memo of the packing and nothing more: what it holds is used only when the new transcript
//! goes on from the text kept, byte for byte, so a transcript that does not (a branch of the
//! conversation, a write of another replica, an entry gone) is packed whole, as without it.
//! Bounded: [`BUDGET_BYTES`] of entries, each counted as its text and its packed bytes; the
//! oldest go first.
//!
//! Once the response whose transcript an entry holds is stored for good (its run ended, the
//! write committed: [`PackedTranscripts::stored`]), the next transcript of its conversation is
//! stored linked to it (`transcript_link.rs`): only its own pieces. Never before that write
//! (a row that a later write of its run could change, or that a failed write never stored),
//! and never once the response is deleted ([`PackedTranscripts::forget`]). When the memo holds
//! nothing to link a chained transcript to (the process restarted, the memo let the
//! conversation go, or the transcript is longer than an entry may be), the store reads the
//! previous response's transcript back and hands it in as a [`Seed`].
//!
//! [`pack_after_parts`]: crate::transcript_pack::pack_after_parts

use std::sync::Arc;

use engine::budget_map::BudgetMap;

use crate::transcript_link::{self, MAX_DEPTH};
use crate::transcript_pack;

/// The most the memo holds.
pub(crate) const BUDGET_BYTES: usize = 8 << 20;

/// See the module documentation. Shared by the clones of a store.
#[derive(Debug)]
pub(crate) struct PackedTranscripts {
    /// By conversation, oldest first.
    entries: BudgetMap<Arc<str>, Entry>,
}

impl Default for PackedTranscripts {
    fn default() -> Self {
        PackedTranscripts {
            entries: BudgetMap::new(BUDGET_BYTES),
        }
    }
}

struct Entry {
    /// The response it was packed for, and its project.
    id: Arc<str>,
    project: Arc<str>,
    json: Arc<str>,
    /// `json` packed whole (in pieces), whether it is stored linked or not.
    packed: Arc<[u8]>,
    /// How its stored value is linked, if it is.
    link: Option<Link>,
    /// How many links in a row its stored value is the end of (0: stored whole).
    depth: u32,
    /// Whether the response's write committed for good.
    stored: bool,
}

/// How a transcript is stored linked: to `base`, keeping its first `kept` pieces, which are
/// also the first of `packed`, up to `own`.
#[derive(Clone)]
struct Link {
    base: Arc<str>,
    kept: usize,
    own: usize,
}

/// A response's transcript read back from the store ([`PackedTranscripts::needs_seed`]): the
/// next transcript of its conversation is packed after it, and linked to it, as after an entry.
pub(crate) struct Seed {
    pub(crate) id: Arc<str>,
    pub(crate) project: Arc<str>,
    pub(crate) json: Arc<str>,
    /// `json` packed whole (in pieces).
    pub(crate) packed: Arc<[u8]>,
    /// How many links in a row its stored value is the end of.
    pub(crate) depth: u32,
}

/// A transcript as its column stores it: packed whole, or linked to another response's.
#[derive(Debug, PartialEq)]
pub(crate) struct PackedTranscript {
    pub(crate) value: Arc<[u8]>,
    /// The response whose transcript `value` is linked to.
    pub(crate) base: Option<Arc<str>>,
}

impl PackedTranscripts {
    /// `json`, the transcript of response `id` of `project`, in `conversation`, packed: after
    /// the transcript packed last for `conversation` when `json` goes on from it (linked to it
    /// when that one is stored for good, in the same project, fewer than [`MAX_DEPTH`] links
    /// deep), whole otherwise; `None` when it is better stored as it is. What is packed is
    /// kept as `conversation`'s last. Written again for the same response (the end of a run
    /// whose first flush wrote it), it is linked as the earlier write was, while it still
    /// keeps the pieces that write kept. With a `seed` (the transcript of the response it
    /// continues, read back from the store), it is packed after that instead.
    pub(crate) fn pack(
        &self,
        conversation: &str,
        project: &str,
        id: &str,
        json: &Arc<str>,
        seed: Option<Seed>,
    ) -> Option<PackedTranscript> {
        if json.len() < transcript_pack::MIN_PACKED {
            return None;
        }
        let before = self.entries.remove(conversation);
        let before = match seed {
            Some(seed) => Some(Entry {
                id: seed.id,
                project: seed.project,
                json: seed.json,
                packed: seed.packed,
                link: None,
                depth: seed.depth,
                stored: true,
            }),
            None => before,
        };
        let after = before.and_then(|before| {
            let after = transcript_pack::pack_after_parts(json, &before.json, &before.packed)?;
            let link = if *before.id == *id {
                before
                    .link
                    .filter(|link| !before.stored && after.kept >= link.kept)
                    .map(|link| (link, before.depth))
            } else if before.stored && before.depth < MAX_DEPTH && *before.project == *project {
                let link = Link {
                    base: Arc::clone(&before.id),
                    kept: after.kept,
                    own: after.own,
                };
                Some((link, before.depth + 1))
            } else {
                None
            };
            Some((after.packed, link))
        });
        let (packed, link) = match after {
            Some(after) => after,
            None => (transcript_pack::pack(json)?, None),
        };
        let linked = link.as_ref().and_then(|(link, _)| {
            transcript_link::linked(&transcript_pack::After {
                packed: Arc::clone(&packed),
                kept: link.kept,
                own: link.own,
            })
        });
        let (stored, link, depth) = match (linked, link) {
            (Some(value), Some((link, depth))) => (
                PackedTranscript {
                    value: Arc::from(value),
                    base: Some(Arc::clone(&link.base)),
                },
                Some(link),
                depth,
            ),
            _ => (
                PackedTranscript {
                    value: Arc::clone(&packed),
                    base: None,
                },
                None,
                0,
            ),
        };
        let cost = json.len().saturating_add(packed.len());
        if cost <= BUDGET_BYTES / 8 {
            let entry = Entry {
                id: Arc::from(id),
                project: Arc::from(project),
                json: Arc::clone(json),
                packed,
                link,
                depth,
                stored: false,
            };
            self.entries.insert(Arc::from(conversation), entry, cost);
        }
        Some(stored)
    }

    /// Whether response `id`'s transcript, which continues response `previous` in
    /// `conversation`, would be packed after something else than `previous`'s (or than what
    /// its own earlier write was linked to): then `previous`'s, read back from the store, is
    /// worth a [`Seed`].
    pub(crate) fn needs_seed(&self, conversation: &str, id: &str, previous: &str) -> bool {
        self.entries.read(conversation, |entry| {
            !entry.is_some_and(|entry| {
                (*entry.id == *previous && entry.stored)
                    || (*entry.id == *id && entry.link.is_some())
            })
        })
    }

    /// Response `id`'s write of `json`, its transcript as packed last for `conversation`,
    /// committed, and no later write of its run will change it: the next transcript of the
    /// conversation may be linked to it.
    pub(crate) fn stored(&self, conversation: &str, id: &str, json: &Arc<str>) {
        self.entries.update(conversation, |entry| {
            if *entry.id == *id && Arc::ptr_eq(&entry.json, json) {
                entry.stored = true;
            }
        });
    }

    /// The text of response `id`'s transcript, packed last for `conversation`, once it is
    /// stored for good: what its continuation's transcript goes on from.
    pub(crate) fn stored_text(&self, conversation: &str, id: &str) -> Option<Arc<str>> {
        self.entries.read(conversation, |entry| {
            entry
                .filter(|entry| entry.stored && *entry.id == *id)
                .map(|entry| Arc::clone(&entry.json))
        })
    }

    /// Response `id` is being deleted: no transcript is linked to it any more.
    pub(crate) fn forget(&self, id: &str) {
        self.entries.update_all(|entry| {
            if *entry.id == *id {
                entry.stored = false;
            }
            if entry.link.as_ref().is_some_and(|link| *link.base == *id) {
                entry.link = None;
            }
        });
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

    /// `json` packed for a response of `conversation` that is never stored for good.
    fn pack_in(
        packs: &PackedTranscripts,
        conversation: &str,
        json: &Arc<str>,
    ) -> Option<Arc<[u8]>> {
        let packed = packs.pack(conversation, "proj_a", "resp_unstored", json, None)?;
        assert_eq!(packed.base, None);
        Some(packed.value)
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
        let packed = pack_in(&packs, "conv_1", &first).unwrap();
        assert_eq!(pieces(&packed), 2);
        let second = transcript("a", 81);
        let next = pack_in(&packs, "conv_1", &second).unwrap();
        assert_eq!(pieces(&next), 3, "packed after the first");
        assert_eq!(transcript_pack::unpack(&next).unwrap(), *second);
        assert_eq!(packs.size(), (1, second.len() + next.len()));

        // Another conversation's is packed whole, and kept beside it.
        let other = pack_in(&packs, "conv_2", &transcript("b", 90)).unwrap();
        assert_eq!(pieces(&other), 2);
        assert_eq!(packs.size().0, 2);

        // A transcript that does not go on from the last (a branch): packed whole.
        let branch = transcript("c", 82);
        let packed = pack_in(&packs, "conv_1", &branch).unwrap();
        assert_eq!(pieces(&packed), 2);
        assert_eq!(transcript_pack::unpack(&packed).unwrap(), *branch);

        // A short one is not packed, and leaves the entry as it was.
        assert_eq!(pack_in(&packs, "conv_1", &transcript("c", 2)), None);
        let longer = transcript("c", 83);
        assert_eq!(pieces(&pack_in(&packs, "conv_1", &longer).unwrap()), 3);
    }

    #[test]
    fn the_oldest_conversations_go_when_the_budget_is_full() {
        let packs = PackedTranscripts::default();
        let each = transcript("e", 2000);
        let mut count = 0;
        while packs.size().1 + 2 * each.len() <= BUDGET_BYTES {
            pack_in(&packs, &format!("conv_{count}"), &each).unwrap();
            count += 1;
        }
        for n in count..count + 5 {
            pack_in(&packs, &format!("conv_{n}"), &each).unwrap();
        }
        let (kept, bytes) = packs.size();
        assert!(bytes <= BUDGET_BYTES, "{bytes}");
        assert!(kept < count + 5, "{kept}");
        // The first is gone: its next transcript is packed whole.
        let next = transcript("e", 2001);
        assert_eq!(pieces(&pack_in(&packs, "conv_0", &next).unwrap()), 2);
    }

    #[test]
    fn a_transcript_is_linked_to_the_last_one_stored_for_good() {
        let packs = PackedTranscripts::default();
        let turns = std::cell::Cell::new(80);
        let pack = |id: &str, project: &str| {
            turns.set(turns.get() + 1);
            let json = transcript("a", turns.get());
            let packed = packs.pack("conv_1", project, id, &json, None).unwrap();
            (json, packed)
        };
        let (json, first) = pack("resp_1", "proj_a");
        assert_eq!(first.base, None);
        // Not stored yet: the next is packed whole, as pieces after the first.
        let (_, second) = pack("resp_2", "proj_a");
        assert_eq!((second.base, pieces(&second.value)), (None, 3));
        // Stored, but the entry is another's since: nothing changes.
        packs.stored("conv_1", "resp_1", &json);
        let (json, third) = pack("resp_3", "proj_a");
        assert_eq!(third.base, None);
        packs.stored("conv_1", "resp_3", &json);
        let (_, fourth) = pack("resp_4", "proj_a");
        assert_eq!(fourth.base.as_deref(), Some("resp_3"));
        assert_eq!(fourth.value[0], transcript_link::LINKED);
        assert!(fourth.value.len() * 4 < third.value.len());
        // Its run's end after its first flush, a longer transcript: linked to the same.
        let json = transcript("a", turns.get() + 1);
        let end = packs
            .pack("conv_1", "proj_a", "resp_4", &json, None)
            .unwrap();
        assert_eq!(end.base.as_deref(), Some("resp_3"));
        assert!(end.value.len() > fourth.value.len());
        // Stored for good, the same response written again is not linked to itself.
        packs.stored("conv_1", "resp_4", &json);
        turns.set(turns.get() + 1);
        let again_json = transcript("a", turns.get());
        let again = packs
            .pack("conv_1", "proj_a", "resp_4", &again_json, None)
            .unwrap();
        assert_eq!(again.base, None);
        // Nor to a response of another project, nor to a deleted one.
        packs.stored("conv_1", "resp_4", &again_json);
        let (json, other) = pack("resp_5", "proj_b");
        assert_eq!(other.base, None);
        packs.stored("conv_1", "resp_5", &json);
        packs.forget("resp_5");
        let (json, forgotten) = pack("resp_6", "proj_b");
        assert_eq!(forgotten.base, None);
        // At most MAX_DEPTH links in a row, then one stored whole.
        packs.stored("conv_1", "resp_6", &json);
        let mut bases = Vec::new();
        for n in 7..7 + 2 * MAX_DEPTH {
            let id = format!("resp_{n}");
            let (json, packed) = pack(&id, "proj_b");
            bases.push(packed.base);
            packs.stored("conv_1", &id, &json);
        }
        let whole: Vec<usize> = (0..bases.len()).filter(|&n| bases[n].is_none()).collect();
        assert_eq!(whole, [usize::try_from(MAX_DEPTH).unwrap()], "{bases:?}");
    }

    #[test]
    fn a_long_conversation_stays_linked_turn_after_turn() {
        // Transcripts of ~600 KB: what the memo keeps of each, its text and packed value, stays
        // under an entry's cap (an eighth of the budget), turn after turn (with its base's too,
        // it would not), and so does every turn's link.
        let packs = PackedTranscripts::default();
        let mut bases = Vec::new();
        for turns in 2500..2506 {
            let id = format!("resp_{turns}");
            let json = transcript("a", turns);
            let packed = packs.pack("conv_1", "proj_a", &id, &json, None).unwrap();
            bases.push(packed.base);
            packs.stored("conv_1", &id, &json);
        }
        assert!(transcript("a", 2500).len() > 560 << 10);
        assert_eq!(bases[0], None);
        for (n, base) in bases.iter().enumerate().skip(1) {
            assert_eq!(base.as_deref(), Some(format!("resp_{}", 2499 + n).as_str()));
        }
    }

    #[test]
    fn a_seed_is_needed_only_when_the_memo_holds_nothing_to_link_to() {
        let packs = PackedTranscripts::default();
        assert!(packs.needs_seed("conv_1", "resp_2", "resp_1"));
        let json = transcript("a", 80);
        packs
            .pack("conv_1", "proj_a", "resp_1", &json, None)
            .unwrap();
        // Packed, not stored yet (its run's end not written).
        assert!(packs.needs_seed("conv_1", "resp_2", "resp_1"));
        packs.stored("conv_1", "resp_1", &json);
        assert!(!packs.needs_seed("conv_1", "resp_2", "resp_1"));
        // A branch off another response: the memo's is not it.
        assert!(packs.needs_seed("conv_1", "resp_3", "resp_0"));
        // resp_2 written linked to resp_1: its next write links to the same, from the memo.
        let next = transcript("a", 81);
        let packed = packs
            .pack("conv_1", "proj_a", "resp_2", &next, None)
            .unwrap();
        assert_eq!(packed.base.as_deref(), Some("resp_1"));
        assert!(!packs.needs_seed("conv_1", "resp_2", "resp_1"));

        // With a seed, packed after it and linked to it, whatever the memo holds.
        let seeded = transcript("b", 90);
        let seed = Seed {
            id: Arc::from("resp_b"),
            project: Arc::from("proj_a"),
            json: Arc::clone(&seeded),
            packed: transcript_pack::pack(&seeded).unwrap(),
            depth: 3,
        };
        let packed = packs
            .pack(
                "conv_1",
                "proj_a",
                "resp_b2",
                &transcript("b", 91),
                Some(seed),
            )
            .unwrap();
        assert_eq!(packed.base.as_deref(), Some("resp_b"));
        assert_eq!(packed.value[0], transcript_link::LINKED);
    }
}
