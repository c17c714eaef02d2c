//! A target's scrape cache: exposed label set → stored label set (so that
//! target labels and metric relabelling are applied once per series, not at
//! every scrape), the series relabelling dropped, the series of the current
//! and previous scrape (for staleness), and the metadata of its families.

use std::sync::Arc;

use cairn_model::{Label, Labels};
use cairn_protocols::exposition::FamilyMetadata as ExposedMetadata;
use foldhash::{HashMap, HashSet};
use parking_lot::Mutex;

use crate::target::{FamilyMetadata, MetadataStore};

pub(crate) struct CacheEntry {
    /// The label set stored.
    pub lset: Arc<Labels>,
    /// The scrape it was last seen in.
    pub last_iter: u64,
}

/// How the cache knows a scraped series: its exposed labels and, with
/// `honor_labels`, the target's label names it exposed with an empty value
/// (those keep the target's label off the series, so `m{job=""}` and `m`
/// are stored apart).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ExposedKey<'a> {
    pub labels: &'a Labels,
    /// Sorted by name; empty for nearly every series.
    pub honoured_empty: &'a [Label],
}

/// Values by [`ExposedKey`]. Series without honoured empty labels, nearly
/// all of them, are found by their labels alone, without allocating.
pub(crate) struct ByExposed<V> {
    plain: HashMap<Labels, V>,
    with_empty: HashMap<Labels, Vec<(Vec<Label>, V)>>,
}

impl<V> Default for ByExposed<V> {
    fn default() -> Self {
        Self {
            plain: HashMap::default(),
            with_empty: HashMap::default(),
        }
    }
}

impl<V> ByExposed<V> {
    pub fn get_mut(&mut self, key: ExposedKey<'_>) -> Option<&mut V> {
        if key.honoured_empty.is_empty() {
            return self.plain.get_mut(key.labels);
        }
        self.with_empty
            .get_mut(key.labels)?
            .iter_mut()
            .find(|(empty, _)| empty.as_slice() == key.honoured_empty)
            .map(|(_, v)| v)
    }

    pub fn insert(&mut self, key: ExposedKey<'_>, value: V) {
        if key.honoured_empty.is_empty() {
            self.plain.insert(key.labels.clone(), value);
            return;
        }
        if let Some(v) = self.get_mut(key) {
            *v = value;
            return;
        }
        self.with_empty
            .entry(key.labels.clone())
            .or_default()
            .push((key.honoured_empty.to_vec(), value));
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&V) -> bool) {
        self.plain.retain(|_, v| keep(v));
        self.with_empty.retain(|_, variants| {
            variants.retain(|(_, v)| keep(v));
            !variants.is_empty()
        });
    }

    pub fn len(&self) -> usize {
        self.plain.len() + self.with_empty.values().map(Vec::len).sum::<usize>()
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
    pub series: ByExposed<CacheEntry>,
    pub dropped: ByExposed<u64>,
    /// Series appended without an own timestamp in this scrape and the last.
    pub current: HashSet<Arc<Labels>>,
    pub previous: HashSet<Arc<Labels>>,
    pub metadata: Arc<Mutex<MetadataStore>>,
}

impl ScrapeCache {
    /// The entry of an exposed label set, marked seen; and whether it was
    /// already seen in this scrape.
    pub fn get(&mut self, exposed: ExposedKey<'_>) -> Option<(Arc<Labels>, bool)> {
        let iter = self.iter;
        self.series.get_mut(exposed).map(|e| {
            let already = e.last_iter == iter;
            e.last_iter = iter;
            (e.lset.clone(), already)
        })
    }

    pub fn add(&mut self, exposed: ExposedKey<'_>, lset: Arc<Labels>) {
        self.series.insert(
            exposed,
            CacheEntry {
                lset,
                last_iter: self.iter,
            },
        );
    }

    pub fn is_dropped(&mut self, exposed: ExposedKey<'_>) -> bool {
        match self.dropped.get_mut(exposed) {
            Some(iter) => {
                *iter = self.iter;
                true
            }
            None => false,
        }
    }

    pub fn add_dropped(&mut self, exposed: ExposedKey<'_>) {
        self.dropped.insert(exposed, self.iter);
    }

    /// Series of the previous scrape missing from this one.
    pub fn stale(&self) -> impl Iterator<Item = &Arc<Labels>> {
        self.previous.iter().filter(|l| !self.current.contains(*l))
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
            self.series.retain(|e| e.last_iter == iter);
            self.dropped.retain(|i| *i == iter);
            self.metadata
                .lock()
                .entries
                .retain(|_, (_, seen)| iter - *seen <= METADATA_KEEP_SCRAPES);
        }
        std::mem::swap(&mut self.previous, &mut self.current);
        self.current.clear();
        self.iter += 1;
    }
}
