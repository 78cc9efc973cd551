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
//! So the periodic checkpoints run on a thread that enters Linux's **idle class** (`SCHED_IDLE`,
//! [`Class::Background`]) for each checkpoint: a thread of any other class that wants the core
//! takes it at once. A thread of that class can also wait for the CPU for as long as others
//! want it, and no one must wait on it: the checkpoints made with the group writer held at its
//! gate (the catch-up, the RESTART) run on the second thread, in the normal class
//! ([`Class::Foreground`]), and so do the periodic ones while they fall behind (the
//! checkpointer decides). Where the class cannot be set (another OS, a sandbox that refuses
//! it) the thread stays in the normal class: a warning, nothing else changes.
//!
//! Between checkpoints the thread is back in the normal class, at its own niceness: a process
//! ends only once each of its threads has run its exit, and a thread left in the idle class
//! got a core for that only when nothing else wanted one. Under a load that took both cores
//! agentd then took seconds to end (6.5–7.3 s against 0.08–0.15 s with 32 busy threads, after
//! `SIGTERM` or `SIGKILL`; after `SIGKILL` its port stayed bound meanwhile), and a test's
//! servers under its own load, minutes (docs/benchmarks.md, "Issue 18, twentieth pass").

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
            let mut idle = match class {
                Class::Background => Some(IdleClass::new()),
                Class::Foreground => None,
            };
            for command in commands {
                let outcome = match &mut idle {
                    Some(idle) => idle.run(|| run(&connection, command.mode)),
                    None => run(&connection, command.mode),
                };
                let _ = command.reply.send(outcome);
            }
        })
        .map_err(|e| {
            StoreError::Backend(format!("cannot start the SQLite checkpoint thread: {e}"))
        })?;
    Ok(sender)
}

/// Linux's idle scheduling class for the calling thread, entered for one piece of work at a
/// time (see the module's documentation).
struct IdleClass {
    /// The thread's niceness in the normal class, given back when it leaves the idle class.
    nice: i32,
    /// Cleared once the class could not be entered (logged once).
    available: bool,
}

impl IdleClass {
    fn new() -> IdleClass {
        IdleClass {
            nice: rustix::process::getpriority_process(None).unwrap_or(0),
            available: true,
        }
    }

    /// Runs `work` with the calling thread in the idle class, and puts it back in the normal
    /// class at its niceness after.
    fn run<T>(&mut self, work: impl FnOnce() -> T) -> T {
        use thread_priority::NormalThreadSchedulePolicy::{Idle, Other};
        if !self.available {
            return work();
        }
        // `Min` is the only priority of the idle class (0).
        if let Err(error) = set_policy(Idle, thread_priority::ThreadPriority::Min) {
            // Not in the idle class: nothing to leave, now or later.
            self.available = false;
            tracing::warn!(%error, "the SQLite checkpoints run in the normal scheduling class: the idle class could not be set");
            return work();
        }
        let result = work();
        // Priority 0 of the normal class, then the niceness the thread had.
        let left = set_policy(
            Other,
            thread_priority::ThreadPriority::Os(Default::default()),
        )
        .and_then(|()| {
            rustix::process::setpriority_process(None, self.nice)
                .map_err(|err| format!("niceness {}: {err}", self.nice))
        });
        if let Err(error) = left {
            tracing::warn!(%error, "the SQLite checkpoint thread could not leave the idle scheduling class");
        }
        result
    }
}

/// Sets the calling thread's scheduling policy (and, the library's way, a niceness with it);
/// `Ok` when the thread is in `policy` after, whatever became of the niceness.
fn set_policy(
    policy: thread_priority::NormalThreadSchedulePolicy,
    priority: thread_priority::ThreadPriority,
) -> Result<(), String> {
    use thread_priority::{ThreadSchedulePolicy, set_thread_priority_and_policy, thread_native_id};
    let wanted = ThreadSchedulePolicy::Normal(policy);
    let set = set_thread_priority_and_policy(thread_native_id(), priority, wanted);
    match thread_priority::thread_schedule_policy() {
        Ok(now) if now == wanted => Ok(()),
        now => Err(format!("{set:?}, the policy now {now:?}")),
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

    /// The scheduling policy (`/proc`'s `policy` field: 0 normal, 5 idle) and niceness of a
    /// thread's `stat`.
    fn policy_and_nice(stat: &str) -> (u32, i32) {
        // The fields after the command's closing parenthesis (the third field on); `nice` is
        // field 19, `policy` field 41.
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        (
            fields[41 - 3].parse().unwrap(),
            fields[19 - 3].parse().unwrap(),
        )
    }

    /// The policy and niceness of each of this process's threads named `name`.
    fn threads_named(name: &str) -> Vec<(u32, i32)> {
        let mut found = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").unwrap() {
            let task = task.unwrap().path();
            let Ok(comm) = std::fs::read_to_string(task.join("comm")) else {
                continue;
            };
            if comm.trim_end() != name {
                continue;
            }
            if let Ok(stat) = std::fs::read_to_string(task.join("stat")) {
                found.push(policy_and_nice(&stat));
            }
        }
        found
    }

    /// The calling thread's policy and niceness.
    fn own_policy_and_nice() -> (u32, i32) {
        policy_and_nice(&std::fs::read_to_string("/proc/thread-self/stat").unwrap())
    }

    #[test]
    fn a_thread_is_in_the_idle_class_for_its_work_only_and_keeps_its_niceness() {
        if !cfg!(target_os = "linux") {
            return;
        }
        // On a thread of its own: the test changes the niceness of the thread it runs on.
        std::thread::spawn(|| {
            rustix::process::setpriority_process(None, 5).unwrap();
            assert_eq!(own_policy_and_nice(), (0, 5));
            let mut idle = IdleClass::new();
            for _ in 0..2 {
                let during = idle.run(own_policy_and_nice);
                assert_eq!(during.0, 5, "SCHED_IDLE while it works: {during:?}");
                assert_eq!(
                    own_policy_and_nice(),
                    (0, 5),
                    "normal class, niceness 5 after"
                );
            }
        })
        .join()
        .unwrap();
    }

    #[tokio::test]
    async fn the_periodic_checkpoints_run_on_the_thread_that_leaves_the_idle_class_after_each() {
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
        // Between checkpoints both threads are in the normal class: a thread in the idle
        // class would hold up the process's exit under load. Other tests' stores have threads
        // of the same names and may be in a checkpoint right now: looked at until none is
        // (bounded); this store's thread is idle-class only if it never left the class.
        if cfg!(target_os = "linux") {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let background = threads_named("sqlite-ckpt-bg");
                let foreground = threads_named("sqlite-ckpt");
                let normal = |found: &[(u32, i32)]| found.iter().all(|&(policy, _)| policy == 0);
                if !background.is_empty() && normal(&background) && normal(&foreground) {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "SCHED_OTHER between checkpoints: {background:?} {foreground:?}"
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        let outcome = threads.checkpoint(Mode::Restart, Class::Foreground).await;
        assert!(
            matches!(outcome, Ok(Outcome { busy: false, .. })),
            "{outcome:?}"
        );
        drop(threads);
    }
}
