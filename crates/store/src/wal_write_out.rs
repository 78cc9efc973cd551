//! The WAL written out to disk a little at a time (file-backed SQLite only).
//!
//! With `synchronous = NORMAL` a commit writes its frames into the WAL file, that is into the
//! OS's page cache; they go to the disk when something `fsync`s the WAL, which used to be the
//! checkpointer alone, four times a second (`checkpoint.rs`). A commit at one request in flight
//! is ~12 frames, ~50 KB (each B-tree leaf it touches, whole), so every checkpoint's `fsync`
//! had ~60 MB of WAL to write (15–25 ms on the bench machine's disk); while it ran, the commits
//! on the request path waited in `pwrite` and for the CPU the write-back took, and the
//! requests of those milliseconds, every quarter of a second, took 1–4 ms instead of 0.17: the
//! p99 at C = 1 (docs/benchmarks.md, "Issue 18, fourteenth pass").
//!
//! So after a commit, a task of its own `fdatasync`s the WAL (on a blocking thread) [`EVERY`]
//! later: one write-out for all the commits of that interval, whose frames the kernel then
//! writes while the next ones come, and the checkpoint's `fsync` finds little left. It is
//! PostgreSQL's habit too (its WAL writer flushes on its own every `wal_writer_delay`). No
//! commit waits for a write-out, nothing runs while no write comes (an idle store stays idle),
//! and it only ever syncs *more* than SQLite does: a crash of the machine loses at most the
//! commits since the last write-out or checkpoint, instead of those since the last
//! checkpoint.
//!
//! The writer thread and its inline commits (`sqlite_writer.rs`) call [`WriteOut::wrote`]
//! after each commit; the other writes (sqlx's writer pool: keys, projects, connectors) are
//! rare and reach the disk with the next checkpoint, as before.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Notify, mpsc};

/// How long after a commit the WAL is written out: the commits of that interval share one
/// `fdatasync`. (At 5,000 requests a second, 20 ms is ~5 MB of WAL per write-out, against
/// ~60 MB per checkpoint without; 50 ms left a third of the stalls, 5 ms cost four times the
/// syncs for little more.)
pub(crate) const EVERY: Duration = Duration::from_millis(20);

/// A failed write-out is logged at most this often (it is retried after every interval with
/// commits; the checkpoint's own `fsync` would meet the same failure and report it to SQLite).
const WARN_EVERY: Duration = Duration::from_secs(60);

/// The handle the writer tells of its commits through. Cheap to clone; the task ends when the
/// last handle is dropped.
#[derive(Debug, Clone)]
pub(crate) struct WriteOut {
    wrote: Arc<Notify>,
    _alive: mpsc::Sender<()>,
    /// How many write-outs ran (tests).
    #[cfg(test)]
    written_out: Arc<std::sync::atomic::AtomicUsize>,
}

impl WriteOut {
    /// Starts the task on the current runtime for the database at `database` (its WAL is
    /// `{database}-wal`), writing out the WAL `every` after a commit.
    pub(crate) fn spawn(database: &Path, every: Duration) -> WriteOut {
        let wrote = Arc::new(Notify::new());
        let (alive, stopped) = mpsc::channel(1);
        let handle = WriteOut {
            wrote: Arc::clone(&wrote),
            _alive: alive,
            #[cfg(test)]
            written_out: Default::default(),
        };
        let task = Task {
            wal: wal_path(database),
            every,
            wrote,
            #[cfg(test)]
            written_out: Arc::clone(&handle.written_out),
        };
        tokio::spawn(task.run(stopped));
        handle
    }

    /// A commit wrote frames into the WAL: a write-out follows within [`EVERY`] (one for all
    /// the commits meanwhile). Never waits: at most stores a wake-up for the task.
    pub(crate) fn wrote(&self) {
        self.wrote.notify_one();
    }

    /// How many write-outs ran so far (tests).
    #[cfg(test)]
    pub(crate) fn written_out(&self) -> usize {
        self.written_out.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The WAL file of the database at `database`.
pub(crate) fn wal_path(database: &Path) -> PathBuf {
    let mut wal = database.as_os_str().to_owned();
    wal.push("-wal");
    PathBuf::from(wal)
}

struct Task {
    wal: PathBuf,
    every: Duration,
    wrote: Arc<Notify>,
    #[cfg(test)]
    written_out: Arc<std::sync::atomic::AtomicUsize>,
}

impl Task {
    async fn run(self, mut stopped: mpsc::Receiver<()>) {
        let mut warned: Option<Instant> = None;
        loop {
            tokio::select! {
                // A commit told before the last handle went is still written out.
                biased;
                _ = self.wrote.notified() => {}
                // `None`: every handle is gone.
                _ = stopped.recv() => break,
            }
            // The commits of the next interval join this write-out.
            let last = tokio::select! {
                _ = tokio::time::sleep(self.every) => false,
                _ = stopped.recv() => true,
            };
            if let Err(err) = self.write_out().await
                && warned.is_none_or(|at| at.elapsed() >= WARN_EVERY)
            {
                warned = Some(Instant::now());
                tracing::warn!(error = %err, "writing the SQLite WAL out to disk failed");
            }
            if last {
                break;
            }
        }
    }

    /// `fdatasync`s the WAL on a blocking thread. A WAL that is not there (the last connection
    /// closed and removed it) has nothing to write out.
    async fn write_out(&self) -> std::io::Result<()> {
        let wal = self.wal.clone();
        let synced = tokio::task::spawn_blocking(move || match std::fs::File::open(wal) {
            Ok(file) => file.sync_data(),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(err) => Err(err),
        })
        .await
        .map_err(std::io::Error::other)?;
        #[cfg(test)]
        self.written_out
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        synced
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Waits (bounded) until `write_out` has run at least `n` write-outs.
    pub(crate) async fn written_out(write_out: &WriteOut, n: usize) {
        for _ in 0..500 {
            if write_out.written_out() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "{} write-outs after 5 s, waited for {n}",
            write_out.written_out()
        );
    }

    fn wal_file(dir: &tempfile::TempDir) -> PathBuf {
        let database = dir.path().join("agentd.db");
        std::fs::write(wal_path(&database), b"frames").unwrap();
        database
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_commits_of_an_interval_share_one_write_out() {
        let dir = tempfile::tempdir().unwrap();
        let write_out = WriteOut::spawn(&wal_file(&dir), Duration::from_millis(100));
        for _ in 0..1000 {
            write_out.wrote();
        }
        written_out(&write_out, 1).await;
        // Commits told while the first write-out waited may make one more, never 1,000.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let after_burst = write_out.written_out();
        assert!(
            (1..=2).contains(&after_burst),
            "{after_burst} write-outs for one burst of commits"
        );
        // And later commits get theirs.
        write_out.wrote();
        written_out(&write_out, after_burst + 1).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn nothing_is_written_out_while_nothing_is_committed() {
        let dir = tempfile::tempdir().unwrap();
        let write_out = WriteOut::spawn(&wal_file(&dir), Duration::from_millis(10));
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(write_out.written_out(), 0, "an idle store stays idle");
        write_out.wrote();
        written_out(&write_out, 1).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(write_out.written_out(), 1, "one commit, one write-out");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_missing_wal_is_not_an_error_and_the_task_ends_with_its_handles() {
        let dir = tempfile::tempdir().unwrap();
        let task = Task {
            wal: wal_path(&dir.path().join("gone.db")),
            every: Duration::from_millis(10),
            wrote: Arc::new(Notify::new()),
            written_out: Default::default(),
        };
        task.write_out().await.unwrap();
        // A handle dropped while its write-out waits: the task writes out and ends.
        let counted = Arc::clone(&task.written_out);
        let (alive, stopped) = mpsc::channel(1);
        task.wrote.notify_one();
        let running = tokio::spawn(task.run(stopped));
        drop(alive);
        tokio::time::timeout(Duration::from_secs(5), running)
            .await
            .expect("the task ended")
            .unwrap();
        assert_eq!(
            counted.load(std::sync::atomic::Ordering::Relaxed),
            2,
            "the waiting write-out ran before the task ended"
        );
    }
}
