//! rmcp's Streamable HTTP client over our guarded `reqwest::Client`, watched for the one
//! failure rmcp does not report with the request: an answer over the size cap, after which
//! rmcp ends the transport and the request only learns "transport closed".
//!
//! With an OAuth [`TokenSource`], every request carries the source's current access token
//! (instead of rmcp's static `auth_header`), and a request the server refuses (401, or 403
//! with a challenge) is reported to the source and, when it gives a new token, sent once
//! more. A request refused again fails with a message that says so.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use secrecy::{ExposeSecret, SecretString};

use crate::errors::{
    AuthFailure, Failure, Limits, Redactor, is_too_large_text, leading_http_status,
};
use crate::oauth::{Challenge, OAuthError, Rejection, TokenSource};
use engine::mcp::McpError;

/// The guarded client plus the slot where an oversized answer is recorded.
#[derive(Clone)]
pub(crate) struct GuardedHttp {
    pub(crate) client: reqwest::Client,
    pub(crate) failure: Failure,
    pub(crate) limits: Limits,
    /// Where the bearer token of each request comes from, for an OAuth server.
    pub(crate) auth: Option<Arc<dyn TokenSource>>,
    /// Learns every access token sent, so that no error text shows one.
    pub(crate) redactor: Redactor,
}

type Result<T> = std::result::Result<T, StreamableHttpError<reqwest::Error>>;

/// An OAuth failure as a transport error (see [`AuthFailure`]).
pub(crate) fn auth_error(err: &OAuthError) -> StreamableHttpError<reqwest::Error> {
    StreamableHttpError::Io(std::io::Error::other(AuthFailure(err.to_mcp())))
}

/// The failure of a request the server refused again right after the token source gave a
/// new token.
fn refused_again(status: u16) -> StreamableHttpError<reqwest::Error> {
    let message = if status == 403 {
        "forbidden: the MCP server refused the request again after a new authorization \
         (insufficient scope)"
    } else {
        "unauthorized: the MCP server refused the access token again right after it was \
         renewed; the connector may need to be authorized again"
    };
    StreamableHttpError::Io(std::io::Error::other(AuthFailure(McpError::Http {
        status,
        message: message.to_owned(),
    })))
}

/// The status and challenge of a refused request: 401 (with or without a challenge), or
/// 403 with a challenge.
fn refusal<T>(result: &Result<T>) -> Option<(u16, Challenge)> {
    match result {
        Err(StreamableHttpError::AuthRequired(e)) => {
            Some((401, Challenge::parse(&e.www_authenticate_header)))
        }
        Err(StreamableHttpError::InsufficientScope(e)) => {
            Some((403, Challenge::parse(&e.www_authenticate_header)))
        }
        Err(StreamableHttpError::HttpStatus(e)) if e.status == 401 => {
            Some((401, Challenge::default()))
        }
        Err(StreamableHttpError::UnexpectedServerResponse(text))
            if leading_http_status(text) == Some(401) =>
        {
            Some((401, Challenge::default()))
        }
        _ => None,
    }
}

impl GuardedHttp {
    /// The source's current token, remembered by the redactor.
    async fn token(&self, source: &Arc<dyn TokenSource>) -> Result<Option<SecretString>> {
        let token = source.access_token().await.map_err(|e| auth_error(&e))?;
        if let Some(token) = &token {
            self.redactor.remember(token.expose_secret());
        }
        Ok(token)
    }

    /// Sends with the source's token; on a refusal asks the source, and sends once more
    /// with the token it gives.
    async fn with_token<T, F, Fut>(&self, source: &Arc<dyn TokenSource>, send: F) -> Result<T>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let token = self.token(source).await?;
        let first = send(token.as_ref().map(|t| t.expose_secret().to_owned())).await;
        let Some((status, challenge)) = refusal(&first) else {
            return first;
        };
        let rejection = Rejection {
            status,
            challenge,
            token,
        };
        let retry = match source.rejected(&rejection).await {
            Ok(Some(token)) => token,
            Ok(None) => return first,
            Err(err) => return Err(auth_error(&err)),
        };
        self.redactor.remember(retry.expose_secret());
        let second = send(Some(retry.expose_secret().to_owned())).await;
        match refusal(&second) {
            Some((status, _)) => Err(refused_again(status)),
            None => second,
        }
    }

    fn response_limits(&self) -> StreamableHttpResponseLimits {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = self.limits.max_response_bytes;
        limits.max_json_response_size = self.limits.max_response_bytes;
        limits
    }

    fn too_large(&self) -> McpError {
        McpError::TooLarge(self.limits.max_response_bytes)
    }

    /// Records an oversized event of an SSE answer as it passes.
    fn watch(&self, stream: BoxedSseResponse) -> BoxedSseResponse {
        let failure = self.failure.clone();
        let too_large = self.too_large();
        stream
            .inspect(move |item| {
                if let Err(e) = item
                    && is_too_large_text(&e.to_string())
                {
                    failure.record(too_large.clone());
                }
            })
            .boxed()
    }

    fn watch_post(
        &self,
        result: Result<StreamableHttpPostResponse>,
    ) -> Result<StreamableHttpPostResponse> {
        match result {
            Ok(StreamableHttpPostResponse::Sse(stream, session)) => {
                Ok(StreamableHttpPostResponse::Sse(self.watch(stream), session))
            }
            Err(e @ StreamableHttpError::ResponseBodyTooLarge { .. }) => {
                self.failure.record(self.too_large());
                Err(e)
            }
            other => other,
        }
    }
}

impl StreamableHttpClient for GuardedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            self.response_limits(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse> {
        let mut limits = self.response_limits();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse> {
        let Some(source) = self.auth.clone() else {
            let result = self
                .client
                .post_message_with_response_limits(
                    uri,
                    message,
                    session_id,
                    auth_header,
                    custom_headers,
                    limits,
                )
                .await;
            return self.watch_post(result);
        };
        let result = self
            .with_token(&source, |token| {
                let client = self.client.clone();
                let (uri, message, session_id, headers) = (
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    custom_headers.clone(),
                );
                async move {
                    client
                        .post_message_with_response_limits(
                            uri, message, session_id, token, headers, limits,
                        )
                        .await
                }
            })
            .await;
        self.watch_post(result)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<()> {
        // Best effort: without a token the server ends the session on its own in time.
        let auth_header = match &self.auth {
            Some(source) => self
                .token(source)
                .await
                .ok()
                .flatten()
                .map(|t| t.expose_secret().to_owned()),
            None => auth_header,
        };
        self.client
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            self.limits.max_response_bytes,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse> {
        let stream = match self.auth.clone() {
            None => {
                self.client
                    .get_stream_with_max_sse_event_size(
                        uri,
                        session_id,
                        last_event_id,
                        auth_header,
                        custom_headers,
                        max_sse_event_size,
                    )
                    .await?
            }
            Some(source) => {
                self.with_token(&source, |token| {
                    let client = self.client.clone();
                    let (uri, session_id, last_event_id, headers) = (
                        uri.clone(),
                        session_id.clone(),
                        last_event_id.clone(),
                        custom_headers.clone(),
                    );
                    async move {
                        client
                            .get_stream_with_max_sse_event_size(
                                uri,
                                session_id,
                                last_event_id,
                                token,
                                headers,
                                max_sse_event_size,
                            )
                            .await
                    }
                })
                .await?
            }
        };
        Ok(self.watch(stream))
    }
}
