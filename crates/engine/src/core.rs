//! What every part of the engine shares: the ports, the settings, the live runs, the metrics and
//! the background workers' coordination. The front door ([`crate::Engine`]), the planner, the
//! runner and the job workers all hold one `Arc<Core>`.

use std::sync::Arc;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::admin_store::AdminStore;
use crate::clock::Clock;
use crate::config::EngineConfig;
use crate::hosted::HostedTools;
use crate::live::LiveRuns;
use crate::mcp::McpConnector;
use crate::metrics::Metrics;
use crate::model::ModelRouter;
use crate::secrets::Sealer;
use crate::store::{ContinuationSource, ResponseRecord, Store, StoreError};

/// Everything slow or external the engine reaches, as adapters of its ports.
pub struct Ports {
    pub models: Arc<dyn ModelRouter>,
    pub store: Arc<dyn Store>,
    pub mcp: Arc<dyn McpConnector>,
    pub hosted: Arc<dyn HostedTools>,
    pub clock: Arc<dyn Clock>,
    /// Seals the MCP credentials of queued background runs (`None`: no secret key; background
    /// requests with credentials are then refused).
    pub sealer: Option<Arc<dyn Sealer>>,
    /// Projects, key roles and saved connectors (`None`: this process has no admin API and
    /// requests naming a connector are refused).
    pub admin: Option<Arc<dyn AdminStore>>,
}

pub(crate) struct Core {
    pub(crate) router: Arc<dyn ModelRouter>,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) mcp: Arc<dyn McpConnector>,
    pub(crate) hosted: Arc<dyn HostedTools>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) sealer: Option<Arc<dyn Sealer>>,
    pub(crate) admin: Option<Arc<dyn AdminStore>>,
    pub(crate) config: EngineConfig,
    /// Runs of this process not yet ended: cancel reaches them and resumes follow their event
    /// log from memory.
    pub(crate) live: LiveRuns,
    pub(crate) metrics: Metrics,
    /// Wakes an idle worker when a background job is queued.
    pub(crate) job_ready: Notify,
    /// This process's name as a job lease owner.
    pub(crate) worker_id: String,
    /// Cancelled at shutdown: workers stop claiming jobs.
    pub(crate) stopping: CancellationToken,
    /// Every background job execution, so shutdown can wait for them.
    pub(crate) jobs: TaskTracker,
    /// OAuth connections started by an admin, waiting for their callback.
    pub(crate) oauth_pending: crate::oauth_pending::PendingFlows,
}

impl Core {
    pub(crate) fn new(ports: Ports, config: EngineConfig) -> Core {
        let metrics = Metrics::default();
        ports.store.follow_active_runs(metrics.active_runs());
        Core {
            router: ports.models,
            store: ports.store,
            mcp: ports.mcp,
            hosted: ports.hosted,
            clock: ports.clock,
            sealer: ports.sealer,
            admin: ports.admin,
            config,
            live: LiveRuns::default(),
            metrics,
            job_ready: Notify::new(),
            worker_id: crate::ids::new_id("worker"),
            stopping: CancellationToken::new(),
            jobs: TaskTracker::new(),
            oauth_pending: Default::default(),
        }
    }
}

impl Core {
    /// A response of this project by id, wherever it is: a run of this process whose row is not
    /// written yet answers its in-progress record from memory (`live.rs`, [`UnstoredRow`]),
    /// anything else the store's row. Every lookup by id (retrieve, cancel, resume, delete,
    /// input items, files, listing cursors) goes through here. The live map is asked first: its
    /// row is dropped only after the store has it, so a run is never in neither.
    ///
    /// [`UnstoredRow`]: crate::live::UnstoredRow
    pub(crate) async fn response(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ResponseRecord>, StoreError> {
        if let Some(record) = self.live.unstored(project_id, id)? {
            return Ok(Some(record));
        }
        self.store.get_response(project_id, id).await
    }

    /// What a continuation takes from a response of this project, found as
    /// [`Core::response`] finds it (a run of this process not written yet from memory).
    pub(crate) async fn continuation_source(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ContinuationSource>, StoreError> {
        if let Some(record) = self.live.unstored(project_id, id)? {
            return Ok(Some(record.into()));
        }
        self.store.continuation_source(project_id, id).await
    }
}
