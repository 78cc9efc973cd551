//! File system work on paths [`resolve_in`](crate::workspace::resolve_in) returned, relative
//! to the workspace root's handle ([`Root`]; see [`crate::confine`] on why nothing here can
//! be raced out of the workspace): capped reads that refuse FIFOs and devices, writes that
//! rename a fresh file into place, and directory walks that never follow links. Every error
//! is a message for the model and never names a host path.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::confine::{self, Root, describe_io, describe_open};
use crate::quota::{self, Quota, QuotaMode};

/// How many leading bytes decide whether a file is binary (a NUL byte in them).
const BINARY_SNIFF_BYTES: usize = 8192;

/// The bytes of a regular file of at most `max` bytes.
pub(super) fn read_capped(
    root: &Root,
    relative: &Path,
    max: u64,
    what: &str,
) -> Result<Vec<u8>, String> {
    let (file, len) = root.open_regular(relative)?;
    if len > max {
        return Err(too_large(len, max, what));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    // The file may grow after the check: never read more than the cap allows.
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|err| describe_io(&err))?;
    let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if len > max {
        return Err(too_large(len, max, what));
    }
    Ok(bytes)
}

pub(super) fn too_large(len: u64, max: u64, what: &str) -> String {
    format!("the file is {len} bytes, more than the {max} byte limit for {what}")
}

/// Whether the bytes look binary (a NUL byte near the start).
pub(super) fn is_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}

/// A text file's content for tools that write it back (`edit`, `apply_patch`): binary and
/// non-UTF-8 files are refused, since a lossy decoding would corrupt them.
pub(super) fn read_text(
    root: &Root,
    relative: &Path,
    max: u64,
    what: &str,
) -> Result<String, String> {
    let bytes = read_capped(root, relative, max, what)?;
    if is_binary(&bytes) {
        return Err("is a binary file".to_owned());
    }
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_owned())
}

/// What is at a path (a link is itself, not its target); `None` when nothing is.
pub(super) fn kind(root: &Root, relative: &Path) -> Result<Option<FileType>, String> {
    match root.lstat(relative) {
        Ok(stat) => Ok(Some(confine::kind(&stat))),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(describe_open(&err)),
    }
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Written {
    Created,
    Replaced,
}

/// Writes `bytes` to `relative`, creating missing parent directories: into a fresh file in
/// the same directory, renamed over the target. The old file (or a link or hard link in its
/// place) is replaced, never written through; its permissions are kept. A write the
/// workspace's quota has no room for fails with a message naming the quota: the file
/// system refuses it (quota mode `Filesystem`), or the workspace is measured first
/// (`Watch`).
pub(super) fn write_atomic(
    root: &Root,
    relative: &Path,
    bytes: &[u8],
    quota: Option<Quota>,
) -> Result<Written, String> {
    let Some(name) = relative.file_name() else {
        return Err("is a directory".to_owned());
    };
    let parent = relative.parent().unwrap_or(Path::new(""));
    let dir = root
        .create_dirs(parent)
        .map_err(|err| describe_open(&err))?;
    let existing = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => match confine::kind(&stat) {
            FileType::Directory => return Err("is a directory".to_owned()),
            FileType::RegularFile => Some(stat.st_mode & 0o7777),
            _ => None,
        },
        Err(rustix::io::Errno::NOENT) => None,
        Err(err) => return Err(describe_io(&err.into())),
    };
    if let Some(quota) = quota.filter(|quota| quota.mode == QuotaMode::Watch) {
        let replaced = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .map(|stat| allocated(&stat))
            .unwrap_or(0);
        let after = allocated_under(root)
            .saturating_sub(replaced)
            .saturating_add(u64::try_from(bytes.len()).unwrap_or(u64::MAX));
        if after > quota.bytes {
            return Err(quota::full_message(quota.bytes));
        }
    }
    let temp = temp_name();
    let result = (|| -> io::Result<()> {
        let mut file = confine::create_new(&dir, &temp)?;
        file.write_all(bytes)?;
        if let Some(mode) = existing {
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        drop(file);
        rustix::fs::renameat(&dir, &temp, &dir, name)?;
        Ok(())
    })();
    match result {
        Ok(()) if existing.is_some() => Ok(Written::Replaced),
        Ok(()) => Ok(Written::Created),
        Err(err) => {
            let _ = rustix::fs::unlinkat(&dir, &temp, AtFlags::empty());
            match quota {
                Some(quota) if quota::is_full_error(&err) => Err(quota::full_message(quota.bytes)),
                _ => Err(describe_open(&err)),
            }
        }
    }
}

/// The disk space a file takes (its allocated blocks).
fn allocated(stat: &rustix::fs::Stat) -> u64 {
    u64::try_from(stat.st_blocks)
        .unwrap_or(0)
        .saturating_mul(512)
}

/// The disk space the regular files under the root take (links never followed).
fn allocated_under(root: &Root) -> u64 {
    let walk = walk(root, Path::new(""), usize::MAX);
    walk.files
        .iter()
        .filter_map(|file| root.lstat(file).ok())
        .map(|stat| allocated(&stat))
        .fold(0, u64::saturating_add)
}

/// Removes a regular file (a link in its place is removed itself, not its target).
pub(super) fn remove_file(root: &Root, relative: &Path) -> Result<(), String> {
    let (dir, name) = root.parent(relative).map_err(|err| describe_open(&err))?;
    match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) if confine::kind(&stat) == FileType::Directory => {
            return Err("is a directory".to_owned());
        }
        Ok(_) => {}
        Err(err) => return Err(describe_io(&err.into())),
    }
    rustix::fs::unlinkat(&dir, name, AtFlags::empty()).map_err(|err| describe_io(&err.into()))
}

fn temp_name() -> OsString {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    OsString::from(format!(
        ".agentd-write-{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// The regular files under a directory.
#[derive(Debug, Default)]
pub(super) struct Walk {
    /// Paths relative to the root, in path order.
    pub files: Vec<PathBuf>,
    /// The walk stopped at the entry cap.
    pub truncated: bool,
}

/// Lists the regular files under the directory `relative`, at most `max_entries` directory
/// entries visited. Links (to files or directories) are skipped, never followed; each
/// directory is opened from the root without passing through a link, so one swapped in
/// during the walk is skipped too; unreadable directories are skipped. Sorted by path.
pub(super) fn walk(root: &Root, relative: &Path, max_entries: usize) -> Walk {
    let mut walk = Walk::default();
    let mut pending = vec![relative.to_path_buf()];
    let mut visited = 0usize;
    while let Some(dir_path) = pending.pop() {
        let Ok(fd) = root.open_beneath(
            &dir_path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW,
            Mode::empty(),
        ) else {
            continue;
        };
        let Ok(dir) = rustix::fs::Dir::read_from(&fd) else {
            continue;
        };
        for entry in dir.filter_map(Result::ok) {
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            visited += 1;
            if visited > max_entries {
                walk.truncated = true;
                walk.files.sort();
                return walk;
            }
            let name = OsString::from(std::ffi::OsStr::from_bytes(name));
            let kind = match entry.file_type() {
                FileType::Unknown => {
                    match rustix::fs::statat(&fd, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(stat) => confine::kind(&stat),
                        Err(_) => continue,
                    }
                }
                kind => kind,
            };
            match kind {
                FileType::Directory => pending.push(dir_path.join(&name)),
                FileType::RegularFile => walk.files.push(dir_path.join(&name)),
                _ => {}
            }
        }
    }
    walk.files.sort();
    walk
}
