//! One connection's state, shared by its I/O, its requests' answers and its watchdog.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// "Not set" in the millisecond fields.
const NEVER: u64 = u64::MAX;

/// What the watchdog and eviction need to know about a connection.
pub(crate) struct Conn {
    pub id: u64,
    /// What the millisecond fields count from.
    epoch: Instant,
    /// Requests whose head has arrived and whose answer is not written out yet.
    in_flight: AtomicUsize,
    /// Since when (ms after `epoch`) no request has been in progress; [`NEVER`] while one is.
    idle_since: AtomicU64,
    /// Since when (ms) a write has been waiting for the client to read; [`NEVER`] if none is.
    write_blocked_since: AtomicU64,
    /// Set when the connection was told to close to free its slot.
    evicted: AtomicBool,
    evict: Notify,
}

impl Conn {
    pub fn new(id: u64, epoch: Instant) -> Conn {
        let conn = Conn {
            id,
            epoch,
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(NEVER),
            write_blocked_since: AtomicU64::new(NEVER),
            evicted: AtomicBool::new(false),
            evict: Notify::new(),
        };
        conn.idle_since.store(conn.now(), Ordering::Relaxed);
        conn
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(NEVER - 1)
    }

    /// A request's head has arrived: the connection is busy until the guard is dropped (with
    /// the answer's body, once it is written out).
    pub fn request_started(self: &Arc<Self>) -> RequestGuard {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.idle_since.store(NEVER, Ordering::Relaxed);
        RequestGuard(self.clone())
    }

    /// Since when no request has been in progress (ms), if none is and the connection has not
    /// been told to close already.
    pub fn idle_since(&self) -> Option<u64> {
        if self.evicted.load(Ordering::Relaxed) || self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        Some(self.idle_since.load(Ordering::Relaxed)).filter(|since| *since != NEVER)
    }

    /// Tells the connection to close now (its slot is wanted).
    pub fn evict(&self) {
        self.evicted.store(true, Ordering::Release);
        self.evict.notify_waiters();
    }

    /// Whether the connection was told to close.
    pub fn is_evicted(&self) -> bool {
        self.evicted.load(Ordering::Acquire)
    }

    /// Resolves once [`Conn::evict`] was called (at once if it was already: whoever serves
    /// the connection now — its HTTP task, or the WebSocket that took it over — hears it).
    pub async fn evicted(&self) {
        let notified = self.evict.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.evicted.load(Ordering::Acquire) {
            return;
        }
        notified.await;
    }

    /// A write could not go on (the client's window is full) or went on again.
    pub fn write_blocked(&self, blocked: bool) {
        if blocked {
            let now = self.now();
            let _ = self.write_blocked_since.compare_exchange(
                NEVER,
                now,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        } else {
            self.write_blocked_since.store(NEVER, Ordering::Relaxed);
        }
    }

    /// Why the connection has outstayed `timeout`, if it has: no request in progress for that
    /// long, or a write waiting that long.
    pub fn expired(&self, timeout: Duration) -> Option<&'static str> {
        let now = self.now();
        let timeout = u64::try_from(timeout.as_millis()).unwrap_or(NEVER - 1);
        let over = |since: u64| since != NEVER && now.saturating_sub(since) >= timeout;
        if self.in_flight.load(Ordering::Acquire) == 0
            && over(self.idle_since.load(Ordering::Relaxed))
        {
            return Some("no request in progress");
        }
        if over(self.write_blocked_since.load(Ordering::Relaxed)) {
            return Some("the client stopped reading");
        }
        None
    }
}

/// One request in progress on a connection (see [`Conn::request_started`]).
pub(crate) struct RequestGuard(Arc<Conn>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let conn = &self.0;
        if conn.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            conn.idle_since.store(conn.now(), Ordering::Relaxed);
        }
    }
}
