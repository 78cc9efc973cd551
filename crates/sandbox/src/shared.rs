//! Workspaces kept in the store that several replicas share, so a continuation that lands on
//! another replica than the step before finds the same files.
//!
//! Every workspace's files are saved in the store after a sandbox step that changed them
//! ([`SharedStore::save`]: packed by [`crate::snapshot`], compressed, at most
//! `max_packed_bytes`), as the workspace's next *generation*. Each replica remembers the
//! generation its own copy holds; before a step ([`SharedStore::restore`]) it reads the stored
//! generation and, when it differs (its copy is missing or older), replaces its copy with the
//! stored files. A workspace with nothing stored (new, or expired from the store) is saved by
//! its first step that leaves it non-empty. All of it happens under the workspace's lock, so
//! the steps of one conversation on one replica never interleave with a save or a restore.
//!
//! Limits and failures: files over the limit are not kept; the save records why, the step's
//! model text says so, and a replica that would need them fails its next sandbox call with
//! that reason (then carries on with the copy it has). Two steps of one conversation running
//! at the same time on two replicas each save their own result; the later save wins. A store
//! that cannot be reached fails the sandbox call (the files it would run on may be stale).

use std::path::Path;
use std::sync::{Arc, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use engine::workspace_snapshots::WorkspaceSnapshotStore;

use crate::snapshot::{self, PackError};

/// The configuration key of the size limit (named in errors).
pub const CONFIG_KEY: &str = "tools.sandbox.snapshot_max_mb";

/// What a workspace's copy on this replica holds, compared with the shared store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Synced {
    /// The stored generation the copy matches (`None`: unknown, or never saved).
    generation: Option<i64>,
    /// The copy's [`snapshot::fingerprint`] when it last matched the store.
    fingerprint: Option<[u8; 32]>,
}

/// A workspace's [`Synced`], read and written only by holders of its lock.
#[derive(Debug, Default)]
pub(crate) struct SyncedCell(std::sync::Mutex<Synced>);

impl SyncedCell {
    fn get(&self) -> Synced {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, synced: Synced) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = synced;
    }
}

/// The workspace a restore or a save works on (its lock held by the caller).
pub(crate) struct Target<'a> {
    pub(crate) project_id: &'a str,
    pub(crate) conversation: &'a str,
    /// Its container id, for logs.
    pub(crate) id: &'a str,
    pub(crate) root: &'a Path,
    pub(crate) synced: &'a SyncedCell,
}

/// The shared store the workspaces are kept in, and the limit on one packed workspace.
#[derive(Clone)]
pub struct SharedStore {
    pub store: Arc<dyn WorkspaceSnapshotStore>,
    /// The largest packed (compressed) workspace kept, in bytes.
    pub max_packed_bytes: u64,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore")
            .field("max_packed_bytes", &self.max_packed_bytes)
            .finish_non_exhaustive()
    }
}

impl SharedStore {
    /// Brings the workspace up to the stored generation (call holding its lock). `Err`: the
    /// message of a sandbox call that cannot go on.
    pub(crate) async fn restore(
        &self,
        workspace: Target<'_>,
        quota: Option<u64>,
    ) -> Result<(), String> {
        let stored = self
            .store
            .use_workspace(workspace.project_id, workspace.conversation, now())
            .await
            .map_err(|err| {
                format!("the workspace could not be checked against the shared store ({err})")
            })?;
        let local = workspace.synced.get();
        let Some(generation) = stored else {
            // Never saved (or expired): this copy is the workspace, and the step saves it
            // unless it is empty.
            workspace.synced.set(Synced {
                generation: None,
                fingerprint: Some(snapshot::empty_fingerprint()),
            });
            return Ok(());
        };
        if local.generation == Some(generation) {
            return Ok(());
        }
        let snapshot = self
            .store
            .get_workspace_snapshot(workspace.project_id, workspace.conversation)
            .await
            .map_err(|err| format!("the workspace's saved files could not be read ({err})"))?;
        let Some(snapshot) = snapshot else {
            // Expired between the two reads: as if never saved.
            workspace.synced.set(Synced {
                generation: None,
                fingerprint: Some(snapshot::empty_fingerprint()),
            });
            return Ok(());
        };
        if let Some(note) = snapshot.note {
            // Not kept: say so once, then go on with this replica's copy.
            let fingerprint = fingerprint_of(workspace.root).await;
            workspace.synced.set(Synced {
                generation: Some(snapshot.generation),
                fingerprint,
            });
            return Err(format!(
                "the workspace's files were last saved without their contents ({note}), so \
                 this agentd replica cannot restore them; its own copy of the workspace may be \
                 missing files or out of date (calls from now on use it)"
            ));
        }
        let dir = workspace.root.to_path_buf();
        let max_bytes = quota.unwrap_or(u64::MAX);
        let restored = tokio::task::spawn_blocking(move || {
            snapshot::unpack(&dir, &snapshot.data, max_bytes)?;
            Ok::<_, String>(snapshot::fingerprint(&dir))
        })
        .await
        .map_err(|err| format!("restoring the workspace stopped: {err}"))?;
        match restored {
            Ok(fingerprint) => {
                workspace.synced.set(Synced {
                    generation: Some(snapshot.generation),
                    fingerprint,
                });
                tracing::debug!(
                    workspace = %workspace.id,
                    generation = snapshot.generation,
                    "sandbox workspace restored from the shared store"
                );
                Ok(())
            }
            Err(reason) => {
                // Half restored: the next call tries again.
                workspace.synced.set(Synced::default());
                Err(format!(
                    "the workspace's files could not be restored from the shared store: {reason}"
                ))
            }
        }
    }

    /// Saves the workspace when a step changed it (call holding its lock). `Some`: a note for
    /// the model (the files were not kept for the other replicas, and why).
    pub(crate) async fn save(&self, workspace: Target<'_>) -> Option<String> {
        let local = workspace.synced.get();
        let fingerprint = fingerprint_of(workspace.root).await;
        if fingerprint.is_some() && fingerprint == local.fingerprint {
            return None;
        }
        let dir = workspace.root.to_path_buf();
        let max = self.max_packed_bytes;
        let packed = tokio::task::spawn_blocking(move || snapshot::pack(&dir, max))
            .await
            .unwrap_or_else(|err| Err(PackError::Io(err.to_string())));
        let (data, note) = match packed {
            Ok(data) => (data, None),
            Err(err @ (PackError::TooLarge { .. } | PackError::TooManyEntries)) => (
                Vec::new(),
                Some(format!("{err}; the limit is {CONFIG_KEY}")),
            ),
            Err(err @ PackError::Io(_)) => {
                tracing::warn!(workspace = %workspace.id, error = %err, "sandbox workspace not saved to the shared store");
                return Some(format!(
                    "note: the workspace could not be saved for the other agentd replicas ({err})"
                ));
            }
        };
        let saved = self
            .store
            .put_workspace_snapshot(
                workspace.project_id,
                workspace.conversation,
                &data,
                note.as_deref(),
                now(),
            )
            .await;
        match saved {
            Ok(generation) => {
                workspace.synced.set(Synced {
                    generation: Some(generation),
                    fingerprint,
                });
                note.map(|note| {
                    format!(
                        "note: {note}: a later step that runs on another agentd replica will not \
                         find these files"
                    )
                })
            }
            Err(err) => {
                // The stored generation is unchanged, so this replica keeps its newer copy and
                // the next step that changes it saves again.
                tracing::warn!(workspace = %workspace.id, error = %err, "sandbox workspace not saved to the shared store");
                Some(format!(
                    "note: the workspace could not be saved for the other agentd replicas ({err})"
                ))
            }
        }
    }

    /// Deletes the saved workspaces unused for longer than `idle` (every replica's expiry
    /// sweep calls it).
    pub(crate) async fn purge(&self, idle: std::time::Duration) {
        let cutoff = now().saturating_sub(i64::try_from(idle.as_secs()).unwrap_or(i64::MAX));
        match self.store.purge_workspace_snapshots(cutoff).await {
            Ok(0) => {}
            Ok(removed) => tracing::info!(removed, "idle saved sandbox workspaces removed"),
            Err(err) => {
                tracing::warn!(error = %err, "could not remove idle saved sandbox workspaces")
            }
        }
    }
}

async fn fingerprint_of(dir: &Path) -> Option<[u8; 32]> {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || snapshot::fingerprint(&dir))
        .await
        .ok()
        .flatten()
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
