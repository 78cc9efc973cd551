//! Admin handlers: extract the caller (key, project, role), resolve the project it acts on
//! (its own; a server-owner key may name another with `?project=`), make one engine call.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use protocol::admin::{
    ApiKey, ApiKeyList, Connector, ConnectorCreate, ConnectorEventList, ConnectorList,
    ConnectorPatch, ConnectorRotate, ConnectorSummaryList, ConnectorTestResult, ConnectorToolList,
    Deleted, KeyCreate, Project, ProjectBody, ProjectList,
};

use super::body::AdminBody;
use crate::auth::Key;
use crate::error::ApiError;
use crate::params::{PathParams, QueryParams};
use crate::state::AppState;

/// `?project=` (a project id or name; server-owner keys only).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectQuery {
    #[serde(default)]
    project: Option<String>,
}

pub(super) async fn project(
    state: &AppState,
    key: &Key,
    query: &ProjectQuery,
) -> Result<String, ApiError> {
    key.0.require_admin()?;
    Ok(state
        .engine
        .project_for(&key.0, query.project.as_deref())
        .await?)
}

fn deleted(id: String, object: &str) -> Json<Deleted> {
    Json(Deleted {
        id,
        object: object.to_owned(),
        deleted: true,
    })
}

fn created<T: serde::Serialize>(value: T) -> Response {
    (StatusCode::CREATED, Json(value)).into_response()
}

pub async fn list_projects(
    State(state): State<AppState>,
    key: Key,
) -> Result<Json<ProjectList>, ApiError> {
    Ok(Json(state.engine.list_projects(&key.0).await?))
}

pub async fn create_project(
    State(state): State<AppState>,
    key: Key,
    AdminBody(body): AdminBody<ProjectBody>,
) -> Result<Response, ApiError> {
    let project: Project = state.engine.create_project(&key.0, &body.name).await?;
    Ok(created(project))
}

pub async fn rename_project(
    State(state): State<AppState>,
    key: Key,
    PathParams(id): PathParams<String>,
    AdminBody(body): AdminBody<ProjectBody>,
) -> Result<Json<Project>, ApiError> {
    Ok(Json(
        state.engine.rename_project(&key.0, &id, &body.name).await?,
    ))
}

pub async fn delete_project(
    State(state): State<AppState>,
    key: Key,
    PathParams(id): PathParams<String>,
) -> Result<Json<Deleted>, ApiError> {
    state.engine.delete_project(&key.0, &id).await?;
    Ok(deleted(id, "project"))
}

pub async fn list_keys(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ProjectQuery>,
) -> Result<Json<ApiKeyList>, ApiError> {
    let project = project(&state, &key, &query).await?;
    Ok(Json(state.engine.list_api_keys(&key.0, &project).await?))
}

pub async fn create_key(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ProjectQuery>,
    AdminBody(body): AdminBody<KeyCreate>,
) -> Result<Response, ApiError> {
    let project = project(&state, &key, &query).await?;
    let created_key: ApiKey = state
        .engine
        .create_api_key(&key.0, &project, body.name, body.role.as_deref())
        .await?;
    Ok(created(created_key))
}

pub async fn revoke_key(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ProjectQuery>,
    PathParams(id): PathParams<String>,
) -> Result<Json<Deleted>, ApiError> {
    let project = project(&state, &key, &query).await?;
    state.engine.revoke_api_key(&key.0, &project, &id).await?;
    state.auth.forget_key(&id);
    Ok(deleted(id, "api_key"))
}

pub async fn list_connectors(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ProjectQuery>,
) -> Result<Json<ConnectorList>, ApiError> {
    let project = project(&state, &key, &query).await?;
    Ok(Json(state.engine.list_connectors(&key.0, &project).await?))
}

pub async fn create_connector(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ProjectQuery>,
    AdminBody(body): AdminBody<ConnectorCreate>,
) -> Result<Response, ApiError> {
    let project = project(&state, &key, &query).await?;
    let connector: Connector = state
        .engine
        .create_connector(&key.0, &project, body)
        .await?;
    Ok(created(connector))
}

pub async fn test_draft(
    State(state): State<AppState>,
    key: Key,
    AdminBody(body): AdminBody<ConnectorCreate>,
) -> Result<Json<ConnectorTestResult>, ApiError> {
    key.0.require_admin()?;
    Ok(Json(state.engine.test_connector_draft(&key.0, body).await?))
}

pub async fn get_connector(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ProjectQuery>,
    PathParams(id): PathParams<String>,
) -> Result<Json<Connector>, ApiError> {
    let project = project(&state, &key, &query).await?;
    Ok(Json(
        state.engine.get_connector(&key.0, &project, &id).await?,
    ))
}

pub async fn update_connector(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ProjectQuery>,
    PathParams(id): PathParams<String>,
    AdminBody(body): AdminBody<ConnectorPatch>,
) -> Result<Json<Connector>, ApiError> {
    let project = project(&state, &key, &query).await?;
    Ok(Json(
        state
            .engine
            .update_connector(&key.0, &project, &id, body)
            .await?,
    ))
}

pub async fn delete_connector(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ProjectQuery>,
    PathParams(id): PathParams<String>,
) -> Result<Json<Deleted>, ApiError> {
    let project = project(&state, &key, &query).await?;
    state.engine.delete_connector(&key.0, &project, &id).await?;
    Ok(deleted(id, "connector"))
}

pub async fn test_connector(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ProjectQuery>,
    PathParams(id): PathParams<String>,
) -> Result<Json<ConnectorTestResult>, ApiError> {
    let project = project(&state, &key, &query).await?;
    Ok(Json(
        state.engine.test_connector(&key.0, &project, &id).await?,
    ))
}

pub async fn rotate_connector(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ProjectQuery>,
    PathParams(id): PathParams<String>,
    AdminBody(body): AdminBody<ConnectorRotate>,
) -> Result<Json<Connector>, ApiError> {
    let project = project(&state, &key, &query).await?;
    Ok(Json(
        state
            .engine
            .rotate_connector(&key.0, &project, &id, body)
            .await?,
    ))
}

pub async fn connector_tools(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ProjectQuery>,
    PathParams(id): PathParams<String>,
) -> Result<Json<ConnectorToolList>, ApiError> {
    let project = project(&state, &key, &query).await?;
    Ok(Json(
        state.engine.connector_tools(&key.0, &project, &id).await?,
    ))
}

pub async fn connector_events(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ProjectQuery>,
    PathParams(id): PathParams<String>,
) -> Result<Json<ConnectorEventList>, ApiError> {
    let project = project(&state, &key, &query).await?;
    Ok(Json(
        state.engine.connector_events(&key.0, &project, &id).await?,
    ))
}

/// `GET /v1/connectors`: every key of the project (member keys included).
pub async fn public_connectors(
    State(state): State<AppState>,
    key: Key,
) -> Result<Json<ConnectorSummaryList>, ApiError> {
    Ok(Json(
        state.engine.connector_summaries(&key.0.project_id).await?,
    ))
}
