//! The response listing port: a project's responses by status, creation time and chain, newest
//! first, a page at a time (the console's responses and approvals pages, through `listing`).

use protocol::response::Response;

use crate::store::StoreError;

/// What [`ResponseListStore::list_responses`] selects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResponseFilter {
    /// Only responses with this status (`completed`, …).
    pub status: Option<String>,
    /// Created at or after (Unix seconds).
    pub created_after: Option<i64>,
    /// Created before (Unix seconds).
    pub created_before: Option<i64>,
    /// Only the responses of this `previous_response_id` chain (its first response's id).
    pub chain: Option<String>,
    /// Only rows older than this `(created_at, id)` in the newest-first order (the page cursor).
    pub before: Option<(i64, String)>,
    /// `store: false` responses too (they are never listed to callers, but they can continue
    /// another response).
    pub include_hidden: bool,
    /// At most this many rows.
    pub limit: u32,
}

/// A listed response with the chain it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedResponse {
    pub response: Response,
    /// The first response of its `previous_response_id` chain (itself for a first one).
    pub chain: String,
}

#[async_trait::async_trait]
pub trait ResponseListStore: Send + Sync {
    /// The project's responses matching `filter`, newest first (creation time, then id, both
    /// descending), at most `filter.limit`.
    async fn list_responses(
        &self,
        project_id: &str,
        filter: &ResponseFilter,
    ) -> Result<Vec<ListedResponse>, StoreError>;
}
