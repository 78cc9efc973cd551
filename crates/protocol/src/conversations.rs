//! OpenAI's Conversations API and the other item routes: the bodies they take (strict, like the
//! create request) and the objects they answer.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::input::InputItem;
use crate::strict::RequestError;

/// Most items one create or add call may carry (OpenAI's limit).
pub const MAX_ITEMS_PER_CALL: usize = 20;
/// Largest page of a list.
pub const MAX_PAGE: usize = 100;
/// The page size when `limit` is not given.
pub const DEFAULT_PAGE: usize = 20;

/// `POST /v1/conversations`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateConversation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<InputItem>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
}

/// `POST /v1/conversations/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct UpdateConversation {
    pub metadata: BTreeMap<String, String>,
}

/// `POST /v1/conversations/{id}/items`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AddItems {
    pub items: Vec<InputItem>,
}

/// A conversation (`object: "conversation"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Conversation {
    pub id: String,
    #[cfg_attr(feature = "schema", schemars(extend("const" = "conversation")))]
    pub object: String,
    pub created_at: i64,
    pub metadata: BTreeMap<String, String>,
}

/// The answer to a delete (`conversation.deleted`, `response.deleted`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Deleted {
    pub id: String,
    pub object: String,
    pub deleted: bool,
}

/// A page of items (`object: "list"`), in their wire form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ItemList {
    #[cfg_attr(feature = "schema", schemars(extend("const" = "list")))]
    pub object: String,
    pub data: Vec<Value>,
    pub first_id: Option<String>,
    pub last_id: Option<String>,
    pub has_more: bool,
}

/// The order of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Order {
    Asc,
    #[default]
    Desc,
}

/// Which page of a list (`after`, `limit`, `order` query parameters).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Page {
    /// Start after the item with this id.
    pub after: Option<String>,
    pub limit: usize,
    pub order: Order,
}

impl Page {
    /// A page from query parameters, checked: 400 naming the parameter.
    pub fn from_query(
        after: Option<&str>,
        limit: Option<&str>,
        order: Option<&str>,
    ) -> Result<Page, RequestError> {
        let limit = match limit {
            None => DEFAULT_PAGE,
            Some(text) => match text.parse::<usize>() {
                Ok(n) if (1..=MAX_PAGE).contains(&n) => n,
                _ => {
                    return Err(RequestError::new(
                        "limit",
                        format!("limit must be an integer from 1 to {MAX_PAGE}"),
                    ));
                }
            },
        };
        let order = match order {
            None | Some("desc") => Order::Desc,
            Some("asc") => Order::Asc,
            Some(_) => return Err(RequestError::new("order", "order must be asc or desc")),
        };
        Ok(Page {
            after: after.filter(|a| !a.is_empty()).map(str::to_owned),
            limit,
            order,
        })
    }

    /// This page of `items` (in their stored order, oldest first). An `after` that names no
    /// item is a 400.
    pub fn of(&self, mut items: Vec<(String, Value)>) -> Result<ItemList, RequestError> {
        if self.order == Order::Desc {
            items.reverse();
        }
        let start = match &self.after {
            None => 0,
            Some(after) => match items.iter().position(|(id, _)| id == after) {
                Some(at) => at + 1,
                None => {
                    return Err(RequestError::new(
                        "after",
                        format!("no item \"{after}\" in this list"),
                    ));
                }
            },
        };
        let rest = items.len().saturating_sub(start);
        let page: Vec<(String, Value)> = items.into_iter().skip(start).take(self.limit).collect();
        Ok(ItemList {
            object: "list".to_owned(),
            first_id: page.first().map(|(id, _)| id.clone()),
            last_id: page.last().map(|(id, _)| id.clone()),
            has_more: rest > page.len(),
            data: page.into_iter().map(|(_, item)| item).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn items(n: usize) -> Vec<(String, Value)> {
        (0..n)
            .map(|i| (format!("i{i}"), json!({"id": format!("i{i}")})))
            .collect()
    }

    #[test]
    fn pages_follow_after_limit_and_order() {
        let page = Page::from_query(None, Some("2"), Some("asc")).unwrap();
        let first = page.of(items(5)).unwrap();
        assert_eq!(first.first_id.as_deref(), Some("i0"));
        assert_eq!(first.last_id.as_deref(), Some("i1"));
        assert!(first.has_more);
        let next = Page::from_query(Some("i3"), Some("2"), Some("asc"))
            .unwrap()
            .of(items(5))
            .unwrap();
        assert_eq!(next.data, vec![json!({"id": "i4"})]);
        assert!(!next.has_more);
        let newest = Page::from_query(None, None, None)
            .unwrap()
            .of(items(3))
            .unwrap();
        assert_eq!(newest.first_id.as_deref(), Some("i2"));
        assert!(Page::from_query(None, Some("0"), None).is_err());
        assert!(Page::from_query(None, Some("101"), None).is_err());
        assert!(Page::from_query(None, None, Some("up")).is_err());
        let unknown = Page::from_query(Some("nope"), None, None)
            .unwrap()
            .of(items(2));
        assert_eq!(unknown.unwrap_err().param.as_deref(), Some("after"));
    }
}
