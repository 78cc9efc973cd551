//! What the replica tests share: a PostgreSQL database per test, real `agentd` processes
//! (replicas) serving it, and waits.
//!
//! PostgreSQL is found at `AGENTD_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); each test creates its own database and drops
//! it. An unreachable server fails the tests with a message saying so.

#![allow(dead_code, reason = "each test binary uses its part")]

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::pg_support::PgDatabase;
use serde_json::Value;
use testkit::FakeProvider;

pub const MODEL: &str = "openai/gpt-test";

/// A database of one test (dropped, connections and all, at the end) and a directory for the
/// replicas' data directories and logs.
pub struct Database {
    db: PgDatabase,
    pub url: String,
    pub dir: PathBuf,
}

impl Database {
    pub async fn create(test: &str) -> Database {
        let db = PgDatabase::create("agentd_replicas").await;
        let dir = std::env::temp_dir().join(format!("agentd-{test}-{}", db.name()));
        std::fs::create_dir_all(&dir).unwrap();
        Database {
            url: db.url.clone(),
            db,
            dir,
        }
    }

    pub async fn scalar(&self, sql: &str) -> i64 {
        self.db.scalar(sql).await
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        unmount_under(&self.dir);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Unmounts (lazily) the sandbox workspace file systems a killed replica left mounted under
/// `dir` (agentd running as root mounts one per workspace), so the directory can be removed.
pub fn unmount_under(dir: &Path) {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    for line in mounts.lines() {
        let Some(point) = line.split(' ').nth(1) else {
            continue;
        };
        if Path::new(point).starts_with(dir) {
            let _ = Command::new("umount").args(["-l", point]).status();
        }
    }
}

/// A real agentd process serving the test's database.
pub struct Replica {
    child: Child,
    pub base: String,
    pub client: reqwest::Client,
}

/// Starts a replica without waiting for it (so several can start at once).
pub fn launch(db: &Database, name: &str, fake: &FakeProvider, workers: usize) -> (Child, PathBuf) {
    launch_with(&db.dir, Some(&db.url), name, fake, workers, "")
}

/// Starts an agentd process with its data directory `<dir>/<name>`, on the PostgreSQL
/// database `url` (`None`: the data directory's SQLite store), with `extra` appended to its
/// configuration file.
pub fn launch_with(
    dir: &Path,
    url: Option<&str>,
    name: &str,
    fake: &FakeProvider,
    workers: usize,
    extra: &str,
) -> (Child, PathBuf) {
    let data_dir = dir.join(name);
    std::fs::create_dir_all(&data_dir).unwrap();
    let config = data_dir.join("agentd.toml");
    std::fs::write(
        &config,
        format!("[runs]\nworkers = {workers}\nlease_secs = 3\n{extra}"),
    )
    .unwrap();
    let log = data_dir.join("agentd.log");
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentd"));
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data_dir)
        .arg("--config")
        .arg(&config)
        .env_remove("AGENTD_CONFIG");
    match url {
        Some(url) => command.env("AGENTD_DATABASE_URL", url),
        None => command.env_remove("AGENTD_DATABASE_URL"),
    };
    let child = command
        .env("OPENAI_BASE_URL", fake.base_url())
        .env("OPENAI_API_KEY", "sk-replicas-test")
        .env("RUST_LOG", "info,sqlx=warn")
        .env("AGENTD_ALLOW_PRIVATE_NETWORKS", "127.0.0.0/8")
        .stdout(Stdio::piped())
        .stderr(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .unwrap(),
        )
        .spawn()
        .expect("agentd starts");
    (child, log)
}

/// Waits for a launched replica to listen.
pub fn ready((mut child, log): (Child, PathBuf)) -> Replica {
    let client = testkit::http_client();
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .map(str::to_owned)
        .unwrap_or_else(|| {
            let _ = child.kill();
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            unreachable!("agentd did not start (first stdout line {line:?}); its log:\n{log}")
        });
    Replica {
        child,
        base,
        client,
    }
}

pub fn spawn(db: &Database, name: &str, fake: &FakeProvider, workers: usize) -> Replica {
    ready(launch(db, name, fake, workers))
}

impl Replica {
    pub async fn post(&self, body: Value) -> Value {
        let response = self
            .client
            .post(format!("{}/v1/responses", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        response.json().await.unwrap()
    }

    pub async fn get(&self, id: &str) -> Value {
        self.client
            .get(format!("{}/v1/responses/{id}", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    pub async fn cancel(&self, id: &str) -> Value {
        self.client
            .post(format!("{}/v1/responses/{id}/cancel", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    pub async fn wait_terminal(&self, id: &str) -> Value {
        testkit::wait_terminal(&self.client, &self.base, id).await
    }

    /// Follows `GET …?stream=true[&starting_after=N]` in a task; the raw SSE text so far is in
    /// the returned buffer, and the task ends with the stream.
    pub fn stream(
        &self,
        id: &str,
        starting_after: Option<u64>,
    ) -> (
        std::sync::Arc<std::sync::Mutex<String>>,
        tokio::task::JoinHandle<()>,
    ) {
        let mut url = format!("{}/v1/responses/{id}?stream=true", self.base);
        if let Some(n) = starting_after {
            url.push_str(&format!("&starting_after={n}"));
        }
        let raw = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (client, sink) = (self.client.clone(), raw.clone());
        let task = tokio::spawn(async move {
            let mut response = client.get(url).send().await.unwrap();
            assert_eq!(response.status().as_u16(), 200);
            while let Some(chunk) = response.chunk().await.unwrap() {
                sink.lock()
                    .unwrap()
                    .push_str(std::str::from_utf8(&chunk).unwrap());
            }
        });
        (raw, task)
    }

    pub fn kill_9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub async fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The `input` text of every model request the fake received.
pub fn inputs(fake: &FakeProvider) -> Vec<String> {
    fake.requests()
        .iter()
        .map(|r| {
            r["messages"]
                .as_array()
                .and_then(|m| m.last())
                .map(|m| m["content"].to_string())
                .unwrap_or_default()
        })
        .collect()
}
