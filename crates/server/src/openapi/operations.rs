//! One OpenAPI operation per [`Endpoint`]: what it does, its parameters, its request body, its
//! answers and the error statuses it can give (each the JSON error envelope).

use serde_json::{Map, Value, json};

use super::schemas::Schemas;
use super::spec::{INTERNAL, Spec, UNAUTHORIZED, json_answer};
use crate::route_table::{Endpoint, Route};

/// The operation object of one route.
pub fn operation(route: &Route, schemas: &Schemas) -> Value {
    let spec = spec(route.endpoint, schemas);
    let mut parameters = path_parameters(&route.path);
    parameters.extend(spec.query);
    let mut responses = Map::new();
    // A WebSocket upgrade's success is `101 Switching Protocols`.
    let ok = if route.endpoint == Endpoint::WebSocket {
        "101"
    } else {
        super::admin::ok_status(route)
    };
    responses.insert(ok.to_owned(), spec.ok);
    for (status, why) in spec.errors {
        responses.insert(
            status.to_string(),
            json!({"description": why, "content": {"application/json": {"schema": schemas.error}}}),
        );
    }
    let mut operation = json!({
        "operationId": operation_id(route),
        "summary": spec.summary,
        "responses": responses,
    });
    if !parameters.is_empty() {
        operation["parameters"] = Value::Array(parameters);
    }
    if let Some(body) = spec.body {
        operation["requestBody"] = body;
    }
    if !spec.authenticated {
        // No key needed: overrides the document's default security requirement.
        operation["security"] = json!([]);
    }
    operation
}

const FORBIDDEN: (u16, &str) = (
    403,
    "Open mode (no keys) only: the request came from a web page of another origin, or for a host name that is not loopback nor allowed",
);
const NOT_FOUND: (u16, &str) = (404, "No such response (or another project's)");
const BAD_PATH: (u16, &str) = (
    400,
    "A path parameter is not valid UTF-8 once percent-decoded",
);

fn spec(endpoint: Endpoint, schemas: &Schemas) -> Spec {
    match endpoint {
        Endpoint::Admin(admin) => super::admin::spec(admin, schemas),
        Endpoint::Console => Spec {
            summary: "The web console (its page, script modules and style sheet, embedded in the binary; docs/console.md)",
            authenticated: false,
            query: Vec::new(),
            body: None,
            ok: json!({"description": "The file, with a strict Content-Security-Policy", "content": {
                "text/html": {"schema": {"type": "string"}},
                "text/javascript": {"schema": {"type": "string"}},
                "text/css": {"schema": {"type": "string"}},
            }}),
            errors: vec![FORBIDDEN],
        },
        Endpoint::Health => Spec {
            summary: "Liveness: 200 once the server accepts requests",
            authenticated: false,
            query: Vec::new(),
            body: None,
            ok: json_answer(
                "The server is up",
                json!({"type": "object", "properties": {"status": {"const": "ok"}}, "required": ["status"]}),
            ),
            errors: vec![FORBIDDEN],
        },
        Endpoint::Metrics => Spec {
            summary: "Prometheus metrics (text exposition format)",
            authenticated: false,
            query: Vec::new(),
            body: None,
            ok: json!({"description": "The metrics", "content": {"text/plain": {"schema": {"type": "string"}}}}),
            errors: vec![FORBIDDEN, INTERNAL],
        },
        Endpoint::OpenApi => Spec {
            summary: "This OpenAPI document",
            authenticated: false,
            query: Vec::new(),
            body: None,
            ok: json_answer("The OpenAPI 3.1 document", json!({"type": "object"})),
            errors: vec![FORBIDDEN],
        },
        Endpoint::Models => Spec {
            summary: "The models of the configured providers",
            authenticated: false,
            query: Vec::new(),
            body: None,
            ok: json_answer("The model list", schemas.model_list.clone()),
            errors: vec![FORBIDDEN],
        },
        Endpoint::Create => Spec {
            summary: "Create a response: run the agent loop",
            authenticated: true,
            query: Vec::new(),
            body: Some(json!({
                "required": true,
                "description": "Unknown fields anywhere are refused (400 naming the field in `param`); limits are checked after parsing (400 too). A `Content-Type` other than JSON is refused (415).",
                "content": {"application/json": {"schema": schemas.create_request}},
            })),
            ok: response_or_stream(
                "The finished response; with `background: true`, the queued response at once; \
                 with `stream: true`, the run's events as they happen",
                schemas,
            ),
            errors: vec![
                (
                    400,
                    "Invalid request (`param` names the field), an unconfigured model, or a continuation that does not fit",
                ),
                UNAUTHORIZED,
                FORBIDDEN,
                (404, "The run ended without a response"),
                (
                    408,
                    "The body did not arrive within the server's body timeout",
                ),
                (413, "The body is larger than 32 MiB"),
                (415, "The body's `Content-Type` is not JSON"),
                (
                    424,
                    "An MCP server could not be reached or listed when the run started (a stream or a background run ends `failed` instead)",
                ),
                (429, "Too many background runs are waiting in this project"),
                INTERNAL,
                (
                    501,
                    "The request asks for a capability that is not built yet",
                ),
            ],
        },
        Endpoint::Retrieve => Spec {
            summary: "Retrieve a response; with `stream=true`, replay its events and follow the run",
            authenticated: true,
            query: vec![
                json!({"name": "stream", "in": "query", "required": false,
                       "description": "`true`: answer with the run's events (the stored log, then the live run until it ends)",
                       "schema": {"type": "boolean"}}),
                json!({"name": "starting_after", "in": "query", "required": false,
                       "description": "With `stream=true`: only the events after this `sequence_number`",
                       "schema": {"type": "integer", "minimum": 0, "maximum": 9_007_199_254_740_991_u64}}),
            ],
            body: None,
            ok: response_or_stream(
                "The response as stored now; with `stream=true`, its events",
                schemas,
            ),
            errors: vec![
                (
                    400,
                    "`stream` or `starting_after` is invalid (`param` names it), or a path parameter is not valid UTF-8",
                ),
                UNAUTHORIZED,
                FORBIDDEN,
                NOT_FOUND,
                INTERNAL,
            ],
        },
        Endpoint::Cancel => Spec {
            summary: "Cancel a queued or running response",
            authenticated: true,
            query: Vec::new(),
            body: None,
            ok: json_answer("The run is being cancelled", schemas.cancel_ack.clone()),
            errors: vec![
                (
                    400,
                    "The run has already ended, or a path parameter is not valid UTF-8",
                ),
                UNAUTHORIZED,
                FORBIDDEN,
                NOT_FOUND,
                INTERNAL,
            ],
        },
        Endpoint::Files => Spec {
            summary: "List the files a response shared (`share_file`)",
            authenticated: true,
            query: Vec::new(),
            body: None,
            ok: json_answer("The files", schemas.file_list.clone()),
            errors: vec![BAD_PATH, UNAUTHORIZED, FORBIDDEN, NOT_FOUND, INTERNAL],
        },
        Endpoint::Delete => Spec {
            summary: "Delete a response: its events, items and files go too (404 afterwards)",
            authenticated: true,
            query: Vec::new(),
            body: None,
            ok: json_answer(
                "Deleted (`object: \"response.deleted\"`)",
                schemas.deleted.clone(),
            ),
            errors: vec![
                (
                    400,
                    "The run has not ended yet (cancel it first), or a path parameter is not valid UTF-8",
                ),
                UNAUTHORIZED,
                FORBIDDEN,
                NOT_FOUND,
                INTERNAL,
            ],
        },
        Endpoint::InputItems => Spec {
            summary: "List a response's input items (with their ids), a page at a time",
            authenticated: true,
            query: page_query(),
            body: None,
            ok: json_answer("A page of input items", schemas.item_list.clone()),
            errors: vec![BAD_PAGE, UNAUTHORIZED, FORBIDDEN, NOT_FOUND, INTERNAL],
        },
        Endpoint::Compact => Spec {
            summary: "Compact a conversation: the model summarises it into a `compaction` item; pass the output back as input (with a new message, without `previous_response_id`) to continue from the summary",
            authenticated: true,
            query: Vec::new(),
            body: json_body(
                "`model` (required), `input` and/or `previous_response_id`, `instructions`, `prompt_cache_key`",
                &schemas.compact_request,
                true,
            ),
            ok: json_answer(
                "The compacted conversation (`object: \"response.compaction\"`): its user messages, then the `compaction` item",
                schemas.compact_resource.clone(),
            ),
            errors: vec![
                (
                    400,
                    "Invalid body (`param` names the field: `model` when it is missing), an unconfigured model, nothing to compact, or an unknown `previous_response_id`",
                ),
                UNAUTHORIZED,
                FORBIDDEN,
                (
                    408,
                    "The body did not arrive within the server's body timeout",
                ),
                (413, "The body is larger than 32 MiB"),
                (415, "The body's `Content-Type` is not JSON"),
                INTERNAL,
                (502, "The model failed or returned an empty summary"),
            ],
        },
        Endpoint::WebSocket => Spec {
            summary: "WebSocket mode: upgrade (`Upgrade: websocket`, the same `Authorization` header), then send `{\"type\": \"response.create\", …the create body}` text messages without `stream`, `stream_options` or `background`; each is answered with the run's events, one JSON object per message, ending with the terminal event. One response in flight per connection; errors are `{\"type\": \"error\", \"status\", \"error\": {type, code, message, param}}` and leave the connection open; `store: false` responses can be continued on the connection that made them only; the connection closes after `http.websocket_lifetime_secs` with `websocket_connection_limit_reached`, and with no response in progress after `http.websocket_idle_timeout_secs` without a message (close code 1000) or when the server needs its slot (close code 1013)",
            authenticated: true,
            query: Vec::new(),
            body: None,
            ok: json!({
                "description": "Switched to the WebSocket protocol. Each server message's JSON is described by `x-websocket-server-message`, each client message's by `x-websocket-client-message`.",
                "x-websocket-client-message": {
                    "type": "object",
                    "description": "`type: \"response.create\"` plus the fields of the create body (see the `POST` operation), without `stream`, `stream_options` and `background`",
                    "required": ["type"],
                    "properties": {"type": {"const": "response.create"}},
                },
                "x-websocket-server-message": {"oneOf": [
                    schemas.stream_event,
                    {
                        "type": "object",
                        "required": ["type", "status", "error"],
                        "properties": {
                            "type": {"const": "error"},
                            "status": {"type": "integer"},
                            "error": {
                                "type": "object",
                                "required": ["code", "message"],
                                "properties": {
                                    "type": {"type": "string"},
                                    "code": {"type": "string"},
                                    "message": {"type": "string"},
                                    "param": {"type": ["string", "null"]},
                                },
                            },
                        },
                    },
                ]},
            }),
            errors: vec![
                (400, "Not a WebSocket upgrade request"),
                UNAUTHORIZED,
                FORBIDDEN,
            ],
        },
        Endpoint::ConversationCreate => Spec {
            summary: "Create a conversation (OpenAI Conversations API), with up to 20 first items",
            authenticated: true,
            query: Vec::new(),
            body: json_body(
                "Items and metadata, both optional; an empty body is `{}`",
                &schemas.create_conversation,
                false,
            ),
            ok: json_answer("The conversation", schemas.conversation.clone()),
            errors: vec![BAD_BODY, UNAUTHORIZED, FORBIDDEN, INTERNAL],
        },
        Endpoint::ConversationGet => Spec {
            summary: "Retrieve a conversation",
            authenticated: true,
            query: Vec::new(),
            body: None,
            ok: json_answer("The conversation", schemas.conversation.clone()),
            errors: vec![BAD_PATH, UNAUTHORIZED, FORBIDDEN, NO_CONVERSATION, INTERNAL],
        },
        Endpoint::ConversationUpdate => Spec {
            summary: "Replace a conversation's metadata",
            authenticated: true,
            query: Vec::new(),
            body: json_body("The new metadata", &schemas.update_conversation, true),
            ok: json_answer("The conversation", schemas.conversation.clone()),
            errors: vec![BAD_BODY, UNAUTHORIZED, FORBIDDEN, NO_CONVERSATION, INTERNAL],
        },
        Endpoint::ConversationDelete => Spec {
            summary: "Delete a conversation and its items (the responses stay)",
            authenticated: true,
            query: Vec::new(),
            body: None,
            ok: json_answer(
                "Deleted (`object: \"conversation.deleted\"`)",
                schemas.deleted.clone(),
            ),
            errors: vec![BAD_PATH, UNAUTHORIZED, FORBIDDEN, NO_CONVERSATION, INTERNAL],
        },
        Endpoint::ConversationItems => Spec {
            summary: "List a conversation's items, a page at a time",
            authenticated: true,
            query: page_query(),
            body: None,
            ok: json_answer("A page of items", schemas.item_list.clone()),
            errors: vec![BAD_PAGE, UNAUTHORIZED, FORBIDDEN, NO_CONVERSATION, INTERNAL],
        },
        Endpoint::ConversationItemsAdd => Spec {
            summary: "Add up to 20 items to a conversation",
            authenticated: true,
            query: Vec::new(),
            body: json_body("The items", &schemas.add_items, true),
            ok: json_answer("The added items", schemas.item_list.clone()),
            errors: vec![BAD_BODY, UNAUTHORIZED, FORBIDDEN, NO_CONVERSATION, INTERNAL],
        },
        Endpoint::ConversationItemGet => Spec {
            summary: "Retrieve one item of a conversation",
            authenticated: true,
            query: Vec::new(),
            body: None,
            ok: json_answer(
                "The item, in its wire form",
                json!({"type": "object", "required": ["type"]}),
            ),
            errors: vec![BAD_PATH, UNAUTHORIZED, FORBIDDEN, NO_ITEM, INTERNAL],
        },
        Endpoint::ConversationItemDelete => Spec {
            summary: "Delete one item of a conversation",
            authenticated: true,
            query: Vec::new(),
            body: None,
            ok: json_answer("The conversation", schemas.conversation.clone()),
            errors: vec![BAD_PATH, UNAUTHORIZED, FORBIDDEN, NO_ITEM, INTERNAL],
        },
        Endpoint::FileContent => Spec {
            summary: "Download a shared file",
            authenticated: true,
            query: Vec::new(),
            body: None,
            ok: json!({
                "description": "The file's bytes, with its content type and `Content-Disposition: attachment`",
                "content": {"*/*": {"schema": {}}},
            }),
            errors: vec![
                BAD_PATH,
                UNAUTHORIZED,
                FORBIDDEN,
                (404, "No such response or file (or another project's)"),
                INTERNAL,
            ],
        },
    }
}

/// A JSON request body.
fn json_body(description: &str, schema: &Value, required: bool) -> Option<Value> {
    Some(json!({
        "required": required,
        "description": description,
        "content": {"application/json": {"schema": schema}},
    }))
}

/// The query parameters of a list (OpenAI's cursor pagination).
fn page_query() -> Vec<Value> {
    vec![
        json!({"name": "after", "in": "query", "required": false,
               "description": "An item id: list the items after it (in `order`)",
               "schema": {"type": "string"}}),
        json!({"name": "limit", "in": "query", "required": false,
               "description": "How many items (1 to 100, default 20)",
               "schema": {"type": "integer", "minimum": 1, "maximum": 100}}),
        json!({"name": "order", "in": "query", "required": false,
               "description": "`asc` (oldest first) or `desc` (newest first, the default)",
               "schema": {"type": "string", "enum": ["asc", "desc"]}}),
    ]
}

const BAD_PAGE: (u16, &str) = (
    400,
    "`after`, `limit`, `order` or `include` is invalid (`param` names it), or a path parameter is not valid UTF-8",
);
const BAD_BODY: (u16, &str) = (
    400,
    "Invalid body (`param` names the field), or a path parameter is not valid UTF-8",
);
const NO_CONVERSATION: (u16, &str) = (404, "No such conversation (or another project's)");
const NO_ITEM: (u16, &str) = (404, "No such conversation or item (or another project's)");

/// A response object as JSON, or the run's events as server-sent events.
fn response_or_stream(description: &str, schemas: &Schemas) -> Value {
    json!({
        "description": description,
        "content": {
            "application/json": {"schema": schemas.response},
            "text/event-stream": {
                "schema": {
                    "type": "string",
                    "description": "One `data: <json>` frame per event (no `event:` lines, no `[DONE]`); `:` comment lines keep a quiet stream open. Each frame's JSON is described by `x-sse-data`.",
                },
                "x-sse-data": schemas.stream_event,
            },
        },
    })
}

/// The `{name}` segments of a path, as required string parameters.
fn path_parameters(path: &str) -> Vec<Value> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| {
            let mut parameter =
                json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}});
            let description = match name {
                "id" if path.starts_with("/v1/conversations") => {
                    Some("The conversation id (`conv_…`)")
                }
                "id" => Some("The response id (`resp_…`)"),
                "item_id" => Some("An item id of the conversation"),
                "file_id" => Some("A file id from the response's file list"),
                "connector_id" => Some("A connector id (`connector_…`)"),
                "project_id" => Some("A project id (`proj_…`)"),
                "key_id" => Some("An API key id (`key_…`)"),
                _ => None,
            };
            if let Some(description) = description {
                parameter["description"] = description.into();
            }
            parameter
        })
        .collect()
}

/// `post /v1/agent/{id}/cancel` -> `post_v1_agent_id_cancel`: unique because the table has one
/// row per method and path.
fn operation_id(route: &Route) -> String {
    let mut id = route.method.as_str().to_owned();
    for word in route
        .path
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
    {
        id.push('_');
        id.push_str(word);
    }
    id
}
