//! How often a request's writes wake sqlx's thread of the SQLite writer connection: each
//! command sent there (a statement, `BEGIN`, `COMMIT`, the pool's check of a returned
//! connection) wakes it once, and it goes back to sleep when done, so its voluntary context
//! switches (`/proc/self/task/TID/status`) count the hand-offs. The only test of this binary,
//! so that every sqlx thread of the process is this test's store's.

#![cfg(target_os = "linux")]

mod common;

use agentd_store::SqliteStore;
use common::{TempDir, TestResult, events};
use engine::store::{ItemKind, ResponseRecord, ResponseStore, StoredItem};
use serde_json::json;

/// sqlx's SQLite connection threads (`sqlx-sqlite-worker-N`, cut to 15 bytes by Linux).
const SQLX_THREAD: &str = "sqlx-sqlite-wor";

/// Voluntary context switches of the store's writer thread: the first sqlx thread started
/// (the store opens its writer connection first), so the one with the lowest thread id.
fn writer_sleeps() -> Result<u64, Box<dyn std::error::Error>> {
    let mut first: Option<(u64, std::path::PathBuf)> = None;
    for task in std::fs::read_dir("/proc/self/task")? {
        let dir = task?.path();
        if std::fs::read_to_string(dir.join("comm"))?.trim() != SQLX_THREAD {
            continue;
        }
        let tid: u64 = dir
            .file_name()
            .and_then(|name| name.to_str())
            .ok_or("thread id")?
            .parse()?;
        if first.as_ref().is_none_or(|(lowest, _)| tid < *lowest) {
            first = Some((tid, dir));
        }
    }
    let (_, dir) = first.ok_or("no sqlx thread")?;
    let status = std::fs::read_to_string(dir.join("status"))?;
    let switches = status
        .lines()
        .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))
        .ok_or("no voluntary_ctxt_switches")?;
    Ok(switches.trim().parse()?)
}

/// Voluntary context switches of every thread of the process (the test's tokio workers
/// included), for the record.
fn process_sleeps() -> Result<u64, Box<dyn std::error::Error>> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task")? {
        let status = std::fs::read_to_string(task?.path().join("status"))?;
        let switches = status
            .lines()
            .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))
            .ok_or("no voluntary_ctxt_switches")?;
        total += switches.trim().parse::<u64>()?;
    }
    Ok(total)
}

fn record(id: &str, status: &str) -> Result<ResponseRecord, serde_json::Error> {
    let item = |id: &str, kind| -> Result<StoredItem, serde_json::Error> {
        Ok(StoredItem {
            id: id.to_owned(),
            kind,
            item: engine::store::ItemJson::of(
                &json!({"type": "message", "id": id, "role": "user", "content": id}),
            )?,
        })
    };
    Ok(ResponseRecord {
        id: id.to_owned(),
        project_id: "proj_a".to_owned(),
        created_at: 1_700_000_000,
        visible: true,
        response: common::response(id, status)?,
        transcript: Vec::new(),
        conversation_id: None,
        items: vec![
            item(&format!("msg_in_{id}"), ItemKind::Input)?,
            item(&format!("msg_out_{id}"), ItemKind::Output)?,
        ],
        append_to: None,
        turns: Vec::new(),
        response_json: None,
        transcript_prefix: None,
    })
}

/// The writes of one non-streaming request: its record at the start, and its end (71 events,
/// the final record, two items, its job removed).
async fn request(store: &SqliteStore, n: usize) -> TestResult {
    let id = format!("resp_{n}");
    store.put_response(&record(&id, "in_progress")?).await?;
    store
        .end_run(&record(&id, "completed")?, &events(0..71))
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_s_writes_are_one_hand_off_each() -> TestResult {
    const REQUESTS: usize = 200;
    let dir = TempDir::new();
    let store = SqliteStore::open(&dir.0).await?;
    for n in 0..20 {
        request(&store, n).await?;
    }
    // The pool checks a returned connection in a task of its own: let the last one finish.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let before = writer_sleeps()?;
    let process_before = process_sleeps()?;
    for n in 20..20 + REQUESTS {
        request(&store, n).await?;
    }
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let per_request = (writer_sleeps()? - before) as f64 / REQUESTS as f64;
    let process = (process_sleeps()? - process_before) as f64 / REQUESTS as f64;
    println!(
        "per request: writer thread wake-ups {per_request:.2}, all threads {process:.2} \
         (including the 50 ms pauses)"
    );
    // Two writes, each one query and the pool's check of the connection afterwards. A round
    // trip per statement (BEGIN, each statement, COMMIT) measured 9.9 to 13.6.
    assert!(
        per_request <= 5.0,
        "{per_request} wake-ups of the writer thread per request"
    );
    Ok(())
}
