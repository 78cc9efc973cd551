//! The administration ports: projects and their keys ([`ProjectStore`]), saved connectors with
//! their audit events and OAuth grants ([`ConnectorStore`]). The `store` crate implements them.
//!
//! Connector credentials reach these ports only sealed ([`crate::secrets::Sealer`]): a store
//! never sees a credential in clear text.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::store::StoreError;

/// A project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectRecord {
    pub id: String,
    pub name: String,
    pub created_at: i64,
}

/// What a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A server-owner key: manages every project.
    Owner,
    /// Uses and manages its project.
    Admin,
    /// Uses its project.
    Member,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Member => "member",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        match text {
            "owner" => Some(Role::Owner),
            "admin" => Some(Role::Admin),
            "member" => Some(Role::Member),
            _ => None,
        }
    }

    /// Whether the key may use the admin routes.
    pub fn manages(self) -> bool {
        matches!(self, Role::Owner | Role::Admin)
    }
}

/// A key as the admin API shows it: never the key nor its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyInfo {
    pub id: String,
    pub project_id: String,
    pub name: Option<String>,
    /// The first characters of the key.
    pub prefix: Option<String>,
    pub role: Role,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

/// A new key as stored: its hash, never the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewKey {
    pub info: KeyInfo,
    pub key_hash: String,
}

#[async_trait::async_trait]
pub trait ProjectStore: Send + Sync {
    async fn list_projects(&self) -> Result<Vec<ProjectRecord>, StoreError>;
    async fn get_project(&self, id: &str) -> Result<Option<ProjectRecord>, StoreError>;
    async fn project_by_name(&self, name: &str) -> Result<Option<ProjectRecord>, StoreError>;
    /// Adds a project; a taken name is [`StoreError::Conflict`].
    async fn create_project(&self, project: &ProjectRecord) -> Result<(), StoreError>;
    /// Renames; `false` when there is no such project, a taken name is a conflict.
    async fn rename_project(&self, id: &str, name: &str) -> Result<bool, StoreError>;
    /// Deletes a project and everything it owns (keys, responses, events, jobs, files, items,
    /// conversations, connectors, their events and grants) in one transaction.
    async fn delete_project(&self, id: &str) -> Result<bool, StoreError>;
    async fn insert_key_info(&self, key: &NewKey) -> Result<(), StoreError>;
    async fn list_keys(&self, project_id: &str) -> Result<Vec<KeyInfo>, StoreError>;
    /// The key with this hash.
    async fn key_by_hash(&self, key_hash: &str) -> Result<Option<KeyInfo>, StoreError>;
    /// Deletes a key of the project; `false` when there is none.
    async fn revoke_key(&self, project_id: &str, key_id: &str) -> Result<bool, StoreError>;
    /// Records that a key was used.
    async fn touch_key(&self, key_id: &str, at: i64) -> Result<(), StoreError>;
}

/// A saved connector as stored: credentials sealed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectorRecord {
    pub project_id: String,
    pub id: String,
    pub server_label: String,
    pub server_url: String,
    /// `auto`, `streamable_http` or `sse`.
    pub transport: String,
    pub description: Option<String>,
    /// `none`, `bearer`, `headers` or `oauth`.
    pub auth_kind: String,
    /// The sealed bearer token (field `authorization`).
    pub authorization: Option<String>,
    /// Header name -> sealed value (field `headers.<name>`).
    pub headers: BTreeMap<String, String>,
    pub allowed_tools: Option<Vec<String>>,
    /// The wire `require_approval` value.
    pub require_approval: Option<serde_json::Value>,
    pub defer_loading: bool,
    pub timeout_ms: Option<i64>,
    pub enabled: bool,
    /// Sandbox variable -> `authorization` or `headers.<name>`.
    pub sandbox_env: BTreeMap<String, String>,
    /// Bumped by every credential change.
    pub secret_version: i64,
    /// `untested`, `ok` or `error`.
    pub status: String,
    pub last_checked_at: Option<i64>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One audit event of a connector: what happened, by which key. Never a value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectorEvent {
    pub id: String,
    pub project_id: String,
    pub connector_id: String,
    /// `created`, `updated`, `rotated`, `tested`, `deleted`, `authorized`.
    pub kind: String,
    pub key_id: Option<String>,
    /// Which fields, the test outcome… (names, never values).
    pub detail: serde_json::Value,
    pub created_at: i64,
}

/// The OAuth grant of a connector: plain metadata, sealed secrets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OAuthGrantRecord {
    pub project_id: String,
    pub connector_id: String,
    pub issuer: String,
    pub token_endpoint: String,
    pub resource: String,
    pub client_id: String,
    pub auth_method: String,
    pub kind: String,
    pub redirect_uri: String,
    pub scope: Option<String>,
    /// Sealed (field `oauth.client_secret`).
    pub client_secret: Option<String>,
    /// Sealed (field `oauth.refresh_token`).
    pub refresh_token: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The current access token, sealed (field `oauth.access_token`).
    #[serde(default)]
    pub access_token: Option<String>,
    /// When the access token expires (Unix seconds; `None`: the server did not say).
    #[serde(default)]
    pub access_expires_at: Option<i64>,
}

/// The tokens of one refresh, sealed, for [`ConnectorStore::set_oauth_tokens`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedTokens {
    /// The new refresh token (`None`: keep the stored one).
    pub refresh_token: Option<String>,
    pub access_token: String,
    pub access_expires_at: Option<i64>,
}

/// One sealed value in the store, for a re-seal under a new key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedField {
    pub project_id: String,
    pub connector_id: String,
    /// `authorization`, `headers.<name>`, `oauth.client_secret`, `oauth.refresh_token`,
    /// `oauth.access_token`.
    pub field: String,
    pub sealed: String,
}

/// Re-seals one value (`Ok(None)`: leave it as it is).
pub type Resealer<'a> = dyn Fn(&SealedField) -> Result<Option<String>, String> + Send + Sync + 'a;

#[async_trait::async_trait]
pub trait ConnectorStore: Send + Sync {
    /// Adds a connector; an id the project already has is [`StoreError::Conflict`].
    async fn insert_connector(&self, record: &ConnectorRecord) -> Result<(), StoreError>;
    async fn get_connector(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ConnectorRecord>, StoreError>;
    async fn list_connectors(&self, project_id: &str) -> Result<Vec<ConnectorRecord>, StoreError>;
    /// Replaces a connector's row; `false` when it does not exist.
    async fn update_connector(&self, record: &ConnectorRecord) -> Result<bool, StoreError>;
    /// Deletes a connector and its grant (its audit events stay); `false` when none.
    async fn delete_connector(&self, project_id: &str, id: &str) -> Result<bool, StoreError>;
    /// Keeps the outcome of a test.
    async fn set_connector_status(
        &self,
        project_id: &str,
        id: &str,
        status: &str,
        checked_at: i64,
        error: Option<&str>,
    ) -> Result<(), StoreError>;
    async fn add_connector_event(&self, event: &ConnectorEvent) -> Result<(), StoreError>;
    async fn connector_events(
        &self,
        project_id: &str,
        connector_id: &str,
    ) -> Result<Vec<ConnectorEvent>, StoreError>;
    async fn put_oauth_grant(&self, grant: &OAuthGrantRecord) -> Result<(), StoreError>;
    async fn get_oauth_grant(
        &self,
        project_id: &str,
        connector_id: &str,
    ) -> Result<Option<OAuthGrantRecord>, StoreError>;
    /// Replaces the sealed refresh token of a grant (a rotated one).
    async fn set_refresh_token(
        &self,
        project_id: &str,
        connector_id: &str,
        sealed: &str,
        at: i64,
    ) -> Result<(), StoreError>;
    /// Keeps the tokens of a refresh (the access token and its expiry; the refresh token when
    /// one is given). `false` when the connector has no grant (any more).
    async fn set_oauth_tokens(
        &self,
        project_id: &str,
        connector_id: &str,
        tokens: &SealedTokens,
        at: i64,
    ) -> Result<bool, StoreError>;
    /// Re-seals every sealed value of every project in one transaction: all or nothing.
    /// Returns how many values changed.
    async fn reseal_all(&self, reseal: &Resealer<'_>) -> Result<u64, StoreError>;
}

/// Both administration ports.
pub trait AdminStore: ProjectStore + ConnectorStore {}
impl<T: ProjectStore + ConnectorStore> AdminStore for T {}
