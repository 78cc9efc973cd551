//! The group writer of a file-backed SQLite store: a thread of its own owning a `rusqlite`
//! connection to the database file.
//!
//! sqlx runs each SQLite connection on a thread of its own and talks to it through channels:
//! a command sent there wakes that thread, and each statement result sent back wakes the task
//! waiting for it, and every connection returned to sqlx's pool is pinged (one more round trip).
//! For the group writer's batch that was ~25–30 wake-up syscalls per request at one request in
//! flight, the largest kernel cost left per request (docs/benchmarks.md, fifth pass). Here the
//! writer *is* the connection's thread: it takes the queued writes ([`Queue`]), runs each batch
//! with SQLite's own calls (statements prepared once and kept), and answers each caller once
//! its transaction is committed: one wake-up of the thread per batch (none while it has work
//! queued) and one of each caller's task.
//!
//! Everything else is as the task writer of `group_commit.rs` (which PostgreSQL and an
//! in-memory SQLite store still use): the first waiting write and every write queued behind
//! it, up to [`MAX_BATCH`], in one transaction, held at the [`Gate`] the checkpointer takes;
//! on any failure the batch is rolled back and each write run again alone; each caller gets
//! its own write's outcome, with the same errors as sqlx's path ([`StoreError::Conflict`] for
//! the refusals a statement declares, `StoreError::Backend` with sqlx's wording otherwise).
//! The thread ends when every handle is gone, after the writes queued before: a write reported
//! done is committed, and a write whose caller went away still runs.
//!
//! While the writer is idle a write does not go to the thread at all: the caller commits it
//! on its own thread, on the same connection ([`Shared`], behind a mutex the thread takes for
//! each batch), and has its answer without a wake-up either way. At one request in flight
//! that is every write (a short foreground run is stored in one transaction at its end, on
//! the request's path: docs/benchmarks.md, "Issue 18, thirteenth pass"). It is tried only,
//! never waited for: the caller queues its write as before when a write is queued or being
//! committed (so no write overtakes one queued before it, even one whose caller went away,
//! and concurrent writes still make batches), when the gate is held (the checkpointer
//! catching up) or the connection is, or when `BEGIN IMMEDIATE` cannot take the write lock at
//! once (it runs with a busy timeout of zero: sqlx's writer connection or another process
//! writing; the busy timeout is put back before the script's statements). Such a commit is
//! one small transaction (tens of microseconds; `synchronous=NORMAL`, no `fsync`) that
//! blocks the caller's tokio worker that long, runs exactly as a batch of one (its own
//! error, rolled back on failure, the answer after the commit) and never awaits, so a caller
//! dropped meanwhile cannot stop it halfway. The thread answers each batch's callers after it
//! lets the gate and the connection go, so that a caller woken by its answer finds them free.
//!
//! Under load the thread gathers: while the engine has at least [`CROWD`] runs executing
//! ([`ActiveRuns`], given through `EventStore::follow_active_runs`) and the writer has been
//! contended lately (its last batch held more than one write, or a caller found it busy), no
//! write is committed inline, and the thread waits up to [`GATHER`] after the first write of a
//! batch for more, or until every executing run has a write queued. Each commit writes a WAL
//! frame for every page it touched (at least the eight B-trees of a run's rows): at 64
//! requests in flight, one commit per run wrote ~15 `pwrite`s per request, gathered ~7
//! (docs/benchmarks.md, "Issue 18, sixteenth pass"). Below that crowd, or uncontended (a few
//! slow streams, each writing now and then), nothing waits. PostgreSQL's `commit_delay` and
//! `commit_siblings` are the same idea.
//!
//! The connection is opened like the sqlx pools' (`sqlite.rs`): WAL, `synchronous=NORMAL`,
//! foreign keys, the busy timeout, no checkpoints on commit (`wal_autocheckpoint=0`: the
//! checkpointer does them) and the journal size limit. Each transaction is `BEGIN IMMEDIATE`:
//! the store's other writes (administration, job claims) still go through sqlx's writer
//! connection, so the write lock is taken up front, waiting (busy timeout) for a writer in
//! flight, instead of at the first statement.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use engine::metrics::ActiveRuns;
use engine::store::StoreError;
use rusqlite::types::{Null, ToSql, ToSqlOutput};
use rusqlite::{Connection, OpenFlags, ffi};
use sqlx::error::ErrorKind;
use tokio::sync::{mpsc, oneshot};

use crate::group_commit::{Gate, GroupWriter, Inline, MAX_BATCH, Queue, Queued};
use crate::script::{self, Script, Statement, Value};
use crate::wal_write_out::WriteOut;

/// How the writer's connection is opened.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The database file (already created and migrated).
    pub(crate) path: PathBuf,
    /// How long a statement waits for a lock another connection holds.
    pub(crate) busy_timeout: Duration,
    /// Bytes the WAL file is truncated back to when it starts over.
    pub(crate) journal_size_limit: i64,
    /// Told of each commit, to write the WAL out soon after (`None`: left to the checkpoints).
    pub(crate) write_out: Option<WriteOut>,
    /// The longest the thread gathers a batch ([`GATHER`]).
    pub(crate) gather: Duration,
}

/// Prepared statements kept: the run-path writes' few, with room for their multi-row shapes.
const PREPARED: usize = 64;

/// The thread's name (what `top -H` and `/proc/PID/task/*/comm` show).
const THREAD: &str = "sqlite-writer";

/// Runs executing at once from which a contended writer gathers its batches.
const CROWD: u64 = 8;

/// The longest the thread waits after the first write of a batch for more to join it.
pub(crate) const GATHER: Duration = Duration::from_millis(1);

/// What the writer thread and the handles share: the connection, taken by the thread for each
/// batch and by a caller for its inline commit.
pub(crate) struct Shared {
    connection: Mutex<Connection>,
    /// The group writer's gate (held, by the thread or an inline commit, around each commit).
    gate: Gate,
    /// Writes queued and not yet committed (or failed) by the thread.
    pending: AtomicUsize,
    /// The connection's busy timeout, put back after an inline `BEGIN IMMEDIATE` (which runs
    /// with none).
    busy_timeout: Duration,
    /// Told of each commit (the thread's and the inline ones).
    write_out: Option<WriteOut>,
    /// The engine's count of runs executing now (none: never gathers).
    runs: OnceLock<ActiveRuns>,
    /// The last batch held more than one write, or a caller found the writer busy since.
    contended: AtomicBool,
    /// While the thread gathers: the count of pending writes at which it stops waiting (0:
    /// not gathering).
    gathering: AtomicUsize,
    /// The writer thread (woken from its gathering).
    thread: std::thread::Thread,
    /// The longest the thread gathers a batch.
    gather_for: Duration,
    /// The thread of each commit, in order (tests).
    #[cfg(test)]
    committers: Mutex<Vec<std::thread::ThreadId>>,
}

impl Shared {
    /// The connection, waiting for whoever holds it (an inline commit: one small transaction).
    fn connection(&self) -> MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A transaction ended (committed, or rolled back after writing frames): the WAL has new
    /// frames to write out.
    fn wrote(&self) {
        if let Some(write_out) = &self.write_out {
            write_out.wrote();
        }
    }

    #[cfg(test)]
    fn committed(&self) {
        self.committers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(std::thread::current().id());
    }

    /// The threads the commits ran on, in order (tests).
    #[cfg(test)]
    pub(crate) fn committers(&self) -> Vec<std::thread::ThreadId> {
        self.committers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Shared {
    /// Whether writes are gathered into batches by the thread (none committed inline).
    fn crowded(&self) -> bool {
        self.contended.load(Ordering::Relaxed)
            && self.runs.get().is_some_and(|runs| runs.get() >= CROWD)
    }

    /// Takes more writes into `batch`, waiting up to its bound ([`GATHER`]) for them, until
    /// every run executing has one there (no more can come) or [`MAX_BATCH`].
    fn gather(&self, batch: &mut Vec<Queued>, receiver: &mut mpsc::Receiver<Queued>) {
        let Some(runs) = self.runs.get() else {
            return;
        };
        let all = usize::try_from(runs.get())
            .unwrap_or(usize::MAX)
            .clamp(2, MAX_BATCH);
        self.gathering.store(all, Ordering::SeqCst);
        // Either a caller's `sent` sees `all` (and wakes the thread) or this sees its write.
        fence(Ordering::SeqCst);
        let until = Instant::now() + self.gather_for;
        loop {
            while batch.len() < MAX_BATCH {
                match receiver.try_recv() {
                    Ok(queued) => batch.push(queued),
                    Err(_) => break,
                }
            }
            let now = Instant::now();
            if batch.len() >= all || now >= until {
                break;
            }
            std::thread::park_timeout(until - now);
        }
        self.gathering.store(0, Ordering::SeqCst);
    }

    /// [`Inline::try_commit`] but for the contention it notes.
    fn commit_here(&self, script: Script) -> Result<Result<(), StoreError>, Script> {
        // Behind a write queued before (its caller may have gone away), never ahead of it.
        if self.pending.load(Ordering::Acquire) != 0 {
            return Err(script);
        }
        // The checkpointer catching up, or the thread in a batch.
        let Ok(turn) = self.gate.try_lock() else {
            return Err(script);
        };
        let connection = match self.connection.try_lock() {
            Ok(connection) => connection,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(script),
        };
        // Queued while the gate and the connection were taken: the thread commits it first.
        if self.pending.load(Ordering::Acquire) != 0 {
            return Err(script);
        }
        // The write lock now or not at all: another connection writing (sqlx's writer, another
        // process) makes the caller queue, never wait here for the busy timeout.
        if connection.busy_timeout(Duration::ZERO).is_err() {
            return Err(script);
        }
        let began = begin(&connection);
        if let Err(e) = connection.busy_timeout(self.busy_timeout) {
            // The thread would no longer wait for a lock: end here, whatever began.
            tracing::warn!(error = %e, "restoring the SQLite writer's busy timeout failed");
            if began.is_ok() {
                let _ = run_sql(&connection, "ROLLBACK");
            }
            return Err(script);
        }
        if began.is_err() {
            return Err(script);
        }
        let outcome = finish(&connection, &[&script]);
        #[cfg(test)]
        if outcome.is_ok() {
            self.committed();
        }
        drop(connection);
        drop(turn);
        self.wrote();
        Ok(outcome)
    }
}

impl Inline for Shared {
    fn try_commit(&self, script: Script) -> Result<Result<(), StoreError>, Script> {
        if self.crowded() {
            return Err(script);
        }
        let outcome = self.commit_here(script);
        if outcome.is_err() {
            // Another write queued or committing (or the checkpointer, or a lock elsewhere):
            // the thread's next batch tells whether writes keep meeting.
            self.contended.store(true, Ordering::Relaxed);
        }
        outcome
    }

    fn queued(&self) {
        self.pending.fetch_add(1, Ordering::AcqRel);
    }

    fn sent(&self) {
        fence(Ordering::SeqCst);
        let all = self.gathering.load(Ordering::SeqCst);
        if all != 0 && self.pending.load(Ordering::SeqCst) >= all {
            self.thread.unpark();
        }
    }

    fn follow_active_runs(&self, runs: ActiveRuns) {
        // The first engine's (one engine per store).
        let _ = self.runs.set(runs);
    }
}

/// Opens the writer's connection on a new thread and starts taking writes there; the handle
/// writes through it, or through the same connection on the caller's thread while the writer
/// is idle ([`Inline`]). Fails if the connection cannot be opened.
pub(crate) async fn start(settings: Settings) -> Result<GroupWriter, StoreError> {
    Ok(start_shared(settings).await?.0)
}

/// [`start`], with what the handle and the thread share (tests look at it).
pub(crate) async fn start_shared(
    settings: Settings,
) -> Result<(GroupWriter, Arc<Shared>), StoreError> {
    let (writer, queue) = GroupWriter::new();
    let (opened, outcome) = oneshot::channel();
    let gate = writer.gate();
    std::thread::Builder::new()
        .name(THREAD.to_owned())
        .spawn(move || match open(&settings) {
            Ok(connection) => {
                let shared = Arc::new(Shared {
                    connection: Mutex::new(connection),
                    gate,
                    pending: AtomicUsize::new(0),
                    busy_timeout: settings.busy_timeout,
                    write_out: settings.write_out.clone(),
                    runs: OnceLock::new(),
                    contended: AtomicBool::new(false),
                    gathering: AtomicUsize::new(0),
                    thread: std::thread::current(),
                    gather_for: settings.gather,
                    #[cfg(test)]
                    committers: Mutex::default(),
                });
                let _ = opened.send(Ok(Arc::clone(&shared)));
                run(shared, queue);
            }
            Err(e) => {
                let _ = opened.send(Err(e));
            }
        })
        .map_err(|e| StoreError::Backend(format!("cannot start the SQLite writer thread: {e}")))?;
    let shared = outcome
        .await
        .map_err(|_| StoreError::Backend("the SQLite writer thread stopped".to_owned()))??;
    let inline: Arc<dyn Inline> = Arc::clone(&shared) as Arc<dyn Inline>;
    Ok((writer.with_inline(inline), shared))
}

/// The writer's connection, with the store's pragmas.
pub(crate) fn open(settings: &Settings) -> Result<Connection, StoreError> {
    let connection = open_connection(
        &settings.path,
        settings.busy_timeout,
        settings.journal_size_limit,
    )?;
    connection.set_prepared_statement_cache_capacity(PREPARED);
    Ok(connection)
}

/// A `rusqlite` connection to the store's file with the store's pragmas (the writer's, the
/// checkpoints').
pub(crate) fn open_connection(
    path: &Path,
    busy_timeout: Duration,
    journal_size_limit: i64,
) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = Connection::open_with_flags(path, flags).map_err(backend)?;
    connection.busy_timeout(busy_timeout).map_err(backend)?;
    connection
        .execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
             PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = {journal_size_limit};"
        ))
        .map_err(backend)?;
    Ok(connection)
}

/// The thread: one batch at a time, until every handle is gone and the queue is empty. Each
/// batch's callers are answered once the gate and the connection are let go, so that a caller
/// woken by its answer finds the writer idle.
fn run(shared: Arc<Shared>, mut queue: Queue) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut outcomes = Vec::with_capacity(MAX_BATCH);
    while queue.receiver.blocking_recv_many(&mut batch, MAX_BATCH) > 0 {
        if shared.crowded() {
            shared.gather(&mut batch, &mut queue.receiver);
        }
        let turn = hold(&queue.gate);
        // Writes that arrived while the gate was held join this batch.
        while batch.len() < MAX_BATCH {
            match queue.receiver.try_recv() {
                Ok(queued) => batch.push(queued),
                Err(_) => break,
            }
        }
        let connection = shared.connection();
        commit(&shared, &connection, &batch, &mut outcomes);
        shared.pending.fetch_sub(batch.len(), Ordering::AcqRel);
        shared.contended.store(batch.len() > 1, Ordering::Relaxed);
        drop(connection);
        drop(turn);
        shared.wrote();
        for (queued, outcome) in batch.drain(..).zip(outcomes.drain(..)) {
            queued.answer(outcome);
        }
    }
    drop(queue);
    // Every handle is gone (each drops its share before its sender).
    match Arc::try_unwrap(shared) {
        Ok(shared) => {
            let connection = shared
                .connection
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner);
            if let Err((_, e)) = connection.close() {
                tracing::warn!(error = %e, "closing the SQLite writer connection failed");
            }
        }
        // Closed by whoever lets it go last.
        Err(shared) => drop(shared),
    }
}

/// Takes the gate, waiting for the checkpointer if it holds it.
fn hold(gate: &Gate) -> tokio::sync::MutexGuard<'_, ()> {
    match gate.try_lock() {
        Ok(turn) => turn,
        Err(_) => gate.blocking_lock(),
    }
}

/// Runs a batch in one transaction; on any failure, each write again alone. `outcomes` gets
/// each write's, in the batch's order.
fn commit(
    shared: &Shared,
    connection: &Connection,
    batch: &[Queued],
    outcomes: &mut Vec<Result<(), StoreError>>,
) {
    // (Used by tests only: each commit's thread.)
    let _ = shared;
    if batch.len() > 1 {
        let scripts: Vec<&Script> = batch.iter().map(|queued| &queued.script).collect();
        if transaction(connection, &scripts).is_ok() {
            #[cfg(test)]
            shared.committed();
            outcomes.extend(batch.iter().map(|_| Ok(())));
            return;
        }
    }
    for queued in batch {
        let outcome = transaction(connection, &[&queued.script]);
        #[cfg(test)]
        if outcome.is_ok() {
            shared.committed();
        }
        outcomes.push(outcome);
    }
}

/// Runs scripts in one transaction: all of them, or none (the failing statement's error).
fn transaction(connection: &Connection, scripts: &[&Script]) -> Result<(), StoreError> {
    begin(connection).map_err(backend)?;
    finish(connection, scripts)
}

/// Begins a transaction taking the write lock (waiting for it up to the busy timeout).
fn begin(connection: &Connection) -> rusqlite::Result<()> {
    if !connection.is_autocommit() {
        // A rollback that failed last time: never start inside a transaction of unknown state.
        connection.execute_batch("ROLLBACK")?;
    }
    run_sql(connection, "BEGIN IMMEDIATE")
}

/// Runs scripts in the transaction [`begin`] began and commits it; on any failure rolls it
/// back and returns the failing statement's error.
fn finish(connection: &Connection, scripts: &[&Script]) -> Result<(), StoreError> {
    let mut sql = String::new();
    let mut values = Vec::new();
    let outcome = scripts
        .iter()
        .flat_map(|script| script.statements())
        .try_for_each(|statement| execute(connection, statement, &mut sql, &mut values))
        .and_then(|()| run_sql(connection, "COMMIT").map_err(backend));
    if outcome.is_err() && !connection.is_autocommit() {
        // `COMMIT` never ran, or failed. If even the rollback fails, the next transaction
        // tries it again first.
        let _ = run_sql(connection, "ROLLBACK");
    }
    outcome
}

/// Runs a statement without values (kept prepared).
fn run_sql(connection: &Connection, sql: &str) -> rusqlite::Result<()> {
    connection.prepare_cached(sql)?.raw_execute().map(|_| ())
}

/// Runs one statement of a script, its placeholders bound to its values; `sql` and `values`
/// are buffers reused from one statement to the next.
fn execute<'s>(
    connection: &Connection,
    statement: &'s Statement,
    sql: &mut String,
    values: &mut Vec<&'s Value>,
) -> Result<(), StoreError> {
    sql.clear();
    values.clear();
    // SQLite numbers named `$k` placeholders by first use, not by `k`: a statement whose
    // numbers first appear in order runs as written (each value bound to its own number, no
    // rewrite), any other with each `$k` as a plain `?`, bound in order (as for sqlx's joined
    // query, `script.rs`).
    let (text, bound): (&str, &[&Value]) = match script::numbered_in_order(statement) {
        Some((text, in_order)) => {
            values.extend(in_order);
            (text, values)
        }
        None => {
            script::positional(statement, sql, values)?;
            (sql, values)
        }
    };
    let run = || -> rusqlite::Result<()> {
        let mut prepared = connection.prepare_cached(text)?;
        for (at, value) in bound.iter().enumerate() {
            prepared.raw_bind_parameter(at + 1, Bound(value))?;
        }
        prepared.raw_execute().map(|_| ())
    };
    run().map_err(|e| {
        statement
            .refusal(kind(&e).as_ref())
            .unwrap_or_else(|| backend(e))
    })
}

/// A value as SQLite binds it (as sqlx binds the same values).
struct Bound<'v>(&'v Value);

impl ToSql for Bound<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        match self.0 {
            Value::Int(n) => n.to_sql(),
            Value::Text(text) => Ok(ToSqlOutput::from(&**text)),
            Value::Static(text) => Ok(ToSqlOutput::from(*text)),
            Value::OptionalText(Some(text)) => Ok(ToSqlOutput::from(&**text)),
            Value::OptionalText(None) => Null.to_sql(),
            Value::Blob(bytes) | Value::OptionalBlob(Some(bytes)) => {
                Ok(ToSqlOutput::from(&**bytes))
            }
            Value::OptionalBlob(None) => Null.to_sql(),
        }
    }
}

/// The kind of a database error as sqlx's SQLite driver reports it (`None`: not an error of
/// the database).
fn kind(e: &rusqlite::Error) -> Option<ErrorKind> {
    let rusqlite::Error::SqliteFailure(failure, _) = e else {
        return None;
    };
    Some(match failure.extended_code {
        ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
            ErrorKind::UniqueViolation
        }
        ffi::SQLITE_CONSTRAINT_FOREIGNKEY => ErrorKind::ForeignKeyViolation,
        ffi::SQLITE_CONSTRAINT_NOTNULL => ErrorKind::NotNullViolation,
        ffi::SQLITE_CONSTRAINT_CHECK => ErrorKind::CheckViolation,
        _ => ErrorKind::Other,
    })
}

/// A failure as a back-end error, worded as sqlx words the same failure.
fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(match e {
        rusqlite::Error::SqliteFailure(failure, message) => format!(
            "error returned from database: (code: {}) {}",
            failure.extended_code,
            message.unwrap_or_else(|| failure.to_string())
        ),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use engine::store::{EventRecord, EventStore};
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

    use super::*;
    use crate::wal_write_out::tests::written_out;

    /// A WAL database file holding a table `t` with the row 1000, and a pool reading it; in a
    /// temporary directory removed when the returned guard drops.
    async fn database() -> (tempfile::TempDir, PathBuf, SqlitePool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sqlite-writer.db");
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .unwrap();
        sqlx::raw_sql("CREATE TABLE t (n INTEGER PRIMARY KEY); INSERT INTO t (n) VALUES (1000)")
            .execute(&pool)
            .await
            .unwrap();
        (dir, path, pool)
    }

    fn settings(path: &Path) -> Settings {
        Settings {
            path: path.to_owned(),
            busy_timeout: Duration::from_secs(5),
            journal_size_limit: 1 << 20,
            write_out: None,
            gather: GATHER,
        }
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

    async fn rows(reader: &SqlitePool) -> Vec<i64> {
        sqlx::query_scalar("SELECT n FROM t ORDER BY n")
            .fetch_all(reader)
            .await
            .unwrap()
    }

    /// Queues the writes `ns` (the one equal to `failing` fails) while the gate is held, so that
    /// they make one batch; then drops `writer` if `last`, releases the gate, and returns the
    /// outcomes.
    async fn one_batch(
        writer: GroupWriter,
        ns: std::ops::Range<i64>,
        failing: Option<i64>,
        last: bool,
    ) -> Vec<Result<(), StoreError>> {
        let gate = writer.gate();
        let held = gate.lock().await;
        let mut outcomes = Vec::new();
        for n in ns {
            outcomes.push(writer.enqueue(insert(n, Some(n) == failing)).await);
        }
        if last {
            drop(writer);
        }
        drop(held);
        let mut results = Vec::new();
        for outcome in outcomes {
            results.push(outcome.await.unwrap());
        }
        results
    }

    /// SQLite as the store links it keeps no memory statistics and gives each connection its
    /// own page cache (`.cargo/config.toml`): otherwise every allocation and free, and every
    /// page fetched and released, of every connection took one of two process-wide mutexes.
    #[tokio::test]
    async fn the_linked_sqlite_takes_no_process_wide_lock_per_allocation_or_page() {
        let (_dir, path, _reader) = database().await;
        let connection = open(&settings(&path)).unwrap();
        let options: Vec<String> = connection
            .prepare("PRAGMA compile_options")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"),
            "SQLite was built with memory statistics: {options:?}"
        );
        assert!(
            !options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"),
            "SQLite was built with one page cache for all connections: {options:?}"
        );
    }

    #[tokio::test]
    async fn a_failing_write_of_a_batch_fails_alone_and_the_others_are_committed() {
        let (_dir, path, reader) = database().await;
        let writer = start(settings(&path)).await.unwrap();
        let outcomes = one_batch(writer.clone(), 0..10, Some(4), false).await;
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
        // No transaction left open on the thread's connection.
        writer.write(insert(4, false)).await.unwrap();
        assert!(rows(&reader).await.contains(&4));
    }

    #[tokio::test]
    async fn a_write_failing_alone_leaves_nothing_behind() {
        let (_dir, path, reader) = database().await;
        let writer = start(settings(&path)).await.unwrap();
        let outcome = writer.write(insert(7, true)).await;
        assert!(
            matches!(&outcome, Err(StoreError::Conflict(m)) if m == "write 7 refused"),
            "{outcome:?}"
        );
        writer.write(insert(8, false)).await.unwrap();
        assert_eq!(rows(&reader).await, vec![8, 1000]);
    }

    #[tokio::test]
    async fn an_undeclared_failure_is_the_back_ends_worded_as_sqlx_words_it() {
        let (_dir, path, reader) = database().await;
        let writer = start(settings(&path)).await.unwrap();
        let mut script = Script::new();
        script.statement("INSERT INTO t (n) VALUES ($1)").bind(1000);
        let ours = writer.write(script).await;
        let sqlx = sqlx::query("INSERT INTO t (n) VALUES ($1)")
            .bind(1000)
            .execute(&reader)
            .await
            .map_err(crate::error::backend);
        let (Err(StoreError::Backend(ours)), Err(StoreError::Backend(sqlx))) = (ours, sqlx) else {
            panic!("both fail as the back end's errors");
        };
        assert_eq!(ours, sqlx);
    }

    #[tokio::test]
    async fn placeholders_bind_their_own_values_in_order_or_not() {
        let (_dir, path, reader) = database().await;
        let writer = start(settings(&path)).await.unwrap();
        let mut script = Script::new();
        // In order of first use, one of them twice: run as written.
        script
            .statement("INSERT INTO t (n) VALUES ($1), ($2), ($1 + $2)")
            .bind(1)
            .bind(20);
        // Out of order: SQLite alone would bind 3 to `$2` here; rewritten to `?`s instead.
        script
            .statement("UPDATE t SET n = $2 WHERE n = $1")
            .bind(1)
            .bind(300);
        // A value without a placeholder is not bound.
        script
            .statement("DELETE FROM t WHERE n = $1")
            .bind(20)
            .bind(99);
        writer.write(script).await.unwrap();
        assert_eq!(rows(&reader).await, vec![21, 300, 1000]);
        let mut missing = Script::new();
        missing
            .statement("INSERT INTO t (n) VALUES ($1), ($2)")
            .bind(5);
        let outcome = writer.write(missing).await;
        assert!(
            matches!(&outcome, Err(StoreError::Backend(m)) if m.contains("no value for placeholder $2")),
            "{outcome:?}"
        );
        assert_eq!(rows(&reader).await, vec![21, 300, 1000]);
    }

    #[tokio::test]
    async fn writes_queued_when_the_last_handle_goes_are_still_committed() {
        let (_dir, path, reader) = database().await;
        let writer = start(settings(&path)).await.unwrap();
        let outcomes = one_batch(writer, 0..5, None, true).await;
        assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
        assert_eq!(rows(&reader).await, vec![0, 1, 2, 3, 4, 1000]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_waits_while_the_gate_is_held() {
        let (_dir, path, reader) = database().await;
        let writer = start(settings(&path)).await.unwrap();
        let held = writer.gate().lock_owned().await;
        let write = tokio::spawn({
            let writer = writer.clone();
            async move { writer.write(insert(1, false)).await }
        });
        // Time enough for the write to run if nothing held it back.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            rows(&reader).await,
            vec![1000],
            "the write ran past the gate"
        );
        drop(held);
        write.await.unwrap().unwrap();
        assert_eq!(rows(&reader).await, vec![1, 1000]);
    }

    #[tokio::test]
    async fn an_idle_writers_write_is_committed_on_the_callers_thread() {
        let (_dir, path, reader) = database().await;
        let (writer, shared) = start_shared(settings(&path)).await.unwrap();
        writer.write(insert(1, false)).await.unwrap();
        // A failing write too, with its own error.
        let failed = writer.write(insert(2, true)).await;
        assert!(
            matches!(&failed, Err(StoreError::Conflict(m)) if m == "write 2 refused"),
            "{failed:?}"
        );
        writer.write(insert(3, false)).await.unwrap();
        let here = std::thread::current().id();
        assert_eq!(
            shared.committers(),
            vec![here, here],
            "committed where asked"
        );
        assert_eq!(rows(&reader).await, vec![1, 3, 1000]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn inline_and_queued_commits_have_the_wal_written_out() {
        let (_dir, path, reader) = database().await;
        let write_out = WriteOut::spawn(&path, Duration::from_millis(10));
        let (writer, shared) = start_shared(Settings {
            write_out: Some(write_out.clone()),
            ..settings(&path)
        })
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(write_out.written_out(), 0, "nothing committed yet");
        writer.write(insert(1, false)).await.unwrap();
        assert_eq!(shared.committers(), vec![std::thread::current().id()]);
        written_out(&write_out, 1).await;
        // A write queued behind a held gate, committed by the writer thread.
        let before = write_out.written_out();
        let held = writer.gate().lock_owned().await;
        let write = tokio::spawn({
            let writer = writer.clone();
            async move { writer.write(insert(2, false)).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(write_out.written_out(), before, "nothing new committed");
        drop(held);
        write.await.unwrap().unwrap();
        assert_ne!(shared.committers()[1], std::thread::current().id());
        written_out(&write_out, before + 1).await;
        assert_eq!(rows(&reader).await, vec![1, 2, 1000]);
    }

    #[tokio::test]
    async fn a_held_gate_makes_the_caller_queue_instead_of_waiting() {
        let (_dir, path, reader) = database().await;
        let (writer, shared) = start_shared(settings(&path)).await.unwrap();
        let held = writer.gate().lock_owned().await;
        // One runtime thread: a caller waiting for the gate here would never let it go.
        let write = tokio::spawn({
            let writer = writer.clone();
            async move { writer.write(insert(1, false)).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            rows(&reader).await,
            vec![1000],
            "the write ran past the gate"
        );
        assert!(!write.is_finished());
        drop(held);
        write.await.unwrap().unwrap();
        assert_eq!(rows(&reader).await, vec![1, 1000]);
        assert_ne!(
            shared.committers(),
            vec![std::thread::current().id()],
            "the writer thread committed it"
        );
    }

    #[tokio::test]
    async fn a_lock_held_elsewhere_makes_the_caller_queue_instead_of_waiting() {
        let (_dir, path, reader) = database().await;
        let (writer, shared) = start_shared(settings(&path)).await.unwrap();
        // Another connection writing (as sqlx's writer pool, or another process).
        let other = Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let started = std::time::Instant::now();
        let write = tokio::spawn({
            let writer = writer.clone();
            async move { writer.write(insert(1, false)).await }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        // One runtime thread: a caller in SQLite's busy handler would hold it for 5 s.
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the caller waited {:?} for the lock",
            started.elapsed()
        );
        assert!(!write.is_finished());
        other.execute_batch("COMMIT").unwrap();
        write.await.unwrap().unwrap();
        assert_eq!(rows(&reader).await, vec![1, 1000]);
        assert_eq!(shared.committers().len(), 1);
        assert_ne!(shared.committers()[0], std::thread::current().id());
        // The connection's busy timeout is back for the thread's next waits.
        let timeout: i64 = shared
            .connection()
            .query_row("PRAGMA busy_timeout", [], |row| row.get(0))
            .unwrap();
        assert_eq!(timeout, 5000);
    }

    #[tokio::test]
    async fn a_write_never_overtakes_one_queued_before_it() {
        let (_dir, path, reader) = database().await;
        let (writer, shared) = start_shared(settings(&path)).await.unwrap();
        // A write counted as queued: the caller queues too, however idle the rest is.
        shared.queued();
        assert!(shared.try_commit(insert(1, false)).is_err());
        shared.pending.fetch_sub(1, Ordering::AcqRel);
        assert!(matches!(shared.try_commit(insert(1, false)), Ok(Ok(()))));
        // A queued write whose caller went away, then one that needs it committed first.
        for n in 0..20 {
            let held = writer.gate().lock_owned().await;
            drop(writer.enqueue(insert(100 + 2 * n, false)).await);
            drop(held);
            let mut after = Script::new();
            after
                .statement("INSERT INTO t (n) SELECT n + 1 FROM t WHERE n = $1")
                .bind(100 + 2 * n);
            writer.write(after).await.unwrap();
        }
        let expected: Vec<i64> = [1]
            .into_iter()
            .chain((0..20).flat_map(|n| [100 + 2 * n, 101 + 2 * n]))
            .chain([1000])
            .collect();
        assert_eq!(rows(&reader).await, expected);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_writes_still_make_one_batch() {
        let (_dir, path, reader) = database().await;
        let (writer, shared) = start_shared(settings(&path)).await.unwrap();
        let held = writer.gate().lock_owned().await;
        let writes: Vec<_> = (0..32)
            .map(|n| {
                let writer = writer.clone();
                tokio::spawn(async move { writer.write(insert(n, false)).await })
            })
            .collect();
        while shared.pending.load(Ordering::Acquire) < 32 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(held);
        for write in writes {
            write.await.unwrap().unwrap();
        }
        assert_eq!(shared.committers().len(), 1, "one transaction");
        assert_eq!(rows(&reader).await.len(), 33);
    }

    /// A writer following `runs` runs executing, made contended by a batch of two writes
    /// (rows 10 and 11) queued behind the held gate, gathering for `gather` at most.
    async fn crowded(
        path: &Path,
        runs: u64,
        gather: Duration,
    ) -> (GroupWriter, Arc<Shared>, ActiveRuns) {
        let (writer, shared) = start_shared(Settings {
            gather,
            ..settings(path)
        })
        .await
        .unwrap();
        let active = ActiveRuns::default();
        active.set(runs);
        writer.follow_active_runs(active.clone());
        let outcomes = one_batch(writer.clone(), 10..12, None, false).await;
        assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
        assert_eq!(shared.committers().len(), 1, "the two made one batch");
        (writer, shared, active)
    }

    #[tokio::test]
    async fn a_contended_writer_with_a_crowd_of_runs_gathers_each_batch_until_every_run_has_written()
     {
        let (_dir, path, reader) = database().await;
        // Long enough that only the last run's write can end the gathering.
        let (writer, shared, _active) = crowded(&path, CROWD, Duration::from_secs(30)).await;
        let started = std::time::Instant::now();
        let crowd = i64::try_from(CROWD).unwrap();
        let outcomes: Vec<_> = (0..crowd)
            .map(|n| {
                let writer = writer.clone();
                tokio::spawn(async move { writer.write(insert(n, false)).await })
            })
            .collect();
        for outcome in outcomes {
            outcome.await.unwrap().unwrap();
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "waited out the gathering"
        );
        let committers = shared.committers();
        assert_eq!(
            committers.len(),
            2,
            "the crowd's writes made one batch: {committers:?}"
        );
        assert_ne!(
            committers[1],
            std::thread::current().id(),
            "none committed inline"
        );
        let expected: Vec<i64> = (0..crowd).chain([10, 11, 1000]).collect();
        assert_eq!(rows(&reader).await, expected);
    }

    #[tokio::test]
    async fn a_gathering_waits_no_longer_than_its_bound_and_a_batch_of_one_ends_it() {
        let (_dir, path, reader) = database().await;
        let gather = Duration::from_millis(100);
        let (writer, shared, _active) = crowded(&path, 8, gather).await;
        // Alone among 8 runs: the thread waits out the bound, then commits it.
        let started = std::time::Instant::now();
        writer.write(insert(1, false)).await.unwrap();
        assert!(
            started.elapsed() >= gather,
            "committed after {:?}",
            started.elapsed()
        );
        let here = std::thread::current().id();
        assert_ne!(shared.committers()[1], here, "the thread committed it");
        // A batch of one: no longer contended, the next write is committed at once, inline.
        let started = std::time::Instant::now();
        writer.write(insert(2, false)).await.unwrap();
        assert!(started.elapsed() < gather, "waited {:?}", started.elapsed());
        assert_eq!(shared.committers()[2], here);
        assert_eq!(rows(&reader).await, vec![1, 2, 10, 11, 1000]);
    }

    #[tokio::test]
    async fn below_the_crowd_or_without_an_engine_a_contended_writer_never_gathers() {
        let (_dir, path, reader) = database().await;
        let gather = Duration::from_secs(30);
        let (writer, shared, active) = crowded(&path, CROWD - 1, gather).await;
        let here = std::thread::current().id();
        writer.write(insert(1, false)).await.unwrap();
        assert_eq!(shared.committers()[1], here, "committed inline");
        // Contended again, with the crowd: one run more and the next write is the thread's.
        drop(one_batch(writer.clone(), 20..22, None, false).await);
        active.set(CROWD);
        let write = tokio::spawn({
            let writer = writer.clone();
            async move { writer.write(insert(2, false)).await }
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while shared.pending.load(Ordering::SeqCst) == 0
            && !write.is_finished()
            && std::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(!write.is_finished(), "committed without the crowd's writes");
        // Gathering (for up to 30 s) until all 8 runs have a write queued: 7 more.
        let others: Vec<_> = (3..10)
            .map(|n| {
                let writer = writer.clone();
                tokio::spawn(async move { writer.write(insert(n, false)).await })
            })
            .collect();
        write.await.unwrap().unwrap();
        for other in others {
            other.await.unwrap().unwrap();
        }
        assert_eq!(shared.committers().len(), 4, "one batch of the eight");
        // A store no engine follows never gathers, however contended.
        let (_dir2, path2, _reader2) = database().await;
        let (alone, alone_shared) = start_shared(Settings {
            gather,
            ..settings(&path2)
        })
        .await
        .unwrap();
        drop(one_batch(alone.clone(), 10..12, None, false).await);
        alone.write(insert(1, false)).await.unwrap();
        assert_eq!(alone_shared.committers()[1], here);
        assert_eq!(rows(&reader).await.len(), 14);
    }

    #[tokio::test]
    async fn the_connection_has_the_stores_pragmas() {
        let (_dir, path, _reader) = database().await;
        let connection = open(&settings(&path)).unwrap();
        let pragma = |name: &str| -> String {
            connection
                .query_row(&format!("PRAGMA {name}"), [], |row| {
                    row.get::<_, rusqlite::types::Value>(0)
                })
                .map(|value| format!("{value:?}"))
                .unwrap()
        };
        assert_eq!(pragma("journal_mode"), r#"Text("wal")"#);
        assert_eq!(pragma("synchronous"), "Integer(1)", "NORMAL");
        assert_eq!(pragma("foreign_keys"), "Integer(1)");
        assert_eq!(pragma("busy_timeout"), "Integer(5000)");
        assert_eq!(pragma("wal_autocheckpoint"), "Integer(0)");
        assert_eq!(pragma("journal_size_limit"), "Integer(1048576)");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_stores_other_transactions_wait_for_the_writer_thread_instead_of_failing() {
        use engine::store::{ConversationRecord, ItemKind, ItemStore, KeyStore, StoredItem};
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("data");
        let store = crate::SqliteStore::open(&dir).await.unwrap();
        let project = store.ensure_project("default").await.unwrap();
        let conversation = ConversationRecord {
            id: "conv_1".to_owned(),
            project_id: project.clone(),
            created_at: 1,
            metadata: Default::default(),
        };
        store.create_conversation(&conversation, &[]).await.unwrap();
        // Run-path writes committing on the writer thread all the while.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let runs: Vec<_> = (0..4)
            .map(|task| {
                let (store, stop) = (store.clone(), std::sync::Arc::clone(&stop));
                tokio::spawn(async move {
                    let mut n = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let event = EventRecord {
                            sequence_number: 0,
                            data: "{}".into(),
                        };
                        let id = format!("resp_{task}_{n}");
                        store.append_events(&id, &[event]).await.unwrap();
                        n += 1;
                    }
                })
            })
            .collect();
        // A transaction on sqlx's writer connection that reads before it writes: a deferred
        // one fails (`database is locked`) when the thread commits between its read and its
        // write.
        for n in 0..200 {
            let item = StoredItem {
                id: format!("msg_{n}"),
                kind: ItemKind::Input,
                item: engine::store::ItemJson::of(
                    &serde_json::json!({"type": "message", "id": format!("msg_{n}")}),
                )
                .expect("json"),
            };
            let appended = store
                .append_conversation_items(&project, "conv_1", &[item])
                .await;
            assert!(matches!(appended, Ok(true)), "append {n}: {appended:?}");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for run in runs {
            run.await.unwrap();
        }
        store.close().await;
    }

    #[tokio::test]
    async fn writes_reported_done_survive_dropping_the_store() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("data");
        let store = crate::SqliteStore::open(&dir).await.unwrap();
        for n in 0..20 {
            let event = EventRecord {
                sequence_number: 0,
                data: format!("{{\"n\":{n}}}").into(),
            };
            store
                .append_events(&format!("resp_{n}"), &[event])
                .await
                .unwrap();
        }
        drop(store);
        let store = crate::SqliteStore::open(&dir).await.unwrap();
        for n in 0..20 {
            let events = store
                .events_after(&format!("resp_{n}"), None)
                .await
                .unwrap();
            assert_eq!(events.len(), 1, "resp_{n}");
        }
        store.close().await;
    }
}
