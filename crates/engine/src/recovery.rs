//! Crash recovery: runs a previous process left unfinished are ended `failed`, and so is a run
//! that cannot be run at all. Ending a run no process executes stores its final response, its
//! terminal event and the removal of its job row in one transaction, exactly as a run that
//! ends normally does.

use protocol::events::EventData;
use protocol::response::ResponseStatus;

use crate::code::Code;
use crate::core::Core;
use crate::error::{EngineError, RunFailure};
use crate::events;
use crate::run::terminal_event;

/// The error of a run whose process stopped before it ended.
pub(crate) const LOST_RUN: &str =
    "the server stopped while this run was in progress; start it again";

/// Ends runs left unfinished by a previous process. Call once at start-up, before serving and
/// before the workers start.
pub(crate) async fn recover(core: &Core) -> Result<usize, EngineError> {
    let orphans = core.store.orphaned_responses().await?;
    for (project_id, id) in &orphans {
        end_stored(
            core,
            project_id,
            id,
            RunFailure::new(Code::RunLost, LOST_RUN),
        )
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

/// Ends a run that no process is executing with `failure`: its final status, and the terminal
/// event appended to its log, so pollers and resumers see an end.
pub(crate) async fn end_stored(
    core: &Core,
    project_id: &str,
    id: &str,
    failure: RunFailure,
) -> Result<(), EngineError> {
    let store = &core.store;
    let Some(mut record) = store.get_response(project_id, id).await? else {
        store.delete_job(id).await?;
        return Ok(());
    };
    if record.response.status.is_terminal() {
        store.delete_job(id).await?;
        return Ok(());
    }
    let mut records = Vec::new();
    let next = match store.events_after(id, None).await?.last() {
        Some(last) => last.sequence_number + 1,
        // Nothing of the run reached its log (queued, or stopped before its first flush): the
        // log still starts with `response.created`, as every stream does (a resuming client's
        // SDK refuses a stream that does not).
        None => {
            records.push(events::record(
                0,
                EventData::ResponseCreated {
                    response: Box::new(record.response.clone()),
                },
            ));
            1
        }
    };
    record.response.status = ResponseStatus::Failed;
    record.response.completed_at = Some(core.clock.now_secs());
    record.response.error = Some(failure.info());
    records.push(events::record(
        next,
        terminal_event(record.response.clone()),
    ));
    store.end_run(&record, &records).await?;
    Ok(())
}
