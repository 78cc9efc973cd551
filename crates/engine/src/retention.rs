//! Retention: event logs and shared files older than their configured lifetime are purged
//! hourly.

use std::sync::Arc;
use std::time::Duration;

use crate::core::Core;
use crate::error::EngineError;

/// How often old event logs and files are purged.
const RETENTION_SWEEP: Duration = Duration::from_secs(3600);

/// Starts the hourly sweeper (the first sweep runs at once).
pub(crate) fn spawn_sweeper(core: &Arc<Core>) {
    let core = core.clone();
    tokio::spawn(async move {
        loop {
            match purge_events(&core).await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "purged expired event logs"),
                Err(err) => tracing::warn!(error = %err, "purging expired event logs failed"),
            }
            match purge_files(&core).await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "purged expired shared files"),
                Err(err) => tracing::warn!(error = %err, "purging expired shared files failed"),
            }
            tokio::select! {
                () = tokio::time::sleep(RETENTION_SWEEP) => {}
                () = core.stopping.cancelled() => return,
            }
        }
    });
}

/// Purges shared files older than their retention.
pub(crate) async fn purge_files(core: &Core) -> Result<u64, EngineError> {
    let retention = i64::try_from(core.config.file_retention.as_secs()).unwrap_or(i64::MAX);
    let before = core.clock.now_secs().saturating_sub(retention);
    Ok(core.store.purge_files(before).await?)
}

/// Purges event logs older than the retention.
pub(crate) async fn purge_events(core: &Core) -> Result<u64, EngineError> {
    let retention = i64::try_from(core.config.event_retention.as_secs()).unwrap_or(i64::MAX);
    let before = core.clock.now_secs().saturating_sub(retention);
    Ok(core.store.purge_events(before).await?)
}
