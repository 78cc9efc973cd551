//! One store read shared by the requests that need it at the same moment, without ever
//! answering a request from a read that began before it arrived.
//!
//! Open mode asks the store "is there any key?" for every request (a key created by the CLI
//! closes open mode at once). When thousands of requests arrive together (10,000 streams
//! started at once), that is thousands of identical reads queued on SQLite's few read
//! connections, each a round trip to a connection's thread; the queue alone took seconds.
//! [`FreshRead`] lets one read answer every request that was already waiting when it began:
//! requests that arrive while a read is running wait for the next one, so each answer is as
//! fresh as a read of its own would have been. (A file-backed SQLite store answers the read on
//! the caller's thread without a round trip, `sqlite_reader.rs` in the store crate; the
//! sharing matters for PostgreSQL's pool and for that reader's fallback to SQLite's pool.)

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Mutex;

/// A read whose answer is shared as described in the module docs.
#[derive(Debug, Default)]
pub struct FreshRead<T> {
    /// How many reads have begun.
    begun: AtomicU64,
    /// The last answer and the number of the read that gave it; held while a read runs.
    last: Mutex<Option<(u64, T)>>,
}

impl<T: Copy> FreshRead<T> {
    pub fn new() -> FreshRead<T> {
        FreshRead {
            begun: AtomicU64::new(0),
            last: Mutex::new(None),
        }
    }

    /// The answer of a read that began after this call: a read that another caller began
    /// later than this call and that has ended, or else `read` run now. A failed read answers
    /// its own caller only; the next caller reads again.
    pub async fn get<E, F, Fut>(&self, read: F) -> Result<T, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let arrived = self.begun.load(Ordering::Acquire);
        let mut last = self.last.lock().await;
        if let Some((number, value)) = *last
            && number > arrived
        {
            return Ok(value);
        }
        // Only the lock's holder begins a read, so this number's read begins after `arrived`
        // was taken whenever `number > arrived` (see above).
        let number = self.begun.fetch_add(1, Ordering::AcqRel) + 1;
        let value = read().await?;
        *last = Some((number, value));
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    use tokio::sync::Notify;

    use super::*;

    /// A read that counts itself and waits for `release` before answering `answer`.
    async fn held_read(
        reads: &AtomicUsize,
        release: &Notify,
        answer: &std::sync::atomic::AtomicBool,
    ) -> Result<bool, ()> {
        reads.fetch_add(1, Ordering::SeqCst);
        release.notified().await;
        Ok(answer.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn callers_waiting_together_share_one_read() {
        let shared = Arc::new(FreshRead::<bool>::new());
        let reads = Arc::new(AtomicUsize::new(0));
        let release = Arc::new(Notify::new());
        let answer = Arc::new(std::sync::atomic::AtomicBool::new(true));
        // The first caller's read is running (held) when the others arrive: they wait for the
        // read that begins after it, which all of them share.
        let spawn = |shared: Arc<FreshRead<bool>>| {
            let (reads, release, answer) = (reads.clone(), release.clone(), answer.clone());
            tokio::spawn(async move {
                shared
                    .get(|| async { held_read(&reads, &release, &answer).await })
                    .await
            })
        };
        let first = spawn(shared.clone());
        while reads.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        let waiting: Vec<_> = (0..100).map(|_| spawn(shared.clone())).collect();
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        release.notify_one();
        assert_eq!(first.await.ok(), Some(Ok(true)));
        // The second read began after all of them arrived and answers all of them.
        answer.store(false, Ordering::SeqCst);
        while reads.load(Ordering::SeqCst) < 2 {
            tokio::task::yield_now().await;
        }
        release.notify_one();
        for waiter in waiting {
            assert_eq!(waiter.await.ok(), Some(Ok(false)));
        }
        assert_eq!(reads.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_caller_after_a_read_ended_reads_again() {
        let shared = FreshRead::<u32>::new();
        let reads = AtomicUsize::new(0);
        let read = || async {
            Ok::<_, ()>(u32::try_from(reads.fetch_add(1, Ordering::SeqCst)).unwrap_or(0))
        };
        assert_eq!(shared.get(read).await, Ok(0));
        assert_eq!(shared.get(read).await, Ok(1));
        assert_eq!(shared.get(read).await, Ok(2));
    }

    #[tokio::test]
    async fn a_failed_read_answers_its_caller_only() {
        let shared = FreshRead::<bool>::new();
        assert_eq!(
            shared.get(|| async { Err::<bool, _>("down") }).await,
            Err("down")
        );
        assert_eq!(shared.get(|| async { Ok::<_, &str>(true) }).await, Ok(true));
    }
}
