//! [`ProjectStore`]: projects (create, list, rename, delete with everything they own) and their
//! keys as the admin API sees them (role, name, prefix, last use; never the hash).

use super::DbRow;
use engine::admin_store::{KeyInfo, NewKey, ProjectRecord, ProjectStore, Role};
use engine::store::StoreError;
use sqlx::Row;
use sqlx::error::ErrorKind;

use super::Store;
use crate::error;

macro_rules! project_columns {
    () => {
        "SELECT id, name, created_at FROM projects"
    };
}

macro_rules! key_columns {
    () => {
        "SELECT id, project_id, name, prefix, role, created_at, last_used_at FROM api_keys"
    };
}

/// What a project owns, deleted with it (children first). `$1` is the project id.
const DELETE_OWNED: &[&str] = &[
    "DELETE FROM event_chunks WHERE response_id IN (SELECT id FROM responses WHERE project_id = $1)",
    "DELETE FROM events WHERE response_id IN (SELECT id FROM responses WHERE project_id = $1)",
    "DELETE FROM conversation_items WHERE conversation_id IN (SELECT id FROM conversations WHERE project_id = $1)",
    "DELETE FROM conversations WHERE project_id = $1",
    "DELETE FROM response_items WHERE project_id = $1",
    "DELETE FROM files WHERE project_id = $1",
    "DELETE FROM workspace_snapshots WHERE project_id = $1",
    "DELETE FROM jobs WHERE project_id = $1",
    "DELETE FROM responses WHERE project_id = $1",
    "DELETE FROM oauth_grants WHERE project_id = $1",
    "DELETE FROM connector_events WHERE project_id = $1",
    "DELETE FROM connectors WHERE project_id = $1",
    "DELETE FROM api_keys WHERE project_id = $1",
];

fn conflict(e: sqlx::Error, what: String) -> StoreError {
    match e.as_database_error().map(|d| d.kind()) {
        Some(ErrorKind::UniqueViolation) => StoreError::Conflict(what),
        _ => error::backend(e),
    }
}

#[async_trait::async_trait]
impl ProjectStore for Store {
    async fn list_projects(&self) -> Result<Vec<ProjectRecord>, StoreError> {
        let rows = sqlx::query(concat!(project_columns!(), " ORDER BY created_at, id"))
            .fetch_all(&self.reader)
            .await
            .map_err(error::backend)?;
        rows.iter().map(decode_project).collect()
    }

    async fn get_project(&self, id: &str) -> Result<Option<ProjectRecord>, StoreError> {
        let row = sqlx::query(concat!(project_columns!(), " WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.writer)
            .await
            .map_err(error::backend)?;
        row.as_ref().map(decode_project).transpose()
    }

    async fn project_by_name(&self, name: &str) -> Result<Option<ProjectRecord>, StoreError> {
        let row = sqlx::query(concat!(project_columns!(), " WHERE name = $1"))
            .bind(name)
            .fetch_optional(&self.writer)
            .await
            .map_err(error::backend)?;
        row.as_ref().map(decode_project).transpose()
    }

    async fn create_project(&self, project: &ProjectRecord) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO projects (id, name, created_at) VALUES ($1, $2, $3)")
            .bind(project.id.as_str())
            .bind(project.name.as_str())
            .bind(project.created_at)
            .execute(&self.writer)
            .await
            .map_err(|e| conflict(e, format!("a project named {:?}", project.name)))?;
        Ok(())
    }

    async fn rename_project(&self, id: &str, name: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("UPDATE projects SET name = $2 WHERE id = $1")
            .bind(id)
            .bind(name)
            .execute(&self.writer)
            .await
            .map_err(|e| conflict(e, format!("a project named {name:?}")))?;
        Ok(done.rows_affected() > 0)
    }

    async fn delete_project(&self, id: &str) -> Result<bool, StoreError> {
        let mut tx = self
            .writer
            .begin_with(super::dialect::WRITE_BEGIN)
            .await
            .map_err(error::backend)?;
        for statement in DELETE_OWNED {
            sqlx::query(*statement)
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(error::backend)?;
        }
        let done = sqlx::query("DELETE FROM projects WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(error::backend)?;
        tx.commit().await.map_err(error::backend)?;
        Ok(done.rows_affected() > 0)
    }

    async fn insert_key_info(&self, key: &NewKey) -> Result<(), StoreError> {
        let info = &key.info;
        sqlx::query(
            "INSERT INTO api_keys (id, project_id, key_hash, created_at, role, name, prefix) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(info.id.as_str())
        .bind(info.project_id.as_str())
        .bind(key.key_hash.as_str())
        .bind(info.created_at)
        .bind(info.role.as_str())
        .bind(info.name.as_deref())
        .bind(info.prefix.as_deref())
        .execute(&self.writer)
        .await
        .map_err(|e| conflict(e, format!("api key {} (same id or same key)", info.id)))?;
        if let Some(marker) = self.key_marker() {
            marker.mark();
        }
        Ok(())
    }

    async fn list_keys(&self, project_id: &str) -> Result<Vec<KeyInfo>, StoreError> {
        let rows = sqlx::query(concat!(
            key_columns!(),
            " WHERE project_id = $1 ORDER BY created_at, id"
        ))
        .bind(project_id)
        .fetch_all(&self.reader)
        .await
        .map_err(error::backend)?;
        rows.iter().map(decode_key).collect()
    }

    async fn key_by_hash(&self, key_hash: &str) -> Result<Option<KeyInfo>, StoreError> {
        let row = sqlx::query(concat!(key_columns!(), " WHERE key_hash = $1"))
            .bind(key_hash)
            .fetch_optional(&self.reader)
            .await
            .map_err(error::backend)?;
        row.as_ref().map(decode_key).transpose()
    }

    async fn revoke_key(&self, project_id: &str, key_id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM api_keys WHERE project_id = $1 AND id = $2")
            .bind(project_id)
            .bind(key_id)
            .execute(&self.writer)
            .await
            .map_err(error::backend)?;
        Ok(done.rows_affected() > 0)
    }

    async fn touch_key(&self, key_id: &str, at: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE api_keys SET last_used_at = $2 WHERE id = $1")
            .bind(key_id)
            .bind(at)
            .execute(&self.writer)
            .await
            .map_err(error::backend)?;
        Ok(())
    }
}

fn decode_project(row: &DbRow) -> Result<ProjectRecord, StoreError> {
    let get = |column: &str| -> Result<String, StoreError> {
        row.try_get(column)
            .map_err(|e| error::bad_column("project", column, e))
    };
    Ok(ProjectRecord {
        id: get("id")?,
        name: get("name")?,
        created_at: row
            .try_get("created_at")
            .map_err(|e| error::bad_column("project", "created_at", e))?,
    })
}

fn decode_key(row: &DbRow) -> Result<KeyInfo, StoreError> {
    let id: String = row
        .try_get("id")
        .map_err(|e| error::bad_column("api key", "id", e))?;
    let what = format!("api key {id}");
    let role: String = row
        .try_get("role")
        .map_err(|e| error::bad_column(&what, "role", e))?;
    Ok(KeyInfo {
        project_id: row
            .try_get("project_id")
            .map_err(|e| error::bad_column(&what, "project_id", e))?,
        name: row
            .try_get("name")
            .map_err(|e| error::bad_column(&what, "name", e))?,
        prefix: row
            .try_get("prefix")
            .map_err(|e| error::bad_column(&what, "prefix", e))?,
        role: Role::parse(&role)
            .ok_or_else(|| StoreError::Corrupt(format!("{what}: unknown role {role:?}")))?,
        created_at: row
            .try_get("created_at")
            .map_err(|e| error::bad_column(&what, "created_at", e))?,
        last_used_at: row
            .try_get("last_used_at")
            .map_err(|e| error::bad_column(&what, "last_used_at", e))?,
        id,
    })
}
