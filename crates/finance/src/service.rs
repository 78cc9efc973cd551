//! [`Finance`]: the configured back ends in order, the answer cache and symbol resolution,
//! shared by every request of the process.
//!
//! Per (symbol, category) the first back end that has the category answers; one that fails
//! (no data for the symbol, rate limited, down) hands over to the next that has it. A
//! category no back end has, or none could answer, is [`Answer::Unavailable`] with the
//! reasons: never a guess.

use std::sync::{Arc, Mutex};

use hashlink::LruCache;

use crate::backend::{Backend, BackendError, Block, DataRequest, Symbol};
use crate::cache::{Cache, Lifetimes};
use crate::names;

/// Resolved names kept.
const RESOLVED_NAMES: usize = 1024;

/// What one (symbol, category) got.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Data {
        /// The back end that answered (`fmp`, `local`, …).
        source: String,
        block: Block,
    },
    Unavailable {
        /// Why, for the model: which sources were asked and what each said.
        reason: String,
    },
}

/// The finance back ends of this server.
pub struct Finance {
    backends: Vec<Arc<dyn Backend>>,
    cache: Cache,
    lifetimes: Lifetimes,
    resolved: Mutex<LruCache<String, Symbol>>,
}

impl Finance {
    /// Back ends in the order they are asked; at most `cache_entries` answers kept.
    pub fn new(
        backends: Vec<Arc<dyn Backend>>,
        cache_entries: usize,
        lifetimes: Lifetimes,
    ) -> Finance {
        Finance {
            backends,
            cache: Cache::new(cache_entries),
            lifetimes,
            resolved: Mutex::new(LruCache::new(RESOLVED_NAMES)),
        }
    }

    /// The sources, in order (for logs and messages).
    pub fn sources(&self) -> Vec<String> {
        self.backends
            .iter()
            .map(|b| b.source().to_owned())
            .collect()
    }

    /// The answers in the cache.
    pub fn cached(&self) -> usize {
        self.cache.entries()
    }

    /// The data for one (symbol, category), from the cache or the first back end that has it.
    pub async fn answer(&self, request: &DataRequest) -> Answer {
        let serving: Vec<&Arc<dyn Backend>> = self
            .backends
            .iter()
            .filter(|b| b.supports(request.category))
            .collect();
        if serving.is_empty() {
            return Answer::Unavailable {
                reason: format!(
                    "{} is not available from the configured sources ({})",
                    request.category.label(),
                    self.sources().join(", ")
                ),
            };
        }
        let mut failures: Vec<(String, BackendError)> = Vec::new();
        for backend in serving {
            let source = backend.source().to_owned();
            let key = if backend.per_project() {
                request.cache_key(&format!("{source}@{}", request.project))
            } else {
                request.cache_key(&source)
            };
            if let Some(block) = self.cache.get(&key) {
                return Answer::Data { source, block };
            }
            match backend.fetch(request).await {
                Ok(block) => {
                    let lifetime = self.lifetimes.of(request, chrono::Utc::now().date_naive());
                    self.cache.insert(key, block.clone(), lifetime);
                    return Answer::Data { source, block };
                }
                Err(err) => {
                    if !matches!(err, BackendError::NotFound(_)) {
                        tracing::warn!(source = %source, category = request.category.name(), error = %err, "finance back end failed");
                    }
                    failures.push((source, err));
                }
            }
        }
        let reasons: Vec<String> = failures
            .iter()
            .map(|(source, err)| format!("{source}: {err}"))
            .collect();
        Answer::Unavailable {
            reason: format!(
                "{} is not available from the configured sources ({})",
                request.category.label(),
                reasons.join("; ")
            ),
        }
    }

    /// A ticker for what the model wrote: a ticker (checked against the cheap listings when
    /// there are any) or a company name (searched, cheapest source first).
    pub async fn resolve(&self, text: &str) -> Result<Symbol, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an empty symbol".to_owned());
        }
        let key = text.to_lowercase();
        if let Some(found) = self
            .resolved
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned()
        {
            return Ok(found);
        }
        let found = self.resolve_uncached(text).await?;
        self.resolved
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, found.clone());
        Ok(found)
    }

    async fn resolve_uncached(&self, text: &str) -> Result<Symbol, String> {
        let mut by_cost: Vec<&Arc<dyn Backend>> = self.backends.iter().collect();
        by_cost.sort_by_key(|b| match b.source() {
            crate::store::SOURCE => 0,
            crate::edgar::SOURCE => 1,
            _ => 2,
        });
        let shaped = names::ticker_shaped(text);
        if shaped {
            for backend in &by_cost {
                if let Some(listing) = backend.lookup_ticker(text).await {
                    return Ok(Symbol {
                        ticker: listing.ticker,
                        name: Some(listing.name),
                        cik: listing.cik,
                    });
                }
            }
            // Written like a ticker (no lower case): take it as one.
            if !text.chars().any(|c| c.is_ascii_lowercase()) {
                return Ok(Symbol::ticker(text));
            }
        }
        for backend in &by_cost {
            match backend.search_name(text).await {
                Ok(found) => {
                    if let Some(best) = found.into_iter().next() {
                        return Ok(Symbol {
                            ticker: best.ticker.to_ascii_uppercase(),
                            name: Some(best.name),
                            cik: best.cik,
                        });
                    }
                }
                Err(err) => {
                    tracing::debug!(source = backend.source(), error = %err, "name search failed");
                }
            }
        }
        if shaped {
            return Ok(Symbol::ticker(text));
        }
        Err(format!(
            "\"{text}\" matched no ticker or company name in the configured sources"
        ))
    }
}
