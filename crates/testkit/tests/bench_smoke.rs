//! The benchmark still runs: a short `agentd-bench` run of each mode must succeed (every
//! request answered and checked, the report printed). It fails on errors only, never on
//! timings, which mean nothing in a debug build on a shared machine.

use std::process::Command;

/// Runs the bench binary; its stdout, or a failure with what it printed.
fn bench(args: &[&str]) -> std::io::Result<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_agentd-bench"))
        .args(args)
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "agentd-bench {args:?} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(stdout)
}

#[test]
fn the_phases_run_without_errors() {
    let report = bench(&[
        "--requests",
        "100",
        "--concurrency",
        "1,16",
        "--tokens",
        "8",
        "--warmup",
        "10",
    ])
    .unwrap();
    for route in [
        "(a) direct to the fake provider, stream",
        "(b) via agentd, non-streaming",
        "(c) via agentd, stream",
    ] {
        assert_eq!(
            report.matches(route).count(),
            2,
            "one row per concurrency level for {route}:\n{report}"
        );
    }
    assert!(
        report.contains("| 16 | (c) via agentd, stream | 100 | 0 |"),
        "{report}"
    );
    assert!(report.contains("What agentd adds"), "{report}");
}

#[test]
fn many_open_streams_run_without_errors() {
    let report = bench(&[
        "--streams",
        "50",
        "--stream-tokens",
        "3",
        "--stream-interval-ms",
        "50",
        "--settle-secs",
        "0",
    ])
    .unwrap();
    assert!(report.contains("many open streams"), "{report}");
    assert!(
        report.contains("\n| 50 | 0 |"),
        "50 streams, no error:\n{report}"
    );
}

#[test]
fn the_postgres_store_runs_without_errors() {
    let url = std::env::var("AGENTD_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
    let report = bench(&[
        "--requests",
        "50",
        "--concurrency",
        "8",
        "--tokens",
        "8",
        "--warmup",
        "10",
        "--store",
        "postgres",
        "--database-url",
        &url,
    ])
    .unwrap();
    assert!(report.contains("agentd store: PostgreSQL"), "{report}");
    assert!(
        report.contains("| 8 | (b) via agentd, non-streaming | 50 | 0 |"),
        "{report}"
    );
}
