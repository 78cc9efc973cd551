//! The data directory's permissions: it holds the store (responses, transcripts, tool
//! results) and the local search index, so the directory is 0700 and the database files 0600
//! — `agentd.db` and `index.sqlite` with their `-wal`, `-shm` and `-journal` files. The
//! database files are created empty with mode 0600 before SQLite opens them (SQLite gives a
//! database's WAL, shared-memory and journal files the database file's own mode), and looser
//! modes left by an older version or by hand are tightened at every start.

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

pub use store::DATABASE_FILE;

/// The local search index's file in the data directory.
pub const INDEX_FILE: &str = "index.sqlite";

/// Creates `dir` (0700) if needed, creates the database files in `files` (0600) if missing,
/// and tightens the modes of the directory and of every database file in it.
pub fn prepare(dir: &Path, files: &[&str]) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    tighten(dir, 0o700)?;
    for name in files {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(dir.join(name))?;
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let is_database = [DATABASE_FILE, INDEX_FILE]
            .iter()
            .any(|file| name.starts_with(file));
        if is_database && entry.file_type()?.is_file() {
            tighten(&entry.path(), 0o600)?;
        }
    }
    Ok(())
}

/// Sets `mode` on `path` when it grants anything `mode` does not.
fn tighten(path: &Path, mode: u32) -> io::Result<()> {
    let current = std::fs::metadata(path)?.permissions().mode() & 0o777;
    if current & !mode != 0 {
        tracing::info!(path = %path.display(), from = format!("{current:o}"), to = format!("{mode:o}"), "tightened the permissions of a data file");
        std::fs::set_permissions(path, Permissions::from_mode(mode))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn creates_tight_and_tightens_loose() {
        let dir = std::env::temp_dir().join(format!("agentd-datadir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let data = dir.join("data");
        prepare(&data, &[DATABASE_FILE]).unwrap();
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&data.join(DATABASE_FILE)), 0o600);
        assert!(
            !data.join(INDEX_FILE).exists(),
            "only what was asked for is created"
        );

        std::fs::set_permissions(&data, Permissions::from_mode(0o755)).unwrap();
        for name in [
            "agentd.db",
            "agentd.db-wal",
            "index.sqlite-shm",
            "notes.txt",
        ] {
            std::fs::write(data.join(name), b"").unwrap();
            std::fs::set_permissions(data.join(name), Permissions::from_mode(0o644)).unwrap();
        }
        prepare(&data, &[]).unwrap();
        assert_eq!(mode(&data), 0o700);
        for name in ["agentd.db", "agentd.db-wal", "index.sqlite-shm"] {
            assert_eq!(mode(&data.join(name)), 0o600, "{name}");
        }
        assert_eq!(
            mode(&data.join("notes.txt")),
            0o644,
            "other files are left alone"
        );
        std::fs::set_permissions(data.join("agentd.db"), Permissions::from_mode(0o400)).unwrap();
        prepare(&data, &[]).unwrap();
        assert_eq!(mode(&data.join("agentd.db")), 0o400, "tighter modes stay");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
