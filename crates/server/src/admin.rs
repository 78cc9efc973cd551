//! The admin API (`/v1/admin/…`) and the connector list every key may read
//! (`GET /v1/connectors`): its routes (`route_table::AdminEndpoint`, rows of the route table), its body
//! extractor (`body.rs`) and its handlers (`handlers.rs`; `oauth.rs` for the OAuth connection of a
//! connector and its browser callback; `responses.rs` the response listing, pending approvals
//! and a response's model turns the console reads), each one engine call.

mod body;
mod handlers;
mod oauth;
mod responses;

use axum::routing::{MethodRouter, on};

use crate::route_table::{AdminEndpoint, Method};
use crate::state::AppState;

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
        A::StartConnectorOAuth => on(method, oauth::start),
        A::OAuthCallback => on(method, oauth::callback),
        A::ListResponses => on(method, responses::list_responses),
        A::PendingApprovals => on(method, responses::pending_approvals),
        A::ResponseTurns => on(method, responses::response_turns),
    }
}
