//! Group commit: one writer task that runs the run-path writes of every concurrent run
//! (`put_response`, `append_events`, `end_run`) in shared transactions.
//!
//! SQLite has one writer at a time, and on the store's single write connection every
//! transaction costs its `BEGIN`, its `COMMIT` (the WAL frames of every page it touched) and a
//! round trip to sqlx's connection thread for each. Under load most of those pages are the same
//! few (the tail of the `events` and `responses` B-trees), so committing the writes of all runs
//! that are waiting at the same moment together costs little more than committing one.
//!
//! The writer takes the first waiting write, then every write already queued behind it (up to
//! [`MAX_BATCH`]), and runs them in one transaction. It never waits to fill a batch: with one
//! request in flight a batch is that one write, and nothing is delayed. Each caller gets its
//! answer after the commit, so a write reported done is as durable as before.
//!
//! A write that fails must not take the others with it, nor leave half of itself behind: when
//! any write of a batch fails (or the commit does), the batch is rolled back and each of its
//! writes is run again alone, in its own transaction, exactly as without batching.
//!
//! The writer holds a [`Gate`] while it runs a batch. SQLite's checkpointer takes it for the
//! short moment it needs no commit to land (`checkpoint.rs`: catching the WAL up so that the
//! next commit starts it over); a batch then waits for it instead of SQLite's busy handler
//! sleeping on both sides.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use engine::store::StoreError;
use sqlx::{Database, Pool, Transaction};
use tokio::sync::{mpsc, oneshot};

use crate::error;

/// Most writes committed in one transaction (bounds the transaction's size and the wait of the
/// first caller in it).
pub(crate) const MAX_BATCH: usize = 256;

/// Writes that may wait for the writer before callers are held back (back pressure).
const QUEUE: usize = 4096;

/// What a write does inside the transaction the writer opens. `FnMut` because a write of a
/// failed batch runs again alone: it owns (or shares) its data and may be called twice.
pub(crate) type Op<DB> = Box<
    dyn for<'t> FnMut(
            &'t mut Transaction<'static, DB>,
        ) -> Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + 't>>
        + Send,
>;

/// A write waiting for the writer, with where its outcome goes.
struct Queued<DB: Database> {
    op: Op<DB>,
    done: oneshot::Sender<Result<(), StoreError>>,
}

/// Held by the writer for each batch; whoever else holds it keeps the writer from committing
/// meanwhile (it finishes the batch it is in first).
pub(crate) type Gate = Arc<tokio::sync::Mutex<()>>;

/// The handle callers send writes through. Cheap to clone; the writer task ends when the last
/// handle is dropped.
pub(crate) struct GroupWriter<DB: Database> {
    queue: mpsc::Sender<Queued<DB>>,
    gate: Gate,
}

impl<DB: Database> Clone for GroupWriter<DB> {
    fn clone(&self) -> Self {
        GroupWriter {
            queue: self.queue.clone(),
            gate: Arc::clone(&self.gate),
        }
    }
}

impl<DB: Database> std::fmt::Debug for GroupWriter<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupWriter").finish_non_exhaustive()
    }
}

impl<DB: Database> GroupWriter<DB> {
    /// Starts the writer task on the current tokio runtime, writing through `pool`.
    pub(crate) fn spawn(pool: Pool<DB>) -> GroupWriter<DB> {
        let (queue, receiver) = mpsc::channel(QUEUE);
        let gate = Gate::default();
        tokio::spawn(run(pool, receiver, Arc::clone(&gate)));
        GroupWriter { queue, gate }
    }

    /// The gate the writer holds while it runs a batch.
    pub(crate) fn gate(&self) -> Gate {
        Arc::clone(&self.gate)
    }

    /// Runs `op` in a transaction (shared with the other writes waiting at the same moment) and
    /// returns once that transaction is committed, or with the write's own error.
    pub(crate) async fn write(&self, op: Op<DB>) -> Result<(), StoreError> {
        let (done, outcome) = oneshot::channel();
        self.queue
            .send(Queued { op, done })
            .await
            .map_err(|_| stopped())?;
        outcome.await.map_err(|_| stopped())?
    }
}

fn stopped() -> StoreError {
    StoreError::Backend("the store's writer has stopped".to_owned())
}

/// The writer task: one batch at a time, until every handle is gone.
async fn run<DB: Database>(pool: Pool<DB>, mut receiver: mpsc::Receiver<Queued<DB>>, gate: Gate) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while receiver.recv_many(&mut batch, MAX_BATCH).await > 0 {
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
        commit(&pool, &mut batch).await;
        drop(turn);
        batch.clear();
    }
}

/// Runs a batch in one transaction; on any failure, each write again alone.
async fn commit<DB: Database>(pool: &Pool<DB>, batch: &mut Vec<Queued<DB>>) {
    if batch.len() > 1 && together(pool, batch).await.is_ok() {
        for queued in batch.drain(..) {
            // The caller may have gone away (its request was dropped): the write stands.
            let _ = queued.done.send(Ok(()));
        }
        return;
    }
    for mut queued in batch.drain(..) {
        let outcome = alone(pool, &mut queued.op).await;
        let _ = queued.done.send(outcome);
    }
}

/// Every write of the batch in one transaction; `Err` (rolled back) if any failed.
async fn together<DB: Database>(pool: &Pool<DB>, batch: &mut [Queued<DB>]) -> Result<(), ()> {
    let mut tx = pool.begin().await.map_err(|_| ())?;
    for queued in batch.iter_mut() {
        if (queued.op)(&mut tx).await.is_err() {
            // Dropping the transaction rolls it back.
            return Err(());
        }
    }
    tx.commit().await.map_err(|_| ())
}

/// One write in its own transaction.
async fn alone<DB: Database>(pool: &Pool<DB>, op: &mut Op<DB>) -> Result<(), StoreError> {
    let mut tx = pool.begin().await.map_err(error::backend)?;
    op(&mut tx).await?;
    tx.commit().await.map_err(error::backend)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use sqlx::Sqlite;
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
    use tokio::sync::Notify;

    use super::*;

    /// A WAL database file with a one-connection writer pool and a separate reader pool (which
    /// sees committed rows only), and a table `t`.
    async fn database() -> (SqlitePool, SqlitePool, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!(
            "agentd-group-commit-{}.db",
            uuid::Uuid::new_v4().simple()
        ));
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal);
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await
            .unwrap();
        sqlx::query("CREATE TABLE t (n INTEGER PRIMARY KEY)")
            .execute(&writer)
            .await
            .unwrap();
        let reader = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .unwrap();
        (writer, reader, path)
    }

    /// Inserts `n`, then records how many rows another connection sees committed; fails after
    /// its insert when `fail`. Counts its runs.
    fn insert(
        n: i64,
        fail: bool,
        reader: SqlitePool,
        seen: Arc<std::sync::Mutex<Vec<(i64, i64)>>>,
        runs: Arc<AtomicUsize>,
    ) -> Op<Sqlite> {
        Box::new(move |tx| {
            let reader = reader.clone();
            let seen = Arc::clone(&seen);
            runs.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                sqlx::query("INSERT INTO t (n) VALUES ($1)")
                    .bind(n)
                    .execute(&mut **tx)
                    .await
                    .map_err(error::backend)?;
                let committed: i64 = sqlx::query_scalar("SELECT count(*) FROM t")
                    .fetch_one(&reader)
                    .await
                    .map_err(error::backend)?;
                seen.lock().unwrap().push((n, committed));
                if fail {
                    return Err(StoreError::Conflict(format!("write {n} refused")));
                }
                Ok(())
            })
        })
    }

    /// Holds the writer inside a first write until `release` is notified, so that the writes
    /// sent meanwhile queue up behind it.
    fn blocker(started: Arc<Notify>, release: Arc<Notify>) -> Op<Sqlite> {
        Box::new(move |_tx| {
            let started = Arc::clone(&started);
            let release = Arc::clone(&release);
            Box::pin(async move {
                started.notify_one();
                release.notified().await;
                Ok(())
            })
        })
    }

    /// Sends ten writes (the one at `failing`, if any, fails) while the writer is held, then
    /// releases it; the outcomes, what each write saw committed, and how often each ran.
    async fn ten_queued_writes(
        failing: Option<i64>,
    ) -> (
        Vec<Result<(), StoreError>>,
        Vec<(i64, i64)>,
        Vec<usize>,
        SqlitePool,
    ) {
        let (pool, reader, _path) = database().await;
        let writer = GroupWriter::spawn(pool.clone());
        let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let held = tokio::spawn({
            let writer = writer.clone();
            let op = blocker(Arc::clone(&started), Arc::clone(&release));
            async move { writer.write(op).await }
        });
        started.notified().await;
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let runs: Vec<Arc<AtomicUsize>> = (0..10).map(|_| Arc::default()).collect();
        let writes: Vec<_> = (0..10)
            .map(|n| {
                let op = insert(
                    n,
                    Some(n) == failing,
                    reader.clone(),
                    Arc::clone(&seen),
                    Arc::clone(&runs[n as usize]),
                );
                let writer = writer.clone();
                tokio::spawn(async move { writer.write(op).await })
            })
            .collect();
        // Every write is queued before the writer goes on (bounded wait).
        for _ in 0..500 {
            if writer.queue.max_capacity() - writer.queue.capacity() == 10 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        release.notify_one();
        held.await.unwrap().unwrap();
        let mut outcomes = Vec::new();
        for write in writes {
            outcomes.push(write.await.unwrap());
        }
        let seen = seen.lock().unwrap().clone();
        let runs = runs.iter().map(|r| r.load(Ordering::SeqCst)).collect();
        (outcomes, seen, runs, reader)
    }

    #[tokio::test]
    async fn writes_waiting_together_are_committed_in_one_transaction() {
        let (outcomes, seen, runs, reader) = ten_queued_writes(None).await;
        assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
        // One transaction: none of the ten saw another's row committed. Committed one by one,
        // the last would have seen nine.
        assert_eq!(seen.len(), 10);
        assert!(
            seen.iter().all(|&(_, committed)| committed == 0),
            "{seen:?}"
        );
        assert_eq!(runs, vec![1; 10], "each write ran once");
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM t")
            .fetch_one(&reader)
            .await
            .unwrap();
        assert_eq!(count, 10, "every write is committed");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_waits_while_the_gate_is_held() {
        let (pool, reader, _path) = database().await;
        let writer = GroupWriter::spawn(pool);
        let held = writer.gate().lock_owned().await;
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let write = tokio::spawn({
            let writer = writer.clone();
            let op = insert(1, false, reader.clone(), Arc::clone(&seen), Arc::default());
            async move { writer.write(op).await }
        });
        // Time enough for the write to run if nothing held it back.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(
            seen.lock().unwrap().is_empty(),
            "the write ran while the gate was held"
        );
        assert!(!write.is_finished());
        drop(held);
        write.await.unwrap().unwrap();
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM t")
            .fetch_one(&reader)
            .await
            .unwrap();
        assert_eq!(count, 1, "the write is committed once the gate is free");
    }

    #[tokio::test]
    async fn a_failing_write_fails_alone_and_leaves_nothing_behind() {
        let (outcomes, _seen, runs, reader) = ten_queued_writes(Some(4)).await;
        for (n, outcome) in outcomes.iter().enumerate() {
            if n == 4 {
                assert!(
                    matches!(outcome, Err(StoreError::Conflict(m)) if m.contains("write 4")),
                    "write 4 fails with its own error: {outcome:?}"
                );
            } else {
                assert!(outcome.is_ok(), "write {n}: {outcome:?}");
            }
        }
        // The failing write ran in the shared transaction, which was rolled back, and again
        // alone, as did every write before it in that transaction (those after it ran alone
        // only).
        assert_eq!(runs[4], 2, "{runs:?}");
        assert!(runs.iter().all(|&r| r == 1 || r == 2), "{runs:?}");
        let rows: Vec<i64> = sqlx::query_scalar("SELECT n FROM t ORDER BY n")
            .fetch_all(&reader)
            .await
            .unwrap();
        assert_eq!(
            rows,
            vec![0, 1, 2, 3, 5, 6, 7, 8, 9],
            "write 4's insert is undone"
        );
    }
}
