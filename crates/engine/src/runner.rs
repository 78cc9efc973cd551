//! Executes a planned run in this process: registers it in the live map, drives its machine to
//! the end, and counts it in the metrics; [`InlineRun`] runs one in its caller's task.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use protocol::response::Response;

use crate::core::Core;
use crate::live::LiveRun;
use crate::plan::RunPlan;
use crate::run::Finished;
use crate::run::Machine;
use crate::run::driver::Driver;

/// The run, ready to execute: the returned future runs it to its end and returns how it ended.
///
/// The driver (its machine, the plan and the response: ~3 KiB) is built here, before the
/// future, and boxed: a future holding them inline (the arguments, the machine, the driver and
/// the driver's own future each kept a copy) was ~16 KiB, copied whole each time it moved, as
/// when `Engine::start` spawns it. Now the future holds a pointer to the driver.
pub(crate) fn execute(
    core: &Arc<Core>,
    plan: RunPlan,
    response: Response,
    response_json: Option<Arc<str>>,
    live: LiveRun,
) -> impl Future<Output = Finished> + Send + 'static {
    let id = response.id.clone();
    let mut machine = Machine::new(plan, response, core.clock.clone());
    machine.share_initial(response_json);
    let driver = Box::new(Driver::new(
        machine,
        live.log,
        core.store.clone(),
        core.mcp.clone(),
        live.cancel,
        live.unstored,
        core.clock.clone(),
    ));
    let core = Arc::clone(core);
    async move {
        let started = Instant::now();
        core.metrics.run_started();
        let finished = driver.run().await;
        core.metrics
            .run_finished(finished.response.status, started.elapsed());
        core.live.remove(&id);
        finished
    }
}

/// A foreground run polled by the task that awaits it (a plain request's handler) instead of a
/// task of its own: no spawn, and no hand-off to the waiting task when it ends.
///
/// The run never depends on its caller: if this is dropped before the run has ended (the
/// client went away, the connection closed, the server stopped waiting), the rest of the run
/// is spawned as a task at that moment and carries on to its end and its store write, exactly
/// as a spawned run would. A run that panics ends as a spawned one did for its waiter: with
/// no result (the panic is reported by the panic hook and not propagated to the caller).
pub(crate) struct InlineRun {
    run: Option<Pin<Box<dyn Future<Output = Finished> + Send>>>,
}

impl InlineRun {
    pub(crate) fn new(run: impl Future<Output = Finished> + Send + 'static) -> InlineRun {
        InlineRun {
            run: Some(Box::pin(run)),
        }
    }
}

impl Future for InlineRun {
    /// `None` when the run panicked (or when polled again after its end).
    type Output = Option<Finished>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Finished>> {
        let Some(run) = self.run.as_mut() else {
            return Poll::Ready(None);
        };
        match std::panic::catch_unwind(AssertUnwindSafe(|| run.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(finished)) => {
                self.run = None;
                Poll::Ready(Some(finished))
            }
            Err(_) => {
                // As a spawned run's task: the panic ends it, its waiter sees no result.
                self.run = None;
                Poll::Ready(None)
            }
        }
    }
}

impl Drop for InlineRun {
    fn drop(&mut self) {
        let Some(run) = self.run.take() else { return };
        // Outside a runtime (the runtime itself is being torn down) there is nowhere to go on:
        // a spawned run would be dropped there too.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            drop(runtime.spawn(run));
        }
    }
}
