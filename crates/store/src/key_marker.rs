//! Open mode's "is there any API key?" answered without a database read while nothing can have
//! added a key.
//!
//! Open mode asks the store before every request, afresh: a key created by another process
//! sharing the file (`agentd keys create`, another replica) must end open mode for the very
//! next request. Even inline (`sqlite_reader.rs`) that read is a transaction of its own: four
//! `fcntl` calls on the WAL index's locks, two `pread`s (SQLite drops the connection's page
//! cache whenever the WAL changed, which it does at every commit) and ~14 k instructions, on
//! every request.
//!
//! A file-backed store therefore keeps a marker file beside its database (`agentd.db-keys`):
//! every key written through this crate replaces it (a new file renamed over it: a new inode
//! and new times) after the key's commit. [`KeyMarker::look`] takes the marker's `stat` before
//! a read; a read that found no key records that stamp; while the stamp is unchanged and the
//! read is younger than [`RECHECK`], no key can have been written through this crate since
//! (its commit came before the marker changed, and the marker was seen unchanged after the
//! read), and the answer is still "none" — one `statx` instead of a transaction.
//!
//! A key written any other way (an older agentd, SQL by hand) does not touch the marker: it is
//! seen at the first read after [`RECHECK`]. A marker that cannot be written is logged, with
//! the same consequence; one that cannot be read (an error other than its absence) makes
//! every check read the database, as before. Once a key exists nothing here is asked again
//! (the server remembers it), and revoking keys never needs the marker: only "no key" is
//! remembered.

use std::fs::{self, Metadata, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a read that found no key answers for an unchanged marker: the longest a key
/// written without the marker (an older agentd, SQL by hand) goes unseen.
pub(crate) const RECHECK: Duration = Duration::from_millis(100);

/// The marker of a store's keys (see the module docs).
#[derive(Debug)]
pub(crate) struct KeyMarker {
    path: PathBuf,
    /// [`RECHECK`] (tests set others).
    recheck: Duration,
    /// The marker's stamp before the last read that found no key, and when that read began.
    no_key: Mutex<Option<(Stamp, Instant)>>,
}

/// The marker file as `stat` saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stamp {
    Absent,
    Present {
        dev: u64,
        ino: u64,
        len: u64,
        mtime: (i64, i64),
        ctime: (i64, i64),
    },
}

/// The marker seen before a read ([`KeyMarker::look`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Look {
    /// `None` when the marker could not be read (nothing is then known without a read).
    stamp: Option<Stamp>,
    at: Instant,
    no_key_known: bool,
}

impl Look {
    /// Whether no key can have been written since a read that found none: the check's answer
    /// is "none" without a read.
    pub(crate) fn no_key_known(&self) -> bool {
        self.no_key_known
    }
}

impl KeyMarker {
    /// The marker of the database file `database` (`<database>-keys`).
    pub(crate) fn beside(database: &Path) -> KeyMarker {
        let mut name = database.as_os_str().to_owned();
        name.push("-keys");
        KeyMarker {
            path: PathBuf::from(name),
            recheck: RECHECK,
            no_key: Mutex::new(None),
        }
    }

    /// The same marker with answers good for `recheck` instead, nothing known yet (tests).
    #[cfg(test)]
    pub(crate) fn with_recheck(&self, recheck: Duration) -> KeyMarker {
        KeyMarker {
            path: self.path.clone(),
            recheck,
            no_key: Mutex::new(None),
        }
    }

    /// The marker now, taken before a read of the keys.
    pub(crate) fn look(&self) -> Look {
        let at = Instant::now();
        let stamp = match fs::metadata(&self.path) {
            Ok(metadata) => Some(Stamp::of(&metadata)),
            Err(e) if e.kind() == ErrorKind::NotFound => Some(Stamp::Absent),
            Err(_) => None,
        };
        let no_key = *self.no_key.lock().unwrap_or_else(PoisonError::into_inner);
        let no_key_known = match (stamp, no_key) {
            (Some(now), Some((seen, read))) => {
                now == seen && at.saturating_duration_since(read) < self.recheck
            }
            _ => false,
        };
        Look {
            stamp,
            at,
            no_key_known,
        }
    }

    /// Records that a read begun after `look` found no key.
    pub(crate) fn found_none(&self, look: Look) {
        if let Some(stamp) = look.stamp {
            *self.no_key.lock().unwrap_or_else(PoisonError::into_inner) = Some((stamp, look.at));
        }
    }

    /// Replaces the marker after a key was committed, so that every process checking this
    /// store's keys reads them again. A failure is logged (the key stands; a server in open
    /// mode sees it within [`RECHECK`]).
    pub(crate) fn mark(&self) {
        if let Err(e) = self.replace() {
            tracing::warn!(
                marker = %self.path.display(),
                "could not replace the API keys' marker file ({e}); a server in open mode on \
                 this store ends it within {} ms instead of at its next request",
                self.recheck.as_millis()
            );
        }
    }

    fn replace(&self) -> std::io::Result<()> {
        let mut name = self.path.as_os_str().to_owned();
        name.push(format!(".{}.tmp", uuid::Uuid::new_v4().simple()));
        let temporary = PathBuf::from(name);
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)
            .and_then(|mut file| {
                file.write_all(b"agentd: replaced whenever an API key is written (open mode)\n")
            })
            .and_then(|()| fs::rename(&temporary, &self.path));
        if written.is_err() {
            let _ = fs::remove_file(&temporary);
        }
        written
    }
}

impl Stamp {
    fn of(metadata: &Metadata) -> Stamp {
        Stamp::Present {
            dev: metadata.dev(),
            ino: metadata.ino(),
            len: metadata.len(),
            mtime: (metadata.mtime(), metadata.mtime_nsec()),
            ctime: (metadata.ctime(), metadata.ctime_nsec()),
        }
    }
}

#[cfg(test)]
mod tests {
    use engine::admin_store::{KeyInfo, NewKey, ProjectStore, Role};
    use engine::store::{KeyRecord, KeyStore};
    use rusqlite::Connection;

    use super::*;
    use crate::SqliteStore;
    use crate::sqlite::DATABASE_FILE;

    /// A marker whose answers hold for an hour: no test depends on how fast it runs.
    fn marker_in(dir: &Path) -> KeyMarker {
        KeyMarker::beside(&dir.join("store.db")).with_recheck(HOUR)
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn a_read_that_found_no_key_answers_while_the_marker_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let marker = marker_in(dir.path());
        // Nothing read yet: nothing known, marker absent or not.
        let look = marker.look();
        assert!(!look.no_key_known());
        marker.found_none(look);
        assert!(marker.look().no_key_known(), "absent, and still absent");
        // A key written: the marker appears, and the next check reads.
        marker.mark();
        assert!(dir.path().join("store.db-keys").exists());
        let look = marker.look();
        assert!(!look.no_key_known());
        marker.found_none(look);
        assert!(marker.look().no_key_known());
        // Replaced again (another key, as by another process): read again.
        marker.mark();
        assert!(!marker.look().no_key_known());
        // Removed by hand: read again too.
        let look = marker.look();
        marker.found_none(look);
        fs::remove_file(dir.path().join("store.db-keys")).unwrap();
        assert!(!marker.look().no_key_known());
    }

    #[test]
    fn a_read_answers_for_recheck_at_most() {
        let dir = tempfile::tempdir().unwrap();
        let marker = KeyMarker::beside(&dir.path().join("store.db"));
        assert_eq!(marker.recheck, RECHECK);
        marker.mark();
        let look = marker.look();
        marker.found_none(look);
        std::thread::sleep(RECHECK + Duration::from_millis(20));
        assert!(
            !marker.look().no_key_known(),
            "older than RECHECK: read again"
        );
    }

    #[test]
    fn each_replacement_leaves_one_private_file_and_no_temporary() {
        use std::os::unix::fs::PermissionsExt;

        let dir = tempfile::tempdir().unwrap();
        let marker = marker_in(dir.path());
        for _ in 0..3 {
            marker.mark();
        }
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["store.db-keys"]);
        let mode = fs::metadata(dir.path().join("store.db-keys"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_marker_that_cannot_be_read_or_written_leaves_every_check_to_a_read() {
        let dir = tempfile::tempdir().unwrap();
        // The "database" is under a plain file: stat fails with an error other than absence.
        let file = dir.path().join("plain");
        fs::write(&file, b"x").unwrap();
        let marker = KeyMarker::beside(&file.join("store.db"));
        let look = marker.look();
        marker.found_none(look);
        assert!(!marker.look().no_key_known());
        // Writing it fails too: logged, nothing left behind, no panic.
        marker.mark();
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// A store on `dir` whose marker's answers hold for an hour.
    async fn store_with_project(dir: &Path) -> (SqliteStore, String) {
        let store = SqliteStore::open(dir).await.unwrap().with_key_recheck(HOUR);
        let project = store.ensure_project("default").await.unwrap();
        (store, project)
    }

    /// Two handles on one store, as two processes would be, and checks on the first that
    /// found no key (its marker's answer now holds for an hour).
    async fn two_handles_no_key_yet(dir: &Path) -> (SqliteStore, SqliteStore, String) {
        let (store, project) = store_with_project(dir).await;
        let other = SqliteStore::open(dir).await.unwrap();
        for _ in 0..3 {
            assert!(!store.has_keys().await.unwrap());
        }
        (store, other, project)
    }

    /// A key as `agentd keys create` writes it.
    fn cli_key(id: &str, project_id: String) -> KeyRecord {
        KeyRecord {
            id: id.to_owned(),
            project_id,
            key_hash: format!("hash-{id}"),
            created_at: 1,
        }
    }

    /// A key written by SQL by hand, not through this crate: no marker.
    fn key_by_hand(dir: &Path, project: &str) {
        let connection = Connection::open(dir.join(DATABASE_FILE)).unwrap();
        connection
            .execute(
                "INSERT INTO api_keys (id, project_id, key_hash, created_at) \
                 VALUES ('key_hand', ?1, 'hash-hand', 1)",
                [project],
            )
            .unwrap();
    }

    #[tokio::test]
    async fn open_modes_check_skips_the_read_while_no_key_was_written_through_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let (store, project) = store_with_project(dir.path()).await;
        assert!(!store.has_keys().await.unwrap());
        // A key the marker does not know of is not seen by the next check: that check read
        // nothing. It is seen once the last read is older than the recheck (zero here).
        key_by_hand(dir.path(), &project);
        assert!(!store.has_keys().await.unwrap());
        assert!(!store.has_keys().await.unwrap());
        let store = store.with_key_recheck(Duration::ZERO);
        assert!(store.has_keys().await.unwrap());
    }

    #[tokio::test]
    async fn a_key_created_through_the_admin_port_by_another_handle_is_seen_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let (store, other, project) = two_handles_no_key_yet(dir.path()).await;
        other
            .insert_key_info(&NewKey {
                info: KeyInfo {
                    id: "key_admin".to_owned(),
                    project_id: project,
                    name: None,
                    prefix: None,
                    role: Role::Member,
                    created_at: 1,
                    last_used_at: None,
                },
                key_hash: "hash-admin".to_owned(),
            })
            .await
            .unwrap();
        assert!(store.has_keys().await.unwrap());
    }

    #[tokio::test]
    async fn a_key_created_through_the_key_port_by_another_handle_is_seen_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let (store, other, project_id) = two_handles_no_key_yet(dir.path()).await;
        other
            .insert_key(&cli_key("key_cli", project_id))
            .await
            .unwrap();
        assert!(store.has_keys().await.unwrap());
    }

    /// Checks running all along on other tasks while another handle creates a key: every check
    /// begun after the creation returned answers "a key exists", whatever stale "none" a check
    /// begun before it recorded meanwhile.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn checks_racing_a_key_creation_all_see_it_once_it_returned() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};

        let dir = tempfile::tempdir().unwrap();
        let (store, other, project_id) = two_handles_no_key_yet(dir.path()).await;
        let created = Arc::new(AtomicBool::new(false));
        let mut checkers = Vec::new();
        for _ in 0..6 {
            let store = store.clone();
            let created = Arc::clone(&created);
            checkers.push(tokio::spawn(async move {
                let mut after = 0;
                while after < 50 {
                    let returned = created.load(Ordering::SeqCst);
                    let found = store.has_keys().await.unwrap();
                    if returned {
                        assert!(found, "a check begun after the key was created said none");
                        after += 1;
                    }
                    tokio::task::yield_now().await;
                }
            }));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        other
            .insert_key(&cli_key("key_race", project_id))
            .await
            .unwrap();
        created.store(true, Ordering::SeqCst);
        for checker in checkers {
            checker.await.unwrap();
        }
    }
}
