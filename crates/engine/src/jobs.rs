//! Background runs: the worker pool and job leases.
//!
//! A `background: true` request becomes a job row in the store. Workers claim jobs (oldest
//! first) with a lease they renew while the run goes on; the run's end removes the row in the
//! same transaction that stores the final response. A job claimed after its lease expired lost
//! its worker (a crash or a stop): it is ended `failed` with a clear error rather than run a
//! second time, since its output so far was never stored (`recovery.rs`).

use std::sync::Arc;
use std::time::Duration;

use crate::clock::millis;
use crate::code::Code;
use crate::core::Core;
use crate::error::{EngineError, RunFailure};
use crate::job_secrets;
use crate::plan::{self, JobPayload};
use crate::recovery::{self, LOST_RUN};
use crate::runner;
use crate::store::{ClaimedJob, JobRecord, JobState};

/// How often one idle worker is woken to look for jobs nobody announced: jobs whose lease
/// expired, and jobs queued before this process started.
const IDLE_POLL: Duration = Duration::from_secs(1);

/// Starts the worker pool and the idle poll.
pub(crate) fn spawn_workers(core: &Arc<Core>) {
    for _ in 0..core.config.workers.max(1) {
        let core = core.clone();
        tokio::spawn(async move { worker(core).await });
    }
    let core = core.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = tokio::time::sleep(IDLE_POLL) => core.job_ready.notify_one(),
                () = core.stopping.cancelled() => return,
            }
        }
    });
}

/// Stops claiming jobs and waits up to `grace` for running background runs to end. Runs still
/// going then keep their job rows and are ended `failed` by the next start.
pub(crate) async fn shutdown(core: &Core, grace: Duration) {
    core.stopping.cancel();
    core.jobs.close();
    if tokio::time::timeout(grace, core.jobs.wait()).await.is_err() {
        tracing::warn!("background runs still going at shutdown; the next start ends them");
    }
}

async fn worker(core: Arc<Core>) {
    loop {
        if core.stopping.is_cancelled() {
            return;
        }
        let now = core.clock.now_ms();
        let lease_until = now + millis(core.config.lease);
        match core
            .store
            .claim_job(&core.worker_id, now, lease_until)
            .await
        {
            Ok(Some(claimed)) => {
                // There may be more: let another idle worker look.
                core.job_ready.notify_one();
                let run_core = core.clone();
                // Tracked so shutdown can wait for it; awaited here so the pool stays bounded.
                let run = core
                    .jobs
                    .spawn(async move { run_job(&run_core, claimed, false).await });
                let _ = run.await;
            }
            Ok(None) => {
                // Idle workers wait to be woken (a submission or the poll tick), so an idle
                // server makes one claim query per tick, not one per worker.
                tokio::select! {
                    () = core.job_ready.notified() => {}
                    () = core.stopping.cancelled() => return,
                }
            }
            Err(err) => {
                tracing::error!(error = %err, "claiming a background job failed");
                tokio::time::sleep(IDLE_POLL).await;
            }
        }
    }
}

/// Runs one claimed job to its end, or ends it at once when it lost its worker or cannot run.
async fn run_job(core: &Arc<Core>, claimed: ClaimedJob, cancelled: bool) {
    let job = claimed.job;
    let failure = if claimed.previous_state == JobState::Running {
        tracing::warn!(response_id = %job.response_id, "background run lost its worker; ending it");
        Some(RunFailure::new(Code::RunLost, LOST_RUN))
    } else {
        match execute_job(core, &job, cancelled).await {
            Ok(()) => None,
            Err(err) => {
                tracing::error!(response_id = %job.response_id, error = %err, "background run could not run");
                Some(RunFailure::from(err))
            }
        }
    };
    if let Some(failure) = failure
        && let Err(err) =
            recovery::end_stored(core, &job.project_id, &job.response_id, failure).await
    {
        tracing::error!(response_id = %job.response_id, error = %err, "ending a background run failed");
    }
}

/// Plans the job's run from its payload and executes it, renewing the lease meanwhile.
async fn execute_job(
    core: &Arc<Core>,
    job: &JobRecord,
    cancelled: bool,
) -> Result<(), EngineError> {
    let mut payload: JobPayload = serde_json::from_str(&job.payload)
        .map_err(|err| EngineError::Internal(format!("job payload is unreadable: {err}")))?;
    if let Some(sealed) = &payload.secrets {
        job_secrets::restore(
            core,
            &job.project_id,
            &job.response_id,
            &mut payload.request,
            sealed,
        )?;
    }
    let record = core
        .store
        .get_response(&job.project_id, &job.response_id)
        .await?
        .ok_or_else(|| EngineError::Internal("the job's response is missing".to_owned()))?;
    // Saved connectors are read now: the payload names them, never their credentials.
    let connectors = crate::connector_tools::resolve(
        core,
        &job.project_id,
        payload.request.tools.as_deref().unwrap_or_default(),
    )
    .await?;
    let (plan, _) = plan::plan(
        core,
        &job.project_id,
        payload.request,
        payload.transcript,
        payload.context,
        connectors,
    )?;
    let live = core.live.register(&job.response_id);
    if cancelled {
        live.cancel.cancel();
    }
    let renewal = {
        let core = core.clone();
        let (response_id, cancel) = (job.response_id.clone(), live.cancel.clone());
        tokio::spawn(async move { renew_while_running(&core, response_id, cancel).await })
    };
    let finished = runner::execute(core, plan, record.response, None, live).await;
    renewal.abort();
    tracing::debug!(response_id = %finished.response.id, status = finished.response.status.as_str(), "background run ended");
    Ok(())
}

/// Renews the job's lease until aborted when the run ends; if the lease is lost to another
/// worker, cancels the run (it then ends `cancelled`) and returns.
pub(crate) async fn renew_while_running(
    core: &Core,
    response_id: String,
    cancel: tokio_util::sync::CancellationToken,
) {
    let lease = core.config.lease;
    loop {
        tokio::time::sleep(lease / 3).await;
        let until = core.clock.now_ms() + millis(lease);
        match core
            .store
            .renew_lease(&response_id, &core.worker_id, until)
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
pub(crate) async fn cancel_queued(core: &Arc<Core>, id: &str) -> Result<(), EngineError> {
    let lease_until = core.clock.now_ms() + millis(core.config.lease);
    if let Some(job) = core
        .store
        .claim_queued_job(id, &core.worker_id, lease_until)
        .await?
    {
        let run_core = core.clone();
        core.jobs.spawn(async move {
            let claimed = ClaimedJob {
                job,
                previous_state: JobState::Queued,
            };
            run_job(&run_core, claimed, true).await;
        });
    }
    Ok(())
}
