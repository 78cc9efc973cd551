//! rmcp's Streamable HTTP client over our guarded `reqwest::Client`, watched for the one
//! failure rmcp does not report with the request: an answer over the size cap, after which
//! rmcp ends the transport and the request only learns "transport closed".

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

use crate::errors::{Failure, Limits, is_too_large_text};
use engine::mcp::McpError;

/// The guarded client plus the slot where an oversized answer is recorded.
#[derive(Clone)]
pub(crate) struct GuardedHttp {
    pub(crate) client: reqwest::Client,
    pub(crate) failure: Failure,
    pub(crate) limits: Limits,
}

type Result<T> = std::result::Result<T, StreamableHttpError<reqwest::Error>>;

impl GuardedHttp {
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
        self.watch_post(result)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<()> {
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
        let stream = self
            .client
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(self.watch(stream))
    }
}
