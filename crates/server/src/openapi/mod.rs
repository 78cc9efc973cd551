//! The OpenAPI 3.1 document served on `/openapi.json`, built once per process: the paths from
//! the route table ([`crate::route_table::table`]: every route, its method and path parameters),
//! one operation per endpoint ([`operations`]), and component schemas generated from the
//! protocol types ([`schemas`]).
//!
//! A streamed answer (`text/event-stream`) names the schema of each `data:` frame's JSON in the
//! media type's `x-sse-data` extension (OpenAPI 3.1 has no field for it).

mod admin;
mod admin_schemas;
mod operations;
mod schemas;
mod spec;

use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use crate::route_table;

static DOCUMENT: LazyLock<Value> = LazyLock::new(build);

/// The document (built on first use).
pub fn document() -> &'static Value {
    &DOCUMENT
}

fn build() -> Value {
    let schemas = schemas::Schemas::generate();
    let mut paths = Map::new();
    for route in route_table::table() {
        let item = paths
            .entry(route.path.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        item[route.method.as_str()] = operations::operation(&route, &schemas);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "agentd Agent API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Perplexity Agent API / OpenAI Responses API compatible agent server. \
                            Every error answer is the envelope `{\"error\": {message, type, code, param?}}` \
                            with `code` equal to the HTTP status; a method a path does not take is 405 \
                            (with `Allow`).",
        },
        "paths": paths,
        "security": [{"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "An API key (`agentd keys create`). A server without any key (open mode, loopback only) accepts any key or none.",
            }},
            "schemas": schemas.components,
        },
    })
}
