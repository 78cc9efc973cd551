//! The route table: method and path -> endpoint, and nothing else. The router (`routes`, which
//! maps each endpoint to its handler) and the OpenAPI document (`openapi`) are both built from
//! [`table`], so a route cannot be served without being documented. This module names no
//! handler, so the handlers may use what is built from it (`/openapi.json`).

use axum::routing::MethodFilter;

/// The API is served under both prefixes (spec decision 1).
pub const API_BASES: [&str; 2] = ["/v1/agent", "/v1/responses"];

/// What a route serves: one handler each (`routes`), one operation each in the OpenAPI
/// document (`openapi::operations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Health,
    Metrics,
    OpenApi,
    Models,
    Create,
    Retrieve,
    Cancel,
    Files,
    FileContent,
    /// `DELETE …/{id}`.
    Delete,
    /// `GET …/{id}/input_items`.
    InputItems,
    /// `POST …/compact`.
    Compact,
    /// `GET /v1/{responses|agent}` upgraded to a WebSocket (WebSocket mode).
    WebSocket,
    ConversationCreate,
    ConversationGet,
    ConversationUpdate,
    ConversationDelete,
    ConversationItems,
    ConversationItemsAdd,
    ConversationItemGet,
    ConversationItemDelete,
    /// The admin API and the connector list (`crate::admin`).
    Admin(AdminEndpoint),
    /// `GET /console` and its files (`crate::console_assets` lists them).
    Console,
}

/// The HTTP methods the table uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Patch,
    Delete,
}

impl Method {
    /// The lowercase name, as an OpenAPI path item key.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Post => "post",
            Method::Patch => "patch",
            Method::Delete => "delete",
        }
    }

    /// The method filter axum routes it with.
    pub fn filter(self) -> MethodFilter {
        match self {
            Method::Get => MethodFilter::GET,
            Method::Post => MethodFilter::POST,
            Method::Patch => MethodFilter::PATCH,
            Method::Delete => MethodFilter::DELETE,
        }
    }
}

/// One row of the table. Path parameters are written `{name}`, as axum and OpenAPI both read them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub method: Method,
    pub path: String,
    pub endpoint: Endpoint,
}

/// Every route the server answers (anything else is the `not_found` fallback).
pub fn table() -> Vec<Route> {
    let route = |method, path: &str, endpoint| Route {
        method,
        path: path.to_owned(),
        endpoint,
    };
    let mut table = vec![
        route(Method::Get, "/health", Endpoint::Health),
        route(Method::Get, "/metrics", Endpoint::Metrics),
        route(Method::Get, "/openapi.json", Endpoint::OpenApi),
        route(Method::Get, "/v1/models", Endpoint::Models),
        route(
            Method::Post,
            "/v1/conversations",
            Endpoint::ConversationCreate,
        ),
        route(
            Method::Get,
            "/v1/conversations/{id}",
            Endpoint::ConversationGet,
        ),
        route(
            Method::Post,
            "/v1/conversations/{id}",
            Endpoint::ConversationUpdate,
        ),
        route(
            Method::Delete,
            "/v1/conversations/{id}",
            Endpoint::ConversationDelete,
        ),
        route(
            Method::Get,
            "/v1/conversations/{id}/items",
            Endpoint::ConversationItems,
        ),
        route(
            Method::Post,
            "/v1/conversations/{id}/items",
            Endpoint::ConversationItemsAdd,
        ),
        route(
            Method::Get,
            "/v1/conversations/{id}/items/{item_id}",
            Endpoint::ConversationItemGet,
        ),
        route(
            Method::Delete,
            "/v1/conversations/{id}/items/{item_id}",
            Endpoint::ConversationItemDelete,
        ),
    ];
    for base in API_BASES {
        table.extend([
            route(Method::Post, base, Endpoint::Create),
            route(Method::Get, base, Endpoint::WebSocket),
            route(Method::Post, &format!("{base}/compact"), Endpoint::Compact),
            route(Method::Get, &format!("{base}/{{id}}"), Endpoint::Retrieve),
            route(Method::Delete, &format!("{base}/{{id}}"), Endpoint::Delete),
            route(
                Method::Get,
                &format!("{base}/{{id}}/input_items"),
                Endpoint::InputItems,
            ),
            route(
                Method::Post,
                &format!("{base}/{{id}}/cancel"),
                Endpoint::Cancel,
            ),
            route(
                Method::Get,
                &format!("{base}/{{id}}/files"),
                Endpoint::Files,
            ),
            route(
                Method::Get,
                &format!("{base}/{{id}}/files/{{file_id}}/content"),
                Endpoint::FileContent,
            ),
        ]);
    }
    table.extend(admin_routes());
    table.extend(
        crate::console_assets::ASSETS
            .iter()
            .map(|asset| route(Method::Get, asset.path, Endpoint::Console)),
    );
    table
}

/// One admin route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminEndpoint {
    ListProjects,
    CreateProject,
    RenameProject,
    DeleteProject,
    ListKeys,
    CreateKey,
    RevokeKey,
    ListConnectors,
    CreateConnector,
    TestDraft,
    GetConnector,
    UpdateConnector,
    DeleteConnector,
    TestConnector,
    RotateConnector,
    ConnectorTools,
    ConnectorEvents,
    /// `GET /v1/connectors`: any key of the project.
    PublicConnectors,
    /// `POST …/connectors/{id}/oauth/start`: an admin starts an OAuth connection.
    StartConnectorOAuth,
    /// `GET /v1/admin/oauth/callback`: the browser comes back (no key: the state is the proof).
    OAuthCallback,
    /// `GET /v1/admin/responses`: any key of the project (the console's responses page).
    ListResponses,
    /// `GET /v1/admin/approvals`: any key of the project (pending approvals).
    PendingApprovals,
    /// `GET /v1/admin/responses/{response_id}/turns`: any key of the project (a response's
    /// model turns, for the console's trace).
    ResponseTurns,
}

/// The admin rows of the route table.
fn admin_routes() -> Vec<Route> {
    use AdminEndpoint as A;
    let rows = [
        (Method::Get, "/v1/admin/projects", A::ListProjects),
        (Method::Post, "/v1/admin/projects", A::CreateProject),
        (
            Method::Patch,
            "/v1/admin/projects/{project_id}",
            A::RenameProject,
        ),
        (
            Method::Delete,
            "/v1/admin/projects/{project_id}",
            A::DeleteProject,
        ),
        (Method::Get, "/v1/admin/keys", A::ListKeys),
        (Method::Post, "/v1/admin/keys", A::CreateKey),
        (Method::Delete, "/v1/admin/keys/{key_id}", A::RevokeKey),
        (Method::Get, "/v1/admin/connectors", A::ListConnectors),
        (Method::Post, "/v1/admin/connectors", A::CreateConnector),
        (Method::Post, "/v1/admin/connectors/test", A::TestDraft),
        (
            Method::Get,
            "/v1/admin/connectors/{connector_id}",
            A::GetConnector,
        ),
        (
            Method::Patch,
            "/v1/admin/connectors/{connector_id}",
            A::UpdateConnector,
        ),
        (
            Method::Delete,
            "/v1/admin/connectors/{connector_id}",
            A::DeleteConnector,
        ),
        (
            Method::Post,
            "/v1/admin/connectors/{connector_id}/test",
            A::TestConnector,
        ),
        (
            Method::Post,
            "/v1/admin/connectors/{connector_id}/rotate",
            A::RotateConnector,
        ),
        (
            Method::Get,
            "/v1/admin/connectors/{connector_id}/tools",
            A::ConnectorTools,
        ),
        (
            Method::Get,
            "/v1/admin/connectors/{connector_id}/events",
            A::ConnectorEvents,
        ),
        (Method::Get, "/v1/connectors", A::PublicConnectors),
        (
            Method::Post,
            "/v1/admin/connectors/{connector_id}/oauth/start",
            A::StartConnectorOAuth,
        ),
        (Method::Get, "/v1/admin/oauth/callback", A::OAuthCallback),
        (Method::Get, "/v1/admin/responses", A::ListResponses),
        (Method::Get, "/v1/admin/approvals", A::PendingApprovals),
        (
            Method::Get,
            "/v1/admin/responses/{response_id}/turns",
            A::ResponseTurns,
        ),
    ];
    rows.into_iter()
        .map(|(method, path, endpoint)| Route {
            method,
            path: path.to_owned(),
            endpoint: Endpoint::Admin(endpoint),
        })
        .collect()
}
