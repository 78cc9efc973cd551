//! Where built-in tools share files: the response's file store (`share_file`), with a size cap
//! per file and a count cap per response.

use std::sync::Arc;

use crate::clock::Clock;
use crate::hosted::{FileSink, SharedFile};
use crate::ids::new_id;
use crate::store::{FileRecord, Store};

/// Largest file a tool may share, and how many files one response may hold.
const MAX_SHARED_FILE_BYTES: usize = 25 << 20;
const MAX_SHARED_FILES: usize = 100;

/// Stores the files tools share, attached to the response being run.
pub(crate) struct RunFiles {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) project_id: String,
    pub(crate) response_id: String,
}

#[async_trait::async_trait]
impl FileSink for RunFiles {
    async fn share(
        &self,
        filename: &str,
        content_type: &str,
        bytes: Vec<u8>,
    ) -> Result<SharedFile, String> {
        if bytes.len() > MAX_SHARED_FILE_BYTES {
            return Err(format!(
                "the file is {} bytes; at most {MAX_SHARED_FILE_BYTES} bytes can be shared",
                bytes.len()
            ));
        }
        let existing = self
            .store
            .list_files(&self.project_id, &self.response_id)
            .await
            .map_err(|err| format!("the file could not be stored: {err}"))?;
        if existing.len() >= MAX_SHARED_FILES {
            return Err(format!(
                "a response can share at most {MAX_SHARED_FILES} files"
            ));
        }
        let record = FileRecord {
            id: new_id("file"),
            response_id: self.response_id.clone(),
            project_id: self.project_id.clone(),
            filename: filename.to_owned(),
            content_type: content_type.to_owned(),
            bytes: bytes.len() as u64,
            created_at: self.clock.now_secs(),
        };
        self.store
            .put_file(&record, &bytes)
            .await
            .map_err(|err| format!("the file could not be stored: {err}"))?;
        Ok(SharedFile {
            url: format!(
                "/v1/responses/{}/files/{}/content",
                self.response_id, record.id
            ),
            id: record.id,
            bytes: record.bytes,
        })
    }
}
