//! PostgreSQL's run-path writes in parallel lanes: several group writers (`group_commit.rs`),
//! each committing its batches on a pooled connection of its own, with every write of one
//! response always in the same lane.
//!
//! One group writer commits one batch at a time, and on PostgreSQL each statement of a batch
//! is a round trip to the server before the next (sqlx does not pipeline) and each commit
//! waits for the server's WAL flush. Under load that one connection was the bound: at C = 64
//! agentd served ~900 non-streamed requests a second on a local server with a third of the
//! CPU idle (docs/benchmarks.md, "Issue 18, eighteenth pass"). PostgreSQL runs transactions
//! side by side, so here up to [`MAX_LANES`] batches run at once.
//!
//! A run's writes must still land in the order it made them (its job row before its end, its
//! event chunks before the chunk of its end): the lane is chosen by the response's id, so a
//! run's writes queue behind each other in one lane exactly as they queued behind every write
//! before. Writes of different runs share no rows. SQLite keeps its one writer (a single
//! writer is SQLite's own rule; `sqlite_writer.rs`).

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use engine::metrics::ActiveRuns;
use engine::store::StoreError;
use sqlx::Pool;

use crate::group_commit::GroupWriter;
use crate::script::Script;
use crate::script_run::RunScripts;

/// Most lanes, whatever the pool's size: past a few, the server's WAL flush, not the round
/// trips, bounds the commits.
pub(crate) const MAX_LANES: usize = 4;

/// The group writers, one per lane. Cheap to clone; each lane's task ends when the last
/// handle is dropped.
#[derive(Debug, Clone)]
pub(crate) struct WriteLanes {
    lanes: Arc<[GroupWriter]>,
}

impl WriteLanes {
    /// Starts `lanes` group writers (at least one) on the current tokio runtime, each writing
    /// through `pool`, and keeping a connection of it between batches that follow each other
    /// when the pool has at least twice as many (`script_run::Held`: the other half serves
    /// reads and other writes).
    pub(crate) fn spawn<DB: RunScripts>(pool: &Pool<DB>, lanes: usize) -> WriteLanes {
        let lanes = lanes.max(1);
        let connections = usize::try_from(pool.options().get_max_connections()).unwrap_or(0);
        let hold = connections >= 2 * lanes;
        let lanes = (0..lanes)
            .map(|_| GroupWriter::spawn_holding(pool.clone(), hold))
            .collect();
        WriteLanes { lanes }
    }

    /// The lanes for a pool of `max_connections`: half of them at most, so that reads always
    /// find a connection while every lane commits, and at most [`MAX_LANES`].
    pub(crate) fn for_pool(max_connections: u32) -> usize {
        usize::try_from(max_connections / 2)
            .unwrap_or(MAX_LANES)
            .clamp(1, MAX_LANES)
    }

    /// How many lanes there are.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lanes.len()
    }

    /// The lane of the writes of the response `key` (the same for every write of it).
    pub(crate) fn lane_of(&self, key: &str) -> usize {
        let mut hasher = DefaultHasher::new();
        key.hash(&mut hasher);
        let lanes = self.lanes.len().max(1) as u64;
        usize::try_from(hasher.finish() % lanes).unwrap_or(0)
    }

    /// Has each lane go by the engine's count of runs executing now (`GroupWriter::follow_active_runs`;
    /// the task writers ignore it).
    pub(crate) fn follow_active_runs(&self, runs: ActiveRuns) {
        for lane in self.lanes.iter() {
            lane.follow_active_runs(runs.clone());
        }
    }

    /// Runs `script`, a write of the response `key`, in its lane: in a transaction shared with
    /// the other writes waiting in that lane, answered once committed (`GroupWriter::write`).
    pub(crate) async fn write(&self, key: &str, script: Script) -> Result<(), StoreError> {
        match self.lanes.get(self.lane_of(key)) {
            Some(lane) => lane.write(script).await,
            None => Err(StoreError::Backend("the store has no writer".to_owned())),
        }
    }

    /// Queues `script`, a write of the response `key`, in its lane and returns where its
    /// outcome will come (tests: queue writes one after the other without waiting).
    #[cfg(test)]
    async fn enqueue(
        &self,
        key: &str,
        script: Script,
    ) -> tokio::sync::oneshot::Receiver<Result<(), StoreError>> {
        let lane = &self.lanes[self.lane_of(key)];
        lane.enqueue(script).await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use pgschema::testdb::TestDatabase;
    use sqlx::postgres::PgPool;

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// A database with a table `t (id TEXT PRIMARY KEY, n BIGINT)` and a pool of `connections`.
    async fn database(
        connections: u32,
    ) -> Result<(TestDatabase, PgPool), Box<dyn std::error::Error>> {
        let db = TestDatabase::create("agentd_lanes").await?;
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(connections)
            .connect(db.url())
            .await?;
        sqlx::query("CREATE TABLE t (id TEXT PRIMARY KEY, n BIGINT NOT NULL)")
            .execute(&pool)
            .await?;
        Ok((db, pool))
    }

    /// Sets `t.n` of row `id` to `n`, inserting the row if it is not there.
    fn set(id: &str, n: i64) -> Script {
        let mut script = Script::new();
        script
            .statement(
                "INSERT INTO t (id, n) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET n = excluded.n",
            )
            .bind(Arc::<str>::from(id))
            .bind(n);
        script
    }

    /// The rows of `t`, by id.
    async fn rows(pool: &PgPool) -> Result<Vec<(String, i64)>, sqlx::Error> {
        sqlx::query_as("SELECT id, n FROM t ORDER BY id")
            .fetch_all(pool)
            .await
    }

    /// Two response ids in different lanes, and one more in the first one's.
    fn ids(lanes: &WriteLanes) -> Result<(String, String, String), Box<dyn std::error::Error>> {
        let candidates: Vec<String> = (0..1000).map(|i| format!("resp_{i:04}")).collect();
        let first = candidates[0].clone();
        let other = candidates
            .iter()
            .find(|id| lanes.lane_of(id) != lanes.lane_of(&first))
            .ok_or("every id in one lane")?
            .clone();
        let same = candidates
            .iter()
            .skip(1)
            .find(|id| lanes.lane_of(id) == lanes.lane_of(&first))
            .ok_or("no second id in the first lane")?
            .clone();
        Ok((first, other, same))
    }

    #[test]
    fn the_lanes_follow_the_pool_size() {
        assert_eq!(WriteLanes::for_pool(0), 1);
        assert_eq!(WriteLanes::for_pool(1), 1);
        assert_eq!(WriteLanes::for_pool(3), 1);
        assert_eq!(WriteLanes::for_pool(4), 2);
        assert_eq!(WriteLanes::for_pool(10), MAX_LANES);
        assert_eq!(WriteLanes::for_pool(1000), MAX_LANES);
    }

    /// A write held up by a lock (another session holding the row) holds up the writes
    /// behind it in its lane, and only those: another response's write commits meanwhile.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_held_up_holds_up_its_lane_only() -> TestResult {
        let (db, pool) = database(10).await?;
        let lanes = WriteLanes::spawn(&pool, 4);
        assert_eq!(lanes.len(), 4);
        let (held, other, behind) = ids(&lanes)?;
        lanes.write(&held, set(&held, 0)).await?;

        // Another session locks the row `held`: its next write waits for the lock.
        let mut locker = pool.begin().await?;
        sqlx::query("SELECT n FROM t WHERE id = $1 FOR UPDATE")
            .bind(&held)
            .fetch_one(&mut *locker)
            .await?;
        let waiting = tokio::spawn({
            let lanes = lanes.clone();
            let held = held.clone();
            async move { lanes.write(&held, set(&held, 1)).await }
        });
        // Bounded wait until the write is blocked on the lock (seen from the server).
        let mut blocked = false;
        for _ in 0..500 {
            let waiting_sessions: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
            )
            .fetch_one(&pool)
            .await?;
            if waiting_sessions > 0 {
                blocked = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(blocked, "the write never waited for the lock");

        // Another response's write, in another lane, commits while that one waits.
        tokio::time::timeout(Duration::from_secs(10), lanes.write(&other, set(&other, 7)))
            .await
            .map_err(|_| "a write in another lane waited for the held one")??;
        // One in the held write's lane waits behind it.
        let behind_write = tokio::spawn({
            let lanes = lanes.clone();
            let behind = behind.clone();
            async move { lanes.write(&behind, set(&behind, 9)).await }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!waiting.is_finished() && !behind_write.is_finished());

        locker.rollback().await?;
        waiting.await??;
        behind_write.await??;
        let rows = rows(&pool).await?;
        let mut expected = vec![(held, 1), (other, 7), (behind, 9)];
        expected.sort();
        assert_eq!(rows, expected);
        pool.close().await;
        db.drop_database().await?;
        Ok(())
    }

    /// The writes of one response, queued one after the other without waiting, land in that
    /// order: the last one queued is what stays.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_writes_of_one_response_land_in_their_order() -> TestResult {
        let (db, pool) = database(10).await?;
        let lanes = WriteLanes::spawn(&pool, 4);
        let mut writes = Vec::new();
        for round in 0..20 {
            for id in ["resp_a", "resp_b", "resp_c", "resp_d", "resp_e"] {
                writes.push(lanes.enqueue(id, set(id, round)).await);
            }
        }
        for write in writes {
            write.await??;
        }
        let rows = rows(&pool).await?;
        assert_eq!(rows.len(), 5);
        assert!(rows.iter().all(|(_, n)| *n == 19), "{rows:?}");
        pool.close().await;
        db.drop_database().await?;
        Ok(())
    }

    /// A lane keeps its connection between writes that follow each other, and gives it back to
    /// the pool once nothing came to write for a while: the pool lends it to reads again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lane_gives_its_connection_back_once_idle() -> TestResult {
        let (db, pool) = database(2).await?;
        let lanes = WriteLanes::spawn(&pool, 1);
        lanes.write("resp_a", set("resp_a", 1)).await?;
        let lent = |pool: &PgPool| pool.size() - u32::try_from(pool.num_idle()).unwrap_or(0);
        // Kept right after the write (a read's connection given back is checked first).
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(lent(&pool), 1, "the lane keeps its connection");
        let mut returned = false;
        for _ in 0..300 {
            if lent(&pool) == 0 {
                returned = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(returned, "the lane kept its connection while idle");
        // And it takes one again for the next write.
        lanes.write("resp_a", set("resp_a", 2)).await?;
        let n: i64 = sqlx::query_scalar("SELECT n FROM t WHERE id = 'resp_a'")
            .fetch_one(&pool)
            .await?;
        assert_eq!(n, 2);
        pool.close().await;
        db.drop_database().await?;
        Ok(())
    }
}
