//! [`Budget`]: the requests one back end may send. A token bucket for the rate (refilled
//! continuously, at most 10 tokens), a count per UTC day, and a cool-down after the service
//! said "too many requests". A request waits for a token when the wait is short, and is
//! refused otherwise, so a slow service never stalls a run.
//!
//! Hand-written rather than `governor`: that crate reads its own clock (tests could not
//! pause it), and the daily cap and the cool-down would still be ours.

use std::sync::Mutex;
use std::time::Duration;

use chrono::NaiveDate;
use tokio::time::Instant;

use crate::backend::BackendError;

/// The longest a request waits for a token before it is refused.
pub const MAX_WAIT: Duration = Duration::from_secs(5);

/// The most requests sent at once after a quiet spell.
const MAX_BURST: f64 = 10.0;

/// How long a back end rests after a 429 that named no time.
pub const DEFAULT_COOL_DOWN: Duration = Duration::from_secs(60);

/// Limits of one back end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetSettings {
    /// Requests per minute (≥ 1).
    pub per_minute: u32,
    /// Requests per UTC day; `None` for no daily cap.
    pub per_day: Option<u32>,
}

impl BudgetSettings {
    /// Financial Modeling Prep's free plan: 250 a day, a few a second.
    pub const FMP: BudgetSettings = BudgetSettings {
        per_minute: 300,
        per_day: Some(250),
    };
    /// SEC EDGAR's fair-access rule: at most 10 a second, no daily cap.
    pub const SEC_EDGAR: BudgetSettings = BudgetSettings {
        per_minute: 600,
        per_day: None,
    };
    /// Alpha Vantage's free plan: 25 a day, 5 a minute.
    pub const ALPHA_VANTAGE: BudgetSettings = BudgetSettings {
        per_minute: 5,
        per_day: Some(25),
    };
    /// An MCP server: whatever it allows; a generous default.
    pub const MCP: BudgetSettings = BudgetSettings {
        per_minute: 120,
        per_day: None,
    };
}

/// The request budget of one back end, shared by all its requests.
#[derive(Debug)]
pub struct Budget {
    settings: BudgetSettings,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    tokens: f64,
    refilled: Instant,
    day: NaiveDate,
    used_today: u32,
    cool_until: Option<Instant>,
}

impl Budget {
    pub fn new(settings: BudgetSettings) -> Budget {
        let settings = BudgetSettings {
            per_minute: settings.per_minute.max(1),
            ..settings
        };
        Budget {
            state: Mutex::new(State {
                tokens: burst(settings),
                refilled: Instant::now(),
                day: today(),
                used_today: 0,
                cool_until: None,
            }),
            settings,
        }
    }

    pub fn settings(&self) -> BudgetSettings {
        self.settings
    }

    /// Takes one request from the budget, waiting up to [`MAX_WAIT`] for a token.
    pub async fn acquire(&self) -> Result<(), BackendError> {
        loop {
            let wait = self.try_take()?;
            match wait {
                None => return Ok(()),
                Some(wait) => tokio::time::sleep(wait).await,
            }
        }
    }

    /// `Ok(None)`: taken; `Ok(Some(wait))`: try again after `wait`.
    fn try_take(&self) -> Result<Option<Duration>, BackendError> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if let Some(until) = state.cool_until {
            if until > now {
                return Err(BackendError::RateLimited {
                    retry_after: Some(until - now),
                    message: "the service asked for a pause".to_owned(),
                });
            }
            state.cool_until = None;
        }
        let day = today();
        if day != state.day {
            state.day = day;
            state.used_today = 0;
        }
        if let Some(cap) = self.settings.per_day
            && state.used_today >= cap
        {
            return Err(BackendError::BudgetExhausted(cap));
        }
        let rate = f64::from(self.settings.per_minute) / 60.0;
        let elapsed = now.duration_since(state.refilled).as_secs_f64();
        state.tokens = (state.tokens + elapsed * rate).min(burst(self.settings));
        state.refilled = now;
        if state.tokens >= 1.0 {
            state.tokens -= 1.0;
            state.used_today += 1;
            return Ok(None);
        }
        let wait = Duration::from_secs_f64((1.0 - state.tokens) / rate);
        if wait > MAX_WAIT {
            return Err(BackendError::RateLimited {
                retry_after: Some(wait),
                message: format!(
                    "the budget of {} requests per minute is used up",
                    self.settings.per_minute
                ),
            });
        }
        Ok(Some(wait))
    }

    /// No request before `duration` from now (the service answered 429).
    pub fn cool_down(&self, duration: Duration) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let until = Instant::now() + duration;
        state.cool_until = Some(state.cool_until.map_or(until, |u| u.max(until)));
    }

    /// Requests taken today.
    pub fn used_today(&self) -> u32 {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .used_today
    }
}

fn burst(settings: BudgetSettings) -> f64 {
    f64::from(settings.per_minute).min(MAX_BURST)
}

fn today() -> NaiveDate {
    chrono::Utc::now().date_naive()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_rate_waits_for_tokens_and_the_day_has_a_cap() {
        let budget = Budget::new(BudgetSettings {
            per_minute: 600,
            per_day: Some(12),
        });
        let start = Instant::now();
        for _ in 0..10 {
            budget.acquire().await.unwrap();
        }
        // The burst is 10: those went at once (the clock is paused and did not move).
        assert_eq!(Instant::now(), start);
        budget.acquire().await.unwrap();
        // The eleventh waited for a token: 10 a second is one per 100 ms.
        assert!(Instant::now() - start >= Duration::from_millis(100));
        budget.acquire().await.unwrap();
        assert_eq!(budget.used_today(), 12);
        assert_eq!(
            budget.acquire().await,
            Err(BackendError::BudgetExhausted(12))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_wait_is_refused_and_a_cool_down_is_kept() {
        let budget = Budget::new(BudgetSettings {
            per_minute: 1,
            per_day: None,
        });
        budget.acquire().await.unwrap();
        // The next token is a minute away: refused at once, not waited for.
        assert!(matches!(
            budget.acquire().await,
            Err(BackendError::RateLimited { .. })
        ));
        tokio::time::advance(Duration::from_secs(61)).await;
        budget.cool_down(Duration::from_secs(30));
        assert!(matches!(
            budget.acquire().await,
            Err(BackendError::RateLimited { retry_after: Some(d), .. }) if d <= Duration::from_secs(30)
        ));
        tokio::time::advance(Duration::from_secs(31)).await;
        budget.acquire().await.unwrap();
    }
}
