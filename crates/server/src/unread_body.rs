//! Request bodies a handler did not read (an answer given before the body was needed: a 401, a
//! 404, a 405, a 415).
//!
//! HTTP/1.1 reuses the connection only once the whole request has been read. When an answer
//! leaves part of the body unread, hyper closes the connection, and a close with unread bytes
//! resets it: the client may lose the answer, or send its next request on a connection that is
//! being closed ("server disconnected without sending a response"). So the rest of the body is
//! read and dropped here, up to [`DRAIN_LIMIT_BYTES`] and [`DRAIN_TIMEOUT`]; a body larger or
//! slower than that gets `Connection: close` on the answer, which tells the client not to reuse
//! the connection.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use futures::StreamExt as _;
use http_body::{Body as _, Frame, SizeHint};
use tokio::sync::oneshot;

/// The most of an unread body read and dropped to keep the connection.
pub const DRAIN_LIMIT_BYTES: usize = 1024 * 1024;

/// How long an unread body may take to arrive before the connection is given up instead.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// The request with its body watched, and where what the handler leaves of it arrives;
/// `None` for a body already at its end (nothing to drain).
pub fn watch(request: Request) -> (Request, Option<Unread>) {
    let (parts, body) = request.into_parts();
    if body.is_end_stream() {
        return (Request::from_parts(parts, body), None);
    }
    let (unread, left) = oneshot::channel();
    let body = Body::new(Watched {
        inner: Some(body),
        unread: Some(unread),
    });
    (Request::from_parts(parts, body), Some(Unread(left)))
}

/// What a handler left of a watched body, handed back when the body is dropped before its end.
pub struct Unread(oneshot::Receiver<Body>);

impl Unread {
    /// The unread rest, if the handler has dropped the body before its end.
    pub fn take(mut self) -> Option<Body> {
        self.0.try_recv().ok()
    }
}

/// Reads and drops `rest` (see the module docs); `response` gets `Connection: close` when it
/// could not be read within the limits on an HTTP/1 connection.
pub async fn finish(rest: Body, http1: bool, mut response: Response) -> Response {
    if !drain(rest).await && http1 {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Reads `body` to its end within the limits; whether it got there.
async fn drain(body: Body) -> bool {
    let read = async {
        let mut data = body.into_data_stream();
        let mut seen = 0usize;
        while let Some(chunk) = data.next().await {
            let Ok(chunk) = chunk else { return false };
            seen = seen.saturating_add(chunk.len());
            if seen > DRAIN_LIMIT_BYTES {
                return false;
            }
        }
        true
    };
    tokio::time::timeout(DRAIN_TIMEOUT, read)
        .await
        .unwrap_or(false)
}

/// A request body that, dropped before its end, hands what is left back to the middleware.
struct Watched {
    inner: Option<Body>,
    unread: Option<oneshot::Sender<Body>>,
}

impl http_body::Body for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let frame = Pin::new(inner).poll_frame(cx);
        if let Poll::Ready(None) = frame {
            // Read whole: nothing to hand back.
            self.unread = None;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner
            .as_ref()
            .is_none_or(|inner| inner.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), |inner| inner.size_hint())
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let (Some(inner), Some(unread)) = (self.inner.take(), self.unread.take())
            && !inner.is_end_stream()
        {
            // The middleware may be gone (the answer already sent): then nothing is to be done.
            let _ = unread.send(inner);
        }
    }
}
