//! An answer's body that keeps its request "in progress" until it has been written out whole
//! (or dropped): a stream is a request in progress for as long as it lasts.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use http_body::{Frame, SizeHint};

use super::conn::RequestGuard;

/// `Body` plus the guard of its request.
pub(crate) struct TrackedBody {
    inner: Body,
    _request: RequestGuard,
}

impl TrackedBody {
    pub fn new(inner: Body, request: RequestGuard) -> TrackedBody {
        TrackedBody {
            inner,
            _request: request,
        }
    }
}

impl http_body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
