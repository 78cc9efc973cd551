//! The audit events of connectors: what was done, by which key, when (never a value).

use super::Db;
use engine::admin_store::ConnectorEvent;
use engine::store::StoreError;
use sqlx::Row;

use crate::error;

pub(crate) async fn insert(
    pool: &sqlx::Pool<Db>,
    event: &ConnectorEvent,
) -> Result<(), StoreError> {
    let detail = serde_json::to_string(&event.detail)
        .map_err(|e| StoreError::Backend(format!("connector event {}: {e}", event.id)))?;
    sqlx::query(
        "INSERT INTO connector_events (id, project_id, connector_id, kind, key_id, detail_json, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(event.id.as_str())
    .bind(event.project_id.as_str())
    .bind(event.connector_id.as_str())
    .bind(event.kind.as_str())
    .bind(event.key_id.as_deref())
    .bind(detail)
    .bind(event.created_at)
    .execute(pool)
    .await
    .map_err(error::backend)?;
    Ok(())
}

pub(crate) async fn list(
    pool: &sqlx::Pool<Db>,
    project_id: &str,
    connector_id: &str,
) -> Result<Vec<ConnectorEvent>, StoreError> {
    let rows = sqlx::query(
        "SELECT id, project_id, connector_id, kind, key_id, detail_json, created_at \
         FROM connector_events WHERE project_id = $1 AND connector_id = $2 \
         ORDER BY created_at, id",
    )
    .bind(project_id)
    .bind(connector_id)
    .fetch_all(pool)
    .await
    .map_err(error::backend)?;
    rows.iter()
        .map(|row| {
            let id: String = row
                .try_get("id")
                .map_err(|e| error::bad_column("connector event", "id", e))?;
            let what = format!("connector event {id}");
            let get = |column: &str| -> Result<String, StoreError> {
                row.try_get(column)
                    .map_err(|e| error::bad_column(&what, column, e))
            };
            let detail = get("detail_json")?;
            Ok(ConnectorEvent {
                project_id: get("project_id")?,
                connector_id: get("connector_id")?,
                kind: get("kind")?,
                key_id: row
                    .try_get("key_id")
                    .map_err(|e| error::bad_column(&what, "key_id", e))?,
                detail: serde_json::from_str(&detail)
                    .map_err(|e| error::bad_json(&what, "detail_json", &e))?,
                created_at: row
                    .try_get("created_at")
                    .map_err(|e| error::bad_column(&what, "created_at", e))?,
                id,
            })
        })
        .collect()
}
