//! Projects: a server-owner key creates and deletes them and sees all; an admin key sees and
//! renames its own. Deleting a project deletes everything it owns.

use protocol::admin::{Project, ProjectList};

use super::{Caller, random_id, store};
use crate::admin_store::{ProjectRecord, Role};
use crate::engine::Engine;
use crate::error::EngineError;
use crate::store::StoreError;

const MAX_NAME: usize = 128;

fn check_name(name: &str) -> Result<(), EngineError> {
    if name.trim().is_empty() || name.len() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(EngineError::invalid(
            "name",
            format!("a project name is 1 to {MAX_NAME} characters, no control characters"),
        ));
    }
    Ok(())
}

fn answer(record: ProjectRecord) -> Project {
    Project {
        id: record.id,
        object: "project".to_owned(),
        name: record.name,
        created_at: record.created_at,
    }
}

fn conflict(err: StoreError, name: &str) -> EngineError {
    match err {
        StoreError::Conflict(_) => {
            EngineError::Conflict(format!("a project named \"{name}\" already exists"))
        }
        other => other.into(),
    }
}

impl Engine {
    /// The project a caller acts on: its own, or (server-owner keys) the one named by id or
    /// name. Another project is 404 for any other key.
    pub async fn project_for(
        &self,
        caller: &Caller,
        requested: Option<&str>,
    ) -> Result<String, EngineError> {
        let Some(requested) = requested.filter(|r| *r != caller.project_id) else {
            return Ok(caller.project_id.clone());
        };
        let not_found = || EngineError::NotFound(format!("project \"{requested}\" not found"));
        if caller.role != Role::Owner {
            return Err(not_found());
        }
        let admin = store(&self.core)?;
        if let Some(project) = admin.get_project(requested).await? {
            return Ok(project.id);
        }
        Ok(admin
            .project_by_name(requested)
            .await?
            .ok_or_else(not_found)?
            .id)
    }

    pub async fn list_projects(&self, caller: &Caller) -> Result<ProjectList, EngineError> {
        caller.require_admin()?;
        let admin = store(&self.core)?;
        let projects = if caller.role == Role::Owner {
            admin.list_projects().await?
        } else {
            admin
                .get_project(&caller.project_id)
                .await?
                .into_iter()
                .collect()
        };
        Ok(ProjectList {
            object: "list".to_owned(),
            data: projects.into_iter().map(answer).collect(),
        })
    }

    pub async fn create_project(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<Project, EngineError> {
        caller.require_owner("creating a project")?;
        check_name(name)?;
        let record = ProjectRecord {
            id: random_id("proj"),
            name: name.to_owned(),
            created_at: self.core.clock.now_secs(),
        };
        store(&self.core)?
            .create_project(&record)
            .await
            .map_err(|e| conflict(e, name))?;
        Ok(answer(record))
    }

    pub async fn rename_project(
        &self,
        caller: &Caller,
        id: &str,
        name: &str,
    ) -> Result<Project, EngineError> {
        caller.require_admin()?;
        let id = self.project_for(caller, Some(id)).await?;
        check_name(name)?;
        let admin = store(&self.core)?;
        if !admin
            .rename_project(&id, name)
            .await
            .map_err(|e| conflict(e, name))?
        {
            return Err(EngineError::NotFound(format!("project \"{id}\" not found")));
        }
        let record = admin
            .get_project(&id)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("project \"{id}\" not found")))?;
        Ok(answer(record))
    }

    /// Deletes a project with its keys, responses, files, conversations and connectors, and
    /// what the built-in tools hold for it (the people imported into it) — that first, so a
    /// failure leaves the project there to delete again.
    pub async fn delete_project(&self, caller: &Caller, id: &str) -> Result<(), EngineError> {
        caller.require_owner("deleting a project")?;
        let id = self.project_for(caller, Some(id)).await?;
        let admin = store(&self.core)?;
        self.core.hosted.forget_project(&id).await.map_err(|err| {
            EngineError::Internal(format!(
                "cannot delete project \"{id}\": removing its tools' data failed: {err}"
            ))
        })?;
        if !admin.delete_project(&id).await? {
            return Err(EngineError::NotFound(format!("project \"{id}\" not found")));
        }
        Ok(())
    }

    /// The id of a project by name (the CLI's `--project NAME`), created when missing.
    pub async fn ensure_project(&self, name: &str) -> Result<String, EngineError> {
        check_name(name)?;
        Ok(self.core.store.ensure_project(name).await?)
    }
}
