//! Settled data: samples old enough that a cache of answers (the range
//! query results cache) may keep what they give, because only an
//! out-of-order or backfilled write, a delete or retention changes them,
//! and storage counts each such change.

use std::sync::atomic::{AtomicU64, Ordering};

/// How old a sample must be, against the wall clock, to be settled. Samples
/// younger than this still arrive in order from scrapes and senders that
/// lag.
pub const SETTLED_AFTER_MS: i64 = 5 * 60 * 1000;

/// The oldest time that is not settled now.
pub fn settled_before(now_ms: i64) -> i64 {
    now_ms.saturating_sub(SETTLED_AFTER_MS)
}

/// A counter of changes to settled data: see
/// [`Queryable::settled_changes`](crate::Queryable::settled_changes).
/// A change is counted once it is visible to reads.
///
/// It starts from an arbitrary point, another each time storage opens: a
/// count kept by a reader elsewhere (a querying node of the cluster) from
/// before storage restarted then never equals one read after it.
#[derive(Debug)]
pub struct SettledChanges(AtomicU64);

impl Default for SettledChanges {
    fn default() -> Self {
        use std::hash::{BuildHasher, Hasher};
        let start = std::collections::hash_map::RandomState::new().build_hasher().finish();
        Self(AtomicU64::new(start))
    }
}

impl SettledChanges {
    /// Counts a write now visible whose oldest sample is at `min_t`, if
    /// that sample was settled.
    pub fn record_write(&self, min_t: i64) {
        if min_t < settled_before(wall_clock_ms()) {
            self.record();
        }
    }

    /// Counts a change now visible (a delete, a part dropped).
    pub fn record(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_writes_of_settled_samples_and_other_changes_count() {
        let changes = SettledChanges::default();
        let start = changes.get();
        let now = wall_clock_ms();
        changes.record_write(now);
        changes.record_write(now - SETTLED_AFTER_MS + 60_000);
        assert_eq!(changes.get(), start);
        changes.record_write(now - SETTLED_AFTER_MS - 1);
        changes.record_write(0);
        assert_eq!(changes.get(), start.wrapping_add(2));
        changes.record();
        assert_eq!(changes.get(), start.wrapping_add(3));
    }

    #[test]
    fn each_counter_starts_somewhere_else() {
        let starts: std::collections::HashSet<u64> = (0..16).map(|_| SettledChanges::default().get()).collect();
        assert_eq!(starts.len(), 16);
    }
}
