//! WAL checkpoints off the commit path (file-backed SQLite only).
//!
//! By default SQLite checkpoints from inside a commit: the transaction that takes the WAL past
//! 1000 pages copies the whole WAL into the database file and `fsync`s both, on the writer
//! connection, while every other write waits behind it. With agentd's event log that happened
//! every hundred or so requests and cost that request (and those queued behind it) ~10 ms: the
//! p99 stall at C = 1 (docs/benchmarks.md).
//!
//! Here the store's connections open with `wal_autocheckpoint = 0` (no connection checkpoints
//! on commit), and a task of its own runs `PRAGMA wal_checkpoint(PASSIVE)` every
//! [`Settings::every`], on a connection and a thread of its own in Linux's idle scheduling
//! class (`checkpoint_thread.rs`: a request's thread takes the core from it at once; the
//! checkpoints made with the writer held, and those that fall behind, run on a second thread
//! in the normal class). A passive
//! checkpoint never takes the write lock: commits go on while it copies and `fsync`s. Once the
//! WAL is fully copied, the next commit starts it again from its beginning, writing over the
//! frames of the last cycle.
//!
//! The WAL file is not made smaller when it starts over, unless it went beyond the bound below:
//! `journal_size_limit` is that bound's size. With a limit below what one cycle writes (it was
//! 64 MiB, the catch-up size, while a cycle runs to the catch-up size plus a tick's writes,
//! ~94 MB at 64 requests in flight), every start over truncated the file and the next cycle
//! grew it again: each frame past the limit went into a block the file system had to allocate
//! and zero first (6% of agentd's CPU at C = 64, docs/benchmarks.md, "Issue 18, seventh pass").
//! Now a cycle writes over blocks the file has, in the page cache.
//!
//! Starting the WAL over: a commit starts the WAL from its beginning only when, as it begins,
//! every frame has been copied. Under a steady stream of commits (one every few milliseconds
//! at one request in flight) that is almost never so: a passive checkpoint takes milliseconds
//! (two `fsync`s), and the commits made meanwhile are left over. The WAL then only grew, and a
//! `RESTART` checkpoint every second or so stopped the writer for 20–40 ms, with SQLite's busy
//! handler sleeping on both sides (the p99 at C = 1, docs/benchmarks.md). So once the WAL
//! holds [`Settings::catch_up_pages`], the task copies what is left with the group writer held
//! at its gate (`group_commit.rs`, between two batches): only the commits of one tick remain,
//! and nothing lands while they are copied, so the next commit starts the WAL over. That is
//! one short pause of the writer every [`Settings::catch_up_pages`] of WAL.
//!
//! What the writer waits for there is SQLite's: a checkpoint `fsync`s the WAL before it copies
//! frames into the database file, and the database file after, once it has copied every frame
//! (only then may the WAL start over). A passive checkpoint that commits keep overtaking never
//! gets to that second `fsync`: the database file's pages copied by the whole cycle's
//! checkpoints stay unsynced until the catch-up's, which then held the writer for all of them
//! (6–10 ms once per cycle, the tail of every C = 1 latency, docs/benchmarks.md, "Issue 18,
//! tenth pass"). So before it takes the gate the task `fsync`s the database file and then the
//! WAL itself ([`Files::sync`]): what is left to sync with the writer held is the few pages of
//! the last milliseconds. An extra `fsync` is always safe: SQLite never relies on a page *not*
//! having reached the disk.
//!
//! The bound: readers pin the WAL frames of their snapshot, so a reader that stays may keep
//! even that catch-up from getting to the end. When the WAL still holds more than
//! [`Settings::max_wal_pages`] after it, the task runs `wal_checkpoint(RESTART)`, still with
//! the writer held, which waits (up to the busy timeout) for those readers: a stall, but only
//! when the WAL would otherwise grow without bound.
//!
//! Durability does not change: a commit is in the WAL (written, in the OS's page cache) when it
//! returns, whoever checkpoints it later.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::checkpoint_thread::{CheckpointThreads, Class, Mode, Outcome};
use crate::cpu_idle::IdleMeter;
use crate::group_commit::Gate;

/// How often the checkpointer runs and how large the WAL may get.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    /// Between two passive checkpoints.
    pub(crate) every: Duration,
    /// WAL pages from which the task catches up with the writer held, so the WAL starts over.
    pub(crate) catch_up_pages: i64,
    /// WAL pages left after catching up beyond which a RESTART checkpoint runs.
    pub(crate) max_wal_pages: i64,
    /// Bytes the WAL file is truncated back to when it restarts from its beginning
    /// (`journal_size_limit`).
    pub(crate) journal_size_limit: i64,
}

/// The store's settings: four checkpoints a second; the WAL started over from 16,384 pages (64
/// MiB with 4 KiB pages), a RESTART beyond 32,768 (128 MiB); the file truncated back to 128 MiB
/// only (a WAL that went beyond the RESTART bound), never below what a cycle writes again.
pub(crate) const DEFAULT: Settings = Settings {
    every: Duration::from_millis(250),
    catch_up_pages: 16_384,
    max_wal_pages: 32_768,
    journal_size_limit: 32_768 * 4096,
};

/// Keeps the checkpointer running; it stops (after one last passive checkpoint) when the last
/// clone of this handle is dropped.
#[derive(Debug, Clone)]
pub(crate) struct Checkpointer {
    _alive: mpsc::Sender<()>,
}

impl Checkpointer {
    /// Starts the task on the current runtime, checkpointing through `threads` (to the
    /// database `files`); `gate` is the group writer's (held to catch up).
    pub(crate) fn spawn(
        threads: CheckpointThreads,
        files: Files,
        settings: Settings,
        gate: Gate,
    ) -> Checkpointer {
        let (alive, stopped) = mpsc::channel(1);
        tokio::spawn(run(threads, files, settings, gate, stopped));
        Checkpointer { _alive: alive }
    }
}

/// The database file and its WAL, which the catch-up `fsync`s before it holds the writer.
#[derive(Debug, Clone)]
pub(crate) struct Files {
    database: PathBuf,
    wal: PathBuf,
    /// How many times [`Files::sync`] ran (tests).
    #[cfg(test)]
    synced: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Files {
    /// The files of the database at `database` (its WAL is `{database}-wal`).
    pub(crate) fn new(database: PathBuf) -> Files {
        Files {
            wal: crate::wal_write_out::wal_path(&database),
            database,
            #[cfg(test)]
            synced: Default::default(),
        }
    }

    /// `fsync`s the database file, then the WAL (on a blocking thread): what the checkpoints
    /// copied so far, and what the commits wrote so far, are on disk. A failure is logged and
    /// otherwise ignored: the catch-up's own checkpoint syncs both all the same, only longer.
    pub(crate) async fn sync(&self) {
        let (database, wal) = (self.database.clone(), self.wal.clone());
        let synced = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            std::fs::File::open(database)?.sync_data()?;
            std::fs::File::open(wal)?.sync_data()
        })
        .await;
        match synced {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::warn!(error = %err, "syncing the SQLite files failed"),
            Err(err) => tracing::warn!(error = %err, "syncing the SQLite files failed"),
        }
        #[cfg(test)]
        self.synced
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

async fn run(
    threads: CheckpointThreads,
    files: Files,
    settings: Settings,
    gate: Gate,
    mut stopped: mpsc::Receiver<()>,
) {
    // The first checkpoint one interval after the start, not at once: the idle share then
    // covers that interval, and a test's store with an hour's interval has no checkpointer
    // of its own running beside the checkpoints the test makes.
    let start = tokio::time::Instant::now() + settings.every;
    let mut tick = tokio::time::interval_at(start, settings.every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut idle = IdleMeter::new();
    idle.idle_share();
    let mut last = None;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            // `None`: every handle is gone.
            _ = stopped.recv() => break,
        }
        let class = class_for(idle.idle_share(), last.as_ref(), settings);
        match threads.checkpoint(Mode::Passive, class).await {
            Ok(outcome) => {
                last = Some(outcome);
                if outcome.wal_pages >= settings.catch_up_pages {
                    catch_up(&threads, &files, &gate, settings).await;
                }
            }
            Err(err) => tracing::warn!(error = %err, "SQLite WAL checkpoint failed"),
        }
    }
    let _ = threads.checkpoint(Mode::Passive, Class::Foreground).await;
}

/// The least share of the machine's CPU time that was idle since the last tick for the next
/// periodic checkpoint to run in the idle scheduling class.
const IDLE_ENOUGH: f64 = 0.2;

/// The class of a periodic checkpoint, given the share of CPU time that went idle since the
/// last tick and what the last checkpoint reported. A checkpoint in the idle class runs only
/// on a core no other thread wants: while the machine had idle time lately it costs the
/// requests nothing and finishes; under a load that takes every core it would wait for as long
/// as the load lasts, and the WAL would grow meanwhile. So: the idle class only with at least
/// [`IDLE_ENOUGH`] of the CPU time idle, and not while the checkpoints fall behind (the last
/// one left more than a quarter of the catch-up's bound uncopied); the normal class otherwise,
/// and where the idle time cannot be known.
pub(crate) fn class_for(
    idle_share: Option<f64>,
    last: Option<&Outcome>,
    settings: Settings,
) -> Class {
    let behind = last.is_some_and(|o| o.wal_pages - o.checkpointed > settings.catch_up_pages / 4);
    match idle_share {
        Some(share) if share >= IDLE_ENOUGH && !behind => Class::Background,
        _ => Class::Foreground,
    }
}

/// Syncs the files (without the writer held), then copies what the last passive checkpoint
/// left (the commits made while it ran) with the group writer held between two batches, so
/// that the next commit starts the WAL over; if readers still keep it from the end and the WAL
/// is beyond [`Settings::max_wal_pages`], waits for them (RESTART). Returns what the last
/// checkpoint reported.
pub(crate) async fn catch_up(
    threads: &CheckpointThreads,
    files: &Files,
    gate: &Gate,
    settings: Settings,
) -> Option<Outcome> {
    files.sync().await;
    let _turn = gate.lock().await;
    // With the writer held: on the thread of the normal class.
    match threads.checkpoint(Mode::Passive, Class::Foreground).await {
        Ok(outcome)
            if outcome.checkpointed < outcome.wal_pages
                && outcome.wal_pages > settings.max_wal_pages =>
        {
            tracing::warn!(
                wal_pages = outcome.wal_pages,
                "readers keep the SQLite WAL from being checkpointed; waiting for them"
            );
            match threads.checkpoint(Mode::Restart, Class::Foreground).await {
                Ok(outcome) => Some(outcome),
                Err(err) => {
                    tracing::warn!(error = %err, "SQLite WAL checkpoint (restart) failed");
                    None
                }
            }
        }
        Ok(outcome) => Some(outcome),
        Err(err) => {
            tracing::warn!(error = %err, "SQLite WAL checkpoint failed");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use engine::store::{EventRecord, EventStore};
    use sqlx::sqlite::SqliteConnectOptions;

    use super::*;
    use crate::SqliteStore;

    const MIB: u64 = 1024 * 1024;

    /// A store in a fresh directory with the given checkpoint settings.
    async fn store(settings: Settings) -> (SqliteStore, PathBuf) {
        let dir = std::env::temp_dir().join(format!(
            "agentd-checkpoint-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let options = SqliteConnectOptions::new()
            .filename(dir.join(crate::DATABASE_FILE))
            .create_if_missing(true);
        let store = SqliteStore::open_file_with(options, settings)
            .await
            .unwrap();
        (store, dir)
    }

    fn wal_bytes(dir: &Path) -> u64 {
        std::fs::metadata(dir.join(format!("{}-wal", crate::DATABASE_FILE)))
            .map(|m| m.len())
            .unwrap_or(0)
    }

    /// An event line of about 1 KiB that does not compress (the store packs event chunks):
    /// 1,000 pseudo-random letters.
    fn noise(seed: u64) -> String {
        let pad =
            crate::event_pack::random_letters(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1, 1000);
        format!("{{\"type\":\"x\",\"pad\":\"{pad}\"}}")
    }

    /// Stores `batches` event batches of 50 events of 1 KiB each (about 50 KiB of rows each)
    /// through the group writer; returns the largest WAL file seen after a write.
    /// Appends `per_batch` events of ~1 KiB per batch, one transaction each; the WAL file's
    /// largest size seen after a commit.
    async fn write_events(
        store: &SqliteStore,
        dir: &Path,
        batches: std::ops::Range<u64>,
        per_batch: u64,
    ) -> u64 {
        let mut largest = 0;
        for batch in batches {
            let events: Vec<EventRecord> = (0..per_batch)
                .map(|n| EventRecord {
                    sequence_number: n,
                    data: noise(batch * per_batch + n).into(),
                })
                .collect();
            store
                .append_events(&format!("resp_{batch}"), &events)
                .await
                .unwrap();
            largest = largest.max(wal_bytes(dir));
        }
        largest
    }

    #[tokio::test]
    async fn a_commit_never_checkpoints() {
        // The checkpointer is made to wait an hour: whatever the writes put in the WAL stays
        // there. SQLite's own default would have checkpointed inside the commit that took the
        // WAL past 1000 pages (4 MiB) and started it over.
        let (store, dir) = store(Settings {
            every: Duration::from_secs(3600),
            catch_up_pages: 1_000_000,
            max_wal_pages: 1_000_000,
            journal_size_limit: MIB as i64,
        })
        .await;
        let largest = write_events(&store, &dir, 0..160, 50).await;
        assert!(
            largest > 6 * MIB,
            "8 MiB of events all stay in the WAL until the checkpointer runs: {largest} bytes"
        );
        store.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn database_bytes(dir: &Path) -> u64 {
        std::fs::metadata(dir.join(crate::DATABASE_FILE))
            .map(|m| m.len())
            .unwrap_or(0)
    }

    /// Waits (bounded) until the database file holds at least `bytes`: the checkpointer has
    /// copied the WAL into it.
    async fn checkpointed(dir: &Path, bytes: u64) {
        for _ in 0..600 {
            if database_bytes(dir) >= bytes {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "the checkpointer never copied the WAL into the database file: {} bytes",
            database_bytes(dir)
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_starts_over_while_commits_never_pause() {
        // No RESTART: only catching up with the writer held starts the WAL over. Commits follow
        // each other without a pause, so a write transaction is nearly always open when a
        // passive checkpoint ends: the WAL does not start over, and without catching up it grew
        // through 3,000 of these writes (77 MB) without starting over once. How many start-overs
        // a given number of writes sees depends on how soon the checkpointer's thread gets a
        // core while sixteen writers keep both busy (it was 2 in 3,000 writes one time in five
        // on a loaded machine), so the writes go on until the WAL has started over three times,
        // up to a bound of 12,000.
        let (store, dir) = store(Settings {
            every: Duration::from_millis(10),
            catch_up_pages: 256,
            max_wal_pages: 1_000_000,
            journal_size_limit: MIB as i64 / 4,
        })
        .await;
        let first = first_cycle(&store, &dir).await;
        // Sixteen writers, each sending its next write as soon as the last one is stored: the
        // group writer always has a batch waiting. Writes of 10 KiB.
        let sent = Arc::new(AtomicU64::new(0));
        let enough = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = (0..16u64)
            .map(|writer| {
                let store = store.clone();
                let sent = Arc::clone(&sent);
                let enough = Arc::clone(&enough);
                tokio::spawn(async move {
                    loop {
                        let write = sent.fetch_add(1, Ordering::Relaxed);
                        if write >= 12_000 || enough.load(Ordering::Relaxed) {
                            break;
                        }
                        let events: Vec<EventRecord> = (0..10)
                            .map(|n| EventRecord {
                                sequence_number: n,
                                data: noise(write * 10 + n).into(),
                            })
                            .collect();
                        let id = format!("resp_{writer}_{}", uuid::Uuid::new_v4().simple());
                        store.append_events(&id, &events).await.unwrap();
                    }
                })
            })
            .collect();
        let mut largest = 0;
        while writers.iter().any(|w| !w.is_finished()) {
            largest = largest.max(wal_bytes(&dir));
            if wal_restarts(&dir, first) >= 3 {
                enough.store(true, Ordering::Relaxed);
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for writer in writers {
            writer.await.unwrap();
        }
        let started_over = wal_restarts(&dir, first);
        let written = sent.load(Ordering::Relaxed).min(12_000);
        assert!(
            started_over >= 3,
            "commits without a pause: in {written} writes the WAL started over {started_over} times, grew to {largest} bytes"
        );
        store.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_checkpointer_copies_the_wal_and_keeps_it_from_growing() {
        let (store, dir) = store(Settings {
            every: Duration::from_millis(10),
            catch_up_pages: 1_000_000,
            max_wal_pages: 1_000_000,
            journal_size_limit: MIB as i64,
        })
        .await;
        // 8 MiB of events, then small writes: once the checkpointer has copied the WAL into
        // the database file, the next write starts the WAL over and truncates its file to the
        // journal size limit (1 MiB). Without the checkpointer it would keep growing. Three
        // transactions of 2.7 MiB each: the WAL holds more than 2 MiB after each commit
        // whatever the checkpointer did meanwhile (with 160 small ones it could keep up, and
        // the WAL never grew: this test failed about one run in ten).
        let largest = write_events(&store, &dir, 0..3, 2_700).await;
        assert!(largest > 2 * MIB, "{largest}");
        // The events' lines alone are 7.9 MiB (one chunk row of 2,700 per batch).
        checkpointed(&dir, 7 * MIB).await;
        let mut small = 0;
        while wal_bytes(&dir) > MIB {
            small += 1;
            assert!(
                small < 600,
                "the WAL never started over: {} bytes",
                wal_bytes(&dir)
            );
            let event = EventRecord {
                sequence_number: 0,
                data: "{}".into(),
            };
            store
                .append_events(&format!("resp_small_{small}"), &[event])
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut connection = store.pool().acquire().await.unwrap();
        let count: u64 =
            sqlx::query_scalar("SELECT sum(last_sequence - first_sequence + 1) FROM event_chunks")
                .fetch_one(&mut *connection)
                .await
                .unwrap();
        assert_eq!(count, 3 * 2_700 + small, "every event is stored");
        drop(connection);
        store.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_catch_up_syncs_the_files_before_it_holds_the_writer() {
        // What the cycle's passive checkpoints copied into the database file and what the
        // commits wrote into the WAL is synced while the writer still commits: with the writer
        // held, only the catch-up's own few pages are left to sync.
        let settings = Settings {
            every: Duration::from_secs(3600),
            catch_up_pages: 1_000_000,
            max_wal_pages: 1_000_000,
            journal_size_limit: MIB as i64,
        };
        let (store, dir) = store(settings).await;
        write_events(&store, &dir, 0..4, 50).await;
        let path = dir.join(crate::DATABASE_FILE);
        let threads = CheckpointThreads::start(&path, Duration::from_secs(5), MIB as i64).unwrap();
        let files = Files::new(path);
        let gate = store.gate();
        let held = Arc::clone(&gate).lock_owned().await;
        let catching_up = tokio::spawn({
            let files = files.clone();
            async move { catch_up(&threads, &files, &gate, settings).await }
        });
        // Two `fsync`s on a blocking thread: up to 30 s on a loaded machine.
        for _ in 0..3000 {
            if files.synced.load(Ordering::Relaxed) > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            files.synced.load(Ordering::Relaxed),
            1,
            "the files are synced while the writer is not held"
        );
        assert!(
            !catching_up.is_finished(),
            "the catch-up waits for the gate"
        );
        drop(held);
        let outcome = catching_up.await.unwrap().unwrap();
        assert!(!outcome.busy, "{outcome:?}");
        assert_eq!(outcome.checkpointed, outcome.wal_pages, "{outcome:?}");
        assert!(outcome.wal_pages > 0, "{outcome:?}");
        store.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The WAL header's salts, which change each time the WAL starts over.
    /// The WAL header's first salt: SQLite adds one to it each time the WAL starts over from its
    /// beginning (and writes it to the file with the first frame of the new cycle).
    fn wal_salt1(dir: &Path) -> Option<u32> {
        let header = std::fs::read(dir.join(format!("{}-wal", crate::DATABASE_FILE))).ok()?;
        Some(u32::from_be_bytes(header.get(16..20)?.try_into().ok()?))
    }

    /// Stores one small write so the WAL has a header; its cycle counter.
    async fn first_cycle(store: &SqliteStore, dir: &Path) -> u32 {
        let events = [EventRecord {
            sequence_number: 0,
            data: noise(u64::MAX).into(),
        }];
        store.append_events("resp_first", &events).await.unwrap();
        wal_salt1(dir).unwrap()
    }

    /// How many times the WAL started over since its cycle counter read `first` (counted by
    /// SQLite, not sampled: a starved sampling loop cannot miss one).
    fn wal_restarts(dir: &Path, first: u32) -> u32 {
        wal_salt1(dir).unwrap().wrapping_sub(first)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_file_is_reused_not_truncated_and_regrown() {
        // The default settings scaled down 64 times (catch up from 1 MiB of WAL, the file kept
        // up to 2 MiB), under a steady stream of writes: the WAL starts over again and again,
        // and its file keeps its size: every cycle writes over the blocks of the last one.
        // With the journal size limit at the catch-up size (as before), each start over
        // truncated the file and the next cycle grew it again.
        let (store, dir) = store(Settings {
            every: Duration::from_millis(10),
            catch_up_pages: DEFAULT.catch_up_pages / 64,
            max_wal_pages: DEFAULT.max_wal_pages / 64,
            journal_size_limit: DEFAULT.journal_size_limit / 64,
        })
        .await;
        let first = first_cycle(&store, &dir).await;
        // Four writers of 10 KiB each (incompressible), a write every 2 ms each: about 20 MB/s,
        // 200 KB of WAL per tick.
        let sent = Arc::new(AtomicU64::new(0));
        let writers: Vec<_> = (0..4u64)
            .map(|writer| {
                let store = store.clone();
                let sent = Arc::clone(&sent);
                tokio::spawn(async move {
                    loop {
                        let write = sent.fetch_add(1, Ordering::Relaxed);
                        if write >= 2000 {
                            break;
                        }
                        let events: Vec<EventRecord> = (0..10)
                            .map(|n| EventRecord {
                                sequence_number: n,
                                data: noise(write * 10 + n).into(),
                            })
                            .collect();
                        let id = format!("resp_{writer}_{write}");
                        store.append_events(&id, &events).await.unwrap();
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                })
            })
            .collect();
        // A cycle runs to the catch-up size plus a tick's writes. The file may be cut only
        // back to the RESTART bound (a cycle that ran past it: the checkpointer starved of CPU
        // on a loaded machine), never to the catch-up size: with the limit there (as before),
        // nearly every cycle was cut and the next one regrew it.
        let restart_bound = DEFAULT.max_wal_pages as u64 / 64 * 4096;
        let (mut previous, mut largest, mut shrank) = (0, 0, 0);
        while writers.iter().any(|w| !w.is_finished()) {
            let now = wal_bytes(&dir);
            if now < previous {
                shrank += 1;
                assert!(
                    now >= restart_bound,
                    "the WAL file was cut from {previous} to {now} bytes (cut {shrank} times)"
                );
            }
            (previous, largest) = (now, largest.max(now));
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for writer in writers {
            writer.await.unwrap();
        }
        let started_over = wal_restarts(&dir, first);
        assert!(
            started_over >= 3,
            "the WAL started over {started_over} times (largest {largest} bytes)"
        );
        store.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn periodic_checkpoints_run_in_the_idle_class_only_on_an_idle_enough_machine_not_behind() {
        let settings = DEFAULT;
        let caught_up = Outcome {
            busy: false,
            wal_pages: 1_000,
            checkpointed: 900,
        };
        let behind = Outcome {
            busy: false,
            wal_pages: 9_000,
            checkpointed: 4_000,
        };
        assert_eq!(
            class_for(Some(0.5), Some(&caught_up), settings),
            Class::Background
        );
        assert_eq!(class_for(Some(0.2), None, settings), Class::Background);
        assert_eq!(
            class_for(Some(0.19), Some(&caught_up), settings),
            Class::Foreground
        );
        assert_eq!(
            class_for(Some(0.9), Some(&behind), settings),
            Class::Foreground
        );
        assert_eq!(
            class_for(None, Some(&caught_up), settings),
            Class::Foreground
        );
    }
}
