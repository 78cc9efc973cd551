//! The OpenAPI document served on `/openapi.json`: the routes, their parameters and error
//! envelope. Request and item schemas are those of the Agent API (spec: the `perplexityai`
//! SDK's generated models); this document names them rather than repeating them.

use serde_json::{Value, json};

pub fn document() -> Value {
    let error = json!({"$ref": "#/components/schemas/Error"});
    let errors = json!({
        "400": {"description": "Invalid request (`param` names the field)", "content": {"application/json": {"schema": error}}},
        "401": {"description": "Missing or invalid API key", "content": {"application/json": {"schema": error}}},
        "404": {"description": "Unknown id, or another project's", "content": {"application/json": {"schema": error}}}
    });
    let id = json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"}});
    let mut paths = serde_json::Map::new();
    for base in ["/v1/agent", "/v1/responses"] {
        paths.insert(base.to_owned(), json!({"post": {
            "summary": "Create a response (run the agent loop)",
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CreateRequest"}}}},
            "responses": merge(json!({
                "200": {"description": "The response object, or an SSE stream when `stream` is true",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Response"}},
                                    "text/event-stream": {"schema": {"type": "string"}}}},
                "413": {"description": "Body larger than 32 MiB", "content": {"application/json": {"schema": error}}},
                "424": {"description": "An MCP server could not be reached or listed (`external_connector_error`; a stream or background run ends `failed` instead)", "content": {"application/json": {"schema": error}}},
                "429": {"description": "Too many background runs waiting in this project", "content": {"application/json": {"schema": error}}}
            }), &errors)
        }}));
        paths.insert(format!("{base}/{{id}}"), json!({"get": {
            "summary": "Retrieve a response; with stream=true, replay its events after starting_after and follow the run",
            "parameters": [id, {"name": "stream", "in": "query", "schema": {"type": "boolean"}},
                           {"name": "starting_after", "in": "query", "schema": {"type": "integer"}}],
            "responses": merge(json!({"200": {"description": "The response object", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Response"}}}}}), &errors)
        }}));
        paths.insert(format!("{base}/{{id}}/cancel"), json!({"post": {
            "summary": "Cancel a running response (400 when it has already ended)", "parameters": [id],
            "responses": merge(json!({"200": {"description": "{response_id, status: cancelling}"}}), &errors)
        }}));
        paths.insert(format!("{base}/{{id}}/files"), json!({"get": {
            "summary": "List files shared by a response", "parameters": [id],
            "responses": merge(json!({"200": {"description": "{object: list, data: [file]}"}}), &errors)
        }}));
        paths.insert(format!("{base}/{{id}}/files/{{file_id}}/content"), json!({"get": {
            "summary": "Download a shared file",
            "parameters": [id, {"name": "file_id", "in": "path", "required": true, "schema": {"type": "string"}}],
            "responses": merge(json!({"200": {"description": "The file's bytes", "content": {"application/octet-stream": {}}}}), &errors)
        }}));
    }
    paths.insert(
        "/v1/models".to_owned(),
        json!({"get": {
            "summary": "List the models of the configured providers (no auth)", "security": [],
            "responses": {"200": {"description": "{object: list, data: [model]}"}}
        }}),
    );
    paths.insert(
        "/health".to_owned(),
        json!({"get": {
            "summary": "Liveness", "security": [],
            "responses": {"200": {"description": "{\"status\":\"ok\"}"}}
        }}),
    );
    json!({
        "openapi": "3.1.0",
        "info": {"title": "agentd Agent API", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Perplexity Agent API / OpenAI Responses compatible agent server"},
        "paths": paths,
        "security": [{"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {"type": "object", "required": ["error"], "properties": {"error": {
                    "type": "object", "required": ["message", "type", "code"],
                    "properties": {"message": {"type": "string"}, "type": {"type": "string"},
                                   "code": {"type": "integer"}, "param": {"type": "string"}}}}},
                "CreateRequest": {"type": "object", "required": ["input"], "additionalProperties": false,
                    "description": "ResponsesRequest of the Agent API; unknown fields are refused"},
                "Response": {"type": "object", "required": ["id", "object", "created_at", "status", "model", "output"],
                    "description": "The response object (object: \"response\")"}
            }
        }
    })
}

fn merge(mut base: Value, extra: &Value) -> Value {
    if let (Some(base), Some(extra)) = (base.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            base.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    base
}
