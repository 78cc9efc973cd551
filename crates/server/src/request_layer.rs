//! What every request goes through around its handler, as one `tower` layer with a future of
//! its own: open mode's web-page guard ([`crate::web_guard`]) before the handler; after it, the
//! error envelope ([`crate::envelope`]), the error log ([`crate::error_log`]) and the drain of
//! a body the handler left unread ([`crate::unread_body`]), in that order.
//!
//! These were four `axum::middleware::from_fn` layers; each boxed its future and called the
//! next through a cloned, boxed route (docs/benchmarks.md, "Issue 18, sixth pass"). Here an
//! answer that needs nothing more (a success, or an error already on the envelope, with its
//! body read) is handed on from the handler's own future; only the guard's store read (open
//! mode), an envelope to write or a body to drain take a boxed future.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::extract::Request;
use axum::http::{Method, Uri, Version};
use axum::response::Response;
use tower::{Layer, Service};

use crate::state::AppState;
use crate::unread_body::Unread;
use crate::{envelope, error_log, unread_body, web_guard};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The layer (see the module docs).
#[derive(Clone)]
pub struct RequestLayer {
    state: AppState,
}

impl RequestLayer {
    pub fn new(state: AppState) -> RequestLayer {
        RequestLayer { state }
    }
}

impl<S> Layer<S> for RequestLayer {
    type Service = RequestService<S>;

    fn layer(&self, inner: S) -> RequestService<S> {
        RequestService {
            inner,
            state: self.state.clone(),
        }
    }
}

/// The layer's service around the handler's.
#[derive(Clone)]
pub struct RequestService<S> {
    inner: S,
    state: AppState,
}

impl<S> Service<Request> for RequestService<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + Unpin + 'static,
    S::Future: Send + Unpin + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = RequestFuture<S>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> RequestFuture<S> {
        let seen = Seen {
            method: request.method().clone(),
            // Cloning a request's `Uri` shares its bytes (no allocation per request).
            uri: request.uri().clone(),
            http1: request.version() <= Version::HTTP_11,
        };
        let (mut request, unread) = unread_body::watch(request);
        let stage = if web_guard::settled(&self.state, &mut request) {
            Stage::Handler(self.inner.call(request))
        } else {
            // The service that was made ready goes with the request; this one stays.
            let fresh = self.inner.clone();
            let ready = std::mem::replace(&mut self.inner, fresh);
            Stage::Guard {
                admit: Box::pin(web_guard::admit(self.state.clone(), request)),
                inner: ready,
            }
        };
        RequestFuture {
            seen,
            unread,
            stage,
        }
    }
}

/// What is kept of the request for its answer.
struct Seen {
    method: Method,
    uri: Uri,
    http1: bool,
}

/// The layer's future.
pub struct RequestFuture<S: Service<Request>> {
    seen: Seen,
    unread: Option<Unread>,
    stage: Stage<S>,
}

enum Stage<S: Service<Request>> {
    /// The web-page guard's store read.
    Guard {
        admit: BoxFuture<Result<Request, Response>>,
        inner: S,
    },
    /// The handler.
    Handler(S::Future),
    /// An envelope to write or a body to drain.
    Finish(BoxFuture<Response>),
    /// Answered.
    Done,
}

impl<S> Future for RequestFuture<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Unpin,
    S::Future: Unpin,
{
    type Output = Result<Response, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            let response = match &mut this.stage {
                Stage::Guard { admit, inner } => match ready!(admit.as_mut().poll(cx)) {
                    Ok(request) => {
                        let handler = inner.call(request);
                        this.stage = Stage::Handler(handler);
                        continue;
                    }
                    Err(refusal) => refusal,
                },
                Stage::Handler(handler) => match ready!(Pin::new(handler).poll(cx)) {
                    Ok(response) => response,
                    Err(never) => match never {},
                },
                Stage::Finish(finish) => {
                    let response = ready!(finish.as_mut().poll(cx));
                    this.stage = Stage::Done;
                    return Poll::Ready(Ok(response));
                }
                Stage::Done => return Poll::Pending,
            };
            match this.answer(response) {
                Ok(response) => {
                    this.stage = Stage::Done;
                    return Poll::Ready(Ok(response));
                }
                Err(finish) => this.stage = Stage::Finish(finish),
            }
        }
    }
}

impl<S: Service<Request>> RequestFuture<S> {
    /// The handler's (or the guard's) answer as it leaves: at once, or through a future when
    /// it needs the envelope or the request's body a drain.
    fn answer(&mut self, response: Response) -> Result<Response, BoxFuture<Response>> {
        let seen = &self.seen;
        if envelope::needed(&response) {
            let (method, uri, http1) = (seen.method.clone(), seen.uri.clone(), seen.http1);
            let unread = self.unread.take();
            return Err(Box::pin(async move {
                let response = envelope::rewrite(&method, response).await;
                error_log::log(&method, uri.path(), &response);
                finish(unread, http1, response).await
            }));
        }
        error_log::log(&seen.method, seen.uri.path(), &response);
        match self.unread.take().and_then(Unread::take) {
            None => Ok(response),
            Some(rest) => Err(Box::pin(unread_body::finish(rest, seen.http1, response))),
        }
    }
}

/// `response` once what the handler left of the request's body, if anything, is drained.
async fn finish(unread: Option<Unread>, http1: bool, response: Response) -> Response {
    match unread.and_then(Unread::take) {
        Some(rest) => unread_body::finish(rest, http1, response).await,
        None => response,
    }
}
