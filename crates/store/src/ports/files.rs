//! [`FileStore`]: files a response shared, bytes included.

use engine::store::{FileRecord, FileStore, StoreError};
use sqlx::Row;

use super::{DbRow, Store};
use crate::error;

const INSERT: &str = "\
INSERT INTO files (response_id, id, project_id, filename, content_type, bytes, created_at, data)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

const LIST: &str = "\
SELECT response_id, id, project_id, filename, content_type, bytes, created_at
FROM files WHERE project_id = $1 AND response_id = $2
ORDER BY created_at, id";

const GET: &str = "\
SELECT response_id, id, project_id, filename, content_type, bytes, created_at, data
FROM files WHERE project_id = $1 AND response_id = $2 AND id = $3";

#[async_trait::async_trait]
impl FileStore for Store {
    async fn put_file(&self, record: &FileRecord, data: &[u8]) -> Result<(), StoreError> {
        let bytes = i64::try_from(record.bytes)
            .map_err(|_| StoreError::Backend(format!("file {} is too large", record.id)))?;
        sqlx::query(INSERT)
            .bind(record.response_id.as_str())
            .bind(record.id.as_str())
            .bind(record.project_id.as_str())
            .bind(record.filename.as_str())
            .bind(record.content_type.as_str())
            .bind(bytes)
            .bind(record.created_at)
            .bind(data)
            .execute(&self.writer)
            .await
            .map_err(error::backend)?;
        Ok(())
    }

    async fn list_files(
        &self,
        project_id: &str,
        response_id: &str,
    ) -> Result<Vec<FileRecord>, StoreError> {
        let rows = sqlx::query(LIST)
            .bind(project_id)
            .bind(response_id)
            .fetch_all(&self.reader)
            .await
            .map_err(error::backend)?;
        rows.iter().map(decode).collect()
    }

    async fn purge_files(&self, created_before: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM files WHERE created_at < $1")
            .bind(created_before)
            .execute(&self.writer)
            .await
            .map_err(error::backend)?;
        Ok(done.rows_affected())
    }

    async fn get_file(
        &self,
        project_id: &str,
        response_id: &str,
        file_id: &str,
    ) -> Result<Option<(FileRecord, Vec<u8>)>, StoreError> {
        let row = sqlx::query(GET)
            .bind(project_id)
            .bind(response_id)
            .bind(file_id)
            .fetch_optional(&self.reader)
            .await
            .map_err(error::backend)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let data: Vec<u8> = row
            .try_get("data")
            .map_err(|e| error::bad_column("file", "data", e))?;
        Ok(Some((decode(&row)?, data)))
    }
}

fn decode(row: &DbRow) -> Result<FileRecord, StoreError> {
    let text = |name: &str| -> Result<String, StoreError> {
        row.try_get::<String, _>(name)
            .map_err(|e| error::bad_column("file", name, e))
    };
    let number = |name: &str| -> Result<i64, StoreError> {
        row.try_get::<i64, _>(name)
            .map_err(|e| error::bad_column("file", name, e))
    };
    Ok(FileRecord {
        id: text("id")?,
        response_id: text("response_id")?,
        project_id: text("project_id")?,
        filename: text("filename")?,
        content_type: text("content_type")?,
        bytes: u64::try_from(number("bytes")?).unwrap_or(0),
        created_at: number("created_at")?,
    })
}
