//! Executes a planned run in this process: registers it in the live map, drives its machine to
//! the end, and counts it in the metrics.

use std::sync::Arc;
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
