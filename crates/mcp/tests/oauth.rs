//! `mcp::oauth` over HTTP:
//! - the admin's two steps (`OAuth::start`, `OAuth::finish`) against a mock authorization
//!   server (axum, in process): what is registered, the authorization URL, the code exchange;
//! - `McpClient::connect_authorized` with a scripted token source and with `RefreshingTokens`
//!   against the token-protected Python fixture (`tests/mcp/fixtures.py --token`) and the
//!   mock's token endpoint, on both transports: the retry after a refusal, refresh on 401 and
//!   before expiry, the rotated refresh token handed to the sink, clear failures when the
//!   refreshed token or the refresh token is refused, no secret in any error;
//! - end to end against the official Python SDK's own authorization server (the `oauth`
//!   fixture kind): authorization, use, proactive refresh with rotation, a restart from the
//!   stored refresh token.
//!
//! The official conformance suite (`tests/conformance.rs`) covers the rest of discovery and
//! registration.

#![expect(
    clippy::expect_used,
    reason = "integration tests: a failed step must stop the test loudly"
)]

mod common;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use common::fixtures::{McpFixture, Transport};
use common::{args, client, server};
use engine::mcp::{McpError, McpSession};
use mcp::oauth::{
    Callback, Challenge, ClientConfig, ClientRegistration, CredentialSink, ExposeSecret,
    OAuthError, OAuthGrant, RefreshingTokens, RegistrationKind, Rejection, SecretString,
    TokenEndpointAuth, TokenSet, TokenSource,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const TRANSPORTS: [Transport; 2] = [Transport::StreamableHttp, Transport::Sse];

/// The token the fixture accepts.
const GOOD: &str = "access-good-7d41c2";

// --- the mock authorization server (and the 401 of an MCP endpoint) --------------------------

#[derive(Default)]
struct Seen {
    registrations: Vec<Value>,
    authorizations: Vec<HashMap<String, String>>,
    token_forms: Vec<HashMap<String, String>>,
    token_auth: Vec<Option<String>>,
}

struct Mock {
    base: String,
    seen: Mutex<Seen>,
    /// Answers of the token endpoint, in order; then the default one.
    token_answers: Mutex<VecDeque<(StatusCode, Value)>>,
}

impl Mock {
    async fn start() -> Arc<Mock> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr: SocketAddr = listener.local_addr().expect("addr");
        let mock = Arc::new(Mock {
            base: format!("http://127.0.0.1:{}", addr.port()),
            seen: Mutex::default(),
            token_answers: Mutex::default(),
        });
        let app = Router::new()
            .route("/mcp", post(mcp_endpoint))
            .route(
                "/.well-known/oauth-protected-resource/mcp",
                get(resource_metadata),
            )
            .route(
                "/.well-known/oauth-authorization-server/tenant",
                get(server_metadata),
            )
            .route("/tenant/register", post(register))
            .route("/tenant/authorize", get(authorize))
            .route("/tenant/token", post(token))
            .with_state(mock.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        mock
    }

    fn answer_tokens(&self, status: StatusCode, body: Value) {
        self.token_answers
            .lock()
            .expect("lock")
            .push_back((status, body));
    }

    fn seen<T>(&self, read: impl FnOnce(&Seen) -> T) -> T {
        read(&self.seen.lock().expect("lock"))
    }

    fn issuer(&self) -> String {
        format!("{}/tenant", self.base)
    }
}

async fn mcp_endpoint(State(mock): State<Arc<Mock>>) -> Response {
    let challenge = format!(
        r#"Bearer error="invalid_token", scope="mcp:read", resource_metadata="{}/.well-known/oauth-protected-resource/mcp""#,
        mock.base
    );
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, challenge)],
        axum::Json(json!({"error": "invalid_token"})),
    )
        .into_response()
}

async fn resource_metadata(State(mock): State<Arc<Mock>>) -> Response {
    axum::Json(json!({
        "resource": format!("{}/mcp", mock.base),
        "authorization_servers": [mock.issuer()],
        "scopes_supported": ["mcp:read", "mcp:write"],
    }))
    .into_response()
}

async fn server_metadata(State(mock): State<Arc<Mock>>) -> Response {
    let issuer = mock.issuer();
    axum::Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": format!("{issuer}/register"),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "scopes_supported": ["mcp:read", "offline_access"],
        "authorization_response_iss_parameter_supported": true,
    }))
    .into_response()
}

async fn register(State(mock): State<Arc<Mock>>, axum::Json(body): axum::Json<Value>) -> Response {
    mock.seen.lock().expect("lock").registrations.push(body);
    (
        StatusCode::CREATED,
        axum::Json(json!({
            "client_id": "dyn-client-1",
            "client_secret": "dyn-secret-5e1f",
            "token_endpoint_auth_method": "client_secret_basic",
        })),
    )
        .into_response()
}

async fn authorize(
    State(mock): State<Arc<Mock>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let mut target = url::Url::parse(&query["redirect_uri"]).expect("redirect_uri");
    target
        .query_pairs_mut()
        .append_pair("code", "code-one-3b9d")
        .append_pair("state", &query["state"])
        .append_pair("iss", &mock.issuer());
    mock.seen.lock().expect("lock").authorizations.push(query);
    (StatusCode::FOUND, [(header::LOCATION, target.to_string())]).into_response()
}

async fn token(
    State(mock): State<Arc<Mock>>,
    headers: HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    {
        let mut seen = mock.seen.lock().expect("lock");
        seen.token_forms.push(form);
        seen.token_auth.push(
            headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        );
    }
    let answer = mock.token_answers.lock().expect("lock").pop_front();
    let (status, body) = answer.unwrap_or((
        StatusCode::OK,
        json!({
            "access_token": GOOD,
            "token_type": "Bearer",
            "expires_in": 3600,
            "refresh_token": "refresh-two-c0ffee",
            "scope": "mcp:read offline_access",
        }),
    ));
    (status, axum::Json(body)).into_response()
}

// --- helpers -------------------------------------------------------------------------------

#[derive(Default)]
struct Sink {
    stored: Mutex<Vec<TokenSet>>,
    lost: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl CredentialSink for Sink {
    async fn store(&self, tokens: &TokenSet) -> Result<(), String> {
        self.stored.lock().expect("lock").push(tokens.clone());
        Ok(())
    }

    async fn lost(&self, reason: &OAuthError) {
        self.lost.lock().expect("lock").push(reason.to_string());
    }
}

impl Sink {
    fn stored_refresh_tokens(&self) -> Vec<String> {
        self.stored
            .lock()
            .expect("lock")
            .iter()
            .map(|t| {
                t.refresh_token
                    .as_ref()
                    .map(|r| r.expose_secret().to_owned())
                    .unwrap_or_default()
            })
            .collect()
    }
}

/// A grant at the mock's token endpoint for a pre-registered confidential client.
fn grant(mock: &Mock, resource: &str) -> OAuthGrant {
    OAuthGrant {
        issuer: mock.issuer(),
        token_endpoint: format!("{}/token", mock.issuer()),
        resource: resource.to_owned(),
        client: ClientRegistration {
            client_id: "client-one".into(),
            client_secret: Some(SecretString::from("client-secret-9a7b")),
            auth_method: TokenEndpointAuth::ClientSecretBasic,
            kind: RegistrationKind::PreRegistered,
            redirect_uri: "http://127.0.0.1:9/callback".into(),
            secret_expires_at: None,
        },
        scope: Some("mcp:read".into()),
    }
}

fn tokens(access: &str, expires_at: Option<SystemTime>) -> TokenSet {
    TokenSet {
        access_token: SecretString::from(access),
        expires_at,
        refresh_token: Some(SecretString::from("refresh-one-5a5a")),
        scope: Some("mcp:read".into()),
    }
}

/// The `Authorization` headers the fixture received, in order.
fn bearer_tokens(peer: &McpFixture) -> Vec<String> {
    peer.requests()
        .iter()
        .map(|r| {
            r["authorization"]
                .as_str()
                .and_then(|a| a.strip_prefix("Bearer "))
                .unwrap_or("-")
                .to_owned()
        })
        .collect()
}

async fn echo(session: &dyn McpSession, text: &str) -> String {
    let result = session
        .call_tool("echo", args(json!({ "text": text })))
        .await
        .expect("echo");
    assert!(!result.is_error, "{result:?}");
    result.output
}

/// Every secret these tests use, for checking that none is shown.
const SECRETS: [&str; 7] = [
    GOOD,
    "refresh-one-5a5a",
    "refresh-two-c0ffee",
    "client-secret-9a7b",
    "stale-access-1f",
    "access-wrong-44",
    "code-one-3b9d",
];

fn assert_no_secret(text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} shown in: {text}");
    }
}

// --- the admin's authorization ---------------------------------------------------------------

#[tokio::test]
async fn start_and_finish_run_the_authorization_code_flow_with_pkce() {
    let mock = Mock::start().await;
    let oauth = client().oauth();
    let callback_url = "http://127.0.0.1:9/oauth/callback";
    let server_url = format!("{}/mcp", mock.base);
    let request = oauth
        .start(&server_url, &ClientConfig::new(callback_url))
        .await
        .expect("start");

    // Dynamic registration: a confidential client for the callback, with refresh tokens.
    let registration = mock.seen(|s| s.registrations.clone());
    assert_eq!(registration.len(), 1);
    assert_eq!(registration[0]["redirect_uris"], json!([callback_url]));
    assert_eq!(
        registration[0]["token_endpoint_auth_method"],
        "client_secret_basic"
    );
    assert_eq!(
        registration[0]["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );

    // The authorization URL: the challenge's scope plus offline_access, the resource, PKCE.
    let query: HashMap<String, String> = request.url.query_pairs().into_owned().collect();
    assert!(
        request
            .url
            .as_str()
            .starts_with(&format!("{}/authorize?", mock.issuer()))
    );
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["client_id"], "dyn-client-1");
    assert_eq!(query["redirect_uri"], callback_url);
    assert_eq!(query["scope"], "mcp:read offline_access");
    assert_eq!(query["resource"], server_url);
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["state"], request.pending.state());

    // The admin's browser: the authorization server redirects to the callback.
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("browser");
    let answer = browser
        .get(request.url.clone())
        .send()
        .await
        .expect("authorize");
    let location = answer.headers()[header::LOCATION]
        .to_str()
        .expect("location")
        .to_owned();
    let callback = url::Url::parse(&location).expect("callback URL");
    assert!(location.starts_with(callback_url), "{location}");

    // A forged state is refused before the token endpoint is asked.
    let forged = Callback::from_query("code=code-one-3b9d&state=forged");
    let err = oauth
        .finish(&request.pending, &forged)
        .await
        .expect_err("forged state accepted");
    assert!(matches!(err, OAuthError::Callback(_)), "{err:?}");
    assert_eq!(mock.seen(|s| s.token_forms.len()), 0);

    let authorized = oauth
        .finish(&request.pending, &Callback::from_url(&callback))
        .await
        .expect("finish");

    // The code exchange: the verifier of the challenge, the resource, Basic client auth.
    let (form, auth) = mock.seen(|s| (s.token_forms[0].clone(), s.token_auth[0].clone()));
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["code"], "code-one-3b9d");
    assert_eq!(form["redirect_uri"], callback_url);
    assert_eq!(form["resource"], server_url);
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(form["code_verifier"].as_bytes()));
    assert_eq!(challenge, query["code_challenge"]);
    assert_eq!(form["client_id"], "dyn-client-1");
    assert!(!form.contains_key("client_secret"), "{form:?}");
    assert_eq!(
        auth.as_deref(),
        Some(format!("Basic {}", STANDARD.encode("dyn-client-1:dyn-secret-5e1f")).as_str())
    );

    // What to store.
    assert_eq!(authorized.grant.issuer, mock.issuer());
    assert_eq!(
        authorized.grant.token_endpoint,
        format!("{}/token", mock.issuer())
    );
    assert_eq!(authorized.grant.resource, server_url);
    assert_eq!(authorized.grant.client.kind, RegistrationKind::Dynamic);
    assert_eq!(authorized.grant.client.client_id, "dyn-client-1");
    assert_eq!(authorized.tokens.access_token.expose_secret(), GOOD);
    assert_eq!(
        authorized
            .tokens
            .refresh_token
            .as_ref()
            .map(|t| t.expose_secret().to_owned())
            .as_deref(),
        Some("refresh-two-c0ffee")
    );
    assert!(authorized.tokens.expires_at.is_some());
    assert_eq!(
        authorized.tokens.scope.as_deref(),
        Some("mcp:read offline_access")
    );
    // A step-up: the same client, the granted scopes plus the required ones.
    let mut again = ClientConfig::new(callback_url);
    again.pre_registered = Some(authorized.grant.client.to_pre_registered());
    let granted = authorized.tokens.scope.as_deref();
    let step_up = mcp::oauth::scope::step_up(granted, "mcp:write");
    let second = oauth
        .start_with_scope(&server_url, &again, Some(&step_up))
        .await
        .expect("step-up start");
    let query: HashMap<String, String> = second.url.query_pairs().into_owned().collect();
    assert_eq!(query["scope"], "mcp:read offline_access mcp:write");
    assert_eq!(query["client_id"], "dyn-client-1");
    assert_eq!(mock.seen(|s| s.registrations.len()), 1, "registered again");
    assert_eq!(
        second.pending.grant().client.auth_method,
        TokenEndpointAuth::ClientSecretBasic
    );

    let shown = format!("{authorized:?} {:?}", request.pending);
    assert_no_secret(&shown);
    assert!(!shown.contains("dyn-secret-5e1f"), "{shown}");
    assert!(!shown.contains(&form["code_verifier"]), "{shown}");
}

#[tokio::test]
async fn a_server_without_oauth_is_told_apart() {
    let peer = McpFixture::start("basic", Transport::StreamableHttp).await;
    let err = client()
        .oauth()
        .start(&peer.url, &ClientConfig::new("http://127.0.0.1:9/cb"))
        .await
        .expect_err("a server without OAuth was authorized");
    assert!(
        matches!(&err, OAuthError::Discovery(m) if m.contains("does not use OAuth")),
        "{err:?}"
    );
    // The probe, the protected resource and the authorization server metadata were looked
    // for; nothing was registered.
    let paths: Vec<String> = peer
        .requests()
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["method"].as_str().unwrap_or(""),
                r["path"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        paths,
        [
            "POST /mcp",
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /.well-known/oauth-protected-resource",
            "GET /.well-known/oauth-authorization-server",
            "GET /.well-known/openid-configuration",
        ]
    );
}

#[tokio::test]
async fn oauth_servers_must_be_https_unless_on_loopback() {
    let oauth = client().oauth();
    let err = oauth
        .start(
            "http://mcp.example.com/mcp",
            &ClientConfig::new("https://agentd.example/cb"),
        )
        .await
        .expect_err("plain http accepted");
    assert!(matches!(err, OAuthError::Blocked(_)), "{err:?}");
    let source = Arc::new(Scripted::default());
    let err = client()
        .connect_authorized(&server("http://mcp.example.com/mcp".into()), source.clone())
        .await
        .err()
        .expect("plain http accepted");
    assert!(matches!(err, McpError::Blocked(_)), "{err:?}");
    assert_eq!(source.rejections.load(Ordering::SeqCst), 0);
}

// --- the MCP client with a token source ------------------------------------------------------

/// A source that always offers a stale token and gives the good one when told it was refused.
#[derive(Default)]
struct Scripted {
    rejections: AtomicUsize,
    refused: Mutex<Vec<(u16, Option<String>)>>,
}

#[async_trait::async_trait]
impl TokenSource for Scripted {
    async fn access_token(&self) -> Result<Option<SecretString>, OAuthError> {
        Ok(Some(SecretString::from("stale-access-1f")))
    }

    async fn rejected(&self, rejection: &Rejection) -> Result<Option<SecretString>, OAuthError> {
        self.rejections.fetch_add(1, Ordering::SeqCst);
        self.refused.lock().expect("lock").push((
            rejection.status,
            rejection
                .token
                .as_ref()
                .map(|t| t.expose_secret().to_owned()),
        ));
        Ok(Some(SecretString::from(GOOD)))
    }
}

#[tokio::test]
async fn every_refused_request_is_sent_once_more_with_the_sources_new_token() {
    for transport in TRANSPORTS {
        let peer = McpFixture::start_with_token("basic", transport, GOOD).await;
        let source = Arc::new(Scripted::default());
        let session = client()
            .connect_authorized(&server(peer.url.clone()), source.clone())
            .await
            .unwrap_or_else(|e| panic!("{transport:?}: connect: {e}"));
        assert_eq!(echo(session.as_ref(), "hi").await, "hi");
        session.close().await;

        // Each request went out with the stale token, was refused, and went out again with
        // the good one (requests run concurrently, so count rather than order them). The
        // closing DELETE is best effort: it is not sent again.
        let requests = peer.requests();
        let with = |token: &str| {
            requests
                .iter()
                .filter(|r| {
                    r["method"] != "DELETE" && r["authorization"] == format!("Bearer {token}")
                })
                .count()
        };
        let (stale, good) = (with("stale-access-1f"), with(GOOD));
        assert!(stale >= 3, "{transport:?}: {requests:?}");
        assert_eq!(good, stale, "{transport:?}: {requests:?}");
        let sent = bearer_tokens(&peer);
        let refused = source.refused.lock().expect("lock").clone();
        assert_eq!(refused.len(), stale, "{transport:?}: {sent:?}");
        assert!(
            refused
                .iter()
                .all(|r| *r == (401, Some("stale-access-1f".to_owned()))),
            "{transport:?}: {refused:?}"
        );
    }
}

#[tokio::test]
async fn a_refused_access_token_is_refreshed_once_and_the_rotated_refresh_token_stored() {
    for transport in TRANSPORTS {
        let mock = Mock::start().await;
        let peer = McpFixture::start_with_token("basic", transport, GOOD).await;
        let oauth = client().oauth();
        let sink = Arc::new(Sink::default());
        let source = Arc::new(RefreshingTokens::new(
            oauth,
            grant(&mock, &peer.url),
            tokens("stale-access-1f", None),
            sink.clone(),
        ));
        let session = client()
            .connect_authorized(&server(peer.url.clone()), source)
            .await
            .unwrap_or_else(|e| panic!("{transport:?}: connect: {e}"));
        assert_eq!(echo(session.as_ref(), "refreshed").await, "refreshed");
        session.close().await;

        // One refresh, with the stored refresh token, the resource and the client's Basic auth.
        let (forms, auth) = mock.seen(|s| (s.token_forms.clone(), s.token_auth.clone()));
        assert_eq!(forms.len(), 1, "{transport:?}: {forms:?}");
        assert_eq!(forms[0]["grant_type"], "refresh_token");
        assert_eq!(forms[0]["refresh_token"], "refresh-one-5a5a");
        assert_eq!(forms[0]["resource"], peer.url);
        assert_eq!(
            auth[0].as_deref(),
            Some(format!("Basic {}", STANDARD.encode("client-one:client-secret-9a7b")).as_str())
        );
        // The rotated refresh token went to the sink.
        assert_eq!(sink.stored_refresh_tokens(), ["refresh-two-c0ffee"]);
        // The fixture saw the stale token once, then only the new one.
        let sent = bearer_tokens(&peer);
        assert_eq!(sent[0], "stale-access-1f", "{transport:?}: {sent:?}");
        assert!(
            sent[1..].iter().all(|t| t == GOOD),
            "{transport:?}: {sent:?}"
        );
    }
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
    let mock = Mock::start().await;
    let peer = McpFixture::start_with_token("basic", Transport::StreamableHttp, GOOD).await;
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let clock = Arc::new(AtomicU64::new(0));
    let seconds = clock.clone();
    let oauth = client()
        .oauth()
        .with_clock(move || t0 + Duration::from_secs(seconds.load(Ordering::SeqCst)));
    let sink = Arc::new(Sink::default());
    let source = Arc::new(RefreshingTokens::new(
        oauth,
        grant(&mock, &peer.url),
        tokens(GOOD, Some(t0 + Duration::from_secs(3600))),
        sink.clone(),
    ));
    let session = client()
        .connect_authorized(&server(peer.url.clone()), source)
        .await
        .expect("connect");
    assert_eq!(echo(session.as_ref(), "fresh").await, "fresh");
    assert_eq!(mock.seen(|s| s.token_forms.len()), 0, "refreshed too early");

    // Within a minute of expiry: the next request refreshes first.
    clock.store(3550, Ordering::SeqCst);
    assert_eq!(echo(session.as_ref(), "renewed").await, "renewed");
    session.close().await;
    assert_eq!(mock.seen(|s| s.token_forms.len()), 1);
    assert_eq!(sink.stored_refresh_tokens(), ["refresh-two-c0ffee"]);
    let sent = bearer_tokens(&peer);
    assert!(
        sent.iter().all(|t| t == GOOD),
        "a request was refused: {sent:?}"
    );
}

#[tokio::test]
async fn a_token_refused_right_after_its_refresh_fails_clearly() {
    let mock = Mock::start().await;
    mock.answer_tokens(
        StatusCode::OK,
        json!({"access_token": "access-wrong-44", "token_type": "bearer", "expires_in": 3600}),
    );
    let peer = McpFixture::start_with_token("basic", Transport::StreamableHttp, GOOD).await;
    let sink = Arc::new(Sink::default());
    let source = Arc::new(RefreshingTokens::new(
        client().oauth(),
        grant(&mock, &peer.url),
        tokens("stale-access-1f", None),
        sink.clone(),
    ));
    let err = client()
        .connect_authorized(&server(peer.url.clone()), source)
        .await
        .err()
        .expect("a refused token accepted");
    let McpError::Http { status, message } = &err else {
        panic!("not an HTTP error: {err:?}");
    };
    assert_eq!(*status, 401);
    assert!(
        message.contains("refused the access token again"),
        "{message}"
    );
    assert_no_secret(&format!("{err} {err:?}"));
    // Refreshed once; the server kept the old refresh token, which is what is kept.
    assert_eq!(mock.seen(|s| s.token_forms.len()), 1);
    assert_eq!(sink.stored_refresh_tokens(), ["refresh-one-5a5a"]);
}

#[tokio::test]
async fn a_refused_refresh_token_asks_for_a_new_authorization_once() {
    let mock = Mock::start().await;
    mock.answer_tokens(
        StatusCode::BAD_REQUEST,
        json!({"error": "invalid_grant", "error_description": "refresh-one-5a5a was revoked"}),
    );
    let peer = McpFixture::start_with_token("basic", Transport::StreamableHttp, GOOD).await;
    let sink = Arc::new(Sink::default());
    let source = Arc::new(RefreshingTokens::from_refresh_token(
        client().oauth(),
        grant(&mock, &peer.url),
        SecretString::from("refresh-one-5a5a"),
        sink.clone(),
    ));
    for attempt in 0..2 {
        let err = client()
            .connect_authorized(&server(peer.url.clone()), source.clone())
            .await
            .err()
            .expect("connected without a token");
        let McpError::Http { status, message } = &err else {
            panic!("not an HTTP error: {err:?}");
        };
        assert_eq!(*status, 401, "attempt {attempt}");
        assert!(
            message.contains("must be authorized again") && message.contains("invalid_grant"),
            "attempt {attempt}: {message}"
        );
        assert_no_secret(&format!("{err} {err:?}"));
    }
    // Asked once; the second connect failed without asking again, and sent nothing.
    assert_eq!(mock.seen(|s| s.token_forms.len()), 1);
    assert_eq!(sink.lost.lock().expect("lock").len(), 1);
    assert!(sink.stored.lock().expect("lock").is_empty());
    assert!(peer.requests().is_empty(), "{:?}", peer.requests());
}

#[tokio::test]
async fn insufficient_scope_asks_for_a_new_authorization_with_the_scope() {
    let mock = Mock::start().await;
    let source = RefreshingTokens::new(
        client().oauth(),
        grant(&mock, "https://m.example/mcp"),
        tokens(GOOD, None),
        Arc::new(Sink::default()),
    );
    let rejection = |header: &str| Rejection {
        status: 403,
        challenge: Challenge::parse(header),
        token: Some(SecretString::from(GOOD)),
    };
    let err = source
        .rejected(&rejection(
            r#"Bearer error="insufficient_scope", scope="files:read files:write""#,
        ))
        .await
        .expect_err("insufficient scope ignored");
    assert_eq!(
        err,
        OAuthError::InsufficientScope {
            scope: "files:read files:write".into()
        }
    );
    assert!(matches!(err.to_mcp(), McpError::Http { status: 403, .. }));
    // A 403 that is not about scopes is the server's answer as it is.
    let other = source
        .rejected(&rejection(r#"Bearer error="invalid_token""#))
        .await
        .expect("plain 403");
    assert!(other.is_none());
    assert_eq!(mock.seen(|s| s.token_forms.len()), 0);
}

// --- end to end with the Python SDK's own authorization server ---------------------------------

/// The `oauth` kind of `tests/mcp/fixtures.py`: the official Python SDK's authorization server
/// routes (metadata, registration, authorization, token; PKCE and RFC 8707 checked by the SDK)
/// and its resource server, on the fixture's origin.
#[tokio::test]
async fn the_python_sdks_authorization_server_end_to_end() {
    for transport in TRANSPORTS {
        let peer = McpFixture::start("oauth", transport).await;
        let t0 = SystemTime::now();
        let clock = Arc::new(AtomicU64::new(0));
        let seconds = clock.clone();
        let oauth = client()
            .oauth()
            .with_clock(move || t0 + Duration::from_secs(seconds.load(Ordering::SeqCst)));

        // The admin's authorization.
        let request = oauth
            .start(
                &peer.url,
                &ClientConfig::new("http://127.0.0.1:9/oauth/callback"),
            )
            .await
            .unwrap_or_else(|e| panic!("{transport:?}: start: {e}"));
        let browser = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("browser");
        let answer = browser
            .get(request.url.clone())
            .send()
            .await
            .expect("authorize");
        let location = answer
            .headers()
            .get(header::LOCATION)
            .unwrap_or_else(|| panic!("{transport:?}: no redirect: {}", answer.status()))
            .to_str()
            .expect("location")
            .to_owned();
        let callback = Callback::from_url(&url::Url::parse(&location).expect("callback URL"));
        let authorized = oauth
            .finish(&request.pending, &callback)
            .await
            .unwrap_or_else(|e| panic!("{transport:?}: finish: {e}"));
        let authorize = peer
            .log()
            .into_iter()
            .find(|e| e["event"] == "authorize")
            .expect("authorize event");
        assert_eq!(authorize["scopes"], json!(["mcp:tools"]), "{transport:?}");
        assert_eq!(authorize["resource"], peer.url, "{transport:?}");
        let first_refresh = authorized
            .tokens
            .refresh_token
            .clone()
            .expect("a refresh token");

        // The connector in use; then its token nears expiry and is refreshed first.
        let sink = Arc::new(Sink::default());
        let source = Arc::new(RefreshingTokens::new(
            oauth.clone(),
            authorized.grant.clone(),
            authorized.tokens,
            sink.clone(),
        ));
        let session = client()
            .connect_authorized(&server(peer.url.clone()), source)
            .await
            .unwrap_or_else(|e| panic!("{transport:?}: connect: {e}"));
        assert_eq!(echo(session.as_ref(), "one").await, "one");
        clock.store(3590, Ordering::SeqCst);
        assert_eq!(echo(session.as_ref(), "two").await, "two");
        session.close().await;
        let refreshes = |peer: &McpFixture| {
            peer.log()
                .iter()
                .filter(|e| e["event"] == "token" && e["grant_type"] == "refresh_token")
                .count()
        };
        assert_eq!(refreshes(&peer), 1, "{transport:?}");
        let rotated = sink.stored_refresh_tokens();
        assert_eq!(rotated.len(), 1, "{transport:?}");
        assert_ne!(rotated[0], first_refresh.expose_secret(), "{transport:?}");

        // After a restart: only the stored (rotated) refresh token. The first one was
        // rotated away, and says so.
        let restarted = Arc::new(RefreshingTokens::from_refresh_token(
            oauth.clone(),
            authorized.grant.clone(),
            SecretString::from(rotated[0].clone()),
            Arc::new(Sink::default()),
        ));
        let session = client()
            .connect_authorized(&server(peer.url.clone()), restarted)
            .await
            .unwrap_or_else(|e| panic!("{transport:?}: connect after restart: {e}"));
        assert_eq!(echo(session.as_ref(), "three").await, "three");
        session.close().await;
        let stale = Arc::new(RefreshingTokens::from_refresh_token(
            oauth,
            authorized.grant,
            first_refresh.clone(),
            Arc::new(Sink::default()),
        ));
        let err = client()
            .connect_authorized(&server(peer.url.clone()), stale)
            .await
            .err()
            .expect("a rotated refresh token accepted");
        assert!(
            err.to_string().contains("must be authorized again"),
            "{transport:?}: {err}"
        );
        assert!(!err.to_string().contains(first_refresh.expose_secret()));
    }
}
