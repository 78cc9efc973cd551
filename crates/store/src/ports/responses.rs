//! [`ResponseStore`]: response records with their continuation transcript.

use std::sync::Arc;

use engine::store::{EventRecord, ResponseRecord, ResponseStore, StoreError};
use sqlx::Row as _;

use super::{Db, DbRow, Store};
use crate::{error, now_secs};

/// Insert, or replace the record with the same id if it belongs to the same project.
const UPSERT: &str = "\
INSERT INTO responses
    (id, project_id, created_at, visible, status, response_json, transcript_json, updated_at,
     conversation_id, turns_json)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (id) DO UPDATE SET
    conversation_id = excluded.conversation_id,
    turns_json = excluded.turns_json,
    created_at = excluded.created_at,
    visible = excluded.visible,
    status = excluded.status,
    response_json = excluded.response_json,
    transcript_json = excluded.transcript_json,
    updated_at = excluded.updated_at
WHERE responses.project_id = excluded.project_id";

const SELECT: &str = "\
SELECT id, project_id, created_at, visible, response_json, transcript_json, conversation_id,
    turns_json
FROM responses
WHERE project_id = $1 AND id = $2";

/// A response record encoded for [`UPSERT`] (before the write, which may run twice).
struct Encoded {
    id: String,
    project_id: String,
    created_at: i64,
    visible: bool,
    status: &'static str,
    /// Shared with the engine when it serialized the response already.
    response_json: Arc<str>,
    transcript_json: String,
    conversation_id: Option<String>,
    /// The model turns (`None` when there are none).
    turns_json: Option<String>,
}

impl Encoded {
    fn encode(record: &ResponseRecord) -> Result<Encoded, StoreError> {
        let encode = |e: serde_json::Error| {
            StoreError::Backend(format!("cannot encode response {}: {e}", record.id))
        };
        Ok(Encoded {
            id: record.id.clone(),
            project_id: record.project_id.clone(),
            created_at: record.created_at,
            visible: record.visible,
            status: record.response.status.as_str(),
            response_json: match &record.response_json {
                Some(json) => Arc::clone(json),
                None => Arc::from(serde_json::to_string(&record.response).map_err(encode)?),
            },
            transcript_json: serde_json::to_string(&record.transcript).map_err(encode)?,
            conversation_id: record.conversation_id.clone(),
            turns_json: if record.turns.is_empty() {
                None
            } else {
                Some(serde_json::to_string(&record.turns).map_err(encode)?)
            },
        })
    }

    /// Inserts or replaces the record through any executor (pool or transaction).
    async fn upsert<'e, E>(&self, executor: E) -> Result<(), StoreError>
    where
        E: sqlx::Executor<'e, Database = Db>,
    {
        let done = sqlx::query(UPSERT)
            .bind(self.id.as_str())
            .bind(self.project_id.as_str())
            .bind(self.created_at)
            .bind(i64::from(self.visible))
            .bind(self.status)
            .bind(&*self.response_json)
            .bind(self.transcript_json.as_str())
            .bind(now_secs())
            .bind(self.conversation_id.as_deref())
            .bind(self.turns_json.as_deref())
            .execute(executor)
            .await
            .map_err(error::backend)?;
        if done.rows_affected() == 0 {
            // The id exists under another project: never let one project overwrite another's.
            return Err(StoreError::Conflict(format!(
                "response {} belongs to another project",
                self.id
            )));
        }
        Ok(())
    }
}

/// Everything `end_run` writes, encoded.
struct Ending {
    row: Encoded,
    events: super::events::EventRows,
    items: Vec<super::items::IndexRow>,
    /// The conversation to append the items to, with the items encoded for it.
    append: Option<(String, Vec<(String, String)>)>,
}

impl Ending {
    async fn write(&self, tx: &mut sqlx::Transaction<'static, Db>) -> Result<(), StoreError> {
        let row = &self.row;
        super::events::insert(tx, &row.id, &self.events).await?;
        row.upsert(&mut **tx).await?;
        super::items::index(&row.project_id, &row.id, &self.items, &mut **tx).await?;
        if let Some((conversation, items)) = &self.append {
            // A conversation deleted while the run went on takes no more items.
            super::items::append_encoded(tx, &row.project_id, conversation, items).await?;
        }
        super::jobs::delete(&row.id, &mut **tx).await
    }
}

#[async_trait::async_trait]
impl ResponseStore for Store {
    async fn put_response(&self, record: &ResponseRecord) -> Result<(), StoreError> {
        let row = Arc::new(Encoded::encode(record)?);
        self.write(super::write_op(move |tx| {
            let row = Arc::clone(&row);
            Box::pin(async move { row.upsert(&mut **tx).await })
        }))
        .await
    }

    async fn end_run(
        &self,
        record: &ResponseRecord,
        events: &[EventRecord],
    ) -> Result<(), StoreError> {
        let append = match &record.append_to {
            Some(conversation) => Some((
                conversation.clone(),
                super::items::encode_append(&record.items)?,
            )),
            None => None,
        };
        let ending = Arc::new(Ending {
            row: Encoded::encode(record)?,
            events: super::events::encode(&record.id, events)?,
            items: super::items::encode_index(&record.items)?,
            append,
        });
        self.write(super::write_op(move |tx| {
            let ending = Arc::clone(&ending);
            Box::pin(async move { ending.write(tx).await })
        }))
        .await
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
    let turns = match row
        .try_get::<Option<String>, _>("turns_json")
        .map_err(|e| error::bad_column(&what, "turns_json", e))?
    {
        Some(json) => {
            serde_json::from_str(&json).map_err(|e| error::bad_json(&what, "turns_json", &e))?
        }
        None => Vec::new(),
    };
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
        turns,
        response_json: None,
    })
}
