//! The cap on sandbox executions running at once, shared by every request of the process.
//!
//! An execution takes a slot before it starts and gives it back when its processes are gone.
//! When every slot is taken, the call waits in line (first come, first served) for at most
//! [`Slots::queue_timeout`]; a call that waited that long is not run and the model reads an
//! error naming the limit. Waiting (bounded) rather than refusing at once lets a burst of
//! calls complete on a busy server, and the bound keeps a flood from piling up calls that
//! wait for minutes.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The configuration key an operator sets to raise the cap (named in the error).
pub const CONFIG_KEY: &str = "tools.sandbox.max_concurrent_executions";

/// Slots for concurrent executions.
#[derive(Debug, Clone)]
pub struct Slots {
    semaphore: Arc<Semaphore>,
    max: usize,
    queue_timeout: Duration,
}

impl Slots {
    /// `max` executions at once (at least 1); a call waits at most `queue_timeout` for one.
    pub fn new(max: usize, queue_timeout: Duration) -> Slots {
        let max = max.max(1);
        Slots {
            semaphore: Arc::new(Semaphore::new(max)),
            max,
            queue_timeout,
        }
    }

    /// How many executions may run at once.
    pub fn max(&self) -> usize {
        self.max
    }

    /// How long a call waits for a slot before it gives up.
    pub fn queue_timeout(&self) -> Duration {
        self.queue_timeout
    }

    /// A slot, held until the permit is dropped; `Err` (for the model) when none was free
    /// within the queue timeout.
    pub async fn acquire(&self) -> Result<OwnedSemaphorePermit, String> {
        let wait = Arc::clone(&self.semaphore).acquire_owned();
        match tokio::time::timeout(self.queue_timeout, wait).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => Err("the sandbox is shutting down".to_owned()),
            Err(_) => Err(format!(
                "the sandbox is busy: all {max} execution slots of this server \
                 ({CONFIG_KEY} = {max}) stayed taken for {} s, so the code was not run; \
                 try again later",
                self.queue_timeout.as_secs(),
                max = self.max,
            )),
        }
    }
}

impl Default for Slots {
    /// [`default_max`] for executions of 1 GiB, waiting up to 60 s.
    fn default() -> Slots {
        Slots::new(default_max(1024), Duration::from_secs(60))
    }
}

/// A cap sized for this machine: one execution per CPU, and no more than the memory holds
/// at `memory_mb` each (at least 1).
pub fn default_max(memory_mb: u64) -> usize {
    let cpus = std::thread::available_parallelism()
        .map(usize::from)
        .unwrap_or(1);
    let by_memory = total_memory_mb()
        .map(|total| usize::try_from(total / memory_mb.max(1)).unwrap_or(usize::MAX))
        .unwrap_or(usize::MAX);
    cpus.min(by_memory).max(1)
}

/// `MemTotal` of `/proc/meminfo`, in MiB.
fn total_memory_mb() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_that_waits_too_long_is_told_the_limit() {
        let slots = Slots::new(1, Duration::from_millis(50));
        let held = slots.acquire().await.unwrap();
        let refused = slots.acquire().await.unwrap_err();
        assert!(refused.contains("all 1 execution slots") && refused.contains(CONFIG_KEY));
        drop(held);
        assert!(slots.acquire().await.is_ok());
    }

    #[test]
    fn the_default_fits_the_machine() {
        let max = default_max(1024);
        assert!(max >= 1);
        assert!(
            max <= std::thread::available_parallelism()
                .map(usize::from)
                .unwrap_or(1)
        );
        assert_eq!(default_max(u64::MAX), 1, "never below one");
    }
}
