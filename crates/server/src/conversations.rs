//! The OpenAI Conversations API's handlers (`/v1/conversations…`): extract, make one engine
//! call (`engine::conversations`), answer its object. Project-scoped like responses: another
//! project's conversation is 404.

use std::collections::HashMap;

use axum::Json;
use axum::extract::State;
use protocol::conversations::{
    AddItems, Conversation, CreateConversation, Deleted, ItemList, Page, UpdateConversation,
};
use serde_json::Value;

use crate::auth::Project;
use crate::error::ApiError;
use crate::json::StrictJson;
use crate::params::{PathParams, QueryParams};
use crate::state::AppState;

/// The query parameters a list takes (`after`, `limit`, `order`), checked; `include` names
/// extra output data agentd does not have, so a non-empty one is refused by name.
pub fn page(query: &HashMap<String, String>) -> Result<Page, ApiError> {
    if let Some((name, _)) = query
        .iter()
        .find(|(name, value)| name.starts_with("include") && !value.is_empty())
    {
        return Err(ApiError::InvalidQuery {
            message: "include is not supported: agentd's items carry no optional data".to_owned(),
            param: name.clone(),
        });
    }
    Ok(Page::from_query(
        query.get("after").map(String::as_str),
        query.get("limit").map(String::as_str),
        query.get("order").map(String::as_str),
    )?)
}

/// `POST /v1/conversations`.
pub async fn create(
    State(state): State<AppState>,
    Project(project): Project,
    StrictJson(body): StrictJson<CreateConversation>,
) -> Result<Json<Conversation>, ApiError> {
    Ok(Json(
        state.engine.create_conversation(&project, body).await?,
    ))
}

/// `GET /v1/conversations/{id}`.
pub async fn get(
    State(state): State<AppState>,
    Project(project): Project,
    PathParams(id): PathParams<String>,
) -> Result<Json<Conversation>, ApiError> {
    Ok(Json(state.engine.get_conversation(&project, &id).await?))
}

/// `POST /v1/conversations/{id}`: replaces the metadata.
pub async fn update(
    State(state): State<AppState>,
    Project(project): Project,
    PathParams(id): PathParams<String>,
    StrictJson(body): StrictJson<UpdateConversation>,
) -> Result<Json<Conversation>, ApiError> {
    Ok(Json(
        state
            .engine
            .update_conversation(&project, &id, body)
            .await?,
    ))
}

/// `DELETE /v1/conversations/{id}`.
pub async fn delete(
    State(state): State<AppState>,
    Project(project): Project,
    PathParams(id): PathParams<String>,
) -> Result<Json<Deleted>, ApiError> {
    Ok(Json(state.engine.delete_conversation(&project, &id).await?))
}

/// `GET /v1/conversations/{id}/items`.
pub async fn items(
    State(state): State<AppState>,
    Project(project): Project,
    PathParams(id): PathParams<String>,
    QueryParams(query): QueryParams<HashMap<String, String>>,
) -> Result<Json<ItemList>, ApiError> {
    let page = page(&query)?;
    Ok(Json(
        state
            .engine
            .conversation_items(&project, &id, &page)
            .await?,
    ))
}

/// `POST /v1/conversations/{id}/items`: answers the added items.
pub async fn add_items(
    State(state): State<AppState>,
    Project(project): Project,
    PathParams(id): PathParams<String>,
    QueryParams(query): QueryParams<HashMap<String, String>>,
    StrictJson(body): StrictJson<AddItems>,
) -> Result<Json<ItemList>, ApiError> {
    page(&query)?;
    Ok(Json(
        state
            .engine
            .add_conversation_items(&project, &id, body)
            .await?,
    ))
}

/// `GET /v1/conversations/{id}/items/{item_id}`.
pub async fn item(
    State(state): State<AppState>,
    Project(project): Project,
    PathParams((id, item_id)): PathParams<(String, String)>,
    QueryParams(query): QueryParams<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    page(&query)?;
    Ok(Json(
        state
            .engine
            .conversation_item(&project, &id, &item_id)
            .await?,
    ))
}

/// `DELETE /v1/conversations/{id}/items/{item_id}`: answers the conversation.
pub async fn delete_item(
    State(state): State<AppState>,
    Project(project): Project,
    PathParams((id, item_id)): PathParams<(String, String)>,
) -> Result<Json<Conversation>, ApiError> {
    Ok(Json(
        state
            .engine
            .delete_conversation_item(&project, &id, &item_id)
            .await?,
    ))
}
