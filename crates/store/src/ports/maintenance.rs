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

/// The next responses after the cursor `$2` (by id) that still have event chunks and were
/// created before `$1`: a walk of `event_chunks`' primary key, each response taken by its own
/// (no index on the creation time: schema version 16). It visits the responses that still have
/// a log, once per purge: the cursor moves past the ones too young to purge, and the logs it
/// deletes leave the key.
pub(crate) const PURGE_CHUNKS_PAGE: &str = "\
SELECT DISTINCT c.response_id AS id
FROM event_chunks c JOIN responses r ON r.id = c.response_id
WHERE c.response_id > $2 AND r.created_at < $1
ORDER BY c.response_id
LIMIT $3";

/// The same walk over the per-event rows of versions before 11 (`events`).
pub(crate) const PURGE_EVENTS_PAGE: &str = "\
SELECT DISTINCT e.response_id AS id
FROM events e JOIN responses r ON r.id = e.response_id
WHERE e.response_id > $2 AND r.created_at < $1
ORDER BY e.response_id
LIMIT $3";

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
        for walk in [PURGE_CHUNKS_PAGE, PURGE_EVENTS_PAGE] {
            let mut cursor = String::new();
            loop {
                let rows = sqlx::query(walk)
                    .bind(created_before)
                    .bind(cursor.as_str())
                    .bind(i64::from(PURGE_RESPONSES_PER_BATCH))
                    .fetch_all(&self.reader)
                    .await
                    .map_err(error::backend)?;
                let page = rows
                    .iter()
                    .map(|row| {
                        row.try_get::<String, _>("id")
                            .map_err(|e| error::bad_column("response", "id", e))
                    })
                    .collect::<Result<Vec<_>, StoreError>>()?;
                let Some(last) = page.last().cloned() else {
                    break;
                };
                deleted = deleted.saturating_add(delete_logs(&self.writer, &page).await?);
                if page.len() < usize::from(PURGE_RESPONSES_PER_BATCH) {
                    break;
                }
                cursor = last;
            }
        }
        Ok(deleted)
    }
}

/// Deletes the event logs of `page`'s responses, chunks and per-event rows of older versions,
/// in one transaction; returns how many events they held (a sequence number stored twice, by a
/// retried flush, counts twice).
async fn delete_logs(writer: &sqlx::Pool<Db>, page: &[String]) -> Result<u64, StoreError> {
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
fn delete_from(table: &str, page: &[String]) -> QueryBuilder<Db> {
    let mut delete = QueryBuilder::<Db>::new(format!("DELETE FROM {table} WHERE response_id IN ("));
    let mut ids = delete.separated(", ");
    for id in page {
        ids.push_bind(id.as_str());
    }
    delete.push(")");
    delete
}
