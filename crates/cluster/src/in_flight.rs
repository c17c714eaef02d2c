//! The writes a node is sending to their owners. A write is acknowledged
//! once a quorum of owners stored it, and the last owner's copy may still
//! be on its way; a delete waits for such copies, or they would arrive
//! after it and bring deleted samples back.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

/// The writes in flight, numbered in the order they began.
#[derive(Debug, Default)]
pub(crate) struct WritesInFlight {
    /// The next write's number, and the numbers of those in flight.
    state: Mutex<(u64, BTreeSet<u64>)>,
    finished: Notify,
}

impl WritesInFlight {
    /// Marks a write in flight until the mark is dropped.
    pub(crate) fn begin(self: &Arc<Self>) -> InFlightWrite {
        let mut state = self.state.lock();
        let number = state.0;
        state.0 += 1;
        state.1.insert(number);
        InFlightWrite {
            writes: self.clone(),
            number,
        }
    }

    /// Waits until every write that began before this call has finished;
    /// writes that begin meanwhile neither wait nor are waited for.
    pub(crate) fn settle(&self) -> impl Future<Output = ()> + '_ {
        let before = self.state.lock().0;
        async move {
            loop {
                let finished = self.finished.notified();
                tokio::pin!(finished);
                // Registered before looking, so a write finishing in between wakes it.
                finished.as_mut().enable();
                if self.state.lock().1.first().is_none_or(|&oldest| oldest >= before) {
                    return;
                }
                finished.await;
            }
        }
    }
}

/// One write in flight; dropping it marks the write finished.
#[derive(Debug)]
pub(crate) struct InFlightWrite {
    writes: Arc<WritesInFlight>,
    number: u64,
}

impl Drop for InFlightWrite {
    fn drop(&mut self) {
        self.writes.state.lock().1.remove(&self.number);
        self.writes.finished.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn settled_within(writes: &Arc<WritesInFlight>, ms: u64) -> bool {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            tokio::time::timeout(Duration::from_millis(ms), writes.settle())
                .await
                .is_ok()
        })
    }

    #[test]
    fn settling_waits_for_the_writes_begun_before_it_only() {
        let writes = Arc::new(WritesInFlight::default());
        assert!(settled_within(&writes, 50), "nothing in flight: settled at once");
        let first = writes.begin();
        let second = writes.begin();
        assert!(!settled_within(&writes, 50));
        drop(first);
        assert!(!settled_within(&writes, 50), "the second is still in flight");
        drop(second);
        assert!(settled_within(&writes, 50));
    }

    #[test]
    fn a_write_begun_while_settling_is_not_waited_for() {
        let writes = Arc::new(WritesInFlight::default());
        let before = writes.begin();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            let settling = writes.settle();
            tokio::pin!(settling);
            assert!(tokio::time::timeout(Duration::ZERO, &mut settling).await.is_err());
            let _after = writes.begin();
            drop(before);
            tokio::time::timeout(Duration::from_secs(5), &mut settling)
                .await
                .expect("settled although a later write is in flight");
        });
    }
}
