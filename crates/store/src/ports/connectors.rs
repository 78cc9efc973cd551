//! [`ConnectorStore`]: saved connectors (credentials arrive and leave sealed), with their audit
//! events (`connector_events.rs`), OAuth grants (`oauth_grants.rs`) and the re-seal of every
//! sealed value under a new key (`reseal.rs`).

use super::DbRow;
use engine::admin_store::{
    ConnectorEvent, ConnectorRecord, ConnectorStore, OAuthGrantRecord, Resealer, SealedTokens,
};
use engine::store::StoreError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::Row;
use sqlx::error::ErrorKind;

use super::{Db, Store, connector_events, oauth_grants, reseal};
use crate::error;

macro_rules! columns {
    () => {
        "\
SELECT project_id, id, server_label, server_url, transport, description, auth_kind,
       authorization_sealed, headers_json, allowed_tools_json, require_approval_json,
       defer_loading, timeout_ms, enabled, sandbox_env_json, secret_version, status,
       last_checked_at, last_error, created_at, updated_at
FROM connectors"
    };
}

const INSERT: &str = "\
INSERT INTO connectors (project_id, id, server_label, server_url, transport, description,
    auth_kind, authorization_sealed, headers_json, allowed_tools_json, require_approval_json,
    defer_loading, timeout_ms, enabled, sandbox_env_json, secret_version, status,
    last_checked_at, last_error, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19,
    $20, $21)";

const UPDATE: &str = "\
UPDATE connectors SET server_label = $3, server_url = $4, transport = $5, description = $6,
    auth_kind = $7, authorization_sealed = $8, headers_json = $9, allowed_tools_json = $10,
    require_approval_json = $11, defer_loading = $12, timeout_ms = $13, enabled = $14,
    sandbox_env_json = $15, secret_version = $16, status = $17, last_checked_at = $18,
    last_error = $19, created_at = $20, updated_at = $21
WHERE project_id = $1 AND id = $2";

fn to_json<T: Serialize>(value: &T, what: &str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(format!("{what}: {e}")))
}

fn opt_json<T: Serialize>(value: Option<&T>, what: &str) -> Result<Option<String>, StoreError> {
    value.map(|v| to_json(v, what)).transpose()
}

fn from_json<T: DeserializeOwned>(text: &str, what: &str, column: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| error::bad_json(what, column, &e))
}

/// Runs [`INSERT`] or [`UPDATE`] with the record's values (both bind the same 21 in order).
async fn write(
    pool: &sqlx::Pool<Db>,
    sql: &'static str,
    r: &ConnectorRecord,
) -> Result<<Db as sqlx::Database>::QueryResult, sqlx::Error> {
    let what = format!("connector {}", r.id);
    let encode = |e: StoreError| sqlx::Error::Protocol(e.to_string());
    sqlx::query(sql)
        .bind(r.project_id.as_str())
        .bind(r.id.as_str())
        .bind(r.server_label.as_str())
        .bind(r.server_url.as_str())
        .bind(r.transport.as_str())
        .bind(r.description.as_deref())
        .bind(r.auth_kind.as_str())
        .bind(r.authorization.as_deref())
        .bind(to_json(&r.headers, &what).map_err(encode)?)
        .bind(opt_json(r.allowed_tools.as_ref(), &what).map_err(encode)?)
        .bind(opt_json(r.require_approval.as_ref(), &what).map_err(encode)?)
        .bind(i64::from(r.defer_loading))
        .bind(r.timeout_ms)
        .bind(i64::from(r.enabled))
        .bind(to_json(&r.sandbox_env, &what).map_err(encode)?)
        .bind(r.secret_version)
        .bind(r.status.as_str())
        .bind(r.last_checked_at)
        .bind(r.last_error.as_deref())
        .bind(r.created_at)
        .bind(r.updated_at)
        .execute(pool)
        .await
}

#[async_trait::async_trait]
impl ConnectorStore for Store {
    async fn insert_connector(&self, record: &ConnectorRecord) -> Result<(), StoreError> {
        write(&self.writer, INSERT, record).await.map_err(|e| {
            match e.as_database_error().map(|d| d.kind()) {
                Some(ErrorKind::UniqueViolation) => {
                    StoreError::Conflict(format!("connector \"{}\"", record.id))
                }
                _ => error::backend(e),
            }
        })?;
        Ok(())
    }

    async fn get_connector(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ConnectorRecord>, StoreError> {
        let row = sqlx::query(concat!(columns!(), " WHERE project_id = $1 AND id = $2"))
            .bind(project_id)
            .bind(id)
            .fetch_optional(&self.writer)
            .await
            .map_err(error::backend)?;
        row.as_ref().map(decode).transpose()
    }

    async fn list_connectors(&self, project_id: &str) -> Result<Vec<ConnectorRecord>, StoreError> {
        let rows = sqlx::query(concat!(
            columns!(),
            " WHERE project_id = $1 ORDER BY created_at, id"
        ))
        .bind(project_id)
        .fetch_all(&self.reader)
        .await
        .map_err(error::backend)?;
        rows.iter().map(decode).collect()
    }

    async fn update_connector(&self, record: &ConnectorRecord) -> Result<bool, StoreError> {
        let done = write(&self.writer, UPDATE, record)
            .await
            .map_err(error::backend)?;
        Ok(done.rows_affected() > 0)
    }

    async fn delete_connector(&self, project_id: &str, id: &str) -> Result<bool, StoreError> {
        let mut tx = self
            .writer
            .begin_with(super::dialect::WRITE_BEGIN)
            .await
            .map_err(error::backend)?;
        sqlx::query("DELETE FROM oauth_grants WHERE project_id = $1 AND connector_id = $2")
            .bind(project_id)
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(error::backend)?;
        let done = sqlx::query("DELETE FROM connectors WHERE project_id = $1 AND id = $2")
            .bind(project_id)
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(error::backend)?;
        tx.commit().await.map_err(error::backend)?;
        Ok(done.rows_affected() > 0)
    }

    async fn set_connector_status(
        &self,
        project_id: &str,
        id: &str,
        status: &str,
        checked_at: i64,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE connectors SET status = $3, last_checked_at = $4, last_error = $5 \
             WHERE project_id = $1 AND id = $2",
        )
        .bind(project_id)
        .bind(id)
        .bind(status)
        .bind(checked_at)
        .bind(error)
        .execute(&self.writer)
        .await
        .map_err(error::backend)?;
        Ok(())
    }

    async fn add_connector_event(&self, event: &ConnectorEvent) -> Result<(), StoreError> {
        connector_events::insert(&self.writer, event).await
    }

    async fn connector_events(
        &self,
        project_id: &str,
        connector_id: &str,
    ) -> Result<Vec<ConnectorEvent>, StoreError> {
        connector_events::list(&self.reader, project_id, connector_id).await
    }

    async fn put_oauth_grant(&self, grant: &OAuthGrantRecord) -> Result<(), StoreError> {
        oauth_grants::put(&self.writer, grant).await
    }

    async fn get_oauth_grant(
        &self,
        project_id: &str,
        connector_id: &str,
    ) -> Result<Option<OAuthGrantRecord>, StoreError> {
        oauth_grants::get(&self.writer, project_id, connector_id).await
    }

    async fn set_refresh_token(
        &self,
        project_id: &str,
        connector_id: &str,
        sealed: &str,
        at: i64,
    ) -> Result<(), StoreError> {
        oauth_grants::set_refresh_token(&self.writer, project_id, connector_id, sealed, at).await
    }

    async fn set_oauth_tokens(
        &self,
        project_id: &str,
        connector_id: &str,
        tokens: &SealedTokens,
        at: i64,
    ) -> Result<bool, StoreError> {
        oauth_grants::set_tokens(&self.writer, project_id, connector_id, tokens, at).await
    }

    async fn reseal_all(&self, reseal: &Resealer<'_>) -> Result<u64, StoreError> {
        reseal::run(&self.writer, reseal).await
    }
}

pub(crate) fn decode(row: &DbRow) -> Result<ConnectorRecord, StoreError> {
    let id: String = row
        .try_get("id")
        .map_err(|e| error::bad_column("connector", "id", e))?;
    let what = format!("connector {id}");
    macro_rules! col {
        ($name:literal) => {
            row.try_get($name)
                .map_err(|e| error::bad_column(&what, $name, e))?
        };
    }
    let headers: String = col!("headers_json");
    let allowed: Option<String> = col!("allowed_tools_json");
    let approval: Option<String> = col!("require_approval_json");
    let sandbox: String = col!("sandbox_env_json");
    let defer: i64 = col!("defer_loading");
    let enabled: i64 = col!("enabled");
    Ok(ConnectorRecord {
        project_id: col!("project_id"),
        server_label: col!("server_label"),
        server_url: col!("server_url"),
        transport: col!("transport"),
        description: col!("description"),
        auth_kind: col!("auth_kind"),
        authorization: col!("authorization_sealed"),
        headers: from_json(&headers, &what, "headers_json")?,
        allowed_tools: allowed
            .map(|t| from_json(&t, &what, "allowed_tools_json"))
            .transpose()?,
        require_approval: approval
            .map(|t| from_json(&t, &what, "require_approval_json"))
            .transpose()?,
        defer_loading: defer != 0,
        timeout_ms: col!("timeout_ms"),
        enabled: enabled != 0,
        sandbox_env: from_json(&sandbox, &what, "sandbox_env_json")?,
        secret_version: col!("secret_version"),
        status: col!("status"),
        last_checked_at: col!("last_checked_at"),
        last_error: col!("last_error"),
        created_at: col!("created_at"),
        updated_at: col!("updated_at"),
        id,
    })
}
