//! Which requests a connection has in flight, so that one with none for
//! the read timeout is closed whatever its protocol: a client that connects
//! and sends nothing, an HTTP/2 client trickling a request's headers (which
//! hyper gives no timer), or a connection left idle. HTTP/1's header read
//! timer does the same for its own connections, so the two agree.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// One connection's requests in flight, and since when it has had none.
pub struct Activity {
    started: Instant,
    in_flight: AtomicUsize,
    /// Milliseconds from `started` to the end of the last request that
    /// left none in flight.
    idle_since_ms: AtomicU64,
}

/// A request in flight, from its headers' arrival until its response is
/// written or dropped.
pub struct InFlight(Arc<Activity>);

impl Activity {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            started: Instant::now(),
            in_flight: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(0),
        })
    }

    pub fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(self))
    }

    fn idle_since(&self) -> Instant {
        self.started + Duration::from_millis(self.idle_since_ms.load(Ordering::Acquire))
    }

    /// Resolves once the connection has had no request in flight for `limit`.
    pub async fn idle_for(&self, limit: Duration) {
        loop {
            let busy = self.in_flight.load(Ordering::Acquire) > 0;
            let deadline = if busy { Instant::now() } else { self.idle_since() } + limit;
            tokio::time::sleep_until(deadline).await;
            if self.in_flight.load(Ordering::Acquire) == 0 && self.idle_since() + limit <= Instant::now() {
                return;
            }
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let activity = &self.0;
        let now = activity.started.elapsed().as_millis() as u64;
        // Set before the count drops, so the watcher never sees the
        // connection idle with an old time.
        activity.idle_since_ms.fetch_max(now, Ordering::AcqRel);
        activity.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn idle_counts_from_the_start_and_from_the_last_request_in_flight() {
        let limit = Duration::from_millis(200);
        let activity = Activity::new();
        let start = Instant::now();
        activity.idle_for(limit).await;
        assert!(start.elapsed() >= limit);

        let activity = Activity::new();
        let (a, b) = (activity.begin(), activity.begin());
        let watcher = {
            let activity = Arc::clone(&activity);
            tokio::spawn(async move { activity.idle_for(limit).await })
        };
        tokio::time::sleep(limit * 2).await;
        drop(a);
        tokio::time::sleep(limit / 2).await;
        assert!(!watcher.is_finished(), "one request still in flight");
        drop(b);
        let ended = Instant::now();
        watcher.await.unwrap();
        assert!(ended.elapsed() >= limit - Duration::from_millis(1));
    }
}
