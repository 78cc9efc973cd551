//! Reads of stored objects: responses, their model turns, their event logs and their files (404
//! for unknown ids, other projects' objects, and hidden responses where retrieval is
//! concerned).

use protocol::listing::ModelTurnList;
use protocol::response::Response;

use crate::engine::Engine;
use crate::error::EngineError;
use crate::store::{EventRecord, FileRecord};

impl Engine {
    /// A stored response of this project (404 for unknown, other projects' and `store: false`).
    pub async fn get_response(&self, project_id: &str, id: &str) -> Result<Response, EngineError> {
        match self.core.response(project_id, id).await? {
            Some(record) if record.visible => Ok(record.response),
            _ => Err(EngineError::NotFound(format!(
                "response \"{id}\" not found"
            ))),
        }
    }

    /// The model turns of a stored response of this project, in the order they ran (404 like
    /// [`Engine::get_response`]; empty while the run goes on: they are stored when it ends).
    pub async fn response_turns(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<ModelTurnList, EngineError> {
        match self.core.response(project_id, id).await? {
            Some(record) if record.visible => Ok(ModelTurnList {
                object: "list".to_owned(),
                response_id: record.id,
                data: record.turns,
            }),
            _ => Err(EngineError::NotFound(format!(
                "response \"{id}\" not found"
            ))),
        }
    }

    /// The stored event log of a response of this project (`store: false` ones included: the
    /// log serves resumes, not retrieval).
    pub async fn stored_events(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Vec<EventRecord>, EngineError> {
        if self.core.response(project_id, id).await?.is_none() {
            return Err(EngineError::NotFound(format!(
                "response \"{id}\" not found"
            )));
        }
        Ok(self.core.store.events_after(id, None).await?)
    }

    /// The files a response of this project shared (404 for an unknown response).
    pub async fn list_files(
        &self,
        project_id: &str,
        response_id: &str,
    ) -> Result<Vec<FileRecord>, EngineError> {
        self.require_response(project_id, response_id).await?;
        Ok(self.core.store.list_files(project_id, response_id).await?)
    }

    /// One shared file with its bytes (404 for an unknown response or file).
    pub async fn file_content(
        &self,
        project_id: &str,
        response_id: &str,
        file_id: &str,
    ) -> Result<(FileRecord, Vec<u8>), EngineError> {
        self.require_response(project_id, response_id).await?;
        self.core
            .store
            .get_file(project_id, response_id, file_id)
            .await?
            .ok_or_else(|| {
                EngineError::NotFound(format!(
                    "file \"{file_id}\" of response \"{response_id}\" not found"
                ))
            })
    }

    async fn require_response(&self, project_id: &str, id: &str) -> Result<(), EngineError> {
        match self.core.response(project_id, id).await? {
            Some(_) => Ok(()),
            None => Err(EngineError::NotFound(format!(
                "response \"{id}\" not found"
            ))),
        }
    }
}
