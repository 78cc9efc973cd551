//! SQLite storage for agentd: the adapter behind the engine's storage ports
//! ([`engine::store::ResponseStore`], [`engine::store::EventStore`], [`engine::store::KeyStore`],
//! [`engine::store::JobStore`], [`engine::store::MaintenanceStore`]).
//!
//! The SQL is kept portable to PostgreSQL (TEXT and BIGINT columns, JSON as TEXT, times as Unix
//! seconds, `$n` placeholders, `ON CONFLICT` upserts) so a PostgreSQL pool can later share it.
//!
//! # Layout
//!
//! - `lib.rs`: [`SqliteStore`], opening the database (pragmas, pools) and running migrations.
//! - `migrate.rs`: the schema migrations, embedded from `crates/store/migrations/*.sql`.
//! - `responses.rs`, `events.rs`, `keys.rs`, `jobs.rs`, `maintenance.rs`: one port each.
//! - `projects.rs` ([`engine::admin_store::ProjectStore`]: projects, key roles), `connectors.rs`
//!   ([`engine::admin_store::ConnectorStore`]) with `connector_events.rs`, `oauth_grants.rs` and
//!   `reseal.rs` (every sealed value re-sealed in one transaction).
//! - `error.rs`: mapping of sqlx and decode failures to [`StoreError`] (never with secrets).
//!
//! Writes go through a pool of one connection (SQLite admits one writer at a time, so queueing
//! in-process is cheaper than busy waits); reads use a separate pool and run concurrently under
//! WAL. An event batch is a single transaction with multi-row inserts; a job claim is a single
//! `BEGIN IMMEDIATE` transaction (see `jobs.rs`).
//!
//! # Example
//!
//! ```
//! use engine::store::{EventRecord, EventStore, KeyStore};
//! use agentd_store::SqliteStore;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), engine::store::StoreError> {
//! let store = SqliteStore::connect("sqlite::memory:").await?;
//! let project = store.ensure_project("default").await?;
//! assert!(project.starts_with("proj_"));
//!
//! let batch = [EventRecord { sequence_number: 0, data: r#"{"type":"response.created"}"#.into() }];
//! store.append_events("resp_1", &batch).await?;
//! assert_eq!(store.events_after("resp_1", None).await?.len(), 1);
//! # Ok(())
//! # }
//! ```

mod connector_events;
mod connectors;
mod error;
mod events;
mod files;
mod items;
mod jobs;
mod keys;
mod maintenance;
mod migrate;
mod oauth_grants;
mod projects;
mod reseal;
mod responses;

use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use engine::store::StoreError;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

/// The database file inside the data directory.
pub const DATABASE_FILE: &str = "agentd.db";

/// How long a statement waits for a lock held by another process before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Read connections of a file-backed store (the machine class we target has few cores).
const READ_CONNECTIONS: u32 = 4;

/// The SQLite implementation of the engine's storage ports. Cheap to clone (pools are shared).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    /// Every write goes through this pool of exactly one connection: SQLite has one writer at a
    /// time, and queueing here keeps batches as single transactions without `SQLITE_BUSY` retries.
    writer: SqlitePool,
    /// Reads run here, concurrently with the writer thanks to WAL. For an in-memory database
    /// this is the writer pool itself, because the database lives inside that one connection.
    reader: SqlitePool,
}

impl SqliteStore {
    /// Open (creating when missing) the store in `data_dir`: the directory, the database file
    /// [`DATABASE_FILE`] inside it, WAL journal, `synchronous=NORMAL`, foreign keys, a busy
    /// timeout; then run the migrations.
    pub async fn open(data_dir: &Path) -> Result<SqliteStore, StoreError> {
        tokio::fs::create_dir_all(data_dir).await.map_err(|e| {
            StoreError::Backend(format!(
                "cannot create data directory {}: {e}",
                data_dir.display()
            ))
        })?;
        let options = SqliteConnectOptions::new()
            .filename(data_dir.join(DATABASE_FILE))
            .create_if_missing(true);
        Self::open_file(options).await
    }

    /// Connect to a `sqlite://…` URL (e.g. `sqlite:///var/lib/agentd/agentd.db?mode=rwc`) or
    /// `sqlite::memory:`, then run the migrations. An in-memory database lives in one connection
    /// that is never closed while the store exists, so every query sees the same data.
    pub async fn connect(url: &str) -> Result<SqliteStore, StoreError> {
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| StoreError::Backend(format!("invalid sqlite url: {e}")))?;
        if is_memory_url(url) {
            Self::open_memory(options).await
        } else {
            Self::open_file(options).await
        }
    }

    /// The pool that writes go through, for maintenance and tests that need raw SQL.
    pub fn pool(&self) -> &SqlitePool {
        &self.writer
    }

    /// Close both pools, waiting for queries in flight. Use at shutdown.
    pub async fn close(&self) {
        self.reader.close().await;
        self.writer.close().await;
    }

    async fn open_file(options: SqliteConnectOptions) -> Result<SqliteStore, StoreError> {
        let options = options
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await
            .map_err(error::backend)?;
        migrate::run(&writer).await?;
        let reader = SqlitePoolOptions::new()
            .max_connections(READ_CONNECTIONS)
            .connect_lazy_with(options);
        Ok(SqliteStore { writer, reader })
    }

    async fn open_memory(options: SqliteConnectOptions) -> Result<SqliteStore, StoreError> {
        let options = options.foreign_keys(true).busy_timeout(BUSY_TIMEOUT);
        // Closing the last connection would drop the database: keep exactly one, forever.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(error::backend)?;
        migrate::run(&pool).await?;
        Ok(SqliteStore {
            writer: pool.clone(),
            reader: pool,
        })
    }
}

/// Whether a SQLite URL names an in-memory database (`sqlite::memory:`, `?mode=memory`).
fn is_memory_url(url: &str) -> bool {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    path.ends_with(":memory:") || query.split('&').any(|pair| pair == "mode=memory")
}

/// Now, in Unix seconds (0 if the clock is before 1970).
fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::is_memory_url;

    #[test]
    fn memory_urls_are_recognised() {
        assert!(is_memory_url("sqlite::memory:"));
        assert!(is_memory_url("sqlite://:memory:"));
        assert!(is_memory_url("sqlite://file.db?mode=memory&cache=shared"));
        assert!(!is_memory_url("sqlite://data/agentd.db"));
        assert!(!is_memory_url("sqlite://data/agentd.db?mode=rwc"));
    }
}
