//! `GET /v1/admin/responses` (a page of the project's responses, with filters),
//! `GET /v1/admin/approvals` (its pending approvals) and
//! `GET /v1/admin/responses/{id}/turns` (a response's model turns with their times and tokens,
//! for the console's trace; never part of the public response object). Any key of the project
//! may read them, member keys included (they see their project's runs); a server-owner key may
//! name another project with `?project=`.

use axum::Json;
use axum::extract::State;
use engine::ResponseQuery;
use protocol::listing::{ModelTurnList, PendingApprovalList, ResponseList};

use crate::auth::Key;
use crate::error::ApiError;
use crate::params::{PathParams, QueryParams};
use crate::state::AppState;

/// The listing's query string.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    created_after: Option<i64>,
    #[serde(default)]
    created_before: Option<i64>,
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    limit: Option<u32>,
}

/// `?project=` alone.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsQuery {
    #[serde(default)]
    project: Option<String>,
}

pub async fn list_responses(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ListQuery>,
) -> Result<Json<ResponseList>, ApiError> {
    let project = state
        .engine
        .project_for(&key.0, query.project.as_deref())
        .await?;
    let filters = ResponseQuery {
        status: query.status,
        model: query.model,
        created_after: query.created_after,
        created_before: query.created_before,
        after: query.after,
        limit: query.limit,
    };
    Ok(Json(state.engine.list_responses(&project, &filters).await?))
}

pub async fn pending_approvals(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ApprovalsQuery>,
) -> Result<Json<PendingApprovalList>, ApiError> {
    let project = state
        .engine
        .project_for(&key.0, query.project.as_deref())
        .await?;
    Ok(Json(state.engine.pending_approvals(&project).await?))
}

pub async fn response_turns(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ApprovalsQuery>,
    PathParams(id): PathParams<String>,
) -> Result<Json<ModelTurnList>, ApiError> {
    let project = state
        .engine
        .project_for(&key.0, query.project.as_deref())
        .await?;
    Ok(Json(state.engine.response_turns(&project, &id).await?))
}
