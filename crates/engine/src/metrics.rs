//! Run metrics: the engine keeps the handles ([`prometheus_client`] metrics) and updates them as
//! runs start and end; the server registers them in its registry and encodes them at
//! `GET /metrics`. Every engine has its own handles, so many apps in one process (the in-process
//! tests) never share a metric.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use protocol::response::ResponseStatus;

/// Upper bounds (seconds) of the run-duration histogram buckets.
pub const DURATION_BUCKETS_SECS: [f64; 10] =
    [0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0];

/// The final statuses runs are counted by (a run that ends otherwise, `requires_action`, is
/// timed but not counted).
const STATUSES: [ResponseStatus; 4] = [
    ResponseStatus::Completed,
    ResponseStatus::Failed,
    ResponseStatus::Cancelled,
    ResponseStatus::Incomplete,
];

/// The label of the finished-runs counters: `status="completed"`…
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct StatusLabel {
    pub status: &'static str,
}

/// The handles on one engine's run metrics, as of a scrape ([`crate::Engine::metrics`]). Clones
/// share the values: registering them in a registry exposes the engine's live metrics.
#[derive(Debug, Clone)]
pub struct MetricsSnapshot {
    /// Runs executing now.
    pub active_runs: Gauge,
    /// Background jobs waiting for a worker, in every project: read from the store and set when
    /// the snapshot is taken.
    pub queued_jobs: Gauge,
    /// Runs ended, by final status (every status of [`STATUSES`] present from the start, at 0).
    pub finished_runs: Family<StatusLabel, Counter>,
    /// Wall time of ended runs, in seconds, in the buckets of [`DURATION_BUCKETS_SECS`].
    pub run_duration: Histogram,
}

impl Default for MetricsSnapshot {
    fn default() -> Self {
        let finished_runs = Family::<StatusLabel, Counter>::default();
        for status in STATUSES {
            // Created now, so that every status is listed (at 0) before its first run ends.
            let _counter = finished_runs.get_or_create_owned(&StatusLabel {
                status: status.as_str(),
            });
        }
        MetricsSnapshot {
            active_runs: Gauge::default(),
            queued_jobs: Gauge::default(),
            finished_runs,
            run_duration: Histogram::new(DURATION_BUCKETS_SECS),
        }
    }
}

/// How many runs the engine is executing now (its `agentd_runs_active` gauge): what a store's
/// writer may go by to gather the writes of many runs into one transaction
/// ([`EventStore::follow_active_runs`](crate::store::EventStore::follow_active_runs)). Clones
/// share the count.
#[derive(Debug, Clone, Default)]
pub struct ActiveRuns(Gauge);

impl ActiveRuns {
    /// Runs executing now.
    pub fn get(&self) -> u64 {
        u64::try_from(self.0.get()).unwrap_or(0)
    }

    /// Sets the count (a store's tests, standing in for an engine).
    pub fn set(&self, runs: u64) {
        self.0.set(i64::try_from(runs).unwrap_or(i64::MAX));
    }
}

/// The engine's run metrics, updated as runs start and end.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    handles: MetricsSnapshot,
}

impl Metrics {
    pub(crate) fn run_started(&self) {
        self.handles.active_runs.inc();
    }

    /// The count of runs executing now, shared.
    pub(crate) fn active_runs(&self) -> ActiveRuns {
        ActiveRuns(self.handles.active_runs.clone())
    }

    pub(crate) fn run_finished(&self, status: ResponseStatus, took: Duration) {
        self.handles.active_runs.dec();
        if STATUSES.contains(&status) {
            self.handles
                .finished_runs
                .get_or_create(&StatusLabel {
                    status: status.as_str(),
                })
                .inc();
        }
        self.handles.run_duration.observe(took.as_secs_f64());
    }

    /// The handles, with the queued-jobs gauge set to `queued_jobs`.
    pub(crate) fn snapshot(&self, queued_jobs: u64) -> MetricsSnapshot {
        self.handles
            .queued_jobs
            .set(i64::try_from(queued_jobs).unwrap_or(i64::MAX));
        self.handles.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count of runs that ended with `status`; `None` if there is no such series.
    fn finished(snapshot: &MetricsSnapshot, status: &'static str) -> Option<u64> {
        snapshot
            .finished_runs
            .get(&StatusLabel { status })
            .map(|counter| counter.get())
    }

    #[test]
    fn runs_are_counted_by_final_status() {
        let metrics = Metrics::default();
        let snapshot = metrics.snapshot(0);
        for status in ["completed", "failed", "cancelled", "incomplete"] {
            assert_eq!(finished(&snapshot, status), Some(0), "{status}");
        }
        metrics.run_started();
        metrics.run_started();
        metrics.run_started();
        assert_eq!(metrics.snapshot(0).active_runs.get(), 3);
        metrics.run_finished(ResponseStatus::Completed, Duration::from_millis(300));
        metrics.run_finished(ResponseStatus::Cancelled, Duration::from_secs(2));
        let snapshot = metrics.snapshot(4);
        assert_eq!(snapshot.active_runs.get(), 1);
        assert_eq!(snapshot.queued_jobs.get(), 4);
        assert_eq!(finished(&snapshot, "completed"), Some(1));
        assert_eq!(finished(&snapshot, "cancelled"), Some(1));
        assert_eq!(finished(&snapshot, "failed"), Some(0));
        // Not a status the counter has: the run is no longer active all the same.
        metrics.run_finished(ResponseStatus::RequiresAction, Duration::from_secs(1));
        let snapshot = metrics.snapshot(0);
        assert_eq!(snapshot.active_runs.get(), 0);
        assert_eq!(snapshot.queued_jobs.get(), 0);
        assert_eq!(finished(&snapshot, "requires_action"), None);
    }
}
