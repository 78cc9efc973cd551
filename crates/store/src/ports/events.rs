//! [`EventStore`]: the stream event log of a run, written in batches.

use std::sync::Arc;

use engine::store::{EventRecord, EventStore, StoreError};
use sqlx::Row;

use super::Store;
use crate::error;
use crate::script::Script;

/// Rows per INSERT statement: 3 parameters each keeps a statement under SQLite's historical
/// limit of 999 parameters (and PostgreSQL's 65535).
const ROWS_PER_STATEMENT: usize = 300;

const SELECT_AFTER: &str = "\
SELECT sequence_number, data
FROM events
WHERE response_id = $1 AND sequence_number > $2
ORDER BY sequence_number";

/// Events encoded for [`insert`]: sequence number and data (the event log's own bytes, shared,
/// not copied: the write may run twice, and both runs bind the same bytes).
pub(crate) type EventRows = Vec<(i64, Arc<str>)>;

/// Encodes events for [`insert`] (before the write, which may run twice).
pub(crate) fn encode(response_id: &str, events: &[EventRecord]) -> Result<EventRows, StoreError> {
    events
        .iter()
        .map(|event| {
            i64::try_from(event.sequence_number)
                .map(|sequence| (sequence, Arc::clone(&event.data)))
                .map_err(|_| {
                    StoreError::Backend(format!(
                        "events of {response_id}: sequence number {} out of range",
                        event.sequence_number
                    ))
                })
        })
        .collect()
}

/// Appends encoded events to a write (idempotent per sequence number).
pub(crate) fn insert(script: &mut Script, response_id: &Arc<str>, rows: &[(i64, Arc<str>)]) {
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let mut sql =
            String::from("INSERT INTO events (response_id, sequence_number, data) VALUES ");
        crate::script::push_values(&mut sql, 0, chunk.len(), 3);
        // A batch flushed twice (retry after a crash, resume) must not fail the run.
        sql.push_str(" ON CONFLICT (response_id, sequence_number) DO NOTHING");
        let statement = script.statement(sql);
        for (sequence, data) in chunk {
            statement.bind(response_id).bind(*sequence).bind(data);
        }
    }
}

#[async_trait::async_trait]
impl EventStore for Store {
    async fn append_events(
        &self,
        response_id: &str,
        events: &[EventRecord],
    ) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut script = Script::new();
        insert(
            &mut script,
            &Arc::from(response_id),
            &encode(response_id, events)?,
        );
        self.write(script).await
    }

    async fn events_after(
        &self,
        response_id: &str,
        after: Option<u64>,
    ) -> Result<Vec<EventRecord>, StoreError> {
        // Stored numbers are non-negative, so -1 selects everything.
        let after = match after {
            None => -1,
            Some(n) => match i64::try_from(n) {
                Ok(n) => n,
                // Nothing can be stored beyond i64::MAX.
                Err(_) => return Ok(Vec::new()),
            },
        };
        let rows = sqlx::query(SELECT_AFTER)
            .bind(response_id)
            .bind(after)
            .fetch_all(&self.reader)
            .await
            .map_err(error::backend)?;
        let what = format!("events of {response_id}");
        rows.iter()
            .map(|row| {
                let sequence: i64 = row
                    .try_get("sequence_number")
                    .map_err(|e| error::bad_column(&what, "sequence_number", e))?;
                let sequence_number = u64::try_from(sequence).map_err(|_| {
                    StoreError::Corrupt(format!("{what}: negative sequence number {sequence}"))
                })?;
                let data: String = row
                    .try_get("data")
                    .map_err(|e| error::bad_column(&what, "data", e))?;
                Ok(EventRecord {
                    sequence_number,
                    data: Arc::from(data),
                })
            })
            .collect()
    }
}
