//! [`KeyStore`]: projects and API keys (stored as hashes only).

use engine::store::{KeyRecord, KeyStore, StoreError};
use sqlx::Row;
use sqlx::error::ErrorKind;

use super::{Db, DbRow, Store};
use crate::{error, now_secs};

const SELECT_PROJECT: &str = "SELECT id FROM projects WHERE name = $1";

const INSERT_PROJECT: &str = "\
INSERT INTO projects (id, name, created_at) VALUES ($1, $2, $3)
ON CONFLICT (name) DO NOTHING";

const INSERT_KEY: &str = "\
INSERT INTO api_keys (id, project_id, key_hash, created_at) VALUES ($1, $2, $3, $4)";

const SELECT_KEY: &str = "\
SELECT id, project_id, key_hash, created_at FROM api_keys WHERE key_hash = $1";

const ANY_KEY: &str = "SELECT 1 FROM api_keys LIMIT 1";

#[async_trait::async_trait]
impl KeyStore for Store {
    async fn ensure_project(&self, name: &str) -> Result<String, StoreError> {
        if let Some(id) = project_id(&self.reader, name).await? {
            return Ok(id);
        }
        let new_id = format!("proj_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(INSERT_PROJECT)
            .bind(new_id)
            .bind(name)
            .bind(now_secs())
            .execute(&self.writer)
            .await
            .map_err(error::backend)?;
        // Whoever won a concurrent insert, the row now exists; read it where it was written.
        project_id(&self.writer, name).await?.ok_or_else(|| {
            StoreError::Backend(format!("project {name:?} missing right after insert"))
        })
    }

    async fn insert_key(&self, key: &KeyRecord) -> Result<(), StoreError> {
        sqlx::query(INSERT_KEY)
            .bind(key.id.as_str())
            .bind(key.project_id.as_str())
            .bind(key.key_hash.as_str())
            .bind(key.created_at)
            .execute(&self.writer)
            .await
            .map_err(|e| match e.as_database_error().map(|d| d.kind()) {
                // The message names neither the hash nor which column collided.
                Some(ErrorKind::UniqueViolation) => {
                    StoreError::Conflict(format!("api key {} (same id or same key)", key.id))
                }
                Some(ErrorKind::ForeignKeyViolation) => StoreError::Backend(format!(
                    "api key {}: unknown project {}",
                    key.id, key.project_id
                )),
                _ => error::backend(e),
            })?;
        if let Some(marker) = self.key_marker() {
            marker.mark();
        }
        Ok(())
    }

    async fn find_key(&self, key_hash: &str) -> Result<Option<KeyRecord>, StoreError> {
        let row = sqlx::query(SELECT_KEY)
            .bind(key_hash)
            .fetch_optional(&self.reader)
            .await
            .map_err(error::backend)?;
        row.as_ref().map(decode_key).transpose()
    }

    async fn has_keys(&self) -> Result<bool, StoreError> {
        // A file-backed SQLite store knows there is still none without a read while its keys'
        // marker is unchanged since a read found none (`key_marker.rs`); it reads at once on a
        // connection of its own (`sqlite_reader.rs`); otherwise, or when that cannot read now,
        // the pool does.
        let look = self.key_marker().map(|marker| (marker, marker.look()));
        if let Some((_, look)) = &look
            && look.no_key_known()
        {
            return Ok(false);
        }
        let found = match self.read_inline(ANY_KEY) {
            Some(found) => found,
            None => sqlx::query(ANY_KEY)
                .fetch_optional(&self.reader)
                .await
                .map_err(error::backend)?
                .is_some(),
        };
        if let Some((marker, look)) = look
            && !found
        {
            marker.found_none(look);
        }
        Ok(found)
    }
}

async fn project_id(pool: &sqlx::Pool<Db>, name: &str) -> Result<Option<String>, StoreError> {
    let row = sqlx::query(SELECT_PROJECT)
        .bind(name)
        .fetch_optional(pool)
        .await
        .map_err(error::backend)?;
    row.map(|row| {
        row.try_get::<String, _>("id")
            .map_err(|e| error::bad_column(&format!("project {name:?}"), "id", e))
    })
    .transpose()
}

fn decode_key(row: &DbRow) -> Result<KeyRecord, StoreError> {
    // Errors name the key by id once known, never by hash.
    let id: String = row
        .try_get("id")
        .map_err(|e| error::bad_column("api key", "id", e))?;
    let what = format!("api key {id}");
    Ok(KeyRecord {
        project_id: row
            .try_get("project_id")
            .map_err(|e| error::bad_column(&what, "project_id", e))?,
        key_hash: row
            .try_get("key_hash")
            .map_err(|e| error::bad_column(&what, "key_hash", e))?,
        created_at: row
            .try_get("created_at")
            .map_err(|e| error::bad_column(&what, "created_at", e))?,
        id,
    })
}
