//! Background runs: the worker pool, job leases, recovery after a crash, retention.
//!
//! A `background: true` request becomes a job row in the store. Workers claim jobs (oldest
//! first) with a lease they renew while the run goes on. A job claimed after its lease expired
//! lost its worker (a crash or a stop): it is ended `failed` with a clear error rather than run a
//! second time, since its output so far was never stored. Foreground runs have no job row; those
//! found unfinished at start-up are ended the same way. Nothing stays `in_progress` forever.

use std::time::Duration;

use protocol::events::{EventData, StreamEvent};
use protocol::response::{ErrorInfo, ResponseStatus};

use crate::engine::{Engine, JobPayload, now_ms, now_secs};
use crate::error::EngineError;
use crate::store::{ClaimedJob, EventRecord, JobRecord, JobState};

/// How often one idle worker is woken to look for jobs nobody announced: jobs whose lease
/// expired, and jobs queued before this process started.
const IDLE_POLL: Duration = Duration::from_secs(1);
/// How often old event logs are purged.
const RETENTION_SWEEP: Duration = Duration::from_secs(3600);

/// The error of a run whose process stopped before it ended.
const LOST_RUN: &str = "the server stopped while this run was in progress; start it again";

impl Engine {
    /// Ends runs left unfinished by a previous process. Call once at start-up, before serving
    /// and before [`Engine::spawn_workers`].
    pub async fn recover(&self) -> Result<usize, EngineError> {
        let orphans = self.inner.store.orphaned_responses().await?;
        for (project_id, id) in &orphans {
            self.end_stored(project_id, id, ResponseStatus::Failed)
                .await?;
        }
        if !orphans.is_empty() {
            tracing::warn!(
                count = orphans.len(),
                "ended runs interrupted by a previous stop"
            );
        }
        Ok(orphans.len())
    }

    /// Starts the worker pool and the retention sweeper.
    pub fn spawn_workers(&self) {
        for _ in 0..self.inner.config.workers.max(1) {
            let engine = self.clone();
            tokio::spawn(async move { engine.worker().await });
        }
        let engine = self.clone();
        tokio::spawn(async move { engine.sweep_retention().await });
        let engine = self.clone();
        tokio::spawn(async move {
            let inner = &engine.inner;
            loop {
                tokio::select! {
                    () = tokio::time::sleep(IDLE_POLL) => inner.job_ready.notify_one(),
                    () = inner.stopping.cancelled() => return,
                }
            }
        });
    }

    /// Stops claiming jobs and waits up to `grace` for running background runs to end. Runs
    /// still going then keep their job rows and are ended `failed` by the next start.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.stopping.cancel();
        self.inner.jobs.close();
        if tokio::time::timeout(grace, self.inner.jobs.wait())
            .await
            .is_err()
        {
            tracing::warn!("background runs still going at shutdown; the next start ends them");
        }
    }

    async fn worker(&self) {
        let inner = &self.inner;
        loop {
            if inner.stopping.is_cancelled() {
                return;
            }
            let now = now_ms();
            let lease_until = now + lease_ms(inner.config.lease);
            match inner
                .store
                .claim_job(&inner.worker_id, now, lease_until)
                .await
            {
                Ok(Some(claimed)) => {
                    // There may be more: let another idle worker look.
                    inner.job_ready.notify_one();
                    let engine = self.clone();
                    // Tracked so shutdown can wait for it; awaited here so the pool stays bounded.
                    let run = inner
                        .jobs
                        .spawn(async move { engine.run_job(claimed, false).await });
                    let _ = run.await;
                }
                Ok(None) => {
                    // Idle workers wait to be woken (a submission or the poll tick), so an idle
                    // server makes one claim query per tick, not one per worker.
                    tokio::select! {
                        () = inner.job_ready.notified() => {}
                        () = inner.stopping.cancelled() => return,
                    }
                }
                Err(err) => {
                    tracing::error!(error = %err, "claiming a background job failed");
                    tokio::time::sleep(IDLE_POLL).await;
                }
            }
        }
    }

    /// Runs one claimed job to its end (or ends it at once when it lost its worker).
    async fn run_job(&self, claimed: ClaimedJob, cancelled: bool) {
        let job = claimed.job;
        if let Err(err) = self
            .run_job_inner(&job, claimed.previous_state, cancelled)
            .await
        {
            tracing::error!(response_id = %job.response_id, error = %err, "background run could not run");
            if let Err(err) = self
                .end_stored(&job.project_id, &job.response_id, ResponseStatus::Failed)
                .await
            {
                tracing::error!(response_id = %job.response_id, error = %err, "ending a background run failed");
            }
        }
        if let Err(err) = self.inner.store.delete_job(&job.response_id).await {
            tracing::error!(response_id = %job.response_id, error = %err, "removing a finished job failed");
        }
    }

    async fn run_job_inner(
        &self,
        job: &JobRecord,
        previous: JobState,
        cancelled: bool,
    ) -> Result<(), EngineError> {
        if previous == JobState::Running {
            tracing::warn!(response_id = %job.response_id, "background run lost its worker; ending it");
            return self
                .end_stored(&job.project_id, &job.response_id, ResponseStatus::Failed)
                .await;
        }
        let payload: JobPayload = serde_json::from_str(&job.payload)
            .map_err(|err| EngineError::Internal(format!("job payload is unreadable: {err}")))?;
        let record = self
            .inner
            .store
            .get_response(&job.project_id, &job.response_id)
            .await?
            .ok_or_else(|| EngineError::Internal("the job's response is missing".to_owned()))?;
        let (plan, _) = self.plan(
            &job.project_id,
            payload.request,
            payload.transcript,
            payload.context,
        )?;
        let live = self.register(&job.response_id);
        if cancelled {
            live.cancel.cancel();
        }
        let engine = self.clone();
        let (response_id, cancel) = (job.response_id.clone(), live.cancel.clone());
        let renewal =
            tokio::spawn(async move { engine.renew_while_running(response_id, cancel).await });
        let finished = self.execute(plan, record.response, live).await;
        renewal.abort();
        tracing::debug!(response_id = %finished.response.id, status = finished.response.status.as_str(), "background run ended");
        Ok(())
    }

    /// Renews the job's lease until aborted when the run ends; if the lease is lost to another
    /// worker, cancels the run (it then ends `cancelled`) and returns.
    async fn renew_while_running(
        &self,
        response_id: String,
        cancel: tokio_util::sync::CancellationToken,
    ) {
        let lease = self.inner.config.lease;
        loop {
            tokio::time::sleep(lease / 3).await;
            match self
                .inner
                .store
                .renew_lease(
                    &response_id,
                    &self.inner.worker_id,
                    now_ms() + lease_ms(lease),
                )
                .await
            {
                Ok(true) => {}
                Ok(false) => {
                    tracing::error!(%response_id, "lost the lease of a background run; stopping it");
                    cancel.cancel();
                    return;
                }
                Err(err) => {
                    tracing::warn!(%response_id, error = %err, "renewing a job lease failed")
                }
            }
        }
    }

    /// Takes a job still waiting for a worker out of the queue and ends it `cancelled`.
    pub(crate) async fn cancel_queued(&self, id: &str) -> Result<(), EngineError> {
        let lease_until = now_ms() + lease_ms(self.inner.config.lease);
        if let Some(job) = self
            .inner
            .store
            .claim_queued_job(id, &self.inner.worker_id, lease_until)
            .await?
        {
            let engine = self.clone();
            self.inner.jobs.spawn(async move {
                engine
                    .run_job(
                        ClaimedJob {
                            job,
                            previous_state: JobState::Queued,
                        },
                        true,
                    )
                    .await;
            });
        }
        Ok(())
    }

    /// Ends a run that no process is executing: stores the final status and appends the
    /// terminal event to its log, so pollers and resumers see an end.
    async fn end_stored(
        &self,
        project_id: &str,
        id: &str,
        status: ResponseStatus,
    ) -> Result<(), EngineError> {
        let store = &self.inner.store;
        let Some(mut record) = store.get_response(project_id, id).await? else {
            return Ok(());
        };
        if record.response.status.is_terminal() {
            return Ok(());
        }
        record.response.status = status;
        record.response.completed_at = Some(now_secs());
        let error = ErrorInfo {
            message: LOST_RUN.to_owned(),
            kind: Some("server_error".to_owned()),
            code: Some("server_error".to_owned()),
        };
        if status == ResponseStatus::Failed {
            record.response.error = Some(error.clone());
        }
        store.put_response(&record).await?;
        let next = store
            .events_after(id, None)
            .await?
            .last()
            .map_or(0, |e| e.sequence_number + 1);
        let response = Box::new(record.response);
        let data = match status {
            ResponseStatus::Cancelled => EventData::ResponseCancelled { response },
            _ => EventData::ResponseFailed { error, response },
        };
        let line = serde_json::to_string(&StreamEvent {
            data,
            sequence_number: next,
        })
        .map_err(|err| EngineError::Internal(format!("event serialization: {err}")))?;
        store
            .append_events(
                id,
                &[EventRecord {
                    sequence_number: next,
                    data: line,
                }],
            )
            .await?;
        Ok(())
    }

    async fn sweep_retention(&self) {
        loop {
            match self.purge_expired_events().await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "purged expired event logs"),
                Err(err) => tracing::warn!(error = %err, "purging expired event logs failed"),
            }
            match self.purge_expired_files().await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "purged expired shared files"),
                Err(err) => tracing::warn!(error = %err, "purging expired shared files failed"),
            }
            tokio::select! {
                () = tokio::time::sleep(RETENTION_SWEEP) => {}
                () = self.inner.stopping.cancelled() => return,
            }
        }
    }

    /// Purges shared files older than their retention now (also done hourly by the sweeper).
    pub async fn purge_expired_files(&self) -> Result<u64, EngineError> {
        let retention =
            i64::try_from(self.inner.config.file_retention.as_secs()).unwrap_or(i64::MAX);
        Ok(self
            .inner
            .store
            .purge_files(now_secs().saturating_sub(retention))
            .await?)
    }

    /// Purges event logs older than the retention now (also done hourly by the sweeper).
    pub async fn purge_expired_events(&self) -> Result<u64, EngineError> {
        let retention =
            i64::try_from(self.inner.config.event_retention.as_secs()).unwrap_or(i64::MAX);
        Ok(self
            .inner
            .store
            .purge_events(now_secs().saturating_sub(retention))
            .await?)
    }
}

fn lease_ms(lease: Duration) -> i64 {
    i64::try_from(lease.as_millis()).unwrap_or(i64::MAX)
}
