//! The OAuth connection of a connector: an admin starts it (`POST
//! /v1/admin/connectors/{id}/oauth/start`: the authorization URL to open), and the admin's
//! browser comes back to `GET /v1/admin/oauth/callback` from the authorization server. The
//! callback carries no key: the single-use, unguessable `state` of a connection this process
//! started is what authenticates it.

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, HOST};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use engine::admin::CALLBACK_PATH;
use protocol::admin::{ConnectorOAuthStart, ConnectorOAuthStarted};

use super::body::AdminBody;
use super::handlers::{ProjectQuery, project};
use crate::auth::Key;
use crate::error::ApiError;
use crate::params::{PathParams, QueryParams};
use crate::state::AppState;

/// The callback on the host the request reached, when that is a loopback address (a browser
/// on the same machine reaches it there); `None` otherwise: the admin must name it.
fn loopback_callback(headers: &HeaderMap) -> Option<String> {
    let host = headers.get(HOST)?.to_str().ok()?;
    let authority: axum::http::uri::Authority = host.parse().ok()?;
    let name = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let loopback = name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback.then(|| format!("http://{authority}{CALLBACK_PATH}"))
}

pub async fn start(
    State(state): State<AppState>,
    key: Key,
    QueryParams(query): QueryParams<ProjectQuery>,
    PathParams(id): PathParams<String>,
    headers: HeaderMap,
    AdminBody(body): AdminBody<ConnectorOAuthStart>,
) -> Result<Json<ConnectorOAuthStarted>, ApiError> {
    let project = project(&state, &key, &query).await?;
    Ok(Json(
        state
            .engine
            .start_connector_oauth(&key.0, &project, &id, body, loopback_callback(&headers))
            .await?,
    ))
}

/// The `state` parameter of a query string.
fn state_of(query: &str) -> Option<String> {
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "state")
        .map(|(_, value)| value.into_owned())
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub async fn callback(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let query = query.unwrap_or_default();
    let Some(flow) = state_of(&query) else {
        return Err(ApiError::InvalidQuery {
            message: "the OAuth callback carries no state: open the authorization_url that POST /v1/admin/connectors/{id}/oauth/start answered".to_owned(),
            param: "state".to_owned(),
        });
    };
    let (_, connector) = state.engine.finish_connector_oauth(&flow, &query).await?;
    let page = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>agentd: connected</title>\
         <p>The connector <code>{}</code> is connected. You can close this window.</p>\n",
        escape(&connector)
    );
    Ok((
        StatusCode::OK,
        [
            (
                CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            ),
            (CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        page,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_callback_is_only_for_loopback_hosts() {
        let with = |host: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(HOST, HeaderValue::from_str(host).unwrap());
            loopback_callback(&headers)
        };
        assert_eq!(
            with("127.0.0.1:8080").as_deref(),
            Some("http://127.0.0.1:8080/v1/admin/oauth/callback")
        );
        assert!(with("localhost:1").is_some());
        assert!(with("[::1]:9").is_some());
        assert_eq!(with("agentd.example.com"), None);
        assert_eq!(with("10.0.0.1:80"), None);
        assert_eq!(state_of("code=a&state=b%20c").as_deref(), Some("b c"));
    }
}
