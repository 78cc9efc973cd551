//! The runs this process is executing, by response id: what cancel and resume reach, and what a
//! lookup by id answers while a run's response row is not yet in the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use protocol::response::Response;
use tokio_util::sync::CancellationToken;

use crate::events::EventLog;
use crate::store::{ResponseRecord, StoreError};

/// What cancel and resume need of a run in progress.
#[derive(Clone)]
pub(crate) struct LiveRun {
    /// The run's events, followed by its stream and by resumes.
    pub(crate) log: Arc<EventLog>,
    /// Cancelled by a cancel request; the run selects on it.
    pub(crate) cancel: CancellationToken,
    /// The run's response row while the store does not hold it yet.
    pub(crate) unstored: Arc<UnstoredRow>,
}

/// The in-progress row of a foreground run whose first store write has not happened yet: on a
/// store no other replica shares, `Engine::start` does not write it; the run's first flush or
/// its end does (`run/driver.rs`), so a run that ends before its first flush is stored in one
/// transaction. Until then every lookup by id answers this row ([`LiveRuns::unstored`]).
#[derive(Default)]
pub(crate) struct UnstoredRow {
    row: Mutex<Option<Arc<InitialRow>>>,
}

/// What the row holds at start: the response as `response.created` carries it (its JSON, shared
/// with the run's first event) and the record's other columns.
pub(crate) struct InitialRow {
    pub(crate) project_id: String,
    pub(crate) visible: bool,
    pub(crate) created_at: i64,
    pub(crate) conversation_id: Option<String>,
    pub(crate) response_json: Arc<str>,
}

impl InitialRow {
    /// The record `Engine::start` used to write (empty transcript: an unfinished response
    /// cannot be continued).
    pub(crate) fn record(&self, id: &str) -> Result<ResponseRecord, StoreError> {
        let response: Response = serde_json::from_str(&self.response_json)
            .map_err(|err| StoreError::Corrupt(format!("initial response {id}: {err}")))?;
        Ok(ResponseRecord {
            id: id.to_owned(),
            project_id: self.project_id.clone(),
            created_at: self.created_at,
            visible: self.visible,
            response,
            transcript: Vec::new(),
            conversation_id: self.conversation_id.clone(),
            items: Vec::new(),
            append_to: None,
            turns: Vec::new(),
            response_json: Some(Arc::clone(&self.response_json)),
            transcript_prefix: None,
        })
    }
}

impl UnstoredRow {
    fn lock(&self) -> MutexGuard<'_, Option<Arc<InitialRow>>> {
        self.row.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The row not yet written, if any.
    pub(crate) fn get(&self) -> Option<Arc<InitialRow>> {
        self.lock().clone()
    }

    pub(crate) fn set(&self, row: InitialRow) {
        *self.lock() = Some(Arc::new(row));
    }

    /// The row is in the store (or the run is over): lookups read the store from now on.
    /// Called only once the write has committed, so a lookup finds the row in one place or
    /// the other, never in neither.
    pub(crate) fn stored(&self) {
        *self.lock() = None;
    }

    pub(crate) fn is_pending(&self) -> bool {
        self.lock().is_some()
    }
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
                unstored: Arc::default(),
            })
            .clone()
    }

    pub(crate) fn get(&self, id: &str) -> Option<LiveRun> {
        self.lock().get(id).cloned()
    }

    pub(crate) fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    /// The record of a run of this project whose row is not in the store yet (see
    /// [`UnstoredRow`]); `None` for any other id.
    pub(crate) fn unstored(
        &self,
        project_id: &str,
        id: &str,
    ) -> Result<Option<ResponseRecord>, StoreError> {
        let Some(row) = self.lock().get(id).and_then(|live| live.unstored.get()) else {
            return Ok(None);
        };
        if row.project_id != project_id {
            return Ok(None);
        }
        row.record(id).map(Some)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, LiveRun>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
