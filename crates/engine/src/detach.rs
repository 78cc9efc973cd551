//! A future driven by its caller that, dropped before it ended, goes on as a task of its own.
//!
//! Some work must finish even when the one who waits for it goes away: a foreground run is
//! stored to its end when its client disconnects, a group commit answers every write of its
//! batch. Spawning such work as a task costs a task and a hand-off back to the waiter each
//! time; driving it in the waiter's own task costs neither, and [`Detachable`] keeps the
//! guarantee: if the waiter's future is dropped first, the rest runs as a new task.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The boxed work (boxed so that it can move into a task when dropped mid-way).
type Work<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// `work`, driven by whoever awaits this, or by a task of its own once this is dropped before
/// `work` ended.
pub struct Detachable<T: Send + 'static> {
    work: Option<Work<T>>,
}

impl<T: Send + 'static> Detachable<T> {
    pub fn new(work: impl Future<Output = T> + Send + 'static) -> Detachable<T> {
        Detachable {
            work: Some(Box::pin(work)),
        }
    }
}

impl<T: Send + 'static> Future for Detachable<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let Some(mut work) = self.work.take() else {
            // Polled after it ended: a caller's bug, answered as never ready rather than with a
            // panic (nothing is lost: the work already ended).
            return Poll::Pending;
        };
        // Out of `self` while polled: work that panics is dropped with the panic, never
        // spawned again half-run.
        let outcome = work.as_mut().poll(cx);
        if outcome.is_pending() {
            self.work = Some(work);
        }
        outcome
    }
}

impl<T: Send + 'static> Drop for Detachable<T> {
    fn drop(&mut self) {
        let Some(work) = self.work.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    work.await;
                });
            }
            // Only outside any runtime (never on the server's paths): nothing can drive it.
            Err(_) => tracing::warn!("work dropped outside a runtime before it ended"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn awaited_it_runs_in_the_callers_task() {
        tokio::spawn(async {
            let caller = tokio::task::id();
            let work = Detachable::new(async { tokio::task::try_id() });
            assert_eq!(work.await, Some(caller));
        })
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn dropped_mid_way_it_goes_on_as_a_task() {
        let ended = Arc::new(AtomicBool::new(false));
        let (step, stepped) = tokio::sync::oneshot::channel::<()>();
        let mut work = Detachable::new({
            let ended = Arc::clone(&ended);
            async move {
                let _ = stepped.await;
                ended.store(true, Ordering::SeqCst);
            }
        });
        // Started, then given up on while it waits.
        assert!(
            tokio::time::timeout(Duration::from_millis(10), &mut work)
                .await
                .is_err()
        );
        drop(work);
        step.send(()).unwrap();
        for _ in 0..100 {
            if ended.load(Ordering::SeqCst) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the dropped work never ended");
    }

    #[tokio::test]
    async fn dropped_before_its_first_poll_it_still_runs() {
        let (done, ran) = tokio::sync::oneshot::channel();
        drop(Detachable::new(async move {
            let _ = done.send(());
        }));
        tokio::time::timeout(Duration::from_secs(5), ran)
            .await
            .unwrap()
            .unwrap();
    }
}
