//! API keys with roles: created (the key shown once, only its SHA-256 stored), listed (prefix,
//! name, role, created, last used), revoked; and authentication that tells the role.

use protocol::admin::{ApiKey, ApiKeyList};

use super::{Caller, store};
use crate::admin_store::{KeyInfo, NewKey, Role};
use crate::engine::Engine;
use crate::error::EngineError;
use crate::ids::new_id;
use crate::keys::hash_key;

/// Characters of a key shown in listings (`agd_` and 8 of its 64 random hex digits).
const PREFIX_CHARS: usize = 12;

/// A key the store knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    pub key_id: String,
    pub project_id: String,
    pub role: Role,
}

impl Authenticated {
    pub fn caller(&self) -> Caller {
        Caller {
            key_id: Some(self.key_id.clone()),
            project_id: self.project_id.clone(),
            role: self.role,
        }
    }
}

fn answer(info: KeyInfo, key: Option<String>) -> ApiKey {
    ApiKey {
        id: info.id,
        object: "api_key".to_owned(),
        project_id: info.project_id,
        name: info.name,
        prefix: info.prefix,
        role: info.role.as_str().to_owned(),
        created_at: info.created_at,
        last_used_at: info.last_used_at,
        key,
    }
}

impl Engine {
    /// Creates a key in `project_id` with a role; the answer holds the key, shown this once.
    /// Only a server-owner key (or the CLI) makes owner keys.
    pub async fn create_api_key(
        &self,
        caller: &Caller,
        project_id: &str,
        name: Option<String>,
        role: Option<&str>,
    ) -> Result<ApiKey, EngineError> {
        caller.require_admin()?;
        let role = match role {
            None => Role::Admin,
            Some(text) => Role::parse(text).ok_or_else(|| {
                EngineError::invalid("role", "role must be \"admin\", \"member\" or \"owner\"")
            })?,
        };
        if role == Role::Owner {
            caller.require_owner("creating a server-owner key")?;
        }
        if name.as_ref().is_some_and(|n| n.len() > 128) {
            return Err(EngineError::invalid(
                "name",
                "a key name is at most 128 characters",
            ));
        }
        let key = format!(
            "agd_{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let info = KeyInfo {
            id: new_id("key"),
            project_id: project_id.to_owned(),
            name,
            prefix: Some(key.chars().take(PREFIX_CHARS).collect()),
            role,
            created_at: self.core.clock.now_secs(),
            last_used_at: None,
        };
        store(&self.core)?
            .insert_key_info(&NewKey {
                info: info.clone(),
                key_hash: hash_key(&key),
            })
            .await?;
        Ok(answer(info, Some(key)))
    }

    pub async fn list_api_keys(
        &self,
        caller: &Caller,
        project_id: &str,
    ) -> Result<ApiKeyList, EngineError> {
        caller.require_admin()?;
        let keys = store(&self.core)?.list_keys(project_id).await?;
        Ok(ApiKeyList {
            object: "list".to_owned(),
            data: keys.into_iter().map(|k| answer(k, None)).collect(),
        })
    }

    pub async fn revoke_api_key(
        &self,
        caller: &Caller,
        project_id: &str,
        key_id: &str,
    ) -> Result<(), EngineError> {
        caller.require_admin()?;
        if !store(&self.core)?.revoke_key(project_id, key_id).await? {
            return Err(EngineError::NotFound(format!("key \"{key_id}\" not found")));
        }
        Ok(())
    }

    /// The key, its project and its role, when the store knows the key; records its use.
    pub async fn authenticate_key(&self, key: &str) -> Result<Option<Authenticated>, EngineError> {
        let Some(admin) = &self.core.admin else {
            return Ok(self
                .authenticate(key)
                .await?
                .map(|project_id| Authenticated {
                    key_id: String::new(),
                    project_id,
                    role: Role::Admin,
                }));
        };
        let Some(info) = admin.key_by_hash(&hash_key(key)).await? else {
            return Ok(None);
        };
        admin
            .touch_key(&info.id, self.core.clock.now_secs())
            .await?;
        Ok(Some(Authenticated {
            key_id: info.id,
            project_id: info.project_id,
            role: info.role,
        }))
    }
}
