//! `agentd-bench`: a small load tool that measures what agentd adds per request and per streamed
//! token, compared with calling the upstream (the scripted fake provider) directly.
//!
//! Everything runs in this one process on one multi-thread tokio runtime: the fake provider, agentd
//! (through [`TestApp`], with a file-backed SQLite store by default) and the load generator. For each
//! concurrency level C it runs three phases with the same upstream content (T text deltas):
//!
//! - `direct`: `POST {fake}/v1/chat/completions` with the body the Chat Completions adapter sends
//!   (`stream: true`, `include_usage`), reading the whole SSE body;
//! - `agentd`: `POST {agentd}/v1/responses` `{"model":"openai/gpt-test","input":"hi"}`;
//! - `agentd stream`: the same with `"stream": true`, reading the whole SSE body.
//!
//! Each phase is closed-loop: C workers each send the next request as soon as their previous one
//! ended, after an uncounted warm-up. The report is Markdown on stdout (progress goes to stderr):
//! throughput, latency percentiles, process CPU per request (from `/proc/self/stat`), and what
//! agentd adds: the p50 latency and CPU differences against `direct`. See `docs/benchmarks.md`.
//!
//! ```text
//! cargo run --release -p agentd-testkit --bin agentd-bench -- --requests 2000 --concurrency 1,64,512 --tokens 50
//! ```

#![expect(
    clippy::print_stdout,
    clippy::expect_used,
    reason = "benchmark tool: prints its report"
)]

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agentd_testkit::loadgen::{
    Process, error_chain, json_string_after, last_frame, mib, one_stream,
};
use agentd_testkit::sse::Transcript;
use agentd_testkit::{FAKE_PROVIDER_KEY, Reply, TestApp};
use bytes::Bytes;
use pgschema::testdb::TestDatabase;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use serde_json::json;
use server::config::StoreLocation;

/// The global allocator (feature `jemalloc`, the default, or `mimalloc`). jemalloc's background
/// threads give freed memory back to the operating system, so RSS falls again after a spike of
/// open streams, which glibc's malloc and (measured) mimalloc did not (docs/benchmarks.md,
/// "Separate process, open streams and memory").
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// jemalloc with background threads purging freed pages (the default; mimalloc wins when both
/// features are on).
#[cfg(all(feature = "jemalloc", not(feature = "mimalloc")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const USAGE: &str = "\
agentd-bench: what agentd adds per request and per streamed token, compared with calling the
fake provider directly (everything in one process; see docs/benchmarks.md).

usage: agentd-bench [--requests N] [--concurrency C1,C2,..] [--tokens T] [--warmup W]
                    [--routes direct,json,stream] [--store file|memory|postgres]
                    [--database-url URL]
                    [--streams N [--stream-tokens T] [--stream-interval-ms MS] [--settle-secs S]]

  --requests N        measured requests per phase (default 2000)
  --concurrency LIST  requests in flight, one run per value (default 1,64,512)
  --tokens T          text deltas the fake provider streams per answer (default 50)
  --warmup W          uncounted requests before each phase; at least C are sent so every
                      connection pool is full (default 100)
  --routes LIST       the phases to run, of `direct`, `json` (non-streaming) and `stream`
                      (default all three; one alone for an instruction profile)
  --store KIND        agentd's store: `file` (SQLite, WAL, in a temporary directory, the
                      deployed default), `memory` (SQLite in memory) or `postgres` (a database
                      the tool creates on the server of --database-url and drops at the end)
                      (default file)
  --database-url URL  the PostgreSQL server for --store postgres, as a URL to a database the
                      user may create databases from (default $AGENTD_BENCH_POSTGRES_URL, else
                      postgres://postgres@127.0.0.1:5432/postgres)

Many open streams (instead of the phases above): N streamed requests at once against a slow
upstream, reporting how long starting them took and the process RSS before, at its peak, once
all ended and after a pause.

  --streams N         concurrent streams
  --stream-tokens T   deltas per answer (default 40)
  --stream-interval-ms MS
                      the upstream's pause between deltas (default 1000)
  --settle-secs S     how long to wait after the last stream ended before the last RSS
                      reading (default 60)
";

/// The PostgreSQL server `--store postgres` uses when neither the flag nor the variable says.
const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Open files each in-flight request may hold through agentd: the client's socket and agentd's
/// accepted end, agentd's upstream socket and the fake provider's accepted end. Idle pooled
/// connections of the earlier phases stay open too, hence the margin in [`fd_needed`].
const FDS_PER_AGENTD_REQUEST: usize = 4;
/// How long one request may take before it counts as an error.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// The validated command line.
#[derive(Debug, Clone)]
struct Args {
    requests: usize,
    concurrency: Vec<usize>,
    tokens: usize,
    warmup: usize,
    store: StoreKind,
    /// The PostgreSQL server of `--store postgres`.
    database_url: Option<String>,
    /// The phases to run (all by default; one alone for an instruction profile).
    routes: Vec<Route>,
    /// The many-open-streams mode, when asked for.
    streams: Option<StreamsArgs>,
}

/// `--streams` and its settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StreamsArgs {
    count: usize,
    tokens: usize,
    interval: Duration,
    settle: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoreKind {
    File,
    Memory,
    Postgres,
}

impl StoreKind {
    fn label(self) -> &'static str {
        match self {
            StoreKind::File => "SQLite file (WAL, synchronous=NORMAL)",
            StoreKind::Memory => "SQLite in memory",
            StoreKind::Postgres => "PostgreSQL (a database created for the run)",
        }
    }
}

/// `Ok(None)` means `--help`.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut parsed = Args {
        requests: 2000,
        concurrency: vec![1, 64, 512],
        tokens: 50,
        warmup: 100,
        store: StoreKind::File,
        database_url: None,
        streams: None,
        routes: Route::ALL.to_vec(),
    };
    let mut streams = StreamsArgs {
        count: 0,
        tokens: 40,
        interval: Duration::from_secs(1),
        settle: Duration::from_secs(60),
    };
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            return Ok(None);
        }
        let (name, inline) = match flag.split_once('=') {
            Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
            None => (flag.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match name.as_str() {
            "--requests" => parsed.requests = positive(&name, &value()?)?,
            "--tokens" => parsed.tokens = positive(&name, &value()?)?,
            "--warmup" => {
                let raw = value()?;
                parsed.warmup = raw
                    .parse()
                    .map_err(|_| format!("--warmup: {raw:?} is not a number"))?;
            }
            "--concurrency" => {
                parsed.concurrency = value()?
                    .split(',')
                    .map(|part| positive(&name, part.trim()))
                    .collect::<Result<_, _>>()?;
            }
            "--store" => {
                parsed.store = match value()?.as_str() {
                    "file" => StoreKind::File,
                    "memory" => StoreKind::Memory,
                    "postgres" => StoreKind::Postgres,
                    other => {
                        return Err(format!(
                            "--store: {other:?} is not `file`, `memory` or `postgres`"
                        ));
                    }
                };
            }
            "--database-url" => parsed.database_url = Some(value()?),
            "--routes" => {
                parsed.routes = value()?
                    .split(',')
                    .map(|part| match part.trim() {
                        "direct" => Ok(Route::Direct),
                        "json" => Ok(Route::Agentd),
                        "stream" => Ok(Route::AgentdStream),
                        other => Err(format!(
                            "--routes: {other:?} is not `direct`, `json` or `stream`"
                        )),
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--streams" => streams.count = positive(&name, &value()?)?,
            "--stream-tokens" => streams.tokens = positive(&name, &value()?)?,
            "--stream-interval-ms" => {
                let raw = value()?;
                let ms: u64 = raw
                    .parse()
                    .map_err(|_| format!("--stream-interval-ms: {raw:?} is not a number"))?;
                streams.interval = Duration::from_millis(ms);
            }
            "--settle-secs" => {
                let raw = value()?;
                let secs: u64 = raw
                    .parse()
                    .map_err(|_| format!("--settle-secs: {raw:?} is not a number"))?;
                streams.settle = Duration::from_secs(secs);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if streams.count > 0 {
        parsed.streams = Some(streams);
    }
    Ok(Some(parsed))
}

fn positive(name: &str, raw: &str) -> Result<usize, String> {
    match raw.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{name}: {raw:?} is not a positive number")),
    }
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("agentd-bench: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if cfg!(debug_assertions) {
        eprintln!(
            "agentd-bench: this is a debug build; the figures mean little. Run with --release:\n  \
             cargo run --release -p agentd-testkit --bin agentd-bench"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("build the tokio runtime");
    runtime.block_on(bench(args))
}

/// Which way a phase reaches the (fake) model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// The fake provider's Chat Completions endpoint, streaming.
    Direct,
    /// agentd `/v1/responses`, one JSON answer.
    Agentd,
    /// agentd `/v1/responses` with `stream: true`.
    AgentdStream,
}

impl Route {
    const ALL: [Route; 3] = [Route::Direct, Route::Agentd, Route::AgentdStream];

    fn label(self) -> &'static str {
        match self {
            Route::Direct => "(a) direct to the fake provider, stream",
            Route::Agentd => "(b) via agentd, non-streaming",
            Route::AgentdStream => "(c) via agentd, stream",
        }
    }
}

/// One prepared request, cloned cheaply by every worker.
struct Target {
    client: reqwest::Client,
    route: Route,
    url: String,
    body: Bytes,
}

/// Failures of one kind in a phase.
struct ErrorKind {
    count: usize,
    example: String,
}

/// Groups failure messages by their text with digits masked (ports, ids, sizes differ).
fn group_errors(messages: Vec<String>) -> Vec<ErrorKind> {
    let mut kinds: Vec<(String, ErrorKind)> = Vec::new();
    for message in messages {
        let key: String = message
            .chars()
            .take(120)
            .map(|c| if c.is_ascii_digit() { '#' } else { c })
            .collect();
        match kinds.iter_mut().find(|(k, _)| *k == key) {
            Some((_, kind)) => kind.count += 1,
            None => kinds.push((
                key,
                ErrorKind {
                    count: 1,
                    example: message,
                },
            )),
        }
    }
    let mut kinds: Vec<ErrorKind> = kinds.into_iter().map(|(_, kind)| kind).collect();
    kinds.sort_by_key(|kind| std::cmp::Reverse(kind.count));
    kinds
}

fn log_errors(what: &str, errors: usize, kinds: &[ErrorKind]) {
    if errors == 0 {
        return;
    }
    eprintln!("agentd-bench:   {what}: {errors} errors");
    for kind in kinds.iter().take(5) {
        eprintln!("agentd-bench:     {} × {}", kind.count, kind.example);
    }
}

/// What one phase measured.
struct PhaseResult {
    route: Route,
    concurrency: usize,
    /// Latencies of the successful measured requests, sorted.
    latencies: Vec<Duration>,
    errors: usize,
    /// Failures grouped by kind (the message with numbers masked), most frequent first, each
    /// with one full example.
    error_kinds: Vec<ErrorKind>,
    wall: Duration,
    /// Process CPU (user + system, all threads) during the measured part.
    cpu: Duration,
}

impl PhaseResult {
    fn requests(&self) -> usize {
        self.latencies.len() + self.errors
    }

    fn throughput(&self) -> f64 {
        self.latencies.len() as f64 / self.wall.as_secs_f64()
    }

    /// Nearest-rank percentile in milliseconds (NaN when nothing succeeded).
    fn percentile_ms(&self, p: f64) -> f64 {
        if self.latencies.is_empty() {
            return f64::NAN;
        }
        let rank = ((p / 100.0) * self.latencies.len() as f64).ceil() as usize;
        let index = rank.clamp(1, self.latencies.len()) - 1;
        self.latencies[index].as_secs_f64() * 1e3
    }

    /// Process CPU per request in microseconds (all requests, including failed ones).
    fn cpu_per_request_us(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.requests().max(1) as f64
    }
}

async fn bench(args: Args) -> ExitCode {
    let max_concurrency = args.concurrency.iter().copied().max().unwrap_or(1);
    let open_files = open_files_limit();
    let needed = fd_needed(max_concurrency);
    if let Some(limit) = open_files
        && limit < needed as u64
    {
        eprintln!(
            "agentd-bench: warning: the open-files limit is {limit}, and {max_concurrency} concurrent \
             requests may need about {needed} descriptors; raise it first (`ulimit -n {}`) or \
             expect connection errors",
            needed.next_power_of_two()
        );
    }

    let postgres = match args.store {
        StoreKind::Postgres => {
            let admin = args
                .database_url
                .clone()
                .or_else(|| std::env::var("AGENTD_BENCH_POSTGRES_URL").ok())
                .unwrap_or_else(|| DEFAULT_POSTGRES_URL.to_owned());
            match create_database(&admin).await {
                Ok(database) => Some(database),
                Err(message) => {
                    eprintln!("agentd-bench: --store postgres: {message}");
                    return ExitCode::FAILURE;
                }
            }
        }
        StoreKind::File | StoreKind::Memory => None,
    };
    let data_dir = match args.store {
        StoreKind::File => Some(std::env::temp_dir().join(format!(
            "agentd-bench-{}-{}",
            std::process::id(),
            unix_millis()
        ))),
        StoreKind::Memory | StoreKind::Postgres => None,
    };
    let location = match (&data_dir, &postgres) {
        (Some(dir), _) => Some(StoreLocation::DataDir(dir.clone())),
        (None, Some(database)) => Some(StoreLocation::Postgres(database.url().to_owned())),
        (None, None) => None,
    };
    let app = TestApp::spawn_with(move |config| {
        if let Some(location) = location {
            // What `Config::resolve` derives from a PostgreSQL URL.
            config.engine.shared_store = matches!(location, StoreLocation::Postgres(_));
            config.store = location;
        }
    })
    .await;

    let status = match args.streams {
        Some(streams) => many_streams(&app, &args, streams).await,
        None => phases(&app, &args, open_files, max_concurrency).await,
    };

    drop(app);
    if let Some(dir) = data_dir {
        // Best effort: the store may still hold the files for a moment; the OS temp dir is
        // cleaned eventually anyway.
        let _ = std::fs::remove_dir_all(dir);
    }
    if let Some(database) = postgres {
        drop_database(database).await;
    }
    status
}

/// The closed-loop phases at each concurrency level, and their report.
async fn phases(
    app: &TestApp,
    args: &Args,
    open_files: Option<u64>,
    max_concurrency: usize,
) -> ExitCode {
    // After TestApp::spawn: building the provider client installed rustls' crypto provider,
    // which a reqwest built with `rustls-no-provider` needs even for plain HTTP clients.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(max_concurrency)
        .timeout(REQUEST_TIMEOUT)
        .build()
        .expect("build the load client");

    let answer = Reply::text_chunks((0..args.tokens).map(|i| format!(" tok{i}")));
    sanity_check(app, &answer, args.tokens).await;

    let direct_body = json!({
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let targets = Route::ALL.map(|route| {
        let (url, body) = match route {
            Route::Direct => (
                format!("{}/chat/completions", app.fake.base_url()),
                direct_body.clone(),
            ),
            Route::Agentd => (
                app.url("/v1/responses"),
                json!({"model": "openai/gpt-test", "input": "hi"}),
            ),
            Route::AgentdStream => (
                app.url("/v1/responses"),
                json!({"model": "openai/gpt-test", "input": "hi", "stream": true}),
            ),
        };
        Arc::new(Target {
            client: client.clone(),
            route,
            url,
            body: Bytes::from(body.to_string()),
        })
    });

    let mut results = Vec::new();
    let mut leftover = 0;
    for &concurrency in &args.concurrency {
        for target in targets.iter().filter(|t| args.routes.contains(&t.route)) {
            let warmup = args.warmup.max(concurrency);
            eprintln!(
                "agentd-bench: C={concurrency:<4} {:<40} warm-up {warmup}, measuring {}…",
                target.route.label(),
                args.requests
            );
            script(app, &answer, warmup + args.requests);
            let warm = run_phase(target, warmup, concurrency).await;
            log_errors("warm-up", warm.errors, &warm.error_kinds);
            let result = run_phase(target, args.requests, concurrency).await;
            log_errors("measured", result.errors, &result.error_kinds);
            results.push(result);
            leftover += app.fake.pending_replies();
        }
    }

    println!("{}", report(args, &results, open_files, leftover));

    if results.iter().any(|r| r.errors > 0) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Milliseconds since 1970 (names that differ between runs).
fn unix_millis() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// The run's PostgreSQL database on the server of an administration URL (announced on stderr;
/// the URL is never quoted: it may hold a password).
async fn create_database(admin_url: &str) -> Result<TestDatabase, String> {
    let database = TestDatabase::create_on(admin_url, "agentd_bench")
        .await
        .map_err(|e| e.to_string())?;
    eprintln!(
        "agentd-bench: created PostgreSQL database {}",
        database.name()
    );
    Ok(database)
}

/// Drops the run's database (best effort: a failure is reported, not fatal).
async fn drop_database(database: TestDatabase) {
    let name = database.name().to_owned();
    match database.drop_database().await {
        Ok(()) => eprintln!("agentd-bench: dropped PostgreSQL database {name}"),
        Err(e) => eprintln!("agentd-bench: could not drop PostgreSQL database {name}: {e}"),
    }
}

/// The many-open-streams mode: `count` streams at once against a slow upstream; how long
/// starting them took, and the process RSS before, at the peak, once all ended and after
/// `settle`.
async fn many_streams(app: &TestApp, args: &Args, streams: StreamsArgs) -> ExitCode {
    let per_stream = streams.interval * u32::try_from(streams.tokens).unwrap_or(u32::MAX);
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(streams.count)
        .timeout(per_stream + REQUEST_TIMEOUT)
        .build()
        .expect("build the load client");
    let answer = Reply::text_chunks((0..streams.tokens).map(|i| format!(" tok{i}")))
        .delay_between_chunks(streams.interval);
    script(app, &answer, streams.count);
    let url = app.url("/v1/responses");
    let body =
        Bytes::from(json!({"model": "openai/gpt-test", "input": "hi", "stream": true}).to_string());

    let idle = Process::Current.rss_bytes();
    let peak = Arc::new(std::sync::atomic::AtomicU64::new(idle));
    let sampling = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let peak = Arc::clone(&peak);
        let sampling = Arc::clone(&sampling);
        tokio::spawn(async move {
            while sampling.load(Ordering::Relaxed) {
                peak.fetch_max(Process::Current.rss_bytes(), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    eprintln!(
        "agentd-bench: {} streams of {} deltas, {} ms apart…",
        streams.count,
        streams.tokens,
        streams.interval.as_millis()
    );
    let started = Instant::now();
    let tasks: Vec<_> = (0..streams.count)
        .map(|_| {
            let client = client.clone();
            let url = url.clone();
            let body = body.clone();
            tokio::spawn(async move { one_stream(&client, &url, body, started).await })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(streams.count);
    for task in tasks {
        outcomes.push(task.await.expect("a stream task panicked"));
    }
    let all_ended = started.elapsed();
    let ended_rss = Process::Current.rss_bytes();
    sampling.store(false, Ordering::Relaxed);
    let _ = sampler.await;
    let peak = peak.load(Ordering::Relaxed).max(ended_rss);
    eprintln!(
        "agentd-bench: all ended after {:.1} s; waiting {} s…",
        all_ended.as_secs_f64(),
        streams.settle.as_secs()
    );
    tokio::time::sleep(streams.settle).await;
    let settled = Process::Current.rss_bytes();

    let errors: Vec<String> = outcomes.iter().filter_map(|o| o.error.clone()).collect();
    let mut first: Vec<Duration> = outcomes.iter().map(|o| o.first_bytes).collect();
    first.sort_unstable();
    let at = |p: f64| {
        let rank = ((p / 100.0) * first.len() as f64).ceil() as usize;
        first[rank.clamp(1, first.len()) - 1].as_secs_f64() * 1e3
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## agentd-bench: many open streams
"
    );
    let _ = writeln!(
        out,
        "- build: {}; agentd store: {}",
        if cfg!(debug_assertions) {
            "debug (not meaningful)"
        } else {
            "release"
        },
        args.store.label()
    );
    let _ = writeln!(
        out,
        "- {} concurrent streams, {} deltas each, {} ms apart; RSS is the whole process (agentd, the fake provider and the load client)
",
        streams.count,
        streams.tokens,
        streams.interval.as_millis()
    );
    let _ = writeln!(
        out,
        "| streams | errors | first bytes p50 ms | p99 ms | last stream started ms | all ended s | RSS idle MiB | RSS peak MiB | per stream KiB | RSS all ended MiB | RSS after {} s MiB |",
        streams.settle.as_secs()
    );
    let _ = writeln!(
        out,
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let _ = writeln!(
        out,
        "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
        streams.count,
        errors.len(),
        at(50.0),
        at(99.0),
        at(100.0),
        all_ended.as_secs_f64(),
        mib(idle),
        mib(peak),
        peak.saturating_sub(idle) as f64 / 1024.0 / streams.count as f64,
        mib(ended_rss),
        mib(settled),
    );
    for kind in group_errors(errors.clone()).iter().take(3) {
        let _ = writeln!(out, "\n- {} × `{}`", kind.count, excerpt(&kind.example));
    }
    println!("{out}");
    if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// One streamed request through agentd, checked with the testkit's stream invariants, so the
/// numbers are about a run that really works end to end.
async fn sanity_check(app: &TestApp, answer: &Reply, tokens: usize) {
    app.fake.push(answer.clone());
    let transcript: Transcript = app
        .post_stream(
            "/v1/responses",
            json!({"model": "openai/gpt-test", "input": "hi", "stream": true}),
        )
        .await;
    let deltas = transcript
        .types()
        .iter()
        .filter(|t| *t == "response.output_text.delta")
        .count();
    assert_eq!(
        deltas, tokens,
        "agentd streams one delta per upstream delta"
    );
    assert_eq!(transcript.terminal()["type"], "response.completed");
}

/// Queues exactly `count` replies, dropping what an earlier phase left (replies of requests that
/// failed before reaching the fake provider) and the request bodies the fake provider recorded
/// (it keeps every one; a long run would otherwise grow it without bound).
fn script(app: &TestApp, answer: &Reply, count: usize) {
    app.fake.reset();
    for _ in 0..count {
        app.fake.push(answer.clone());
    }
}

/// Sends `total` requests with `concurrency` in flight (closed loop: C workers, each sending its
/// next request when the previous one ended), on tokio tasks so the client work spreads over
/// the runtime's worker threads like the servers' does.
async fn run_phase(target: &Arc<Target>, total: usize, concurrency: usize) -> PhaseResult {
    let next = Arc::new(AtomicUsize::new(0));
    let cpu_before = Process::Current.cpu_time();
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency.min(total))
        .map(|_| {
            let target = Arc::clone(target);
            let next = Arc::clone(&next);
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut errors = Vec::new();
                while next.fetch_add(1, Ordering::Relaxed) < total {
                    match one_request(&target).await {
                        Ok(latency) => latencies.push(latency),
                        Err(error) => errors.push(error),
                    }
                }
                (latencies, errors)
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(total);
    let mut failures = Vec::new();
    for worker in workers {
        let (mut done, failed) = worker.await.expect("a load worker panicked");
        latencies.append(&mut done);
        failures.extend(failed);
    }
    let wall = started.elapsed();
    let cpu = Process::Current.cpu_time().saturating_sub(cpu_before);
    latencies.sort_unstable();
    PhaseResult {
        route: target.route,
        concurrency,
        latencies,
        errors: failures.len(),
        error_kinds: group_errors(failures),
        wall,
        cpu,
    }
}

/// One request, read to the end. The success checks are cheap on purpose (no JSON parsing),
/// because the client's CPU is part of the process CPU we report.
async fn one_request(target: &Target) -> Result<Duration, String> {
    let started = Instant::now();
    let mut request = target
        .client
        .post(&target.url)
        .header(CONTENT_TYPE, "application/json")
        .body(target.body.clone());
    if target.route == Route::Direct {
        // What the adapter sends upstream.
        request = request
            .header(ACCEPT, "text/event-stream")
            .header(AUTHORIZATION, format!("Bearer {FAKE_PROVIDER_KEY}"));
    }
    let response = request.send().await.map_err(|e| error_chain(&e))?;
    let status = response.status();
    let body = response.bytes().await.map_err(|e| error_chain(&e))?;
    let latency = started.elapsed();
    if status.is_success() && completed(target.route, &body) {
        return Ok(latency);
    }
    let text = String::from_utf8_lossy(&body);
    if !status.is_success() {
        return Err(format!("HTTP {status}: {}", excerpt(&text)));
    }
    // Say how it ended: the status or the last event, and the error the run reported.
    let (what, ending) = match target.route {
        Route::Direct => ("stream ending", tail(&text)),
        Route::Agentd => (
            "response status",
            json_string_after(&text, "\"status\":")
                .unwrap_or("?")
                .to_owned(),
        ),
        Route::AgentdStream => (
            "last event",
            json_string_after(last_frame(&text), "\"type\":")
                .unwrap_or("?")
                .to_owned(),
        ),
    };
    let error = text
        .find("\"error\":{")
        .map(|at| excerpt(&text[at..]))
        .unwrap_or_default();
    Err(format!(
        "not completed ({} bytes): {what} {ending} {error}",
        body.len()
    ))
}

/// Whether a successful answer's `body` ended as a completed one: the stream's `[DONE]`, the
/// top-level `status` (serialized before the output items) or the last frame's event type.
/// Read in the body's bytes, and only as far as each check needs: the whole streamed body
/// through `String::from_utf8_lossy` (~15 KB) cost ~120 k instructions per request, more
/// than the check. (As on the text: an invalid byte only ever makes a check fail.)
fn completed(route: Route, body: &[u8]) -> bool {
    match route {
        Route::Direct => body.ends_with(b"data: [DONE]\n\n"),
        Route::Agentd => string_after(body, b"\"status\":") == Some(b"completed"),
        Route::AgentdStream => {
            let trimmed = body.trim_ascii_end();
            let last = rfind(trimmed, b"data:").map_or(trimmed, |at| &trimmed[at..]);
            string_after(last, b"\"type\":") == Some(b"response.completed")
        }
    }
}

/// [`json_string_after`] in bytes.
fn string_after<'a>(body: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let at = body.windows(key.len()).position(|window| window == key)?;
    let rest = body[at + key.len()..].strip_prefix(b"\"")?;
    Some(&rest[..rest.iter().position(|&byte| byte == b'"')?])
}

/// Where `needle` last begins in `body`.
fn rfind(body: &[u8], needle: &[u8]) -> Option<usize> {
    body.windows(needle.len())
        .rposition(|window| window == needle)
}

/// The last 300 characters (how a cut-off stream ended).
fn tail(text: &str) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(300)).collect()
}

/// The first 300 characters.
fn excerpt(text: &str) -> String {
    let end = text
        .char_indices()
        .nth(300)
        .map_or(text.len(), |(index, _)| index);
    text[..end].to_owned()
}

/// The soft `Max open files` limit, from `/proc/self/limits`.
fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Descriptors the run may hold at once: the in-flight requests through agentd, plus the idle
/// pooled connections (client to fake, client to agentd, agentd to fake: both ends each), plus
/// a margin for the runtime, SQLite and stdio.
fn fd_needed(max_concurrency: usize) -> usize {
    FDS_PER_AGENTD_REQUEST * max_concurrency + 2 * 3 * max_concurrency + 256
}

fn report(
    args: &Args,
    results: &[PhaseResult],
    open_files: Option<u64>,
    leftover_replies: usize,
) -> String {
    let mut out = String::new();
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let profile = if cfg!(debug_assertions) {
        "debug (not meaningful)"
    } else {
        "release"
    };
    let _ = writeln!(out, "## agentd-bench\n");
    let _ = writeln!(
        out,
        "- build: {profile}; {cores} CPU(s) available; one tokio runtime with {cores} worker threads \
         shared by the load client, agentd and the fake provider"
    );
    let _ = writeln!(
        out,
        "- {} measured requests per phase (after a warm-up of max({}, C)); {} streamed text deltas per answer",
        args.requests, args.warmup, args.tokens
    );
    let _ = writeln!(
        out,
        "- agentd store: {}{}",
        args.store.label(),
        if args.store == StoreKind::File {
            " in a temporary directory"
        } else {
            ""
        }
    );
    if let Some(limit) = open_files {
        let _ = writeln!(out, "- open-files limit: {limit}");
    }
    if leftover_replies > 0 {
        let _ = writeln!(
            out,
            "- {leftover_replies} scripted replies were left unused (requests that failed before reaching the fake provider)"
        );
    }
    let _ = writeln!(
        out,
        "\n| C | route | requests | errors | req/s | p50 ms | p90 ms | p99 ms | CPU µs/req | \
         req/s ÷ (a) | p50 ÷ (a) | p99 ÷ (a) | CPU ÷ (a) |"
    );
    let _ = writeln!(
        out,
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in results {
        let direct = results
            .iter()
            .find(|d| d.route == Route::Direct && d.concurrency == r.concurrency);
        let ratio =
            |of: &dyn Fn(&PhaseResult) -> f64| direct.map_or(f64::NAN, |direct| of(r) / of(direct));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.0} | {:.3} | {:.3} | {:.3} | {:.0} | {:.3} | {:.2} | {:.2} | {:.2} |",
            r.concurrency,
            r.route.label(),
            r.requests(),
            r.errors,
            r.throughput(),
            r.percentile_ms(50.0),
            r.percentile_ms(90.0),
            r.percentile_ms(99.0),
            r.cpu_per_request_us(),
            ratio(&PhaseResult::throughput),
            ratio(&|p| p.percentile_ms(50.0)),
            ratio(&|p| p.percentile_ms(99.0)),
            ratio(&PhaseResult::cpu_per_request_us),
        );
    }
    let failed: Vec<&PhaseResult> = results.iter().filter(|r| r.errors > 0).collect();
    if !failed.is_empty() {
        let _ = writeln!(
            out,
            "\nErrors (measured requests; latencies above are of the successful ones):\n"
        );
        for r in failed {
            for kind in r.error_kinds.iter().take(3) {
                let _ = writeln!(
                    out,
                    "- C={} {}: {} × `{}`",
                    r.concurrency,
                    r.route.label(),
                    kind.count,
                    excerpt(&kind.example).replace('`', "'")
                );
            }
        }
    }

    let tokens = args.tokens as f64;
    let _ = writeln!(
        out,
        "\n### What agentd adds (against (a), same concurrency)\n\n\
         | C | latency/request, p50 (b − a) ms | latency/token, p50 (c − a)/T µs | \
         CPU/request (b − a) µs | CPU/streamed request (c − a) µs | CPU/token (c − a)/T µs | \
         CPU/token, streaming part (c − b)/T µs |"
    );
    let _ = writeln!(out, "|---:|---:|---:|---:|---:|---:|---:|");
    for &concurrency in &args.concurrency {
        let find = |route: Route| {
            results
                .iter()
                .find(|r| r.route == route && r.concurrency == concurrency)
        };
        let (Some(a), Some(b), Some(c)) = (
            find(Route::Direct),
            find(Route::Agentd),
            find(Route::AgentdStream),
        ) else {
            continue;
        };
        let _ = writeln!(
            out,
            "| {concurrency} | {:.3} | {:.1} | {:.0} | {:.0} | {:.1} | {:.1} |",
            b.percentile_ms(50.0) - a.percentile_ms(50.0),
            (c.percentile_ms(50.0) - a.percentile_ms(50.0)) * 1e3 / tokens,
            b.cpu_per_request_us() - a.cpu_per_request_us(),
            c.cpu_per_request_us() - a.cpu_per_request_us(),
            (c.cpu_per_request_us() - a.cpu_per_request_us()) / tokens,
            (c.cpu_per_request_us() - b.cpu_per_request_us()) / tokens,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checks on bytes answer what the same checks answered on the whole body as text.
    #[test]
    fn completion_read_in_bytes_is_what_the_text_said() {
        let on_text = |route: Route, body: &[u8]| {
            let text = String::from_utf8_lossy(body);
            match route {
                Route::Direct => text.ends_with("data: [DONE]\n\n"),
                Route::Agentd => json_string_after(&text, "\"status\":") == Some("completed"),
                Route::AgentdStream => {
                    json_string_after(last_frame(&text), "\"type\":") == Some("response.completed")
                }
            }
        };
        let bodies: [&[u8]; 14] = [
            b"data: {}\n\ndata: [DONE]\n\n",
            b"data: {}\n\ndata: [DONE]\n",
            br#"{"id":"r","status":"completed","output":[{"status":"failed"}]}"#,
            br#"{"id":"r","status":"failed","output":[{"status":"completed"}]}"#,
            br#"{"id":"r","status":"completed"#,
            br#"{"id":"r","status": "completed"}"#,
            b"{\"id\":\"\xff\",\"status\":\"completed\"}",
            b"{\"status\":\"complet\xffed\"}",
            b"event: x\ndata: {\"type\":\"response.created\"}\n\ndata: {\"type\":\"response.completed\",\"response\":{}}\n\n",
            b"data: {\"type\":\"response.completed\"}\n\ndata: {\"type\":\"response.failed\"}\n\n \r\n",
            b"data: {\"type\":\"response.completed\"}",
            b"{\"type\":\"response.completed\"}",
            b"data: {\"type\":\"response.completed\xff\"}\n\n",
            b"",
        ];
        for route in [Route::Direct, Route::Agentd, Route::AgentdStream] {
            let mut seen = [false; 2];
            for body in bodies {
                let want = on_text(route, body);
                assert_eq!(
                    completed(route, body),
                    want,
                    "{route:?} {}",
                    String::from_utf8_lossy(body)
                );
                seen[usize::from(want)] = true;
            }
            assert_eq!(seen, [true, true], "{route:?}");
        }
    }

    fn parse(args: &[&str]) -> Result<Option<Args>, String> {
        parse_args(args.iter().map(|a| (*a).to_owned()))
    }

    #[test]
    fn defaults_and_flags() {
        let args = parse(&[]).expect("parses").expect("not help");
        assert_eq!(
            (args.requests, args.concurrency, args.tokens, args.warmup),
            (2000, vec![1, 64, 512], 50, 100)
        );
        let args = parse(&[
            "--requests",
            "10",
            "--concurrency=2, 8",
            "--tokens",
            "5",
            "--store",
            "memory",
        ])
        .expect("parses")
        .expect("not help");
        assert_eq!(
            (args.requests, args.concurrency, args.tokens, args.store),
            (10, vec![2, 8], 5, StoreKind::Memory)
        );
        assert!(parse(&["--help"]).expect("parses").is_none());
        assert!(parse(&["--requests", "0"]).is_err());
        assert!(parse(&["--concurrency"]).is_err());
        assert!(parse(&["--bench"]).is_err());
        let args = parse(&[
            "--routes",
            "json,stream",
            "--store",
            "postgres",
            "--streams",
            "100",
            "--stream-interval-ms",
            "20",
        ])
        .expect("parses")
        .expect("not help");
        assert_eq!(args.routes, [Route::Agentd, Route::AgentdStream]);
        assert_eq!(args.store, StoreKind::Postgres);
        assert_eq!(
            args.streams,
            Some(StreamsArgs {
                count: 100,
                tokens: 40,
                interval: Duration::from_millis(20),
                settle: Duration::from_secs(60),
            })
        );
        assert!(parse(&["--routes", "all"]).is_err());
    }

    #[test]
    fn errors_are_grouped_by_kind() {
        let kinds = group_errors(vec![
            "connect 127.0.0.1:4001: refused".to_owned(),
            "HTTP 500: store".to_owned(),
            "connect 127.0.0.1:4002: refused".to_owned(),
        ]);
        let summary: Vec<(usize, &str)> = kinds
            .iter()
            .map(|k| (k.count, k.example.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                (2, "connect 127.0.0.1:4001: refused"),
                (1, "HTTP 500: store")
            ]
        );
    }
}
