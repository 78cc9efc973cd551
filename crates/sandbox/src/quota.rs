//! The workspace disk quota: how much one conversation's workspace may hold, whoever writes
//! it (code in the sandbox or the file tools).
//!
//! Two ways to enforce it, chosen once at start-up ([`QuotaMode`]):
//!
//! - **Filesystem** (agentd runs as root, with loop devices, `mkfs.ext4` and `mount`): each
//!   workspace is its own ext4 file system in a sparse image file of exactly the quota
//!   (`<conversation>.img` beside the workspace directory), loop-mounted on the workspace
//!   directory. The kernel bounds it: a write past the quota fails with `ENOSPC`, for the
//!   sandbox and the file tools alike, however fast it comes and however many files or
//!   processes take part; inodes are bounded too. The image takes only the space written
//!   (about 1 MiB when empty). This is the only mechanism of those tried that bounds the
//!   disk exactly: a size-limited tmpfs bounds memory, not disk, and loses the workspace
//!   between executions; XFS/ext4 project quotas need the data directory's file system to
//!   be created and mounted for them; bwrap 0.8 has no size limit for a bind mount.
//! - **Watch** (everything else, e.g. agentd as an unprivileged user, or in a container
//!   without loop devices): while code runs, agentd sums the workspace's allocated blocks
//!   every [`WATCH_INTERVAL`] and kills the run once it passes the quota; the file tools
//!   check the sum before they write. No single file can outgrow the quota (the run's
//!   RLIMIT_FSIZE is at most the quota), but many files written fast can overshoot by what
//!   the run writes in one interval before it is stopped.
//!
//! Either way the model reads an error that names the limit ([`full_message`]).

use std::io;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The configuration key of the quota (named in errors).
pub const CONFIG_KEY: &str = "tools.sandbox.workspace_quota_mb";

/// How often a watched run's workspace is measured.
pub const WATCH_INTERVAL: Duration = Duration::from_millis(100);

/// The most directory entries one measurement visits (a workspace with more is treated as
/// full: it cannot be measured cheaply enough to watch).
const MAX_MEASURED_ENTRIES: usize = 1_000_000;

/// How the quota is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaMode {
    /// A loop-mounted ext4 image per workspace: the kernel refuses writes past the quota.
    Filesystem,
    /// Runs are measured while they run and killed past the quota; file tools check first.
    Watch,
}

impl QuotaMode {
    pub fn describe(self) -> &'static str {
        match self {
            QuotaMode::Filesystem => "a loop-mounted file system per workspace",
            QuotaMode::Watch => "measured while code runs (no loop-mounted file systems here)",
        }
    }
}

/// The quota of every workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub bytes: u64,
    pub mode: QuotaMode,
}

impl Quota {
    /// The quota in MiB, as the operator configured it.
    pub fn mib(&self) -> u64 {
        self.bytes >> 20
    }
}

/// What the model reads when the workspace is full.
pub fn full_message(bytes: u64) -> String {
    format!(
        "the workspace is full: its disk quota is {} MiB ({CONFIG_KEY}); delete files to \
         make room",
        bytes >> 20
    )
}

/// Whether this process can give workspaces their own file systems, tried once in `dir`
/// (the workspaces' root): `Err` says why not.
pub fn probe_filesystem(dir: &Path) -> Result<(), String> {
    if rustix::process::geteuid().as_raw() != 0 {
        return Err("agentd does not run as root".to_owned());
    }
    for program in ["mkfs.ext4", "mount", "umount"] {
        if find_program(program).is_none() {
            return Err(format!("`{program}` is not installed"));
        }
    }
    std::fs::create_dir_all(dir)
        .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    let trial = dir.join(format!(".quota-probe-{}", std::process::id()));
    let image = trial.with_extension("img");
    std::fs::create_dir_all(&trial)
        .map_err(|err| format!("cannot create {}: {err}", trial.display()))?;
    let result = create_image(&image, 16 << 20).and_then(|()| mount(&image, &trial));
    let unmounted = if result.is_ok() {
        unmount(&trial)
    } else {
        Ok(())
    };
    let _ = std::fs::remove_dir(&trial);
    let _ = std::fs::remove_file(&image);
    result.and(unmounted)
}

/// Creates a sparse image of `bytes` holding an empty ext4 file system (no journal: a
/// workspace is scratch space, and a journal would take disk of its own; no blocks reserved
/// for root).
pub(crate) fn create_image(image: &Path, bytes: u64) -> Result<(), String> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(image)
        .map_err(|err| format!("cannot create the workspace image: {err}"))?;
    file.set_len(bytes)
        .map_err(|err| format!("cannot size the workspace image: {err}"))?;
    drop(file);
    let result = run(Command::new(program("mkfs.ext4"))
        .args([
            "-q",
            "-F",
            "-m",
            "0",
            "-O",
            "^has_journal",
            "-E",
            "nodiscard,lazy_itable_init=1",
        ])
        .arg(image));
    if result.is_err() {
        let _ = std::fs::remove_file(image);
    }
    result
}

/// Loop-mounts `image` on `dir` (no set-uid programs, no devices) and removes the file
/// system's `lost+found`.
pub(crate) fn mount(image: &Path, dir: &Path) -> Result<(), String> {
    run(Command::new(program("mount"))
        .args(["-t", "ext4", "-o", "loop,nosuid,nodev,noatime"])
        .arg(image)
        .arg(dir))?;
    let _ = std::fs::remove_dir(dir.join("lost+found"));
    Ok(())
}

/// Unmounts the workspace file system at `dir` (its loop device is freed with it).
pub(crate) fn unmount(dir: &Path) -> Result<(), String> {
    run(Command::new(program("umount")).arg(dir))
}

/// Detaches the workspace file system at `dir` now; the kernel unmounts it once nothing
/// uses it.
pub(crate) fn unmount_lazily(dir: &Path) -> Result<(), String> {
    run(Command::new(program("umount")).arg("--lazy").arg(dir))
}

/// Whether `dir` is a mount point (its device differs from its parent's).
pub(crate) fn is_mount_point(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(parent) = dir.parent() else {
        return false;
    };
    match (std::fs::symlink_metadata(dir), std::fs::metadata(parent)) {
        (Ok(own), Ok(up)) => own.is_dir() && own.dev() != up.dev(),
        _ => false,
    }
}

/// The image file of the workspace at `dir`.
pub(crate) fn image_of(dir: &Path) -> std::path::PathBuf {
    dir.with_extension("img")
}

/// Whether the file system at `dir` has (almost) no room left: less than 1% or 1 MiB.
pub(crate) fn nearly_full(dir: &Path) -> bool {
    match rustix::fs::statvfs(dir) {
        Ok(stat) => {
            let free = stat.f_bavail.saturating_mul(stat.f_frsize);
            let total = stat.f_blocks.saturating_mul(stat.f_frsize);
            free < (1 << 20) || free.saturating_mul(100) < total
        }
        Err(_) => false,
    }
}

/// The bytes the files under `dir` take on disk (allocated blocks; hard links counted
/// once; links not followed). `u64::MAX` when there are too many entries to count.
pub fn usage(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total: u64 = 0;
    let mut seen = std::collections::HashSet::new();
    let mut pending = vec![dir.to_path_buf()];
    let mut visited = 0usize;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            visited += 1;
            if visited > MAX_MEASURED_ENTRIES {
                return u64::MAX;
            }
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.nlink() > 1 && !meta.is_dir() && !seen.insert((meta.dev(), meta.ino())) {
                continue;
            }
            total = total.saturating_add(meta.blocks().saturating_mul(512));
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    total
}

fn run(command: &mut Command) -> Result<(), String> {
    let output = command
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .output()
        .map_err(|err| format!("cannot run {:?}: {err}", command.get_program()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{:?} failed ({}): {}",
            command.get_program(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

fn program(name: &str) -> std::path::PathBuf {
    find_program(name).unwrap_or_else(|| name.into())
}

fn find_program(name: &str) -> Option<std::path::PathBuf> {
    ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|path| path.is_file())
}

/// An I/O error that means the workspace is full.
pub(crate) fn is_full_error(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}
