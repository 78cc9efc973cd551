//! A workspace's files as one compressed archive, and back: what the shared store keeps so a
//! continuation that lands on another replica finds the files (see [`crate::shared`]).
//!
//! [`pack`] walks the workspace from its root's handle without following any link (the same
//! confinement as the file tools, see [`crate::confine`]) and writes a gzip-compressed tar of
//! its directories, regular files and symbolic links (the links as links: they are the
//! workspace's own, and are followed again only inside the sandbox). Anything else (FIFOs,
//! sockets) is left out; permission bits are kept without setuid, setgid and sticky bits;
//! owners are not kept. The archive is capped: past `max_packed` bytes packing stops with
//! [`PackError::TooLarge`].
//!
//! [`unpack`] empties the workspace and extracts an archive into it, accepting only those
//! three kinds of entries, no path that leaves the workspace (the `tar` crate's `unpack_in`
//! refuses `..`, absolute paths and parents that resolve elsewhere) and no more than
//! `max_bytes` of file content. [`fingerprint`] digests the metadata of everything under the
//! root (a change of content changes a file's `ctime`, which no program can set), so an
//! unchanged workspace is not packed again.
//!
//! A workspace that is its own file system (quota mode `Filesystem`) has a `lost+found` at
//! its root: it belongs to the file system, not to the conversation, and is left alone.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use sha2::{Digest, Sha256};
use tar::{EntryType, Header};

use crate::confine::{self, Root};
use crate::quota;

/// The most entries (files, directories, links) one workspace archive holds.
pub const MAX_ENTRIES: usize = 200_000;

/// Why a workspace could not be packed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PackError {
    /// The archive would be larger than the limit (bytes).
    TooLarge { limit: u64 },
    /// The workspace holds more than [`MAX_ENTRIES`] entries.
    TooManyEntries,
    /// Reading the workspace failed.
    Io(String),
}

impl std::fmt::Display for PackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PackError::TooLarge { limit } => write!(
                f,
                "the workspace's files take more than {} MiB packed",
                limit >> 20
            ),
            PackError::TooManyEntries => write!(
                f,
                "the workspace holds more than {MAX_ENTRIES} files and directories"
            ),
            PackError::Io(message) => write!(f, "the workspace could not be read: {message}"),
        }
    }
}

/// The workspace under `dir` as a gzip-compressed tar of at most `max_packed` bytes.
pub fn pack(dir: &Path, max_packed: u64) -> Result<Vec<u8>, PackError> {
    let root = Root::open(dir).map_err(|err| PackError::Io(confine::describe_io(&err)))?;
    let skip_lost_found = quota::is_mount_point(dir);
    let sink = Capped {
        buf: Vec::new(),
        max: max_packed,
        over: false,
    };
    let mut builder = tar::Builder::new(GzEncoder::new(sink, Compression::default()));
    let walked = walk(&root, skip_lost_found, &mut |relative, stat| {
        append(&mut builder, &root, relative, stat)
    });
    let over = |builder: &tar::Builder<GzEncoder<Capped>>| builder.get_ref().get_ref().over;
    match walked {
        Ok(()) => {}
        Err(_) if over(&builder) => return Err(PackError::TooLarge { limit: max_packed }),
        Err(WalkError::TooMany) => return Err(PackError::TooManyEntries),
        Err(WalkError::Io(err)) => return Err(PackError::Io(confine::describe_io(&err))),
    }
    let finished = builder
        .into_inner()
        .and_then(|encoder| encoder.finish())
        .map_err(|err| (err.kind() == io::ErrorKind::StorageFull, err));
    match finished {
        Ok(sink) => Ok(sink.buf),
        Err((true, _)) => Err(PackError::TooLarge { limit: max_packed }),
        Err((false, err)) => Err(PackError::Io(confine::describe_io(&err))),
    }
}

/// Replaces everything in the workspace under `dir` with the archive's contents (at most
/// `max_bytes` of file content).
pub fn unpack(dir: &Path, archive: &[u8], max_bytes: u64) -> Result<(), String> {
    let keep_lost_found = quota::is_mount_point(dir);
    clear(dir, keep_lost_found)
        .map_err(|err| format!("cannot empty the workspace: {}", confine::describe_io(&err)))?;
    let broken = |err: io::Error| format!("the saved workspace cannot be read: {err}");
    let mut archive = tar::Archive::new(GzDecoder::new(archive));
    archive.set_preserve_mtime(true);
    archive.set_unpack_xattrs(false);
    archive.set_overwrite(true);
    let mut directories = Vec::new();
    let mut total = 0u64;
    for entry in archive.entries().map_err(broken)? {
        let mut entry = entry.map_err(broken)?;
        match entry.header().entry_type() {
            EntryType::Regular => {
                total = total.saturating_add(entry.size());
                if total > max_bytes {
                    return Err(format!(
                        "the saved workspace holds more than the workspace quota ({} MiB)",
                        max_bytes >> 20
                    ));
                }
            }
            // Last, so a directory without write permission still receives its entries.
            EntryType::Directory => {
                directories.push(entry);
                continue;
            }
            EntryType::Symlink => {}
            _ => continue,
        }
        if !entry.unpack_in(dir).map_err(broken)? {
            return Err("the saved workspace has a path outside the workspace".to_owned());
        }
    }
    for mut entry in directories.into_iter().rev() {
        if !entry.unpack_in(dir).map_err(broken)? {
            return Err("the saved workspace has a path outside the workspace".to_owned());
        }
    }
    Ok(())
}

/// A digest of the metadata of everything under `dir` (`None`: it could not be walked).
pub fn fingerprint(dir: &Path) -> Option<[u8; 32]> {
    let root = Root::open(dir).ok()?;
    let mut hasher = Sha256::new();
    walk(&root, quota::is_mount_point(dir), &mut |relative, stat| {
        hasher.update(relative.as_os_str().as_bytes());
        hasher.update([0]);
        // Each field in its own platform type.
        hasher.update(stat.st_mode.to_le_bytes());
        hasher.update(stat.st_size.to_le_bytes());
        hasher.update(stat.st_mtime.to_le_bytes());
        hasher.update(stat.st_mtime_nsec.to_le_bytes());
        hasher.update(stat.st_ctime.to_le_bytes());
        hasher.update(stat.st_ctime_nsec.to_le_bytes());
        hasher.update(stat.st_ino.to_le_bytes());
        Ok(())
    })
    .ok()?;
    Some(hasher.finalize().into())
}

/// The [`fingerprint`] of an empty workspace.
pub fn empty_fingerprint() -> [u8; 32] {
    Sha256::new().finalize().into()
}

/// Appends one walked entry to the archive.
fn append<W: Write>(
    builder: &mut tar::Builder<W>,
    root: &Root,
    relative: &Path,
    stat: &Stat,
) -> io::Result<()> {
    let mut header = Header::new_gnu();
    header.set_mode(stat.st_mode & 0o777);
    header.set_mtime(u64::try_from(stat.st_mtime).unwrap_or(0));
    match confine::kind(stat) {
        FileType::Directory => {
            header.set_entry_type(EntryType::Directory);
            header.set_size(0);
            builder.append_data(&mut header, relative, io::empty())
        }
        FileType::Symlink => {
            header.set_entry_type(EntryType::Symlink);
            header.set_size(0);
            let target = root.read_link(relative)?;
            builder.append_link(&mut header, relative, Path::new(&target))
        }
        FileType::RegularFile => {
            let (file, size) = root.open_regular(relative).map_err(io::Error::other)?;
            header.set_entry_type(EntryType::Regular);
            header.set_size(size);
            builder.append_data(
                &mut header,
                relative,
                Exact {
                    inner: file.take(size),
                    left: size,
                },
            )
        }
        _ => Ok(()),
    }
}

#[derive(Debug)]
enum WalkError {
    TooMany,
    Io(io::Error),
}

impl From<io::Error> for WalkError {
    fn from(err: io::Error) -> Self {
        WalkError::Io(err)
    }
}

/// Visits every entry under the root (directories before what they hold, names in byte
/// order), never following a link: each directory is opened from the root's handle without
/// passing through one. `lost+found` at the top is skipped when `skip_lost_found`.
fn walk(
    root: &Root,
    skip_lost_found: bool,
    visit: &mut dyn FnMut(&Path, &Stat) -> io::Result<()>,
) -> Result<(), WalkError> {
    let mut pending = vec![PathBuf::new()];
    let mut visited = 0usize;
    while let Some(dir_path) = pending.pop() {
        let fd = root.open_beneath(
            &dir_path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW,
            Mode::empty(),
        )?;
        let mut names: Vec<OsString> = Vec::new();
        for entry in rustix::fs::Dir::read_from(&fd).map_err(io::Error::from)? {
            let entry = entry.map_err(io::Error::from)?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            if skip_lost_found && dir_path.as_os_str().is_empty() && name == b"lost+found" {
                continue;
            }
            names.push(OsStr::from_bytes(name).to_owned());
        }
        names.sort();
        let mut below = Vec::new();
        for name in names {
            visited += 1;
            if visited > MAX_ENTRIES {
                return Err(WalkError::TooMany);
            }
            let stat = rustix::fs::statat(&fd, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
                .map_err(io::Error::from)?;
            let relative = dir_path.join(&name);
            visit(&relative, &stat)?;
            if confine::kind(&stat) == FileType::Directory {
                below.push(relative);
            }
        }
        // Popped in name order.
        pending.extend(below.into_iter().rev());
    }
    Ok(())
}

/// Empties `dir` (links removed, never followed), keeping a top-level `lost+found` when
/// asked to.
fn clear(dir: &Path, keep_lost_found: bool) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if keep_lost_found && entry.file_name() == "lost+found" {
            continue;
        }
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            if let Err(err) = std::fs::remove_dir_all(&path) {
                if err.kind() != io::ErrorKind::PermissionDenied {
                    return Err(err);
                }
                // Directories the sandbox made read-only: made writable again (by their
                // owner, this process), then removed.
                make_writable(&path)?;
                std::fs::remove_dir_all(&path)?;
            }
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// `u+rwx` on every directory under `dir` (links are not followed).
fn make_writable(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let meta = std::fs::symlink_metadata(&dir)?;
        if !meta.is_dir() {
            continue;
        }
        let mode = meta.permissions().mode() | 0o700;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode))?;
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    Ok(())
}

/// The archive's bytes in memory, refusing to grow past `max`.
struct Capped {
    buf: Vec<u8>,
    max: u64,
    over: bool,
}

impl Write for Capped {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let len = u64::try_from(self.buf.len().saturating_add(data.len())).unwrap_or(u64::MAX);
        if len > self.max {
            self.over = true;
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "the packed workspace is over its limit",
            ));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A reader of exactly `left` more bytes: one that ends early is an error (the archive's
/// header already promised the size).
struct Exact<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Exact<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Ok(0);
        }
        let read = self.inner.read(buf)?;
        if read == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "a file shrank while the workspace was packed",
            ));
        }
        self.left = self.left.saturating_sub(read as u64);
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::write(root.join("data.csv"), "a,b\n1,2\n").unwrap();
        std::fs::write(root.join("src/deep/big.bin"), vec![7u8; 300_000]).unwrap();
        std::fs::set_permissions(
            root.join("data.csv"),
            std::fs::Permissions::from_mode(0o4755),
        )
        .unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("outside")).unwrap();
        std::os::unix::fs::symlink("data.csv", root.join("inside")).unwrap();
        std::fs::create_dir(root.join("locked")).unwrap();
        std::fs::write(root.join("locked/kept.txt"), "kept").unwrap();
        std::fs::set_permissions(root.join("locked"), std::fs::Permissions::from_mode(0o555))
            .unwrap();
        dir
    }

    #[test]
    fn a_workspace_round_trips_with_links_kept_as_links() {
        let source = tree();
        let packed = pack(source.path(), 10 << 20).unwrap();
        assert!(packed.len() < 20_000, "compressed: {}", packed.len());
        let target = tempfile::tempdir().unwrap();
        std::fs::write(target.path().join("stale.txt"), "from before").unwrap();
        unpack(target.path(), &packed, 1 << 30).unwrap();
        let root = target.path();
        assert!(!root.join("stale.txt").exists(), "what was there is gone");
        assert_eq!(
            std::fs::read_to_string(root.join("data.csv")).unwrap(),
            "a,b\n1,2\n"
        );
        assert_eq!(
            std::fs::read(root.join("src/deep/big.bin")).unwrap(),
            vec![7u8; 300_000]
        );
        let mode = std::fs::metadata(root.join("data.csv"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o755, "no setuid bit comes back");
        assert_eq!(
            std::fs::read_link(root.join("outside")).unwrap(),
            Path::new("/etc/passwd")
        );
        assert_eq!(
            std::fs::read_link(root.join("inside")).unwrap(),
            Path::new("data.csv")
        );
        assert_eq!(
            std::fs::read_to_string(root.join("locked/kept.txt")).unwrap(),
            "kept"
        );
        // Unpacking again over a tree with a read-only directory works too.
        unpack(target.path(), &packed, 1 << 30).unwrap();
        assert_eq!(fingerprint(source.path()), fingerprint(source.path()));
    }

    #[test]
    fn the_size_limits_are_errors_that_say_so() {
        let source = tree();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let incompressible: Vec<u8> = (0..200_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.to_le_bytes()[3]
            })
            .collect();
        std::fs::write(source.path().join("noise.bin"), incompressible).unwrap();
        let err = pack(source.path(), 1 << 16).unwrap_err();
        assert_eq!(err, PackError::TooLarge { limit: 1 << 16 });
        let packed = pack(source.path(), 10 << 20).unwrap();
        let target = tempfile::tempdir().unwrap();
        let err = unpack(target.path(), &packed, 100_000).unwrap_err();
        assert!(err.contains("quota"), "{err}");
    }

    #[test]
    fn an_entry_leaving_the_workspace_is_refused() {
        let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::fast()));
        let mut header = Header::new_gnu();
        header.set_entry_type(EntryType::Symlink);
        header.set_size(0);
        header.set_mode(0o777);
        builder.append_link(&mut header, "escape", "/tmp").unwrap();
        let mut header = Header::new_gnu();
        header.set_entry_type(EntryType::Regular);
        header.set_size(4);
        header.set_mode(0o644);
        builder
            .append_data(&mut header, "escape/planted", &b"evil"[..])
            .unwrap();
        let archive = builder.into_inner().unwrap().finish().unwrap();
        let target = tempfile::tempdir().unwrap();
        assert!(unpack(target.path(), &archive, 1 << 20).is_err());
        assert!(!Path::new("/tmp/planted").exists());
    }

    #[test]
    fn the_fingerprint_changes_with_any_content() {
        let source = tree();
        let before = fingerprint(source.path()).unwrap();
        assert_eq!(fingerprint(source.path()), Some(before));
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(source.path().join("src/deep/big.bin"), vec![8u8; 300_000]).unwrap();
        assert_ne!(fingerprint(source.path()), Some(before));
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(fingerprint(empty.path()), Some(empty_fingerprint()));
    }
}
