//! [`MaintenanceStore`]: start-up recovery of orphaned runs and the purge of old event logs.

use engine::store::{MaintenanceStore, StoreError};
use sqlx::{QueryBuilder, Row};

use super::{Db, Store};
use crate::error;

/// Responses per purge batch: one DELETE removes the logs of at most this many responses, so
/// the writer (which live runs need for their event batches) is never held for long.
const PURGE_RESPONSES_PER_BATCH: u8 = 32;

const ORPHANED: &str = "\
SELECT r.project_id, r.id
FROM responses r
WHERE r.status IN ('queued', 'in_progress')
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.response_id = r.id)
ORDER BY r.created_at, r.id";

/// The next old responses that still have events, after the cursor `($2, $3)`, walking the
/// `responses_created_id` index once per purge.
const PURGE_PAGE: &str = "\
SELECT r.created_at, r.id
FROM responses r
WHERE r.created_at < $1
  AND (r.created_at, r.id) > ($2, $3)
  AND (EXISTS (SELECT 1 FROM event_chunks c WHERE c.response_id = r.id)
       OR EXISTS (SELECT 1 FROM events e WHERE e.response_id = r.id))
ORDER BY r.created_at, r.id
LIMIT $4";

#[async_trait::async_trait]
impl MaintenanceStore for Store {
    async fn orphaned_responses(&self) -> Result<Vec<(String, String)>, StoreError> {
        let rows = sqlx::query(ORPHANED)
            .fetch_all(&self.reader)
            .await
            .map_err(error::backend)?;
        rows.iter()
            .map(|row| {
                let project_id: String = row
                    .try_get("project_id")
                    .map_err(|e| error::bad_column("orphaned response", "project_id", e))?;
                let id: String = row
                    .try_get("id")
                    .map_err(|e| error::bad_column("orphaned response", "id", e))?;
                Ok((project_id, id))
            })
            .collect()
    }

    async fn purge_events(&self, created_before: i64) -> Result<u64, StoreError> {
        let mut deleted = 0u64;
        let mut cursor: (i64, String) = (i64::MIN, String::new());
        loop {
            let rows = sqlx::query(PURGE_PAGE)
                .bind(created_before)
                .bind(cursor.0)
                .bind(cursor.1.as_str())
                .bind(i64::from(PURGE_RESPONSES_PER_BATCH))
                .fetch_all(&self.reader)
                .await
                .map_err(error::backend)?;
            let page = rows
                .iter()
                .map(|row| {
                    let created_at: i64 = row
                        .try_get("created_at")
                        .map_err(|e| error::bad_column("response", "created_at", e))?;
                    let id: String = row
                        .try_get("id")
                        .map_err(|e| error::bad_column("response", "id", e))?;
                    Ok((created_at, id))
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            let Some(last) = page.last().cloned() else {
                return Ok(deleted);
            };

            deleted = deleted.saturating_add(delete_logs(&self.writer, &page).await?);
            if page.len() < usize::from(PURGE_RESPONSES_PER_BATCH) {
                return Ok(deleted);
            }
            cursor = last;
        }
    }
}

/// Deletes the event logs of `page`'s responses, chunks and per-event rows of older versions,
/// in one transaction; returns how many events they held (a sequence number stored twice, by a
/// retried flush, counts twice).
async fn delete_logs(writer: &sqlx::Pool<Db>, page: &[(i64, String)]) -> Result<u64, StoreError> {
    let mut tx = writer
        .begin_with(super::dialect::WRITE_BEGIN)
        .await
        .map_err(error::backend)?;
    let mut chunks = delete_from("event_chunks", page);
    chunks.push(" RETURNING last_sequence - first_sequence + 1 AS events");
    let rows = chunks
        .build()
        .fetch_all(&mut *tx)
        .await
        .map_err(error::backend)?;
    let mut deleted = 0u64;
    for row in &rows {
        let events: i64 = row
            .try_get("events")
            .map_err(|e| error::bad_column("event chunk", "events", e))?;
        deleted = deleted.saturating_add(u64::try_from(events).unwrap_or(0));
    }
    let done = delete_from("events", page)
        .build()
        .execute(&mut *tx)
        .await
        .map_err(error::backend)?;
    tx.commit().await.map_err(error::backend)?;
    Ok(deleted.saturating_add(done.rows_affected()))
}

/// `DELETE FROM table WHERE response_id IN (page's ids)`.
fn delete_from(table: &str, page: &[(i64, String)]) -> QueryBuilder<Db> {
    let mut delete = QueryBuilder::<Db>::new(format!("DELETE FROM {table} WHERE response_id IN ("));
    let mut ids = delete.separated(", ");
    for (_, id) in page {
        ids.push_bind(id.as_str());
    }
    delete.push(")");
    delete
}
