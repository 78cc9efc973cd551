//! The OAuth grants of connectors: where their tokens come from, secrets sealed.

use super::{Db, DbRow};
use engine::admin_store::{OAuthGrantRecord, SealedTokens};
use engine::store::StoreError;
use sqlx::Row;

use crate::error;

macro_rules! columns {
    () => {
        "\
SELECT project_id, connector_id, issuer, token_endpoint, resource, client_id, auth_method, kind,
       redirect_uri, scope, client_secret_sealed, refresh_token_sealed, created_at, updated_at,
       access_token_sealed, access_expires_at
FROM oauth_grants"
    };
}

pub(crate) async fn put(pool: &sqlx::Pool<Db>, g: &OAuthGrantRecord) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO oauth_grants (project_id, connector_id, issuer, token_endpoint, resource, \
             client_id, auth_method, kind, redirect_uri, scope, client_secret_sealed, \
             refresh_token_sealed, created_at, updated_at, access_token_sealed, \
             access_expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
         ON CONFLICT (project_id, connector_id) DO UPDATE SET issuer = excluded.issuer, \
             token_endpoint = excluded.token_endpoint, resource = excluded.resource, \
             client_id = excluded.client_id, auth_method = excluded.auth_method, \
             kind = excluded.kind, redirect_uri = excluded.redirect_uri, scope = excluded.scope, \
             client_secret_sealed = excluded.client_secret_sealed, \
             refresh_token_sealed = excluded.refresh_token_sealed, \
             access_token_sealed = excluded.access_token_sealed, \
             access_expires_at = excluded.access_expires_at, \
             created_at = excluded.created_at, updated_at = excluded.updated_at",
    )
    .bind(g.project_id.as_str())
    .bind(g.connector_id.as_str())
    .bind(g.issuer.as_str())
    .bind(g.token_endpoint.as_str())
    .bind(g.resource.as_str())
    .bind(g.client_id.as_str())
    .bind(g.auth_method.as_str())
    .bind(g.kind.as_str())
    .bind(g.redirect_uri.as_str())
    .bind(g.scope.as_deref())
    .bind(g.client_secret.as_deref())
    .bind(g.refresh_token.as_deref())
    .bind(g.created_at)
    .bind(g.updated_at)
    .bind(g.access_token.as_deref())
    .bind(g.access_expires_at)
    .execute(pool)
    .await
    .map_err(error::backend)?;
    Ok(())
}

pub(crate) async fn get(
    pool: &sqlx::Pool<Db>,
    project_id: &str,
    connector_id: &str,
) -> Result<Option<OAuthGrantRecord>, StoreError> {
    let row = sqlx::query(concat!(
        columns!(),
        " WHERE project_id = $1 AND connector_id = $2"
    ))
    .bind(project_id)
    .bind(connector_id)
    .fetch_optional(pool)
    .await
    .map_err(error::backend)?;
    row.as_ref().map(decode).transpose()
}

pub(crate) async fn set_refresh_token(
    pool: &sqlx::Pool<Db>,
    project_id: &str,
    connector_id: &str,
    sealed: &str,
    at: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE oauth_grants SET refresh_token_sealed = $3, updated_at = $4 \
         WHERE project_id = $1 AND connector_id = $2",
    )
    .bind(project_id)
    .bind(connector_id)
    .bind(sealed)
    .bind(at)
    .execute(pool)
    .await
    .map_err(error::backend)?;
    Ok(())
}

/// The tokens of a refresh; `false` when there is no grant.
pub(crate) async fn set_tokens(
    pool: &sqlx::Pool<Db>,
    project_id: &str,
    connector_id: &str,
    tokens: &SealedTokens,
    at: i64,
) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "UPDATE oauth_grants SET refresh_token_sealed = COALESCE($3, refresh_token_sealed), \
             access_token_sealed = $4, access_expires_at = $5, updated_at = $6 \
         WHERE project_id = $1 AND connector_id = $2",
    )
    .bind(project_id)
    .bind(connector_id)
    .bind(tokens.refresh_token.as_deref())
    .bind(tokens.access_token.as_str())
    .bind(tokens.access_expires_at)
    .bind(at)
    .execute(pool)
    .await
    .map_err(error::backend)?;
    Ok(done.rows_affected() > 0)
}

pub(crate) fn decode(row: &DbRow) -> Result<OAuthGrantRecord, StoreError> {
    let connector_id: String = row
        .try_get("connector_id")
        .map_err(|e| error::bad_column("oauth grant", "connector_id", e))?;
    let what = format!("oauth grant of {connector_id}");
    macro_rules! col {
        ($name:literal) => {
            row.try_get($name)
                .map_err(|e| error::bad_column(&what, $name, e))?
        };
    }
    Ok(OAuthGrantRecord {
        project_id: col!("project_id"),
        issuer: col!("issuer"),
        token_endpoint: col!("token_endpoint"),
        resource: col!("resource"),
        client_id: col!("client_id"),
        auth_method: col!("auth_method"),
        kind: col!("kind"),
        redirect_uri: col!("redirect_uri"),
        scope: col!("scope"),
        client_secret: col!("client_secret_sealed"),
        refresh_token: col!("refresh_token_sealed"),
        created_at: col!("created_at"),
        updated_at: col!("updated_at"),
        access_token: col!("access_token_sealed"),
        access_expires_at: col!("access_expires_at"),
        connector_id,
    })
}
