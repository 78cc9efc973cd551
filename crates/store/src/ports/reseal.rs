//! Re-sealing every stored secret under the current key (`agentd secrets rotate`): every
//! connector credential and OAuth grant secret, in one transaction, so a failure leaves all of
//! them as they were.

use super::Db;
use engine::admin_store::{Resealer, SealedField};
use engine::store::StoreError;
use sqlx::Row;

use crate::error;

pub(crate) async fn run(pool: &sqlx::Pool<Db>, reseal: &Resealer<'_>) -> Result<u64, StoreError> {
    let mut tx = pool
        .begin_with(super::dialect::WRITE_BEGIN)
        .await
        .map_err(error::backend)?;
    let mut changed = 0_u64;
    let rows =
        sqlx::query("SELECT project_id, id, authorization_sealed, headers_json FROM connectors")
            .fetch_all(&mut *tx)
            .await
            .map_err(error::backend)?;
    for row in rows {
        let project_id: String = row
            .try_get("project_id")
            .map_err(|e| error::bad_column("connector", "project_id", e))?;
        let id: String = row
            .try_get("id")
            .map_err(|e| error::bad_column("connector", "id", e))?;
        let what = format!("connector {id}");
        let authorization: Option<String> = row
            .try_get("authorization_sealed")
            .map_err(|e| error::bad_column(&what, "authorization_sealed", e))?;
        let headers_json: String = row
            .try_get("headers_json")
            .map_err(|e| error::bad_column(&what, "headers_json", e))?;
        let mut headers: std::collections::BTreeMap<String, String> =
            serde_json::from_str(&headers_json)
                .map_err(|e| error::bad_json(&what, "headers_json", &e))?;
        let field = |field: String, sealed: &str| SealedField {
            project_id: project_id.clone(),
            connector_id: id.clone(),
            field,
            sealed: sealed.to_owned(),
        };
        let mut new_authorization = authorization.clone();
        if let Some(sealed) = &authorization
            && let Some(new) = reseal(&field("authorization".to_owned(), sealed))
                .map_err(|e| StoreError::Backend(format!("{what}: {e}")))?
        {
            new_authorization = Some(new);
            changed += 1;
        }
        for (name, sealed) in headers.iter_mut() {
            if let Some(new) = reseal(&field(format!("headers.{name}"), sealed))
                .map_err(|e| StoreError::Backend(format!("{what}: {e}")))?
            {
                *sealed = new;
                changed += 1;
            }
        }
        let headers_json = serde_json::to_string(&headers)
            .map_err(|e| StoreError::Backend(format!("{what}: {e}")))?;
        sqlx::query(
            "UPDATE connectors SET authorization_sealed = $3, headers_json = $4 \
             WHERE project_id = $1 AND id = $2",
        )
        .bind(&project_id)
        .bind(&id)
        .bind(new_authorization)
        .bind(headers_json)
        .execute(&mut *tx)
        .await
        .map_err(error::backend)?;
    }
    let grants = sqlx::query(
        "SELECT project_id, connector_id, client_secret_sealed, refresh_token_sealed, \
         access_token_sealed FROM oauth_grants",
    )
    .fetch_all(&mut *tx)
    .await
    .map_err(error::backend)?;
    for row in grants {
        let project_id: String = row
            .try_get("project_id")
            .map_err(|e| error::bad_column("oauth grant", "project_id", e))?;
        let connector_id: String = row
            .try_get("connector_id")
            .map_err(|e| error::bad_column("oauth grant", "connector_id", e))?;
        let what = format!("oauth grant of {connector_id}");
        let mut values = Vec::new();
        for (column, name) in [
            ("client_secret_sealed", "oauth.client_secret"),
            ("refresh_token_sealed", "oauth.refresh_token"),
            ("access_token_sealed", "oauth.access_token"),
        ] {
            let sealed: Option<String> = row
                .try_get(column)
                .map_err(|e| error::bad_column(&what, column, e))?;
            let mut value = sealed.clone();
            if let Some(sealed) = &sealed
                && let Some(new) = reseal(&SealedField {
                    project_id: project_id.clone(),
                    connector_id: connector_id.clone(),
                    field: name.to_owned(),
                    sealed: sealed.clone(),
                })
                .map_err(|e| StoreError::Backend(format!("{what}: {e}")))?
            {
                value = Some(new);
                changed += 1;
            }
            values.push(value);
        }
        let mut values = values.into_iter();
        sqlx::query(
            "UPDATE oauth_grants SET client_secret_sealed = $3, refresh_token_sealed = $4, \
             access_token_sealed = $5 WHERE project_id = $1 AND connector_id = $2",
        )
        .bind(&project_id)
        .bind(&connector_id)
        .bind(values.next().flatten())
        .bind(values.next().flatten())
        .bind(values.next().flatten())
        .execute(&mut *tx)
        .await
        .map_err(error::backend)?;
    }
    tx.commit().await.map_err(error::backend)?;
    Ok(changed)
}
