//! The engine's front door: start a run, cancel it, resume its stream; the background workers'
//! lifecycle. Reads of stored objects are in `queries.rs`, keys in `keys.rs`.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use protocol::input::InputItem;
use protocol::request::{CreateRequest, Tool};
use protocol::response::{CancelAck, Response, ResponseStatus};
use tokio::sync::watch;

use crate::config::EngineConfig;
use crate::core::{Core, Ports};
use crate::error::EngineError;
use crate::events::EventLog;
use crate::live::{InitialRow, LiveRun};
use crate::metrics::MetricsSnapshot;
use crate::model::ModelRouter;
use crate::plan::{self, Continuation, JobPayload, RunPlan};
use crate::presets::apply_preset;
use crate::run::Finished;
use crate::runner::InlineRun;
use crate::store::{JobRecord, JobState, ResponseRecord};
use crate::tools::ConnectorServer;
use crate::{connector_tools, job_secrets, jobs, recovery, replicas, response, retention, runner};

/// How long a cancel waits for the run to stop before it answers `cancelling`.
pub const CANCEL_WAIT: Duration = Duration::from_secs(3);
/// How often a waiting cancel looks at the run's status.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// The cancel answer: the response object with its `response_id`.
fn cancel_answer(response: Response) -> CancelAck {
    CancelAck {
        response_id: response.id.clone(),
        response,
    }
}

/// A run's first stored record: its initial response, with no transcript yet (an unfinished
/// response cannot be continued; the end writes it).
fn initial_record(
    id: &str,
    project_id: String,
    conversation_id: Option<String>,
    response: Response,
    response_json: Option<Arc<str>>,
) -> Box<ResponseRecord> {
    Box::new(ResponseRecord {
        id: id.to_owned(),
        project_id,
        created_at: response.created_at,
        visible: response.store,
        response,
        transcript: Vec::new(),
        conversation_id,
        items: Vec::new(),
        append_to: None,
        turns: Vec::new(),
        response_json,
        transcript_prefix: None,
    })
}

/// Queues a background run: its record (what its poller and its worker read) and its queued
/// job, in one transaction, so neither is ever stored without the other; then wakes a worker.
async fn start_background(
    core: &Arc<Core>,
    project_id: &str,
    id: String,
    live: LiveRun,
    started: Box<Starting>,
    initial_json: Option<Arc<str>>,
) -> Result<RunHandle, EngineError> {
    let Starting {
        plan,
        response,
        context,
        secrets,
    } = *started;
    let payload = match serde_json::to_string(&JobPayload {
        request: plan.request,
        transcript: plan.transcript,
        context,
        secrets,
    }) {
        Ok(payload) => payload,
        Err(err) => {
            core.live.remove(&id);
            return Err(EngineError::Internal(format!("job payload: {err}")));
        }
    };
    let job = JobRecord {
        response_id: id.clone(),
        project_id: project_id.to_owned(),
        payload,
        state: JobState::Queued,
        lease_owner: None,
        lease_until_ms: 0,
        created_at_ms: core.clock.now_ms(),
    };
    let record = initial_record(
        &id,
        plan.project_id,
        plan.conversation,
        response,
        initial_json,
    );
    if let Err(err) = core.store.start_run(&record, &job).await {
        core.live.remove(&id);
        return Err(err.into());
    }
    core.job_ready.notify_one();
    Ok(RunHandle {
        id,
        initial: record.response,
        log: live.log,
        done: None,
    })
}

/// Runs agent requests. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    pub(crate) core: Arc<Core>,
}

/// A boxed stream of serialized wire events.
pub type EventStream = Pin<Box<dyn Stream<Item = Arc<str>> + Send>>;

/// A started run: its id, its events and (foreground runs) its final response.
pub struct RunHandle {
    pub id: String,
    /// The snapshot at start (status `in_progress`, or `queued` for background runs).
    pub initial: Response,
    log: Arc<EventLog>,
    /// `None` for background runs, which a worker executes.
    done: Option<Done>,
}

/// How a foreground run's end reaches its handle.
enum Done {
    /// The run is a task of its own ([`Engine::start`]): its end is sent here.
    Spawned(watch::Receiver<Option<Arc<Finished>>>),
    /// The run is polled by whoever awaits [`RunHandle::finish`] ([`Engine::start_inline`]);
    /// spawned if the handle or that future is dropped first.
    Inline(InlineRun),
}

impl RunHandle {
    /// How many times the run took its event log's lock to append events: a burst's events
    /// are appended under one hold ([`EventLog::append_holds`]). A measure for tests and
    /// benchmarks.
    pub fn append_holds(&self) -> usize {
        self.log.append_holds()
    }

    /// Every event of the run from the first, as lines of JSON, ending after the terminal event.
    /// (A run from [`Engine::start_inline`] makes progress only while [`RunHandle::finish`] is
    /// awaited or once the handle is dropped.)
    pub fn events(&self) -> impl futures::Stream<Item = Arc<str>> + Send + 'static {
        self.log.follow(0)
    }

    /// Waits for a foreground run to end and returns how it ended. A run from
    /// [`Engine::start_inline`] is driven by this future; dropping it before the end leaves
    /// the rest of the run to a task of its own.
    pub async fn finish(self) -> Option<Arc<Finished>> {
        match self.done? {
            Done::Spawned(mut done) => match done.wait_for(Option::is_some).await {
                Ok(value) => value.clone(),
                Err(_) => None,
            },
            Done::Inline(run) => run.await.map(Arc::new),
        }
    }
}

/// A run being started, from its plan on: one allocation, so [`Engine::start`]'s future
/// holds a pointer across its awaits rather than the plan and the response.
struct Starting {
    plan: RunPlan,
    response: Response,
    /// What the run continues (a background run's job payload carries it).
    context: Continuation,
    /// A background run's sealed MCP credentials.
    secrets: Option<String>,
}

impl Starting {
    /// Plans the run and makes its initial response object.
    fn new(
        core: &Core,
        project_id: &str,
        request: Box<CreateRequest>,
        transcript: Vec<InputItem>,
        context: Continuation,
        connectors: BTreeMap<usize, ConnectorServer>,
    ) -> Result<Box<Starting>, EngineError> {
        let background = request.background.unwrap_or(false);
        let (plan, model_id) = plan::plan(
            core,
            project_id,
            *request,
            transcript,
            context.clone(),
            connectors,
        )?;
        let response =
            response::initial(&plan.request, &model_id, background, core.clock.now_secs());
        Ok(Box::new(Starting {
            plan,
            response,
            context,
            secrets: None,
        }))
    }
}

impl Engine {
    pub fn new(ports: Ports, config: EngineConfig) -> Engine {
        Engine {
            core: Arc::new(Core::new(ports, config)),
        }
    }

    pub fn router(&self) -> &Arc<dyn ModelRouter> {
        &self.core.router
    }

    /// Validates the request, resolves its transcript and model, and starts the run: at once
    /// (foreground) or as a job for the worker pool (`background: true`).
    ///
    /// Errors here are request errors (the run never started); errors after this point end
    /// the run with status `failed`.
    ///
    /// The request is boxed before the future exists, and the plan and the response live in
    /// one allocation from the plan on ([`Starting`]): the future holds pointers across its
    /// awaits, not the request, the plan, the response and the record side by side. A server
    /// boxes its handler's future (axum does), which holds this one inline, so its size is
    /// copied once per request (it was ~10 KB).
    pub fn start<'a>(
        &'a self,
        project_id: &'a str,
        request: CreateRequest,
    ) -> impl Future<Output = Result<RunHandle, EngineError>> + Send + 'a {
        self.start_boxed(project_id, Box::new(request), false)
    }

    /// As [`Engine::start`], but a foreground run is not spawned: it runs in the task that
    /// awaits [`RunHandle::finish`], for a caller that only waits for the run's end (a plain
    /// request). That saves the spawn and the hand-off of the end from the run's task to the
    /// waiting one (at low load, a wake-up of another worker thread). Nothing else differs: the
    /// run is in the live map (cancel, resume, lookups), counted in the metrics and stored as
    /// a spawned one, and if the handle or `finish`'s future is dropped before the run ends
    /// (the client went away), the rest of the run is spawned then and still ends and is
    /// stored. Background runs are queued as by [`Engine::start`].
    pub fn start_inline<'a>(
        &'a self,
        project_id: &'a str,
        request: CreateRequest,
    ) -> impl Future<Output = Result<RunHandle, EngineError>> + Send + 'a {
        self.start_boxed(project_id, Box::new(request), true)
    }

    async fn start_boxed(
        &self,
        project_id: &str,
        mut request: Box<CreateRequest>,
        inline: bool,
    ) -> Result<RunHandle, EngineError> {
        let core = &self.core;
        request.validate()?;
        // What a preset adds (model, tools, limits) is checked with the rest of the request.
        if apply_preset(&mut request, &core.config.presets)? {
            request.validate()?;
        }
        let background = request.background.unwrap_or(false);
        if background {
            let queued = core.store.count_queued(project_id).await?;
            if queued >= core.config.max_queued_per_project {
                return Err(EngineError::QueueFull(format!(
                    "this project already has {queued} background runs waiting (limit {}); retry when some have started",
                    core.config.max_queued_per_project
                )));
            }
        }
        let (transcript, context) = plan::transcript_for(core, project_id, &request).await?;
        let tools = request.tools.as_deref().unwrap_or_default();
        // Most requests name no connector: its lookup's future is only made for one that does.
        let connectors = if tools.iter().any(|tool| matches!(tool, Tool::Connector(_))) {
            Box::pin(connector_tools::resolve(core, project_id, tools)).await?
        } else {
            BTreeMap::new()
        };
        connector_tools::fill_labels(request.tools.as_mut(), &connectors);
        crate::tool_checks::check(
            core,
            project_id,
            request.tools.as_deref().unwrap_or_default(),
        )
        .await?;
        let mut started =
            Starting::new(core, project_id, request, transcript, context, connectors)?;
        let id = started.response.id.clone();
        // A background run's credentials are sealed before anything is stored: a request that
        // cannot have them sealed is refused, not half stored.
        if background {
            started.secrets = job_secrets::take(core, project_id, &id, &mut started.plan.request)?;
        }
        let live = core.live.register(&id);
        // Serialized once for the stored row and the run's first two events.
        let initial_json: Option<Arc<str>> = started.response.to_json().ok().map(Arc::from);
        if background {
            // Boxed: the background start's future is not held inline by every start's.
            return Box::pin(start_background(
                core,
                project_id,
                id,
                live,
                started,
                initial_json,
            ))
            .await;
        }
        let shared = core.config.shared_store;
        match &initial_json {
            // A foreground run on a store no other replica reads: its row is written by its
            // first flush or its end (`run/driver.rs`), so a run that ends before its first
            // flush is stored in one transaction, and none waits for a write before the model
            // is asked. Until then lookups by id answer it from the live map (`Core::response`).
            Some(json) if !shared => {
                live.unstored.set(InitialRow {
                    project_id: started.plan.project_id.clone(),
                    visible: started.response.store,
                    created_at: started.response.created_at,
                    conversation_id: started.plan.conversation.clone(),
                    response_json: Arc::clone(json),
                });
            }
            // Another replica must see a run in progress: the record exists from the start,
            // and with replicas it is stored with the run's job row leased to this process, in
            // one transaction, so no replica ever sees the run in progress without an owner.
            _ => {
                let record = initial_record(
                    &id,
                    started.plan.project_id.clone(),
                    started.plan.conversation.clone(),
                    started.response,
                    initial_json.clone(),
                );
                let stored = if shared {
                    let job = replicas::foreground_job(core, project_id, &id);
                    core.store.start_run(&record, &job).await
                } else {
                    core.store.put_response(&record).await
                };
                // The response the record held (moved in and out, not copied).
                started.response = record.response;
                if let Err(err) = stored {
                    core.live.remove(&id);
                    return Err(err.into());
                }
            }
        }
        // With replicas, the foreground run's lease is renewed while it runs.
        let heartbeat = shared.then(|| replicas::heartbeat(core, &id, live.cancel.clone()));
        let Starting { plan, response, .. } = *started;
        let initial = response.clone();
        let log = live.log.clone();
        let run = runner::execute(core, plan, response, initial_json, live);
        // Each branch builds its own future around the run (no wrapper future moved into the
        // spawn): a spawned run's future is then built in place, not copied (measured: a shared
        // wrapper cost a streamed request ~100 k instructions of `memcpy` in `tokio::spawn`).
        let done = if inline {
            Done::Inline(InlineRun::new(async move {
                let finished = run.await;
                if let Some(heartbeat) = heartbeat {
                    heartbeat.abort();
                }
                finished
            }))
        } else {
            let (done_tx, done_rx) = watch::channel(None);
            tokio::spawn(async move {
                let finished = run.await;
                if let Some(heartbeat) = heartbeat {
                    heartbeat.abort();
                }
                let _ = done_tx.send(Some(Arc::new(finished)));
            });
            Done::Spawned(done_rx)
        };
        Ok(RunHandle {
            id,
            initial,
            log,
            done: Some(done),
        })
    }

    /// Stops a run and answers the response object (spec decision 8): the run is asked to stop,
    /// and the answer waits up to [`CANCEL_WAIT`] for it to end, so its status is `cancelled`
    /// whenever it can be and `cancelling` only while it is still stopping. Cancelling a
    /// cancelled response answers it again; other ended runs are 400.
    pub async fn cancel(&self, project_id: &str, id: &str) -> Result<CancelAck, EngineError> {
        let store = &self.core.store;
        let record = self
            .core
            .response(project_id, id)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("response \"{id}\" not found")))?;
        match record.response.status {
            ResponseStatus::Cancelled => return Ok(cancel_answer(record.response)),
            status if status.is_terminal() => {
                return Err(EngineError::NotCancellable(format!(
                    "response \"{id}\" has already ended with status {} and cannot be cancelled",
                    status.as_str()
                )));
            }
            _ => {}
        }
        let live = self.core.live.get(id);
        if let Some(live) = &live {
            live.cancel.cancel();
        }
        // A job still waiting for a worker is taken out of the queue and ended now.
        jobs::cancel_queued(&self.core, id).await?;
        if live.is_none() && self.core.config.shared_store {
            // Executing on another replica (claimed there before the line above could take
            // it): its owner polls for this mark.
            store.request_cancel(id).await?;
        }
        let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
        let mut response = record.response;
        loop {
            if let Some(current) = self.core.response(project_id, id).await? {
                response = current.response;
            }
            if response.status.is_terminal() || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(CANCEL_POLL).await;
        }
        if !response.status.is_terminal() {
            response.status = ResponseStatus::Cancelling;
        }
        Ok(cancel_answer(response))
    }

    /// Replays a run's events after `starting_after` (all when `None`), then follows the run
    /// until its terminal event if it is still going.
    pub async fn resume(
        &self,
        project_id: &str,
        id: &str,
        starting_after: Option<u64>,
    ) -> Result<EventStream, EngineError> {
        let store = &self.core.store;
        let status = match self.core.response(project_id, id).await? {
            Some(record) if record.visible => record.response.status,
            _ => {
                return Err(EngineError::NotFound(format!(
                    "response \"{id}\" not found"
                )));
            }
        };
        let from = starting_after.map_or(0, |n| n.saturating_add(1));
        let bad_cursor = |last: Option<u64>| {
            EngineError::invalid(
                "starting_after",
                match last {
                    Some(last) => format!(
                        "starting_after {} is beyond the last event ({last}) of response \"{id}\"",
                        starting_after.unwrap_or_default()
                    ),
                    None => format!("response \"{id}\" has no events to resume yet"),
                },
            )
        };
        if let Some(live) = self.core.live.get(id) {
            let len = live.log.len() as u64;
            if from > len {
                return Err(bad_cursor(len.checked_sub(1)));
            }
            return Ok(Box::pin(live.log.follow(from as usize)));
        }
        if self.core.config.shared_store && !status.is_terminal() {
            // Another replica executes it: follow the log it flushes (a cursor beyond what is
            // stored yet is waited for, since that replica's stream may be ahead of its log).
            return Ok(Box::pin(replicas::follow_stored(
                self.core.clone(),
                project_id,
                id,
                from,
            )));
        }
        let stored = store.events_after(id, None).await?;
        let Some(last) = stored.last().map(|e| e.sequence_number) else {
            return Err(EngineError::invalid(
                "starting_after",
                format!(
                    "the event log of response \"{id}\" has expired or was never kept; retrieve the response instead"
                ),
            ));
        };
        if from > last + 1 {
            return Err(bad_cursor(Some(last)));
        }
        let lines: Vec<Arc<str>> = stored
            .into_iter()
            .filter(|e| e.sequence_number >= from)
            .map(|e| e.data)
            .collect();
        Ok(Box::pin(futures::stream::iter(lines)))
    }

    /// A snapshot of the run metrics.
    pub async fn metrics(&self) -> Result<MetricsSnapshot, EngineError> {
        let queued = self.core.store.count_all_queued().await?;
        Ok(self.core.metrics.snapshot(queued))
    }

    /// Ends runs left unfinished by a previous process. Call once at start-up, before serving
    /// and before [`Engine::spawn_workers`].
    pub async fn recover(&self) -> Result<usize, EngineError> {
        if self.core.config.shared_store {
            // Other replicas' runs are not ours to end: runs whose owner died are ended after
            // their lease by the workers, and runs without an owner by the replicas' sweep.
            return Ok(0);
        }
        recovery::recover(&self.core).await
    }

    /// Starts the worker pool and the retention sweeper.
    pub fn spawn_workers(&self) {
        jobs::spawn_workers(&self.core);
        if self.core.config.shared_store {
            replicas::spawn(&self.core);
        }
        retention::spawn_sweeper(&self.core);
    }

    /// Stops claiming jobs and waits up to `grace` for running background runs to end. Runs
    /// still going then keep their job rows and are ended `failed` by the next start.
    pub async fn shutdown(&self, grace: Duration) {
        jobs::shutdown(&self.core, grace).await;
    }

    /// Purges shared files older than their retention now (also done hourly by the sweeper).
    pub async fn purge_expired_files(&self) -> Result<u64, EngineError> {
        retention::purge_files(&self.core).await
    }

    /// Purges event logs older than the retention now (also done hourly by the sweeper).
    pub async fn purge_expired_events(&self) -> Result<u64, EngineError> {
        retention::purge_events(&self.core).await
    }
}
