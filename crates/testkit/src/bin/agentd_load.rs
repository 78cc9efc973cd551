//! `agentd-load`: many open streams against a separate agentd process (`scripts/bench-process`
//! starts agentd and the fake provider as processes and runs this; `docs/benchmarks.md`,
//! "Separate process, open streams and memory").
//!
//! It opens N streamed `POST /v1/responses` at once (the upstream answers slowly: the fake
//! provider's `--answer-interval-ms`), reads each to its end, and reports how long starting
//! them took (first bytes of each stream, and of the last one), and the agentd process's RSS
//! (from `/proc/PID/status`) idle, at the peak, once every stream ended and after a settle
//! time, with when it first fell under 200 MiB after the end, agentd's CPU for the whole
//! wave (from `/proc/PID/stat`), and agentd's open descriptors idle and after the settle time
//! (upstream connections kept idle show there).
//!
//! With `--h2c` the streams share `--connections` HTTP/2 connections (prior knowledge, no TLS;
//! agentd serves HTTP/2 on its plain port), so 10,000 streams need about 100 client sockets,
//! not 10,000: this machine's open-file limit (20,000 per process) would not hold agentd's
//! client and upstream sockets of 10,000 streams otherwise.
//!
//! ```text
//! agentd-load --url http://127.0.0.1:8080 --pid 1234 --streams 10000 --h2c --connections 100 --settle-secs 60
//! ```

#![expect(
    clippy::print_stdout,
    clippy::expect_used,
    reason = "load tool: prints its report"
)]

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agentd_testkit::loadgen::{Process, mib, one_stream};
use bytes::Bytes;

const USAGE: &str = "\
usage: agentd-load --url URL --pid PID --streams N [--h2c] [--connections K]
                   [--model M] [--settle-secs S] [--timeout-secs S]

  --url URL           agentd's origin, e.g. http://127.0.0.1:8080
  --pid PID           agentd's process id (its RSS and CPU are reported)
  --streams N         streamed requests opened at once
  --h2c               HTTP/2 without TLS (prior knowledge) to agentd
  --connections K     HTTP/2 connections the streams share (default N / 100, at least 1)
  --model M           the model asked for (default openai/gpt-test)
  --settle-secs S     how long RSS is watched after the last stream ended (default 60)
  --timeout-secs S    bound on one stream (default 600)
";

/// The RSS the issue asks agentd to fall under within a minute after a spike.
const BACK_UNDER: u64 = 200 * 1024 * 1024;

struct Args {
    url: String,
    pid: u32,
    streams: usize,
    h2c: bool,
    connections: usize,
    model: String,
    settle: Duration,
    timeout: Duration,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let (mut url, mut pid, mut streams, mut connections) = (None, None, None, None);
    let mut h2c = false;
    let mut model = "openai/gpt-test".to_owned();
    let mut settle = Duration::from_secs(60);
    let mut timeout = Duration::from_secs(600);
    let number = |name: &str, value: Option<String>| -> Result<u64, String> {
        let value = value.ok_or_else(|| format!("{name} needs a value"))?;
        value
            .parse::<u64>()
            .map_err(|_| format!("{name}: {value:?} is not a number"))
    };
    while let Some(name) = args.next() {
        match name.as_str() {
            "-h" | "--help" => return Ok(None),
            "--h2c" => h2c = true,
            "--url" => url = Some(args.next().ok_or("--url needs a value")?),
            "--model" => model = args.next().ok_or("--model needs a value")?,
            "--pid" => pid = Some(number(&name, args.next())?),
            "--streams" => streams = Some(number(&name, args.next())?),
            "--connections" => connections = Some(number(&name, args.next())?),
            "--settle-secs" => settle = Duration::from_secs(number(&name, args.next())?),
            "--timeout-secs" => timeout = Duration::from_secs(number(&name, args.next())?),
            other => return Err(format!("unknown option {other}")),
        }
    }
    let streams = usize::try_from(streams.ok_or("--streams is required")?)
        .map_err(|_| "--streams is too large")?
        .max(1);
    let connections = match connections {
        Some(k) => usize::try_from(k).map_err(|_| "--connections is too large")?,
        None => streams.div_ceil(100),
    }
    .clamp(1, streams);
    Ok(Some(Args {
        url: url.ok_or("--url is required")?,
        pid: u32::try_from(pid.ok_or("--pid is required")?).map_err(|_| "--pid is too large")?,
        streams,
        h2c,
        connections,
        model,
        settle,
        timeout,
    }))
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("agentd-load: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("build the tokio runtime");
    runtime.block_on(run(args))
}

async fn run(args: Args) -> ExitCode {
    let pid = args.pid;
    // reqwest is built with `rustls-no-provider`: pick ring (an error means one is set already).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let clients: Vec<reqwest::Client> = (0..if args.h2c { args.connections } else { 1 })
        .map(|_| {
            let builder = reqwest::Client::builder()
                .timeout(args.timeout)
                .tcp_nodelay(true)
                .pool_max_idle_per_host(args.streams);
            let builder = if args.h2c {
                builder.http2_prior_knowledge()
            } else {
                builder
            };
            builder.build().expect("build the load client")
        })
        .collect();
    let url = format!("{}/v1/responses", args.url.trim_end_matches('/'));
    let body = Bytes::from(
        serde_json::json!({"model": args.model, "input": "hi", "stream": true}).to_string(),
    );

    let idle = Process::Pid(pid).rss_bytes();
    let idle_descriptors = Process::Pid(pid).open_descriptors();
    let cpu_before = Process::Pid(pid).cpu_time();
    let peak = Arc::new(AtomicU64::new(idle));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (Arc::clone(&peak), Arc::clone(&sampling));
        tokio::spawn(async move {
            while sampling.load(Ordering::Relaxed) {
                peak.fetch_max(Process::Pid(pid).rss_bytes(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    eprintln!(
        "agentd-load: {} streams over {} …",
        args.streams,
        if args.h2c {
            format!("{} HTTP/2 connections (h2c)", clients.len())
        } else {
            "HTTP/1.1, one connection each".to_owned()
        }
    );
    let start = Instant::now();
    let tasks: Vec<_> = (0..args.streams)
        .map(|i| {
            let client = clients[i % clients.len()].clone();
            let url = url.clone();
            let body = body.clone();
            tokio::spawn(async move { one_stream(&client, &url, body, start).await })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(args.streams);
    for task in tasks {
        outcomes.push(task.await.expect("a stream task panicked"));
    }
    let all_ended = start.elapsed();
    let ended_rss = Process::Pid(pid).rss_bytes();
    sampling.store(false, Ordering::Relaxed);
    let _ = sampler.await;
    let cpu = Process::Pid(pid).cpu_time().saturating_sub(cpu_before);
    let peak = peak.load(Ordering::Relaxed).max(ended_rss);
    eprintln!(
        "agentd-load: all ended after {:.1} s; watching RSS for {} s…",
        all_ended.as_secs_f64(),
        args.settle.as_secs()
    );
    let ended_at = Instant::now();
    let mut under = (ended_rss < BACK_UNDER).then_some(Duration::ZERO);
    let mut settled = ended_rss;
    while ended_at.elapsed() < args.settle {
        tokio::time::sleep(Duration::from_millis(250)).await;
        settled = Process::Pid(pid).rss_bytes();
        if under.is_none() && settled < BACK_UNDER {
            under = Some(ended_at.elapsed());
        }
    }
    // Still open after the settle time: agentd's sockets (idle upstream connections kept for
    // reuse, this client's connections), besides its files.
    let settled_descriptors = Process::Pid(pid).open_descriptors();
    drop(clients);

    let errors: Vec<&str> = outcomes.iter().filter_map(|o| o.error.as_deref()).collect();
    let mut first: Vec<Duration> = outcomes.iter().map(|o| o.first_bytes).collect();
    first.sort_unstable();
    let at = |p: f64| {
        let rank = ((p / 100.0) * first.len() as f64).ceil() as usize;
        first[rank.clamp(1, first.len()) - 1].as_secs_f64() * 1e3
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| streams | client | errors | first bytes p50 ms | p99 ms | last stream started ms | all ended s | agentd RSS idle MiB | peak MiB | per stream KiB | all ended MiB | after {} s MiB | under 200 MiB after s | agentd CPU s | agentd descriptors idle | after {} s |",
        args.settle.as_secs(),
        args.settle.as_secs()
    );
    let _ = writeln!(
        out,
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let _ = writeln!(
        out,
        "| {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {:.1} | {} | {} |",
        args.streams,
        if args.h2c {
            format!("h2c × {} conns", args.connections)
        } else {
            "HTTP/1.1".to_owned()
        },
        errors.len(),
        at(50.0),
        at(99.0),
        at(100.0),
        all_ended.as_secs_f64(),
        mib(idle),
        mib(peak),
        peak.saturating_sub(idle) as f64 / 1024.0 / args.streams as f64,
        mib(ended_rss),
        mib(settled),
        under.map_or_else(
            || "not yet".to_owned(),
            |d| format!("{:.1}", d.as_secs_f64())
        ),
        cpu.as_secs_f64(),
        idle_descriptors,
        settled_descriptors,
    );
    if let Some(example) = errors.first() {
        let _ = writeln!(out, "\n- {} errors, e.g. `{example}`", errors.len());
    }
    println!("{out}");
    if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
