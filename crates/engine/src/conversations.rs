//! OpenAI's Conversations API, a response's input items, and deleting a response: the
//! project-scoped item routes. A run created with `conversation` reads the conversation's items
//! before its input and, when it ends, appends its input and output to it (`plan.rs`,
//! `run/finish.rs`, `Store::end_run`).

use protocol::conversations::{
    AddItems, Conversation, CreateConversation, Deleted, ItemList, MAX_ITEMS_PER_CALL, Page,
    UpdateConversation,
};
use protocol::input::InputItem;
use protocol::validate::check_metadata;
use serde_json::Value;

use crate::engine::Engine;
use crate::error::EngineError;
use crate::ids::new_id;
use crate::items;
use crate::store::{ConversationRecord, ItemKind, StoredItem};

/// Input items as stored conversation items (ids assigned where missing).
fn stored(mut items: Vec<InputItem>, param: &str) -> Result<Vec<StoredItem>, EngineError> {
    if items.len() > MAX_ITEMS_PER_CALL {
        return Err(EngineError::invalid(
            param,
            format!(
                "at most {MAX_ITEMS_PER_CALL} items can be added at a time, got {}",
                items.len()
            ),
        ));
    }
    if let Some(index) = items
        .iter()
        .position(|item| matches!(item, InputItem::ItemReference(_)))
    {
        return Err(EngineError::invalid(
            format!("{param}[{index}]"),
            "a conversation takes items, not item references",
        ));
    }
    items::assign_ids(&mut items);
    Ok(items::to_store(&items, &[]))
}

fn conversation(record: ConversationRecord) -> Conversation {
    Conversation {
        id: record.id,
        object: "conversation".to_owned(),
        created_at: record.created_at,
        metadata: record.metadata,
    }
}

/// Stored items as (id, wire item) pairs for a page.
fn pairs(items: Vec<StoredItem>) -> Vec<(String, Value)> {
    items
        .into_iter()
        .map(|item| {
            let wire = items::to_wire(&item.id, item.value());
            (item.id, wire)
        })
        .collect()
}

impl Engine {
    pub async fn create_conversation(
        &self,
        project_id: &str,
        body: CreateConversation,
    ) -> Result<Conversation, EngineError> {
        let metadata = body.metadata.unwrap_or_default();
        check_metadata(&metadata)?;
        let items = stored(body.items.unwrap_or_default(), "items")?;
        let record = ConversationRecord {
            id: new_id("conv"),
            project_id: project_id.to_owned(),
            created_at: self.core.clock.now_secs(),
            metadata,
        };
        self.core.store.create_conversation(&record, &items).await?;
        Ok(conversation(record))
    }

    pub async fn get_conversation(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Conversation, EngineError> {
        self.conversation_record(project_id, id)
            .await
            .map(conversation)
    }

    pub async fn update_conversation(
        &self,
        project_id: &str,
        id: &str,
        body: UpdateConversation,
    ) -> Result<Conversation, EngineError> {
        check_metadata(&body.metadata)?;
        let mut record = self.conversation_record(project_id, id).await?;
        record.metadata = body.metadata;
        if !self.core.store.update_conversation(&record).await? {
            return Err(not_found(id));
        }
        Ok(conversation(record))
    }

    pub async fn delete_conversation(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Deleted, EngineError> {
        if !self.core.store.delete_conversation(project_id, id).await? {
            return Err(not_found(id));
        }
        Ok(Deleted {
            id: id.to_owned(),
            object: "conversation.deleted".to_owned(),
            deleted: true,
        })
    }

    pub async fn conversation_items(
        &self,
        project_id: &str,
        id: &str,
        page: &Page,
    ) -> Result<ItemList, EngineError> {
        self.conversation_record(project_id, id).await?;
        let items = self.core.store.conversation_items(project_id, id).await?;
        Ok(page.of(pairs(items))?)
    }

    /// Adds items; answers the added items as a list.
    pub async fn add_conversation_items(
        &self,
        project_id: &str,
        id: &str,
        body: AddItems,
    ) -> Result<ItemList, EngineError> {
        let items = stored(body.items, "items")?;
        if !self
            .core
            .store
            .append_conversation_items(project_id, id, &items)
            .await?
        {
            return Err(not_found(id));
        }
        let count = items.len();
        Ok(Page {
            after: None,
            limit: count.max(1),
            order: protocol::conversations::Order::Asc,
        }
        .of(pairs(items))?)
    }

    pub async fn conversation_item(
        &self,
        project_id: &str,
        id: &str,
        item_id: &str,
    ) -> Result<Value, EngineError> {
        self.conversation_record(project_id, id).await?;
        self.core
            .store
            .conversation_items(project_id, id)
            .await?
            .into_iter()
            .rev()
            .find(|item| item.id == item_id)
            .map(|item| items::to_wire(&item.id, item.value()))
            .ok_or_else(|| {
                EngineError::NotFound(format!(
                    "item \"{item_id}\" of conversation \"{id}\" not found"
                ))
            })
    }

    /// Removes an item; answers the conversation.
    pub async fn delete_conversation_item(
        &self,
        project_id: &str,
        id: &str,
        item_id: &str,
    ) -> Result<Conversation, EngineError> {
        let record = self.conversation_record(project_id, id).await?;
        if !self
            .core
            .store
            .delete_conversation_item(project_id, id, item_id)
            .await?
        {
            return Err(EngineError::NotFound(format!(
                "item \"{item_id}\" of conversation \"{id}\" not found"
            )));
        }
        Ok(conversation(record))
    }

    /// The input items of a response of this project (its request's, ids included).
    pub async fn input_items(
        &self,
        project_id: &str,
        id: &str,
        page: &Page,
    ) -> Result<ItemList, EngineError> {
        self.get_response(project_id, id).await?;
        let items = self
            .core
            .store
            .response_items(project_id, id, ItemKind::Input)
            .await?;
        Ok(page.of(pairs(items))?)
    }

    /// Deletes a response of this project: afterwards it is 404, with its events, items and
    /// files. A run still going is refused (cancel it first).
    pub async fn delete_response(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Deleted, EngineError> {
        let record = self
            .core
            .response(project_id, id)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("response \"{id}\" not found")))?;
        if !record.response.status.is_terminal() {
            return Err(EngineError::invalid(
                "id",
                format!(
                    "response \"{id}\" is still {}: cancel it before deleting it",
                    record.response.status.as_str()
                ),
            ));
        }
        if !self.core.store.delete_response(project_id, id).await? {
            return Err(EngineError::NotFound(format!(
                "response \"{id}\" not found"
            )));
        }
        Ok(Deleted {
            id: id.to_owned(),
            object: "response.deleted".to_owned(),
            deleted: true,
        })
    }

    async fn conversation_record(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<ConversationRecord, EngineError> {
        self.core
            .store
            .get_conversation(project_id, id)
            .await?
            .ok_or_else(|| not_found(id))
    }
}

fn not_found(id: &str) -> EngineError {
    EngineError::NotFound(format!("conversation \"{id}\" not found"))
}
