//! Serving: the application (routes plus middleware) and the accept loop with graceful
//! shutdown.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::serve::ListenerExt as _;
use tokio::net::TcpListener;

use crate::error::ErrorLog;
use crate::start::ServerError;
use crate::state::AppState;
use crate::{envelope, routes, web_guard};

/// How long running foreground requests may take to finish after a shutdown signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// The application: routes plus middleware (outermost first: the error log, the error
/// envelope, open mode's web-page guard). Drivable without a socket.
pub fn app(state: AppState) -> Router {
    routes::routes()
        .layer(middleware::from_fn_with_state(
            state.clone(),
            web_guard::guard,
        ))
        .layer(middleware::from_fn(envelope::envelope_errors))
        .layer(middleware::from_fn(log_errors))
        .with_state(state)
}

/// Logs each error answer once, here (errors are not logged where they are built).
async fn log_errors(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    // The path only: query strings may carry values we do not want in logs.
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    if let Some(ErrorLog(detail)) = response.extensions().get::<ErrorLog>() {
        let status = response.status().as_u16();
        if response.status().is_server_error() {
            tracing::error!(%method, %path, status, error = %detail, "request failed");
        } else {
            tracing::info!(%method, %path, status, error = %detail, "request refused");
        }
    }
    response
}

/// Serves until `shutdown` resolves, then lets running requests finish for at most
/// [`SHUTDOWN_GRACE`].
pub async fn run(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let signalled = Arc::new(tokio::sync::Notify::new());
    let notify = signalled.clone();
    // Without TCP_NODELAY, small SSE frames wait for the client's delayed ACK (about 40 ms each
    // time): streamed deltas would arrive in bursts.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        shutdown.await;
        notify.notify_one();
    });
    tokio::select! {
        result = server => Ok(result?),
        () = async {
            signalled.notified().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            tracing::warn!("shutdown grace period over; stopping with requests still running");
            Ok(())
        }
    }
}
