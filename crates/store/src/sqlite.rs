//! The SQLite back end: [`SqliteStore`], opening the database (pragmas, pools) and the SQL
//! that differs from PostgreSQL's. The ports themselves are the shared modules of `ports/`,
//! compiled here against SQLite.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use engine::store::StoreError;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::checkpoint::{self, Checkpointer, Files};
use crate::checkpoint_thread::CheckpointThreads;
use crate::conversation_memo::ConversationMemo;
use crate::group_commit::GroupWriter;
use crate::key_marker::KeyMarker;
use crate::packed_transcripts::PackedTranscripts;
use crate::sqlite_reader::InlineReader;
use crate::transcript_memo::TranscriptMemo;
use crate::wal_write_out::{self, WriteOut};
use crate::{error, migrate, sqlite_writer};

/// Where a response's transcript is stored (schema versions 17 and 18): in `transcript_json`
/// alone, TEXT or packed in a BLOB (SQLite keeps each value's own type). `stored` reads it
/// (`$table`: the table's alias and its dot, or ""); `column`, `value` and `set` are what an
/// upsert of a response adds for a packed transcript, nothing here; `assign` sets it to the
/// packed `$1`. The ports' statements are written with it (`ports/responses.rs`,
/// `ports/linked_transcripts.rs`), before `mod ports` so that they see it.
macro_rules! transcript_column {
    (stored $table:literal) => {
        concat!($table, "transcript_json")
    };
    (column) => {
        ""
    };
    (value) => {
        ""
    };
    (set) => {
        ""
    };
    (assign) => {
        "transcript_json = $1"
    };
    (lock) => {
        ""
    };
}

// The port modules are shared with the PostgreSQL back end (see `ports/mod.rs`).
#[allow(clippy::duplicate_mod)]
#[path = "ports/mod.rs"]
mod ports;

/// The retention purge's walks, whose query plans a test checks (`upgrade_tests.rs`).
#[cfg(test)]
pub(crate) use ports::maintenance::{PURGE_CHUNKS_PAGE, PURGE_EVENTS_PAGE};

/// The database this back end's port modules are compiled against.
type Db = sqlx::Sqlite;
/// A row of [`Db`].
type DbRow = sqlx::sqlite::SqliteRow;
/// The store the port modules implement.
type Store = SqliteStore;

/// The SQL that differs between the back ends.
mod dialect {
    /// Opens a job claim: `BEGIN IMMEDIATE` takes the database write lock before the read, so
    /// claimers in other processes sharing the file cannot interleave between the read of the
    /// candidate and its update.
    pub(super) const CLAIM_BEGIN: &str = "BEGIN IMMEDIATE";

    /// Opens a write transaction on the writer pool: `BEGIN IMMEDIATE` takes the write lock
    /// (waiting for it up to the busy timeout) before the first read. The run-path writes go
    /// through a connection of their own (`sqlite_writer.rs`), and a deferred transaction that
    /// read before that connection committed could not write after it (`SQLITE_BUSY`, at once,
    /// without waiting).
    pub(super) const WRITE_BEGIN: &str = "BEGIN IMMEDIATE";

    /// A conversation of a project, before items are appended to it: a write transaction
    /// (`WRITE_BEGIN`) holds the database's one write lock already, so no row lock is needed.
    pub(super) const CONVERSATION_FOR_APPEND: &str =
        "SELECT CAST(1 AS BIGINT) FROM conversations WHERE id = $1 AND project_id = $2";

    /// Nothing to lock before a run's append: one writer commits at a time.
    pub(super) const LOCK_CONVERSATION: Option<&str> = None;

    /// Event chunks are stored packed where that makes them smaller (schema version 12,
    /// against a fixed dictionary since 13, `event_pack.rs`): their lines fill pages of the WAL and of the database file.
    pub(super) const PACK_EVENTS: bool = true;

    /// A response's JSON is stored packed too where that makes it smaller (schema version 14,
    /// `event_pack.rs`): the row of a finished run then shares its page with two others. (Its
    /// transcript is packed on both back ends: `transcript_column!`.)
    pub(super) const PACK_RESPONSES: bool = true;

    /// Nothing to lock before a response's deletion reads the transcripts linked to it: the
    /// write transaction holds the database's one write lock.
    pub(super) const LOCK_RESPONSE: Option<&str> = None;

    /// The oldest claimable job and its state before the claim.
    pub(super) const SELECT_CLAIMABLE: &str = "\
SELECT response_id, state
FROM jobs
WHERE state = 'queued' OR (state = 'running' AND lease_until_ms < $1)
ORDER BY created_at_ms, response_id
LIMIT 1";

    /// Stores a response's items, replacing any at the same place.
    pub(super) const INDEX_ITEMS: &str = "\
INSERT OR REPLACE INTO response_items \
(response_id, kind, position, project_id, item_id, item_json, created_at) ";

    /// Nothing to append to [`INDEX_ITEMS`]: `OR REPLACE` handles the conflict.
    pub(super) const INDEX_ITEMS_CONFLICT: &str = "";

    /// The latest stored item with an id (`rowid` orders rows of the same second).
    pub(super) const FIND_ITEM: &str = "\
SELECT item_id, item_json, kind FROM response_items \
WHERE project_id = $1 AND item_id = $2 \
ORDER BY created_at DESC, rowid DESC LIMIT 1";
}

/// The database file inside the data directory.
pub const DATABASE_FILE: &str = "agentd.db";

/// How long a statement waits for a lock held by another process before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Statement results the writer connection's thread may queue for the task reading them before
/// it waits for that task: an in-memory store's group writer runs each batch as one query with
/// a result per statement (`script_run.rs`), and sqlx's default (50) would pause the thread,
/// and wake it again, every 50 statements of a large batch.
const WRITER_RESULTS: usize = 4096;

/// Read connections of a file-backed store (the machine class we target has few cores).
const READ_CONNECTIONS: u32 = 4;

/// The SQLite implementation of the engine's storage ports. Cheap to clone (pools are shared).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    /// The writes other than the run path's (administration, job claims, maintenance) go
    /// through this pool of exactly one connection: SQLite has one writer at a time, and
    /// queueing here keeps them from waiting on each other in SQLite's busy handler. Their
    /// transactions take the write lock up front (`dialect::WRITE_BEGIN`): the run-path writes
    /// of a file-backed store commit on a connection of their own.
    writer: SqlitePool,
    /// Reads run here, concurrently with the writer thanks to WAL. For an in-memory database
    /// this is the writer pool itself, because the database lives inside that one connection.
    reader: SqlitePool,
    /// The run-path writes (response records, event batches, run endings) of all concurrent
    /// runs go through this handle, whose writer commits those waiting together in one
    /// transaction: for a file, a thread of its own owning a connection of its own
    /// (`sqlite_writer.rs`); in memory, a task on the writer pool's one connection
    /// (`group_commit.rs`).
    group: GroupWriter,
    /// Checkpoints the WAL off the commit path (`checkpoint.rs`); `None` in memory (no WAL).
    _checkpointer: Option<Checkpointer>,
    /// Open mode's per-request read, at once on the caller's thread (`sqlite_reader.rs`);
    /// `None` in memory (the database lives in the pool's one connection).
    inline: Option<Arc<InlineReader>>,
    /// The marker file replaced whenever a key is written, which lets open mode's check skip
    /// the read while it is unchanged (`key_marker.rs`); `None` in memory (one process).
    key_marker: Option<Arc<KeyMarker>>,
    /// The transcripts of runs that just ended, parsed, for their continuations
    /// (`transcript_memo.rs`).
    transcripts: Arc<TranscriptMemo>,
    /// The transcript packed last for each conversation, which the next is packed after
    /// (`packed_transcripts.rs`).
    packed_transcripts: Arc<PackedTranscripts>,
    /// The items of the conversations runs read last, parsed, for their next runs
    /// (`conversation_memo.rs`).
    conversations: Arc<ConversationMemo>,
}

impl SqliteStore {
    /// Open (creating when missing) the store in `data_dir`: the directory, the database file
    /// [`DATABASE_FILE`] inside it, WAL journal, `synchronous=NORMAL`, foreign keys, a busy
    /// timeout, WAL checkpoints in a task of their own (never inside a commit); then run the
    /// migrations.
    ///
    /// `synchronous=NORMAL` in WAL mode: a commit is written to the WAL (the OS has it) before
    /// it returns, without an `fsync`; the WAL is `fsync`ed at each checkpoint. A crash of the
    /// process loses nothing committed; only a crash of the machine (power, kernel) may lose
    /// the transactions committed since the last checkpoint (at most a quarter of a second
    /// here), and never corrupts the database. `FULL` would add an `fsync` to every commit.
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

    /// Whether `sql` returns a row, read inline when the store has an [`InlineReader`] and it
    /// can read now; `None` means: read through the pool.
    fn read_inline(&self, sql: &str) -> Option<bool> {
        self.inline.as_ref()?.exists(sql)
    }

    /// The marker of this store's keys, if it has one (a file).
    fn key_marker(&self) -> Option<&KeyMarker> {
        self.key_marker.as_deref()
    }

    /// The store with its keys' marker answering for `recheck` (tests).
    #[cfg(test)]
    pub(crate) fn with_key_recheck(mut self, recheck: std::time::Duration) -> SqliteStore {
        self.key_marker = self
            .key_marker
            .map(|marker| Arc::new(marker.with_recheck(recheck)));
        self
    }

    /// The inline reader, if any (tests).
    #[cfg(test)]
    pub(crate) fn inline_reader(&self) -> Option<&InlineReader> {
        self.inline.as_deref()
    }

    /// The group writer's gate (tests: hold the writer as the checkpointer does).
    #[cfg(test)]
    pub(crate) fn gate(&self) -> crate::group_commit::Gate {
        self.group.gate()
    }

    /// Runs a run-path write (of the response `_key`: one writer takes every response's)
    /// through the group writer: in a transaction shared with the other writes waiting at the
    /// same moment, answered once committed.
    async fn write(&self, _key: &str, script: crate::script::Script) -> Result<(), StoreError> {
        self.group.write(script).await
    }

    /// Close both pools, waiting for queries in flight. Use at shutdown. (A file-backed store's
    /// run-path writer thread ends when the last clone of the store is dropped, after the writes
    /// queued before.)
    pub async fn close(&self) {
        self.reader.close().await;
        self.writer.close().await;
    }

    async fn open_file(options: SqliteConnectOptions) -> Result<SqliteStore, StoreError> {
        Self::open_file_with(options, checkpoint::DEFAULT).await
    }

    pub(crate) async fn open_file_with(
        options: SqliteConnectOptions,
        checkpoints: checkpoint::Settings,
    ) -> Result<SqliteStore, StoreError> {
        let options = options
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT)
            // No connection checkpoints when it commits: the checkpointer does.
            .pragma("wal_autocheckpoint", "0")
            .pragma(
                "journal_size_limit",
                checkpoints.journal_size_limit.to_string(),
            );
        // No ping before each use (`test_before_acquire`): a round trip to the connection's
        // thread per transaction or read, for a local file that cannot hang up.
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .test_before_acquire(false)
            .connect_with(options.clone().row_buffer_size(WRITER_RESULTS))
            .await
            .map_err(error::backend)?;
        migrate::migrator(migrate::SQLITE)
            .run(&writer)
            .await
            .map_err(migrate::failed)?;
        let checkpoint_threads = CheckpointThreads::start(
            options.get_filename(),
            BUSY_TIMEOUT,
            checkpoints.journal_size_limit,
        )?;
        // The run-path writes: on a thread of their own, with the same pragmas.
        let group = sqlite_writer::start(sqlite_writer::Settings {
            path: options.get_filename().to_owned(),
            busy_timeout: BUSY_TIMEOUT,
            journal_size_limit: checkpoints.journal_size_limit,
            write_out: Some(WriteOut::spawn(
                options.get_filename(),
                wal_write_out::EVERY,
            )),
            gather: sqlite_writer::GATHER,
        })
        .await?;
        // Open mode's per-request read, on the caller's thread.
        let inline = InlineReader::open(options.get_filename())?;
        let key_marker = KeyMarker::beside(options.get_filename());
        let files = Files::new(options.get_filename().to_owned());
        let reader = SqlitePoolOptions::new()
            .max_connections(READ_CONNECTIONS)
            .test_before_acquire(false)
            .connect_lazy_with(options);
        let gate = group.gate();
        Ok(SqliteStore {
            writer,
            reader,
            group,
            _checkpointer: Some(Checkpointer::spawn(
                checkpoint_threads,
                files,
                checkpoints,
                gate,
            )),
            inline: Some(Arc::new(inline)),
            key_marker: Some(Arc::new(key_marker)),
            transcripts: Arc::default(),
            packed_transcripts: Arc::default(),
            conversations: Arc::default(),
        })
    }

    async fn open_memory(options: SqliteConnectOptions) -> Result<SqliteStore, StoreError> {
        let options = options
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT)
            .row_buffer_size(WRITER_RESULTS);
        // Closing the last connection would drop the database: keep exactly one, forever.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(error::backend)?;
        migrate::migrator(migrate::SQLITE)
            .run(&pool)
            .await
            .map_err(migrate::failed)?;
        Ok(SqliteStore {
            group: GroupWriter::spawn(pool.clone()),
            writer: pool.clone(),
            reader: pool,
            _checkpointer: None,
            inline: None,
            key_marker: None,
            transcripts: Arc::default(),
            packed_transcripts: Arc::default(),
            conversations: Arc::default(),
        })
    }
}

/// Whether a SQLite URL names an in-memory database (`sqlite::memory:`, `?mode=memory`).
fn is_memory_url(url: &str) -> bool {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    path.ends_with(":memory:") || query.split('&').any(|pair| pair == "mode=memory")
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
