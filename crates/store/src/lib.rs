//! Storage for agentd: the adapters behind the engine's storage ports
//! ([`engine::store::ResponseStore`], [`engine::store::EventStore`], [`engine::store::KeyStore`],
//! [`engine::store::JobStore`], [`engine::store::MaintenanceStore`], [`engine::store::FileStore`],
//! [`engine::store::ItemStore`], and [`engine::workspace_snapshots::WorkspaceSnapshotStore`] for
//! sandbox workspaces shared between replicas) on SQLite ([`SqliteStore`], the embedded default) and
//! PostgreSQL ([`PgStore`], for several replicas sharing one database).
//!
//! The SQL is written once, in the portable subset both databases run (TEXT and BIGINT
//! columns, JSON as TEXT, times as Unix seconds, `$n` placeholders, `ON CONFLICT` upserts),
//! and compiled once per back end; the few statements that differ live in each back end's
//! `dialect` module.
//!
//! # Layout
//!
//! - `lib.rs`: [`connect`] (a store from a URL), shared helpers.
//! - `sqlite.rs`: [`SqliteStore`], opening the database (pragmas, pools), SQLite's dialect.
//! - `postgres.rs`: [`PgStore`], the pool and TLS, PostgreSQL's dialect.
//! - `ports/`: one module per port, included by both back ends (see `ports/mod.rs`); the
//!   administration ports too: `projects.rs` ([`engine::admin_store::ProjectStore`]: projects,
//!   key roles), `connectors.rs` ([`engine::admin_store::ConnectorStore`]) with
//!   `connector_events.rs`, `oauth_grants.rs` and `reseal.rs` (every sealed value re-sealed in
//!   one transaction).
//! - `migrate.rs`: the schema migrations, embedded from `migrations/sqlite/*.sql` and
//!   `migrations/postgres/*.sql`.
//! - `group_commit.rs`: the queue of the run-path writes of concurrent runs, committed together,
//!   and the writer task that runs them through a sqlx pool (PostgreSQL, in-memory SQLite);
//!   `sqlite_writer.rs`: a file-backed SQLite store's writer instead, a thread of its own owning
//!   a `rusqlite` connection; `script.rs`: such a write as data (statements and values);
//!   `script_run.rs`: how the task runs a batch of them on each back end (on PostgreSQL each
//!   script's statements merged into one round trip where they can, and a batch of scripts
//!   without locks into one statement).
//! - `write_lanes.rs`: PostgreSQL's run-path writes in up to four group writers committing side
//!   by side, every write of one response in the same one.
//! - `checkpoint.rs`: SQLite WAL checkpoints in a task of their own, off the commit path, run
//!   on `checkpoint_thread.rs`'s two threads (the periodic ones in Linux's idle scheduling
//!   class, for the checkpoint only, while `cpu_idle.rs` finds the machine idle enough); `wal_write_out.rs`: the WAL
//!   `fdatasync`ed 20 ms after commits, so that no checkpoint has tens of megabytes of it to
//!   write out at once.
//! - `transcript_memo.rs`: the parsed transcripts of runs that just ended, kept for the
//!   continuation likely to read them next, handed over only for the very text read back;
//!   `conversation_memo.rs`: the parsed items of the conversations runs read last, each
//!   copied for the next read only when its row holds the very text it was parsed from;
//!   both keep the engine's `budget_map` (a map bounded by a budget of bytes).
//! - `key_marker.rs`: the marker file (`agentd.db-keys`) replaced whenever a key is written,
//!   which answers open mode's per-request "any key?" without a read while it is unchanged;
//!   `sqlite_reader.rs`: that read, when it runs, on the caller's thread.
//! - `event_pack.rs`: event chunks compressed (LZ4, against a fixed dictionary) for SQLite, and unpacked for every reader.
//!   A response's JSON is packed the same way; its transcript in pieces (`transcript_pack.rs`),
//!   the next transcript of a conversation after the last one packed (`packed_transcripts.rs`),
//!   stored linked to the previous response's, only its own pieces (`transcript_link.rs`);
//!   `stored_json.rs`: such a column's value as stored, packed or text. `text_pack.rs`: a
//!   response's long instructions stored once as they are, its JSON and its run's last chunks
//!   packed against them. `lz4_block.rs`: the LZ4 blocks of all these, with the fixed
//!   dictionaries stored blocks refer to.
//! - `copy.rs`: `agentd store copy`, every table from one store to another.
//! - `error.rs`: mapping of sqlx and decode failures to [`StoreError`] (never with secrets).
//!
//! On SQLite, the run-path writes (records, event batches, run endings) of all concurrent runs
//! share transactions on the writer thread's connection (`sqlite_writer.rs`); the other writes
//! go through a sqlx pool of one connection, each transaction taking the write lock up front;
//! reads use a separate pool and run concurrently under WAL. A job claim is a single
//! transaction (see `ports/jobs.rs`).
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

mod checkpoint;
mod checkpoint_thread;
mod conversation_memo;
mod copy;
mod cpu_idle;
mod error;
mod event_pack;
mod group_commit;
mod key_marker;
mod lz4_block;
mod migrate;
mod packed_transcripts;
mod postgres;
mod script;
mod script_run;
mod sqlite;
mod sqlite_reader;
mod sqlite_writer;
mod stored_json;
mod text_pack;
mod transcript_link;
mod transcript_memo;
mod transcript_pack;
#[cfg(test)]
mod upgrade_tests;
mod wal_write_out;
mod write_lanes;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use engine::store::{Store, StoreError};

pub use copy::{CopyReport, copy};
pub use postgres::{DEFAULT_POOL_SIZE, PgStore, PoolSettings};
pub use sqlite::{DATABASE_FILE, SqliteStore};

/// Whether a URL names a PostgreSQL database (`postgres://…` or `postgresql://…`).
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Opens the store a URL names (`sqlite:…` or `postgres://…`), migrated.
pub async fn connect(url: &str, pool: PoolSettings) -> Result<Arc<dyn Store>, StoreError> {
    if is_postgres_url(url) {
        Ok(Arc::new(PgStore::connect(url, pool).await?))
    } else if url.starts_with("sqlite:") {
        Ok(Arc::new(SqliteStore::connect(url).await?))
    } else {
        Err(StoreError::Backend(
            "unsupported database URL: expected sqlite:… or postgres://…".to_owned(),
        ))
    }
}

/// Now, in Unix seconds (0 if the clock is before 1970).
fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
