//! A map shared between threads whose entries each count some bytes against a budget: an entry
//! goes in at the back, and while the budget is exceeded the entries at the front go (the
//! oldest in, or, for a caller that takes an entry out and puts it back on each use, the least
//! recently used). What the memos of history keep: the store's parsed transcripts and
//! conversations and its packed transcripts (`transcript_memo.rs`, `conversation_memo.rs`,
//! `packed_transcripts.rs`), and the providers' JSON of the messages sent last
//! (`message_memo.rs`).

use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, PoisonError};

use hashlink::LinkedHashMap;

/// See the module documentation.
pub struct BudgetMap<K, V> {
    budget: usize,
    entries: Mutex<Entries<K, V>>,
}

struct Entries<K, V> {
    /// By key, front first out; each value with its cost.
    map: LinkedHashMap<K, (V, usize)>,
    /// The sum of the entries' costs.
    bytes: usize,
}

impl<K: Hash + Eq, V> BudgetMap<K, V> {
    /// An empty map holding at most `budget` bytes of entries.
    pub fn new(budget: usize) -> Self {
        BudgetMap {
            budget,
            entries: Mutex::new(Entries {
                map: LinkedHashMap::new(),
                bytes: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Entries<K, V>> {
        // Nothing panics while holding the lock; a poisoned one still holds whole entries.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts `value`, counting `cost` bytes, at the back under `key` (replacing what was
    /// there); then, while the budget is exceeded, the entries at the front go. What was
    /// replaced or went is dropped once the lock is released (dropping is the costly part).
    pub fn insert(&self, key: K, value: V, cost: usize) {
        let mut gone = Vec::new();
        {
            let mut entries = self.lock();
            if let Some((old, old_cost)) = entries.map.insert(key, (value, cost)) {
                entries.bytes -= old_cost;
                gone.push(old);
            }
            entries.bytes += cost;
            while entries.bytes > self.budget {
                let Some((_, (old, old_cost))) = entries.map.pop_front() else {
                    break;
                };
                entries.bytes -= old_cost;
                gone.push(old);
            }
        }
        drop(gone);
    }

    /// Takes out the entry of `key`.
    pub fn remove<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        let mut entries = self.lock();
        if entries.map.is_empty() {
            return None;
        }
        let (value, cost) = entries.map.remove(key)?;
        entries.bytes -= cost;
        Some(value)
    }

    /// Changes the entry of `key` in place (its cost and place stay as they are).
    pub fn update<Q: Hash + Eq + ?Sized>(&self, key: &Q, change: impl FnOnce(&mut V))
    where
        K: Borrow<Q>,
    {
        if let Some((value, _)) = self.lock().map.get_mut(key) {
            change(value);
        }
    }

    /// What `read` makes of the entry of `key`, if any.
    pub fn read<Q: Hash + Eq + ?Sized, R>(&self, key: &Q, read: impl FnOnce(Option<&V>) -> R) -> R
    where
        K: Borrow<Q>,
    {
        read(self.lock().map.get(key).map(|(value, _)| value))
    }

    /// Changes every entry in place.
    pub fn update_all(&self, mut change: impl FnMut(&mut V)) {
        for (_, (value, _)) in self.lock().map.iter_mut() {
            change(value);
        }
    }

    /// How many entries and bytes are kept.
    pub fn size(&self) -> (usize, usize) {
        let entries = self.lock();
        (entries.map.len(), entries.bytes)
    }
}

impl<K: Hash + Eq, V> std::fmt::Debug for BudgetMap<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (entries, bytes) = self.size();
        f.debug_struct("BudgetMap")
            .field("budget", &self.budget)
            .field("entries", &entries)
            .field("bytes", &bytes)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_front_goes_while_the_budget_is_exceeded() {
        let map = BudgetMap::new(10);
        map.insert(Arc::from("a"), 'a', 4);
        map.insert(Arc::from("b"), 'b', 4);
        assert_eq!(map.size(), (2, 8));
        // Replacing counts the new cost only.
        map.insert(Arc::from("a"), 'A', 2);
        assert_eq!(map.size(), (2, 6));
        // "b" is now the front: it goes.
        map.insert(Arc::from("c"), 'c', 5);
        assert_eq!(map.size(), (2, 7));
        assert_eq!(map.remove("b"), None);
        assert_eq!(map.remove("a"), Some('A'));
        assert_eq!(map.remove("a"), None);
        assert_eq!(map.size(), (1, 5));
        // An entry over the whole budget does not stay.
        map.insert(Arc::from("d"), 'd', 11);
        assert_eq!(map.size(), (0, 0));
    }
}
