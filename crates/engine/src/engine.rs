//! The engine's front door: start runs, retrieve responses, manage API keys.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use protocol::input::InputItem;
use protocol::request::{CreateRequest, ToolChoice, ToolChoiceMode, Truncation};
use protocol::response::{Response, ResponseStatus};
use serde_json::json;
use tokio::sync::watch;

use crate::error::EngineError;
use crate::events::EventLog;
use crate::model::{ModelRouter, ResolveError, ResolvedModel};
use crate::run::{Run, RunPlan};
use crate::store::{KeyRecord, Store};
use crate::tools::{self, Registry};
use crate::transcript;

/// Engine settings (validated by the server's config loading).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// `max_steps` when the request gives none.
    pub default_max_steps: u32,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            default_max_steps: 10,
        }
    }
}

/// Runs agent requests. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    router: Arc<dyn ModelRouter>,
    store: Arc<dyn Store>,
    config: EngineConfig,
}

/// A started run: its id, its events and its final response.
pub struct RunHandle {
    pub id: String,
    /// The snapshot at start (status `in_progress`, or `queued` for background runs).
    pub initial: Response,
    log: Arc<EventLog>,
    done: watch::Receiver<Option<Arc<Response>>>,
}

impl RunHandle {
    /// Every event of the run from the first, as lines of JSON, ending after the terminal event.
    pub fn events(&self) -> impl futures::Stream<Item = Arc<str>> + Send + 'static {
        self.log.follow(0)
    }

    /// Waits for the run to end and returns the final response.
    pub async fn finish(mut self) -> Option<Arc<Response>> {
        match self.done.wait_for(Option::is_some).await {
            Ok(value) => value.clone(),
            Err(_) => None,
        }
    }
}

pub(crate) fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4())
}

impl Engine {
    pub fn new(
        router: Arc<dyn ModelRouter>,
        store: Arc<dyn Store>,
        config: EngineConfig,
    ) -> Engine {
        Engine {
            inner: Arc::new(Inner {
                router,
                store,
                config,
            }),
        }
    }

    pub fn router(&self) -> &Arc<dyn ModelRouter> {
        &self.inner.router
    }

    /// Validates the request, resolves its transcript and model, and starts the run.
    ///
    /// Errors here are request errors (the run never started); errors after this point end
    /// the run with status `failed`.
    pub async fn start(
        &self,
        project_id: &str,
        request: CreateRequest,
    ) -> Result<RunHandle, EngineError> {
        request.validate()?;
        let (model_id, resolved) = self.resolve_model(&request)?;
        let registry = Registry::from_request(request.tools.as_deref().unwrap_or_default())?;

        let mut items: Vec<InputItem> = Vec::new();
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
            items = previous.transcript;
        }
        let new_from = items.len();
        items.extend(request.input.clone().into_items());
        transcript::check_function_calls(&items, new_from)?;

        let background = request.background.unwrap_or(false);
        let response = initial_response(&request, &model_id, background);
        let id = response.id.clone();
        let log = EventLog::new();
        let (done_tx, done_rx) = watch::channel(None);
        let max_steps = request
            .max_steps
            .unwrap_or(self.inner.config.default_max_steps);
        let plan = RunPlan {
            project_id: project_id.to_owned(),
            request,
            model: resolved,
            registry,
            transcript: items,
            max_steps,
        };
        // The record exists from the start so retrieve answers while the run goes on. Its
        // transcript is written at the end: an unfinished response cannot be continued.
        self.inner
            .store
            .put_response(&crate::run::record(&plan, &response, Vec::new()))
            .await?;

        let run = Run::new(
            plan,
            response.clone(),
            log.clone(),
            self.inner.store.clone(),
        );
        tokio::spawn(async move {
            let finished = run.execute().await;
            let _ = done_tx.send(Some(Arc::new(finished)));
        });
        Ok(RunHandle {
            id,
            initial: response,
            log,
            done: done_rx,
        })
    }

    fn resolve_model(
        &self,
        request: &CreateRequest,
    ) -> Result<(String, ResolvedModel), EngineError> {
        let (model_id, param) = match (&request.models, &request.model) {
            (Some(models), _) if !models.is_empty() => (models[0].clone(), "models[0]".to_owned()),
            (_, Some(model)) => (model.clone(), "model".to_owned()),
            _ => {
                return Err(EngineError::InvalidModel {
                    message:
                        "no model given: set `model` (presets are not available on this server)"
                            .to_owned(),
                    param: "model".to_owned(),
                });
            }
        };
        match self.inner.router.resolve(&model_id) {
            Ok(resolved) => Ok((model_id, resolved)),
            Err(err @ (ResolveError::Malformed(_) | ResolveError::NotConfigured { .. })) => {
                Err(EngineError::InvalidModel {
                    message: err.to_string(),
                    param,
                })
            }
        }
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
