//! File system access confined to one directory, without races: every operation starts
//! from a handle of the workspace root ([`Root`]) and resolves its path in the kernel with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`, then acts on the
//! last component relative to its parent's handle (`*at` calls, `O_NOFOLLOW`).
//!
//! Code in the sandbox may change the workspace while a file tool works in it (a later
//! `execute` of the conversation, another agentd process on the same data directory): a
//! directory swapped for a symbolic link to `/etc` between a check and an open is the
//! classic race. Here no check is separate from its use: the kernel refuses, in the same
//! call that opens the file, any path that climbs out of the root or passes through a link.
//! The caller ([`crate::workspace::Workspace::resolve_relative`]) follows the workspace's
//! own links as the sandbox sees them and hands this module paths that contain none; one
//! that gained a link since fails (`ELOOP`, "is a symbolic link") rather than being followed.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, ResolveFlags, Stat};

/// How every path below the root is resolved: never above it, never through a link.
fn resolve_flags() -> ResolveFlags {
    ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS
}

/// A handle of a directory that every operation stays below.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
}

impl Root {
    /// Opens the directory (a trusted host path: the workspace root agentd created).
    pub fn open(path: &Path) -> io::Result<Root> {
        let fd = rustix::fs::openat(
            CWD,
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Root { fd })
    }

    /// Opens `relative` (no `..`, no links on the way) with `flags`; the empty path is the
    /// root itself.
    pub fn open_beneath(&self, relative: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
        check_relative(relative)?;
        let path: &Path = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        Ok(rustix::fs::openat2(
            &self.fd,
            path,
            flags | OFlags::CLOEXEC,
            mode,
            resolve_flags(),
        )?)
    }

    /// The handle of `relative`'s parent directory and its last component.
    pub fn parent<'a>(&self, relative: &'a Path) -> io::Result<(OwnedFd, &'a OsStr)> {
        let name = relative.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::IsADirectory, "the workspace root itself")
        })?;
        let parent = relative.parent().unwrap_or(Path::new(""));
        let fd = self.open_beneath(parent, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())?;
        Ok((fd, name))
    }

    /// `lstat` of `relative` (a link is described, not followed).
    pub fn lstat(&self, relative: &Path) -> io::Result<Stat> {
        if relative.as_os_str().is_empty() {
            return Ok(rustix::fs::fstat(&self.fd)?);
        }
        let (dir, name) = self.parent(relative)?;
        Ok(rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)?)
    }

    /// The target of the link at `relative`.
    pub fn read_link(&self, relative: &Path) -> io::Result<OsString> {
        let (dir, name) = self.parent(relative)?;
        let target = rustix::fs::readlinkat(&dir, name, Vec::new())?;
        Ok(OsString::from_vec(target.into_bytes()))
    }

    /// Opens a regular file for reading. A FIFO does not block the open (`O_NONBLOCK`, which
    /// does nothing to regular files); anything but a regular file is refused.
    pub fn open_regular(&self, relative: &Path) -> Result<(File, u64), String> {
        let fd = self
            .open_beneath(
                relative,
                OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY,
                Mode::empty(),
            )
            .map_err(|err| describe_open(&err))?;
        let stat = rustix::fs::fstat(&fd).map_err(|err| describe_io(&err.into()))?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => {}
            FileType::Directory => return Err("is a directory".to_owned()),
            _ => return Err("is not a regular file".to_owned()),
        }
        Ok((File::from(fd), u64::try_from(stat.st_size).unwrap_or(0)))
    }

    /// Creates the directory `relative` and its missing parents (each one opened without
    /// following links before the next is made in it); returns its handle.
    pub fn create_dirs(&self, relative: &Path) -> io::Result<OwnedFd> {
        check_relative(relative)?;
        let mut dir = self.open_beneath(
            Path::new(""),
            OFlags::PATH | OFlags::DIRECTORY,
            Mode::empty(),
        )?;
        for component in relative.components() {
            let Component::Normal(name) = component else {
                continue;
            };
            match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o777)) {
                Ok(()) => {}
                Err(rustix::io::Errno::EXIST) => {}
                Err(err) => return Err(err.into()),
            }
            dir = rustix::fs::openat2(
                &dir,
                name,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
                resolve_flags(),
            )?;
        }
        Ok(dir)
    }
}

/// The kind of a stat.
pub fn kind(stat: &Stat) -> FileType {
    FileType::from_raw_mode(stat.st_mode)
}

/// A creating open of a fresh file `name` in `dir` (never an existing one, never a link).
pub fn create_new(dir: impl AsFd, name: &OsStr) -> io::Result<File> {
    let fd = rustix::fs::openat2(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o666),
        resolve_flags(),
    )?;
    Ok(File::from(fd))
}

/// Refuses `..`, absolute paths and prefixes: only plain names and `.` get through.
fn check_relative(relative: &Path) -> io::Result<()> {
    if relative
        .components()
        .all(|component| matches!(component, Component::Normal(_) | Component::CurDir))
    {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path leads outside the workspace",
        ))
    }
}

/// An open error as the model reads it: a link met on the way is named as such.
pub fn describe_open(err: &io::Error) -> String {
    if err.raw_os_error() == Some(libc::ELOOP) {
        "is a symbolic link".to_owned()
    } else if err.raw_os_error() == Some(libc::EXDEV) {
        "the path leads outside the workspace".to_owned()
    } else {
        describe_io(err)
    }
}

/// An I/O error as the model reads it (without any host path).
pub fn describe_io(err: &io::Error) -> String {
    match err.kind() {
        io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        io::ErrorKind::NotADirectory => "a path component is not a directory".to_owned(),
        io::ErrorKind::IsADirectory => "is a directory".to_owned(),
        _ => match err.raw_os_error() {
            // `io::Error`'s display may name the host path; keep only the OS message.
            Some(code) => io::Error::from_raw_os_error(code).to_string(),
            None => err.kind().to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_above_the_root_or_through_a_link_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("ws");
        std::fs::create_dir(&inside).unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::fs::write(inside.join("f"), "f").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), inside.join("abs")).unwrap();
        std::os::unix::fs::symlink("../secret", inside.join("rel")).unwrap();
        std::os::unix::fs::symlink("f", inside.join("same")).unwrap();
        let root = Root::open(&inside).unwrap();
        assert!(root.open_regular(Path::new("f")).is_ok());
        for path in ["abs", "rel", "same"] {
            assert_eq!(
                root.open_regular(Path::new(path)).unwrap_err(),
                "is a symbolic link",
                "{path}"
            );
        }
        assert!(root.open_regular(Path::new("../secret")).is_err());
        assert!(root.open_regular(Path::new("/etc/passwd")).is_err());
        assert_eq!(
            kind(&root.lstat(Path::new("abs")).unwrap()),
            FileType::Symlink
        );
        assert_eq!(root.read_link(Path::new("rel")).unwrap(), "../secret");
        let made = root.create_dirs(Path::new("a/b")).unwrap();
        create_new(&made, OsStr::new("x")).unwrap();
        assert!(inside.join("a/b/x").is_file());
        assert!(
            root.create_dirs(Path::new("same/x")).is_err(),
            "never through a link"
        );
    }
}
