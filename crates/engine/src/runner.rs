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

/// Executes a run to its end and returns how it ended.
pub(crate) async fn execute(
    core: &Core,
    plan: RunPlan,
    response: Response,
    response_json: Option<Arc<str>>,
    live: LiveRun,
) -> Finished {
    let id = response.id.clone();
    let started = Instant::now();
    core.metrics.run_started();
    let mut machine = Machine::new(plan, response, core.clock.clone());
    machine.share_initial(response_json);
    let driver = Driver::new(
        machine,
        live.log,
        core.store.clone(),
        core.mcp.clone(),
        live.cancel,
        core.clock.clone(),
    );
    let finished = driver.run().await;
    core.metrics
        .run_finished(finished.response.status, started.elapsed());
    core.live.remove(&id);
    finished
}
