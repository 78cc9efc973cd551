//! The admin API's logic: who may do what (roles), projects, API keys, saved connectors and
//! their tests. The server's handlers call these methods of [`crate::Engine`]; the CLI calls
//! them too, with [`Caller::cli`].
//!
//! - `projects.rs`: create, list, rename, delete (with what they own).
//! - `api_keys.rs`: keys with roles, shown once; list; revoke; authentication with the role.
//! - `credentials.rs`: sealing and opening a connector's credentials (bound to project,
//!   connector and field), fingerprints for answers.
//! - `connectors.rs`: create, list, get, update, delete, rotate, audit events.
//! - `oauth.rs`: OAuth connectors: start and callback; `oauth_grant.rs`: the stored grant opened
//!   for a connection (with the sink that stores each refresh).
//! - `probe.rs`: test (initialize + `tools/list`) of a saved connector or a draft, tool lists.

mod api_keys;
mod connectors;
pub(crate) mod credentials;
mod oauth;
pub(crate) mod oauth_grant;
mod probe;
mod projects;

use std::sync::Arc;

use crate::admin_store::{AdminStore, Role};
use crate::core::Core;
use crate::error::EngineError;

pub use api_keys::Authenticated;
pub use oauth::{CALLBACK_PATH, MAX_PENDING, PENDING_TTL_SECS};

/// Who is asking: the key (none in open mode and from the CLI), its project and its role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub key_id: Option<String>,
    pub project_id: String,
    pub role: Role,
}

impl Caller {
    /// The operator at the command line (or an open-mode server on loopback): may do
    /// everything, in the given project.
    pub fn cli(project_id: impl Into<String>) -> Caller {
        Caller {
            key_id: None,
            project_id: project_id.into(),
            role: Role::Owner,
        }
    }

    /// Refuses a key that may not manage its project.
    pub fn require_admin(&self) -> Result<(), EngineError> {
        if self.role.manages() {
            Ok(())
        } else {
            Err(EngineError::PermissionDenied(
                "this key has the member role: the admin API needs an admin key of the project"
                    .to_owned(),
            ))
        }
    }

    /// Refuses a key that is not a server-owner key.
    pub fn require_owner(&self, what: &str) -> Result<(), EngineError> {
        if self.role == Role::Owner {
            Ok(())
        } else {
            Err(EngineError::PermissionDenied(format!(
                "{what} needs a server-owner key (`agentd keys create --role owner`)"
            )))
        }
    }
}

/// The administration store, or why there is none.
pub(crate) fn store(core: &Core) -> Result<&Arc<dyn AdminStore>, EngineError> {
    core.admin.as_ref().ok_or_else(|| {
        EngineError::NotImplemented("this process has no administration store".to_owned())
    })
}

/// A generated id: `<prefix>_<24 lowercase hex>`.
pub(crate) fn random_id(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}_{}", &id[..24])
}
