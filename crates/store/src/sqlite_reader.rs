//! Small reads of a file-backed SQLite store answered at once, on the caller's thread.
//!
//! A read through sqlx's pool is a round trip to the thread of one of its connections: the
//! command sent there wakes that thread and the answer sent back wakes the caller's task (a
//! few context switches, and on this project's machines waking a sleeping thread costs more
//! than the read). Open mode asks "is there any API key?" before every request, on purpose
//! afresh (a key created by another process or replica sharing the file must end open mode
//! for the very next request), so that round trip was on every request's path
//! (docs/benchmarks.md, "Issue 18, seventh pass").
//!
//! [`InlineReader`] keeps one `rusqlite` connection to the file of its own, under a mutex, and
//! runs such a read on it right there: an indexed lookup of a page or two, microseconds. Each
//! read is a transaction of its own begun when it runs (autocommit), so it sees every commit
//! made before it by any connection, like a pooled read would. It never waits: with a busy
//! timeout of zero a lock held elsewhere (a WAL recovery, another process in an exclusive
//! mode) is an error at once, and the mutex is only tried; on that or any other error the
//! caller reads through the pool as before ([`InlineReader::exists`] answers `None`).
//! PostgreSQL and in-memory SQLite stores have no inline reader. Most checks do not read at
//! all: `key_marker.rs` answers "none" while no key was written since the last read found none.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use engine::store::StoreError;
use rusqlite::{Connection, OpenFlags};

/// The connection of the inline reads (see the module docs).
#[derive(Debug)]
pub(crate) struct InlineReader {
    connection: Mutex<Connection>,
}

impl InlineReader {
    /// Opens a connection to the store's file (already created and migrated).
    pub(crate) fn open(path: &Path) -> Result<InlineReader, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(path, flags).map_err(backend)?;
        connection.busy_timeout(Duration::ZERO).map_err(backend)?;
        // Reads only, whatever runs here.
        connection
            .execute_batch("PRAGMA query_only = ON;")
            .map_err(backend)?;
        Ok(InlineReader {
            connection: Mutex::new(connection),
        })
    }

    /// Whether `sql` (a query without parameters) returns a row, read now; `None` when it
    /// could not be read at once (the connection busy, a lock held elsewhere, any error):
    /// the caller then reads through the pool.
    pub(crate) fn exists(&self, sql: &str) -> Option<bool> {
        let connection = self.connection.try_lock().ok()?;
        let mut statement = connection.prepare_cached(sql).ok()?;
        // `exists` resets the statement: the read's transaction ends here, and the next read
        // sees every commit made before it.
        statement.exists([]).ok()
    }

    /// Holds the connection, so that reads meanwhile fall back to the pool (tests).
    #[cfg(test)]
    pub(crate) fn hold(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(format!("the SQLite inline reader: {e}"))
}

#[cfg(test)]
mod tests {
    use engine::store::{KeyRecord, KeyStore};

    use super::*;
    use crate::SqliteStore;

    const ANY_KEY: &str = "SELECT 1 FROM api_keys LIMIT 1";

    async fn add_key(store: &SqliteStore, id: &str) {
        let project_id = store.ensure_project("default").await.unwrap();
        store
            .insert_key(&KeyRecord {
                id: id.to_owned(),
                project_id,
                key_hash: format!("hash-{id}"),
                created_at: 1,
            })
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_key_created_through_another_handle_is_seen_by_the_next_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path()).await.unwrap();
        let other = SqliteStore::open(dir.path()).await.unwrap();
        // Repeated reads with nothing in between, then a key from the other handle (as if
        // another process): no read keeps a snapshot that would hide it.
        for _ in 0..3 {
            assert!(!store.has_keys().await.unwrap());
        }
        add_key(&other, "key_1").await;
        assert!(store.has_keys().await.unwrap());
        // The answer came from the inline reader: the pools are closed.
        store.close().await;
        assert_eq!(store.inline_reader().unwrap().exists(ANY_KEY), Some(true));
        assert!(store.has_keys().await.unwrap());
    }

    #[tokio::test]
    async fn a_row_committed_by_a_plain_connection_is_seen_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path()).await.unwrap();
        store.ensure_project("default").await.unwrap();
        let reader = store.inline_reader().unwrap();
        assert_eq!(reader.exists(ANY_KEY), Some(false));
        let path = dir.path().join(crate::sqlite::DATABASE_FILE);
        let writer = Connection::open(&path).unwrap();
        writer
            .execute(
                "INSERT INTO api_keys (id, project_id, key_hash, created_at) \
                 SELECT 'key_2', id, 'hash-2', 1 FROM projects",
                [],
            )
            .unwrap();
        assert_eq!(reader.exists(ANY_KEY), Some(true));
        writer.execute("DELETE FROM api_keys", []).unwrap();
        assert_eq!(reader.exists(ANY_KEY), Some(false));
        assert!(!store.has_keys().await.unwrap());
    }

    #[tokio::test]
    #[expect(
        clippy::await_holding_lock,
        reason = "held on purpose: the reads meanwhile only try it, and fall back"
    )]
    async fn while_the_inline_read_cannot_run_the_pool_answers() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path()).await.unwrap();
        let other = SqliteStore::open(dir.path()).await.unwrap();
        let reader = store.inline_reader().unwrap();
        let held = reader.hold();
        assert_eq!(reader.exists(ANY_KEY), None);
        assert!(!store.has_keys().await.unwrap());
        add_key(&other, "key_3").await;
        // Still held: this answer is the pool's, and fresh too.
        assert!(store.has_keys().await.unwrap());
        drop(held);
        assert_eq!(reader.exists(ANY_KEY), Some(true));
    }

    #[test]
    fn a_lock_held_elsewhere_or_an_error_answers_none_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plain.db");
        let setup = Connection::open(&path).unwrap();
        setup
            .execute_batch("CREATE TABLE api_keys (id TEXT); INSERT INTO api_keys VALUES ('k');")
            .unwrap();
        let reader = InlineReader::open(&path).unwrap();
        assert_eq!(reader.exists(ANY_KEY), Some(true));
        // A rollback-journal database with a writer holding the exclusive lock: the read
        // would have to wait, and does not.
        setup
            .execute_batch("BEGIN EXCLUSIVE; DELETE FROM api_keys;")
            .unwrap();
        let started = std::time::Instant::now();
        assert_eq!(reader.exists(ANY_KEY), None);
        assert!(started.elapsed() < Duration::from_secs(1));
        setup.execute_batch("COMMIT;").unwrap();
        assert_eq!(reader.exists(ANY_KEY), Some(false));
        // Not a query this database can run.
        assert_eq!(reader.exists("SELECT 1 FROM no_such_table"), None);
        // And nothing written through it.
        assert_eq!(
            reader.exists("INSERT INTO api_keys VALUES ('x') RETURNING 1"),
            None
        );
    }
}
