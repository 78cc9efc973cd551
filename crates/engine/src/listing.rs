//! A project's responses a page at a time (status, model and creation-time filters) and its
//! pending approvals: `mcp_approval_request` items no continuation has answered yet. The
//! console's responses and approvals pages read these (`GET /v1/admin/responses`,
//! `GET /v1/admin/approvals`); they read the store through [`ResponseListStore`].

use std::collections::HashSet;

use protocol::listing::{PendingApproval, PendingApprovalList, ResponseList};
use protocol::output::OutputItem;
use protocol::response::{Response, ResponseStatus};

use crate::admin;
use crate::engine::Engine;
use crate::error::EngineError;
use crate::listing_store::{ListedResponse, ResponseFilter, ResponseListStore};
use crate::store::ItemKind;

/// A page holds at most this many responses.
pub const MAX_PAGE: u32 = 100;
/// The page size when the query gives none.
const DEFAULT_PAGE: u32 = 20;
/// Rows read from the store at a time while filtering by model.
const BATCH: u32 = 200;
/// A listing (or the approvals scan) looks at most at this many responses; a model filter that
/// matches nothing among them answers `has_more` with the cursor to go on from.
const MAX_SCAN: usize = 2000;
/// The pending approvals answer holds at most this many requests.
const MAX_APPROVALS: usize = 100;

/// What `GET /v1/admin/responses` asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResponseQuery {
    pub status: Option<String>,
    /// The model id (`openai/gpt-5.4`, or `gpt-5.4` for any provider's).
    pub model: Option<String>,
    /// Created at or after (Unix seconds).
    pub created_after: Option<i64>,
    /// Created before (Unix seconds).
    pub created_before: Option<i64>,
    /// The cursor: responses after this one in the newest-first order.
    pub after: Option<String>,
    pub limit: Option<u32>,
}

const STATUSES: [ResponseStatus; 8] = [
    ResponseStatus::Queued,
    ResponseStatus::InProgress,
    ResponseStatus::Completed,
    ResponseStatus::Failed,
    ResponseStatus::Cancelled,
    ResponseStatus::RequiresAction,
    ResponseStatus::Incomplete,
    ResponseStatus::Cancelling,
];

fn model_matches(wanted: &str, model: &str) -> bool {
    model == wanted
        || model
            .split_once('/')
            .is_some_and(|(_, name)| name == wanted)
}

impl Engine {
    /// A page of the project's responses (`store: false` ones are never listed), newest first.
    pub async fn list_responses(
        &self,
        project_id: &str,
        query: &ResponseQuery,
    ) -> Result<ResponseList, EngineError> {
        let store = admin::store(&self.core)?;
        if let Some(status) = &query.status
            && !STATUSES.iter().any(|s| s.as_str() == status)
        {
            let known: Vec<&str> = STATUSES.iter().map(|s| s.as_str()).collect();
            return Err(EngineError::invalid(
                "status",
                format!("status must be one of {}", known.join(", ")),
            ));
        }
        let limit = query.limit.unwrap_or(DEFAULT_PAGE);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(EngineError::invalid(
                "limit",
                format!("limit must be in 1..={MAX_PAGE}"),
            ));
        }
        if let (Some(from), Some(to)) = (query.created_after, query.created_before)
            && from > to
        {
            return Err(EngineError::invalid(
                "created_after",
                "created_after is after created_before",
            ));
        }
        let before = match &query.after {
            None => None,
            Some(id) => match self.core.response(project_id, id).await? {
                Some(record) if record.visible => Some((record.created_at, id.clone())),
                _ => {
                    return Err(EngineError::invalid(
                        "after",
                        format!("after: response \"{id}\" not found"),
                    ));
                }
            },
        };
        let mut filter = ResponseFilter {
            status: query.status.clone(),
            created_after: query.created_after,
            created_before: query.created_before,
            chain: None,
            before,
            include_hidden: false,
            // One more than the page tells whether there is a next page.
            limit: if query.model.is_some() {
                BATCH
            } else {
                limit + 1
            },
        };
        let mut data: Vec<Response> = Vec::new();
        let mut has_more = false;
        let mut scanned = 0usize;
        let mut last_looked_at: Option<String> = None;
        'pages: loop {
            let batch = store.list_responses(project_id, &filter).await?;
            let full = batch.len() as u32 == filter.limit;
            for listed in batch {
                let response = listed.response;
                if data.len() == limit as usize {
                    has_more = true;
                    break 'pages;
                }
                scanned += 1;
                filter.before = Some((response.created_at, response.id.clone()));
                last_looked_at = Some(response.id.clone());
                let wanted = query
                    .model
                    .as_deref()
                    .is_none_or(|model| model_matches(model, &response.model));
                if wanted {
                    data.push(response);
                }
            }
            if !full || query.model.is_none() {
                break;
            }
            if scanned >= MAX_SCAN {
                has_more = true;
                break;
            }
        }
        let last_id = if has_more && query.model.is_some() {
            last_looked_at
        } else {
            data.last().map(|r| r.id.clone())
        };
        Ok(ResponseList {
            object: "list".to_owned(),
            first_id: data.first().map(|r| r.id.clone()),
            last_id,
            has_more,
            data,
        })
    }

    /// The project's `mcp_approval_request` items that no continuation answered, newest
    /// response first (among its most recent responses).
    pub async fn pending_approvals(
        &self,
        project_id: &str,
    ) -> Result<PendingApprovalList, EngineError> {
        let store = admin::store(&self.core)?;
        let mut filter = ResponseFilter {
            limit: BATCH,
            ..ResponseFilter::default()
        };
        let mut data = Vec::new();
        let mut scanned = 0usize;
        'pages: loop {
            let batch = store.list_responses(project_id, &filter).await?;
            let full = batch.len() as u32 == filter.limit;
            for listed in batch {
                scanned += 1;
                let response = &listed.response;
                filter.before = Some((response.created_at, response.id.clone()));
                if !response.status.is_terminal() || !has_approval_request(response) {
                    continue;
                }
                let answered = self.answered(store.as_ref(), project_id, &listed).await?;
                for item in &response.output {
                    let OutputItem::McpApprovalRequest(request) = item else {
                        continue;
                    };
                    if answered.contains(&request.id) {
                        continue;
                    }
                    data.push(PendingApproval {
                        id: request.id.clone(),
                        response_id: response.id.clone(),
                        model: response.model.clone(),
                        created_at: response.created_at,
                        server_label: request.server_label.clone(),
                        name: request.name.clone(),
                        arguments: request.arguments.clone(),
                        connector_id: request.connector_id.clone(),
                    });
                    if data.len() == MAX_APPROVALS {
                        break 'pages;
                    }
                }
            }
            if !full || scanned >= MAX_SCAN {
                break;
            }
        }
        Ok(PendingApprovalList {
            object: "list".to_owned(),
            data,
        })
    }

    /// The approval request ids the continuations of a response answered (`store: false`
    /// continuations included).
    async fn answered(
        &self,
        store: &dyn ResponseListStore,
        project_id: &str,
        listed: &ListedResponse,
    ) -> Result<HashSet<String>, EngineError> {
        let id = &listed.response.id;
        let chain = ResponseFilter {
            chain: Some(listed.chain.clone()),
            include_hidden: true,
            limit: BATCH,
            ..ResponseFilter::default()
        };
        let mut answered = HashSet::new();
        for next in store.list_responses(project_id, &chain).await? {
            if next.response.previous_response_id.as_deref() != Some(id.as_str()) {
                continue;
            }
            let items = self
                .core
                .store
                .response_items(project_id, &next.response.id, ItemKind::Input)
                .await?;
            answered.extend(items.iter().filter_map(|stored| {
                let item = stored.value();
                (item["type"] == "mcp_approval_response")
                    .then(|| item["approval_request_id"].as_str().map(str::to_owned))
                    .flatten()
            }));
        }
        Ok(answered)
    }
}

fn has_approval_request(response: &Response) -> bool {
    response
        .output
        .iter()
        .any(|item| matches!(item, OutputItem::McpApprovalRequest(_)))
}
