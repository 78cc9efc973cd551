//! Group commit: one writer task that runs the run-path writes of every concurrent run
//! (`put_response`, `start_run`, `append_events`, `end_run`, `insert_job`) in shared
//! transactions.
//!
//! SQLite has one writer at a time, and on the store's single write connection every
//! transaction costs its `BEGIN`, its `COMMIT` (the WAL frames of every page it touched) and
//! its hand-offs to sqlx's connection thread. Under load most of those pages are the same few
//! (the tail of the `events` and `responses` B-trees), so committing the writes of all runs
//! that are waiting at the same moment together costs little more than committing one.
//!
//! A write is a [`Script`] (`script.rs`): its statements and values, known before it runs.
//! Callers queue writes through a [`GroupWriter`] handle; who takes them depends on the back
//! end. A file-backed SQLite store's writer is a thread of its own owning a `rusqlite`
//! connection (`sqlite_writer.rs`), which runs each batch with SQLite's own calls and so costs
//! no hand-off per statement. PostgreSQL and an in-memory SQLite store keep the task here,
//! which runs a batch's scripts through a sqlx pool (`script_run.rs`): on SQLite the whole
//! batch, `BEGIN` to `COMMIT`, as one multi-statement query; on PostgreSQL statement by
//! statement. Both follow the rules below.
//!
//! The writer takes the first waiting write, then every write already queued behind it (up to
//! [`MAX_BATCH`]), and runs them in one transaction. The task here never waits to fill a
//! batch: with one request in flight a batch is that one write, and nothing is delayed (a
//! file-backed SQLite store's writer waits up to a millisecond for more only under load: many
//! runs executing and its writes meeting, `sqlite_writer.rs`). Each caller gets its answer
//! after the commit, so a write reported done is as durable as before.
//! A writer that can ([`Inline`]: a file-backed SQLite store's) commits a write on the
//! caller's thread instead while it is idle (nothing queued, nothing committing, the gate
//! free), as a batch of one: no hand-off at all.
//!
//! A write that fails must not take the others with it, nor leave half of itself behind: when
//! any write of a batch fails (or the commit does), the batch is rolled back and each of its
//! writes is run again alone, in its own transaction, exactly as without batching.
//!
//! The writer holds a [`Gate`] while it runs a batch. SQLite's checkpointer takes it for the
//! short moment it needs no commit to land (`checkpoint.rs`: catching the WAL up so that the
//! next commit starts it over); a batch then waits for it instead of SQLite's busy handler
//! sleeping on both sides.

use std::sync::Arc;

use engine::metrics::ActiveRuns;
use engine::store::StoreError;
use sqlx::Pool;
use tokio::sync::{mpsc, oneshot};

use crate::script::Script;
use crate::script_run::{HOLD_IDLE, Held, RunScripts};

/// Most writes committed in one transaction (bounds the transaction's size and the wait of the
/// first caller in it).
pub(crate) const MAX_BATCH: usize = 256;

/// Writes that may wait for the writer before callers are held back (back pressure).
const QUEUE: usize = 4096;

/// A write waiting for the writer, with where its outcome goes.
pub(crate) struct Queued {
    pub(crate) script: Script,
    done: oneshot::Sender<Result<(), StoreError>>,
}

impl Queued {
    /// Tells the caller how its write ended. The caller may have gone away (its request was
    /// dropped): a committed write stands all the same.
    pub(crate) fn answer(self, outcome: Result<(), StoreError>) {
        let _ = self.done.send(outcome);
    }
}

/// The writer's side of the queue: the writes waiting, and the gate it holds for each batch.
pub(crate) struct Queue {
    pub(crate) receiver: mpsc::Receiver<Queued>,
    pub(crate) gate: Gate,
}

/// Held by the writer for each batch; whoever else holds it keeps the writer from committing
/// meanwhile (it finishes the batch it is in first).
pub(crate) type Gate = Arc<tokio::sync::Mutex<()>>;

/// A writer that can commit a write at once on the caller's thread while it has nothing else
/// to do (a file-backed SQLite store's, `sqlite_writer.rs`).
pub(crate) trait Inline: Send + Sync {
    /// Commits `script` now, on this thread, in a transaction of its own, and returns its
    /// outcome; or gives it back untouched when that cannot be done at once (a write queued
    /// or committing, the gate or the connection held, a lock held elsewhere) or should not be
    /// (the writer gathering its batches under load): the caller then queues it.
    fn try_commit(&self, script: Script) -> Result<Result<(), StoreError>, Script>;

    /// Counts a write about to be queued; the writer uncounts it once it is committed (or has
    /// failed).
    fn queued(&self);

    /// A write counted by [`Inline::queued`] is in the queue now.
    fn sent(&self);

    /// The engine's count of runs executing now, which the writer goes by from now on.
    fn follow_active_runs(&self, runs: ActiveRuns);
}

/// The handle callers send writes through. Cheap to clone; the writer task ends when the last
/// handle is dropped.
#[derive(Clone)]
pub(crate) struct GroupWriter {
    /// Declared before `queue`, so dropped first: once the writer sees the last sender gone,
    /// no handle holds its connection any more.
    inline: Option<Arc<dyn Inline>>,
    queue: mpsc::Sender<Queued>,
    gate: Gate,
}

impl std::fmt::Debug for GroupWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupWriter").finish_non_exhaustive()
    }
}

impl GroupWriter {
    /// A handle and the queue behind it, for a writer that runs elsewhere (SQLite's writer
    /// thread, `sqlite_writer.rs`). The queue's receiver ends once every handle is dropped and
    /// every write queued before has been taken.
    pub(crate) fn new() -> (GroupWriter, Queue) {
        let (queue, receiver) = mpsc::channel(QUEUE);
        let gate = Gate::default();
        let writer = GroupWriter {
            inline: None,
            queue,
            gate: Arc::clone(&gate),
        };
        (writer, Queue { receiver, gate })
    }

    /// Starts the writer task on the current tokio runtime, writing through `pool`.
    pub(crate) fn spawn<DB: RunScripts>(pool: Pool<DB>) -> GroupWriter {
        GroupWriter::spawn_holding(pool, false)
    }

    /// [`GroupWriter::spawn`], the task keeping a connection of `pool` between batches that
    /// follow each other where `hold` (and the back end gains from it: `script_run::Held`).
    pub(crate) fn spawn_holding<DB: RunScripts>(pool: Pool<DB>, hold: bool) -> GroupWriter {
        let (writer, queue) = GroupWriter::new();
        tokio::spawn(run(pool, queue.receiver, queue.gate, Held::new(hold)));
        writer
    }

    /// This handle, committing through `inline` at once when it can (every clone made after).
    pub(crate) fn with_inline(mut self, inline: Arc<dyn Inline>) -> GroupWriter {
        self.inline = Some(inline);
        self
    }

    /// Has the writer go by the engine's count of runs executing now (an [`Inline`] writer's
    /// gathering, `sqlite_writer.rs`); the task writer here never waits to fill a batch and
    /// ignores it.
    pub(crate) fn follow_active_runs(&self, runs: ActiveRuns) {
        if let Some(inline) = &self.inline {
            inline.follow_active_runs(runs);
        }
    }

    /// The gate the writer holds while it runs a batch.
    pub(crate) fn gate(&self) -> Gate {
        Arc::clone(&self.gate)
    }

    /// Runs `script` in a transaction (shared with the other writes waiting at the same
    /// moment) and returns once that transaction is committed, or with the write's own error.
    ///
    /// With an [`Inline`] writer that is idle, the write is committed right here, on the
    /// caller's thread, before this returns (no hand-off to the writer and back); a caller
    /// dropped meanwhile cannot stop it halfway, since that commit never awaits.
    pub(crate) async fn write(&self, script: Script) -> Result<(), StoreError> {
        let script = match &self.inline {
            Some(inline) => match inline.try_commit(script) {
                Ok(outcome) => return outcome,
                Err(script) => script,
            },
            None => script,
        };
        let (done, outcome) = oneshot::channel();
        self.send(Queued { script, done }).await?;
        outcome.await.map_err(|_| stopped())?
    }

    /// Queues a write (waiting for room), counted by the inline writer from the moment it is
    /// in the queue: nothing between the two can be dropped.
    async fn send(&self, queued: Queued) -> Result<(), StoreError> {
        let permit = self.queue.reserve().await.map_err(|_| stopped())?;
        if let Some(inline) = &self.inline {
            inline.queued();
        }
        permit.send(queued);
        if let Some(inline) = &self.inline {
            inline.sent();
        }
        Ok(())
    }

    /// Queues `script` and returns where its outcome will come (tests: queue writes while the
    /// gate is held, so that they make one batch).
    #[cfg(test)]
    pub(crate) async fn enqueue(
        &self,
        script: Script,
    ) -> oneshot::Receiver<Result<(), StoreError>> {
        let (done, outcome) = oneshot::channel();
        let sent = self.send(Queued { script, done }).await;
        assert!(sent.is_ok(), "the writer has stopped");
        outcome
    }
}

fn stopped() -> StoreError {
    StoreError::Backend("the store's writer has stopped".to_owned())
}

/// The writer task: one batch at a time, until every handle is gone.
async fn run<DB: RunScripts>(
    pool: Pool<DB>,
    mut receiver: mpsc::Receiver<Queued>,
    gate: Gate,
    mut held: Held<DB>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    loop {
        // A connection kept from the last batch goes back to the pool once nothing came to
        // write for a while, or at once when the pool closes (its `close` waits for it).
        let received = if held.holds() {
            tokio::select! {
                received = receiver.recv_many(&mut batch, MAX_BATCH) => received,
                () = tokio::time::sleep(HOLD_IDLE) => {
                    held.release();
                    continue;
                }
                () = pool.close_event() => {
                    held.release();
                    continue;
                }
            }
        } else {
            receiver.recv_many(&mut batch, MAX_BATCH).await
        };
        if received == 0 {
            break;
        }
        let turn = gate.lock().await;
        // Writes that arrived while the gate was held join this batch.
        if batch.len() < MAX_BATCH {
            while let Ok(queued) = receiver.try_recv() {
                batch.push(queued);
                if batch.len() == MAX_BATCH {
                    break;
                }
            }
        }
        commit(&pool, &mut held, &mut batch).await;
        drop(turn);
        batch.clear();
    }
}

/// Runs a batch in one transaction; on any failure, each write again alone.
async fn commit<DB: RunScripts>(pool: &Pool<DB>, held: &mut Held<DB>, batch: &mut Vec<Queued>) {
    if batch.len() > 1 {
        let scripts: Vec<&Script> = batch.iter().map(|queued| &queued.script).collect();
        if DB::run(pool, held, &scripts).await.is_ok() {
            for queued in batch.drain(..) {
                queued.answer(Ok(()));
            }
            return;
        }
    }
    for queued in batch.drain(..) {
        let outcome = DB::run(pool, held, &[&queued.script]).await;
        queued.answer(outcome);
    }
}

#[cfg(test)]
mod tests {
    use sqlx::error::ErrorKind;
    use sqlx::sqlite::{
        SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
    };

    use super::*;

    /// A WAL database file with a one-connection writer pool, whose connection thread is named
    /// `{tag}-…`, and a separate reader pool (which sees committed rows only), and a table `t`
    /// holding the row 1000; in a temporary directory removed when the returned guard drops.
    async fn database(tag: &'static str) -> (tempfile::TempDir, SqlitePool, SqlitePool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("group-commit.db");
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal);
        // As the store's writer pool: no ping before each use.
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .test_before_acquire(false)
            .connect_with(options.clone().thread_name(move |id| format!("{tag}-{id}")))
            .await
            .unwrap();
        sqlx::query("CREATE TABLE t (n INTEGER PRIMARY KEY)")
            .execute(&writer)
            .await
            .unwrap();
        sqlx::query("INSERT INTO t (n) VALUES (1000)")
            .execute(&writer)
            .await
            .unwrap();
        let reader = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .unwrap();
        (dir, writer, reader)
    }

    /// Inserts `n`; when `fail`, then also the row 1000 again, which is refused.
    fn insert(n: i64, fail: bool) -> Script {
        let mut script = Script::new();
        script.statement("INSERT INTO t (n) VALUES ($1)").bind(n);
        if fail {
            script
                .statement("INSERT INTO t (n) VALUES ($1)")
                .bind(1000)
                .conflict_on(ErrorKind::UniqueViolation, format!("write {n} refused"));
        }
        script
    }

    /// Queues ten writes (the one at `failing`, if any, fails) while the gate is held, so that
    /// they make one batch, then releases the gate; the outcomes.
    async fn ten_queued_writes(
        writer: &GroupWriter,
        failing: Option<i64>,
    ) -> Vec<Result<(), StoreError>> {
        let held = writer.gate().lock_owned().await;
        let mut outcomes = Vec::new();
        for n in 0..10 {
            let (done, outcome) = oneshot::channel();
            let script = insert(n, Some(n) == failing);
            writer.queue.send(Queued { script, done }).await.unwrap();
            outcomes.push(outcome);
        }
        drop(held);
        let mut results = Vec::new();
        for outcome in outcomes {
            results.push(outcome.await.unwrap());
        }
        results
    }

    async fn rows(reader: &SqlitePool) -> Vec<i64> {
        sqlx::query_scalar("SELECT n FROM t ORDER BY n")
            .fetch_all(reader)
            .await
            .unwrap()
    }

    /// How often the threads named `{tag}-…` of this process have gone to sleep (voluntary
    /// context switches): each command sqlx sends a connection's thread wakes it once, and it
    /// sleeps again when done.
    #[cfg(target_os = "linux")]
    fn sleeps(tag: &str) -> u64 {
        let mut total = 0;
        for task in std::fs::read_dir("/proc/self/task").unwrap() {
            let dir = task.unwrap().path();
            let Ok(name) = std::fs::read_to_string(dir.join("comm")) else {
                continue;
            };
            if !name.starts_with(&format!("{tag}-")) {
                continue;
            }
            let status = std::fs::read_to_string(dir.join("status")).unwrap();
            total += status
                .lines()
                .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))
                .map(|n| n.trim().parse::<u64>().unwrap())
                .unwrap();
        }
        total
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_batch_is_one_hand_off_to_the_connection_thread() {
        let (_dir, pool, reader) = database("gc-batch").await;
        let writer = GroupWriter::spawn(pool);
        // Warm up (the statement prepared, the connection idle in the pool).
        writer.write(insert(-1, false)).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let before = sleeps("gc-batch");
        let outcomes = ten_queued_writes(&writer, None).await;
        assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
        // Let the pool's check of the returned connection (a ping: one command) finish.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let woken = sleeps("gc-batch") - before;
        // The batch's one query and the pool's ping. A round trip per statement (BEGIN and
        // COMMIT, ten inserts, the ping) sleeps 13 times or more.
        assert!(woken <= 3, "the connection's thread woke {woken} times");
        assert_eq!(
            rows(&reader).await,
            (-1..10).chain([1000]).collect::<Vec<_>>()
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_waits_while_the_gate_is_held() {
        let (_dir, pool, reader) = database("gc-gate").await;
        let writer = GroupWriter::spawn(pool);
        let held = writer.gate().lock_owned().await;
        let write = tokio::spawn({
            let writer = writer.clone();
            async move { writer.write(insert(1, false)).await }
        });
        // Time enough for the write to run if nothing held it back.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert_eq!(
            rows(&reader).await,
            vec![1000],
            "the write ran while the gate was held"
        );
        assert!(!write.is_finished());
        drop(held);
        write.await.unwrap().unwrap();
        assert_eq!(
            rows(&reader).await,
            vec![1, 1000],
            "the write is committed once the gate is free"
        );
    }

    #[tokio::test]
    async fn a_failing_write_fails_alone_and_leaves_nothing_behind() {
        let (_dir, pool, reader) = database("gc-fail").await;
        let writer = GroupWriter::spawn(pool.clone());
        let outcomes = ten_queued_writes(&writer, Some(4)).await;
        for (n, outcome) in outcomes.iter().enumerate() {
            if n == 4 {
                assert!(
                    matches!(outcome, Err(StoreError::Conflict(m)) if m == "write 4 refused"),
                    "write 4 fails with its own error: {outcome:?}"
                );
            } else {
                assert!(outcome.is_ok(), "write {n}: {outcome:?}");
            }
        }
        assert_eq!(
            rows(&reader).await,
            vec![0, 1, 2, 3, 5, 6, 7, 8, 9, 1000],
            "write 4's first insert is undone, every other write is committed"
        );
        // The connection went back to the pool outside any transaction: sqlx's own BEGIN
        // (which fails inside one) works on it.
        let tx = pool.begin().await.unwrap();
        tx.commit().await.unwrap();
        writer.write(insert(4, false)).await.unwrap();
        assert!(rows(&reader).await.contains(&4));
    }

    #[tokio::test]
    async fn a_write_failing_alone_leaves_no_transaction_open() {
        let (_dir, pool, reader) = database("gc-alone").await;
        let writer = GroupWriter::spawn(pool.clone());
        let outcome = writer.write(insert(7, true)).await;
        assert!(
            matches!(outcome, Err(StoreError::Conflict(_))),
            "{outcome:?}"
        );
        let tx = pool.begin().await.unwrap();
        tx.commit().await.unwrap();
        assert_eq!(
            rows(&reader).await,
            vec![1000],
            "nothing of the write is left"
        );
    }
}
