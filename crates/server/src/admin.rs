//! The admin API (`/v1/admin/…`) and the connector list every key may read
//! (`GET /v1/connectors`): its routes ([`AdminEndpoint`], rows of the route table), its body
//! extractor (`body.rs`) and its handlers (`handlers.rs`), each one engine call.

mod body;
mod handlers;

use axum::routing::{MethodRouter, on};

use crate::route_table::{Endpoint, Method, Route};
use crate::state::AppState;

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
}

/// The admin rows of the route table.
pub fn routes() -> Vec<Route> {
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
    ];
    rows.into_iter()
        .map(|(method, path, endpoint)| Route {
            method,
            path: path.to_owned(),
            endpoint: Endpoint::Admin(endpoint),
        })
        .collect()
}

/// The handler of an admin route.
pub fn handler(method: Method, endpoint: AdminEndpoint) -> MethodRouter<AppState> {
    use AdminEndpoint as A;
    let method = method.filter();
    match endpoint {
        A::ListProjects => on(method, handlers::list_projects),
        A::CreateProject => on(method, handlers::create_project),
        A::RenameProject => on(method, handlers::rename_project),
        A::DeleteProject => on(method, handlers::delete_project),
        A::ListKeys => on(method, handlers::list_keys),
        A::CreateKey => on(method, handlers::create_key),
        A::RevokeKey => on(method, handlers::revoke_key),
        A::ListConnectors => on(method, handlers::list_connectors),
        A::CreateConnector => on(method, handlers::create_connector),
        A::TestDraft => on(method, handlers::test_draft),
        A::GetConnector => on(method, handlers::get_connector),
        A::UpdateConnector => on(method, handlers::update_connector),
        A::DeleteConnector => on(method, handlers::delete_connector),
        A::TestConnector => on(method, handlers::test_connector),
        A::RotateConnector => on(method, handlers::rotate_connector),
        A::ConnectorTools => on(method, handlers::connector_tools),
        A::ConnectorEvents => on(method, handlers::connector_events),
        A::PublicConnectors => on(method, handlers::public_connectors),
    }
}
