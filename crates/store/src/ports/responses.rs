//! [`ResponseStore`]: response records with their continuation transcript.

use engine::store::{EventRecord, ResponseRecord, ResponseStore, StoreError};
use sqlx::Row;

use super::{Db, DbRow, Store};
use crate::{error, now_secs};

/// Insert, or replace the record with the same id if it belongs to the same project.
const UPSERT: &str = "\
INSERT INTO responses
    (id, project_id, created_at, visible, status, response_json, transcript_json, updated_at,
     conversation_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (id) DO UPDATE SET
    conversation_id = excluded.conversation_id,
    created_at = excluded.created_at,
    visible = excluded.visible,
    status = excluded.status,
    response_json = excluded.response_json,
    transcript_json = excluded.transcript_json,
    updated_at = excluded.updated_at
WHERE responses.project_id = excluded.project_id";

const SELECT: &str = "\
SELECT id, project_id, created_at, visible, response_json, transcript_json, conversation_id
FROM responses
WHERE project_id = $1 AND id = $2";

/// Inserts or replaces one response record through any executor (pool or transaction).
async fn upsert<'e, E>(record: &ResponseRecord, executor: E) -> Result<(), StoreError>
where
    E: sqlx::Executor<'e, Database = Db>,
{
    let what = format!("response {}", record.id);
    let encode = |e: serde_json::Error| StoreError::Backend(format!("cannot encode {what}: {e}"));
    let status = status_text(&record.response.status).map_err(encode)?;
    let response_json = serde_json::to_string(&record.response).map_err(encode)?;
    let transcript_json = serde_json::to_string(&record.transcript).map_err(encode)?;
    let done = sqlx::query(UPSERT)
        .bind(record.id.as_str())
        .bind(record.project_id.as_str())
        .bind(record.created_at)
        .bind(i64::from(record.visible))
        .bind(status)
        .bind(response_json)
        .bind(transcript_json)
        .bind(now_secs())
        .bind(record.conversation_id.as_deref())
        .execute(executor)
        .await
        .map_err(error::backend)?;
    if done.rows_affected() == 0 {
        // The id exists under another project: never let one project overwrite another's.
        return Err(StoreError::Conflict(format!(
            "{what} belongs to another project"
        )));
    }
    Ok(())
}

#[async_trait::async_trait]
impl ResponseStore for Store {
    async fn put_response(&self, record: &ResponseRecord) -> Result<(), StoreError> {
        upsert(record, &self.writer).await
    }

    async fn end_run(
        &self,
        record: &ResponseRecord,
        events: &[EventRecord],
    ) -> Result<(), StoreError> {
        let mut tx = self.writer.begin().await.map_err(error::backend)?;
        super::events::insert(&mut tx, &record.id, events).await?;
        upsert(record, &mut *tx).await?;
        super::items::index(&record.project_id, &record.id, &record.items, &mut *tx).await?;
        if let Some(conversation) = &record.append_to {
            // A conversation deleted while the run went on takes no more items.
            super::items::append(&mut tx, &record.project_id, conversation, &record.items).await?;
        }
        super::jobs::delete(&record.id, &mut *tx).await?;
        tx.commit().await.map_err(error::backend)
    }

    async fn get_response(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ResponseRecord>, StoreError> {
        let row = sqlx::query(SELECT)
            .bind(project_id)
            .bind(id)
            .fetch_optional(&self.reader)
            .await
            .map_err(error::backend)?;
        row.map(|row| decode(&row, id)).transpose()
    }
}

/// The status as a plain string (`"completed"`, …) for the `status` column; a status that does
/// not serialize to a JSON string is kept as its JSON text.
fn status_text<T: serde::Serialize>(status: &T) -> Result<String, serde_json::Error> {
    Ok(match serde_json::to_value(status)? {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    })
}

fn decode(row: &DbRow, id: &str) -> Result<ResponseRecord, StoreError> {
    let what = format!("response {id}");
    let column = |name: &str| -> Result<String, StoreError> {
        row.try_get::<String, _>(name)
            .map_err(|e| error::bad_column(&what, name, e))
    };
    let created_at: i64 = row
        .try_get("created_at")
        .map_err(|e| error::bad_column(&what, "created_at", e))?;
    let visible: i64 = row
        .try_get("visible")
        .map_err(|e| error::bad_column(&what, "visible", e))?;
    let response_json = column("response_json")?;
    let transcript_json = column("transcript_json")?;
    Ok(ResponseRecord {
        id: column("id")?,
        project_id: column("project_id")?,
        created_at,
        visible: visible != 0,
        response: serde_json::from_str(&response_json)
            .map_err(|e| error::bad_json(&what, "response_json", &e))?,
        transcript: serde_json::from_str(&transcript_json)
            .map_err(|e| error::bad_json(&what, "transcript_json", &e))?,
        conversation_id: row
            .try_get::<Option<String>, _>("conversation_id")
            .map_err(|e| error::bad_column(&what, "conversation_id", e))?,
        items: Vec::new(),
        append_to: None,
    })
}
