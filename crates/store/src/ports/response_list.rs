//! [`ResponseListStore`]: a project's responses by status, creation time and chain, newest
//! first (the `responses_project_created` index serves the order).

use engine::listing_store::{ListedResponse, ResponseFilter, ResponseListStore};
use engine::store::StoreError;
use sqlx::Row;

use super::{Db, DbRow, Store};
use crate::error;

#[async_trait::async_trait]
impl ResponseListStore for Store {
    async fn list_responses(
        &self,
        project_id: &str,
        filter: &ResponseFilter,
    ) -> Result<Vec<ListedResponse>, StoreError> {
        let mut query = sqlx::QueryBuilder::<Db>::new(
            "SELECT id, response_json, conversation_id FROM responses WHERE project_id = ",
        );
        query.push_bind(project_id);
        if !filter.include_hidden {
            query.push(" AND visible = 1");
        }
        if let Some(status) = &filter.status {
            query.push(" AND status = ").push_bind(status.as_str());
        }
        if let Some(from) = filter.created_after {
            query.push(" AND created_at >= ").push_bind(from);
        }
        if let Some(to) = filter.created_before {
            query.push(" AND created_at < ").push_bind(to);
        }
        if let Some(chain) = &filter.chain {
            query
                .push(" AND (conversation_id = ")
                .push_bind(chain.as_str())
                .push(" OR id = ")
                .push_bind(chain.as_str())
                .push(")");
        }
        if let Some((created_at, id)) = &filter.before {
            query
                .push(" AND (created_at < ")
                .push_bind(*created_at)
                .push(" OR (created_at = ")
                .push_bind(*created_at)
                .push(" AND id < ")
                .push_bind(id.as_str())
                .push("))");
        }
        query
            .push(" ORDER BY created_at DESC, id DESC LIMIT ")
            .push_bind(i64::from(filter.limit));
        let rows = query
            .build()
            .fetch_all(&self.reader)
            .await
            .map_err(error::backend)?;
        rows.iter().map(decode).collect()
    }
}

fn decode(row: &DbRow) -> Result<ListedResponse, StoreError> {
    let id: String = row
        .try_get("id")
        .map_err(|e| error::bad_column("a listed response", "id", e))?;
    let what = format!("response {id}");
    let json = super::json_columns::json_column(row, "response_json", &what)?;
    let chain: Option<String> = row
        .try_get("conversation_id")
        .map_err(|e| error::bad_column(&what, "conversation_id", e))?;
    Ok(ListedResponse {
        response: serde_json::from_str(&json)
            .map_err(|e| error::bad_json(&what, "response_json", &e))?,
        chain: chain.unwrap_or(id),
    })
}
