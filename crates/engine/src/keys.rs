//! API keys: created per project and shown once; only their SHA-256 is stored.

use crate::engine::Engine;
use crate::error::EngineError;
use crate::ids::new_id;
use crate::store::KeyRecord;

/// Lower-case hex SHA-256 of a key.
pub fn hash_key(key: &str) -> String {
    use std::fmt::Write as _;
    let digest = sha256(key.as_bytes());
    let mut out = String::with_capacity(64);
    for byte in digest {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

fn sha256(data: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(data).into()
}

impl Engine {
    /// Creates an API key for a project (created when missing); returns the key, shown once.
    pub async fn create_key(&self, project: &str) -> Result<String, EngineError> {
        let project_id = self.core.store.ensure_project(project).await?;
        let key = format!(
            "agd_{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        self.core
            .store
            .insert_key(&KeyRecord {
                id: new_id("key"),
                project_id,
                key_hash: hash_key(&key),
                created_at: self.core.clock.now_secs(),
            })
            .await?;
        Ok(key)
    }

    /// The project a bearer key belongs to, if the key is known.
    pub async fn authenticate(&self, key: &str) -> Result<Option<String>, EngineError> {
        Ok(self
            .core
            .store
            .find_key(&hash_key(key))
            .await?
            .map(|k| k.project_id))
    }

    /// Whether the store holds any key (none: open mode).
    pub async fn has_keys(&self) -> Result<bool, EngineError> {
        Ok(self.core.store.has_keys().await?)
    }

    /// The id of the project used in open mode.
    pub async fn default_project(&self) -> Result<String, EngineError> {
        Ok(self.core.store.ensure_project("default").await?)
    }
}
