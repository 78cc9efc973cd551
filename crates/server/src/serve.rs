//! Serving: the application (routes plus middleware) and the accept loop (connection cap and
//! watchdogs from [`crate::connections`]) with graceful shutdown.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::ConnectionSettings;
use crate::connections::{Connections, Limits, task};
use crate::request_layer::RequestLayer;
use crate::start::ServerError;
use crate::state::AppState;
use crate::{fdlimit, routes};

/// How long running foreground requests may take to finish after a shutdown signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// The application: routes plus what every request goes through around its handler
/// ([`request_layer`]: open mode's web-page guard; the error envelope, the error log and the
/// unread-body drain on the answer). Drivable without a socket.
pub fn app(state: AppState) -> Router {
    routes::routes()
        .layer(RequestLayer::new(state.clone()))
        .with_state(state)
}

/// Serves until `shutdown` resolves, then lets running requests finish for at most
/// [`SHUTDOWN_GRACE`]. Connections are capped and watched as [`crate::connections`] says.
pub async fn run(
    listener: TcpListener,
    app: Router,
    settings: ConnectionSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let open_files = fdlimit::open_files_limit();
    let (max_connections, lowered) = fdlimit::max_connections(settings.max_connections, open_files);
    if lowered {
        tracing::warn!(
            max_connections,
            open_files,
            "http.max_connections is above the open-file limit: lowered"
        );
    }
    let limits = Limits {
        max_connections,
        idle_timeout: settings.idle_timeout,
    };
    tracing::debug!(
        max_connections,
        idle_timeout_ms = limits.idle_timeout.as_millis(),
        "serving connections"
    );
    let connections = Connections::new(limits);
    let draining = CancellationToken::new();
    let tasks = TaskTracker::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(err) => {
                    accept_failed(&err).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Without TCP_NODELAY, small SSE frames wait for the client's delayed ACK (about 40 ms
        // each time): streamed deltas would arrive in bursts.
        let _ = tcp.set_nodelay(true);
        let admitted = tokio::select! {
            admitted = connections.admit() => admitted,
            () = &mut shutdown => break,
        };
        let Some(admitted) = admitted else { continue };
        tasks.spawn(task::serve(
            tcp,
            app.clone(),
            admitted,
            connections.limits(),
            // Each connection's own token: its task looks at it on every poll, and one token
            // shared by all (a lock and a `Notify` each) was taken by both workers in turn.
            draining.child_token(),
        ));
    }
    drop(listener);
    draining.cancel();
    tasks.close();
    tokio::select! {
        () = tasks.wait() => Ok(()),
        () = tokio::time::sleep(SHUTDOWN_GRACE) => {
            tracing::warn!(
                open = connections.open_count(),
                "shutdown grace period over; stopping with requests still running"
            );
            Ok(())
        }
    }
}

/// An accept that failed: out of descriptors (wait for some to be freed) or a connection that
/// was reset before it was accepted (go on).
async fn accept_failed(err: &std::io::Error) {
    let out_of_descriptors = matches!(err.raw_os_error(), Some(code) if code == rustix::io::Errno::MFILE.raw_os_error() || code == rustix::io::Errno::NFILE.raw_os_error());
    if out_of_descriptors {
        tracing::error!(%err, "cannot accept a connection: out of file descriptors");
        tokio::time::sleep(Duration::from_millis(100)).await;
    } else {
        tracing::debug!(%err, "accept failed");
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use axum::Router;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::run;
    use crate::config::ConnectionSettings;

    /// Reads one short answer (headers and a body of a few bytes) from `socket`.
    async fn answer(socket: &mut TcpStream) -> String {
        let mut read = Vec::new();
        let mut buf = [0u8; 1024];
        while !read.ends_with(b"ok") {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0, "the connection closed before the answer");
            read.extend_from_slice(&buf[..n]);
        }
        String::from_utf8(read).unwrap()
    }

    /// A stop ends the server at once when its connections are idle, whichever connection they
    /// are (each watches its own token, cancelled with the server's), and closes them.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stop_closes_idle_keep_alive_connections_at_once() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let app = Router::new().route("/", get(|| async { "ok" }));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(run(
            listener,
            app,
            ConnectionSettings::default(),
            async move {
                let _ = stopped.await;
            },
        ));
        let mut sockets = Vec::new();
        for _ in 0..3 {
            let mut socket = TcpStream::connect(address).await.unwrap();
            socket
                .write_all(b"GET / HTTP/1.1\r\nhost: agentd\r\n\r\n")
                .await
                .unwrap();
            let head = answer(&mut socket).await;
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            sockets.push(socket);
        }

        let start = Instant::now();
        stop.send(()).unwrap();
        // Without the connections told, the server waits for them until its grace period
        // (30 s) is over.
        tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("the server ends well within its grace period")
            .unwrap()
            .unwrap();
        for mut socket in sockets {
            let mut rest = Vec::new();
            let read = tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut rest))
                .await
                .expect("the connection is closed");
            assert!(read.is_ok_and(|n| n == 0), "closed without more bytes");
        }
        assert!(start.elapsed() < Duration::from_secs(10));
    }
}
