//! Crash durability against the real `agentd` binary: kill -9 during background and foreground
//! runs, restart on the same data directory, and check that every run ends and finished ones are
//! intact. Also a graceful stop (SIGTERM) that lets a background run finish.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use testkit::mcp::{McpFixture, Transport};
use testkit::sse::Transcript;
use testkit::{FakeProvider, Reply};

const MODEL: &str = "openai/gpt-test";

/// A real agentd process.
struct Agentd {
    child: Child,
    base: String,
    client: reqwest::Client,
}

impl Agentd {
    fn spawn(data_dir: &Path, fake: &FakeProvider) -> Agentd {
        let config = data_dir.join("agentd.toml");
        std::fs::write(&config, "[runs]\nworkers = 2\nlease_secs = 3\n").unwrap();
        // Built before the child exists, so nothing below can leave a process behind.
        let client = testkit::http_client();
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentd"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .arg("--config")
            .arg(&config)
            .env("OPENAI_BASE_URL", fake.base_url())
            .env("OPENAI_API_KEY", "sk-durability-test")
            .env("RUST_LOG", "info,sqlx=warn")
            .env("AGENTD_ALLOW_PRIVATE_NETWORKS", "127.0.0.0/8")
            .stdout(Stdio::piped())
            .stderr(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(data_dir.join("agentd.log"))
                    .unwrap(),
            )
            .spawn()
            .expect("agentd starts");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .map(str::to_owned)
            .unwrap_or_else(|| {
                let log = std::fs::read_to_string(data_dir.join("agentd.log")).unwrap_or_default();
                unreachable!("agentd did not start (first stdout line {line:?}); its log:\n{log}")
            });
        Agentd {
            child,
            base: addr,
            client,
        }
    }

    async fn post(&self, body: Value) -> Value {
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

    async fn get(&self, id: &str) -> Value {
        self.client
            .get(format!("{}/v1/responses/{id}", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    async fn wait_terminal(&self, id: &str) -> Value {
        testkit::wait_terminal(&self.client, &self.base, id).await
    }

    fn kill_9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    fn terminate(mut self) -> std::process::ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.child.wait().unwrap()
    }
}

impl Drop for Agentd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A data directory for one test, removed when the test ends.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("agentd-{name}-{}", uuid_like()));
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

fn uuid_like() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

async fn wait_for_requests(fake: &FakeProvider, n: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while fake.requests().len() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {} upstream requests",
            fake.requests().len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_then_restart_ends_every_run_and_keeps_finished_ones() {
    let fake = FakeProvider::start().await;
    let dir = temp_dir("kill9");
    let agentd = Agentd::spawn(&dir.0, &fake);

    // Finished before the crash: an answer and a paused function call.
    fake.push(Reply::text("finished before the crash"));
    fake.push(Reply::tool_calls(vec![(
        "call_1",
        "lookup",
        r#"{"q":"x"}"#,
    )]));
    let done = agentd
        .post(json!({"model": MODEL, "input": "a", "background": true}))
        .await;
    let done = agentd.wait_terminal(done["id"].as_str().unwrap()).await;
    let tools = json!([{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]);
    let paused = agentd
        .post(json!({"model": MODEL, "input": "b", "tools": tools}))
        .await;
    assert_eq!(paused["output"][0]["type"], "function_call");

    // In flight at the crash: two claimed background runs, one queued, one foreground.
    let slow =
        || Reply::text_chunks(["never ", "finished"]).delay_between_chunks(Duration::from_secs(60));
    fake.push(slow());
    fake.push(slow());
    let running_1 = agentd
        .post(json!({"model": MODEL, "input": "c", "background": true}))
        .await;
    let running_2 = agentd
        .post(json!({"model": MODEL, "input": "d", "background": true}))
        .await;
    wait_for_requests(&fake, 4).await;
    let queued = agentd
        .post(json!({"model": MODEL, "input": "e", "background": true}))
        .await;
    fake.push(slow());
    let foreground = {
        let client = agentd.client.clone();
        let url = format!("{}/v1/responses", agentd.base);
        tokio::spawn(async move {
            let _ = client
                .post(url)
                .json(&json!({"model": MODEL, "input": "f", "stream": true}))
                .send()
                .await;
        })
    };
    wait_for_requests(&fake, 5).await;
    // Runs write their event log at least every 500 ms; let that happen once before the crash.
    tokio::time::sleep(Duration::from_millis(800)).await;
    agentd.kill_9();
    let _ = foreground.await;

    fake.push(Reply::text("the queued run ran after the restart"));
    fake.push(Reply::text("the function result arrived after the restart"));
    let agentd = Agentd::spawn(&dir.0, &fake);

    let after_queued = agentd.wait_terminal(queued["id"].as_str().unwrap()).await;
    assert_eq!(after_queued["status"], "completed", "{after_queued}");
    assert_eq!(
        after_queued["output"][0]["content"][0]["text"],
        "the queued run ran after the restart"
    );
    for lost in [&running_1, &running_2] {
        let id = lost["id"].as_str().unwrap();
        let ended = agentd.wait_terminal(id).await;
        assert_eq!(ended["status"], "failed", "{ended}");
        assert!(
            ended["error"]["message"]
                .as_str()
                .unwrap()
                .contains("server stopped")
        );
        // Its event log (flushed while the run went on) ends with the terminal event too, so a
        // resuming client stops.
        let raw = agentd
            .client
            .get(format!("{}/v1/responses/{id}?stream=true", agentd.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let log = Transcript::parse(&raw);
        assert_eq!(log.events[0]["type"], "response.created", "{raw}");
        assert_eq!(log.terminal()["type"], "response.failed", "{raw}");
    }
    assert_eq!(
        agentd.get(done["id"].as_str().unwrap()).await,
        done,
        "finished runs are intact"
    );
    assert_eq!(agentd.get(paused["id"].as_str().unwrap()).await, paused);

    // The paused function call is still answerable.
    let continued = agentd
        .post(json!({"model": MODEL, "tools": tools, "previous_response_id": paused["id"],
                     "input": [{"type": "function_call_output", "call_id": "call_1", "output": "42"}]}))
        .await;
    assert_eq!(continued["status"], "completed", "{continued}");
    assert_eq!(
        continued["output"][0]["content"][0]["text"],
        "the function result arrived after the restart"
    );
}

/// Starts a streamed foreground run whose upstream holds its second chunk for a minute;
/// returns its id once its first event is in (the connection is kept open).
async fn start_held_stream(agentd: &Agentd, fake: &FakeProvider) -> (String, reqwest::Response) {
    fake.push(Reply::text_chunks(["a", "b"]).delay_between_chunks(Duration::from_secs(60)));
    start_stream(agentd).await
}

/// Starts a streamed foreground run; returns its id once its first event is in.
async fn start_stream(agentd: &Agentd) -> (String, reqwest::Response) {
    let mut response = agentd
        .client
        .post(format!("{}/v1/responses", agentd.base))
        .json(&json!({"model": MODEL, "input": "?", "stream": true}))
        .send()
        .await
        .unwrap();
    let first = response.chunk().await.unwrap().unwrap();
    let first = Transcript::parse(
        std::str::from_utf8(&first)
            .unwrap()
            .split("\n\n")
            .next()
            .unwrap(),
    );
    let id = first.events[0]["response"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    (id, response)
}

/// The store's row of a response, read beside the running agentd: its status, or `None`.
async fn stored_status(db: &sqlx::SqlitePool, id: &str) -> Option<String> {
    sqlx::query_scalar("SELECT status FROM responses WHERE id = ?")
        .bind(id)
        .fetch_optional(db)
        .await
        .unwrap()
}

/// The data directory's store, opened beside the running agentd.
async fn open_store(dir: &Path) -> sqlx::SqlitePool {
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.join("agentd.db"))
        .busy_timeout(Duration::from_secs(10));
    sqlx::SqlitePool::connect_with(options).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_foreground_run_is_failed_at_the_next_start() {
    let fake = FakeProvider::start().await;
    let dir = temp_dir("foreground");
    let agentd = Agentd::spawn(&dir.0, &fake);
    let db = open_store(&dir.0).await;
    let (id, _response) = start_held_stream(&agentd, &fake).await;
    // A foreground run's row is written with its first flush (500 ms); the crash comes after.
    for _ in 0..100 {
        if stored_status(&db, &id).await.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        stored_status(&db, &id).await.as_deref(),
        Some("in_progress")
    );
    db.close().await;
    agentd.kill_9();

    let agentd = Agentd::spawn(&dir.0, &fake);
    let ended = agentd.get(&id).await;
    assert_eq!(
        ended["status"], "failed",
        "ended at start-up, before serving: {ended}"
    );
}

/// A foreground run killed before its first flush left nothing in the store (its row is
/// written by that flush or by its end, issue 18): after the restart it is not found, and
/// nothing of it is left in progress. The crash lost its first flush interval, as the
/// durability rule allows (at most the last flush interval of events, never a finished run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreground_run_killed_before_its_first_flush_is_not_found_after_the_restart() {
    let fake = FakeProvider::start().await;
    let dir = temp_dir("first-flush");
    let agentd = Agentd::spawn(&dir.0, &fake);
    // The upstream never answers: the run waits for its first turn, with no flush to come.
    fake.push(Reply::hang_before_headers());
    let (id, _response) = start_stream(&agentd).await;
    // Found while it runs (from memory: nothing is written yet).
    let running = agentd.get(&id).await;
    assert_eq!(running["status"], "in_progress", "{running}");
    agentd.kill_9();

    let agentd = Agentd::spawn(&dir.0, &fake);
    let response = agentd
        .client
        .get(format!("{}/v1/responses/{id}", agentd.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
}

/// A short foreground run writes its response row once, in one transaction with its events
/// (before issue 18's eighth pass: the in-progress row at start, then the final row); a run
/// longer than a flush interval has its row in the store while it runs. Counted by triggers
/// the test adds to the running agentd's store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_run_writes_its_row_once() {
    let fake = FakeProvider::start().await;
    let dir = temp_dir("one-write");
    let agentd = Agentd::spawn(&dir.0, &fake);
    let db = open_store(&dir.0).await;
    sqlx::raw_sql(
        "CREATE TABLE test_row_writes (id TEXT NOT NULL);
         CREATE TRIGGER test_row_insert AFTER INSERT ON responses
             BEGIN INSERT INTO test_row_writes VALUES (new.id); END;
         CREATE TRIGGER test_row_update AFTER UPDATE ON responses
             BEGIN INSERT INTO test_row_writes VALUES (new.id); END;",
    )
    .execute(&db)
    .await
    .unwrap();
    let row_writes = |id: String| {
        let db = db.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT count(*) FROM test_row_writes WHERE id = ?")
                .bind(id)
                .fetch_one(&db)
                .await
                .unwrap()
        }
    };

    fake.push(Reply::text("short"));
    let plain = agentd.post(json!({"model": MODEL, "input": "a"})).await;
    assert_eq!(plain["status"], "completed", "{plain}");
    let id = plain["id"].as_str().unwrap().to_owned();
    assert_eq!(row_writes(id.clone()).await, 1);
    assert_eq!(agentd.get(&id).await, plain);

    fake.push(Reply::text_chunks(["a ", "stream"]));
    let raw = agentd
        .client
        .post(format!("{}/v1/responses", agentd.base))
        .json(&json!({"model": MODEL, "input": "b", "stream": true}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let streamed = Transcript::parse(&raw);
    let id = streamed.terminal()["response"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(row_writes(id.clone()).await, 1);
    assert_eq!(stored_status(&db, &id).await.as_deref(), Some("completed"));

    // Longer than a flush interval: in the store, in progress, while it runs.
    let (id, _response) = start_held_stream(&agentd, &fake).await;
    let mut status = None;
    for _ in 0..100 {
        status = stored_status(&db, &id).await;
        if status.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status.as_deref(), Some("in_progress"));
    db.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_a_running_background_run_finish() {
    let fake = FakeProvider::start().await;
    let dir = temp_dir("sigterm");
    let agentd = Agentd::spawn(&dir.0, &fake);
    fake.push(
        Reply::text_chunks(["drained ", "in ", "time"])
            .delay_between_chunks(Duration::from_millis(400)),
    );
    let created = agentd
        .post(json!({"model": MODEL, "input": "?", "background": true}))
        .await;
    wait_for_requests(&fake, 1).await;
    let status = agentd.terminate();
    assert!(
        status.success(),
        "agentd exits cleanly on SIGTERM: {status}"
    );

    let agentd = Agentd::spawn(&dir.0, &fake);
    let ended = agentd.get(created["id"].as_str().unwrap()).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["output"][0]["content"][0]["text"], "drained in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_approval_is_continued_after_a_kill_9() {
    let dir = temp_dir("approval");
    let fake = FakeProvider::start().await;
    let fixture = McpFixture::start("annotated", Transport::StreamableHttp).await;
    let tool = json!({"type": "mcp", "server_label": "files", "server_url": fixture.url,
                      "require_approval": "always"});
    fake.push(Reply::tool_calls(vec![(
        "call_1",
        "files__delete_file",
        r#"{"path":"old.txt"}"#,
    )]));
    let agentd = Agentd::spawn(&dir.0, &fake);
    let paused = agentd
        .post(json!({"model": MODEL, "input": "delete old.txt", "tools": [tool.clone()]}))
        .await;
    assert_eq!(paused["status"], "requires_action", "{paused}");
    let request_id = paused["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "mcp_approval_request")
        .expect("an approval request")["id"]
        .clone();
    agentd.kill_9();

    let agentd = Agentd::spawn(&dir.0, &fake);
    assert_eq!(
        agentd.get(paused["id"].as_str().unwrap()).await["status"],
        "requires_action",
        "a paused response is not a crashed run"
    );
    fake.push(Reply::text("Deleted."));
    let done = agentd
        .post(json!({"model": MODEL, "previous_response_id": paused["id"], "tools": [tool],
                     "input": [{"type": "mcp_approval_response", "approval_request_id": request_id, "approve": true}]}))
        .await;
    assert_eq!(done["status"], "completed", "{done}");
    let call = done["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "mcp_call")
        .expect("the approved call ran");
    assert_eq!(call["approval_request_id"], request_id);
    assert_eq!(
        fixture.calls(),
        vec![("delete_file".to_owned(), json!({"path": "old.txt"}))]
    );
}
