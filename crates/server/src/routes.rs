//! The route table: path -> handler, and nothing else.

use axum::Router;
use axum::routing::{get, post};

use crate::handlers;
use crate::state::AppState;

/// Every API route, served under both `/v1/agent` and `/v1/responses` (spec decision 1).
pub fn routes() -> Router<AppState> {
    let mut router = Router::new()
        .route("/health", get(handlers::health))
        .route("/metrics", get(handlers::metrics))
        .route("/openapi.json", get(handlers::openapi))
        .route("/v1/models", get(handlers::models));
    for base in ["/v1/agent", "/v1/responses"] {
        router = router
            .route(base, post(handlers::create))
            .route(&format!("{base}/{{id}}"), get(handlers::retrieve))
            .route(&format!("{base}/{{id}}/cancel"), post(handlers::cancel))
            .route(&format!("{base}/{{id}}/files"), get(handlers::files))
            .route(
                &format!("{base}/{{id}}/files/{{file_id}}/content"),
                get(handlers::file_content),
            );
    }
    router.fallback(handlers::not_found)
}
