//! API keys: created per project and shown once; only their SHA-256 is stored.

use crate::engine::Engine;
use crate::error::EngineError;
use crate::ids::new_id;
use crate::store::KeyRecord;

/// Lower-case hex SHA-256 of a key.
pub fn hash_key(key: &str) -> String {
    hex::encode(sha256(key.as_bytes()))
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

#[cfg(test)]
mod tests {
    use super::hash_key;

    /// The stored form of a key's hash: lower-case hex of its SHA-256, 64 characters (keys
    /// stored before must still be found).
    #[test]
    fn a_keys_hash_is_its_sha256_in_lower_case_hex() {
        assert_eq!(
            hash_key("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hash_key(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
