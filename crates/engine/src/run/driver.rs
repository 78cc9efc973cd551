//! The driver: carries out the machine's effects through the ports and feeds back what came of
//! them, selecting on the run's cancellation token wherever it waits.
//!
//! Wire events go to the run's [`EventLog`] as they are emitted, a burst's under one hold of its
//! lock (a turn's when the upstream has nothing more ready, or every [`MAX_HELD_EVENTS`]), and its
//! followers are woken once per burst: before every effect that may wait (a turn's next upstream
//! event, a tool, a store write, the end), so the events that come together leave together and none
//! waits for a later one (`events.rs`). The events of a run's end that wait only for its last store
//! write leave with the terminal event, after that write (`Driver::may_wait`). A turn takes the
//! upstream events that are ready without waiting (at most [`MAX_READY_RUN`] in a row) before it
//! wakes the followers and waits. The log reaches the store at step boundaries, every
//! [`FLUSH_EVERY`] during a long turn, and at the end, in one transaction with the final response.
//! A step boundary that ends the run (with no MCP session left to close first) leaves its events to
//! that last transaction instead of a write of their own on the way to the answer.
//!
//! A foreground run on a store no other replica shares starts with its response row not
//! written ([`UnstoredRow`]): the first write of the run, a flush or the end, writes it with the
//! events, in one transaction. A run that ends before its first flush is stored in one
//! transaction; if that write fails, nothing of the run is stored, and the run fails visibly
//! instead of answering a response no one can retrieve (see [`Driver::end`]).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt as _, StreamExt as _};
use tokio_util::sync::CancellationToken;

use crate::code::Code;
use crate::error::{EngineError, RunFailure};
use crate::events::{EventLog, MAX_HELD_EVENTS};
use crate::hosted::CallContext;
use crate::live::UnstoredRow;
use crate::mcp::{McpCallResult, McpConnector, McpError, McpSession, McpToolInfo};
use crate::model::{ModelClient, ModelRequest};
use crate::store::{EventRecord, ResponseRecord, Store, StoreError};

use super::effects::{
    DiscoverJob, Effect, Ending, Finished, HostedJob, Input, McpJob, response_record,
};
use super::files::RunFiles;
use super::finish::terminal_event;
use super::scrub::{ScrubEvents, ScrubFiles, Scrubber};
use super::state::Machine;

/// How often a turn in progress writes its new events to the store: a crash loses at most this
/// much of the event log.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_millis(500);

/// Most upstream events a turn takes in a row without waiting (and without looking at the
/// cancellation or the flush timer), however fast they come.
const MAX_READY_RUN: usize = 256;

/// The first capacity of the buffer event lines are written in: a delta's line and a short
/// answer's closing events fit without growing it.
const LINE_CAPACITY: usize = 512;

/// MCP calls of one turn that run at once.
const MAX_PARALLEL_MCP_CALLS: usize = 8;

/// Whether the run ends with the effects already queued, nothing waited for before: then the
/// end stores every event not yet stored, with the final response.
fn ends_next(queue: &VecDeque<Effect>) -> bool {
    for effect in queue {
        match effect {
            Effect::Emit(_) | Effect::TextDelta(_) | Effect::Flush => {}
            Effect::Finish(_) => return true,
            _ => return false,
        }
    }
    false
}

/// Lets the tasks that are runnable on this worker go first, once: the task is woken at once
/// and queued behind them (`tokio::task::yield_now` would wait for the worker to run out of
/// work).
async fn yield_once() {
    let mut yielded = false;
    futures::future::poll_fn(|cx| {
        if yielded {
            return std::task::Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await;
}

/// One run's driver.
pub(crate) struct Driver {
    machine: Machine,
    log: Arc<EventLog>,
    store: Arc<dyn Store>,
    mcp: Arc<dyn McpConnector>,
    /// Set by a cancel request: the run stops wherever it waits.
    cancel: CancellationToken,
    /// Where built-in tools share files.
    files: RunFiles,
    /// One MCP session per server of the registry (by index), opened at discovery.
    sessions: Vec<Option<Arc<dyn McpSession>>>,
    /// Events already written to the store.
    flushed: usize,
    /// The run's response row while the store does not hold it (shared with the live map).
    unstored: Arc<UnstoredRow>,
    /// The buffer each event line is written in before the log copies it (`EventLog::push_in`).
    line: String,
}

impl Driver {
    pub(crate) fn new(
        machine: Machine,
        log: Arc<EventLog>,
        store: Arc<dyn Store>,
        mcp: Arc<dyn McpConnector>,
        cancel: CancellationToken,
        unstored: Arc<UnstoredRow>,
        clock: Arc<dyn crate::clock::Clock>,
    ) -> Driver {
        let files = RunFiles {
            store: store.clone(),
            clock,
            project_id: machine.project_id().to_owned(),
            response_id: machine.response_id().to_owned(),
        };
        Driver {
            machine,
            log,
            store,
            mcp,
            cancel,
            files,
            sessions: Vec::new(),
            flushed: 0,
            unstored,
            line: String::with_capacity(LINE_CAPACITY),
        }
    }

    /// Runs to the end, stores the result and returns how the run ended.
    pub(crate) async fn run(mut self: Box<Self>) -> Finished {
        let mut queue: VecDeque<Effect> = VecDeque::with_capacity(16);
        self.machine.on(Input::Start, &mut queue);
        loop {
            let Some(effect) = queue.pop_front() else {
                // The machine always ends with `Finish`; never leave a run open if it did not.
                self.machine.on(Input::Cancelled, &mut queue);
                continue;
            };
            if self.may_wait(&effect, &queue) {
                // The followers get the events so far first.
                self.log.announce();
            }
            let input = match effect {
                Effect::Emit(_) | Effect::TextDelta(_) | Effect::EmitResponse { .. } => {
                    self.append_queued(effect, &mut queue);
                    continue;
                }
                Effect::Flush => {
                    if !self.end_takes_over(&queue) {
                        self.flush().await;
                    }
                    continue;
                }
                Effect::Finish(ending) => return self.end(ending).await,
                Effect::Discover(jobs) => self.discover(jobs).await,
                Effect::Refresh => self.refresh().await,
                Effect::Ask { client, request } => self.ask(client, *request, &mut queue).await,
                Effect::CallMcp(jobs) => self.call_mcp(jobs).await,
                Effect::CallHosted(job) => self.call_hosted(job).await,
            };
            self.machine.on(input, &mut queue);
        }
    }

    /// Appends `first`, a wire event, and the wire events queued right after it to the log
    /// under one hold of its lock (none of them waits: [`Driver::may_wait`]).
    fn append_queued(&mut self, first: Effect, queue: &mut VecDeque<Effect>) {
        let mut log = self.log.appender();
        let mut next = Some(first);
        while let Some(effect) = next {
            match effect {
                Effect::Emit(data) => log.push_in(*data, &mut self.line),
                Effect::TextDelta(delta) => delta.push_to(&mut log, &mut self.line),
                Effect::EmitResponse {
                    kind,
                    response_json,
                } => {
                    let record = response_record(log.next_sequence_number(), kind, &response_json);
                    log.append(&record);
                }
                other => {
                    queue.push_front(other);
                    return;
                }
            }
            next = queue.pop_front();
        }
    }

    /// Appends the wire events of a burst of upstream events (`effects`, drained) to the log
    /// under one hold of its lock, and queues the other effects, in order; with `announce`,
    /// the readers are woken for them (and any held before) as [`EventLog::announce`] would.
    fn append_burst(
        &mut self,
        effects: &mut Vec<Effect>,
        queue: &mut VecDeque<Effect>,
        announce: bool,
    ) {
        if effects.is_empty() && !announce {
            return;
        }
        let mut log = self.log.appender();
        for effect in effects.drain(..) {
            match effect {
                Effect::Emit(data) => log.push_in(*data, &mut self.line),
                Effect::TextDelta(delta) => delta.push_to(&mut log, &mut self.line),
                other => queue.push_back(other),
            }
        }
        if announce {
            log.announce();
        }
    }

    /// Whether `effect` (the queue's next effects being `queue`) may wait for anything: then
    /// the followers are woken for the events appended so far before it runs. The events that
    /// only wait for the run's last store write (a flush the end takes over, and the end with
    /// no MCP session to close) are not announced: they are published with the terminal event,
    /// right after that write, so the followers take the step's last events, its closing
    /// events and the terminal event in one wake (one socket write), not two.
    fn may_wait(&self, effect: &Effect, queue: &VecDeque<Effect>) -> bool {
        match effect {
            Effect::Emit(_) | Effect::TextDelta(_) | Effect::EmitResponse { .. } => false,
            Effect::Flush => !self.end_takes_over(queue),
            Effect::Finish(_) => !self.no_sessions(),
            _ => true,
        }
    }

    /// Whether a flush now is left to the end, which stores every event not yet stored with
    /// the final response: the run ends with the effects queued, and no MCP session is left to
    /// close first (closing may take a while: store first then).
    fn end_takes_over(&self, queue: &VecDeque<Effect>) -> bool {
        self.no_sessions() && ends_next(queue)
    }

    fn no_sessions(&self) -> bool {
        self.sessions.iter().all(Option::is_none)
    }

    /// Writes the events not yet stored (one store write, awaited); the run's first write also
    /// writes its in-progress response row, in the same transaction.
    async fn flush(&mut self) {
        let records = self.log.records_from(self.flushed);
        if let Some(row) = self.unstored.get() {
            // `end_run` with the record `Engine::start` wrote before: the row and the events so
            // far (no items, no conversation, no job row to remove).
            let id = self.machine.response_id();
            let written = match row.record(id) {
                Ok(record) => self.store.end_run(&record, &records).await,
                Err(err) => Err(err),
            };
            match written {
                Ok(()) => {
                    self.unstored.stored();
                    self.flushed += records.len();
                }
                // Tried again at the next flush, or at the end (which fails the run if it
                // cannot store it either).
                Err(err) => {
                    tracing::error!(response_id = %id, error = %err, "response write failed")
                }
            }
            return;
        }
        if records.is_empty() {
            return;
        }
        match self
            .store
            .append_events(self.machine.response_id(), &records)
            .await
        {
            Ok(()) => self.flushed += records.len(),
            Err(err) => {
                tracing::error!(response_id = %self.machine.response_id(), error = %err, "event log write failed")
            }
        }
    }

    /// Closes the sessions, stores the final response with the rest of the log in one
    /// transaction, then publishes the terminal event: a client that reads the end of a stream
    /// and then retrieves the response sees the final object.
    /// (`ending` stays boxed across the waits: the run's future holds a pointer, not the
    /// record.)
    ///
    /// When this is the run's first write and it fails, nothing of the run is stored: the run
    /// fails, visibly, as a failed write at start made it fail when the row was written there
    /// (a plain request answers the store's HTTP error, a stream ends with `response.failed`),
    /// and the failed response is written once more (a store that failed once may take it).
    async fn end(&mut self, mut ending: Box<Ending>) -> Finished {
        let sessions: Vec<Arc<dyn McpSession>> = self.sessions.drain(..).flatten().collect();
        futures::future::join_all(sessions.iter().map(|s| s.close())).await;
        // The events held since the last wait are published with the terminal event
        // (`may_wait`).
        let mut terminal = ending.terminal.prepare(&self.log);
        let mut events = self.log.records_from(self.flushed);
        events.push(terminal.clone());
        // Nothing reads the record's transcript after this write: the store may keep it.
        if let Err(err) = self
            .store
            .end_run_taking_transcript(&mut ending.record, &events)
            .await
        {
            tracing::error!(response_id = %ending.record.id, error = %err, "final response write failed");
            if self.unstored.is_pending() {
                let failure;
                (terminal, failure) = self
                    .fail_unstored(&mut ending.record, &mut events, err)
                    .await;
                ending.start_error = Some(failure);
            }
        }
        // Stored (or never to be): lookups read the store before the terminal event is out.
        self.unstored.stored();
        self.flushed += events.len();
        // One wake for both.
        self.log.append(&terminal);
        self.log.close();
        let Ending {
            record,
            start_error,
            ..
        } = *ending;
        // The stored record's response, not a copy of it.
        Finished {
            response: record.response,
            start_error,
            response_json: record.response_json,
        }
    }

    /// The run's only write failed: its record becomes `failed` with the store's error (the
    /// public message and code of a failed start write), written once more; returns the new
    /// terminal event (`response.failed`, in place of the last of `events`) and the failure.
    async fn fail_unstored(
        &self,
        record: &mut ResponseRecord,
        events: &mut Vec<EventRecord>,
        err: StoreError,
    ) -> (EventRecord, RunFailure) {
        let failure = RunFailure::new(Code::Internal, EngineError::Store(err).public_message());
        record.response.status = protocol::response::ResponseStatus::Failed;
        record.response.error = Some(failure.info());
        record.response_json = serde_json::to_string(&record.response).ok().map(Arc::from);
        events.pop();
        let terminal = self.log.prepare(terminal_event(record.response.clone()));
        events.push(terminal.clone());
        if let Err(err) = self.store.end_run(record, events).await {
            tracing::error!(response_id = %record.id, error = %err, "failed response write failed");
        }
        (terminal, failure)
    }

    /// Connects to every server at once and lists the tools of those asked.
    async fn discover(&mut self, jobs: Vec<DiscoverJob>) -> Input {
        let count = jobs.iter().map(|j| j.server + 1).max().unwrap_or(0);
        let work = jobs.into_iter().map(|job| {
            let connector = self.mcp.clone();
            let bound = job.timeout;
            let work = async move {
                let session: Arc<dyn McpSession> = Arc::from(match job.oauth {
                    Some(oauth) => {
                        connector
                            .connect_oauth(&job.endpoint, job.transport, oauth)
                            .await?
                    }
                    None => connector.connect_over(&job.endpoint, job.transport).await?,
                });
                let listed = if job.list {
                    match session.list_tools().await {
                        Ok(tools) => Some(tools),
                        Err(err) => {
                            session.close().await;
                            return Err(err);
                        }
                    }
                } else {
                    None
                };
                Ok::<_, McpError>((job.server, session, listed))
            };
            async move {
                match bound {
                    // A saved connector's own bound of connecting and listing.
                    Some(bound) => tokio::time::timeout(bound, work).await.unwrap_or_else(|_| {
                        Err(McpError::Timeout(
                            u64::try_from(bound.as_millis()).unwrap_or(u64::MAX),
                        ))
                    }),
                    None => work.await,
                }
            }
        });
        let results = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Input::Cancelled,
            results = futures::future::join_all(work) => results,
        };
        self.sessions = vec![None; count];
        let answers = results
            .into_iter()
            .map(|result| {
                result.map(|(server, session, listed)| {
                    if let Some(slot) = self.sessions.get_mut(server) {
                        *slot = Some(session);
                    }
                    listed
                })
            })
            .collect();
        Input::Discovered(answers)
    }

    /// Lists again the servers that announced a changed tool list.
    async fn refresh(&mut self) -> Input {
        let mut lists: Vec<(usize, Result<Vec<McpToolInfo>, McpError>)> = Vec::new();
        for (server, session) in self.sessions.iter().enumerate() {
            let Some(session) = session.clone() else {
                continue;
            };
            if !session.tools_changed() {
                continue;
            }
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Input::Cancelled,
                listed = session.list_tools() => lists.push((server, listed)),
            }
        }
        Input::Relisted(lists)
    }

    /// Streams one model turn, feeding every event to the machine as it arrives and flushing
    /// the log regularly. The events that are ready go to the machine one after the other;
    /// their wire events reach the followers together, when the upstream has nothing more
    /// ready (or after [`MAX_READY_RUN`]).
    async fn ask(
        &mut self,
        client: Arc<dyn ModelClient>,
        request: ModelRequest,
        queue: &mut VecDeque<Effect>,
    ) -> Input {
        self.machine.turn_sent();
        let mut stream = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Input::Cancelled,
            started = client.stream(request) => match started {
                Ok(stream) => stream,
                Err(err) => return Input::ModelFailed(err),
            },
        };
        // The first flush one period from now. (`interval`'s first tick is "immediate", but
        // tokio rounds a timer's deadline up to the next millisecond: awaiting it put a wait
        // of up to 1 ms, and a sleep of every thread, in front of every turn.)
        let mut flush =
            tokio::time::interval_at(tokio::time::Instant::now() + FLUSH_EVERY, FLUSH_EVERY);
        flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // One wait for cancellation for the whole turn, not one registered and dropped per
        // event; one buffer for the effects of every event.
        let cancel = self.cancel.clone();
        let cancelled = cancel.cancelled();
        tokio::pin!(cancelled);
        let mut effects = Vec::new();
        // Events taken since the turn last waited, and whether the stream was looked at again
        // after a yield since the last event.
        let mut ready_run = 0;
        let mut looked_again = false;
        loop {
            // An event that is ready now (the rest of a chunk, a chunk already received) is
            // taken without waking the followers; they are woken when the upstream would wait.
            let ready = if ready_run < MAX_READY_RUN {
                stream.next().now_or_never()
            } else {
                None
            };
            let event = match ready {
                Some(event) => {
                    ready_run += 1;
                    looked_again = false;
                    event
                }
                None if ready_run > 0 && ready_run < MAX_READY_RUN && !looked_again => {
                    // The upstream connection's task (reqwest's) hands over one chunk at a
                    // time and may hold the next already (read in the same socket read), and a
                    // socket read in this task (the in-task client) may find more once the
                    // tasks already runnable went first: let them run once before the burst is
                    // taken as over. (Without the yield for the in-task client, measured: no
                    // gain at one request in flight, ~5% fewer non-streamed requests per second
                    // at 512; docs/benchmarks.md, "Issue 18, fifteenth pass".)
                    looked_again = true;
                    yield_once().await;
                    continue;
                }
                None => {
                    ready_run = 0;
                    self.append_burst(&mut effects, queue, true);
                    let event = tokio::select! {
                        () = &mut cancelled => return Input::Cancelled,
                        _ = flush.tick() => {
                            self.flush().await;
                            continue;
                        }
                        event = stream.next() => event,
                    };
                    ready_run = 1;
                    looked_again = false;
                    event
                }
            };
            match event {
                None => {
                    self.append_burst(&mut effects, queue, false);
                    return Input::ModelDone;
                }
                Some(Err(err)) => {
                    self.append_burst(&mut effects, queue, false);
                    return Input::ModelFailed(err);
                }
                Some(Ok(event)) => self.machine.on_model_into(event, &mut effects),
            }
            // The burst's wire events go to the log together when it ends (above), and at the
            // latest every `MAX_HELD_EVENTS` (the bound readers are woken at).
            if effects.len() >= MAX_HELD_EVENTS {
                self.append_burst(&mut effects, queue, false);
            }
        }
    }

    /// Runs MCP calls at once (bounded); results come back in the order asked.
    async fn call_mcp(&mut self, jobs: Vec<McpJob>) -> Input {
        let work: Vec<_> = jobs
            .into_iter()
            .map(|job| {
                let session = self.sessions.get(job.server).cloned().flatten();
                async move {
                    let Some(session) = session else {
                        return Err("the MCP session is closed".to_owned());
                    };
                    let call = session.call_tool(&job.tool, job.arguments?);
                    let result = match &job.bound {
                        // A saved connector's `timeout_s` bounds each call too.
                        Some(bound) => match tokio::time::timeout(bound.timeout, call).await {
                            Ok(result) => result,
                            Err(_) => {
                                return Err(format!(
                                    "connector \"{}\" did not answer the call of \"{}\" within its timeout_s ({} s)",
                                    bound.connector,
                                    job.tool,
                                    bound.timeout.as_secs()
                                ));
                            }
                        },
                        None => call.await,
                    };
                    result.map_err(|err| err.to_string())
                }
            })
            .collect();
        let results: Vec<Result<McpCallResult, String>> = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Input::Cancelled,
            results = futures::stream::iter(work).buffered(MAX_PARALLEL_MCP_CALLS).collect() => results,
        };
        Input::McpDone(results)
    }

    /// Runs one built-in call; its progress events go to the log as it runs.
    async fn call_hosted(&mut self, job: HostedJob) -> Input {
        let log = self.log.clone();
        // Credentials lent to the sandbox never leave a tool in clear (`scrub.rs`).
        let scrubber = Scrubber::new(self.machine.lent());
        let events = ScrubEvents {
            inner: log.as_ref(),
            scrubber: &scrubber,
        };
        let files = ScrubFiles {
            inner: &self.files,
            scrubber: &scrubber,
        };
        let context = CallContext {
            events: if scrubber.is_empty() {
                log.as_ref()
            } else {
                &events
            },
            next_source: job.next_source,
            call_id: &job.call_id,
            conversation: self.machine.conversation(),
            project_id: self.machine.project_id(),
            files: if scrubber.is_empty() {
                &self.files
            } else {
                &files
            },
        };
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => Input::Cancelled,
            outcome = job.tool.call(&job.arguments, context) => {
                Input::HostedDone(scrubber.outcome(outcome))
            }
        }
    }
}
