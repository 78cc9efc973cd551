//! [`WorkspaceSnapshotStore`]: sandbox workspaces kept for other replicas, one row per
//! workspace whose generation grows with every save.

use engine::store::StoreError;
use engine::workspace_snapshots::{WorkspaceSnapshot, WorkspaceSnapshotStore};
use sqlx::Row;

use super::Store;
use crate::error;

const USE: &str = "\
UPDATE workspace_snapshots SET used_at = $3
WHERE project_id = $1 AND workspace_id = $2
RETURNING generation";

const GET: &str = "\
SELECT project_id, workspace_id, generation, data, note, updated_at
FROM workspace_snapshots WHERE project_id = $1 AND workspace_id = $2";

/// The first save is generation 1; every later one replaces the row with the next.
const PUT: &str = "\
INSERT INTO workspace_snapshots
    (project_id, workspace_id, generation, bytes, data, note, updated_at, used_at)
VALUES ($1, $2, 1, $3, $4, $5, $6, $6)
ON CONFLICT (project_id, workspace_id) DO UPDATE SET
    generation = workspace_snapshots.generation + 1, bytes = excluded.bytes,
    data = excluded.data, note = excluded.note, updated_at = excluded.updated_at,
    used_at = excluded.used_at
RETURNING generation";

#[async_trait::async_trait]
impl WorkspaceSnapshotStore for Store {
    async fn use_workspace(
        &self,
        project_id: &str,
        workspace_id: &str,
        now: i64,
    ) -> Result<Option<i64>, StoreError> {
        sqlx::query_scalar(USE)
            .bind(project_id)
            .bind(workspace_id)
            .bind(now)
            .fetch_optional(&self.writer)
            .await
            .map_err(error::backend)
    }

    async fn get_workspace_snapshot(
        &self,
        project_id: &str,
        workspace_id: &str,
    ) -> Result<Option<WorkspaceSnapshot>, StoreError> {
        let row = sqlx::query(GET)
            .bind(project_id)
            .bind(workspace_id)
            .fetch_optional(&self.reader)
            .await
            .map_err(error::backend)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let bad = |name: &str, e| error::bad_column("workspace snapshot", name, e);
        Ok(Some(WorkspaceSnapshot {
            project_id: row
                .try_get("project_id")
                .map_err(|e| bad("project_id", e))?,
            workspace_id: row
                .try_get("workspace_id")
                .map_err(|e| bad("workspace_id", e))?,
            generation: row
                .try_get("generation")
                .map_err(|e| bad("generation", e))?,
            data: row.try_get("data").map_err(|e| bad("data", e))?,
            note: row.try_get("note").map_err(|e| bad("note", e))?,
            updated_at: row
                .try_get("updated_at")
                .map_err(|e| bad("updated_at", e))?,
        }))
    }

    async fn put_workspace_snapshot(
        &self,
        project_id: &str,
        workspace_id: &str,
        data: &[u8],
        note: Option<&str>,
        now: i64,
    ) -> Result<i64, StoreError> {
        let bytes = i64::try_from(data.len())
            .map_err(|_| StoreError::Backend("the workspace snapshot is too large".to_owned()))?;
        sqlx::query_scalar(PUT)
            .bind(project_id)
            .bind(workspace_id)
            .bind(bytes)
            .bind(data)
            .bind(note)
            .bind(now)
            .fetch_one(&self.writer)
            .await
            .map_err(error::backend)
    }

    async fn purge_workspace_snapshots(&self, used_before: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM workspace_snapshots WHERE used_at < $1")
            .bind(used_before)
            .execute(&self.writer)
            .await
            .map_err(error::backend)?;
        Ok(done.rows_affected())
    }
}
