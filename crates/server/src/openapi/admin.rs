//! The admin API's operations (their schemas are in `admin_schemas.rs`).
//! Secret fields are described as write-only strings; no example holds a value.

use serde_json::{Value, json};

use super::schemas::Schemas;
use super::spec::{INTERNAL, Spec, UNAUTHORIZED, json_answer};
use crate::route_table::AdminEndpoint;
use crate::route_table::{Endpoint, Method, Route};

/// The success status of a route: 201 for the creates, 200 otherwise.
pub fn ok_status(route: &Route) -> &'static str {
    match route.endpoint {
        Endpoint::Admin(
            AdminEndpoint::CreateProject
            | AdminEndpoint::CreateKey
            | AdminEndpoint::CreateConnector,
        ) if route.method == Method::Post => "201",
        _ => "200",
    }
}

const FORBIDDEN_ROLE: (u16, &str) = (
    403,
    "The key's role may not do this (`permission_denied`: a member key on an admin route, or an admin key on a server-owner route)",
);
const BAD: (u16, &str) = (
    400,
    "Invalid body or query (`param` names the field; secret values are never quoted)",
);
const MISSING: (u16, &str) = (404, "No such object in this project (or another project's)");

fn body(description: &str, schema: &Value) -> Option<Value> {
    Some(json!({
        "required": true,
        "description": description,
        "content": {"application/json": {"schema": schema}},
    }))
}

fn project_query() -> Vec<Value> {
    vec![json!({
        "name": "project", "in": "query", "required": false,
        "description": "Server-owner keys only: act on this project (id or name) instead of the key's own",
        "schema": {"type": "string"},
    })]
}

/// The response listing's filters and page.
fn listing_query() -> Vec<Value> {
    let mut query = project_query();
    let param = |name: &str, description: &str, schema: Value| json!({"name": name, "in": "query", "required": false, "description": description, "schema": schema});
    query.extend([
        param(
            "status",
            "Only responses with this status",
            json!({"type": "string", "enum": ["queued", "in_progress", "completed", "failed", "cancelled", "requires_action", "incomplete", "cancelling"]}),
        ),
        param(
            "model",
            "Only responses of this model (`provider/model`, or the model name for any provider)",
            json!({"type": "string"}),
        ),
        param(
            "created_after",
            "Created at or after (Unix seconds)",
            json!({"type": "integer"}),
        ),
        param(
            "created_before",
            "Created before (Unix seconds)",
            json!({"type": "integer"}),
        ),
        param(
            "after",
            "The cursor: the previous page's `last_id`",
            json!({"type": "string"}),
        ),
        param(
            "limit",
            "Page size, 1 to 100 (20 by default)",
            json!({"type": "integer", "minimum": 1, "maximum": 100}),
        ),
    ]);
    query
}

pub(super) fn spec(endpoint: AdminEndpoint, schemas: &Schemas) -> Spec {
    use AdminEndpoint as A;
    let s = &schemas.admin;
    let admin_errors = vec![BAD, UNAUTHORIZED, FORBIDDEN_ROLE, MISSING, INTERNAL];
    let spec = |summary, query: Vec<Value>, body: Option<Value>, ok: Value| Spec {
        summary,
        authenticated: true,
        query,
        body,
        ok,
        errors: admin_errors.clone(),
    };
    match endpoint {
        A::ListProjects => spec(
            "List projects (a server-owner key: all; an admin key: its own)",
            Vec::new(),
            None,
            json_answer("The projects", s.project_list.clone()),
        ),
        A::CreateProject => {
            let mut spec = spec(
                "Create a project (server-owner keys)",
                Vec::new(),
                body("The name", &s.project_body),
                json_answer("The project", s.project.clone()),
            );
            spec.errors.push((409, "A project of this name exists"));
            spec
        }
        A::RenameProject => spec(
            "Rename a project",
            Vec::new(),
            body("The new name", &s.project_body),
            json_answer("The project", s.project.clone()),
        ),
        A::DeleteProject => spec(
            "Delete a project with everything it owns: keys, responses, files, conversations, connectors, the people imported into it (server-owner keys)",
            Vec::new(),
            None,
            json_answer("Deleted", s.deleted.clone()),
        ),
        A::ListKeys => spec(
            "List the project's API keys (prefix, name, role, created, last used; never the key)",
            project_query(),
            None,
            json_answer("The keys", s.key_list.clone()),
        ),
        A::CreateKey => spec(
            "Create an API key: the answer holds the key, shown this once",
            project_query(),
            body("Name and role", &s.key_create),
            json_answer("The key, with `key`", s.key.clone()),
        ),
        A::RevokeKey => spec(
            "Revoke an API key",
            project_query(),
            None,
            json_answer("Deleted", s.deleted.clone()),
        ),
        A::ListConnectors => spec(
            "List the project's connectors (credentials as `{set, fingerprint}` only)",
            project_query(),
            None,
            json_answer("The connectors", s.connector_list.clone()),
        ),
        A::CreateConnector => {
            let mut spec = spec(
                "Save a connector (an MCP server, its credentials sealed at rest)",
                project_query(),
                body(
                    "The connector; `authorization` and header values are write-only",
                    &s.connector_create,
                ),
                json_answer("The connector", s.connector.clone()),
            );
            spec.errors
                .push((409, "The project has a connector with this id"));
            spec
        }
        A::TestDraft => spec(
            "Test an unsaved connector: initialize and tools/list (nothing is stored)",
            Vec::new(),
            body("The connector as it would be created", &s.connector_create),
            json_answer("The outcome", s.test_result.clone()),
        ),
        A::GetConnector => spec(
            "Get a connector",
            project_query(),
            None,
            json_answer("The connector", s.connector.clone()),
        ),
        A::UpdateConnector => spec(
            "Update a connector: an omitted field is unchanged, `null` clears, a value replaces",
            project_query(),
            body("The fields to change", &s.connector_patch),
            json_answer("The connector", s.connector.clone()),
        ),
        A::DeleteConnector => spec(
            "Delete a connector; requests naming it are then refused (400 `tools[i].id`)",
            project_query(),
            None,
            json_answer("Deleted", s.deleted.clone()),
        ),
        A::TestConnector => spec(
            "Test a saved connector: initialize and tools/list; the status and last check are kept",
            project_query(),
            None,
            json_answer("The outcome", s.test_result.clone()),
        ),
        A::RotateConnector => spec(
            "Replace a connector's credentials; runs from now on (continuations included) use the new ones",
            project_query(),
            body("The new credentials (write-only)", &s.connector_rotate),
            json_answer("The connector", s.connector.clone()),
        ),
        A::ConnectorTools => {
            let mut spec = spec(
                "The tools the connector's server offers now",
                project_query(),
                None,
                json_answer("The tools", s.tool_list.clone()),
            );
            spec.errors
                .push((424, "The server could not be reached or listed"));
            spec
        }
        A::ConnectorEvents => spec(
            "The connector's audit events (what was done, by which key, when; never values)",
            project_query(),
            None,
            json_answer("The events", s.event_list.clone()),
        ),
        A::StartConnectorOAuth => {
            let mut spec = spec(
                "Start the OAuth connection of a connector saved with `authorization_type: oauth`: discovery and client registration at its authorization server; open `authorization_url` in a browser within 15 minutes",
                project_query(),
                body(
                    "Optional: the callback URL (`redirect_uri`, by default the callback on a loopback host this request reached), a pre-registered client (`client_secret` is write-only), the scopes",
                    &s.oauth_start,
                ),
                json_answer("Where to send the browser", s.oauth_started.clone()),
            );
            spec.errors.push((
                424,
                "The server could not be reached, or discovery or registration failed",
            ));
            spec
        }
        A::OAuthCallback => Spec {
            summary: "The authorization server sends the admin's browser back here: the single-use `state` of a connection started on this server authenticates it (no key); the code is exchanged and the grant stored sealed",
            authenticated: false,
            query: ["code", "state", "iss", "error", "error_description"]
                .into_iter()
                .map(|name| {
                    json!({
                        "name": name, "in": "query", "required": name == "state",
                        "description": "Set by the authorization server (RFC 6749 §4.1.2, RFC 9207)",
                        "schema": {"type": "string"},
                    })
                })
                .collect(),
            body: None,
            ok: json!({
                "description": "Connected: a page saying so",
                "content": {"text/html": {"schema": {"type": "string"}}},
            }),
            errors: vec![
                (
                    400,
                    "Unknown, used or expired `state`, or the authorization was refused or its code could not be exchanged",
                ),
                MISSING,
                INTERNAL,
            ],
        },
        A::ListResponses => Spec {
            summary: "A page of the project's responses, newest first, for any key of the project (`store: false` ones are never listed)",
            authenticated: true,
            query: listing_query(),
            body: None,
            ok: json_answer("The responses", s.response_list.clone()),
            errors: vec![BAD, UNAUTHORIZED, MISSING, INTERNAL],
        },
        A::PendingApprovals => Spec {
            summary: "The project's `mcp_approval_request` items no continuation has answered yet, newest first (among its 2000 most recent responses), for any key of the project",
            authenticated: true,
            query: project_query(),
            body: None,
            ok: json_answer("The pending approvals", s.approval_list.clone()),
            errors: vec![BAD, UNAUTHORIZED, MISSING, INTERNAL],
        },
        A::ResponseTurns => Spec {
            summary: "A stored response's model turns in the order they ran (step, model, start, duration, time to first token, tokens, error), for any key of the project; recorded when the run ends (empty before)",
            authenticated: true,
            query: project_query(),
            body: None,
            ok: json_answer("The model turns", s.turn_list.clone()),
            errors: vec![BAD, UNAUTHORIZED, MISSING, INTERNAL],
        },
        A::PublicConnectors => Spec {
            summary: "The project's connectors, for any key of the project (ids, labels, descriptions, status; never credentials)",
            authenticated: true,
            query: Vec::new(),
            body: None,
            ok: json_answer("The connectors", s.connector_summaries.clone()),
            errors: vec![UNAUTHORIZED, INTERNAL],
        },
    }
}
