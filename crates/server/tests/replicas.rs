//! Several real `agentd` processes (replicas) on one PostgreSQL database: any replica answers
//! for a run another executes (polled, streamed, cancelled within a second), a replica that dies loses its runs to the others after its
//! lease and nothing else, a replica that starts touches no other replica's runs, and
//! replicas starting together migrate once.
//!
//! PostgreSQL is found at `AGENTD_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); each test creates its own database and drops
//! it. An unreachable server fails the tests with a message saying so.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

mod pg_support;
mod replica_support;

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use replica_support::{Database, MODEL, Replica, inputs, launch, ready, spawn, wait_until};
use serde_json::json;
use testkit::sse::Transcript;
use testkit::{FakeProvider, Gate, Reply};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_run_on_one_replica_is_polled_streamed_and_cancelled_on_another() {
    let db = Database::create("poll-stream-cancel").await;
    let fake = FakeProvider::start().await;
    // A first delta, then the model stalls until the run is cancelled.
    fake.push(Reply::text("first ").then_hang());
    // Only A runs when the job is queued, so A executes it.
    let a = spawn(&db, "a", &fake, 2);
    let created = a
        .post(json!({"model": MODEL, "input": "long job", "background": true}))
        .await;
    let id = created["id"].as_str().unwrap().to_owned();
    wait_until("A to call the model", Duration::from_secs(20), || {
        fake.requests().len() == 1
    })
    .await;
    let b = spawn(&db, "b", &fake, 2);

    // Polled on B (a background run's stored status is `queued` until it ends).
    let polled = b.get(&id).await;
    assert!(
        ["queued", "in_progress"].contains(&polled["status"].as_str().unwrap()),
        "{polled}"
    );
    // Streamed on B: the stored events, then live ones as A flushes them.
    let (raw, stream) = b.stream(&id, None);
    let (raw_after, stream_after) = b.stream(&id, Some(1));
    wait_until(
        "B's stream to reach the first delta",
        Duration::from_secs(10),
        || raw.lock().unwrap().contains("response.output_text.delta"),
    )
    .await;
    assert!(
        !stream.is_finished(),
        "the stream on B follows the live run"
    );

    // Cancelled on B: A stops the run and the answer says so.
    let asked = Instant::now();
    let cancelled = b.cancel(&id).await;
    let took = asked.elapsed();
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert!(took < Duration::from_secs(2), "the cancel took {took:?}");

    tokio::time::timeout(Duration::from_secs(10), stream)
        .await
        .expect("B's stream ends with the run")
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), stream_after)
        .await
        .expect("B's resumed stream ends with the run")
        .unwrap();
    let log = Transcript::parse(&raw.lock().unwrap());
    log.assert_invariants();
    assert_eq!(log.terminal()["type"], "response.cancelled");
    let message = log
        .events
        .iter()
        .find(|e| e["type"] == "response.output_item.added")
        .expect("the message was started");
    assert_eq!(
        log.text_of(message["item"]["id"].as_str().unwrap()),
        "first "
    );
    let resumed = Transcript::parse(&raw_after.lock().unwrap());
    assert_eq!(
        resumed.events[0]["sequence_number"], 2,
        "starting_after=1 resumes at 2"
    );
    assert_eq!(
        resumed.events,
        log.events[2..].to_vec(),
        "the resumed stream is the tail of the full one"
    );
    assert_eq!(a.get(&id).await["status"], "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreground_run_on_one_replica_is_cancelled_from_another_within_a_second() {
    let db = Database::create("cancel-foreground").await;
    let fake = FakeProvider::start().await;
    // A first delta, then the model stalls until the run is cancelled.
    fake.push(Reply::text("first ").then_hang());
    let a = spawn(&db, "a", &fake, 2);
    let b = spawn(&db, "b", &fake, 2);
    let raw = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let stream = {
        let (client, url, sink) = (
            a.client.clone(),
            format!("{}/v1/responses", a.base),
            raw.clone(),
        );
        tokio::spawn(async move {
            let mut response = client
                .post(url)
                .json(&json!({"model": MODEL, "input": "long answer", "stream": true}))
                .send()
                .await
                .unwrap();
            while let Some(chunk) = response.chunk().await.unwrap() {
                sink.lock()
                    .unwrap()
                    .push_str(std::str::from_utf8(&chunk).unwrap());
            }
        })
    };
    wait_until(
        "A's stream to reach the first delta",
        Duration::from_secs(20),
        || raw.lock().unwrap().contains("response.output_text.delta"),
    )
    .await;
    let id = {
        let raw = raw.lock().unwrap().clone();
        Transcript::parse(raw.split("\n\n").next().unwrap()).events[0]["response"]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };

    // The cancel reaches B, the run executes on A: A's stream ends within a second.
    let asked = Instant::now();
    let cancel = {
        let (client, url) = (
            b.client.clone(),
            format!("{}/v1/responses/{id}/cancel", b.base),
        );
        tokio::spawn(async move {
            let answer: serde_json::Value =
                client.post(url).send().await.unwrap().json().await.unwrap();
            answer
        })
    };
    wait_until(
        "A's stream to end cancelled",
        Duration::from_secs(10),
        || raw.lock().unwrap().contains("response.cancelled"),
    )
    .await;
    let took = asked.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "the run stopped {took:?} after the cancel"
    );
    let answer = cancel.await.unwrap();
    assert_eq!(answer["status"], "cancelled", "{answer}");
    tokio::time::timeout(Duration::from_secs(10), stream)
        .await
        .expect("A's stream ends")
        .unwrap();
    let log = Transcript::parse(&raw.lock().unwrap());
    log.assert_invariants();
    assert_eq!(log.terminal()["type"], "response.cancelled");
    assert_eq!(b.get(&id).await["status"], "cancelled");
    assert_eq!(fake.requests().len(), 1, "the model was asked once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_replica_executing_background_runs_loses_none_and_runs_none_twice() {
    let db = Database::create("kill9-replicas").await;
    let fake = FakeProvider::start().await;
    let gate = Gate::new();
    for _ in 0..50 {
        fake.push(Reply::text("done").wait_for(&gate));
    }
    let a = spawn(&db, "a", &fake, 8);
    let mut ids = Vec::new();
    for n in 0..50 {
        let created = a
            .post(json!({"model": MODEL, "input": format!("run {n}"), "background": true}))
            .await;
        ids.push(created["id"].as_str().unwrap().to_owned());
    }
    wait_until("A to execute 8 runs", Duration::from_secs(20), || {
        fake.requests().len() == 8
    })
    .await;
    let b = spawn(&db, "b", &fake, 8);
    let c = spawn(&db, "c", &fake, 8);
    a.kill_9();
    gate.open();

    let mut statuses: HashMap<String, String> = HashMap::new();
    for id in &ids {
        let ended = b.wait_terminal(id).await;
        let status = ended["status"].as_str().unwrap().to_owned();
        if status == "failed" {
            assert!(
                ended["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("server stopped"),
                "{ended}"
            );
        } else {
            assert_eq!(status, "completed", "{ended}");
            assert_eq!(ended["output"][0]["content"][0]["text"], "done");
        }
        statuses.insert(id.clone(), status);
    }
    let failed = statuses.values().filter(|s| *s == "failed").count();
    assert_eq!(
        failed, 8,
        "exactly the runs A was executing failed: {statuses:?}"
    );
    // Every run reached the model exactly once: none lost, none run twice.
    let mut seen = inputs(&fake);
    assert_eq!(seen.len(), 50, "{seen:?}");
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 50, "a run reached the model twice");
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM jobs").await,
        0,
        "no job row is left"
    );
    drop(c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_starting_while_others_serve_does_not_touch_their_runs() {
    let db = Database::create("late-replica").await;
    let fake = FakeProvider::start().await;
    let gate = Gate::new();
    fake.push(Reply::text_chunks(["fore", "ground"]).wait_for(&gate));
    fake.push(Reply::text("background").wait_for(&gate));
    let a = spawn(&db, "a", &fake, 2);
    let (foreground_raw, foreground) = {
        let client = a.client.clone();
        let url = format!("{}/v1/responses", a.base);
        let raw = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = raw.clone();
        let task = tokio::spawn(async move {
            let mut response = client
                .post(url)
                .json(&json!({"model": MODEL, "input": "fg", "stream": true}))
                .send()
                .await
                .unwrap();
            while let Some(chunk) = response.chunk().await.unwrap() {
                sink.lock()
                    .unwrap()
                    .push_str(std::str::from_utf8(&chunk).unwrap());
            }
        });
        (raw, task)
    };
    wait_until(
        "A's foreground run to call the model",
        Duration::from_secs(20),
        || fake.requests().len() == 1,
    )
    .await;
    let background = a
        .post(json!({"model": MODEL, "input": "bg", "background": true}))
        .await;
    let background_id = background["id"].as_str().unwrap().to_owned();
    wait_until(
        "A's background run to call the model",
        Duration::from_secs(20),
        || fake.requests().len() == 2,
    )
    .await;
    let foreground_id = {
        let raw = foreground_raw.lock().unwrap().clone();
        Transcript::parse(raw.split("\n\n").next().unwrap()).events[0]["response"]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };

    // Two replicas start while A serves; longer than a lease passes.
    let b = spawn(&db, "b", &fake, 2);
    let c = spawn(&db, "c", &fake, 2);
    tokio::time::sleep(Duration::from_secs(4)).await;
    for id in [&foreground_id, &background_id] {
        let polled = c.get(id).await;
        assert!(
            ["queued", "in_progress"].contains(&polled["status"].as_str().unwrap()),
            "{id} was touched: {polled}"
        );
    }

    gate.open();
    foreground.await.unwrap();
    let log = Transcript::parse(&foreground_raw.lock().unwrap());
    log.assert_invariants();
    assert_eq!(log.terminal()["type"], "response.completed");
    assert_eq!(b.wait_terminal(&background_id).await["status"], "completed");
    assert_eq!(b.get(&foreground_id).await["status"], "completed");
    assert_eq!(fake.requests().len(), 2, "nothing ran twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_together_on_an_empty_database_migrate_once() {
    let db = Database::create("migrate-together").await;
    let fake = FakeProvider::start().await;
    let launched: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|name| launch(&db, name, &fake, 1))
        .collect();
    let replicas: Vec<Replica> = launched.into_iter().map(ready).collect();
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM _sqlx_migrations WHERE success")
            .await,
        db.scalar("SELECT COUNT(DISTINCT version) FROM _sqlx_migrations")
            .await,
    );
    // One row per migration the binary embeds (the files of the PostgreSQL folder).
    let embedded = std::fs::read_dir(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/migrations/postgres"),
    )
    .unwrap()
    .count();
    assert_eq!(
        db.scalar("SELECT COUNT(*) FROM _sqlx_migrations").await,
        i64::try_from(embedded).unwrap()
    );

    // `agentd migrate` against the migrated database has nothing left to do, twice at once.
    let migrate = || {
        Command::new(env!("CARGO_BIN_EXE_agentd"))
            .args(["migrate", "--database-url", &db.url, "--data-dir"])
            .arg(db.dir.join("migrate"))
            .output()
            .unwrap()
    };
    let (one, two) = std::thread::scope(|s| {
        let one = s.spawn(migrate);
        let two = s.spawn(migrate);
        (one.join().unwrap(), two.join().unwrap())
    });
    for out in [one, two] {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The local search index lives in the database too: `agentd index add` on any machine
    // fills the index every replica searches.
    let page = db.dir.join("page.md");
    std::fs::write(&page, "# Replicas\n\nEvery replica searches this page.\n").unwrap();
    let added = Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["index", "add", "--database-url", &db.url, "--data-dir"])
        .arg(db.dir.join("indexer"))
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    assert_eq!(db.scalar("SELECT COUNT(*) FROM search_documents").await, 1);
    for replica in &replicas {
        fake.push(Reply::text("served"));
        let answer = replica.post(json!({"model": MODEL, "input": "?"})).await;
        assert_eq!(answer["status"], "completed");
    }
}
