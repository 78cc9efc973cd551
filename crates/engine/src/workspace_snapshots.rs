//! The port that keeps sandbox workspaces in the shared store, so that a continuation landing
//! on another replica finds the files an earlier step wrote (see the `sandbox` crate's
//! `snapshot` module, which packs and restores them, and docs/operator.md).
//!
//! One record per workspace (a project's conversation): the packed files and a generation
//! that grows by one with every save. A replica remembers the generation its own copy holds
//! and restores the stored files before a sandbox step when the stored generation differs.

use serde::{Deserialize, Serialize};

use crate::store::StoreError;

/// A workspace's saved files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceSnapshot {
    pub project_id: String,
    /// The workspace's id: the conversation it belongs to.
    pub workspace_id: String,
    /// 1 for the first save, one more with every save after it.
    pub generation: i64,
    /// The packed files (a gzip-compressed tar); empty when they were not kept (`note`).
    pub data: Vec<u8>,
    /// Why `data` is empty (the packed files were over the size limit), `None` when it holds
    /// the files.
    pub note: Option<String>,
    /// Unix seconds of the save.
    pub updated_at: i64,
}

/// Workspace snapshots in a store that several replicas share.
#[async_trait::async_trait]
pub trait WorkspaceSnapshotStore: Send + Sync {
    /// The stored generation of a workspace (`None`: never saved, or expired), marking the
    /// workspace used at `now` (unix seconds) so it does not expire while it is read.
    async fn use_workspace(
        &self,
        project_id: &str,
        workspace_id: &str,
        now: i64,
    ) -> Result<Option<i64>, StoreError>;
    /// The stored snapshot of a workspace.
    async fn get_workspace_snapshot(
        &self,
        project_id: &str,
        workspace_id: &str,
    ) -> Result<Option<WorkspaceSnapshot>, StoreError>;
    /// Saves a workspace's files (`note` set: `data` is empty and says why) as its next
    /// generation, at `now` (unix seconds); returns that generation.
    async fn put_workspace_snapshot(
        &self,
        project_id: &str,
        workspace_id: &str,
        data: &[u8],
        note: Option<&str>,
        now: i64,
    ) -> Result<i64, StoreError>;
    /// Deletes the snapshots of workspaces not used since `used_before` (unix seconds);
    /// returns how many.
    async fn purge_workspace_snapshots(&self, used_before: i64) -> Result<u64, StoreError>;
}
