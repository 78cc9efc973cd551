//! Run metrics, kept in atomics by the engine and rendered by the server (Prometheus text).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use protocol::response::ResponseStatus;

/// Upper bounds (seconds) of the run-duration histogram buckets.
pub const DURATION_BUCKETS_SECS: [f64; 10] =
    [0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0];

const STATUSES: [ResponseStatus; 4] = [
    ResponseStatus::Completed,
    ResponseStatus::Failed,
    ResponseStatus::Cancelled,
    ResponseStatus::Incomplete,
];

#[derive(Debug, Default)]
pub(crate) struct Metrics {
    active: AtomicU64,
    /// Finished runs by terminal status, in `STATUSES` order.
    finished: [AtomicU64; 4],
    /// Non-cumulative bucket counts; the last slot counts runs above every bound.
    buckets: [AtomicU64; 11],
    duration_micros: AtomicU64,
}

/// A point-in-time copy of the metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsSnapshot {
    pub active_runs: u64,
    /// Background jobs waiting for a worker, in every project.
    pub queued_jobs: u64,
    pub finished_runs: Vec<(&'static str, u64)>,
    /// Cumulative counts per upper bound (seconds), as Prometheus histograms want them.
    pub duration_buckets: Vec<(f64, u64)>,
    pub duration_count: u64,
    pub duration_sum_secs: f64,
}

impl Metrics {
    pub(crate) fn run_started(&self) {
        self.active.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn run_finished(&self, status: ResponseStatus, took: Duration) {
        self.active.fetch_sub(1, Ordering::Relaxed);
        if let Some(slot) = STATUSES.iter().position(|s| *s == status) {
            self.finished[slot].fetch_add(1, Ordering::Relaxed);
        }
        let secs = took.as_secs_f64();
        let bucket = DURATION_BUCKETS_SECS
            .iter()
            .position(|bound| secs <= *bound)
            .unwrap_or(DURATION_BUCKETS_SECS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.duration_micros.fetch_add(
            u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    pub(crate) fn snapshot(&self, queued_jobs: u64) -> MetricsSnapshot {
        let mut cumulative = 0;
        let duration_buckets = DURATION_BUCKETS_SECS
            .iter()
            .zip(&self.buckets)
            .map(|(bound, count)| {
                cumulative += count.load(Ordering::Relaxed);
                (*bound, cumulative)
            })
            .collect();
        let duration_count = self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum();
        MetricsSnapshot {
            active_runs: self.active.load(Ordering::Relaxed),
            queued_jobs,
            finished_runs: STATUSES
                .iter()
                .zip(&self.finished)
                .map(|(status, count)| (status.as_str(), count.load(Ordering::Relaxed)))
                .collect(),
            duration_buckets,
            duration_count,
            duration_sum_secs: self.duration_micros.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }
}
