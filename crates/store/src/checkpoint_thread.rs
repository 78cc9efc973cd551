//! The threads the WAL checkpoints run on (file-backed SQLite): two `rusqlite` connections to
//! the store's file, each on a thread of its own, that run `PRAGMA wal_checkpoint` when the
//! checkpointer (`checkpoint.rs`) asks.
//!
//! A passive checkpoint copies the pages committed since the last one into the database file:
//! 3–4 ms of CPU every 250 ms at one request in flight on this project's 2-core machines. On
//! sqlx's connection thread it ran in the same scheduling class as the requests' threads, and
//! Linux let it finish its slice while a request's worker, woken on that core, waited to run:
//! one request stalled by a few milliseconds per checkpoint, most of the p99 at one request in
//! flight (docs/benchmarks.md, "Issue 18, seventeenth pass").
//!
//! So the periodic checkpoints run on a thread in Linux's **idle class** (`SCHED_IDLE`,
//! [`Class::Background`]): a thread of any other class that wants the core takes it at once.
//! A thread of that class can also wait for the CPU for as long as others want it, and no one
//! must wait on it: the checkpoints made with the group writer held at its gate (the catch-up,
//! the RESTART) run on the second thread, in the normal class ([`Class::Foreground`]), and so
//! do the periodic ones while they fall behind (the checkpointer decides). Where the class
//! cannot be set (another OS, a sandbox that refuses it) the thread stays in the normal class:
//! a warning, nothing else changes.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use engine::store::StoreError;
use rusqlite::Connection;
use tokio::sync::oneshot;

/// Which thread a checkpoint runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// The thread in the idle scheduling class: the periodic checkpoints.
    Background,
    /// The thread in the normal class: checkpoints someone waits for.
    Foreground,
}

/// A checkpoint mode of `PRAGMA wal_checkpoint`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mode {
    /// Copies what it can without waiting for anyone.
    Passive,
    /// Waits for writers and for readers of old snapshots, so the WAL restarts.
    Restart,
}

/// What one `PRAGMA wal_checkpoint` reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Whether the checkpoint could not finish (a lock was held).
    pub(crate) busy: bool,
    /// Pages in the WAL.
    pub(crate) wal_pages: i64,
    /// Pages of the WAL copied into the database file.
    pub(crate) checkpointed: i64,
}

/// The two threads; each ends once this handle is dropped (after the checkpoint it runs).
#[derive(Debug)]
pub(crate) struct CheckpointThreads {
    background: mpsc::Sender<Command>,
    foreground: mpsc::Sender<Command>,
}

/// One checkpoint to run, and where its outcome goes.
struct Command {
    mode: Mode,
    reply: oneshot::Sender<Result<Outcome, String>>,
}

impl CheckpointThreads {
    /// Opens the two connections to the database at `path` (created and migrated) and starts
    /// their threads.
    pub(crate) fn start(
        path: &Path,
        busy_timeout: Duration,
        journal_size_limit: i64,
    ) -> Result<CheckpointThreads, StoreError> {
        let open = || crate::sqlite_writer::open_connection(path, busy_timeout, journal_size_limit);
        Ok(CheckpointThreads {
            background: spawn(open()?, Class::Background)?,
            foreground: spawn(open()?, Class::Foreground)?,
        })
    }

    /// Runs `PRAGMA wal_checkpoint(mode)` on the thread of `class`.
    pub(crate) async fn checkpoint(&self, mode: Mode, class: Class) -> Result<Outcome, String> {
        let thread = match class {
            Class::Background => &self.background,
            Class::Foreground => &self.foreground,
        };
        let (reply, outcome) = oneshot::channel();
        thread
            .send(Command { mode, reply })
            .map_err(|_| "the checkpoint thread stopped".to_owned())?;
        outcome
            .await
            .map_err(|_| "the checkpoint thread stopped".to_owned())?
    }
}

/// The thread name of each class (tests find the threads by it).
fn thread_name(class: Class) -> &'static str {
    match class {
        Class::Background => "sqlite-ckpt-bg",
        Class::Foreground => "sqlite-ckpt",
    }
}

fn spawn(connection: Connection, class: Class) -> Result<mpsc::Sender<Command>, StoreError> {
    let (sender, commands) = mpsc::channel::<Command>();
    std::thread::Builder::new()
        .name(thread_name(class).to_owned())
        .spawn(move || {
            if class == Class::Background {
                enter_idle_class();
            }
            for command in commands {
                let _ = command.reply.send(run(&connection, command.mode));
            }
        })
        .map_err(|e| {
            StoreError::Backend(format!("cannot start the SQLite checkpoint thread: {e}"))
        })?;
    Ok(sender)
}

/// Puts the calling thread in the idle scheduling class (Linux's `SCHED_IDLE`); logs where it
/// cannot.
fn enter_idle_class() {
    use thread_priority::{
        NormalThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy,
        set_thread_priority_and_policy, thread_native_id,
    };
    // `Min` is the only priority of the idle class (0); the thread's niceness stays 0.
    if let Err(e) = set_thread_priority_and_policy(
        thread_native_id(),
        ThreadPriority::Min,
        ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle),
    ) {
        tracing::warn!(error = ?e, "the SQLite checkpoints run in the normal scheduling class: the idle class could not be set");
    }
}

fn run(connection: &Connection, mode: Mode) -> Result<Outcome, String> {
    let sql = match mode {
        Mode::Passive => "PRAGMA wal_checkpoint(PASSIVE)",
        Mode::Restart => "PRAGMA wal_checkpoint(RESTART)",
    };
    connection
        .query_row(sql, [], |row| {
            Ok(Outcome {
                busy: row.get::<_, i64>(0)? != 0,
                wal_pages: row.get(1)?,
                checkpointed: row.get(2)?,
            })
        })
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scheduling policy (`/proc`'s `policy` field: 0 normal, 5 idle) of each of this
    /// process's threads named `name`.
    fn policies_of_threads_named(name: &str) -> Vec<u32> {
        let mut policies = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").unwrap() {
            let task = task.unwrap().path();
            let Ok(comm) = std::fs::read_to_string(task.join("comm")) else {
                continue;
            };
            if comm.trim_end() != name {
                continue;
            }
            let Ok(stat) = std::fs::read_to_string(task.join("stat")) else {
                continue;
            };
            // The fields after the command's closing parenthesis; `policy` is field 41.
            let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
            policies.push(fields[41 - 3].parse().unwrap());
        }
        policies
    }

    #[tokio::test]
    async fn the_periodic_checkpoints_run_in_the_idle_class_and_the_waited_for_ones_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let setup = Connection::open(&path).unwrap();
        setup
            .execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER);")
            .unwrap();
        let threads = CheckpointThreads::start(&path, Duration::from_secs(5), 1 << 20).unwrap();
        for class in [Class::Background, Class::Foreground] {
            setup.execute("INSERT INTO t VALUES (1)", []).unwrap();
            let outcome = threads.checkpoint(Mode::Passive, class).await.unwrap();
            assert!(!outcome.busy, "{outcome:?}");
            assert!(outcome.wal_pages > 0, "{outcome:?}");
            assert_eq!(outcome.checkpointed, outcome.wal_pages, "{outcome:?}");
        }
        // Both threads have run a checkpoint, so the background one has set its class (the
        // other tests' stores have threads of the same names: all are looked at).
        if cfg!(target_os = "linux") {
            let idle = policies_of_threads_named("sqlite-ckpt-bg");
            assert!(
                !idle.is_empty() && idle.iter().all(|&p| p == 5),
                "SCHED_IDLE: {idle:?}"
            );
            let normal = policies_of_threads_named("sqlite-ckpt");
            assert!(
                !normal.is_empty() && normal.iter().all(|&p| p == 0),
                "SCHED_OTHER: {normal:?}"
            );
        }
        let outcome = threads.checkpoint(Mode::Restart, Class::Foreground).await;
        assert!(
            matches!(outcome, Ok(Outcome { busy: false, .. })),
            "{outcome:?}"
        );
        drop(threads);
    }
}
