//! `mcp-conformance-client`: the client under test for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, `conformance client --command <this binary>`).
//!
//! The suite starts a scenario's server, then runs this binary with the server URL as the
//! last argument, the scenario in `MCP_CONFORMANCE_SCENARIO` and, for some scenarios, data
//! in `MCP_CONFORMANCE_CONTEXT` (JSON). The binary connects through [`mcp::McpClient`] with
//! a policy that allows loopback only (`127.0.0.0/8`, `::1/128`), then:
//! - `initialize`: connects (Streamable HTTP `initialize`) and closes;
//! - `auth/*`: connects with [`mcp::McpClient::connect_authorized`] and a token source that
//!   runs the whole authorization itself (below), then lists and calls the tools;
//! - any other scenario (`tools_call`, `sse-retry`): lists the tools and calls each one with
//!   arguments made up from its input schema, then closes.
//!
//! # The authorization (what an admin and a browser do in production)
//! On a refusal (401, or 403 `insufficient_scope`) the token source runs [`mcp::oauth`]:
//! discovery from the refusal's challenge, a client (the context's pre-registered client,
//! else the Client ID Metadata Document URL the suite expects, else dynamic registration),
//! the authorization request with the spec's scopes (on a 403, the granted scopes plus the
//! challenge's), then plays the browser: it GETs the authorization URL without following
//! redirects (the suite's authorization server approves at once), reads the code and state
//! from the `Location` of the redirect to the callback URL, and finishes the flow. At most
//! [`MAX_AUTHORIZATIONS`] authorizations per run (the spec's retry limit).
//!
//! It reports on stderr and exits non-zero when a step fails.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;

use engine::mcp::{McpConnector, McpServer, McpSession, McpToolInfo};
use mcp::oauth::{
    Callback, ClientConfig, ClientRegistration, ExposeSecret, OAuth, OAuthError,
    PreRegisteredClient, Rejection, SecretString, TokenSource, scope,
};
use serde_json::{Map, Value, json};

/// The Client ID Metadata Document URL the suite's CIMD scenario expects as client id.
const CIMD_CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The callback URL: nothing listens there, the code is read from the redirect itself.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// Authorizations one run may make before it gives up (MCP spec: retry limits).
const MAX_AUTHORIZATIONS: u32 = 3;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: mcp-conformance-client <server-url>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&scenario, &url).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mcp-conformance-client: scenario {scenario:?}: {err}");
            ExitCode::FAILURE
        }
    }
}

fn policy() -> Result<netguard::Policy, String> {
    netguard::Policy::with_allowed(&["127.0.0.0/8".to_owned(), "::1/128".to_owned()])
        .map_err(|e| e.to_string())
}

async fn run(scenario: &str, url: &str) -> Result<(), String> {
    let policy = policy()?;
    let client =
        mcp::McpClient::new(mcp::McpConfig::new(policy.clone())).map_err(|e| e.to_string())?;
    let server = McpServer {
        label: "conformance".to_owned(),
        url: url.to_owned(),
        authorization: None,
        headers: BTreeMap::new(),
    };
    let session = if scenario.starts_with("auth/") {
        let tokens = Arc::new(BrowserAuthorization::new(client.oauth(), url, &policy)?);
        client.connect_authorized(&server, tokens).await
    } else {
        client.connect(&server).await
    };
    let session = session.map_err(|e| e.to_string())?;
    eprintln!("mcp-conformance-client: connected ({scenario})");
    let outcome = match scenario {
        "initialize" => Ok(()),
        _ => call_every_tool(session.as_ref()).await,
    };
    session.close().await;
    outcome
}

async fn call_every_tool(session: &dyn McpSession) -> Result<(), String> {
    let tools = session.list_tools().await.map_err(|e| e.to_string())?;
    eprintln!("mcp-conformance-client: {} tool(s)", tools.len());
    for tool in &tools {
        let result = session
            .call_tool(&tool.name, arguments_for(tool))
            .await
            .map_err(|e| format!("{}: {e}", tool.name))?;
        eprintln!(
            "mcp-conformance-client: {} -> {}{}",
            tool.name,
            if result.is_error { "error: " } else { "" },
            result.output
        );
    }
    Ok(())
}

/// A value for every property of the tool's input schema, by its type.
fn arguments_for(tool: &McpToolInfo) -> Map<String, Value> {
    let Some(properties) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    else {
        return Map::new();
    };
    properties
        .iter()
        .enumerate()
        .map(|(i, (name, schema))| {
            let value = match schema.get("type").and_then(Value::as_str) {
                Some("number" | "integer") => json!(i + 2),
                Some("boolean") => json!(true),
                Some("array") => json!([]),
                Some("object") => json!({}),
                _ => json!("test"),
            };
            (name.clone(), value)
        })
        .collect()
}

/// A token source that authorizes on the spot, as an admin's browser would.
struct BrowserAuthorization {
    oauth: OAuth,
    server_url: String,
    config: ClientConfig,
    /// Plays the browser: the guarded client, without following redirects.
    browser: reqwest::Client,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    token: Option<SecretString>,
    scope: Option<String>,
    client: Option<(String, ClientRegistration)>,
    authorizations: u32,
}

impl BrowserAuthorization {
    fn new(oauth: OAuth, server_url: &str, policy: &netguard::Policy) -> Result<Self, String> {
        let mut config = ClientConfig::new(REDIRECT_URI);
        config.client_name = "agentd-conformance-client".to_owned();
        config.client_metadata_url = Some(CIMD_CLIENT_METADATA_URL.to_owned());
        config.pre_registered = pre_registered_client()?;
        let browser = policy
            .client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| netguard::describe(&e))?;
        Ok(Self {
            oauth,
            server_url: server_url.to_owned(),
            config,
            browser,
            state: tokio::sync::Mutex::default(),
        })
    }

    /// One full authorization for the refusal, asking for `scope`.
    async fn authorize(
        &self,
        state: &mut State,
        rejection: &Rejection,
        step_up: bool,
    ) -> Result<SecretString, OAuthError> {
        let discovery = self
            .oauth
            .discover(&self.server_url, Some(&rejection.challenge))
            .await?;
        let wanted = match (step_up, rejection.challenge.scope()) {
            (true, Some(required)) => Some(scope::step_up(state.scope.as_deref(), required)),
            _ => discovery.scope(),
        };
        let client = match &state.client {
            Some((issuer, client)) if issuer == discovery.issuer() => client.clone(),
            _ => {
                let client = self.oauth.register(&discovery, &self.config).await?;
                state.client = Some((discovery.issuer().to_owned(), client.clone()));
                client
            }
        };
        let request = self
            .oauth
            .authorization_request(&discovery, client, wanted.clone())?;
        let callback = self.browse(&request.url).await?;
        let authorized = self.oauth.finish(&request.pending, &callback).await?;
        eprintln!(
            "mcp-conformance-client: authorized (scope {})",
            authorized.tokens.scope.as_deref().unwrap_or("-")
        );
        state.scope = authorized.tokens.scope.clone().or(wanted);
        state.token = Some(authorized.tokens.access_token.clone());
        Ok(authorized.tokens.access_token)
    }

    /// The browser's part: open the authorization URL, take the redirect to the callback.
    async fn browse(&self, url: &url::Url) -> Result<Callback, OAuthError> {
        let refused = |reason: String| OAuthError::Callback(reason);
        let response = self.browser.get(url.clone()).send().await.map_err(|e| {
            refused(format!(
                "the authorization endpoint: {}",
                netguard::describe(&e)
            ))
        })?;
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                refused(format!(
                    "the authorization endpoint answered {} without a redirect",
                    response.status()
                ))
            })?;
        let target = url
            .join(location)
            .map_err(|_| refused("the redirect is not a URL".to_owned()))?;
        if !target.as_str().starts_with(REDIRECT_URI) {
            return Err(refused(
                "the redirect does not go to the callback URL".to_owned(),
            ));
        }
        Ok(Callback::from_url(&target))
    }
}

/// `auth/pre-registration`: the client id and secret of the context.
fn pre_registered_client() -> Result<Option<PreRegisteredClient>, String> {
    let Ok(context) = std::env::var("MCP_CONFORMANCE_CONTEXT") else {
        return Ok(None);
    };
    let context: Value =
        serde_json::from_str(&context).map_err(|e| format!("MCP_CONFORMANCE_CONTEXT: {e}"))?;
    let Some(client_id) = context.get("client_id").and_then(Value::as_str) else {
        return Ok(None);
    };
    Ok(Some(PreRegisteredClient {
        client_id: client_id.to_owned(),
        client_secret: context
            .get("client_secret")
            .and_then(Value::as_str)
            .map(SecretString::from),
        auth_method: None,
    }))
}

#[async_trait::async_trait]
impl TokenSource for BrowserAuthorization {
    async fn access_token(&self) -> Result<Option<SecretString>, OAuthError> {
        Ok(self.state.lock().await.token.clone())
    }

    async fn rejected(&self, rejection: &Rejection) -> Result<Option<SecretString>, OAuthError> {
        let mut state = self.state.lock().await;
        // Another request authorized meanwhile: use its token.
        if let Some(current) = &state.token
            && rejection
                .token
                .as_ref()
                .is_none_or(|sent| sent.expose_secret() != current.expose_secret())
        {
            return Ok(Some(current.clone()));
        }
        let step_up = match rejection.status {
            401 => false,
            403 if rejection.challenge.is_insufficient_scope() => true,
            _ => return Ok(None),
        };
        if state.authorizations >= MAX_AUTHORIZATIONS {
            eprintln!(
                "mcp-conformance-client: giving up after {MAX_AUTHORIZATIONS} authorizations"
            );
            return Ok(None);
        }
        state.authorizations += 1;
        self.authorize(&mut state, rejection, step_up)
            .await
            .map(Some)
    }
}
