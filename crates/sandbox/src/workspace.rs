//! The workspaces: one directory per conversation of a project, mounted at [`MOUNT`]
//! (`/workspace`) in the sandbox, and the confinement of every path the model names.
//!
//! A workspace lives at `<root>/<project>/<conversation>` on the host. It is created on first
//! use and found again by later calls of the same conversation (the `previous_response_id`
//! chain, spec decision 6) until it has been idle for longer than the expiry; then
//! [`Workspaces::expire_idle`] deletes it.
//!
//! # Confinement
//! Code in the sandbox writes the workspace freely: it can leave symbolic links to anywhere
//! (`ln -s /etc/passwd x`), links that are absolute in the sandbox's view (`/workspace/y`),
//! hard links, FIFOs, and it can change them at any moment. The file tools run on the host,
//! outside the sandbox, so every path they touch goes through [`resolve_in`], which walks the
//! path component by component from a handle of the workspace root ([`Root`]), follows
//! symbolic links itself as the sandbox would see them (an absolute target must lie under
//! `/workspace`; a relative one must not climb above it) and returns a path relative to the
//! root that held no link when it was walked. Every operation on it then resolves it again
//! in the kernel, below the root's handle and refusing any link on the way
//! (`openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, see [`crate::confine`]), opens the last
//! component with `O_NOFOLLOW`, refuses anything but regular files and directories, and
//! writes by renaming a fresh file into place, never into an existing inode (so a hard link
//! cannot carry a write out of the workspace either). A link swapped in between the walk and
//! the operation makes the operation fail; it is never followed. This holds whatever runs in
//! the workspace meanwhile; the tools still hold [`Workspace::lock`] for the whole of their
//! work, and `execute` holds it while code runs, so calls of one conversation do not
//! interleave.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use tokio::time::Instant;

pub(crate) use crate::confine::describe_io;
use crate::confine::{self, Root, describe_open};
use crate::quota::{self, Quota, QuotaMode};
use crate::shared::{SharedStore, SyncedCell, Target};

/// Where the workspace is mounted in the sandbox; the paths the model uses start with it (or
/// are relative to it).
pub const MOUNT: &str = "/workspace";

/// The most symbolic links one resolution follows (Linux's own limit), so a loop ends.
const MAX_SYMLINK_HOPS: usize = 40;

/// Longest encoded id used as a directory name; longer ones are cut and get a hash suffix.
const MAX_NAME_LEN: usize = 96;

/// All the workspaces of this process, under one root directory.
#[derive(Debug)]
pub struct Workspaces {
    /// The host directory that holds `<project>/<conversation>` workspaces.
    root: PathBuf,
    /// How long a workspace may go unused before [`Workspaces::expire_idle`] deletes it.
    idle_expiry: Duration,
    /// The live workspaces by (project, conversation) as given (not encoded). A tokio mutex:
    /// creating and expiring a workspace do file system work while holding it, so a
    /// workspace being deleted is never handed out again.
    live: tokio::sync::Mutex<HashMap<(String, String), Arc<Workspace>>>,
    /// The disk quota of each workspace, and how it is enforced (`None`: no quota).
    quota: Option<Quota>,
    /// The workspace file systems this process mounted (quota mode `Filesystem`), unmounted
    /// when the workspace expires or this registry is dropped.
    mounted: std::sync::Mutex<HashSet<PathBuf>>,
    /// The store several replicas share, when the workspaces are kept in it (see
    /// [`crate::shared`]); set once at start-up.
    shared: std::sync::OnceLock<SharedStore>,
}

impl Workspaces {
    pub fn new(root: PathBuf, idle_expiry: Duration) -> Workspaces {
        Workspaces {
            root,
            idle_expiry,
            live: tokio::sync::Mutex::new(HashMap::new()),
            quota: None,
            mounted: std::sync::Mutex::new(HashSet::new()),
            shared: std::sync::OnceLock::new(),
        }
    }

    /// Keeps every workspace in a store that several replicas share (see [`crate::shared`]):
    /// a step restores the stored files when this process's copy is missing or older, and
    /// saves them when it changed them. Set once (at start-up, before any call); `false` when
    /// it was set already.
    pub fn keep_in(&self, shared: SharedStore) -> bool {
        self.shared.set(shared).is_ok()
    }

    /// The conversation's workspace, locked for one call and brought up to date with the
    /// shared store (when there is one). Hold the returned [`Entered`] for the whole call and
    /// [`Entered::leave`] it when done.
    pub async fn enter(&self, project_id: &str, conversation: &str) -> Result<Entered, EnterError> {
        let workspace = self
            .get(project_id, conversation)
            .await
            .map_err(EnterError::Io)?;
        let guard = workspace.lock_owned().await;
        let Some(shared) = self.shared.get().cloned() else {
            return Ok(Entered {
                workspace,
                guard,
                shared: None,
            });
        };
        // A task of its own holding the lock: a call dropped meanwhile (its response
        // cancelled) leaves no half-restored workspace to the next call.
        let quota = self.quota.map(|quota| quota.bytes);
        let (inner, restorer) = (Arc::clone(&workspace), shared.clone());
        let (guard, restored) = tokio::spawn(async move {
            let restored = restorer.restore(inner.target(), quota).await;
            (guard, restored)
        })
        .await
        .map_err(|err| EnterError::Shared(format!("restoring the workspace stopped: {err}")))?;
        restored.map_err(EnterError::Shared)?;
        Ok(Entered {
            workspace,
            guard,
            shared: Some(shared),
        })
    }

    /// The same registry with a disk quota for every workspace (see [`crate::quota`]).
    pub fn with_quota(mut self, quota: Quota) -> Workspaces {
        self.quota = Some(quota);
        self
    }

    /// The quota of each workspace.
    pub fn quota(&self) -> Option<Quota> {
        self.quota
    }

    /// The host directory holding all workspaces.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The workspace of a conversation in a project, created on first use:
    /// `<root>/<project>/<conversation>`. Both components are encoded to `[A-Za-z0-9_-]`
    /// injectively (distinct ids never share a directory; `.` and `..` cannot occur). A
    /// directory left by an earlier process for the same conversation is taken over.
    pub async fn get(&self, project_id: &str, conversation: &str) -> io::Result<Arc<Workspace>> {
        let mut live = self.live.lock().await;
        let key = (project_id.to_owned(), conversation.to_owned());
        let workspace = match live.get(&key) {
            Some(workspace) => Arc::clone(workspace),
            None => {
                let root = self
                    .root
                    .join(encode_name(project_id)?)
                    .join(encode_name(conversation)?);
                tokio::fs::create_dir_all(&root).await?;
                if let Some(quota) = self
                    .quota
                    .filter(|quota| quota.mode == QuotaMode::Filesystem)
                {
                    let dir = root.clone();
                    let mounted =
                        tokio::task::spawn_blocking(move || mount_workspace(&dir, quota.bytes))
                            .await
                            .map_err(io::Error::other)?
                            .map_err(io::Error::other)?;
                    if mounted {
                        self.mounted
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(root.clone());
                    }
                }
                let workspace = Arc::new(Workspace {
                    id: container_id(project_id, conversation),
                    project_id: project_id.to_owned(),
                    conversation: conversation.to_owned(),
                    synced: SyncedCell::default(),
                    root,
                    last_used: std::sync::Mutex::new(Instant::now()),
                    busy: Arc::new(tokio::sync::Mutex::new(())),
                });
                live.insert(key, Arc::clone(&workspace));
                workspace
            }
        };
        drop(live);
        workspace.touch();
        // The directory's modification time says when it was last used, for a process that
        // finds it orphaned later (see `expire_idle`).
        let dir = workspace.root.clone();
        let _ = tokio::task::spawn_blocking(move || {
            std::fs::File::open(&dir).and_then(|file| file.set_modified(SystemTime::now()))
        })
        .await;
        Ok(workspace)
    }

    /// Removes workspaces idle for longer than the expiry; returns how many. (The server
    /// calls it periodically.)
    ///
    /// A workspace some call still holds (an `Arc` besides this registry's, or its lock) is
    /// never idle.
    /// Directories under the root that no live workspace owns (left by an earlier process)
    /// are removed once their modification time is older than the expiry. Each removed
    /// directory is first renamed aside, so a new workspace for the same conversation can
    /// be created at once while the old tree is deleted.
    pub async fn expire_idle(&self) -> usize {
        let now = Instant::now();
        let orphans = self.orphan_candidates().await;
        let mut doomed = Vec::new();
        {
            let mut live = self.live.lock().await;
            let idle: Vec<(String, String)> = live
                .iter()
                .filter(|(_, workspace)| {
                    // In use: a call holds it, or its lock (an execution still running).
                    let in_use =
                        Arc::strong_count(workspace) > 1 || workspace.busy.try_lock().is_err();
                    !in_use
                        && now.saturating_duration_since(workspace.last_used()) > self.idle_expiry
                })
                .map(|(key, _)| key.clone())
                .collect();
            for key in idle {
                if let Some(workspace) = live.remove(&key) {
                    doomed.push(workspace.root.clone());
                }
            }
            for dir in orphans {
                if !live.values().any(|workspace| workspace.root == dir) {
                    doomed.push(dir);
                }
            }
            // Rename aside while no `get` can recreate the directory (a workspace file
            // system is unmounted first, and its image removed).
            let mut renamed = Vec::with_capacity(doomed.len());
            for dir in doomed {
                if !self.release_file_system(&dir).await {
                    continue;
                }
                let trash = self.root.join(trash_name());
                match tokio::fs::rename(&dir, &trash).await {
                    Ok(()) => renamed.push(trash),
                    Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                    Err(err) => {
                        tracing::warn!(dir = %dir.display(), error = %err, "could not remove an idle sandbox workspace");
                    }
                }
            }
            doomed = renamed;
        }
        let count = doomed.len();
        for trash in doomed {
            if let Err(err) = tokio::fs::remove_dir_all(&trash).await {
                tracing::warn!(dir = %trash.display(), error = %err, "could not delete an idle sandbox workspace");
            }
        }
        self.remove_stale_trash().await;
        if let Some(shared) = self.shared.get() {
            shared.purge(self.idle_expiry).await;
        }
        count
    }

    /// Unmounts the workspace file system at `dir` (when it is one) and removes its image;
    /// `false` when it stays mounted (still busy), so the directory must stay too.
    async fn release_file_system(&self, dir: &Path) -> bool {
        let owned = dir.to_path_buf();
        let released = tokio::task::spawn_blocking(move || {
            if quota::is_mount_point(&owned) {
                quota::unmount(&owned)?;
            }
            match std::fs::remove_file(quota::image_of(&owned)) {
                Ok(()) => Ok(()),
                Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(err) => Err(format!("cannot remove the workspace image: {err}")),
            }
        })
        .await
        .unwrap_or_else(|err| Err(err.to_string()));
        self.mounted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(dir);
        match released {
            Ok(()) => true,
            Err(reason) => {
                tracing::warn!(dir = %dir.display(), %reason, "could not release an idle sandbox workspace's file system");
                false
            }
        }
    }

    /// `<root>/<project>/<conversation>` directories whose modification time is older than
    /// the expiry (whether live or not; the caller skips live ones).
    async fn orphan_candidates(&self) -> Vec<PathBuf> {
        let root = self.root.clone();
        let expiry = self.idle_expiry;
        tokio::task::spawn_blocking(move || {
            let mut found = Vec::new();
            let now = SystemTime::now();
            for project in list_dirs(&root) {
                for conversation in list_dirs(&project) {
                    let stale = std::fs::symlink_metadata(&conversation)
                        .and_then(|meta| meta.modified())
                        .ok()
                        .and_then(|modified| now.duration_since(modified).ok())
                        .is_some_and(|age| age > expiry);
                    if stale {
                        found.push(conversation);
                    }
                }
            }
            found
        })
        .await
        .unwrap_or_default()
    }

    /// Deletes trash left by an interrupted earlier expiry.
    async fn remove_stale_trash(&self) {
        let Ok(mut entries) = tokio::fs::read_dir(&self.root).await else {
            return;
        };
        while let Ok(Some(entry)) = entries.next_entry().await {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(TRASH_PREFIX)
            {
                let _ = tokio::fs::remove_dir_all(entry.path()).await;
            }
        }
    }
}

impl Drop for Workspaces {
    /// Unmounts the workspace file systems this registry mounted (lazily: a run that still
    /// uses one keeps it until it ends). Their images stay, for the next process.
    fn drop(&mut self) {
        let mounted =
            std::mem::take(&mut *self.mounted.lock().unwrap_or_else(PoisonError::into_inner));
        for dir in mounted {
            if let Err(reason) = quota::unmount_lazily(&dir) {
                tracing::warn!(dir = %dir.display(), %reason, "could not unmount a sandbox workspace");
            }
        }
    }
}

/// Mounts the workspace file system on `dir` (creating its image on first use) unless one is
/// mounted there already (by an earlier process); `true` when this call mounted it.
fn mount_workspace(dir: &Path, bytes: u64) -> Result<bool, String> {
    if quota::is_mount_point(dir) {
        return Ok(false);
    }
    let image = quota::image_of(dir);
    if !image.exists() {
        quota::create_image(&image, bytes)?;
    }
    quota::mount(&image, dir)?;
    Ok(true)
}

/// Why [`Workspaces::enter`] failed.
#[derive(Debug)]
pub enum EnterError {
    /// The directory could not be made.
    Io(io::Error),
    /// The shared store could not bring it up to date (the message says why).
    Shared(String),
}

/// A workspace locked for one call (see [`Workspaces::enter`]).
#[derive(Debug)]
pub struct Entered {
    pub workspace: Arc<Workspace>,
    guard: tokio::sync::OwnedMutexGuard<()>,
    shared: Option<SharedStore>,
}

impl Entered {
    /// Ends the call: saves the workspace to the shared store when the call changed it, then
    /// unlocks it. `Some`: a note for the model (its files were not kept for other replicas).
    pub async fn leave(self) -> Option<String> {
        let note = match &self.shared {
            Some(shared) => shared.save(self.workspace.target()).await,
            None => None,
        };
        self.workspace.touch();
        drop(self.guard);
        note
    }
}

/// One conversation's workspace.
#[derive(Debug)]
pub struct Workspace {
    /// `ctr_` and a short hash of the project and conversation: the `container_id` of
    /// `sandbox_results`, stable across the calls and processes of a conversation.
    pub id: String,
    /// The project and the conversation it belongs to (its key in the shared store).
    pub project_id: String,
    pub conversation: String,
    /// Against the shared store; read and written only by holders of the lock.
    synced: SyncedCell,
    /// The host directory mounted at [`MOUNT`] in the sandbox.
    pub root: PathBuf,
    /// When a call last used it (for [`Workspaces::expire_idle`]).
    last_used: std::sync::Mutex<Instant>,
    /// Held by whoever works in the workspace (a file tool, a running execution), so two
    /// calls never interleave and no sandbox process runs while the host touches files.
    busy: Arc<tokio::sync::Mutex<()>>,
}

impl Workspace {
    /// Confines a model-given path (relative, or absolute under `/workspace`) to the root:
    /// rejects `..` escapes, absolute paths elsewhere, and symbolic links that resolve
    /// outside the root (code in the sandbox can create links to `/etc/passwd`: the host-side
    /// tools never follow them out). Links inside the workspace are followed as the sandbox
    /// sees them. Returns the host path, which holds no symbolic link; its last components
    /// need not exist.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        Ok(self.root.join(self.resolve_relative(path)?))
    }

    /// Like [`Workspace::resolve`], but returns the path relative to the root (empty for
    /// the root itself).
    pub fn resolve_relative(&self, path: &str) -> Result<PathBuf, String> {
        resolve_in(&self.open_root()?, path)
    }

    /// A handle of the workspace root, which file operations start from (see
    /// [`crate::confine`]).
    pub fn open_root(&self) -> Result<Root, String> {
        Root::open(&self.root)
            .map_err(|err| format!("the workspace is not available: {}", describe_io(&err)))
    }

    /// The path the sandbox sees for a host path under the root (`/workspace/…`).
    pub fn sandbox_path(&self, host: &Path) -> String {
        let relative = host.strip_prefix(&self.root).unwrap_or(host);
        sandbox_path_of(relative)
    }

    /// Waits until no one else works in the workspace; hold the guard for the whole call.
    pub async fn lock(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.busy.lock().await
    }

    /// [`Workspace::lock`] as a guard that owns its lock, to move into a task (one that
    /// must keep the workspace locked even when the call awaiting it is dropped).
    pub async fn lock_owned(&self) -> tokio::sync::OwnedMutexGuard<()> {
        Arc::clone(&self.busy).lock_owned().await
    }

    /// What the shared store needs of it.
    fn target(&self) -> Target<'_> {
        Target {
            project_id: &self.project_id,
            conversation: &self.conversation,
            id: &self.id,
            root: &self.root,
            synced: &self.synced,
        }
    }

    /// Marks the workspace as used now.
    pub fn touch(&self) {
        *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    fn last_used(&self) -> Instant {
        *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Confines a model-given path (see `Workspace::resolve`) below `root`: walks it one
/// component at a time through the root's handle, following the workspace's links as the
/// sandbox sees them. Returns the path relative to the root, which held no link when it was
/// walked (every later operation refuses one that appeared since).
pub fn resolve_in(root: &Root, path: &str) -> Result<PathBuf, String> {
    let mut pending: Vec<OsString> = sandbox_components(path)?;
    // Components still to walk, last first, so a link's target can be pushed in front.
    pending.reverse();
    let mut done = PathBuf::new();
    let mut hops = 0;
    // Once a component is missing, nothing below it can be a link: walk lexically.
    let mut missing = false;
    while let Some(component) = pending.pop() {
        if component == ".." {
            if !done.pop() {
                return Err(format!("the path leads outside {MOUNT}"));
            }
            continue;
        }
        done.push(&component);
        if missing {
            continue;
        }
        let stat = match root.lstat(&done) {
            Ok(stat) => stat,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                missing = true;
                continue;
            }
            Err(err) => return Err(describe_open(&err)),
        };
        if confine::kind(&stat) != rustix::fs::FileType::Symlink {
            continue;
        }
        hops += 1;
        if hops > MAX_SYMLINK_HOPS {
            return Err("too many levels of symbolic links".to_owned());
        }
        let target = root.read_link(&done).map_err(|err| describe_open(&err))?;
        done.pop();
        let target = target.to_string_lossy().into_owned();
        if target.starts_with('/') {
            let Some(below) = strip_mount(&target) else {
                return Err(format!(
                    "a symbolic link in the path leads outside {MOUNT} (to {target})"
                ));
            };
            done = PathBuf::new();
            pending.extend(split(below).into_iter().rev());
        } else {
            pending.extend(split(&target).into_iter().rev());
        }
    }
    Ok(done)
}

/// `/workspace/…` for a path relative to the root.
pub(crate) fn sandbox_path_of(relative: &Path) -> String {
    let mut out = String::from(MOUNT);
    for component in relative.components() {
        if let Component::Normal(name) = component {
            out.push('/');
            out.push_str(&name.to_string_lossy());
        }
    }
    out
}

/// The components of a model-given path below the mount, `.` and empty ones dropped, `..`
/// kept (the walk applies it after the links before it).
fn sandbox_components(path: &str) -> Result<Vec<OsString>, String> {
    if path.is_empty() {
        return Err("the path is empty".to_owned());
    }
    if path.contains('\0') {
        return Err("the path contains a NUL character".to_owned());
    }
    let below = if path.starts_with('/') {
        strip_mount(path)
            .ok_or_else(|| format!("absolute paths must be under {MOUNT} (the workspace)"))?
    } else {
        path
    };
    Ok(split(below))
}

/// `Some(rest)` when `path` is `/workspace` or under it.
fn strip_mount(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(MOUNT)?;
    (rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

fn split(path: &str) -> Vec<OsString> {
    path.split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .map(OsString::from)
        .collect()
}

/// `ctr_` and 24 hex digits of SHA-256 over the project and conversation.
fn container_id(project_id: &str, conversation: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(project_id.as_bytes());
    hasher.update([0]);
    hasher.update(conversation.as_bytes());
    let digest = hasher.finalize();
    let mut id = String::from("ctr_");
    for byte in &digest[..12] {
        id.push_str(&format!("{byte:02x}"));
    }
    id
}

/// An id as a directory name over `[A-Za-z0-9_-]`, injectively: letters, digits and `_`
/// stay, every other byte becomes `-` and two upper-case hex digits (so `-` only starts an
/// escape). A name that would be longer than [`MAX_NAME_LEN`] is cut and ends in `-h` and a
/// hash of the whole id (`h` is no hex digit, so it cannot be read as an escape).
fn encode_name(id: &str) -> io::Result<String> {
    if id.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "an empty id cannot name a workspace",
        ));
    }
    let mut out = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'_' {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("-{byte:02X}"));
        }
    }
    if out.len() > MAX_NAME_LEN {
        let digest = Sha256::digest(id.as_bytes());
        let mut cut = out[..MAX_NAME_LEN - 34].to_owned();
        cut.push_str("-h");
        for byte in &digest[..16] {
            cut.push_str(&format!("{byte:02x}"));
        }
        out = cut;
    }
    Ok(out)
}

/// Trash directories start with a dot, which no encoded id contains.
const TRASH_PREFIX: &str = ".expired-";

fn trash_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or_default();
    format!(
        "{TRASH_PREFIX}{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The subdirectories of `dir` (not following links; names starting with `.` skipped).
fn list_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .map(|entry| entry.path())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_is_injective_and_safe() {
        let ids = [
            "resp_abc", "a.b", "a_b", "a-b", "a-2Eb", "..", ".", "a/b", "ü",
        ];
        let encoded: Vec<String> = ids.iter().map(|id| encode_name(id).unwrap()).collect();
        for (i, name) in encoded.iter().enumerate() {
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            );
            for other in &encoded[i + 1..] {
                assert_ne!(name, other);
            }
        }
        assert_eq!(encoded[0], "resp_abc");
        assert!(encode_name("").is_err());
        let long = "x".repeat(500);
        let name = encode_name(&long).unwrap();
        assert!(name.len() <= MAX_NAME_LEN);
        assert_ne!(name, encode_name(&"x".repeat(501)).unwrap());
    }

    #[test]
    fn container_ids_are_stable_and_distinct() {
        assert_eq!(container_id("p", "c"), container_id("p", "c"));
        assert_ne!(container_id("p", "c"), container_id("pc", ""));
        assert_eq!(container_id("p", "c").len(), 4 + 24);
    }

    #[test]
    fn mount_prefix_is_exact() {
        assert_eq!(strip_mount("/workspace"), Some(""));
        assert_eq!(strip_mount("/workspace/a"), Some("/a"));
        assert_eq!(strip_mount("/workspacefoo"), None);
        assert_eq!(strip_mount("/etc/passwd"), None);
    }
}
