//! A request body handed over inside one task, without a wake-up of another worker thread.
//!
//! An HTTP/1 connection's request body travels from hyper's dispatcher to the handler through
//! a channel of one chunk, and both ends are polled by the same task: the dispatcher polls the
//! handler. When the handler takes the chunk, the channel wakes the dispatcher, that is, the
//! task that is running. tokio takes a task woken while it runs for a task that yields: it is
//! queued behind the others *and* a parked worker thread is woken to share the queue, so
//! every request with a body woke the other worker for nothing (a `futex` wake, that thread's
//! round trip through the scheduler, often the connection moved to it): one of the
//! ~3.5 wake-ups per plain request at one request in flight (docs/benchmarks.md, "Issue 18,
//! fifteenth pass").
//!
//! [`Connection`] runs hyper's connection future with a waker of its own. A wake of that
//! waker made while the handler takes a body chunk ([`Body::poll_frame`], on the thread that
//! is polling the connection) is kept instead of passed to tokio, and the connection is polled
//! again at once after it returns `Pending`; every other wake goes to the task's waker as it
//! came (socket readiness, timers, the run's own yields). So nothing is lost: the wake only
//! asked for the poll that follows right away. At most [`MAX_POLLS`] polls run in one.
//!
//! HTTP/2 serves each request in a task of its own, whose waker is not the connection's: its
//! wakes pass through unchanged.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;
use http_body::{Frame, SizeHint};
use hyper::body::{Bytes, Incoming};

/// The most polls of the connection in one poll of [`Connection`] (a hand-over between each).
const MAX_POLLS: usize = 4;

thread_local! {
    /// The waker (its data pointer) of the task whose handler is taking a body chunk on this
    /// thread now; null when none is.
    static TAKING: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

/// Where the connection's wakes go.
struct Wakes {
    /// The task's waker, from its last poll.
    task: AtomicWaker,
    /// Whether a hand-over woke the connection during the poll in progress.
    handed_over: AtomicBool,
}

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if TAKING.with(Cell::get) == Arc::as_ptr(self).cast::<()>() {
            self.handed_over.store(true, Ordering::Release);
        } else {
            self.task.wake();
        }
    }
}

/// hyper's connection future, polled again at once instead of rescheduled when only the
/// handing over of a body chunk woke it (see the module doc).
pub(crate) struct Connection<F> {
    inner: Pin<Box<F>>,
    wakes: Arc<Wakes>,
    waker: Waker,
}

impl<F: Future> Connection<F> {
    pub(crate) fn new(inner: F) -> Self {
        let wakes = Arc::new(Wakes {
            task: AtomicWaker::new(),
            handed_over: AtomicBool::new(false),
        });
        Connection {
            inner: Box::pin(inner),
            waker: Waker::from(wakes.clone()),
            wakes,
        }
    }

    /// The connection future itself (for calls such as a graceful shutdown).
    pub(crate) fn inner(&mut self) -> Pin<&mut F> {
        self.inner.as_mut()
    }
}

impl<F: Future> Future for Connection<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        this.wakes.task.register(cx.waker());
        for _ in 0..MAX_POLLS {
            let mut own = Context::from_waker(&this.waker);
            if let Poll::Ready(output) = this.inner.as_mut().poll(&mut own) {
                return Poll::Ready(output);
            }
            if !this.wakes.handed_over.swap(false, Ordering::AcqRel) {
                return Poll::Pending;
            }
        }
        // Still handing over: let the other tasks go first.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A request body whose chunks are taken with the connection's hand-over wakes kept.
pub(crate) struct Body(Incoming);

impl Body {
    pub(crate) fn new(body: Incoming) -> Self {
        Body(body)
    }
}

/// Marks the task of `waker` as taking a body chunk on this thread until dropped.
struct Taking(*const ());

impl Taking {
    fn start(waker: &Waker) -> Taking {
        Taking(TAKING.with(|taking| taking.replace(waker.data())))
    }
}

impl Drop for Taking {
    fn drop(&mut self) {
        TAKING.with(|taking| taking.set(self.0));
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let _taking = Taking::start(cx.waker());
        Pin::new(&mut self.0).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.0.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Counts its wakes.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A future that, on each of its first `hand_overs` polls, wakes itself as a body channel's
    /// hand-over does (inside [`Taking`]) and stays pending; then it is ready. It counts polls.
    struct HandsOver {
        hand_overs: usize,
        polls: Arc<AtomicUsize>,
        /// The waker of its last poll, for wakes from outside.
        waker: Arc<std::sync::Mutex<Option<Waker>>>,
    }

    impl Future for HandsOver {
        type Output = ();

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            let polls = self.polls.fetch_add(1, Ordering::SeqCst) + 1;
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            if polls <= self.hand_overs {
                let _taking = Taking::start(cx.waker());
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if polls == self.hand_overs + 1 {
                return Poll::Pending;
            }
            Poll::Ready(())
        }
    }

    fn hands_over(
        n: usize,
    ) -> (
        HandsOver,
        Arc<AtomicUsize>,
        Arc<std::sync::Mutex<Option<Waker>>>,
    ) {
        let polls = Arc::new(AtomicUsize::new(0));
        let waker = Arc::new(std::sync::Mutex::new(None));
        let future = HandsOver {
            hand_overs: n,
            polls: polls.clone(),
            waker: waker.clone(),
        };
        (future, polls, waker)
    }

    #[test]
    fn a_hand_over_is_a_poll_at_once_not_a_wake_of_the_task() {
        let (future, polls, inner_waker) = hands_over(2);
        let mut connection = Box::pin(Connection::new(future));
        let count = Arc::new(Count::default());
        let task = Waker::from(count.clone());
        let mut cx = Context::from_waker(&task);
        assert!(connection.as_mut().poll(&mut cx).is_pending());
        // Two hand-overs, each followed by a poll; then a plain wait.
        assert_eq!(polls.load(Ordering::SeqCst), 3);
        assert_eq!(count.0.load(Ordering::SeqCst), 0, "the task was not woken");
        // A wake from outside (the socket, a timer) reaches the task.
        let waker = inner_waker.lock().unwrap().clone().unwrap();
        waker.wake();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(connection.as_mut().poll(&mut cx).is_ready());
    }

    #[test]
    fn a_wake_outside_a_hand_over_during_a_poll_reaches_the_task() {
        // A future that yields (wakes itself outside a hand-over) once, then is ready.
        let mut yielded = false;
        let future = futures::future::poll_fn(move |cx| {
            if yielded {
                return Poll::Ready(());
            }
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        });
        let mut connection = Box::pin(Connection::new(future));
        let count = Arc::new(Count::default());
        let task = Waker::from(count.clone());
        let mut cx = Context::from_waker(&task);
        assert!(connection.as_mut().poll(&mut cx).is_pending());
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "a yield stays a yield");
        assert!(connection.as_mut().poll(&mut cx).is_ready());
    }

    #[test]
    fn another_tasks_hand_over_is_not_kept() {
        // Taking a chunk for another task's waker (HTTP/2's request tasks) wakes this one.
        let other = Waker::from(Arc::new(Count::default()));
        let future = futures::future::poll_fn(move |cx| {
            let _taking = Taking::start(&other);
            cx.waker().wake_by_ref();
            Poll::<()>::Pending
        });
        let mut connection = Box::pin(Connection::new(future));
        let count = Arc::new(Count::default());
        let task = Waker::from(count.clone());
        assert!(
            connection
                .as_mut()
                .poll(&mut Context::from_waker(&task))
                .is_pending()
        );
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(
            TAKING.with(Cell::get),
            std::ptr::null(),
            "the mark is undone"
        );
    }

    #[test]
    fn endless_hand_overs_give_the_other_tasks_a_turn() {
        let (future, polls, _) = hands_over(usize::MAX);
        let mut connection = Box::pin(Connection::new(future));
        let count = Arc::new(Count::default());
        let task = Waker::from(count.clone());
        assert!(
            connection
                .as_mut()
                .poll(&mut Context::from_waker(&task))
                .is_pending()
        );
        assert_eq!(polls.load(Ordering::SeqCst), MAX_POLLS);
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "rescheduled once");
    }

    /// Wakes its task's waker and counts the wakes that came while it was polling its future.
    struct InPoll {
        inner: std::sync::Mutex<Option<Waker>>,
        polling: AtomicBool,
        wakes: AtomicUsize,
    }

    impl Wake for InPoll {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &Arc<Self>) {
            if self.polling.load(Ordering::SeqCst) {
                self.wakes.fetch_add(1, Ordering::SeqCst);
            }
            if let Some(waker) = self.inner.lock().unwrap().as_ref() {
                waker.wake_by_ref();
            }
        }
    }

    /// Spawns `future` polled under an [`InPoll`] waker: the count of its task's wakes during
    /// its own polls.
    fn spawn_counted<F>(future: F) -> (tokio::task::JoinHandle<F::Output>, Arc<InPoll>)
    where
        F: Future + Send + 'static,
        F::Output: Send,
    {
        let counter = Arc::new(InPoll {
            inner: std::sync::Mutex::new(None),
            polling: AtomicBool::new(false),
            wakes: AtomicUsize::new(0),
        });
        let waker = Waker::from(counter.clone());
        let mut future = Box::pin(future);
        let task = tokio::spawn({
            let counter = counter.clone();
            futures::future::poll_fn(move |cx| {
                *counter.inner.lock().unwrap() = Some(cx.waker().clone());
                counter.polling.store(true, Ordering::SeqCst);
                let polled = future.as_mut().poll(&mut Context::from_waker(&waker));
                counter.polling.store(false, Ordering::SeqCst);
                polled
            })
        });
        (task, counter)
    }

    /// Sends a `POST` of a 5-byte body and reads the answer up to `read 5`.
    async fn post_hello<S>(client: &mut S)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        client
            .write_all(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\n\r\nhello")
            .await
            .unwrap();
        let mut answer = Vec::new();
        while !answer.ends_with(b"read 5") {
            let mut buffer = [0; 1024];
            let n =
                tokio::time::timeout(std::time::Duration::from_secs(5), client.read(&mut buffer))
                    .await
                    .expect("the answer comes")
                    .unwrap();
            assert!(n > 0, "{}", String::from_utf8_lossy(&answer));
            answer.extend_from_slice(&buffer[..n]);
        }
    }

    /// Serves one HTTP/1 `POST` with a 5-byte body through hyper and [`Connection`], the
    /// handler reading the body as `Body` (or as hyper's own); the wakes of the connection's
    /// task during its own polls.
    async fn wakes_while_serving(wrapped: bool) -> usize {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let service =
            hyper::service::service_fn(move |request: hyper::Request<Incoming>| async move {
                let body = if wrapped {
                    axum::body::Body::new(Body::new(request.into_body()))
                } else {
                    axum::body::Body::new(request.into_body())
                };
                let bytes = axum::body::to_bytes(body, 1024).await.unwrap();
                Ok::<_, std::convert::Infallible>(hyper::Response::new(axum::body::Body::from(
                    format!("read {}", bytes.len()),
                )))
            });
        let connection = Connection::new(
            hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(server), service),
        );
        let (served, counter) = spawn_counted(connection);
        post_hello(&mut client).await;
        drop(client);
        served.await.unwrap().unwrap();
        counter.wakes.load(Ordering::SeqCst)
    }

    #[tokio::test]
    async fn a_request_bodys_hand_over_does_not_wake_the_connections_task() {
        assert_eq!(wakes_while_serving(true).await, 0);
        // hyper's own body wakes the task that is polling it (what `Body` is for).
        assert!(wakes_while_serving(false).await > 0);
    }

    /// The server's own connection task (`task::serve`, its watchdog and hyper's auto
    /// builder), a handler reading the body with axum's extractor: serving a `POST` wakes the
    /// task during its own polls 0 times (the wiring of [`Connection`] and [`Body`]).
    #[tokio::test]
    async fn a_post_to_the_servers_connection_task_does_not_wake_it() {
        use super::super::{Connections, Limits};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (tcp, _) = listener.accept().await.unwrap();
        let connections = Connections::new(Limits {
            max_connections: 4,
            idle_timeout: std::time::Duration::from_secs(30),
        });
        let admitted = connections.admit().await.unwrap();
        let app = axum::Router::new().route(
            "/",
            axum::routing::post(|body: Bytes| async move { format!("read {}", body.len()) }),
        );
        let (served, counter) = spawn_counted(super::super::task::serve(
            tcp,
            app,
            admitted,
            connections.limits(),
            tokio_util::sync::CancellationToken::new(),
        ));
        post_hello(&mut client).await;
        post_hello(&mut client).await;
        drop(client);
        served.await.unwrap();
        assert_eq!(counter.wakes.load(Ordering::SeqCst), 0);
    }
}
