//! [`JobStore`]: the queue of background runs, claimed by workers under a lease.
//!
//! A claim reads the oldest claimable job and takes it in one transaction. On SQLite every
//! write goes through the single writer connection, so in-process claims are already
//! serialized, and the transaction is `BEGIN IMMEDIATE`, which takes the database write lock
//! before it reads, so claimers in other processes sharing the file cannot interleave between
//! the read of the candidate and its update either. On PostgreSQL the candidate is selected
//! `FOR UPDATE SKIP LOCKED`: concurrent claimers (other replicas) skip each other's rows
//! instead of queueing, and the row lock holds until the update commits.

use std::sync::Arc;

use engine::store::{ClaimedJob, JobRecord, JobState, JobStore, StoreError};
use sqlx::Row;
use sqlx::error::ErrorKind;

use super::{Db, DbRow, Store, dialect};
use crate::error;
use crate::script::Script;

const QUEUED: &str = "queued";
const RUNNING: &str = "running";

const INSERT: &str = "\
INSERT INTO jobs
    (response_id, project_id, payload, state, lease_owner, lease_until_ms, created_at_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7)";

/// Takes the job chosen by [`dialect::SELECT_CLAIMABLE`]; the claimability condition is repeated so the
/// statement stays correct on its own.
const CLAIM: &str = "\
UPDATE jobs SET state = 'running', lease_owner = $1, lease_until_ms = $2
WHERE response_id = $3
  AND (state = 'queued' OR (state = 'running' AND lease_until_ms < $4))
RETURNING response_id, project_id, payload, state, lease_owner, lease_until_ms, created_at_ms";

const CLAIM_QUEUED: &str = "\
UPDATE jobs SET state = 'running', lease_owner = $1, lease_until_ms = $2
WHERE response_id = $3 AND state = 'queued'
RETURNING response_id, project_id, payload, state, lease_owner, lease_until_ms, created_at_ms";

const RENEW: &str = "\
UPDATE jobs SET lease_until_ms = $1
WHERE response_id = $2 AND state = 'running' AND lease_owner = $3";

const DELETE: &str = "DELETE FROM jobs WHERE response_id = $1";

const COUNT_QUEUED: &str = "SELECT COUNT(*) FROM jobs WHERE project_id = $1 AND state = 'queued'";

const COUNT_ALL_QUEUED: &str = "SELECT COUNT(*) FROM jobs WHERE state = 'queued'";

const REQUEST_CANCEL: &str = "\
UPDATE jobs SET cancel_requested = 1 WHERE response_id = $1 AND state = 'running'";

const CANCEL_REQUESTS: &str = "\
SELECT response_id FROM jobs
WHERE lease_owner = $1 AND state = 'running' AND cancel_requested = 1
ORDER BY response_id";

/// Removes a job row through any executor (pool or transaction); a missing row is no error.
pub(crate) async fn delete<'e, E>(response_id: &str, executor: E) -> Result<(), StoreError>
where
    E: sqlx::Executor<'e, Database = Db>,
{
    sqlx::query(DELETE)
        .bind(response_id)
        .execute(executor)
        .await
        .map_err(error::backend)?;
    Ok(())
}

/// Removes a job row as part of a write; a missing row is no error.
pub(crate) fn delete_in(script: &mut Script, response_id: &Arc<str>) {
    script.statement(DELETE).bind(response_id);
}

/// Adds a job row to a write; a row already there for the response refuses it (a conflict).
pub(super) fn insert_in(script: &mut Script, job: &JobRecord) {
    script
        .statement(INSERT)
        .bind(Arc::<str>::from(job.response_id.as_str()))
        .bind(Arc::<str>::from(job.project_id.as_str()))
        .bind(Arc::<str>::from(job.payload.as_str()))
        .bind(state_text(job.state))
        .bind(job.lease_owner.as_deref().map(Arc::<str>::from))
        .bind(job.lease_until_ms)
        .bind(job.created_at_ms)
        .conflict_on(
            ErrorKind::UniqueViolation,
            format!("job {}", job.response_id),
        );
}

#[async_trait::async_trait]
impl JobStore for Store {
    async fn insert_job(&self, job: &JobRecord) -> Result<(), StoreError> {
        let mut script = Script::new();
        insert_in(&mut script, job);
        self.write(&job.response_id, script).await
    }

    async fn claim_job(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until_ms: i64,
    ) -> Result<Option<ClaimedJob>, StoreError> {
        let mut tx = self
            .writer
            .begin_with(dialect::CLAIM_BEGIN)
            .await
            .map_err(error::backend)?;
        let Some(candidate) = sqlx::query(dialect::SELECT_CLAIMABLE)
            .bind(now_ms)
            .fetch_optional(&mut *tx)
            .await
            .map_err(error::backend)?
        else {
            // Nothing written: ending the transaction either way is the same.
            tx.commit().await.map_err(error::backend)?;
            return Ok(None);
        };
        let response_id: String = candidate
            .try_get("response_id")
            .map_err(|e| error::bad_column("job", "response_id", e))?;
        let what = format!("job {response_id}");
        let previous_state = decode_state(&candidate, &what)?;
        let claimed = sqlx::query(CLAIM)
            .bind(owner)
            .bind(lease_until_ms)
            .bind(response_id.as_str())
            .bind(now_ms)
            .fetch_optional(&mut *tx)
            .await
            .map_err(error::backend)?;
        let Some(row) = claimed else {
            // Impossible under the write lock (SQLite) or the row lock (PostgreSQL); give up rather than report a claim we lack.
            return Err(StoreError::Backend(format!(
                "{what} changed during its claim"
            )));
        };
        let job = decode_job(&row)?;
        tx.commit().await.map_err(error::backend)?;
        Ok(Some(ClaimedJob {
            job,
            previous_state,
        }))
    }

    async fn claim_queued_job(
        &self,
        response_id: &str,
        owner: &str,
        lease_until_ms: i64,
    ) -> Result<Option<JobRecord>, StoreError> {
        let row = sqlx::query(CLAIM_QUEUED)
            .bind(owner)
            .bind(lease_until_ms)
            .bind(response_id)
            .fetch_optional(&self.writer)
            .await
            .map_err(error::backend)?;
        row.as_ref().map(decode_job).transpose()
    }

    async fn renew_lease(
        &self,
        response_id: &str,
        owner: &str,
        lease_until_ms: i64,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(RENEW)
            .bind(lease_until_ms)
            .bind(response_id)
            .bind(owner)
            .execute(&self.writer)
            .await
            .map_err(error::backend)?;
        Ok(done.rows_affected() > 0)
    }

    async fn delete_job(&self, response_id: &str) -> Result<(), StoreError> {
        delete(response_id, &self.writer).await
    }

    async fn count_queued(&self, project_id: &str) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar(COUNT_QUEUED)
            .bind(project_id)
            .fetch_one(&self.reader)
            .await
            .map_err(error::backend)?;
        count_u64(count)
    }

    async fn count_all_queued(&self) -> Result<u64, StoreError> {
        let count: i64 = sqlx::query_scalar(COUNT_ALL_QUEUED)
            .fetch_one(&self.reader)
            .await
            .map_err(error::backend)?;
        count_u64(count)
    }

    async fn request_cancel(&self, response_id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(REQUEST_CANCEL)
            .bind(response_id)
            .execute(&self.writer)
            .await
            .map_err(error::backend)?;
        Ok(done.rows_affected() > 0)
    }

    async fn cancel_requests(&self, owner: &str) -> Result<Vec<String>, StoreError> {
        sqlx::query_scalar(CANCEL_REQUESTS)
            .bind(owner)
            .fetch_all(&self.reader)
            .await
            .map_err(error::backend)
    }
}

fn count_u64(count: i64) -> Result<u64, StoreError> {
    u64::try_from(count).map_err(|_| StoreError::Backend(format!("negative count {count}")))
}

fn state_text(state: JobState) -> &'static str {
    match state {
        JobState::Queued => QUEUED,
        JobState::Running => RUNNING,
    }
}

fn decode_state(row: &DbRow, what: &str) -> Result<JobState, StoreError> {
    let state: String = row
        .try_get("state")
        .map_err(|e| error::bad_column(what, "state", e))?;
    match state.as_str() {
        QUEUED => Ok(JobState::Queued),
        RUNNING => Ok(JobState::Running),
        _ => Err(StoreError::Corrupt(format!("{what}: unknown state"))),
    }
}

fn decode_job(row: &DbRow) -> Result<JobRecord, StoreError> {
    let response_id: String = row
        .try_get("response_id")
        .map_err(|e| error::bad_column("job", "response_id", e))?;
    let what = format!("job {response_id}");
    Ok(JobRecord {
        project_id: row
            .try_get("project_id")
            .map_err(|e| error::bad_column(&what, "project_id", e))?,
        payload: row
            .try_get("payload")
            .map_err(|e| error::bad_column(&what, "payload", e))?,
        state: decode_state(row, &what)?,
        lease_owner: row
            .try_get("lease_owner")
            .map_err(|e| error::bad_column(&what, "lease_owner", e))?,
        lease_until_ms: row
            .try_get("lease_until_ms")
            .map_err(|e| error::bad_column(&what, "lease_until_ms", e))?,
        created_at_ms: row
            .try_get("created_at_ms")
            .map_err(|e| error::bad_column(&what, "created_at_ms", e))?,
        response_id,
    })
}
