//! The runs this process is executing, by response id: what cancel and resume reach.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::events::EventLog;

/// What cancel and resume need of a run in progress.
#[derive(Clone)]
pub(crate) struct LiveRun {
    /// The run's events, followed by its stream and by resumes.
    pub(crate) log: Arc<EventLog>,
    /// Cancelled by a cancel request; the run selects on it.
    pub(crate) cancel: CancellationToken,
}

/// The live map of one engine.
#[derive(Default)]
pub(crate) struct LiveRuns {
    runs: Mutex<HashMap<String, LiveRun>>,
}

impl LiveRuns {
    /// Adds a run (or returns the entry a submission already made).
    pub(crate) fn register(&self, id: &str) -> LiveRun {
        self.lock()
            .entry(id.to_owned())
            .or_insert_with(|| LiveRun {
                log: EventLog::new(),
                cancel: CancellationToken::new(),
            })
            .clone()
    }

    pub(crate) fn get(&self, id: &str) -> Option<LiveRun> {
        self.lock().get(id).cloned()
    }

    pub(crate) fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, LiveRun>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
