//! The PostgreSQL back end: [`PgStore`], connecting (TLS as the URL asks), the pool size and
//! the SQL that differs from SQLite's. The ports themselves are the shared modules of `ports/`,
//! compiled here against PostgreSQL.
//!
//! Several agentd processes (replicas) may share one database: migrations run under sqlx's
//! advisory lock (see `migrate.rs`), job claims skip rows other replicas hold (`FOR UPDATE
//! SKIP LOCKED`), and everything else is ordinary transactions on one pool.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use engine::store::StoreError;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use crate::conversation_memo::ConversationMemo;
use crate::packed_transcripts::PackedTranscripts;
use crate::transcript_memo::TranscriptMemo;
use crate::write_lanes::WriteLanes;
use crate::{error, migrate};

/// Where a response's transcript is stored (schema version 19): TEXT in `transcript_json`, or,
/// packed, in `transcript_packed` (BYTEA), `transcript_json` then ''. `stored` reads it as one
/// BYTEA value (`$table`: the table's alias and its dot, or ""): a TEXT one converted, which
/// the readers tell from a packed one by its first byte (`ports/json_columns.rs`); a
/// `transcript_json` that is not '' wins, as a replica of an older version writes it.
/// `column`, `value` and `set` are what an upsert of a response adds for the packed column
/// (its twelfth value); `assign` sets it to the packed `$1`; `lock`, in the statement that
/// refuses a transcript linked to a response no longer stored, keeps that response from being
/// deleted until the write commits (`ports/responses.rs`, `BASE_STORED`). Before `mod ports`
/// so that the ports' statements see it.
macro_rules! transcript_column {
    (stored $table:literal) => {
        concat!(
            "CASE WHEN ",
            $table,
            "transcript_json = '' THEN ",
            $table,
            "transcript_packed ELSE convert_to(",
            $table,
            "transcript_json, 'UTF8') END"
        )
    };
    (column) => {
        ", transcript_packed"
    };
    (value) => {
        ", $12"
    };
    (set) => {
        ",\n    transcript_packed = excluded.transcript_packed"
    };
    (assign) => {
        "transcript_packed = $1, transcript_json = ''"
    };
    (lock) => {
        " FOR KEY SHARE"
    };
}

// The port modules are shared with the SQLite back end (see `ports/mod.rs`).
#[allow(clippy::duplicate_mod)]
#[path = "ports/mod.rs"]
mod ports;

/// The database this back end's port modules are compiled against.
type Db = sqlx::Postgres;
/// A row of [`Db`].
type DbRow = sqlx::postgres::PgRow;
/// The store the port modules implement.
type Store = PgStore;

/// The SQL that differs between the back ends.
mod dialect {
    /// Opens a job claim: an ordinary transaction; the row lock of [`SELECT_CLAIMABLE`] keeps
    /// the claim to one claimer.
    pub(super) const CLAIM_BEGIN: &str = "BEGIN";

    /// Event chunks stay TEXT: TOAST compresses a value beyond ~2 KB already (pglz), and a
    /// replica of an older version reads them during a rolling upgrade.
    pub(super) const PACK_EVENTS: bool = false;

    /// Responses stay TEXT as well (TOAST; older replicas read them). Transcripts of 16 KiB or
    /// more are packed, and linked (schema version 19, `transcript_column!`): every response
    /// keeps its conversation's whole transcript, so stored whole a long conversation's
    /// store grows with the square of its turns.
    pub(super) const PACK_RESPONSES: bool = false;

    /// Locks a response before its deletion reads the transcripts linked to it
    /// (`ports/linked_transcripts.rs`, `unlink`): a write linking a transcript to it, on this
    /// replica or another, holds a key-share lock on it until it commits (`transcript_column!`),
    /// so the deletion sees that transcript, or the write sees the response gone.
    pub(super) const LOCK_RESPONSE: Option<&str> = Some(
        "SELECT CAST(1 AS BIGINT) FROM responses WHERE id = $1 AND project_id = $2 FOR UPDATE",
    );

    /// Opens a write transaction: an ordinary one.
    pub(super) const WRITE_BEGIN: &str = "BEGIN";

    /// A conversation of a project, its row locked until the transaction ends, before the
    /// positions of items appended to it are read (`MAX(position) + 1`): transactions appending
    /// to one conversation at once (two write lanes, two replicas, the items API beside a run)
    /// then take their positions one after the other, not the same ones.
    pub(super) const CONVERSATION_FOR_APPEND: &str =
        "SELECT CAST(1 AS BIGINT) FROM conversations WHERE id = $1 AND project_id = $2 FOR UPDATE";

    /// The same lock as the first statement of a run's append (a script's statement, whose
    /// rows are not read; a conversation gone locks nothing and takes nothing).
    pub(super) const LOCK_CONVERSATION: Option<&str> = Some(
        "SELECT CAST(1 AS BIGINT) FROM conversations WHERE id = $1 AND project_id = $2 FOR UPDATE",
    );

    /// The oldest claimable job that no other transaction is claiming, locked until the claim
    /// commits. Rows other replicas are claiming are skipped, not waited for.
    pub(super) const SELECT_CLAIMABLE: &str = "\
SELECT response_id, state
FROM jobs
WHERE state = 'queued' OR (state = 'running' AND lease_until_ms < $1)
ORDER BY created_at_ms, response_id
LIMIT 1
FOR UPDATE SKIP LOCKED";

    /// Stores a response's items; [`INDEX_ITEMS_CONFLICT`] replaces any at the same place.
    pub(super) const INDEX_ITEMS: &str = "\
INSERT INTO response_items \
(response_id, kind, position, project_id, item_id, item_json, created_at) ";

    /// SQLite's `INSERT OR REPLACE`: the row is replaced and, like a new SQLite rowid, takes a
    /// new `seq`.
    pub(super) const INDEX_ITEMS_CONFLICT: &str = " \
ON CONFLICT (response_id, kind, position) DO UPDATE SET \
project_id = excluded.project_id, item_id = excluded.item_id, item_json = excluded.item_json, \
created_at = excluded.created_at, seq = nextval('response_items_order')";

    /// The latest stored item with an id (`seq` orders rows of the same second).
    pub(super) const FIND_ITEM: &str = "\
SELECT item_id, item_json, kind FROM response_items \
WHERE project_id = $1 AND item_id = $2 \
ORDER BY created_at DESC, seq DESC LIMIT 1";
}

/// Connections per replica when the operator sets none.
pub const DEFAULT_POOL_SIZE: u32 = 10;

/// How long a query waits for a free pooled connection before failing.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// How the PostgreSQL pool is sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolSettings {
    /// Most connections this process opens (every replica opens its own pool: the database's
    /// `max_connections` must cover replicas × this, plus `agentd migrate` and admin tools).
    pub max_connections: u32,
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            max_connections: DEFAULT_POOL_SIZE,
        }
    }
}

/// The PostgreSQL implementation of the engine's storage ports. Cheap to clone (the pool is
/// shared).
#[derive(Debug, Clone)]
pub struct PgStore {
    /// The pool. The port modules name a writer and a reader pool (SQLite needs two); here
    /// both are this one.
    writer: PgPool,
    reader: PgPool,
    /// The run-path writes of all concurrent runs of this process, committed together in one
    /// transaction (and one WAL flush) when they wait at the same moment (`group_commit.rs`),
    /// in a few lanes committing side by side, each response's writes in one (`write_lanes.rs`).
    group: WriteLanes,
    /// The transcripts of runs that just ended, parsed, for their continuations
    /// (`transcript_memo.rs`).
    transcripts: Arc<TranscriptMemo>,
    /// The transcript packed last for each conversation (`packed_transcripts.rs`).
    packed_transcripts: Arc<PackedTranscripts>,
    /// The items of the conversations runs read last, parsed, for their next runs
    /// (`conversation_memo.rs`).
    conversations: Arc<ConversationMemo>,
}

impl PgStore {
    /// Connect to a `postgres://…` (or `postgresql://…`) URL and run the migrations. TLS
    /// follows the URL's `sslmode` (`disable`, `prefer` (the default), `require`,
    /// `verify-ca`, `verify-full`) and `sslrootcert`; certificates are checked against the
    /// system's roots (rustls).
    pub async fn connect(url: &str, settings: PoolSettings) -> Result<PgStore, StoreError> {
        let store = Self::connect_unmigrated(url, settings).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Connect without running the migrations (for `agentd migrate` and tools that check the
    /// schema themselves).
    pub async fn connect_unmigrated(
        url: &str,
        settings: PoolSettings,
    ) -> Result<PgStore, StoreError> {
        // The URL itself is never quoted back: it may carry a password.
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| StoreError::Backend(format!("invalid postgres url: {}", kind(&e))))?;
        let pool = PgPoolOptions::new()
            .max_connections(settings.max_connections.max(1))
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(error::backend)?;
        Ok(PgStore {
            group: WriteLanes::spawn(&pool, WriteLanes::for_pool(settings.max_connections)),
            writer: pool.clone(),
            reader: pool,
            transcripts: Arc::default(),
            packed_transcripts: Arc::default(),
            conversations: Arc::default(),
        })
    }

    /// Apply the migrations not yet applied, under the advisory lock (concurrent callers, in
    /// this process or others, apply each migration once).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        migrate::migrator(migrate::POSTGRES)
            .run(&self.writer)
            .await
            .map_err(migrate::failed)
    }

    /// Runs a run-path write of the response `key` through its lane's group writer: in a
    /// transaction shared with the other writes of this process waiting in that lane at the
    /// same moment, answered once committed. Each commit waits for PostgreSQL's WAL flush, so
    /// sharing one saves a flush and several round trips per write; a failing write is run
    /// again alone and fails alone.
    async fn write(&self, key: &str, script: crate::script::Script) -> Result<(), StoreError> {
        self.group.write(key, script).await
    }

    /// The pool, for maintenance and tests that need raw SQL.
    pub fn pool(&self) -> &PgPool {
        &self.writer
    }

    /// Close the pool, waiting for queries in flight. Use at shutdown.
    pub async fn close(&self) {
        self.writer.close().await;
    }

    /// No marker of the keys here (see `SqliteStore::key_marker`): every check reads.
    fn key_marker(&self) -> Option<&crate::key_marker::KeyMarker> {
        None
    }

    /// No read runs inline here (see `SqliteStore::read_inline`): the pool reads.
    fn read_inline(&self, _sql: &str) -> Option<bool> {
        None
    }
}

/// What is wrong with a URL, without quoting it (sqlx's message may include the URL).
fn kind(e: &sqlx::Error) -> &'static str {
    match e {
        sqlx::Error::Configuration(_) => "bad configuration (check the host, port and sslmode)",
        sqlx::Error::Tls(_) => "TLS setup failed",
        _ => "cannot parse it",
    }
}
