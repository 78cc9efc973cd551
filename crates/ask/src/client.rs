//! The HTTP side: one POST per turn, its SSE body read event by event (`eventsource-stream`),
//! each `data` field as loose JSON so any server speaking the Agent API works. A server that
//! answers plain JSON instead of a stream yields that one response object.

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use serde_json::Value;

use crate::error::AskError;

/// The most of a run's stream we read (a bound on what a broken server can make us hold).
const MAX_STREAM_BYTES: usize = 256 * 1024 * 1024;
/// The most of an error answer we read.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// The most of a non-streamed JSON answer we read.
const MAX_JSON_BODY: usize = 64 * 1024 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// One Agent API endpoint.
pub(crate) struct Client {
    http: reqwest::Client,
    /// `…/v1/responses`.
    url: String,
    /// Sent as a bearer token; never printed.
    key: Option<String>,
}

pub(crate) type Events =
    Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// What a turn's answer yields.
pub(crate) enum Answer {
    /// A stream of events.
    Stream(Events),
    /// A server that ignored `stream: true`: the response object.
    Json(Option<Value>),
}

impl Client {
    pub(crate) fn new(url: String, key: Option<String>) -> Result<Client, AskError> {
        // reqwest is built with `rustls-no-provider`: pick ring once per process (a second call
        // returns Err, which is fine).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .user_agent(concat!("agentd-ask/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(AskError::Client)?;
        Ok(Client { http, url, key })
    }

    /// Sends one turn.
    pub(crate) async fn send(&self, body: &Value) -> Result<Answer, AskError> {
        let mut request = self
            .http
            .post(&self.url)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(body);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|source| AskError::Connect {
            url: self.url.clone(),
            source,
        })?;
        let status = response.status();
        if !status.is_success() {
            let bytes = read_capped(response, MAX_ERROR_BODY).await;
            return Err(AskError::Status {
                status: status.as_u16(),
                message: error_message(&bytes),
            });
        }
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("application/json"));
        if is_json {
            let bytes = read_capped(response, MAX_JSON_BODY).await;
            return Ok(Answer::Json(serde_json::from_slice(&bytes).ok()));
        }
        let body = capped(without_bom(response.bytes_stream()));
        Ok(Answer::Stream(Box::pin(body.eventsource())))
    }
}

/// The next event's JSON, `None` at the end of the stream. `[DONE]` and keep-alives are skipped.
pub(crate) async fn next_event(events: &mut Events) -> Option<Result<Value, AskError>> {
    loop {
        let event = match events.next().await? {
            Ok(event) => event,
            Err(err) => return Some(Err(AskError::Stream(err.to_string()))),
        };
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            continue;
        }
        return Some(serde_json::from_str(data).map_err(|err| {
            AskError::Stream(format!("an event is not JSON ({err}): {}", clip(data, 200)))
        }));
    }
}

/// At most `limit` bytes of a body (errors end it early).
async fn read_capped(response: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut body = response.bytes_stream();
    while let Some(Ok(chunk)) = body.next().await {
        let room = limit.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() >= limit {
            break;
        }
    }
    out
}

/// The message of an error envelope `{error: {message, param?}}`, else the body's text.
fn error_message(bytes: &[u8]) -> String {
    let parsed: Option<Value> = serde_json::from_slice(bytes).ok();
    let error = parsed.as_ref().map(|value| &value["error"]);
    match error.and_then(|error| error["message"].as_str()) {
        Some(message) => match error.and_then(|error| error["param"].as_str()) {
            Some(param) => format!("{message} (param: {param})"),
            None => message.to_owned(),
        },
        None => clip(&String::from_utf8_lossy(bytes), 500),
    }
}

/// `text` cut to `max` characters.
pub(crate) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The body, ending with an error past [`MAX_STREAM_BYTES`].
fn capped<S>(body: S) -> impl Stream<Item = Result<Bytes, reqwest::Error>> + Send
where
    S: Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
{
    let mut total = 0usize;
    // reqwest::Error cannot be made here; the cap ends the stream instead, which the session
    // reports as a stream that ended before the run did.
    body.take_while(move |chunk| {
        if let Ok(chunk) = chunk {
            total = total.saturating_add(chunk.len());
        }
        std::future::ready(total <= MAX_STREAM_BYTES)
    })
}

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The body without a leading byte order mark (`eventsource-stream` 0.2 mishandles one), even
/// when it is split over chunks.
fn without_bom<S>(body: S) -> impl Stream<Item = Result<Bytes, reqwest::Error>> + Send
where
    S: Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
{
    let head: Option<Vec<u8>> = Some(Vec::new());
    futures::stream::unfold((Box::pin(body), head), |(mut body, mut head)| async move {
        loop {
            let Some(mut bytes) = head.take() else {
                return body.next().await.map(|item| (item, (body, None)));
            };
            match body.next().await {
                Some(Ok(chunk)) => {
                    bytes.extend_from_slice(&chunk);
                    while bytes.starts_with(BOM) {
                        bytes.drain(..BOM.len());
                    }
                    if bytes.len() < BOM.len() && BOM.starts_with(&bytes) {
                        head = Some(bytes);
                        continue;
                    }
                    return Some((Ok(Bytes::from(bytes)), (body, None)));
                }
                Some(Err(err)) => return Some((Err(err), (body, None))),
                None => {
                    return (!bytes.is_empty()).then(|| (Ok(Bytes::from(bytes)), (body, None)));
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_come_from_the_envelope() {
        assert_eq!(
            error_message(br#"{"error":{"message":"bad model","param":"model","code":400}}"#),
            "bad model (param: model)"
        );
        assert_eq!(error_message(b"plain text"), "plain text");
    }

    #[test]
    fn clip_counts_characters() {
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("hi", 2), "hi");
    }
}
