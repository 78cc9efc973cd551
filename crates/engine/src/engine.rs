//! The engine's front door: start, cancel and resume runs, retrieve responses, manage keys.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::Stream;
use protocol::input::InputItem;
use protocol::request::{CreateRequest, Tool, ToolChoice, ToolChoiceMode, Truncation};
use protocol::response::{CancelAck, Response, ResponseStatus};
use serde_json::json;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::EngineError;
use crate::events::EventLog;
use crate::hosted::HostedTools;
use crate::mcp::McpConnector;
use crate::metrics::{Metrics, MetricsSnapshot};
use crate::model::{ModelRouter, ResolveError, ResolvedModel};
use crate::run::{Finished, Run, RunPlan};
use crate::store::{JobRecord, JobState, KeyRecord, Store};
use crate::tools::{self, Registry};
use crate::transcript;

/// Engine settings (validated by the server's config loading).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// `max_steps` when the request gives none.
    pub default_max_steps: u32,
    /// Background runs executed at once (the worker pool's size).
    pub workers: usize,
    /// Background runs a project may have waiting for a worker; more is 429.
    pub max_queued_per_project: u64,
    /// How long a worker's claim on a job holds without renewal (renewed every third of it).
    pub lease: Duration,
    /// How long event logs are kept for resume.
    pub event_retention: Duration,
    /// How long files shared by responses are kept.
    pub file_retention: Duration,
    /// The operator's price table: fills `usage.cost` (empty: no cost reported).
    pub prices: Arc<Prices>,
    /// Named presets by canonical name (`fast`, `low`, `medium`, `high`, `xhigh`, or the
    /// operator's own).
    pub presets: Arc<HashMap<String, Preset>>,
}

/// A named preset (`preset` / `effort`): defaults a request's own fields override.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Preset {
    pub model: Option<String>,
    pub models: Option<Vec<String>>,
    pub max_steps: Option<u32>,
    pub instructions: Option<String>,
    pub max_output_tokens: Option<u32>,
    /// Tools the preset brings; a request tool of the same type replaces the preset's.
    pub tools: Vec<protocol::request::Tool>,
}

/// The legacy preset names and the canonical names they stand for (spec §9.3).
const PRESET_ALIASES: &[(&str, &str)] = &[
    ("fast-search", "fast"),
    ("pro-search", "low"),
    ("deep-research", "medium"),
    ("advanced-deep-research", "high"),
];

/// Applies the request's `effort` (or else `preset`) from the operator's presets: every
/// field the request leaves unset takes the preset's value; a request tool replaces the
/// preset's tool of the same type, and the preset's other tools stay.
pub(crate) fn apply_preset(
    request: &mut CreateRequest,
    presets: &HashMap<String, Preset>,
) -> Result<(), EngineError> {
    let (param, name) = match (&request.effort, &request.preset) {
        (Some(effort), _) => ("effort", effort.clone()),
        (None, Some(preset)) => ("preset", preset.clone()),
        (None, None) => return Ok(()),
    };
    let canonical = PRESET_ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or(name.as_str(), |(_, canonical)| canonical);
    let Some(preset) = presets.get(canonical) else {
        let mut known: Vec<&str> = presets.keys().map(String::as_str).collect();
        known.sort_unstable();
        let message = if known.is_empty() {
            format!(
                "{param} \"{name}\" is not available: this server defines no presets; set `model`"
            )
        } else {
            format!(
                "{param} \"{name}\" is not a preset of this server (it has: {})",
                known.join(", ")
            )
        };
        return Err(EngineError::invalid(param, message));
    };
    if request.model.is_none() && request.models.is_none() {
        request.model = preset.model.clone();
        request.models = preset.models.clone();
    }
    request.max_steps = request.max_steps.or(preset.max_steps);
    request.instructions = request
        .instructions
        .take()
        .or_else(|| preset.instructions.clone());
    request.max_output_tokens = request.max_output_tokens.or(preset.max_output_tokens);
    if !preset.tools.is_empty() {
        let own = request.tools.take().unwrap_or_default();
        let mut tools: Vec<protocol::request::Tool> = preset
            .tools
            .iter()
            .filter(|tool| !own.iter().any(|mine| mine.type_name() == tool.type_name()))
            .cloned()
            .collect();
        tools.extend(own);
        request.tools = Some(tools);
    }
    Ok(())
}

/// The operator's prices, in US dollars.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices {
    /// By model id (`provider/model`).
    pub models: HashMap<String, ModelPrice>,
    /// By `usage.tool_calls_details` key (`search_web`, `fetch_url`, `sandbox`, …), per
    /// invocation.
    pub tools: HashMap<String, f64>,
}

/// What one model's tokens cost, per million.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelPrice {
    pub input_per_million: f64,
    pub output_per_million: f64,
    /// Cached input tokens; the input price when unset.
    pub cache_read_per_million: Option<f64>,
    /// Input tokens written to the prompt cache; the input price when unset.
    pub cache_write_per_million: Option<f64>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            default_max_steps: 10,
            workers: 16,
            max_queued_per_project: 1000,
            lease: Duration::from_secs(30),
            event_retention: Duration::from_secs(24 * 3600),
            file_retention: Duration::from_secs(7 * 24 * 3600),
            prices: Arc::new(Prices::default()),
            presets: Arc::new(HashMap::new()),
        }
    }
}

/// Everything slow or external the engine reaches, as adapters of its ports.
pub struct Ports {
    pub models: Arc<dyn ModelRouter>,
    pub store: Arc<dyn Store>,
    pub mcp: Arc<dyn McpConnector>,
    pub hosted: Arc<dyn HostedTools>,
}

/// Runs agent requests. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) router: Arc<dyn ModelRouter>,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) mcp: Arc<dyn McpConnector>,
    pub(crate) hosted: Arc<dyn HostedTools>,
    pub(crate) config: EngineConfig,
    /// Runs of this process not yet ended, by response id: cancel reaches them and resumes
    /// follow their event log from memory.
    live: Mutex<HashMap<String, LiveRun>>,
    /// Wakes an idle worker when a background job is queued.
    pub(crate) job_ready: Notify,
    /// This process's name as a job lease owner.
    pub(crate) worker_id: String,
    pub(crate) metrics: Metrics,
    /// Cancelled at shutdown: workers stop claiming jobs.
    pub(crate) stopping: CancellationToken,
    /// Every background job execution, so shutdown can wait for them.
    pub(crate) jobs: TaskTracker,
}

/// What cancel and resume need of a run in progress.
#[derive(Clone)]
pub(crate) struct LiveRun {
    pub(crate) log: Arc<EventLog>,
    pub(crate) cancel: CancellationToken,
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
    done: Option<watch::Receiver<Option<Arc<Finished>>>>,
}

impl RunHandle {
    /// Every event of the run from the first, as lines of JSON, ending after the terminal event.
    pub fn events(&self) -> impl futures::Stream<Item = Arc<str>> + Send + 'static {
        self.log.follow(0)
    }

    /// Waits for a foreground run to end and returns how it ended.
    pub async fn finish(self) -> Option<Arc<Finished>> {
        let mut done = self.done?;
        match done.wait_for(Option::is_some).await {
            Ok(value) => value.clone(),
            Err(_) => None,
        }
    }
}

/// What a background job carries through the store.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct JobPayload {
    pub(crate) request: CreateRequest,
    pub(crate) transcript: Vec<InputItem>,
    #[serde(default)]
    pub(crate) context: Continuation,
}

/// What a continuation takes over from the previous response besides its transcript.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Continuation {
    /// Index in the transcript of the first item of this request's `input`.
    pub(crate) new_from: usize,
    /// The previous response's `mcp` servers: label -> (URL, `allowed_tools`).
    pub(crate) previous_servers: HashMap<String, (String, Option<Vec<String>>)>,
    /// The conversation the previous response belongs to (`None`: this one starts one).
    #[serde(default)]
    pub(crate) conversation: Option<String>,
}

pub(crate) fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4())
}

impl Engine {
    pub fn new(ports: Ports, config: EngineConfig) -> Engine {
        let Ports {
            models: router,
            store,
            mcp,
            hosted,
        } = ports;
        Engine {
            inner: Arc::new(Inner {
                router,
                store,
                mcp,
                hosted,
                config,
                live: Mutex::new(HashMap::new()),
                job_ready: Notify::new(),
                worker_id: new_id("worker"),
                metrics: Metrics::default(),
                stopping: CancellationToken::new(),
                jobs: TaskTracker::new(),
            }),
        }
    }

    pub fn router(&self) -> &Arc<dyn ModelRouter> {
        &self.inner.router
    }

    /// Validates the request, resolves its transcript and model, and starts the run: at once
    /// (foreground) or as a job for the worker pool (`background: true`).
    ///
    /// Errors here are request errors (the run never started); errors after this point end
    /// the run with status `failed`.
    pub async fn start(
        &self,
        project_id: &str,
        mut request: CreateRequest,
    ) -> Result<RunHandle, EngineError> {
        request.validate()?;
        apply_preset(&mut request, &self.inner.config.presets)?;
        request.validate()?;
        let background = request.background.unwrap_or(false);
        if background {
            let queued = self.inner.store.count_queued(project_id).await?;
            if queued >= self.inner.config.max_queued_per_project {
                return Err(EngineError::QueueFull(format!(
                    "this project already has {queued} background runs waiting (limit {}); retry when some have started",
                    self.inner.config.max_queued_per_project
                )));
            }
        }
        let (transcript, context) = self.transcript_for(project_id, &request).await?;
        let (plan, model_id) = self.plan(project_id, request, transcript, context.clone())?;
        let response = initial_response(&plan.request, &model_id, background);
        let id = response.id.clone();
        // The record exists from the start so retrieve answers while the run goes on. Its
        // transcript is written at the end: an unfinished response cannot be continued.
        self.inner
            .store
            .put_response(&crate::run::record(&plan, &response, Vec::new()))
            .await?;
        let live = self.register(&id);
        if background {
            let payload = serde_json::to_string(&JobPayload {
                request: plan.request,
                transcript: plan.transcript,
                context,
            })
            .map_err(|err| EngineError::Internal(format!("job payload: {err}")))?;
            self.inner
                .store
                .insert_job(&JobRecord {
                    response_id: id.clone(),
                    project_id: project_id.to_owned(),
                    payload,
                    state: JobState::Queued,
                    lease_owner: None,
                    lease_until_ms: 0,
                    created_at_ms: now_ms(),
                })
                .await?;
            self.inner.job_ready.notify_one();
            return Ok(RunHandle {
                id,
                initial: response,
                log: live.log,
                done: None,
            });
        }
        let (done_tx, done_rx) = watch::channel(None);
        let engine = self.clone();
        let initial = response.clone();
        let log = live.log.clone();
        tokio::spawn(async move {
            let finished = engine.execute(plan, response, live).await;
            let _ = done_tx.send(Some(Arc::new(finished)));
        });
        Ok(RunHandle {
            id,
            initial,
            log,
            done: Some(done_rx),
        })
    }

    /// The transcript a request continues: the previous response's, then this input.
    async fn transcript_for(
        &self,
        project_id: &str,
        request: &CreateRequest,
    ) -> Result<(Vec<InputItem>, Continuation), EngineError> {
        let mut items: Vec<InputItem> = Vec::new();
        let mut context = Continuation::default();
        if let Some(previous_id) = &request.previous_response_id {
            let previous = self
                .inner
                .store
                .get_response(project_id, previous_id)
                .await?
                .ok_or_else(|| {
                    EngineError::invalid(
                        "previous_response_id",
                        format!("previous response \"{previous_id}\" not found"),
                    )
                })?;
            if !matches!(
                previous.response.status,
                ResponseStatus::Completed | ResponseStatus::RequiresAction
            ) {
                return Err(EngineError::invalid(
                    "previous_response_id",
                    format!(
                        "previous response \"{previous_id}\" has status {} and cannot be continued",
                        previous.response.status.as_str()
                    ),
                ));
            }
            context.previous_servers = previous
                .response
                .tools
                .iter()
                .filter_map(|tool| match tool {
                    Tool::Mcp(mcp) => Some((
                        mcp.server_label.clone(),
                        (mcp.server_url.clone(), mcp.allowed_tools.clone()),
                    )),
                    _ => None,
                })
                .collect();
            context.conversation = Some(previous.conversation().to_owned());
            items = previous.transcript;
        }
        context.new_from = items.len();
        items.extend(request.input.clone().into_items());
        transcript::check_function_calls(&items, context.new_from)?;
        Ok((items, context))
    }

    /// Resolves the model and tools: what a run needs besides its response object.
    pub(crate) fn plan(
        &self,
        project_id: &str,
        request: CreateRequest,
        transcript: Vec<InputItem>,
        context: Continuation,
    ) -> Result<(RunPlan, String), EngineError> {
        let models = self.resolve_models(&request)?;
        let model_id = models.first().map(|(id, _)| id.clone()).unwrap_or_default();
        let registry = Registry::from_request(
            request.tools.as_deref().unwrap_or_default(),
            self.inner.hosted.as_ref(),
        )?;
        let max_steps = request
            .max_steps
            .unwrap_or(self.inner.config.default_max_steps);
        let output_schema = match request
            .response_format
            .as_ref()
            .and_then(|format| format.json_schema.as_ref())
        {
            Some(format) => Some(jsonschema::validator_for(&format.schema).map_err(|err| {
                EngineError::invalid(
                    "response_format.json_schema.schema",
                    format!("the schema is not a valid JSON Schema: {err}"),
                )
            })?),
            None => None,
        };
        let plan = RunPlan {
            prices: self.inner.config.prices.clone(),
            output_schema,
            project_id: project_id.to_owned(),
            request,
            models,
            registry,
            transcript,
            new_from: context.new_from,
            previous_servers: context.previous_servers,
            conversation: context.conversation,
            mcp: self.inner.mcp.clone(),
            max_steps,
        };
        check_models(&plan)?;
        Ok((plan, model_id))
    }

    /// Adds a run to the live map (or returns the entry a submission already made).
    pub(crate) fn register(&self, id: &str) -> LiveRun {
        self.lock_live()
            .entry(id.to_owned())
            .or_insert_with(|| LiveRun {
                log: EventLog::new(),
                cancel: CancellationToken::new(),
            })
            .clone()
    }

    fn live(&self, id: &str) -> Option<LiveRun> {
        self.lock_live().get(id).cloned()
    }

    fn lock_live(&self) -> std::sync::MutexGuard<'_, HashMap<String, LiveRun>> {
        self.inner
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Executes a run to its end and returns the final response.
    pub(crate) async fn execute(
        &self,
        plan: RunPlan,
        response: Response,
        live: LiveRun,
    ) -> Finished {
        let id = response.id.clone();
        let started = Instant::now();
        self.inner.metrics.run_started();
        let run = Run::new(
            plan,
            response,
            live.log,
            self.inner.store.clone(),
            live.cancel,
        );
        let finished = run.execute().await;
        self.inner
            .metrics
            .run_finished(finished.response.status, started.elapsed());
        self.lock_live().remove(&id);
        finished
    }

    /// Asks a run to stop. The run ends `cancelled` shortly after; the answer is only the
    /// acknowledgement (spec decision 8).
    pub async fn cancel(&self, project_id: &str, id: &str) -> Result<CancelAck, EngineError> {
        let record = self
            .inner
            .store
            .get_response(project_id, id)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("response \"{id}\" not found")))?;
        if record.response.status.is_terminal() {
            return Err(EngineError::NotCancellable(format!(
                "response \"{id}\" has already ended with status {} and cannot be cancelled",
                record.response.status.as_str()
            )));
        }
        if let Some(live) = self.live(id) {
            live.cancel.cancel();
        }
        // A job still waiting for a worker is taken out of the queue and ended now.
        self.cancel_queued(id).await?;
        Ok(CancelAck {
            response_id: id.to_owned(),
            status: "cancelling".to_owned(),
        })
    }

    /// Replays a run's events after `starting_after` (all when `None`), then follows the run
    /// until its terminal event if it is still going.
    pub async fn resume(
        &self,
        project_id: &str,
        id: &str,
        starting_after: Option<u64>,
    ) -> Result<EventStream, EngineError> {
        match self.inner.store.get_response(project_id, id).await? {
            Some(record) if record.visible => {}
            _ => {
                return Err(EngineError::NotFound(format!(
                    "response \"{id}\" not found"
                )));
            }
        }
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
        if let Some(live) = self.live(id) {
            let len = live.log.len() as u64;
            if from > len {
                return Err(bad_cursor(len.checked_sub(1)));
            }
            return Ok(Box::pin(live.log.follow(from as usize)));
        }
        let stored = self.inner.store.events_after(id, None).await?;
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
            .map(|e| Arc::from(e.data))
            .collect();
        Ok(Box::pin(futures::stream::iter(lines)))
    }

    /// A snapshot of the run metrics.
    pub async fn metrics(&self) -> Result<MetricsSnapshot, EngineError> {
        let queued = self.inner.store.count_all_queued().await?;
        Ok(self.inner.metrics.snapshot(queued))
    }

    /// The models a run may use, in order: `models` (a fallback chain), else `model`.
    fn resolve_models(
        &self,
        request: &CreateRequest,
    ) -> Result<Vec<(String, ResolvedModel)>, EngineError> {
        let chain: Vec<(String, String)> = match (&request.models, &request.model) {
            (Some(models), _) if !models.is_empty() => models
                .iter()
                .enumerate()
                .map(|(i, id)| (id.clone(), format!("models[{i}]")))
                .collect(),
            (_, Some(model)) => vec![(model.clone(), "model".to_owned())],
            _ => {
                return Err(EngineError::InvalidModel {
                    message: "no model given: set `model` or `models` (or a preset that names one)"
                        .to_owned(),
                    param: "model".to_owned(),
                });
            }
        };
        chain
            .into_iter()
            .map(|(id, param)| match self.inner.router.resolve(&id) {
                Ok(resolved) => Ok((id, resolved)),
                Err(err @ (ResolveError::Malformed(_) | ResolveError::NotConfigured { .. })) => {
                    Err(EngineError::InvalidModel {
                        message: err.to_string(),
                        param,
                    })
                }
            })
            .collect()
    }

    /// A stored response of this project (404 for unknown, other projects' and `store: false`).
    pub async fn get_response(&self, project_id: &str, id: &str) -> Result<Response, EngineError> {
        match self.inner.store.get_response(project_id, id).await? {
            Some(record) if record.visible => Ok(record.response),
            _ => Err(EngineError::NotFound(format!(
                "response \"{id}\" not found"
            ))),
        }
    }

    /// The stored event log of a response of this project (`store: false` ones included: the
    /// log serves resumes, not retrieval).
    pub async fn stored_events(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Vec<crate::store::EventRecord>, EngineError> {
        if self
            .inner
            .store
            .get_response(project_id, id)
            .await?
            .is_none()
        {
            return Err(EngineError::NotFound(format!(
                "response \"{id}\" not found"
            )));
        }
        Ok(self.inner.store.events_after(id, None).await?)
    }

    /// The files a response of this project shared (404 for an unknown response).
    pub async fn list_files(
        &self,
        project_id: &str,
        response_id: &str,
    ) -> Result<Vec<crate::store::FileRecord>, EngineError> {
        self.require_response(project_id, response_id).await?;
        Ok(self.inner.store.list_files(project_id, response_id).await?)
    }

    /// One shared file with its bytes (404 for an unknown response or file).
    pub async fn file_content(
        &self,
        project_id: &str,
        response_id: &str,
        file_id: &str,
    ) -> Result<(crate::store::FileRecord, Vec<u8>), EngineError> {
        self.require_response(project_id, response_id).await?;
        self.inner
            .store
            .get_file(project_id, response_id, file_id)
            .await?
            .ok_or_else(|| {
                EngineError::NotFound(format!(
                    "file \"{file_id}\" of response \"{response_id}\" not found"
                ))
            })
    }

    async fn require_response(&self, project_id: &str, id: &str) -> Result<(), EngineError> {
        match self.inner.store.get_response(project_id, id).await? {
            Some(_) => Ok(()),
            None => Err(EngineError::NotFound(format!(
                "response \"{id}\" not found"
            ))),
        }
    }

    /// Creates an API key for a project (created when missing); returns the key, shown once.
    pub async fn create_key(&self, project: &str) -> Result<String, EngineError> {
        let project_id = self.inner.store.ensure_project(project).await?;
        let key = format!(
            "agd_{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        self.inner
            .store
            .insert_key(&KeyRecord {
                id: new_id("key"),
                project_id,
                key_hash: crate::keys::hash_key(&key),
                created_at: now_secs(),
            })
            .await?;
        Ok(key)
    }

    /// The project a bearer key belongs to, if the key is known.
    pub async fn authenticate(&self, key: &str) -> Result<Option<String>, EngineError> {
        Ok(self
            .inner
            .store
            .find_key(&crate::keys::hash_key(key))
            .await?
            .map(|k| k.project_id))
    }

    /// Whether the store holds any key (none: open mode).
    pub async fn has_keys(&self) -> Result<bool, EngineError> {
        Ok(self.inner.store.has_keys().await?)
    }

    /// The id of the project used in open mode.
    pub async fn default_project(&self) -> Result<String, EngineError> {
        Ok(self.inner.store.ensure_project("default").await?)
    }
}

/// The response object at the start of a run, echoing the request.
fn initial_response(request: &CreateRequest, model_id: &str, background: bool) -> Response {
    Response {
        id: new_id("resp"),
        object: "response".to_owned(),
        created_at: now_secs(),
        completed_at: None,
        status: if background {
            ResponseStatus::Queued
        } else {
            ResponseStatus::InProgress
        },
        model: model_id.to_owned(),
        output: Vec::new(),
        usage: None,
        error: None,
        incomplete_details: None,
        instructions: request.instructions.clone(),
        max_output_tokens: request.effective_max_output_tokens(),
        max_tool_calls: request.max_tool_calls,
        max_steps: request.max_steps,
        temperature: request.temperature,
        top_p: request.top_p,
        tool_choice: request
            .tool_choice
            .clone()
            .unwrap_or(ToolChoice::Mode(ToolChoiceMode::Auto)),
        tools: tools::redact(request.tools.as_deref().unwrap_or_default()),
        parallel_tool_calls: request.parallel_tool_calls.unwrap_or(true),
        truncation: request.truncation.unwrap_or(Truncation::Disabled),
        background,
        store: request.store.unwrap_or(true),
        service_tier: request.service_tier,
        text: request
            .text
            .clone()
            .unwrap_or_else(|| json!({"format": {"type": "text"}})),
        metadata: request.metadata.clone().unwrap_or_default(),
        previous_response_id: request.previous_response_id.clone(),
        prompt_cache_key: request.prompt_cache_key.clone(),
        reasoning: request.reasoning.clone(),
        effort: request.effort.clone(),
        preset: request.preset.clone(),
        user: request.user.clone(),
        safety_identifier: request.safety_identifier.clone(),
        frequency_penalty: 0.0,
        presence_penalty: 0.0,
        top_logprobs: 0,
    }
}

/// Refuses a run that a model of its chain cannot take (an input type its upstream does not
/// read, a parameter combination it refuses), before anything runs: 400 naming the field and
/// the model.
fn check_models(plan: &RunPlan) -> Result<(), EngineError> {
    let preview =
        crate::run::build_request(plan, &plan.transcript, true, plan.request.max_output_tokens);
    for (id, model) in &plan.models {
        let mut request = preview.clone();
        request.model.clone_from(&model.upstream_model);
        model.client.check(&request).map_err(|err| {
            EngineError::invalid(err.param, format!("model \"{id}\": {}", err.message))
        })?;
    }
    Ok(())
}
