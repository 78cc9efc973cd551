//! The router: each row of the route table ([`crate::route_table`]) mapped to its handler, and
//! nothing else.

use axum::Router;
use axum::routing::{MethodRouter, on};

use crate::route_table::{Endpoint, Method, table};
use crate::state::AppState;
use crate::{compact, conversations, handlers, websocket};

/// The router built from [`table`].
pub fn routes() -> Router<AppState> {
    table()
        .into_iter()
        .fold(Router::new(), |router, route| {
            router.route(&route.path, handler(route.method, route.endpoint))
        })
        .fallback(handlers::not_found)
}

fn handler(method: Method, endpoint: Endpoint) -> MethodRouter<AppState> {
    let route_method = method;
    let method = method.filter();
    match endpoint {
        Endpoint::Health => on(method, handlers::health),
        Endpoint::Metrics => on(method, handlers::metrics),
        Endpoint::OpenApi => on(method, handlers::openapi),
        Endpoint::Models => on(method, handlers::models),
        Endpoint::Create => on(method, handlers::create),
        Endpoint::Retrieve => on(method, handlers::retrieve),
        Endpoint::Cancel => on(method, handlers::cancel),
        Endpoint::Files => on(method, handlers::files),
        Endpoint::FileContent => on(method, handlers::file_content),
        Endpoint::Delete => on(method, handlers::delete),
        Endpoint::InputItems => on(method, handlers::input_items),
        Endpoint::Compact => on(method, compact::compact),
        Endpoint::WebSocket => on(method, websocket::upgrade),
        Endpoint::ConversationCreate => on(method, conversations::create),
        Endpoint::ConversationGet => on(method, conversations::get),
        Endpoint::ConversationUpdate => on(method, conversations::update),
        Endpoint::ConversationDelete => on(method, conversations::delete),
        Endpoint::ConversationItems => on(method, conversations::items),
        Endpoint::ConversationItemsAdd => on(method, conversations::add_items),
        Endpoint::ConversationItemGet => on(method, conversations::item),
        Endpoint::ConversationItemDelete => on(method, conversations::delete_item),
        Endpoint::Admin(admin) => crate::admin::handler(route_method, admin),
        Endpoint::Console => on(method, crate::console::serve),
    }
}
