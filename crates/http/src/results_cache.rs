//! The range query results cache: the answers of a range query's settled
//! steps, kept so that the same query over a later window (a dashboard
//! refreshing) evaluates only the steps it has not seen. What is kept, and
//! when it may be used, is decided by `cairn-query-api`; this is the
//! bounded store and its figures.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use cairn_promql::RangeSeries;
use parking_lot::Mutex;

use crate::exposition::Exposition;

/// What names one cached answer: the tenants, the query and every other
/// parameter but the bounds, and the phase of its steps (`start` modulo
/// `step`), so that only steps on the same grid meet.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey {
    pub tenants: String,
    /// The request's parameters but `start` and `end`, sorted.
    pub params: Vec<(String, String)>,
    pub step: i64,
    pub phase: i64,
}

/// The answers of the steps from `start` to `end` (both included).
#[derive(Debug, Clone)]
pub struct CachedSteps {
    pub start: i64,
    pub end: i64,
    pub series: Vec<RangeSeries>,
    pub warnings: Vec<String>,
    pub infos: Vec<String>,
    /// The storage's count of settled changes read before they were computed.
    pub settled_changes: u64,
}

impl CachedSteps {
    /// About what it holds in memory.
    fn bytes(&self, key: &CacheKey) -> usize {
        let labels: usize = self
            .series
            .iter()
            .map(|s| {
                s.metric
                    .iter()
                    .map(|l| l.name.len() + l.value.len() + 16)
                    .sum::<usize>()
            })
            .sum();
        let points: usize = self
            .series
            .iter()
            .map(|s| s.floats.len() * 16 + s.histograms.len() * 256)
            .sum();
        let params: usize = key.params.iter().map(|(k, v)| k.len() + v.len() + 48).sum();
        let notes: usize = self.warnings.iter().chain(&self.infos).map(|w| w.len() + 24).sum();
        labels + points + params + notes + key.tenants.len() + 128
    }
}

struct Slot {
    steps: std::sync::Arc<CachedSteps>,
    bytes: usize,
    last_used: u64,
}

#[derive(Default)]
struct Entries {
    map: HashMap<CacheKey, Slot>,
    bytes: usize,
    clock: u64,
}

/// The cache, bounded in bytes: the least recently used answers go first.
pub struct ResultsCache {
    max_bytes: usize,
    entries: Mutex<Entries>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
    invalidations: AtomicU64,
}

impl ResultsCache {
    /// A cache of at most `max_bytes`; 0 turns it off.
    pub fn new(max_bytes: usize) -> Self {
        Self {
            max_bytes,
            entries: Mutex::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            invalidations: AtomicU64::new(0),
        }
    }

    pub fn is_enabled(&self) -> bool {
        self.max_bytes > 0
    }

    /// The steps kept under `key`, if they were computed at the storage's
    /// count of settled changes `settled_changes`; others are dropped.
    pub fn get(&self, key: &CacheKey, settled_changes: u64) -> Option<std::sync::Arc<CachedSteps>> {
        let mut entries = self.entries.lock();
        entries.clock += 1;
        let clock = entries.clock;
        let found = match entries.map.get_mut(key) {
            Some(slot) if slot.steps.settled_changes == settled_changes => {
                slot.last_used = clock;
                Some(slot.steps.clone())
            }
            Some(_) => {
                if let Some(slot) = entries.map.remove(key) {
                    entries.bytes -= slot.bytes;
                }
                self.invalidations.fetch_add(1, Ordering::Relaxed);
                None
            }
            None => None,
        };
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keeps `steps` under `key` in place of what was there, unless it
    /// alone is over a quarter of the bound.
    pub fn put(&self, key: CacheKey, steps: CachedSteps) {
        let bytes = steps.bytes(&key);
        if bytes > self.max_bytes / 4 {
            return;
        }
        let mut entries = self.entries.lock();
        entries.clock += 1;
        let slot = Slot {
            steps: std::sync::Arc::new(steps),
            bytes,
            last_used: entries.clock,
        };
        if let Some(old) = entries.map.insert(key, slot) {
            entries.bytes -= old.bytes;
        }
        entries.bytes += bytes;
        while entries.bytes > self.max_bytes {
            let Some(oldest) = entries
                .map
                .iter()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(slot) = entries.map.remove(&oldest) {
                entries.bytes -= slot.bytes;
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub fn render(&self, e: &mut Exposition) {
        let (count, bytes) = {
            let entries = self.entries.lock();
            (entries.map.len(), entries.bytes)
        };
        let counters = [
            (
                "cairn_results_cache_hits_total",
                "Range queries that reused cached steps.",
                &self.hits,
            ),
            (
                "cairn_results_cache_misses_total",
                "Range queries that found no cached steps to reuse.",
                &self.misses,
            ),
            (
                "cairn_results_cache_evictions_total",
                "Cached answers dropped to stay within the cache's bound.",
                &self.evictions,
            ),
            (
                "cairn_results_cache_invalidations_total",
                "Cached answers dropped because settled data changed since they were computed.",
                &self.invalidations,
            ),
        ];
        for (name, help, n) in counters {
            e.single(name, help, "counter", n.load(Ordering::Relaxed) as f64);
        }
        e.single(
            "cairn_results_cache_entries",
            "Range query answers in the results cache.",
            "gauge",
            count as f64,
        );
        e.single(
            "cairn_results_cache_bytes",
            "Memory the results cache holds, estimated.",
            "gauge",
            bytes as f64,
        );
        e.single(
            "cairn_results_cache_max_bytes",
            "The results cache's bound; 0 when it is off.",
            "gauge",
            self.max_bytes as f64,
        );
    }
}

#[cfg(test)]
mod tests {
    use cairn_model::{Labels, Sample};

    use super::*;

    fn key(query: &str) -> CacheKey {
        CacheKey {
            tenants: "0".into(),
            params: vec![("query".into(), query.into())],
            step: 1000,
            phase: 0,
        }
    }

    fn steps(points: usize, settled_changes: u64) -> CachedSteps {
        CachedSteps {
            start: 0,
            end: points as i64 * 1000,
            series: vec![RangeSeries {
                metric: Labels::from_pairs([("job", "a")]),
                floats: (0..points).map(|i| Sample::new(i as i64 * 1000, 1.0)).collect(),
                histograms: Vec::new(),
            }],
            warnings: Vec::new(),
            infos: Vec::new(),
            settled_changes,
        }
    }

    #[test]
    fn an_answer_is_found_only_at_the_count_it_was_computed_at() {
        let cache = ResultsCache::new(1 << 20);
        cache.put(key("up"), steps(10, 3));
        assert!(cache.get(&key("other"), 3).is_none());
        assert_eq!(cache.get(&key("up"), 3).unwrap().series[0].floats.len(), 10);
        assert!(cache.get(&key("up"), 4).is_none());
        // Dropped when found outdated.
        assert!(cache.get(&key("up"), 3).is_none());
        let mut e = Exposition::new();
        cache.render(&mut e);
        let text = e.finish();
        assert!(text.contains("cairn_results_cache_hits_total 1\n"), "{text}");
        assert!(text.contains("cairn_results_cache_misses_total 3\n"), "{text}");
        assert!(text.contains("cairn_results_cache_invalidations_total 1\n"), "{text}");
        assert!(text.contains("cairn_results_cache_entries 0\n"), "{text}");
    }

    #[test]
    fn the_least_recently_used_answers_go_first_and_the_bound_holds() {
        let one = steps(1000, 0).bytes(&key("q0"));
        let max = one * 4 + 8;
        let cache = ResultsCache::new(max);
        for q in ["q0", "q1", "q2", "q3"] {
            cache.put(key(q), steps(1000, 0));
        }
        assert!(cache.get(&key("q0"), 0).is_some());
        cache.put(key("q4"), steps(1000, 0));
        assert!(cache.get(&key("q1"), 0).is_none());
        for q in ["q0", "q2", "q3", "q4"] {
            assert!(cache.get(&key(q), 0).is_some(), "{q}");
        }
        assert!(cache.entries.lock().bytes <= max);
        // One answer over a quarter of the bound is not kept.
        cache.put(key("big"), steps(2000, 0));
        assert!(cache.get(&key("big"), 0).is_none());
    }
}
