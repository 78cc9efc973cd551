//! How each back end runs write [`Script`]s in one transaction through sqlx (the group writer
//! task's batches, `group_commit.rs`): PostgreSQL's, and an in-memory SQLite store's (a file's
//! go through its writer thread instead, `sqlite_writer.rs`).
//!
//! SQLite: sqlx runs each SQLite connection on a thread of its own, and every command sent
//! there (a statement, `BEGIN`, `COMMIT`, each with a reply back) is a wake-up of that thread
//! and one of the task waiting for it: the bulk of a request's CPU at one request in flight
//! (docs/benchmarks.md). So the scripts are joined into one multi-statement query (`BEGIN`,
//! their statements, `COMMIT`: [`script::joined`]), which sqlx's SQLite driver prepares and
//! steps statement by statement in one command on the connection's thread, binding each `?` to
//! the next of the query's arguments. It stops at the
//! first statement that fails and reports that statement's error after the results of those
//! before it, so the failing statement is known. The transaction is then still open (`COMMIT`
//! never ran, or failed): it is rolled back at once, before the connection goes back to the
//! pool, and if even that fails the connection is closed instead of reused.
//!
//! PostgreSQL: its protocol takes one statement with parameters per message, each a round trip
//! before the next (sqlx does not pipeline). So each script's statements go as one where they
//! can ([`script::merged`]: its `INSERT`s, `UPDATE`s and `DELETE`s as data-modifying `WITH`
//! clauses of the last, after its `SELECT … FOR UPDATE` locks), and a batch of one script of
//! one statement, or of one such merged script, runs without `BEGIN` and `COMMIT` (one
//! statement is atomic alone): a run's start (its response and job rows) is one round trip
//! instead of six, its end one instead of seven. A batch of several scripts none of which
//! takes a lock first goes as one statement too ([`script::merged_batch`]: the starts, flushes
//! and ends of several runs in two round trips, its preparation and its run, instead of one
//! each plus `BEGIN` and `COMMIT`); not kept prepared, as its text changes with the batch.
//! A merged statement that fails has written nothing; the scripts then run again statement by
//! statement in a new transaction, so that the failing statement gives its own error (a
//! conflict, say).

use std::time::Duration;

use engine::store::StoreError;
use futures::TryStreamExt as _;
use sqlx::pool::PoolConnection;
use sqlx::{Arguments as _, AssertSqlSafe, Database, PgConnection, Pool, Postgres, Sqlite};

use crate::error;
use crate::script::{self, Script, Value};

/// Runs scripts in one transaction: all of them, or none (the failing statement's error).
#[async_trait::async_trait]
pub(crate) trait RunScripts: Database {
    /// Runs `scripts` on a connection of `pool`, or on the one `held` keeps for this writer
    /// between its batches where the back end gains from it.
    async fn run(
        pool: &Pool<Self>,
        held: &mut Held<Self>,
        scripts: &[&Script],
    ) -> Result<(), StoreError>;
}

/// How long a writer keeps its connection after a batch ([`Held`]).
pub(crate) const HOLD_IDLE: Duration = Duration::from_secs(1);

/// The connection a PostgreSQL writer keeps from one batch to the next while its batches follow
/// each other: sqlx checks a pooled connection with a round trip to the server when it is taken
/// and again when it is given back, two more round trips per batch than its statements. After a
/// pause ([`HOLD_IDLE`] without a batch: the writer's loop, `group_commit.rs`) or a failed batch
/// the connection goes back to the pool, and the next batch takes one checked as before, so a
/// connection the server dropped meanwhile is not the one a write runs on.
pub(crate) struct Held<DB: Database> {
    /// Whether this writer keeps one at all: only where the pool has connections to spare for
    /// everything else (`write_lanes.rs` holds at most half of them).
    enabled: bool,
    connection: Option<PoolConnection<DB>>,
}

impl<DB: Database> Held<DB> {
    /// A writer's keeper, which keeps nothing unless `enabled`.
    pub(crate) fn new(enabled: bool) -> Held<DB> {
        Held {
            enabled,
            connection: None,
        }
    }

    /// The connection kept, else one from `pool`.
    async fn take(&mut self, pool: &Pool<DB>) -> Result<PoolConnection<DB>, StoreError> {
        match self.connection.take() {
            Some(connection) => Ok(connection),
            None => pool.acquire().await.map_err(error::backend),
        }
    }

    /// Keeps `connection` for the next batch (if enabled: else it goes back to the pool).
    fn keep(&mut self, connection: PoolConnection<DB>) {
        if self.enabled {
            self.connection = Some(connection);
        }
    }

    /// Whether a connection is kept.
    pub(crate) fn holds(&self) -> bool {
        self.connection.is_some()
    }

    /// Gives the connection kept back to the pool (the writer found nothing to write for
    /// [`HOLD_IDLE`]).
    pub(crate) fn release(&mut self) {
        self.connection = None;
    }
}

#[async_trait::async_trait]
impl RunScripts for Sqlite {
    /// Never holds a connection: an in-memory store's one connection serves its reads too.
    async fn run(
        pool: &Pool<Sqlite>,
        _held: &mut Held<Sqlite>,
        scripts: &[&Script],
    ) -> Result<(), StoreError> {
        let joined = script::joined(scripts)?;
        let arguments = arguments::<Sqlite>(joined.values.iter().copied())?;
        // One write alone is the usual shape at low load, and the same few recur (keep them
        // prepared); a batch's join is new each time (prepare it for this run only).
        let query =
            sqlx::query_with(AssertSqlSafe(joined.sql), arguments).persistent(scripts.len() == 1);
        let mut connection = pool.acquire().await.map_err(error::backend)?;
        let mut done = 0;
        let outcome = {
            let mut results = sqlx::Executor::execute_many(&mut *connection, query);
            loop {
                match results.try_next().await {
                    Ok(Some(_)) => done += 1,
                    Ok(None) => break Ok(()),
                    Err(e) => break Err(e),
                }
            }
        };
        let Err(e) = outcome else {
            return Ok(());
        };
        // The statement at `done` failed; `BEGIN` may have run and `COMMIT` not.
        if sqlx::query("ROLLBACK")
            .execute(&mut *connection)
            .await
            .is_err()
        {
            // No transaction left open (SQLite rolled it back itself) or a broken connection:
            // either way, never hand out a connection whose state is unknown.
            connection.close_on_drop();
        }
        Err(match joined.origins.get(done) {
            Some(Some((s, n))) => match scripts.get(*s).and_then(|s| s.statements().get(*n)) {
                Some(statement) => statement.error(e),
                None => error::backend(e),
            },
            _ => error::backend(e),
        })
    }
}

#[async_trait::async_trait]
impl RunScripts for Postgres {
    async fn run(
        pool: &Pool<Postgres>,
        held: &mut Held<Postgres>,
        scripts: &[&Script],
    ) -> Result<(), StoreError> {
        let mut connection = held.take(pool).await?;
        let outcome = run_on(&mut connection, scripts).await;
        // A failed batch gives its connection back to the pool (dropped), which checks it.
        if outcome.is_ok() {
            held.keep(connection);
        }
        outcome
    }
}

/// Runs scripts on `connection`: merged where they can be, in one transaction unless a single
/// statement.
async fn run_on(connection: &mut PgConnection, scripts: &[&Script]) -> Result<(), StoreError> {
    // One statement alone is atomic without a transaction around it.
    if let [only] = scripts
        && let [statement] = only.statements()
    {
        let arguments = arguments::<Postgres>(statement.values())?;
        return sqlx::query_with(AssertSqlSafe(statement.sql().to_owned()), arguments)
            .execute(&mut *connection)
            .await
            .map(|_| ())
            .map_err(|e| statement.error(e));
    }
    // Several scripts, none taking a lock first: all of them in one statement, atomic alone.
    // If it fails it has written nothing, and the batch runs again below, script by script,
    // where the failing statement reports its own error.
    if let Some(all) = script::merged_batch(scripts)
        && execute(&mut *connection, &all.sql, &all.values, false)
            .await
            .is_ok()
    {
        return Ok(());
    }
    let merged: Vec<Option<script::Merged<'_>>> =
        scripts.iter().map(|s| script::merged(s)).collect();
    if merged.iter().all(Option::is_none) {
        return run_each(connection, scripts).await;
    }
    // One script merged into one statement and nothing to lock first: that statement alone,
    // atomic without a transaction around it (no `BEGIN`, no `COMMIT` round trip).
    if let [Some(only)] = merged.as_slice()
        && only.selects.is_empty()
    {
        return match execute(&mut *connection, &only.sql, &only.values, true).await {
            Ok(()) => Ok(()),
            // It failed as a whole and wrote nothing: again statement by statement, so that
            // the statement failing reports it.
            Err(_) => run_each(connection, scripts).await,
        };
    }
    let mut tx = sqlx::Connection::begin(&mut *connection)
        .await
        .map_err(error::backend)?;
    for (script, merged) in scripts.iter().zip(&merged) {
        let outcome = match merged {
            None => each(&mut tx, script).await,
            Some(merged) => {
                let mut outcome = Ok(());
                for statement in merged.selects {
                    outcome = one(&mut tx, statement).await;
                    if outcome.is_err() {
                        break;
                    }
                }
                if outcome.is_ok()
                    && execute(&mut *tx, &merged.sql, &merged.values, true)
                        .await
                        .is_err()
                {
                    // Rolled back below: again statement by statement, as above.
                    drop(tx);
                    return run_each(connection, scripts).await;
                }
                outcome
            }
        };
        // Dropping the transaction on an error rolls it back.
        outcome?;
    }
    tx.commit().await.map_err(error::backend)
}

/// Runs scripts statement by statement in one transaction.
async fn run_each(connection: &mut PgConnection, scripts: &[&Script]) -> Result<(), StoreError> {
    let mut tx = sqlx::Connection::begin(connection)
        .await
        .map_err(error::backend)?;
    for script in scripts {
        each(&mut tx, script).await?;
    }
    // Dropping the transaction on an error above rolls it back.
    tx.commit().await.map_err(error::backend)
}

/// Runs a script's statements one by one in `tx`; the first failing one's error.
async fn each(tx: &mut sqlx::Transaction<'_, Postgres>, script: &Script) -> Result<(), StoreError> {
    for statement in script.statements() {
        one(tx, statement).await?;
    }
    Ok(())
}

/// Runs one statement in `tx`, its failure as the statement maps it.
async fn one(
    tx: &mut sqlx::Transaction<'_, Postgres>,
    statement: &script::Statement,
) -> Result<(), StoreError> {
    let arguments = arguments::<Postgres>(statement.values())?;
    sqlx::query_with(AssertSqlSafe(statement.sql().to_owned()), arguments)
        .execute(&mut **tx)
        .await
        .map(|_| ())
        .map_err(|e| statement.error(e))
}

/// Runs a merged statement ([`script::merged`], [`script::merged_batch`]); `persistent`: kept
/// prepared on the connection (sqlx's statement cache) for the next time. A batch's statement
/// is not: its text changes with the batch's make-up, and each kept one holds server memory
/// (about 0.6 MB for a batch of runs' ends; up to sqlx's 100 per connection).
async fn execute<'e, E>(
    executor: E,
    sql: &str,
    values: &[&Value],
    persistent: bool,
) -> Result<(), StoreError>
where
    E: sqlx::Executor<'e, Database = Postgres>,
{
    let arguments = arguments::<Postgres>(values.iter().copied())?;
    sqlx::query_with(AssertSqlSafe(sql.to_owned()), arguments)
        .persistent(persistent)
        .execute(executor)
        .await
        .map(|_| ())
        .map_err(error::backend)
}

/// The values bound, in order, as the back end's arguments.
fn arguments<'v, DB>(
    values: impl IntoIterator<Item = &'v Value>,
) -> Result<DB::Arguments, StoreError>
where
    DB: Database,
    i64: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    std::sync::Arc<str>: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    &'static str: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<std::sync::Arc<str>>: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    std::sync::Arc<[u8]>: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    Option<std::sync::Arc<[u8]>>: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    let mut arguments = DB::Arguments::default();
    for value in values {
        let added = match value {
            Value::Int(n) => arguments.add(*n),
            Value::Text(text) => arguments.add(std::sync::Arc::clone(text)),
            Value::Static(text) => arguments.add(*text),
            Value::OptionalText(text) => arguments.add(text.clone()),
            Value::Blob(bytes) => arguments.add(std::sync::Arc::clone(bytes)),
            Value::OptionalBlob(bytes) => arguments.add(bytes.clone()),
        };
        added.map_err(|e| StoreError::Backend(format!("cannot bind a value: {e}")))?;
    }
    Ok(arguments)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use pgschema::testdb::TestDatabase;
    use sqlx::error::ErrorKind;

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// A script inserting row `id` into `table` (`t` or `u`, both `(id TEXT PRIMARY KEY)`).
    fn insert(table: &str, id: &str) -> Script {
        let mut script = Script::new();
        script
            .statement(format!("INSERT INTO {table} (id) VALUES ($1)"))
            .bind(Arc::<str>::from(id))
            .conflict_on(ErrorKind::UniqueViolation, format!("{table} {id}"));
        script
    }

    /// The statements prepared on the writer's kept connection, in any order.
    async fn prepared(held: &mut Held<Postgres>, pool: &Pool<Postgres>) -> Vec<String> {
        let mut connection = held.take(pool).await.expect("a connection");
        let mut statements: Vec<String> =
            sqlx::query_scalar("SELECT statement FROM pg_prepared_statements")
                .fetch_all(&mut *connection)
                .await
                .expect("read");
        held.keep(connection);
        statements.sort();
        statements
    }

    /// Several scripts with nothing to lock go as one statement, which is not kept prepared:
    /// nothing is prepared on the connection but the test's own query (statement by
    /// statement, each script's insert would be, and kept); a batch with a key taken twice
    /// fails whole, with the failing statement's own error, and writes nothing.
    #[tokio::test]
    async fn a_batch_of_scripts_is_one_statement() -> TestResult {
        let db = TestDatabase::create("agentd_batch").await?;
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .connect(db.url())
            .await?;
        for table in ["t", "u"] {
            sqlx::query(AssertSqlSafe(format!(
                "CREATE TABLE {table} (id TEXT PRIMARY KEY)"
            )))
            .execute(&pool)
            .await?;
        }
        let mut held = Held::new(true);
        // Clear what the set-up prepared on the one connection.
        {
            let mut connection = held.take(&pool).await?;
            sqlx::query("DEALLOCATE ALL")
                .execute(&mut *connection)
                .await?;
            held.keep(connection);
        }

        let (a, b, c) = (insert("t", "a"), insert("u", "b"), insert("t", "c"));
        Postgres::run(&pool, &mut held, &[&a, &b, &c]).await?;
        let (d, e, f) = (insert("u", "d"), insert("t", "e"), insert("t", "f"));
        Postgres::run(&pool, &mut held, &[&d, &e, &f]).await?;
        let statements = prepared(&mut held, &pool).await;
        assert_eq!(statements, ["SELECT statement FROM pg_prepared_statements"]);

        let (g, taken) = (insert("u", "g"), insert("t", "a"));
        let refused = Postgres::run(&pool, &mut held, &[&g, &taken]).await;
        assert!(
            matches!(&refused, Err(StoreError::Conflict(message)) if message == "t a"),
            "{refused:?}"
        );
        let rows: Vec<String> =
            sqlx::query_scalar("SELECT id FROM t UNION ALL SELECT id FROM u ORDER BY 1")
                .fetch_all(&pool)
                .await?;
        assert_eq!(rows, ["a", "b", "c", "d", "e", "f"]);
        held.release();
        pool.close().await;
        Ok(())
    }
}
