//! A target's scrape cache: how the body spelt a series → the label set
//! stored (so that a known series' labels are not even read, and target
//! labels and metric relabelling are applied once per series, not at every
//! scrape), the series relabelling dropped, the series of the current and
//! previous scrape (for staleness), and the metadata of its families.
//!
//! A lean cache (agent mode, where memory matters more than CPU) holds no
//! series at all: every scrape's labels are built again, and staleness
//! keeps only the hashes of the last scrape's series and their labels
//! compressed, rewritten only when that set changes.

use std::sync::Arc;

use cairn_model::{Label, Labels, SharedEncodedLabels, WireLabels};
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
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
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
    /// Set in a lean cache, which keeps `series` and `dropped` empty.
    lean: Option<Box<LeanTracking>>,
    /// Series owed a staleness marker by the first scrape unless it tracks
    /// them (see [`ScrapeCache::inherit`]).
    inherited: Vec<SharedEncodedLabels>,
}

/// A lean cache's staleness: the series tracked in the previous scrape as
/// sorted hashes of their labels in remote write's form ([`labels_hash`]),
/// with those encodings compressed
/// (rewritten only when the set changes, so a steady target costs no
/// compression); and which of them this scrape tracked, with the encodings
/// of the series it tracked that the previous one lacked.
#[derive(Default)]
struct LeanTracking {
    previous: Vec<u64>,
    /// zstd frame of the encodings, each after its length as u32 LE.
    previous_labels: Vec<u8>,
    /// Which of `previous` this scrape tracked: one bit each, by index.
    tracked: Vec<u64>,
    tracked_count: usize,
    /// Tracked in this scrape and not in the previous one: hashes and
    /// length-prefixed encodings.
    added: HashSet<u64>,
    added_labels: Vec<u8>,
}

/// A lean cache's name for a series: the hash of its labels in remote
/// write's form ([`WireLabels`]), the form agent mode forwards them in.
pub(crate) fn labels_hash(wire: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(wire)
}

/// A label set in a lean cache's form: remote write's.
fn wire_bytes(lset: &SharedEncodedLabels) -> Vec<u8> {
    let mut out = Vec::new();
    WireLabels::of_encoded(lset.get(), &mut out);
    out
}

/// A series looked up in a lean cache: its hash and its place among the
/// previous scrape's series, if it was there.
#[derive(Clone, Copy)]
pub(crate) struct LeanSeries {
    hash: u64,
    previous: Option<usize>,
}

impl LeanSeries {
    /// Whether the last scrape did not track it.
    pub fn is_new(&self) -> bool {
        self.previous.is_none()
    }
}

impl LeanTracking {
    fn lookup(&self, hash: u64) -> LeanSeries {
        LeanSeries {
            hash,
            previous: self.previous.binary_search(&hash).ok(),
        }
    }

    fn tracked_now(&self, s: LeanSeries) -> bool {
        match s.previous {
            Some(i) => self.tracked.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0),
            None => self.added.contains(&s.hash),
        }
    }

    /// Tracks the series whose label encoding is `bytes`.
    fn track(&mut self, s: LeanSeries, bytes: &[u8]) {
        match s.previous {
            Some(i) => {
                if let Some(w) = self.tracked.get_mut(i / 64)
                    && *w & (1 << (i % 64)) == 0
                {
                    *w |= 1 << (i % 64);
                    self.tracked_count += 1;
                }
            }
            None => {
                if self.added.insert(s.hash) {
                    self.added_labels.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                    self.added_labels.extend_from_slice(bytes);
                }
            }
        }
    }

    /// The previous scrape's encodings of the series `keep` picks (by
    /// their index), length-prefixed.
    fn previous_encodings(&self, keep: impl Fn(usize) -> bool, out: &mut Vec<u8>) {
        if self.previous.is_empty() {
            return;
        }
        let Ok(raw) = zstd::stream::decode_all(self.previous_labels.as_slice()) else {
            tracing::error!("a scrape cache's compressed labels do not decompress: staleness markers are lost");
            return;
        };
        let mut rest = raw.as_slice();
        while let Some((len, tail)) = rest.split_first_chunk::<4>() {
            let len = u32::from_le_bytes(*len) as usize;
            let Some((bytes, tail)) = (len <= tail.len()).then(|| tail.split_at(len)) else {
                break;
            };
            rest = tail;
            if self.previous.binary_search(&labels_hash(bytes)).is_ok_and(&keep) {
                out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                out.extend_from_slice(bytes);
            }
        }
    }

    fn is_tracked(&self, i: usize) -> bool {
        self.tracked.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// Series tracked in the previous scrape and not in this one, with
    /// their labels from the compressed encodings.
    fn stale(&mut self) -> Vec<SharedEncodedLabels> {
        if self.tracked_count == self.previous.len() {
            return Vec::new();
        }
        let mut gone = Vec::new();
        self.previous_encodings(|i| !self.is_tracked(i), &mut gone);
        decode_encodings(&gone).collect()
    }

    /// Ends a scrape: its series become the previous ones.
    fn rotate(&mut self) {
        if !self.added.is_empty() || self.tracked_count != self.previous.len() {
            let mut now_labels = Vec::new();
            self.previous_encodings(|i| self.is_tracked(i), &mut now_labels);
            now_labels.extend_from_slice(&self.added_labels);
            let mut now: Vec<u64> = (0..self.previous.len())
                .filter(|&i| self.is_tracked(i))
                .map(|i| self.previous[i])
                .chain(self.added.iter().copied())
                .collect();
            now.sort_unstable();
            self.previous_labels = zstd::bulk::compress(&now_labels, 1).unwrap_or_default();
            self.previous_labels.shrink_to_fit();
            now.shrink_to_fit();
            self.previous = now;
        }
        // Per scrape, not kept between scrapes: a target's memory is its
        // hashes, compressed labels and one bit a series.
        self.tracked.clear();
        self.tracked.resize(self.previous.len().div_ceil(64), 0);
        self.tracked_count = 0;
        self.added = HashSet::default();
        self.added_labels = Vec::new();
    }
}

/// The label sets of length-prefixed [`WireLabels`].
fn decode_encodings(mut rest: &[u8]) -> impl Iterator<Item = SharedEncodedLabels> + '_ {
    std::iter::from_fn(move || {
        loop {
            let (len, tail) = rest.split_first_chunk::<4>()?;
            let len = u32::from_le_bytes(*len) as usize;
            let (bytes, tail) = (len <= tail.len()).then(|| tail.split_at(len))?;
            rest = tail;
            if let Ok(labels) = WireLabels::new(bytes) {
                return Some(SharedEncodedLabels::new(&labels.decode()));
            }
        }
    })
}

impl ScrapeCache {
    /// A cache; `lean` holds no series (see the module's documentation).
    pub fn new(lean: bool) -> Self {
        Self {
            lean: lean.then(Box::default),
            ..Self::default()
        }
    }

    /// Owes `series` (another process's last scrape of the target) a
    /// staleness marker from this new cache's first scrape, unless that
    /// scrape tracks them.
    pub fn inherit(&mut self, series: Vec<SharedEncodedLabels>) {
        debug_assert_eq!(self.iter, 0, "only a new cache inherits");
        self.inherited = series;
    }

    /// Whether the cache holds no series: keys mean nothing to it, and
    /// every series' labels are needed.
    pub fn is_lean(&self) -> bool {
        self.lean.is_some()
    }

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

    /// Caches a series appended in this scrape; whether it is new to the
    /// cache (in a lean one: whether the last scrape did not track it).
    pub fn add(&mut self, key: SeriesKey, lset: SharedEncodedLabels) -> bool {
        if let Some(lean) = &self.lean {
            return lean.lookup(labels_hash(&wire_bytes(&lset))).is_new();
        }
        self.series.insert(
            key,
            CacheEntry {
                lset,
                last_iter: self.iter,
                tracked_iter: NEVER,
            },
        );
        true
    }

    /// Marks the series `lset` under `key` (in the cache) appended in this
    /// scrape with its staleness tracked.
    pub fn track(&mut self, key: SeriesKey, lset: &SharedEncodedLabels) {
        if let Some(lean) = &mut self.lean {
            let bytes = wire_bytes(lset);
            lean.track(lean.lookup(labels_hash(&bytes)), &bytes);
            return;
        }
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
        if let Some(lean) = &self.lean {
            return lean.tracked_now(lean.lookup(labels_hash(&wire_bytes(lset))));
        }
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

    /// In a lean cache: the series whose encoding hashes to `hash` ([`labels_hash`]).
    pub fn lean_lookup(&self, hash: u64) -> Option<LeanSeries> {
        self.lean.as_ref().map(|lean| lean.lookup(hash))
    }

    /// In a lean cache: whether the series was tracked in this scrape already.
    pub fn lean_tracked_now(&self, s: LeanSeries) -> bool {
        self.lean.as_ref().is_some_and(|lean| lean.tracked_now(s))
    }

    /// In a lean cache: tracks the series, whose encoding is `bytes`, in this scrape.
    pub fn lean_track(&mut self, s: LeanSeries, bytes: &[u8]) {
        if let Some(lean) = &mut self.lean {
            lean.track(s, bytes);
        }
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
        if self.lean.is_none() {
            self.dropped.insert(key, self.iter);
        }
    }

    /// Series tracked in the previous scrape (or inherited) and missing from this one.
    pub fn stale(&mut self) -> Vec<SharedEncodedLabels> {
        let mut gone = self.previous_missing();
        // Kept until the scrape ends: a scrape whose markers failed to
        // write falls back to an empty one, which asks again.
        let inherited = self.inherited.clone();
        gone.extend(inherited.into_iter().filter(|l| !self.tracked_in_this_scrape(l)));
        gone
    }

    fn previous_missing(&mut self) -> Vec<SharedEncodedLabels> {
        if let Some(lean) = &mut self.lean {
            return lean.stale();
        }
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
        if let Some(lean) = &mut self.lean {
            lean.rotate();
        }
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
        self.inherited = Vec::new();
        self.iter += 1;
    }
}
