//! `GET /metrics`: the engine's run metrics in a [`Registry`] under their exposed names, encoded
//! in the Prometheus text format (version 0.0.4) by `prometheus-client`.
//!
//! The registry is built for each scrape from the handles [`Engine::metrics`](engine::Engine::metrics)
//! returns: it belongs to that app alone (nothing process-global, so many apps in one process
//! never mix their metrics), and the queued-jobs gauge it encodes was read from the store for
//! this scrape.

use engine::metrics::MetricsSnapshot;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::registry::Registry;

/// The `Content-Type` of what [`render`] writes.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// The registry of one app's metrics.
///
/// Names and help texts are the exposed ones, with two rules of the library: it ends every help
/// text with a period (so none is given here), and it appends `_total` to a counter's name, so
/// the counter registered as `agentd_runs_finished` is exposed as `agentd_runs_finished_total`,
/// the name it always had.
pub fn registry(m: &MetricsSnapshot) -> Registry {
    let mut registry = Registry::default();
    registry.register(
        "agentd_runs_active",
        "Runs executing now",
        m.active_runs.clone(),
    );
    registry.register(
        "agentd_background_queue_depth",
        "Background runs waiting for a worker",
        m.queued_jobs.clone(),
    );
    registry.register(
        "agentd_runs_finished",
        "Runs ended, by final status",
        m.finished_runs.clone(),
    );
    registry.register(
        "agentd_run_duration_seconds",
        "Wall time of ended runs",
        m.run_duration.clone(),
    );
    registry
}

/// The exposition text of one app's metrics.
pub fn render(m: &MetricsSnapshot) -> Result<String, std::fmt::Error> {
    let mut out = String::with_capacity(2048);
    prometheus_text::encode(&mut out, &registry(m))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use engine::metrics::StatusLabel;

    use super::*;

    #[test]
    fn the_exposition_keeps_its_names() {
        let m = MetricsSnapshot::default();
        m.active_runs.set(2);
        m.queued_jobs.set(1);
        m.finished_runs
            .get_or_create(&StatusLabel {
                status: "completed",
            })
            .inc();
        m.run_duration.observe(0.3);
        m.run_duration.observe(400.0);
        let text = render(&m).unwrap_or_default();
        let mut lines: Vec<&str> = text.lines().collect();
        // The counters of a family come in no particular order.
        let counters: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].starts_with("agentd_runs_finished_total{"))
            .collect();
        lines[counters[0]..=counters[counters.len() - 1]].sort_unstable();
        assert_eq!(
            lines,
            [
                "# HELP agentd_runs_active Runs executing now.",
                "# TYPE agentd_runs_active gauge",
                "agentd_runs_active 2",
                "# HELP agentd_background_queue_depth Background runs waiting for a worker.",
                "# TYPE agentd_background_queue_depth gauge",
                "agentd_background_queue_depth 1",
                "# HELP agentd_runs_finished_total Runs ended, by final status.",
                "# TYPE agentd_runs_finished_total counter",
                "agentd_runs_finished_total{status=\"cancelled\"} 0",
                "agentd_runs_finished_total{status=\"completed\"} 1",
                "agentd_runs_finished_total{status=\"failed\"} 0",
                "agentd_runs_finished_total{status=\"incomplete\"} 0",
                "# HELP agentd_run_duration_seconds Wall time of ended runs.",
                "# TYPE agentd_run_duration_seconds histogram",
                "agentd_run_duration_seconds_bucket{le=\"0.1\"} 0",
                "agentd_run_duration_seconds_bucket{le=\"0.25\"} 0",
                "agentd_run_duration_seconds_bucket{le=\"0.5\"} 1",
                "agentd_run_duration_seconds_bucket{le=\"1\"} 1",
                "agentd_run_duration_seconds_bucket{le=\"2.5\"} 1",
                "agentd_run_duration_seconds_bucket{le=\"5\"} 1",
                "agentd_run_duration_seconds_bucket{le=\"10\"} 1",
                "agentd_run_duration_seconds_bucket{le=\"30\"} 1",
                "agentd_run_duration_seconds_bucket{le=\"60\"} 1",
                "agentd_run_duration_seconds_bucket{le=\"300\"} 1",
                "agentd_run_duration_seconds_bucket{le=\"+Inf\"} 2",
                "agentd_run_duration_seconds_sum 400.3",
                "agentd_run_duration_seconds_count 2",
            ]
        );
    }
}
