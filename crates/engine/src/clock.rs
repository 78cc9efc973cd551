//! The clock port: where the engine, the job workers and retention read the time.
//!
//! Waiting (flush intervals, lease renewals, polls) goes through `tokio::time`, which tests can
//! pause and advance; reading the time goes through [`Clock`], so leases and timestamps follow
//! the same paused time in tests ([`TokioClock`]) and the wall clock in production
//! ([`SystemClock`]).

use std::time::{SystemTime, UNIX_EPOCH};

/// Reads the current time.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;

    /// Seconds since the Unix epoch.
    fn now_secs(&self) -> i64 {
        self.now_ms().div_euclid(1000)
    }
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
}

/// A clock that starts at the wall time it was made and then follows `tokio::time`: under
/// `tokio::time::pause` it stands still until the test advances it.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin_ms: i64,
    origin: tokio::time::Instant,
}

impl TokioClock {
    pub fn new() -> TokioClock {
        TokioClock {
            origin_ms: SystemClock.now_ms(),
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        TokioClock::new()
    }
}

impl Clock for TokioClock {
    fn now_ms(&self) -> i64 {
        let elapsed = i64::try_from(self.origin.elapsed().as_millis()).unwrap_or(i64::MAX);
        self.origin_ms.saturating_add(elapsed)
    }
}

/// A duration as milliseconds for epoch arithmetic.
pub(crate) fn millis(duration: std::time::Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_tokio_clock_follows_paused_time() {
        let clock = TokioClock::new();
        let start = clock.now_ms();
        tokio::time::advance(std::time::Duration::from_secs(90)).await;
        assert_eq!(clock.now_ms() - start, 90_000);
        assert_eq!(clock.now_secs(), clock.now_ms() / 1000);
    }
}
