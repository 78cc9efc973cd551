//! `POST /v1/responses/compact`: the model summarises a conversation (the previous response's
//! transcript, then `input`) into a `compaction` item. The answer holds the conversation's user
//! messages and that item; a chain that continues from it sends the model the summary in place
//! of the history it replaces (`transcript.rs`).

use futures::StreamExt as _;
use protocol::compact::{CompactRequest, CompactResource};
use protocol::input::{CompactionItem, Input, InputItem, Role};
use protocol::response::Usage;

use crate::code::Code;
use crate::compaction;
use crate::engine::Engine;
use crate::error::{EngineError, RunFailure};
use crate::ids::new_id;
use crate::items;
use crate::model::{
    ContentPart, ModelError, ModelEvent, ModelMessage, ModelRequest, ModelToolChoice, ResolveError,
};
use crate::plan;
use crate::run::provider_failure;
use crate::transcript;

/// What the model is asked to do with the conversation.
const DIRECTIVE: &str = "You are compacting the conversation above so that it can continue \
without it. Write a summary that keeps everything needed to go on: the user's goals and \
constraints, facts and figures established, decisions made, tool calls and their results that \
still matter, open questions and the next steps. Write only the summary, in the conversation's \
language.";

impl Engine {
    /// Summarises a conversation into a `compaction` item (see the module doc).
    pub async fn compact(
        &self,
        project_id: &str,
        body: CompactRequest,
    ) -> Result<CompactResource, EngineError> {
        let core = &self.core;
        let model_id = body
            .model
            .filter(|model| !model.trim().is_empty())
            .ok_or_else(|| {
                EngineError::invalid(
                    "model",
                    "model is required: the model that writes the summary (provider/model)",
                )
            })?;
        let resolved = core.router.resolve(&model_id).map_err(|err| match err {
            ResolveError::Malformed(_) | ResolveError::NotConfigured { .. } => {
                EngineError::InvalidModel {
                    message: err.to_string(),
                    param: "model".to_owned(),
                }
            }
        })?;
        let input = body.input.unwrap_or(Input::Items(Vec::new()));
        let (transcript, _) = plan::transcript_of(
            core,
            project_id,
            body.previous_response_id.as_deref(),
            None,
            input,
        )
        .await?;
        if transcript.is_empty() {
            return Err(EngineError::invalid(
                "input",
                "there is nothing to compact: send input or previous_response_id",
            ));
        }
        let mut messages = transcript::to_model_messages(body.instructions.as_deref(), &transcript);
        messages.push(ModelMessage::User {
            content: vec![ContentPart::Text {
                text: DIRECTIVE.to_owned(),
            }],
        });
        let request = ModelRequest {
            model: resolved.upstream_model.clone(),
            messages,
            prompt_cache_key: body.prompt_cache_key,
            // No tools: the model only writes (history calls are shown as request.rs shows
            // them with tools off).
            tool_choice: ModelToolChoice::None,
            ..ModelRequest::default()
        };
        resolved
            .client
            .check(&request)
            .map_err(|unsupported| EngineError::invalid(unsupported.param, unsupported.message))?;
        let (summary, usage) = summarise(resolved.client.as_ref(), request).await?;

        let mut output: Vec<serde_json::Value> = transcript
            .iter()
            .filter(|item| matches!(item, InputItem::Message(m) if m.role == Role::User))
            .filter_map(|item| {
                let id = items::input_id(item)?.to_owned();
                let value = serde_json::to_value(item).ok()?;
                Some(items::to_wire(&id, value))
            })
            .collect();
        let item = CompactionItem {
            id: Some(new_id("cmp")),
            encrypted_content: compaction::encode(&summary),
            created_by: None,
        };
        let mut item = serde_json::to_value(item)
            .map_err(|err| EngineError::Internal(format!("cannot encode a compaction: {err}")))?;
        item["type"] = "compaction".into();
        output.push(item);
        Ok(CompactResource {
            id: new_id("resp"),
            object: "response.compaction".to_owned(),
            created_at: core.clock.now_secs(),
            output,
            usage,
        })
    }
}

/// Streams the model's summary; a failure or an empty summary is a 502.
async fn summarise(
    client: &dyn crate::model::ModelClient,
    request: ModelRequest,
) -> Result<(String, Usage), EngineError> {
    let failed = |err: ModelError| EngineError::Run(provider_failure(err));
    let mut stream = client.stream(request).await.map_err(failed)?;
    let mut summary = String::new();
    let mut usage = Usage::default();
    while let Some(event) = stream.next().await {
        match event.map_err(failed)? {
            ModelEvent::TextDelta(delta) => summary.push_str(&delta),
            ModelEvent::Usage(tokens) => {
                usage.input_tokens += tokens.input_tokens;
                usage.output_tokens += tokens.output_tokens;
                usage.input_tokens_details.cached_tokens += tokens.cached_input_tokens;
                usage.output_tokens_details.reasoning_tokens += tokens.reasoning_tokens;
            }
            _ => {}
        }
    }
    usage.total_tokens = usage.input_tokens + usage.output_tokens;
    let summary = summary.trim().to_owned();
    if summary.is_empty() {
        return Err(EngineError::Run(RunFailure::new(
            Code::Provider,
            "the model returned an empty summary",
        )));
    }
    Ok((summary, usage))
}
