//! Several processes (replicas) serving one shared store (`EngineConfig::shared_store`).
//!
//! - Ownership: a foreground run holds a job row too, in state `running`, leased to this
//!   process and renewed while it runs (the heartbeat), exactly as a background run's claim.
//!   When a replica dies, its runs' leases expire and another replica's workers claim the rows
//!   and end those runs `failed` (`jobs.rs`), so nothing waits for the dead replica to return.
//! - Start-up: the "end every unfinished run" rule of a single process would end other
//!   replicas' runs. Instead a sweep ends runs that are in progress but hold no job row (a run
//!   of a version that stored the two in separate writes and stopped between them, or of a
//!   version before replicas) only when it sees the same run twice, one lease apart.
//! - Cancel: a cancel for a run executing on another replica marks its job row
//!   ([`crate::store::JobStore::request_cancel`]); each replica polls its own marked rows every
//!   [`CANCEL_POLL`] and cancels the runs, so a cancel reaches any replica within a second.
//! - Resume: a run executing elsewhere is followed through its stored event log, which the
//!   executing replica flushes as the run goes on ([`follow_stored`]).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};

use crate::clock::millis;
use crate::code::Code;
use crate::core::Core;
use crate::error::RunFailure;
use crate::recovery::{self, LOST_RUN};
use crate::store::{JobRecord, JobState};

/// How often a replica looks for cancels of its runs received by other replicas.
const CANCEL_POLL: Duration = Duration::from_millis(250);

/// How often a resume following a run executing elsewhere reads its stored log.
const FOLLOW_POLL: Duration = Duration::from_millis(100);

/// Starts the cancel poll and the orphan sweep of this replica.
pub(crate) fn spawn(core: &Arc<Core>) {
    let poll = core.clone();
    tokio::spawn(async move { cancel_poll(&poll).await });
    let sweep = core.clone();
    tokio::spawn(async move { orphan_sweep(&sweep).await });
}

/// A foreground run's job row: leased to this process, stored with the run's first record
/// ([`crate::store::ResponseStore::start_run`]) and removed by the run's end, in the
/// transaction that stores its final response.
pub(crate) fn foreground_job(core: &Core, project_id: &str, id: &str) -> JobRecord {
    let now = core.clock.now_ms();
    JobRecord {
        response_id: id.to_owned(),
        project_id: project_id.to_owned(),
        // Never executed from the row: a claim after the lease expired ends the run.
        payload: "{}".to_owned(),
        state: JobState::Running,
        lease_owner: Some(core.worker_id.clone()),
        lease_until_ms: now + millis(core.config.lease),
        created_at_ms: now,
    }
}

/// Renews a foreground run's lease until the returned task is aborted (when the run has
/// ended).
pub(crate) fn heartbeat(
    core: &Arc<Core>,
    id: &str,
    cancel: tokio_util::sync::CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let core = core.clone();
    let id = id.to_owned();
    tokio::spawn(async move {
        crate::jobs::renew_while_running(&core, id, cancel).await;
    })
}

async fn cancel_poll(core: &Core) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(CANCEL_POLL) => {}
            () = core.stopping.cancelled() => return,
        }
        match core.store.cancel_requests(&core.worker_id).await {
            Ok(ids) => {
                for id in ids {
                    if let Some(live) = core.live.get(&id) {
                        live.cancel.cancel();
                    }
                }
            }
            Err(err) => tracing::warn!(error = %err, "reading cancel requests failed"),
        }
    }
}

async fn orphan_sweep(core: &Core) {
    let mut seen: HashSet<(String, String)> = HashSet::new();
    loop {
        tokio::select! {
            () = tokio::time::sleep(core.config.lease) => {}
            () = core.stopping.cancelled() => return,
        }
        let orphans = match core.store.orphaned_responses().await {
            Ok(orphans) => orphans,
            Err(err) => {
                tracing::warn!(error = %err, "looking for orphaned runs failed");
                continue;
            }
        };
        let mut now_seen = HashSet::new();
        for orphan in orphans {
            if seen.contains(&orphan) {
                let (project_id, id) = &orphan;
                tracing::warn!(response_id = %id, "ending a run no replica holds");
                if let Err(err) = recovery::end_stored(
                    core,
                    project_id,
                    id,
                    RunFailure::new(Code::RunLost, LOST_RUN),
                )
                .await
                {
                    tracing::error!(response_id = %id, error = %err, "ending an orphaned run failed");
                }
            } else {
                now_seen.insert(orphan);
            }
        }
        seen = now_seen;
    }
}

/// Where a follow of a stored log is.
struct Follow {
    core: Arc<Core>,
    project_id: String,
    id: String,
    /// The next sequence number to emit.
    next: u64,
    first: bool,
    done: bool,
}

/// The stored events of run `id` from sequence number `from`, then those the replica executing
/// it flushes, until the run's end: its final status and its last events are stored in one
/// transaction, so once the status read before a read of the log is terminal, that read holds
/// every remaining event. Numbers stay contiguous: a gap (which a log flushed in order cannot
/// have) is waited out, never skipped. A store failure ends the stream (the client resumes).
pub(crate) fn follow_stored(
    core: Arc<Core>,
    project_id: &str,
    id: &str,
    from: u64,
) -> impl Stream<Item = Arc<str>> + Send + 'static {
    let state = Follow {
        core,
        project_id: project_id.to_owned(),
        id: id.to_owned(),
        next: from,
        first: true,
        done: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if state.done {
                return None;
            }
            if !state.first {
                tokio::time::sleep(FOLLOW_POLL).await;
            }
            state.first = false;
            let store = &state.core.store;
            let ended = match store.get_response(&state.project_id, &state.id).await {
                Ok(Some(record)) => record.response.status.is_terminal(),
                // Deleted meanwhile: nothing more will come.
                Ok(None) => true,
                Err(err) => {
                    tracing::warn!(response_id = %state.id, error = %err, "following a run failed");
                    return None;
                }
            };
            let after = state.next.checked_sub(1);
            let events = match store.events_after(&state.id, after).await {
                Ok(events) => events,
                Err(err) => {
                    tracing::warn!(response_id = %state.id, error = %err, "following a run failed");
                    return None;
                }
            };
            let mut lines = Vec::new();
            for event in events {
                if event.sequence_number != state.next {
                    break;
                }
                state.next += 1;
                lines.push(event.data);
            }
            state.done = ended;
            if !lines.is_empty() {
                return Some((futures::stream::iter(lines), state));
            }
        }
    })
    .flatten()
}
