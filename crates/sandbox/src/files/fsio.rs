//! File system work on paths [`Workspace::resolve`](crate::workspace::Workspace::resolve)
//! returned: opening without following a last-component link, refusing FIFOs and devices,
//! capped reads, writes that rename a fresh file into place, and directory walks that never
//! follow links. Every error is a message for the model and never names a host path.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::workspace::describe_io;

/// How many leading bytes decide whether a file is binary (a NUL byte in them).
const BINARY_SNIFF_BYTES: usize = 8192;

/// Opens a regular file for reading. The last component is not followed if it is a link
/// (`O_NOFOLLOW`), and a FIFO does not block the open (`O_NONBLOCK`, which does nothing to
/// regular files); anything but a regular file is refused.
pub(super) fn open_regular(path: &Path) -> Result<(File, Metadata), String> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|err| describe_open(&err))?;
    let meta = file.metadata().map_err(|err| describe_io(&err))?;
    if meta.is_dir() {
        return Err("is a directory".to_owned());
    }
    if !meta.is_file() {
        return Err("is not a regular file".to_owned());
    }
    Ok((file, meta))
}

fn describe_open(err: &io::Error) -> String {
    if err.raw_os_error() == Some(libc::ELOOP) {
        "is a symbolic link".to_owned()
    } else {
        describe_io(err)
    }
}

/// The bytes of a regular file of at most `max` bytes.
pub(super) fn read_capped(path: &Path, max: u64, what: &str) -> Result<Vec<u8>, String> {
    let (file, meta) = open_regular(path)?;
    if meta.len() > max {
        return Err(too_large(meta.len(), max, what));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
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
pub(super) fn read_text(path: &Path, max: u64, what: &str) -> Result<String, String> {
    let bytes = read_capped(path, max, what)?;
    if is_binary(&bytes) {
        return Err("is a binary file".to_owned());
    }
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_owned())
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Written {
    Created,
    Replaced,
}

/// Writes `bytes` to `path`, creating missing parent directories: into a fresh file in the
/// same directory, renamed over the target. The old file (or a link or hard link in its
/// place) is replaced, never written through; its permissions are kept.
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<Written, String> {
    let Some(parent) = path.parent() else {
        return Err("is a directory".to_owned());
    };
    std::fs::create_dir_all(parent).map_err(|err| describe_io(&err))?;
    let existing = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => return Err("is a directory".to_owned()),
        Ok(meta) if meta.is_file() => Some(meta.permissions()),
        Ok(_) => None,
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => return Err(describe_io(&err)),
    };
    let temp = parent.join(temp_name());
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temp)?;
        file.write_all(bytes)?;
        if let Some(permissions) = &existing {
            file.set_permissions(permissions.clone())?;
        }
        drop(file);
        std::fs::rename(&temp, path)
    })();
    match result {
        Ok(()) if existing.is_some() => Ok(Written::Replaced),
        Ok(()) => Ok(Written::Created),
        Err(err) => {
            let _ = std::fs::remove_file(&temp);
            Err(describe_io(&err))
        }
    }
}

/// Removes a regular file (a link in its place is removed itself, not its target).
pub(super) fn remove_file(path: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => return Err("is a directory".to_owned()),
        Ok(_) => {}
        Err(err) => return Err(describe_io(&err)),
    }
    std::fs::remove_file(path).map_err(|err| describe_io(&err))
}

fn temp_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        ".agentd-write-{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The regular files under a directory.
#[derive(Debug, Default)]
pub(super) struct Walk {
    /// Host paths in path order.
    pub files: Vec<PathBuf>,
    /// The walk stopped at the entry cap.
    pub truncated: bool,
}

/// Lists the regular files under `dir`, at most `max_entries` directory entries visited.
/// Links (to files or directories) are skipped, never followed; unreadable directories are
/// skipped. Sorted by path.
pub(super) fn walk(dir: &Path, max_entries: usize) -> Walk {
    let mut walk = Walk::default();
    let mut pending = vec![dir.to_path_buf()];
    let mut visited = 0usize;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            visited += 1;
            if visited > max_entries {
                walk.truncated = true;
                walk.files.sort();
                return walk;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                walk.files.push(entry.path());
            }
        }
    }
    walk.files.sort();
    walk
}
