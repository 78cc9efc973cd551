//! Helpers shared by the store's black-box tests.

use std::path::PathBuf;

use agentd_store::SqliteStore;
use engine::store::{EventRecord, StoreError};

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

pub async fn memory_store() -> Result<SqliteStore, StoreError> {
    SqliteStore::connect("sqlite::memory:").await
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> Self {
        TempDir(std::env::temp_dir().join(format!("agentd-store-test-{}", uuid::Uuid::new_v4())))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Events with these sequence numbers.
pub fn events(range: std::ops::Range<u64>) -> Vec<EventRecord> {
    range
        .map(|n| EventRecord {
            sequence_number: n,
            data: format!(r#"{{"type":"response.output_text.delta","sequence_number":{n}}}"#),
        })
        .collect()
}
