//! Planning a run: the transcript it continues, the models of its chain, its tools and its
//! structured-output schema, checked before anything runs (errors here are request errors).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use protocol::input::{Input, InputItem};
use protocol::options::OutputFormat;
use protocol::request::{ConversationRef, CreateRequest};
use protocol::response::ResponseStatus;

use crate::compaction;
use crate::config::Prices;
use crate::core::Core;
use crate::error::EngineError;
use crate::items;
use crate::model::{ResolveError, ResolvedModel};
use crate::request::FirstStep;
use crate::store::{Store, StoredItem, TranscriptPrefix};
use crate::tools::{ConnectorServer, Registry};
use crate::transcript;

/// Everything a run needs, resolved before it starts.
pub struct RunPlan {
    pub project_id: String,
    pub request: CreateRequest,
    /// The models to use, in order (`models` is a fallback chain; never empty).
    pub models: Vec<(String, ResolvedModel)>,
    /// The operator's prices (`usage.cost`).
    pub prices: Arc<Prices>,
    /// `text.format` / `response_format` as a compiled schema: the final answer must match it.
    pub output_schema: Option<jsonschema::Validator>,
    pub registry: Registry,
    /// The transcript the run starts from (previous transcript + this request's input); the
    /// run's state machine takes it over (`run/state.rs`, `Machine::new`).
    pub transcript: Vec<InputItem>,
    /// Index in `transcript` of the first item of this request's `input`.
    pub new_from: usize,
    /// The JSON of the transcript's first items as stored, when it goes on from a previous
    /// response's (the run's record takes it: [`ResponseRecord::transcript_prefix`]).
    pub transcript_prefix: Option<TranscriptPrefix>,
    /// The `mcp` servers of the previous response (label -> URL and `allowed_tools`): where
    /// they match this request, the transcript's tool list is reused without listing again.
    pub previous_servers: HashMap<String, (String, Option<Vec<String>>)>,
    /// The conversation of the previous response (`None`: this response starts one).
    pub conversation: Option<String>,
    pub max_steps: u32,
    /// The first step's model request, as the models chain's check built it: the run's first
    /// step sends it if nothing it was built from changed by then.
    pub first_step: Option<FirstStep>,
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
    /// The previous response's transcript as stored, when the store had it at hand and the
    /// transcript goes on from it (not carried by a background job's payload).
    #[serde(skip)]
    pub(crate) transcript_json: Option<Arc<str>>,
}

/// What a background job carries through the store.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct JobPayload {
    /// The request without its MCP credentials.
    pub(crate) request: CreateRequest,
    pub(crate) transcript: Vec<InputItem>,
    #[serde(default)]
    pub(crate) context: Continuation,
    /// The MCP credentials, sealed (`job_secrets.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) secrets: Option<String>,
}

/// The transcript a request continues: the previous response's, then this input.
pub(crate) async fn transcript_for(
    core: &Core,
    project_id: &str,
    request: &CreateRequest,
) -> Result<(Vec<InputItem>, Continuation), EngineError> {
    transcript_of(
        core,
        project_id,
        request.previous_response_id.as_deref(),
        request.conversation.as_ref().map(ConversationRef::id),
        request.input.clone(),
    )
    .await
}

/// The refusal of a `previous_response_id` whose response has not ended (or failed).
fn not_continuable(previous_id: &str, status: ResponseStatus) -> EngineError {
    EngineError::invalid(
        "previous_response_id",
        format!(
            "previous response \"{previous_id}\" has status {} and cannot be continued",
            status.as_str()
        ),
    )
}

/// The transcript of the previous response (or the conversation's items), then `input` with
/// its references resolved and ids given. The previous response is looked up as every lookup by
/// id is (`Core::response`): a run of this process not written yet is found in progress.
pub(crate) async fn transcript_of(
    core: &Core,
    project_id: &str,
    previous_response_id: Option<&str>,
    conversation: Option<&str>,
    input: Input,
) -> Result<(Vec<InputItem>, Continuation), EngineError> {
    let store = core.store.as_ref();
    let mut items: Vec<InputItem> = Vec::new();
    let mut context = Continuation::default();
    if let Some(previous_id) = previous_response_id {
        let previous = core
            .continuation_source(project_id, previous_id)
            .await?
            .ok_or_else(|| {
                EngineError::invalid(
                    "previous_response_id",
                    format!("previous response \"{previous_id}\" not found"),
                )
            })?;
        if !previous.status.is_continuable() {
            return Err(not_continuable(previous_id, previous.status));
        }
        context.previous_servers = previous
            .mcp_tools
            .into_iter()
            .map(|mcp| (mcp.server_label, (mcp.server_url, mcp.allowed_tools)))
            .collect();
        context.conversation = Some(previous.conversation);
        context.transcript_json = previous.transcript_json;
        items = previous.transcript;
    }
    if let Some(id) = conversation {
        if store.get_conversation(project_id, id).await?.is_none() {
            return Err(EngineError::invalid(
                "conversation",
                format!("conversation \"{id}\" not found"),
            ));
        }
        // The conversation's items, and their JSON as the store read them.
        (items, context.transcript_json) = store.conversation_input_json(project_id, id).await?;
    }
    context.new_from = items.len();
    let mut input = input.into_items();
    resolve_references(store, project_id, &mut input).await?;
    check_compactions(&input)?;
    items::assign_ids(&mut input);
    items.extend(input);
    transcript::check_function_calls(&items, context.new_from)?;
    Ok((items, context))
}

/// Refuses a `compaction` item whose content is not agentd's: 400 naming
/// `input[i].encrypted_content`.
fn check_compactions(input: &[InputItem]) -> Result<(), EngineError> {
    for (index, item) in input.iter().enumerate() {
        if let InputItem::Compaction(item) = item
            && compaction::decode(&item.encrypted_content).is_none()
        {
            return Err(EngineError::invalid(
                format!("input[{index}].encrypted_content"),
                "this compaction item was not made by this server: pass back the output of its POST /v1/responses/compact as it came",
            ));
        }
    }
    Ok(())
}

/// Replaces each `item_reference` by the stored item it names (an item of this project); an
/// unknown id is a 400 naming `input[i].id`.
async fn resolve_references(
    store: &dyn Store,
    project_id: &str,
    input: &mut [InputItem],
) -> Result<(), EngineError> {
    let ids: Vec<String> = input
        .iter()
        .filter_map(|item| match item {
            InputItem::ItemReference(reference) => Some(reference.id.clone()),
            _ => None,
        })
        .collect();
    if ids.is_empty() {
        return Ok(());
    }
    let found = store.find_items(project_id, &ids).await?;
    for (index, item) in input.iter_mut().enumerate() {
        let InputItem::ItemReference(reference) = item else {
            continue;
        };
        let stored = found.iter().find(|stored| stored.id == reference.id);
        match stored.and_then(StoredItem::to_input) {
            Some(resolved) => *item = resolved,
            None => {
                return Err(EngineError::invalid(
                    format!("input[{index}].id"),
                    match stored {
                        Some(_) => format!(
                            "item \"{}\" is a built-in tool's result, which cannot be sent as input",
                            reference.id
                        ),
                        None => format!("item \"{}\" not found", reference.id),
                    },
                ));
            }
        }
    }
    Ok(())
}

/// Resolves the model chain and the tools: what a run needs besides its response object.
/// Returns the plan and the id of the chain's first model.
pub(crate) fn plan(
    core: &Core,
    project_id: &str,
    request: CreateRequest,
    transcript: Vec<InputItem>,
    context: Continuation,
    connectors: BTreeMap<usize, ConnectorServer>,
) -> Result<(RunPlan, String), EngineError> {
    let models = resolve_models(core, &request)?;
    let model_id = models.first().map(|(id, _)| id.clone()).unwrap_or_default();
    let registry = Registry::with_connectors(
        request.tools.as_deref().unwrap_or_default(),
        core.hosted.as_ref(),
        connectors,
    )?;
    let max_steps = request.max_steps.unwrap_or(core.config.default_max_steps);
    let output_schema = match request.output_format() {
        Some(OutputFormat::JsonSchema(format)) => Some(&format.schema).cloned(),
        Some(OutputFormat::JsonObject) => Some(serde_json::json!({"type": "object"})),
        None => None,
    }
    .map(|schema| {
        jsonschema::validator_for(&schema).map_err(|err| {
            EngineError::invalid(
                request.output_format_param(),
                format!("the schema is not a valid JSON Schema: {err}"),
            )
        })
    })
    .transpose()?;
    let mut plan = RunPlan {
        prices: core.config.prices.clone(),
        output_schema,
        project_id: project_id.to_owned(),
        request,
        models,
        registry,
        transcript,
        new_from: context.new_from,
        transcript_prefix: context.transcript_json.map(|json| TranscriptPrefix {
            json,
            items: context.new_from,
        }),
        previous_servers: context.previous_servers,
        conversation: context.conversation,
        max_steps,
        first_step: None,
    };
    check_models(&mut plan)?;
    Ok((plan, model_id))
}

/// The models a run may use, in order: `models` (a fallback chain), else `model`.
fn resolve_models(
    core: &Core,
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
        .map(|(id, param)| match core.router.resolve(&id) {
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

/// Refuses a run that a model of its chain cannot take (an input type its upstream does not
/// read, a parameter combination it refuses), before anything runs: 400 naming the field and
/// the model. The request checked is the first step's, kept for it
/// ([`RunPlan::first_step`]).
fn check_models(plan: &mut RunPlan) -> Result<(), EngineError> {
    // One request, named for each model in turn (not a copy of the whole history per model).
    let mut first = FirstStep::build(
        &plan.request,
        &plan.registry,
        &plan.transcript,
        plan.max_steps.max(1),
    );
    for (id, model) in &plan.models {
        first.request.model.clone_from(&model.upstream_model);
        model.client.check(&first.request).map_err(|err| {
            EngineError::invalid(err.param, format!("model \"{id}\": {}", err.message))
        })?;
    }
    plan.first_step = Some(first);
    Ok(())
}
