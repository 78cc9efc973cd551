//! [`Cache`]: answers kept in memory, bounded by count (least recently used goes first),
//! each with its own lifetime: quotes for seconds, statements for a day, what cannot change
//! (a filing list of a closed date range, a past call's transcript) until it is evicted.

use std::sync::Mutex;
use std::time::Duration;

use hashlink::LruCache;
use tokio::time::Instant;

use crate::backend::{Block, DataRequest};
use crate::category::Category;

/// How long answers of each kind stay fresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lifetimes {
    /// Quotes, market movers, intraday bars.
    pub live: Duration,
    /// Daily and longer bars.
    pub prices: Duration,
    /// Statements, profiles, estimates, open-ended filing lists.
    pub daily: Duration,
}

impl Default for Lifetimes {
    fn default() -> Lifetimes {
        Lifetimes {
            live: Duration::from_secs(30),
            prices: Duration::from_secs(15 * 60),
            daily: Duration::from_secs(24 * 3600),
        }
    }
}

impl Lifetimes {
    /// The lifetime of an answer to `request` (`None`: until evicted), `today` being the
    /// UTC date.
    pub fn of(&self, request: &DataRequest, today: chrono::NaiveDate) -> Option<Duration> {
        let closed_range = request.to.is_some_and(|to| to < today);
        match request.category {
            Category::Quote | Category::MarketMovers => Some(self.live),
            Category::PriceHistory if request.interval.is_intraday() => Some(self.live),
            Category::PriceHistory if closed_range => Some(self.daily),
            Category::PriceHistory => Some(self.prices),
            // Filings are never withdrawn: the list of a date range that has ended is final.
            Category::Filings | Category::InsiderTrading if closed_range => None,
            // A named past call's transcript does not change.
            Category::Transcript
                if request.fiscal_year.is_some() && request.fiscal_quarter.is_some() =>
            {
                None
            }
            _ => Some(self.daily),
        }
    }
}

struct Entry {
    block: Block,
    expires: Option<Instant>,
}

/// The answer cache, shared by every request of the process.
pub struct Cache {
    entries: Mutex<LruCache<String, Entry>>,
}

impl Cache {
    /// A cache of at most `capacity` answers (0 keeps nothing).
    pub fn new(capacity: usize) -> Cache {
        Cache {
            entries: Mutex::new(LruCache::new(capacity)),
        }
    }

    pub fn get(&self, key: &str) -> Option<Block> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let fresh = match entries.get(key) {
            None => return None,
            Some(entry) => entry.expires.is_none_or(|at| at > Instant::now()),
        };
        if fresh {
            entries.get(key).map(|entry| entry.block.clone())
        } else {
            entries.remove(key);
            None
        }
    }

    pub fn insert(&self, key: String, block: Block, lifetime: Option<Duration>) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.capacity() == 0 {
            return;
        }
        let expires = lifetime.map(|d| Instant::now() + d);
        entries.insert(key, Entry { block, expires });
    }

    /// Answers held.
    pub fn entries(&self) -> usize {
        self.entries.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Symbol;
    use chrono::NaiveDate;

    fn block(title: &str) -> Block {
        Block {
            title: title.to_owned(),
            ..Block::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn entries_expire_and_the_least_recent_goes_first() {
        let cache = Cache::new(2);
        cache.insert("a".into(), block("a"), Some(Duration::from_secs(30)));
        cache.insert("b".into(), block("b"), None);
        assert_eq!(cache.get("a").unwrap().title, "a");
        tokio::time::advance(Duration::from_secs(31)).await;
        assert!(cache.get("a").is_none(), "expired");
        assert_eq!(cache.get("b").unwrap().title, "b", "kept until evicted");
        cache.insert("c".into(), block("c"), None);
        cache.insert("d".into(), block("d"), None);
        assert_eq!(cache.entries(), 2);
        assert!(cache.get("b").is_none(), "evicted as the least recent");
    }

    #[test]
    fn lifetimes_follow_the_category() {
        let lifetimes = Lifetimes::default();
        let today = NaiveDate::from_ymd_opt(2025, 6, 2).unwrap();
        let apple = Some(Symbol::ticker("AAPL"));
        let mut request = DataRequest::new(Category::Quote, apple.clone());
        assert_eq!(lifetimes.of(&request, today), Some(lifetimes.live));
        request.category = Category::IncomeStatement;
        assert_eq!(lifetimes.of(&request, today), Some(lifetimes.daily));
        request.category = Category::Filings;
        assert_eq!(lifetimes.of(&request, today), Some(lifetimes.daily));
        request.to = NaiveDate::from_ymd_opt(2024, 12, 31);
        assert_eq!(lifetimes.of(&request, today), None);
    }
}
