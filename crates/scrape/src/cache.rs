//! A target's scrape cache: how the body spelt a series → the label set
//! stored (so that a known series' labels are not even read, and target
//! labels and metric relabelling are applied once per series, not at every
//! scrape), the series relabelling dropped, the series of the current and
//! previous scrape (for staleness), and the metadata of its families.

use std::sync::Arc;

use cairn_model::{Label, Labels, SharedEncodedLabels};
use cairn_protocols::exposition::FamilyMetadata as ExposedMetadata;
use foldhash::{HashMap, HashSet};
use parking_lot::Mutex;

use crate::target::{FamilyMetadata, MetadataStore};

pub(crate) struct CacheEntry {
    /// The label set stored.
    pub lset: SharedEncodedLabels,
    /// The scrape it was last seen in.
    pub last_iter: u64,
    /// The scrape its sample was last appended in without an own timestamp
    /// (or with `track_timestamps_staleness`): it gets a stale marker in the
    /// scrape after, if it is missing there.
    tracked_iter: u64,
}

/// [`CacheEntry::tracked_iter`] of an entry never tracked.
const NEVER: u64 = u64::MAX;

/// The key of a series the parser read whole (protobuf bodies, converted
/// histograms), in `out`: its exposed labels and, with `honor_labels`, the
/// target's label names it exposed with an empty value (those keep the
/// target's label off the series, so `m{job=""}` and `m` are stored apart).
/// It starts with `0xff`, which no text [`cairn_protocols::exposition::Spelling`]
/// key does.
pub(crate) fn exposed_key(labels: &Labels, honoured_empty: &[Label], out: &mut Vec<u8>) {
    out.clear();
    out.push(0xff);
    labels.encode(out);
    for l in honoured_empty {
        out.extend_from_slice(l.name.as_bytes());
        out.push(0);
    }
}

/// A series' key in the cache: the 128-bit xxh3 hash of its
/// [`cairn_protocols::exposition::Spelling::key`] or [`exposed_key`]. Held
/// in place of the key's bytes (no allocation, no byte comparison per
/// lookup); two keys of one target sharing a hash are not to be expected.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct SeriesKey(u128);

impl SeriesKey {
    pub fn of(key: &[u8]) -> Self {
        Self(xxhash_rust::xxh3::xxh3_128(key))
    }
}

/// Scrapes after which metadata of a family no longer exposed is forgotten.
const METADATA_KEEP_SCRAPES: u64 = 10;

#[derive(Default)]
pub(crate) struct ScrapeCache {
    pub iter: u64,
    successful_count: usize,
    /// Flushes forced since the loop last took the count (a cache grown
    /// through failing scrapes).
    pub forced_flushes: u64,
    /// By how the body spelt the series, or by [`exposed_key`].
    series: HashMap<SeriesKey, CacheEntry>,
    /// Series metric relabelling dropped, by the same keys, with the scrape
    /// they were last seen in.
    dropped: HashMap<SeriesKey, u64>,
    /// The label sets tracked in this scrape, gathered only when a series
    /// new to the cache or one going stale needs to be told apart from
    /// another spelling of the same series, and kept up for the scrape.
    tracked_now: Option<HashSet<SharedEncodedLabels>>,
    pub metadata: Arc<Mutex<MetadataStore>>,
}

impl ScrapeCache {
    /// Whether the series under `key` is cached or dropped: the parser
    /// need not read its labels.
    pub fn knows(&self, key: &[u8]) -> bool {
        let key = SeriesKey::of(key);
        self.series.contains_key(&key) || self.dropped.contains_key(&key)
    }

    /// The entry of a key, marked seen; and whether it was already seen in
    /// this scrape.
    pub fn get(&mut self, key: SeriesKey) -> Option<(SharedEncodedLabels, bool)> {
        let iter = self.iter;
        self.series.get_mut(&key).map(|e| {
            let already = e.last_iter == iter;
            e.last_iter = iter;
            (e.lset.clone(), already)
        })
    }

    pub fn add(&mut self, key: SeriesKey, lset: SharedEncodedLabels) {
        self.series.insert(
            key,
            CacheEntry {
                lset,
                last_iter: self.iter,
                tracked_iter: NEVER,
            },
        );
    }

    /// Marks the series under `key` (in the cache) appended in this scrape
    /// with its staleness tracked.
    pub fn track(&mut self, key: SeriesKey) {
        if let Some(e) = self.series.get_mut(&key) {
            e.tracked_iter = self.iter;
            if let Some(now) = &mut self.tracked_now {
                now.insert(e.lset.clone());
            }
        }
    }

    /// Whether `lset` was tracked in this scrape (under another key: two
    /// spellings of one series).
    pub fn tracked_in_this_scrape(&mut self, lset: &SharedEncodedLabels) -> bool {
        let iter = self.iter;
        let series = &self.series;
        self.tracked_now
            .get_or_insert_with(|| {
                series
                    .values()
                    .filter(|e| e.tracked_iter == iter)
                    .map(|e| e.lset.clone())
                    .collect()
            })
            .contains(lset)
    }

    pub fn is_dropped(&mut self, key: SeriesKey) -> bool {
        match self.dropped.get_mut(&key) {
            Some(iter) => {
                *iter = self.iter;
                true
            }
            None => false,
        }
    }

    pub fn add_dropped(&mut self, key: SeriesKey) {
        self.dropped.insert(key, self.iter);
    }

    /// Series tracked in the previous scrape and missing from this one.
    pub fn stale(&mut self) -> Vec<SharedEncodedLabels> {
        let Some(previous) = self.iter.checked_sub(1) else {
            return Vec::new();
        };
        let gone: Vec<SharedEncodedLabels> = self
            .series
            .values()
            .filter(|e| e.tracked_iter == previous)
            .map(|e| e.lset.clone())
            .collect();
        gone.into_iter().filter(|l| !self.tracked_in_this_scrape(l)).collect()
    }

    pub fn set_metadata(&mut self, metadata: &[ExposedMetadata]) {
        let mut store = self.metadata.lock();
        for m in metadata {
            let entry = FamilyMetadata {
                family: m.name.clone(),
                metric_type: m.kind,
                help: m.help.clone(),
                unit: m.unit.clone(),
            };
            store.entries.insert(m.name.clone(), (entry, self.iter));
        }
    }

    /// Ends a scrape. `flush` (after a successful one) forgets entries not
    /// seen in it; so does a cache that grew past twice its last successful
    /// size plus 1,000 (label churn in failing scrapes).
    pub fn iter_done(&mut self, flush: bool) {
        let metadata_len = self.metadata.lock().entries.len();
        let count = self.series.len() + self.dropped.len() + metadata_len;
        let flush = if flush {
            self.successful_count = count;
            true
        } else {
            let forced = count > self.successful_count * 2 + 1000;
            self.forced_flushes += u64::from(forced);
            forced
        };
        if flush {
            let iter = self.iter;
            self.series.retain(|_, e| e.last_iter == iter);
            self.dropped.retain(|_, i| *i == iter);
            self.metadata
                .lock()
                .entries
                .retain(|_, (_, seen)| iter - *seen <= METADATA_KEEP_SCRAPES);
        }
        self.tracked_now = None;
        self.iter += 1;
    }
}
