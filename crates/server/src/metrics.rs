//! Prometheus text rendering of the engine's metrics.

use std::fmt::Write as _;

use engine::metrics::MetricsSnapshot;

/// The exposition text of one snapshot.
pub fn render(m: &MetricsSnapshot) -> String {
    let mut out = String::with_capacity(1024);
    let _ = writeln!(out, "# HELP agentd_runs_active Runs executing now.");
    let _ = writeln!(out, "# TYPE agentd_runs_active gauge");
    let _ = writeln!(out, "agentd_runs_active {}", m.active_runs);
    let _ = writeln!(
        out,
        "# HELP agentd_background_queue_depth Background runs waiting for a worker."
    );
    let _ = writeln!(out, "# TYPE agentd_background_queue_depth gauge");
    let _ = writeln!(out, "agentd_background_queue_depth {}", m.queued_jobs);
    let _ = writeln!(
        out,
        "# HELP agentd_runs_finished_total Runs ended, by final status."
    );
    let _ = writeln!(out, "# TYPE agentd_runs_finished_total counter");
    for (status, count) in &m.finished_runs {
        let _ = writeln!(
            out,
            "agentd_runs_finished_total{{status=\"{status}\"}} {count}"
        );
    }
    let _ = writeln!(
        out,
        "# HELP agentd_run_duration_seconds Wall time of ended runs."
    );
    let _ = writeln!(out, "# TYPE agentd_run_duration_seconds histogram");
    for (bound, count) in &m.duration_buckets {
        let _ = writeln!(
            out,
            "agentd_run_duration_seconds_bucket{{le=\"{bound}\"}} {count}"
        );
    }
    let _ = writeln!(
        out,
        "agentd_run_duration_seconds_bucket{{le=\"+Inf\"}} {}",
        m.duration_count
    );
    let _ = writeln!(
        out,
        "agentd_run_duration_seconds_sum {}",
        m.duration_sum_secs
    );
    let _ = writeln!(
        out,
        "agentd_run_duration_seconds_count {}",
        m.duration_count
    );
    out
}
