//! Handlers: extract, make one domain call, map the result.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use protocol::conversations::{Deleted, ItemList};
use protocol::response::{CancelAck, Model, ModelList, ResponseFile, ResponseFileList};
use serde_json::{Value, json};

use crate::auth::Project;
use crate::error::ApiError;
use crate::json::StrictRequest;
use crate::params::{PathParams, QueryParams};
use crate::sse;
use crate::state::AppState;

/// `POST /v1/agent`, `POST /v1/responses`.
pub async fn create(
    State(state): State<AppState>,
    Project(project): Project,
    StrictRequest(request): StrictRequest,
) -> Result<Response, ApiError> {
    let stream = request.stream.unwrap_or(false);
    let background = request.background.unwrap_or(false);
    let handle = if stream {
        // The run is a task of its own: a slow client never slows it (the stream reads its log).
        state.engine.start(&project, request).await?
    } else {
        // Polled in this task until it ends (no spawn, no hand-off of its end); if this future
        // is dropped first (the client went away), the rest of the run becomes a task of its
        // own and still ends and is stored.
        state.engine.start_inline(&project, request).await?
    };
    if stream {
        if background {
            // Its first event comes when a worker takes the job: the head leaves at once.
            return Ok(sse::stream(handle.events(), state.sse_keep_alive));
        }
        return Ok(sse::stream_started(handle.events(), state.sse_keep_alive).await);
    }
    if background {
        return Ok(Json(handle.initial).into_response());
    }
    match handle.finish().await {
        // A run that failed before the model was asked (MCP discovery, a continuation that
        // does not fit) is an HTTP error for a plain request (spec §8.3).
        Some(finished) => match &finished.start_error {
            Some(failure) => Err(ApiError::Engine(engine::EngineError::Run(failure.clone()))),
            None => Ok(match &finished.response_json {
                // The bytes stored as the response row and sent in `response.completed`.
                Some(json) => json_body(json),
                None => Json(&finished.response).into_response(),
            }),
        },
        None => Err(ApiError::NotFound(
            "the run ended without a response".to_owned(),
        )),
    }
}

/// A JSON body already serialized, answered as [`Json`] answers (`200`, `application/json`),
/// without copying it.
fn json_body(json: &Arc<str>) -> Response {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        Bytes::from_owner(SharedJson(Arc::clone(json))),
    )
        .into_response()
}

/// Shared JSON text as the owner of a body's bytes.
struct SharedJson(Arc<str>);

impl AsRef<[u8]> for SharedJson {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// The largest `starting_after` the SDKs send (2^53 - 1).
const MAX_CURSOR: u64 = (1 << 53) - 1;

/// `GET /v1/{agent|responses}/{id}`; with `?stream=true&starting_after=N`, resume the stream.
pub async fn retrieve(
    State(state): State<AppState>,
    Project(project): Project,
    PathParams(id): PathParams<String>,
    QueryParams(query): QueryParams<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    let stream = match query.get("stream").map(String::as_str) {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => {
            return Err(ApiError::InvalidQuery {
                message: "stream must be true or false".to_owned(),
                param: "stream".to_owned(),
            });
        }
    };
    let starting_after = match query.get("starting_after") {
        None => None,
        Some(raw) => match raw.parse::<u64>() {
            Ok(n) if n <= MAX_CURSOR => Some(n),
            _ => {
                return Err(ApiError::InvalidQuery {
                    message: format!("starting_after must be an integer in 0..={MAX_CURSOR}"),
                    param: "starting_after".to_owned(),
                });
            }
        },
    };
    if stream {
        let events = state.engine.resume(&project, &id, starting_after).await?;
        return Ok(sse::stream(events, state.sse_keep_alive));
    }
    let response = state.engine.get_response(&project, &id).await?;
    Ok(Json(response).into_response())
}

/// `POST /v1/{agent|responses}/{id}/cancel`.
pub async fn cancel(
    State(state): State<AppState>,
    Project(project): Project,
    PathParams(id): PathParams<String>,
) -> Result<Json<CancelAck>, ApiError> {
    Ok(Json(state.engine.cancel(&project, &id).await?))
}

/// `DELETE /v1/{agent|responses}/{id}`: 404 afterwards (a run still going is refused).
pub async fn delete(
    State(state): State<AppState>,
    Project(project): Project,
    PathParams(id): PathParams<String>,
) -> Result<Json<Deleted>, ApiError> {
    Ok(Json(state.engine.delete_response(&project, &id).await?))
}

/// `GET /v1/{agent|responses}/{id}/input_items`: the request's input items, a page at a time
/// (`after`, `limit`, `order`, as OpenAI pages them).
pub async fn input_items(
    State(state): State<AppState>,
    Project(project): Project,
    PathParams(id): PathParams<String>,
    QueryParams(query): QueryParams<HashMap<String, String>>,
) -> Result<Json<ItemList>, ApiError> {
    let page = crate::conversations::page(&query)?;
    Ok(Json(state.engine.input_items(&project, &id, &page).await?))
}

/// `GET /v1/{agent|responses}/{id}/files`: the files a response shared.
pub async fn files(
    State(state): State<AppState>,
    Project(project): Project,
    PathParams(id): PathParams<String>,
) -> Result<Json<ResponseFileList>, ApiError> {
    let files = state.engine.list_files(&project, &id).await?;
    let data = files
        .into_iter()
        .map(|file| ResponseFile {
            id: file.id,
            object: "file".to_owned(),
            filename: file.filename,
            bytes: file.bytes,
            created_at: file.created_at,
        })
        .collect();
    Ok(Json(ResponseFileList {
        object: "list".to_owned(),
        data,
    }))
}

/// `GET /v1/{agent|responses}/{id}/files/{file_id}/content`: the bytes, with the file's
/// content type and `Content-Disposition: attachment` naming it.
pub async fn file_content(
    State(state): State<AppState>,
    Project(project): Project,
    PathParams((id, file_id)): PathParams<(String, String)>,
) -> Result<Response, ApiError> {
    let (file, bytes) = state.engine.file_content(&project, &id, &file_id).await?;
    let content_type = axum::http::HeaderValue::from_str(&file.content_type).unwrap_or(
        axum::http::HeaderValue::from_static("application/octet-stream"),
    );
    let disposition = axum::http::HeaderValue::from_str(&content_disposition(&file.filename))
        .unwrap_or(axum::http::HeaderValue::from_static("attachment"));
    Ok((
        [
            (axum::http::header::CONTENT_TYPE, content_type),
            (axum::http::header::CONTENT_DISPOSITION, disposition),
            (
                axum::http::header::X_CONTENT_TYPE_OPTIONS,
                axum::http::HeaderValue::from_static("nosniff"),
            ),
        ],
        bytes,
    )
        .into_response())
}

/// `attachment; filename="…"; filename*=UTF-8''…` (RFC 6266): an ASCII fallback with quotes,
/// backslashes and controls replaced, and the exact name percent-encoded.
fn content_disposition(filename: &str) -> String {
    let fallback: String = filename
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded: String = filename
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    format!("attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}")
}

/// `GET /v1/models` (no auth): every provider's configured models and what its upstream lists
/// (cached by the registry; an upstream that fails only leaves its configured models).
pub async fn models(State(state): State<AppState>) -> Json<ModelList> {
    let data = state
        .engine
        .router()
        .list_models()
        .await
        .into_iter()
        .map(|m| Model {
            id: m.id,
            object: "model".to_owned(),
            created: 0,
            owned_by: m.owned_by,
        })
        .collect();
    Json(ModelList {
        object: "list".to_owned(),
        data,
    })
}

/// `GET /metrics` (Prometheus text format; no auth, like health).
pub async fn metrics(State(state): State<AppState>) -> Result<Response, ApiError> {
    let snapshot = state.engine.metrics().await?;
    let text = crate::metrics::render(&snapshot)
        .map_err(|err| ApiError::Internal(format!("could not encode the metrics: {err}")))?;
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            crate::metrics::CONTENT_TYPE,
        )],
        text,
    )
        .into_response())
}

/// `GET /health`.
pub async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// `GET /openapi.json` (built once per process).
pub async fn openapi() -> Json<&'static Value> {
    Json(crate::openapi::document())
}

/// Any other path.
pub async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".to_owned())
}
