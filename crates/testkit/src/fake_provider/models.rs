//! The model-list routes, answering the list set with
//! [`FakeProvider::set_models`](super::FakeProvider::set_models) in each provider's shape:
//!
//! - OpenAI (`GET {base}/models`, base `…/v1`): `{"object": "list", "data": [{"id", "object":
//!   "model", "created", "owned_by"}]}`, all at once.
//! - Anthropic (`GET /v1/models` with an `anthropic-version` header): `{"data": [{"id", "type":
//!   "model", "display_name", "created_at"}], "has_more", "first_id", "last_id"}`, paginated
//!   with `limit` (default 20, 1 to 1000) and `after_id` / `before_id`.
//! - Gemini (`GET /v1beta/models`): `{"models": [{"name": "models/{id}", "displayName",
//!   "supportedGenerationMethods", …}], "nextPageToken"}`, paginated with `pageSize` (default
//!   50, at most 1000) and the opaque `pageToken` of the previous page. A model whose id contains
//!   `embedding` supports only `embedContent`, as Google's embedding models do.

use axum::response::Response;
use providers::WireApi;
use serde_json::{Value, json};

use super::errors::error_response;
use super::render::{CREATED, json_response, query_param};

/// The list of `models` in `wire`'s shape, paginated as `query` asks.
pub(super) fn list(wire: WireApi, models: &[String], query: Option<&str>) -> Response {
    match wire {
        WireApi::ChatCompletions | WireApi::Responses => {
            json_response(200, openai(models).to_string())
        }
        WireApi::AnthropicMessages => match anthropic(models, query) {
            Ok(body) => json_response(200, body.to_string()),
            Err(message) => error_response(wire, 400, &message),
        },
        WireApi::Gemini => match gemini(models, query) {
            Ok(body) => json_response(200, body.to_string()),
            Err(message) => error_response(wire, 400, &message),
        },
    }
}

fn openai(models: &[String]) -> Value {
    let data: Vec<Value> = models
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": CREATED, "owned_by": "fake"}))
        .collect();
    json!({"object": "list", "data": data})
}

fn anthropic(models: &[String], query: Option<&str>) -> Result<Value, String> {
    let limit = match query_param(query, "limit") {
        None => 20,
        Some(limit) => match limit.parse::<usize>() {
            Ok(limit @ 1..=1000) => limit,
            _ => return Err(format!("limit: must be between 1 and 1000, not {limit:?}")),
        },
    };
    let position = |id: &str| {
        models
            .iter()
            .position(|model| model == id)
            .ok_or_else(|| format!("no model with id {id:?}"))
    };
    let (start, end) = match (
        query_param(query, "after_id"),
        query_param(query, "before_id"),
    ) {
        (Some(after), _) => {
            let start = position(&after)? + 1;
            (start, (start + limit).min(models.len()))
        }
        (None, Some(before)) => {
            let end = position(&before)?;
            (end.saturating_sub(limit), end)
        }
        (None, None) => (0, limit.min(models.len())),
    };
    let page = &models[start..end];
    let data: Vec<Value> = page
        .iter()
        .map(|id| {
            json!({"id": id, "type": "model", "display_name": display_name(id),
                "created_at": "2025-01-01T00:00:00Z"})
        })
        .collect();
    let has_more =
        if query_param(query, "before_id").is_some() && query_param(query, "after_id").is_none() {
            start > 0
        } else {
            end < models.len()
        };
    Ok(json!({
        "data": data,
        "has_more": has_more,
        "first_id": page.first(),
        "last_id": page.last(),
    }))
}

/// The prefix of Gemini's page tokens (the offset follows).
const PAGE_TOKEN: &str = "fake-page-";

fn gemini(models: &[String], query: Option<&str>) -> Result<Value, String> {
    let size = match query_param(query, "pageSize") {
        None => 50,
        Some(size) => match size.parse::<usize>() {
            Ok(0) => 50,
            Ok(size) => size.min(1000),
            Err(_) => return Err(format!("Invalid value for pageSize: {size:?}")),
        },
    };
    let start = match query_param(query, "pageToken").filter(|token| !token.is_empty()) {
        None => 0,
        Some(token) => token
            .strip_prefix(PAGE_TOKEN)
            .and_then(|offset| offset.parse::<usize>().ok())
            .filter(|offset| *offset <= models.len())
            .ok_or_else(|| format!("Invalid page token: {token:?}"))?,
    };
    let end = (start + size).min(models.len());
    let listed: Vec<Value> = models[start..end]
        .iter()
        .map(|id| {
            let methods = if id.contains("embedding") {
                json!(["embedContent"])
            } else {
                json!(["generateContent", "countTokens", "createCachedContent"])
            };
            json!({
                "name": format!("models/{id}"),
                "version": "001",
                "displayName": display_name(id),
                "inputTokenLimit": 1_048_576,
                "outputTokenLimit": 65_536,
                "supportedGenerationMethods": methods,
            })
        })
        .collect();
    let mut body = json!({"models": listed});
    if end < models.len() {
        body["nextPageToken"] = json!(format!("{PAGE_TOKEN}{end}"));
    }
    Ok(body)
}

/// `claude-sonnet-4-5` as `Claude Sonnet 4 5`: a readable name, as the providers give one.
fn display_name(id: &str) -> String {
    id.split(['-', '_'])
        .filter(|word| !word.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect(),
                None => String::new(),
            }
        })
        .collect::<Vec<String>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("m{i}")).collect()
    }

    #[test]
    fn anthropic_pages_follow_after_id() -> Result<(), String> {
        let models = ids(5);
        let first = anthropic(&models, Some("limit=2"))?;
        assert_eq!(first["data"][0]["id"], "m0");
        assert_eq!(first["has_more"], true);
        assert_eq!(first["last_id"], "m1");
        let last = anthropic(&models, Some("limit=3&after_id=m1"))?;
        let page: Vec<&Value> = last["data"].as_array().into_iter().flatten().collect();
        assert_eq!(page.len(), 3);
        assert_eq!(last["first_id"], "m2");
        assert_eq!(last["has_more"], false);
        let before = anthropic(&models, Some("limit=2&before_id=m3"))?;
        assert_eq!(before["first_id"], "m1");
        assert_eq!(before["has_more"], true);
        assert!(anthropic(&models, Some("limit=0")).is_err());
        assert!(anthropic(&models, Some("after_id=nope")).is_err());
        let empty = anthropic(&[], None)?;
        assert_eq!(empty["first_id"], Value::Null);
        Ok(())
    }

    #[test]
    fn gemini_pages_follow_the_token() -> Result<(), String> {
        let models = ids(3);
        let first = gemini(&models, Some("pageSize=2"))?;
        assert_eq!(first["models"][1]["name"], "models/m1");
        let token = first["nextPageToken"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let second = gemini(&models, Some(&format!("pageSize=2&pageToken={token}")))?;
        assert_eq!(second["models"][0]["name"], "models/m2");
        assert!(second.get("nextPageToken").is_none());
        assert!(gemini(&models, Some("pageToken=bogus")).is_err());
        Ok(())
    }

    #[test]
    fn display_names_are_readable() {
        assert_eq!(display_name("claude-sonnet-4-5"), "Claude Sonnet 4 5");
    }
}
