//! `POST /v1/{responses|agent}/compact`: one engine call (`Engine::compact`), the
//! `response.compaction` object as the answer.

use axum::Json;
use axum::extract::State;
use protocol::compact::{CompactRequest, CompactResource};

use crate::auth::Project;
use crate::error::ApiError;
use crate::json::StrictJson;
use crate::state::AppState;

/// Summarises the conversation into a `compaction` item (the model is asked at once).
pub async fn compact(
    State(state): State<AppState>,
    Project(project): Project,
    StrictJson(body): StrictJson<CompactRequest>,
) -> Result<Json<CompactResource>, ApiError> {
    Ok(Json(state.engine.compact(&project, body).await?))
}
