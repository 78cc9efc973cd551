//! The admin API's wire types (`/v1/admin/…`, `GET /v1/connectors`): projects, API keys and
//! saved connectors. Secret values (`authorization`, header values) are write-only: they are
//! read into [`SecretString`] (whose `Debug` prints nothing) and never serialized; answers say
//! whether one is set and show a keyed fingerprint at most.

use std::collections::BTreeMap;

use secrecy::SecretString;
use serde::{Deserialize, Deserializer, Serialize};

use crate::RequestError;
use crate::request::RequireApproval;

/// Parses an admin body strictly (unknown fields refused, errors naming the field). An error
/// about a secret field never quotes the value.
pub fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, RequestError> {
    let deserializer = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let path = err.path().to_string();
        let secret = path.starts_with("authorization")
            || path.starts_with("headers.")
            || path.starts_with("client_secret");
        let mut error = RequestError::from_path_error(err);
        if secret {
            error.message = format!(
                "invalid request body: \"{path}\" must be a string (the value is not shown)"
            );
        }
        error
    })
}

/// `PATCH` fields: omitted (`None`), `null` (`Some(None)`: clear) or a value.
fn patch<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

/// How agentd talks to a connector's server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ConnectorTransport {
    /// Streamable HTTP, falling back to the legacy HTTP+SSE transport.
    #[default]
    Auto,
    StreamableHttp,
    Sse,
}

impl ConnectorTransport {
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectorTransport::Auto => "auto",
            ConnectorTransport::StreamableHttp => "streamable_http",
            ConnectorTransport::Sse => "sse",
        }
    }

    pub fn parse(text: &str) -> Option<ConnectorTransport> {
        match text {
            "auto" => Some(ConnectorTransport::Auto),
            "streamable_http" => Some(ConnectorTransport::StreamableHttp),
            "sse" => Some(ConnectorTransport::Sse),
            _ => None,
        }
    }
}

/// How a connector authorizes, when not by the credentials it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AuthorizationType {
    /// The MCP authorization spec: an admin connects it with
    /// `POST /v1/admin/connectors/{id}/oauth/start`; agentd keeps and refreshes the tokens.
    Oauth,
}

/// `POST /v1/admin/connectors` (and the body of a draft test).
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ConnectorCreate {
    /// `^connector_[a-z0-9_]{1,48}$`; generated when omitted.
    #[serde(default)]
    pub id: Option<String>,
    pub server_label: String,
    pub server_url: String,
    #[serde(default)]
    pub transport: Option<ConnectorTransport>,
    /// `oauth`: the server uses OAuth (no `authorization` then; connect it with
    /// `POST /v1/admin/connectors/{id}/oauth/start`).
    #[serde(default)]
    pub authorization_type: Option<AuthorizationType>,
    /// A bearer token for the server (write-only).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub authorization: Option<SecretString>,
    /// Extra headers sent to the server (write-only values).
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<BTreeMap<String, String>>")
    )]
    pub headers: Option<BTreeMap<String, SecretString>>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub allowed_tools: Option<Vec<String>>,
    #[serde(default)]
    pub require_approval: Option<RequireApproval>,
    /// Defaults to `true`: a connector's tools are found through tool search.
    #[serde(default)]
    pub defer_loading: Option<bool>,
    /// Bound of connecting and of each call, in seconds.
    #[serde(default)]
    pub timeout_s: Option<u32>,
    /// Sandbox variable -> `authorization` or `headers.NAME`.
    #[serde(default)]
    pub sandbox_env: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// `PATCH /v1/admin/connectors/{id}`: an omitted field is unchanged, `null` clears, a value
/// replaces.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ConnectorPatch {
    #[serde(default)]
    pub server_label: Option<String>,
    #[serde(default)]
    pub server_url: Option<String>,
    #[serde(default)]
    pub transport: Option<ConnectorTransport>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub authorization: Option<Option<SecretString>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<BTreeMap<String, String>>")
    )]
    pub headers: Option<Option<BTreeMap<String, SecretString>>>,
    #[serde(default, deserialize_with = "patch")]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "patch")]
    pub allowed_tools: Option<Option<Vec<String>>>,
    #[serde(default, deserialize_with = "patch")]
    pub require_approval: Option<Option<RequireApproval>>,
    #[serde(default)]
    pub defer_loading: Option<bool>,
    #[serde(default, deserialize_with = "patch")]
    pub timeout_s: Option<Option<u32>>,
    #[serde(default, deserialize_with = "patch")]
    pub sandbox_env: Option<Option<BTreeMap<String, String>>>,
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// `POST /v1/admin/connectors/{id}/rotate`: new credentials (each given one replaces the old).
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ConnectorRotate {
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub authorization: Option<SecretString>,
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<BTreeMap<String, String>>")
    )]
    pub headers: Option<BTreeMap<String, SecretString>>,
}

/// Whether a secret is set, and its keyed fingerprint (never the value). For an OAuth
/// connector's `authorization`: `type: "oauth"`, whether it is `connected` (has a grant) and
/// when its current access token expires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SecretState {
    pub set: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// `oauth` for an OAuth connector (absent otherwise).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<AuthorizationType>,
    /// OAuth: whether an admin completed the connection (a grant is stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected: Option<bool>,
    /// OAuth: when the current access token expires (Unix seconds); it is refreshed before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

impl SecretState {
    /// A plain secret's state.
    pub fn plain(set: bool, fingerprint: Option<String>) -> SecretState {
        SecretState {
            set,
            fingerprint,
            kind: None,
            connected: None,
            expires_at: None,
        }
    }
}

/// `POST /v1/admin/connectors/{id}/oauth/start`: every field optional.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ConnectorOAuthStart {
    /// agentd's callback as the browser reaches it (`https://agentd.example/v1/admin/oauth/callback`);
    /// by default the callback on the host this request was sent to, when that is a loopback
    /// address.
    #[serde(default)]
    pub redirect_uri: Option<String>,
    /// A client registered with the authorization server beforehand (else dynamic
    /// registration or a client ID metadata document).
    #[serde(default)]
    pub client_id: Option<String>,
    /// That client's secret (write-only).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub client_secret: Option<SecretString>,
    /// The scopes to ask for (space-separated; else the server's).
    #[serde(default)]
    pub scope: Option<String>,
}

/// The answer of `POST /v1/admin/connectors/{id}/oauth/start`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConnectorOAuthStarted {
    /// Always `connector.oauth_authorization`.
    pub object: String,
    pub connector_id: String,
    /// Open this in a browser: the authorization server sends it back to the callback.
    pub authorization_url: String,
    /// The authorization's `state` (single use).
    pub state: String,
    /// The callback must arrive before this (Unix seconds).
    pub expires_at: i64,
}

/// A connector as the admin API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Connector {
    pub id: String,
    /// Always `connector`.
    pub object: String,
    pub server_label: String,
    pub server_url: String,
    pub transport: ConnectorTransport,
    pub description: Option<String>,
    pub allowed_tools: Option<Vec<String>>,
    pub require_approval: Option<RequireApproval>,
    pub defer_loading: bool,
    pub timeout_s: Option<u32>,
    pub sandbox_env: BTreeMap<String, String>,
    pub enabled: bool,
    pub created_at: i64,
    pub updated_at: i64,
    pub authorization: SecretState,
    pub headers: BTreeMap<String, SecretState>,
    /// `untested`, `ok` or `error` (the last test).
    pub status: String,
    pub last_checked_at: Option<i64>,
    pub last_error: Option<String>,
}

/// `GET /v1/admin/connectors`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConnectorList {
    /// Always `list`.
    pub object: String,
    pub data: Vec<Connector>,
}

/// A connector as every key of its project sees it (`GET /v1/connectors`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConnectorSummary {
    pub id: String,
    pub server_label: String,
    pub description: Option<String>,
    pub enabled: bool,
    pub status: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConnectorSummaryList {
    pub object: String,
    pub data: Vec<ConnectorSummary>,
}

/// The server a test reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
    pub protocol_version: String,
}

/// One tool a test listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConnectorToolInfo {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub read_only: bool,
}

/// `POST /v1/admin/connectors/{id}/test` and `/v1/admin/connectors/test`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConnectorTestResult {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_info: Option<ServerInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ConnectorToolInfo>>,
    pub latency_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `GET /v1/admin/connectors/{id}/tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConnectorToolList {
    pub object: String,
    pub data: Vec<ConnectorToolInfo>,
}

/// One audit event of a connector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConnectorEventInfo {
    pub id: String,
    /// `created`, `updated`, `rotated`, `tested`, `deleted`.
    pub kind: String,
    /// The key that did it (`None` in open mode or from the CLI).
    pub key_id: Option<String>,
    /// Field names and outcomes, never values.
    pub detail: serde_json::Value,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConnectorEventList {
    pub object: String,
    pub data: Vec<ConnectorEventInfo>,
}

/// `POST /v1/admin/projects` and `PATCH /v1/admin/projects/{id}`.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ProjectBody {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Project {
    pub id: String,
    /// Always `project`.
    pub object: String,
    pub name: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ProjectList {
    pub object: String,
    pub data: Vec<Project>,
}

/// `POST /v1/admin/keys`.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct KeyCreate {
    #[serde(default)]
    pub name: Option<String>,
    /// `admin` (default), `member`, or `owner` (only an owner key may create one).
    #[serde(default)]
    pub role: Option<String>,
}

/// An API key as listed (never the key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ApiKey {
    pub id: String,
    /// Always `api_key`.
    pub object: String,
    pub project_id: String,
    pub name: Option<String>,
    /// The first characters of the key.
    pub prefix: Option<String>,
    pub role: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    /// The key itself: only in the answer that created it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ApiKeyList {
    pub object: String,
    pub data: Vec<ApiKey>,
}

/// The answer of a `DELETE`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Deleted {
    pub id: String,
    pub object: String,
    pub deleted: bool,
}
