//! Soak and crash test against the real `agentd` binary: 200 background runs, each calling an
//! MCP tool once, while the server is killed with SIGKILL at seeded random moments and
//! restarted on the same data directory, round after round. Afterwards every run has ended
//! exactly once (a terminal status, and a stored event log that ends with exactly one terminal
//! event), none is lost or stuck, and the MCP server saw no run's call twice.
//!
//! The fake model answers by what each run has seen so far ([`FakeProvider::respond_with`]):
//! first a call of `soak__echo` with the run's own marker, then, once the tool's result is in
//! the transcript, the final text. The MCP server (the official Python SDK, behind a bearer
//! token) logs every call, so a call repeated after a restart would show up as two calls
//! carrying one marker. The token travels in each request's `authorization`, so the jobs of
//! queued runs hold it (sealed) across every crash; with `AGENTD_TEST_ARTIFACTS` set the data
//! directory and the server's log stay there for `scripts/scan-secrets`.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly"
)]

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use testkit::mcp::{McpFixture, Transport};
use testkit::sse::Transcript;
use testkit::{FakeProvider, Reply};

const MODEL: &str = "openai/gpt-soak";
/// Background runs in all.
const RUNS: usize = 200;
/// Crash-and-restart rounds; each submits `RUNS / ROUNDS` runs, then kills the server.
const ROUNDS: usize = 8;
/// The kill comes this long (at most) after a round's runs were accepted.
const MAX_KILL_DELAY_MS: u64 = 900;
/// Fixed, so a failure replays with the same kill points.
const SEED: u64 = 0x5eed_50a4_c0de_0013;
/// The MCP server's bearer token and the provider key: test secrets `scripts/scan-secrets`
/// looks for in everything the test leaves behind (scripts/test-secrets lists them).
const MCP_TOKEN: &str = "mcp-token-soak-test-2b7e61";
const PROVIDER_KEY: &str = "sk-provider-key-soak-test-9c04d3";

/// xorshift64*: deterministic kill points without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// A real agentd process on `dir`, its log appended to `dir/agentd.log`.
struct Agentd {
    child: Child,
    base: String,
}

impl Agentd {
    fn spawn(dir: &Path, fake: &FakeProvider) -> Agentd {
        let config = dir.join("agentd.toml");
        std::fs::write(&config, "[runs]\nworkers = 4\nlease_secs = 3\n").unwrap();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("agentd.log"))
            .unwrap();
        let data_dir = dir.join("data");
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentd"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(&data_dir)
            .arg("--config")
            .arg(&config)
            .env("OPENAI_BASE_URL", fake.base_url())
            .env("OPENAI_API_KEY", PROVIDER_KEY)
            // Debug, so the secrets scan reads more than the default level writes.
            .env(
                "RUST_LOG",
                "debug,sqlx=warn,hyper=info,hyper_util=info,h2=info,reqwest=info,rustls=info",
            )
            .env("NO_COLOR", "1")
            .env("AGENTD_ALLOW_PRIVATE_NETWORKS", "127.0.0.0/8")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("agentd starts");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let Some(addr) = line.trim().strip_prefix("listening on ") else {
            let log = std::fs::read_to_string(dir.join("agentd.log")).unwrap_or_default();
            let tail = &log[log.len().saturating_sub(4000)..];
            panic!("agentd did not start (first stdout line {line:?}); its log ends:\n{tail}");
        };
        Agentd {
            base: addr.to_owned(),
            child,
        }
    }

    fn kill_9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Agentd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The test's directory: under `AGENTD_TEST_ARTIFACTS` (kept for the secrets scan), else a
/// temporary one removed at the end.
struct WorkDir {
    path: PathBuf,
    keep: bool,
}

impl WorkDir {
    fn new() -> WorkDir {
        if let Some(path) = testkit::artifacts_dir("soak") {
            return WorkDir { path, keep: true };
        }
        let path = std::env::temp_dir().join(format!("agentd-soak-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        WorkDir { path, keep: false }
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// The run a model request belongs to: the marker in its user message.
fn marker(request: &Value) -> Option<String> {
    let text = request.to_string();
    let at = text.find("soak-run-")?;
    let digits: String = text[at + "soak-run-".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some(format!("soak-run-{digits}"))
}

/// The fake model: a tool call first, the answer once the tool's result is in.
fn reply(request: &Value) -> Reply {
    let Some(marker) = marker(request) else {
        return Reply::error(500, "soak: a request without a run marker");
    };
    let has_result = request["messages"]
        .as_array()
        .is_some_and(|messages| messages.iter().any(|m| m["role"] == "tool"));
    if has_result {
        Reply::text_chunks(["done ", marker.as_str()])
            .delay_between_chunks(Duration::from_millis(40))
    } else {
        let arguments = json!({ "text": marker }).to_string();
        Reply::tool_calls(vec![(
            &format!("call_{}", marker.replace('-', "_")),
            "soak__echo",
            &arguments,
        )])
        .delay_between_chunks(Duration::from_millis(40))
    }
}

async fn create(client: &reqwest::Client, base: &str, body: &Value) -> String {
    let response = client
        .post(format!("{base}/v1/responses"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "queued", "{body}");
    body["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_background_runs_survive_repeated_kill_9() {
    let started = std::time::Instant::now();
    let dir = WorkDir::new();
    let fake = FakeProvider::start().await;
    fake.respond_with(reply);
    let mcp = McpFixture::start_with_token("basic", Transport::StreamableHttp, MCP_TOKEN).await;
    let tools = json!([{
        "type": "mcp", "server_label": "soak", "server_url": mcp.url,
        "authorization": MCP_TOKEN, "require_approval": "never", "allowed_tools": ["echo"],
    }]);
    let client = testkit::http_client();
    let mut rng = Rng(SEED);

    // run id -> marker
    let mut runs: Vec<(String, String)> = Vec::with_capacity(RUNS);
    let mut agentd = Agentd::spawn(&dir.path, &fake);
    for round in 0..ROUNDS {
        for i in 0..RUNS / ROUNDS {
            let marker = format!("soak-run-{}", round * (RUNS / ROUNDS) + i);
            let body = json!({"model": MODEL, "input": format!("Echo {marker}."), "tools": tools,
                              "background": true});
            runs.push((create(&client, &agentd.base, &body).await, marker));
        }
        tokio::time::sleep(Duration::from_millis(rng.below(MAX_KILL_DELAY_MS))).await;
        agentd.kill_9();
        // Now and then a second kill soon after the restart, while recovery is under way.
        if rng.below(3) == 0 {
            let early = Agentd::spawn(&dir.path, &fake);
            tokio::time::sleep(Duration::from_millis(rng.below(200))).await;
            early.kill_9();
        }
        agentd = Agentd::spawn(&dir.path, &fake);
    }
    assert_eq!(runs.len(), RUNS);

    // Every run ends (those a dead worker held once its lease runs out), exactly once.
    let mut statuses: HashMap<String, usize> = HashMap::new();
    let mut completed = Vec::new();
    for (id, marker) in &runs {
        let ended = testkit::wait_terminal(&client, &agentd.base, id).await;
        let status = ended["status"].as_str().unwrap().to_owned();
        assert!(
            status == "completed" || status == "failed",
            "{marker}: {ended}"
        );
        let raw = client
            .get(format!("{}/v1/responses/{id}?stream=true", agentd.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let log = Transcript::parse(&raw);
        log.assert_invariants();
        assert_eq!(
            log.terminal()["type"],
            format!("response.{status}"),
            "{marker}: the event log ends otherwise than the response"
        );
        assert_eq!(log.terminal()["response"]["status"], status.as_str());
        if status == "completed" {
            let text = ended["output"]
                .as_array()
                .unwrap()
                .iter()
                .find(|item| item["type"] == "message")
                .map(|item| item["content"][0]["text"].clone());
            assert_eq!(text, Some(json!(format!("done {marker}"))), "{ended}");
            completed.push(marker.clone());
        } else {
            let message = ended["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("server stopped"), "{marker}: {ended}");
        }
        *statuses.entry(status).or_default() += 1;
    }

    // No call ran twice; every completed run's call ran once.
    let mut calls: HashMap<String, usize> = HashMap::new();
    for (tool, arguments) in mcp.calls() {
        assert_eq!(tool, "echo");
        *calls
            .entry(arguments["text"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    let repeated: Vec<_> = calls.iter().filter(|(_, n)| **n > 1).collect();
    assert!(repeated.is_empty(), "tool calls repeated: {repeated:?}");
    for marker in &completed {
        assert_eq!(
            calls.get(marker),
            Some(&1),
            "{marker} completed without its call"
        );
    }
    // Some runs were caught by a kill, and the crashes did not stop the rest.
    assert!(
        statuses.get("failed").is_some_and(|n| *n > 0),
        "{statuses:?}"
    );
    assert!(
        statuses.get("completed").is_some_and(|n| *n >= RUNS / 4),
        "{statuses:?}"
    );
    eprintln!(
        "soak: {statuses:?}, {} tool calls, {:.1}s",
        calls.values().sum::<usize>(),
        started.elapsed().as_secs_f64()
    );
}
