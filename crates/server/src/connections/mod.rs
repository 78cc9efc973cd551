//! Connections: how many are served at once and how long one may hold its slot without doing
//! anything, so that idle keep-alive connections, half-sent request heads, clients that stop
//! reading, and more connections than descriptors cannot take the server down.
//!
//! - A slot per connection ([`Connections::admit`]): at most `max_connections` at once. When
//!   all are taken, the connection that has waited longest without a request in progress
//!   (idle, or still sending its head) is closed to make room; with none such, the new one
//!   waits for a slot (in the kernel's accept queue behind it, connections wait without a
//!   descriptor of ours) until a connection ends or becomes idle (it is then closed for the
//!   new one). A client with a request in progress is never closed for another.
//! - A watchdog per connection ([`task`]): a connection with no request in progress for
//!   `idle_timeout` — between requests, or since it connected without finishing a request head —
//!   is closed, and so is one whose answer could not be written for `idle_timeout` (a client
//!   that stopped reading). HTTP/1 and HTTP/2 alike.
//! - Request bodies are bounded elsewhere: the strict JSON extractor reads a body within
//!   `http.body_timeout_ms` (`crate::json`).
//!
//! - A connection upgraded to a WebSocket keeps its slot until the WebSocket closes
//!   ([`ConnectionSlot`]): it counts against `max_connections`, may be closed to make room
//!   while no response is in progress on it, and closes itself when idle (`crate::websocket`).
//!
//! A request is in progress from the moment its head has arrived until its answer has been
//! written out whole (or the connection dropped it), streams included.

mod body;
mod conn;
mod hand_over;
mod io;
mod slot;
pub(crate) mod task;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub(crate) use conn::{Conn, RequestGuard};
pub(crate) use slot::ConnectionSlot;

/// How often a connection waiting for a slot looks for one that has become idle.
const RECHECK: Duration = Duration::from_millis(100);

/// The limits [`Connections`] enforces (resolved: a number of connections, not "derived").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_connections: usize,
    pub idle_timeout: Duration,
}

/// The server's open connections.
pub(crate) struct Connections {
    limits: Limits,
    /// One permit per connection served.
    slots: Arc<Semaphore>,
    /// Every connection served now, by id (for eviction).
    open: Mutex<HashMap<u64, Arc<Conn>>>,
    next_id: AtomicU64,
    /// What connection times are counted from.
    epoch: tokio::time::Instant,
}

/// A connection's place among [`Connections`]: its slot and its state; dropping it frees both.
pub(crate) struct Admitted {
    pub conn: Arc<Conn>,
    connections: Arc<Connections>,
    _slot: OwnedSemaphorePermit,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.connections
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.conn.id);
    }
}

impl Connections {
    pub fn new(limits: Limits) -> Arc<Connections> {
        Arc::new(Connections {
            limits,
            slots: Arc::new(Semaphore::new(limits.max_connections)),
            open: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            epoch: tokio::time::Instant::now(),
        })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// A slot for a connection just accepted: a free one, else the one of the connection that
    /// has gone longest without a request in progress (closed for it), else the first one
    /// freed or the one of the first connection to become idle meanwhile (closed for it).
    pub async fn admit(self: &Arc<Self>) -> Option<Admitted> {
        let slot = match self.slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if !self.evict_longest_idle() {
                    tracing::warn!(
                        max_connections = self.limits.max_connections,
                        "all connection slots are busy with requests: new connections wait"
                    );
                }
                loop {
                    tokio::select! {
                        biased;
                        slot = self.slots.clone().acquire_owned() => break slot.ok()?,
                        () = tokio::time::sleep(RECHECK) => {
                            if !self.eviction_pending() {
                                self.evict_longest_idle();
                            }
                        }
                    }
                }
            }
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn::new(id, self.epoch));
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, conn.clone());
        Some(Admitted {
            conn,
            connections: self.clone(),
            _slot: slot,
        })
    }

    /// Tells the connection without a request in progress for the longest time to close;
    /// `false` when there is none.
    fn evict_longest_idle(&self) -> bool {
        let Some(victim) = self.longest_idle() else {
            return false;
        };
        tracing::debug!(
            connection = victim.id,
            "all connection slots taken: closing the longest idle connection"
        );
        victim.evict();
        true
    }

    /// Whether a connection was told to close and has not closed yet.
    fn eviction_pending(&self) -> bool {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .any(|conn| conn.is_evicted())
    }

    /// The open connection without a request in progress for the longest time, not already
    /// told to close.
    fn longest_idle(&self) -> Option<Arc<Conn>> {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter_map(|conn| conn.idle_since().map(|since| (since, conn)))
            .min_by_key(|(since, conn)| (*since, conn.id))
            .map(|(_, conn)| conn.clone())
    }

    /// How many connections are open now.
    pub fn open_count(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_connections: usize) -> Limits {
        Limits {
            max_connections,
            idle_timeout: Duration::from_secs(30),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_expires_only_without_a_request_in_progress() {
        let connections = Connections::new(limits(4));
        let admitted = connections.admit().await.unwrap();
        let conn = admitted.conn.clone();
        let timeout = connections.limits().idle_timeout;
        tokio::time::advance(Duration::from_secs(29)).await;
        assert_eq!(conn.expired(timeout), None);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(conn.expired(timeout), Some("no request in progress"));

        let request = conn.request_started();
        tokio::time::advance(Duration::from_secs(3600)).await;
        assert_eq!(conn.expired(timeout), None, "a long run is not idle");
        conn.write_blocked(true);
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(conn.expired(timeout), Some("the client stopped reading"));
        conn.write_blocked(false);
        assert_eq!(conn.expired(timeout), None);
        drop(request);
        tokio::time::advance(Duration::from_secs(29)).await;
        assert_eq!(
            conn.expired(timeout),
            None,
            "idle counts from the answer's end"
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(conn.expired(timeout).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_server_closes_the_longest_idle_connection_for_a_new_one() {
        let connections = Connections::new(limits(3));
        let oldest = connections.admit().await.unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        let busy = connections.admit().await.unwrap();
        let _request = busy.conn.request_started();
        tokio::time::advance(Duration::from_secs(1)).await;
        let newer = connections.admit().await.unwrap();
        assert_eq!(connections.open_count(), 3);

        let waiting = tokio::spawn({
            let connections = connections.clone();
            async move { connections.admit().await }
        });
        // The oldest idle one is told to close (its task then drops it); the busy one never.
        tokio::time::timeout(Duration::from_secs(1), oldest.conn.evicted())
            .await
            .unwrap();
        assert_eq!(busy.conn.idle_since(), None);
        drop(oldest);
        let admitted = waiting.await.unwrap();
        assert!(admitted.is_some());
        assert_eq!(connections.open_count(), 3);
        assert!(newer.conn.idle_since().is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_connection_takes_the_slot_of_one_that_became_idle() {
        let connections = Connections::new(limits(2));
        let first = connections.admit().await.unwrap();
        let first_request = first.conn.request_started();
        let second = connections.admit().await.unwrap();
        let _second_request = second.conn.request_started();
        let waiting = tokio::spawn({
            let connections = connections.clone();
            async move { connections.admit().await }
        });
        tokio::time::advance(Duration::from_secs(5)).await;
        assert!(!waiting.is_finished(), "both connections are busy");
        // The first one's answer ends: it is closed for the waiting one, the busy one is not.
        drop(first_request);
        tokio::time::timeout(Duration::from_secs(1), first.conn.evicted())
            .await
            .unwrap();
        assert_eq!(second.conn.idle_since(), None);
        drop(first);
        assert!(waiting.await.unwrap().is_some());
    }
}
