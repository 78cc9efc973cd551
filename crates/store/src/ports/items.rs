//! [`ItemStore`]: the items of responses (indexed when a run ends) and OpenAI conversations with
//! their items.

use std::sync::Arc;

use engine::store::{ConversationRecord, ItemJson, ItemKind, ItemStore, StoreError, StoredItem};
use protocol::input::InputItem;
use sqlx::{QueryBuilder, Row};

use super::{Db, DbRow, Store, dialect};
use crate::script::Script;
use crate::{error, now_secs};

fn kind_text(kind: ItemKind) -> &'static str {
    match kind {
        ItemKind::Input => "input",
        ItemKind::Output => "output",
    }
}

fn kind_of(text: &str) -> ItemKind {
    if text == "output" {
        ItemKind::Output
    } else {
        ItemKind::Input
    }
}

/// The item's JSON, shared (bound as it is).
fn item_json(item: &StoredItem) -> Arc<str> {
    Arc::clone(item.item.text())
}

fn decode_item(row: &DbRow, kind: ItemKind) -> Result<StoredItem, StoreError> {
    let id: String = row
        .try_get("item_id")
        .map_err(|e| error::bad_column("item", "item_id", e))?;
    let json: String = row
        .try_get("item_json")
        .map_err(|e| error::bad_column("item", "item_json", e))?;
    let item = ItemJson::parse(json).map_err(|e| error::bad_json(&id, "item_json", &e))?;
    Ok(StoredItem { id, kind, item })
}

/// A conversation's items in order, with their ids (`$1` the conversation, `$2` its project).
const CONVERSATION_ITEMS: &str = "SELECT i.item_id, i.item_json FROM conversation_items i \
     JOIN conversations c ON c.id = i.conversation_id \
     WHERE c.id = $1 AND c.project_id = $2 ORDER BY i.position";

/// A conversation's items after a position (`$3`; -1 for all of them), in order, for a run:
/// each row also holds the conversation's `item_changes`, read in the same statement, so that
/// what a read kept of the items before is checked against the same state of the conversation
/// (`conversation_memo.rs`). A conversation of the project without such items is one row of
/// NULL item columns; one not of the project, no row.
const CONVERSATION_INPUT: &str = "SELECT c.item_changes, i.position, i.item_id, i.item_json \
     FROM conversations c \
     LEFT JOIN conversation_items i ON i.conversation_id = c.id AND i.position > $3 \
     WHERE c.id = $1 AND c.project_id = $2 ORDER BY i.position";

/// The rows of [`CONVERSATION_ITEMS`] for conversation `id` of the project.
async fn conversation_rows(
    store: &Store,
    project_id: &str,
    id: &str,
) -> Result<Vec<DbRow>, StoreError> {
    sqlx::query(CONVERSATION_ITEMS)
        .bind(id)
        .bind(project_id)
        .fetch_all(&store.reader)
        .await
        .map_err(error::backend)
}

/// The `json` of a row of [`CONVERSATION_ITEMS`] as an input item, parsed once: `None` for an
/// item that is no input (it is JSON, but not of an input item's shape); a row that is not
/// JSON at all is corrupt, as [`decode_item`] finds it.
fn decode_input(row: &DbRow, json: &str) -> Result<Option<InputItem>, StoreError> {
    if let Ok(item) = serde_json::from_str(json) {
        return Ok(Some(item));
    }
    match serde_json::from_str::<serde::de::IgnoredAny>(json) {
        Ok(_) => Ok(None),
        Err(e) => {
            let id: String = row
                .try_get("item_id")
                .map_err(|e| error::bad_column("item", "item_id", e))?;
            Err(error::bad_json(&id, "item_json", &e))
        }
    }
}

/// A response's item, encoded for the index: kind, position, id and JSON.
pub(crate) struct IndexRow {
    kind: &'static str,
    position: i64,
    item_id: Arc<str>,
    json: Arc<str>,
}

/// Encodes a response's items for [`index`] (before the write, so a write run twice encodes
/// once).
pub(crate) fn encode_index(items: &[StoredItem]) -> Vec<IndexRow> {
    items
        .iter()
        .enumerate()
        .map(|(position, item)| IndexRow {
            kind: kind_text(item.kind),
            position: position as i64,
            item_id: Arc::from(item.id.as_str()),
            json: item_json(item),
        })
        .collect()
}

/// Indexes a response's encoded items (in the write that ends its run).
pub(crate) fn index(
    script: &mut Script,
    project_id: &Arc<str>,
    response_id: &Arc<str>,
    rows: &[IndexRow],
) {
    if rows.is_empty() {
        return;
    }
    let created_at = now_secs();
    for group in crate::script::row_groups(rows.len()) {
        let mut sql = String::from(dialect::INDEX_ITEMS);
        sql.push_str("VALUES ");
        crate::script::push_values(&mut sql, 0, group.len(), 7);
        sql.push_str(dialect::INDEX_ITEMS_CONFLICT);
        let statement = script.statement(sql);
        for item in &rows[group] {
            statement
                .bind(response_id)
                .bind(item.kind)
                .bind(item.position)
                .bind(project_id)
                .bind(&item.item_id)
                .bind(&item.json)
                .bind(created_at);
        }
    }
}

/// Items encoded for a conversation: their ids and JSON.
pub(crate) type AppendRows = Vec<(Arc<str>, Arc<str>)>;

/// Encodes items for [`append_to`] and [`append`].
pub(crate) fn encode_append(items: &[StoredItem]) -> AppendRows {
    items
        .iter()
        .map(|item| (Arc::from(item.id.as_str()), item_json(item)))
        .collect()
}

/// Appends items to a conversation, after its last, in one statement per group of rows
/// ([`crate::script::row_groups`]) of a write: the positions are read in the same statement
/// that inserts them (what [`append`] does in three statements), and nothing is inserted when
/// the conversation does not exist in this project.
pub(crate) fn append_to(
    script: &mut Script,
    project_id: &Arc<str>,
    conversation_id: &Arc<str>,
    items: &[(Arc<str>, Arc<str>)],
) {
    if items.is_empty() {
        return;
    }
    if let Some(lock) = dialect::LOCK_CONVERSATION {
        script
            .statement(lock)
            .bind(conversation_id)
            .bind(project_id);
    }
    // Each group's positions follow the last one stored, the group before's included.
    for group in crate::script::row_groups(items.len()) {
        let mut sql = String::from(
            "INSERT INTO conversation_items (conversation_id, position, item_id, item_json) \
             SELECT c.id, (SELECT COALESCE(MAX(i.position) + 1, 0) FROM conversation_items i \
             WHERE i.conversation_id = $1) + v.column1, v.column2, v.column3 \
             FROM conversations c, (VALUES ",
        );
        crate::script::push_values(&mut sql, 2, group.len(), 3);
        sql.push_str(") AS v WHERE c.id = $1 AND c.project_id = $2");
        let statement = script.statement(sql);
        statement.bind(conversation_id).bind(project_id);
        for (i, (item_id, json)) in items[group].iter().enumerate() {
            statement.bind(i as i64).bind(item_id).bind(json);
        }
    }
}

/// Appends items to a conversation (within a transaction); `false` when it does not exist in
/// this project.
pub(crate) async fn append(
    tx: &mut sqlx::Transaction<'_, Db>,
    project_id: &str,
    conversation_id: &str,
    items: &[StoredItem],
) -> Result<bool, StoreError> {
    let items = encode_append(items);
    let exists: Option<i64> = sqlx::query_scalar(dialect::CONVERSATION_FOR_APPEND)
        .bind(conversation_id)
        .bind(project_id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(error::backend)?;
    if exists.is_none() {
        return Ok(false);
    }
    if items.is_empty() {
        return Ok(true);
    }
    let next: i64 = sqlx::query_scalar(
        "SELECT COALESCE(MAX(position) + 1, 0) FROM conversation_items WHERE conversation_id = $1",
    )
    .bind(conversation_id)
    .fetch_one(&mut **tx)
    .await
    .map_err(error::backend)?;
    let mut insert = QueryBuilder::<Db>::new(
        "INSERT INTO conversation_items (conversation_id, position, item_id, item_json) ",
    );
    insert.push_values(items.iter().enumerate(), |mut row, (i, (item_id, json))| {
        row.push_bind(conversation_id)
            .push_bind(next + i as i64)
            .push_bind(&**item_id)
            .push_bind(&**json);
    });
    insert
        .build()
        .execute(&mut **tx)
        .await
        .map_err(error::backend)?;
    Ok(true)
}

#[async_trait::async_trait]
impl ItemStore for Store {
    async fn find_items(
        &self,
        project_id: &str,
        ids: &[String],
    ) -> Result<Vec<StoredItem>, StoreError> {
        let mut found = Vec::with_capacity(ids.len());
        for id in ids {
            let row = sqlx::query(dialect::FIND_ITEM)
                .bind(project_id)
                .bind(id)
                .fetch_optional(&self.reader)
                .await
                .map_err(error::backend)?;
            if let Some(row) = row {
                let kind: String = row
                    .try_get("kind")
                    .map_err(|e| error::bad_column("item", "kind", e))?;
                found.push(decode_item(&row, kind_of(&kind))?);
            }
        }
        Ok(found)
    }

    async fn response_items(
        &self,
        project_id: &str,
        response_id: &str,
        kind: ItemKind,
    ) -> Result<Vec<StoredItem>, StoreError> {
        let rows = sqlx::query(
            "SELECT item_id, item_json FROM response_items \
             WHERE project_id = $1 AND response_id = $2 AND kind = $3 ORDER BY position",
        )
        .bind(project_id)
        .bind(response_id)
        .bind(kind_text(kind))
        .fetch_all(&self.reader)
        .await
        .map_err(error::backend)?;
        rows.iter().map(|row| decode_item(row, kind)).collect()
    }

    async fn delete_response(&self, project_id: &str, id: &str) -> Result<bool, StoreError> {
        // No transcript packed from now on is linked to it; those linked to it are rewritten.
        self.packed_transcripts.forget(id);
        let mut tx = self
            .writer
            .begin_with(super::dialect::WRITE_BEGIN)
            .await
            .map_err(error::backend)?;
        super::linked_transcripts::unlink(&mut tx, project_id, id).await?;
        let done = sqlx::query("DELETE FROM responses WHERE id = $1 AND project_id = $2")
            .bind(id)
            .bind(project_id)
            .execute(&mut *tx)
            .await
            .map_err(error::backend)?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        for statement in [
            "DELETE FROM event_chunks WHERE response_id = $1",
            "DELETE FROM events WHERE response_id = $1",
            "DELETE FROM response_items WHERE response_id = $1",
            "DELETE FROM files WHERE response_id = $1",
            "DELETE FROM jobs WHERE response_id = $1",
        ] {
            sqlx::query(statement)
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(error::backend)?;
        }
        tx.commit().await.map_err(error::backend)?;
        Ok(true)
    }

    async fn create_conversation(
        &self,
        record: &ConversationRecord,
        items: &[StoredItem],
    ) -> Result<(), StoreError> {
        let metadata = serde_json::to_string(&record.metadata)
            .map_err(|e| StoreError::Backend(format!("cannot encode metadata: {e}")))?;
        let mut tx = self
            .writer
            .begin_with(super::dialect::WRITE_BEGIN)
            .await
            .map_err(error::backend)?;
        sqlx::query(
            "INSERT INTO conversations (id, project_id, created_at, metadata_json) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(record.id.as_str())
        .bind(record.project_id.as_str())
        .bind(record.created_at)
        .bind(metadata)
        .execute(&mut *tx)
        .await
        .map_err(|e| match e.as_database_error().map(|d| d.kind()) {
            Some(sqlx::error::ErrorKind::UniqueViolation) => {
                StoreError::Conflict(format!("conversation {}", record.id))
            }
            _ => error::backend(e),
        })?;
        append(&mut tx, &record.project_id, &record.id, items).await?;
        tx.commit().await.map_err(error::backend)
    }

    async fn get_conversation(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ConversationRecord>, StoreError> {
        let row = sqlx::query(
            "SELECT id, project_id, created_at, metadata_json FROM conversations \
             WHERE id = $1 AND project_id = $2",
        )
        .bind(id)
        .bind(project_id)
        .fetch_optional(&self.reader)
        .await
        .map_err(error::backend)?;
        row.map(|row| {
            let what = format!("conversation {id}");
            let metadata: String = row
                .try_get("metadata_json")
                .map_err(|e| error::bad_column(&what, "metadata_json", e))?;
            Ok(ConversationRecord {
                id: row
                    .try_get("id")
                    .map_err(|e| error::bad_column(&what, "id", e))?,
                project_id: row
                    .try_get("project_id")
                    .map_err(|e| error::bad_column(&what, "project_id", e))?,
                created_at: row
                    .try_get("created_at")
                    .map_err(|e| error::bad_column(&what, "created_at", e))?,
                metadata: serde_json::from_str(&metadata)
                    .map_err(|e| error::bad_json(&what, "metadata_json", &e))?,
            })
        })
        .transpose()
    }

    async fn update_conversation(&self, record: &ConversationRecord) -> Result<bool, StoreError> {
        let metadata = serde_json::to_string(&record.metadata)
            .map_err(|e| StoreError::Backend(format!("cannot encode metadata: {e}")))?;
        let done = sqlx::query(
            "UPDATE conversations SET metadata_json = $1 WHERE id = $2 AND project_id = $3",
        )
        .bind(metadata)
        .bind(record.id.as_str())
        .bind(record.project_id.as_str())
        .execute(&self.writer)
        .await
        .map_err(error::backend)?;
        Ok(done.rows_affected() > 0)
    }

    async fn delete_conversation(&self, project_id: &str, id: &str) -> Result<bool, StoreError> {
        let mut tx = self
            .writer
            .begin_with(super::dialect::WRITE_BEGIN)
            .await
            .map_err(error::backend)?;
        let done = sqlx::query("DELETE FROM conversations WHERE id = $1 AND project_id = $2")
            .bind(id)
            .bind(project_id)
            .execute(&mut *tx)
            .await
            .map_err(error::backend)?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        sqlx::query("DELETE FROM conversation_items WHERE conversation_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(error::backend)?;
        tx.commit().await.map_err(error::backend)?;
        Ok(true)
    }

    async fn conversation_items(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Vec<StoredItem>, StoreError> {
        conversation_rows(self, project_id, id)
            .await?
            .iter()
            .map(|row| decode_item(row, ItemKind::Input))
            .collect()
    }

    async fn conversation_input(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Vec<InputItem>, StoreError> {
        self.conversation_input_json(project_id, id)
            .await
            .map(|(items, _)| items)
    }

    async fn conversation_input_json(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<(Vec<InputItem>, Option<Arc<str>>), StoreError> {
        // The items after the last one the memo kept; all of them if it does not fit (a read of
        // every item always gives them).
        for after in [self.conversations.read_after(id), -1] {
            let rows = sqlx::query(CONVERSATION_INPUT)
                .bind(id)
                .bind(project_id)
                .bind(after)
                .fetch_all(&self.reader)
                .await
                .map_err(error::backend)?;
            let Some(first) = rows.first() else {
                // No such conversation in this project.
                return Ok((Vec::new(), Some(Arc::from("[]"))));
            };
            let changes: i64 = first
                .try_get("item_changes")
                .map_err(|e| error::bad_column("conversation", "item_changes", e))?;
            // A conversation without items (after `after`) is one row of NULL item columns.
            let mut found: Vec<(i64, &str)> = Vec::with_capacity(rows.len());
            for row in &rows {
                let position: Option<i64> = row
                    .try_get("position")
                    .map_err(|e| error::bad_column("item", "position", e))?;
                if let Some(position) = position {
                    let json = row
                        .try_get("item_json")
                        .map_err(|e| error::bad_column("item", "item_json", e))?;
                    found.push((position, json));
                }
            }
            let read = crate::conversation_memo::read(
                &self.conversations,
                id,
                after,
                changes,
                found.iter().copied(),
                |index, json| decode_input(&rows[index], json),
            )?;
            if let Some((items, json)) = read {
                return Ok((items, Some(Arc::from(json))));
            }
        }
        Err(StoreError::Backend(format!(
            "conversation {id}: its items could not be read"
        )))
    }

    async fn append_conversation_items(
        &self,
        project_id: &str,
        id: &str,
        items: &[StoredItem],
    ) -> Result<bool, StoreError> {
        let mut tx = self
            .writer
            .begin_with(super::dialect::WRITE_BEGIN)
            .await
            .map_err(error::backend)?;
        let appended = append(&mut tx, project_id, id, items).await?;
        tx.commit().await.map_err(error::backend)?;
        Ok(appended)
    }

    async fn delete_conversation_item(
        &self,
        project_id: &str,
        id: &str,
        item_id: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "DELETE FROM conversation_items WHERE conversation_id = $1 AND item_id = $2 \
             AND EXISTS (SELECT 1 FROM conversations WHERE id = $1 AND project_id = $3)",
        )
        .bind(id)
        .bind(item_id)
        .bind(project_id)
        .execute(&self.writer)
        .await
        .map_err(error::backend)?;
        Ok(done.rows_affected() > 0)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use super::{IndexRow, append_to, index};
    use crate::script::Script;

    /// However many items a run has, they are written by statements of a few texts (each
    /// prepared once and then found in the statement cache), with every item bound once.
    #[test]
    fn items_of_any_count_are_written_by_statements_of_six_texts() {
        let id: Arc<str> = Arc::from("x");
        let mut index_texts = BTreeSet::new();
        let mut append_texts = BTreeSet::new();
        for count in 0..=200 {
            let rows: Vec<IndexRow> = (0..count)
                .map(|position| IndexRow {
                    kind: "input",
                    position,
                    item_id: Arc::clone(&id),
                    json: Arc::clone(&id),
                })
                .collect();
            let mut script = Script::new();
            index(&mut script, &id, &id, &rows);
            let bound: usize = script.statements().iter().map(|s| s.values().len()).sum();
            assert_eq!(bound, 7 * rows.len());
            index_texts.extend(script.statements().iter().map(|s| s.sql().to_owned()));
            let items: Vec<(Arc<str>, Arc<str>)> = (0..count)
                .map(|_| (Arc::clone(&id), Arc::clone(&id)))
                .collect();
            let mut script = Script::new();
            append_to(&mut script, &id, &id, &items);
            let texts = script.statements().iter().map(|s| s.sql().to_owned());
            append_texts.extend(texts.filter(|sql| sql.starts_with("INSERT")));
        }
        assert_eq!(index_texts.len(), 6, "{index_texts:#?}");
        assert_eq!(append_texts.len(), 6, "{append_texts:#?}");
    }
}
