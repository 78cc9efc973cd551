//! Serving one connection: hyper (HTTP/1 or HTTP/2) over the watched socket (request bodies
//! handed over without waking another worker: `hand_over.rs`), each request's answer tracked,
//! and the watchdog that closes the connection when it outstays its limits,
//! when its slot is wanted, or after a graceful shutdown once its requests are done.

use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use super::body::TrackedBody;
use super::hand_over;
use super::io::TrackedIo;
use super::{Admitted, ConnectionSlot, Limits};

/// Serves `tcp` until the client or the watchdog ends it.
pub(crate) async fn serve(
    tcp: TcpStream,
    app: Router,
    admitted: Admitted,
    limits: Limits,
    shutdown: CancellationToken,
) {
    let conn = admitted.conn.clone();
    // The slot is freed once this task and every upgraded side holding it have ended.
    let slot = ConnectionSlot::new(std::sync::Arc::new(admitted), limits);
    let io = TokioIo::new(TrackedIo::new(tcp, conn.clone()));
    let per_request = conn.clone();
    let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
        let guard = per_request.request_started();
        request.extensions_mut().insert(slot.clone());
        let app = app.clone();
        async move {
            let request = request.map(|body| Body::new(hand_over::Body::new(body)));
            let response = app.oneshot(request).await?;
            Ok::<_, Infallible>(response.map(|body| Body::new(TrackedBody::new(body, guard))))
        }
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    // With upgrades: WebSocket mode (`crate::websocket`) takes the connection over after its
    // 101 answer; from then on it is the WebSocket's, which keeps the slot (the request's
    // `ConnectionSlot`) and closes itself when idle, when evicted or after its lifetime.
    let mut connection =
        hand_over::Connection::new(builder.serve_connection_with_upgrades(io, service));
    let mut tick = tokio::time::interval(tick_of(limits.idle_timeout));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut draining = false;
    loop {
        tokio::select! {
            result = &mut connection => {
                if let Err(err) = result {
                    tracing::trace!(connection = conn.id, %err, "connection ended with an error");
                }
                break;
            }
            () = shutdown.cancelled(), if !draining => {
                draining = true;
                connection.inner().graceful_shutdown();
            }
            () = conn.evicted() => break,
            _ = tick.tick() => {
                if let Some(why) = conn.expired(limits.idle_timeout) {
                    tracing::debug!(connection = conn.id, why, "closing a connection past its idle timeout");
                    break;
                }
            }
        }
    }
}

/// How often the watchdog looks: a tenth of the timeout, within 10 ms ..= 1 s.
fn tick_of(timeout: Duration) -> Duration {
    (timeout / 10).clamp(Duration::from_millis(10), Duration::from_secs(1))
}
