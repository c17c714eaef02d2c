//! A partition's series index: which series have samples in this day, their
//! labels, and postings from label pairs to series.
//!
//! Held in memory per open partition (≈ labels bytes + ~40 bytes per series;
//! the labels of a series that was also in the day before are that day's,
//! shared), persisted as immutable, checksummed segment files (docs/format/index.md)
//! that hold the series added since the previous flush. Postings are rebuilt
//! when a partition is opened. Bounding the index by day means a query over
//! recent data never touches series that died long ago, and retention drops
//! the index with its partition.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::hash::RandomState;
use std::io::Write;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use cairn_codec::varint::{MAX_UVARINT_LEN, get_uvarint, put_uvarint, uvarint_len};
use cairn_model::{EncodedLabels, Labels, Matcher};
use cairn_storage::StorageError;
use hashbrown::HashTable;
use roaring::RoaringBitmap;

/// Segments written today: the entries as one zstd frame.
const MAGIC: &[u8; 8] = b"CAIRNIX2";
/// Segments of the first format: the same entries uncompressed. Still read.
const MAGIC_V1: &[u8; 8] = b"CAIRNIX1";
/// Label sets of one fleet repeat almost everything but an instance name;
/// level 3 gets most of what higher levels would, at flush-time speed.
const SEGMENT_ZSTD_LEVEL: i32 = 3;
/// A segment claiming to expand more than this is refused unread: it bounds
/// what a corrupt length can make the loader allocate.
const MAX_SEGMENT_EXPANSION: u64 = 1024;
/// How much of a segment's entry stream is handed to the compressor at once.
const STREAM_CHUNK: usize = 1 << 16;

#[derive(Clone, Copy)]
struct Entry {
    id: u64,
    /// Which of `chunks` holds the labels, or [`TAIL`].
    chunk: u32,
    /// Where the labels' uvarint length prefix starts in that chunk.
    at: u32,
}

/// Label encodings, each behind its uvarint length. A `Vec` behind the
/// `Arc`, not a slice: sealing moves the tail in, where making a slice of it
/// copied all of a day's labels when a day was loaded, and a flush's at every flush.
type Chunk = Arc<Vec<u8>>;

/// A series' labels in a sealed chunk: the chunk and the offset in it.
type SealedLabels<'a> = (&'a Chunk, u32);

/// `Entry::chunk` of labels still in the growing tail.
const TAIL: u32 = u32::MAX;

/// Local numbers (positions in `entries`) are dense u32s, so postings are
/// compact roaring bitmaps; series ids are the stable 64-bit identities.
#[derive(Default)]
pub struct PartitionIndex {
    /// Label encodings, each behind its uvarint length, in immutable chunks
    /// shared with the next day's index: a series that lives on past
    /// midnight keeps one copy of its labels, not one per day (a live
    /// instance always holds two days; the labels are half of a day's index).
    chunks: Vec<Chunk>,
    /// Labels of series added since the last [`Self::seal_labels`].
    tail: Vec<u8>,
    entries: Vec<Entry>,
    /// `entries[sealed..]` have their labels in `tail`.
    sealed: usize,
    /// Series id → local number, holding only the local number: the id is
    /// in `entries`, and being made of hashes it needs only a multiply to
    /// spread its bits ([`slot_hash`]). 5 bytes a slot, where a map of
    /// (u64, u32) took 17 (~25 B per series at 500k series, a tenth of the
    /// steady RSS).
    by_id: HashTable<u32>,
    /// Some ids are [`legacy_id`]s (written before [`series_hash`]): a
    /// lookup that misses its preferred id tries that one too.
    legacy_ids: bool,
    /// `entry_ref` allocates a name's key only when the name is new.
    postings: Postings,
    /// Series that are not deleted.
    live: RoaringBitmap,
    /// `entries[..persisted]` are in segment files already.
    persisted: usize,
    /// Raised whenever the live series change (added, deleted, revived).
    version: u64,
}

/// The id of local number `l`.
fn id_at(entries: &[Entry], l: u32) -> u64 {
    entries.get(l as usize).map_or(0, |e| e.id)
}

/// `by_id`'s hash of an id. Ids share their top bits per metric
/// ([`series_hash`]), which hashbrown would use as every slot's tag; a
/// multiply by an odd constant moves all bits into the top ones and keeps
/// the low ones (the slot number) those of the labels' hash.
fn slot_hash(id: u64) -> u64 {
    id.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn slot_hash_at(entries: &[Entry], l: u32) -> u64 {
    slot_hash(id_at(entries, l))
}

/// A chunk of `bytes`, without the spare capacity they grew with.
fn sealed_chunk(mut bytes: Vec<u8>) -> Chunk {
    bytes.shrink_to_fit();
    Arc::new(bytes)
}

/// Adds `locals` (ascending) to `bitmap`, at its end (no search) when they
/// are all larger than what it holds, as new series' numbers are.
fn add_sorted(bitmap: &mut RoaringBitmap, locals: &[u32]) {
    if bitmap.append(locals.iter().copied()).is_err() {
        bitmap.extend(locals.iter().copied());
    }
}

type Postings = hashbrown::HashMap<String, BTreeMap<Box<str>, RoaringBitmap>, RandomState>;

/// A label's name and value, as encoded.
type RawPair<'a> = (&'a [u8], &'a [u8]);

/// The postings of many series added at once (loading a segment). Each
/// distinct pair's numbers are gathered first and appended to its bitmap in
/// one go: a series costs one hash probe per label, or none where a label
/// repeats the series before's (a target's series arrive together), instead
/// of a map search, UTF-8 checks and a bitmap append per label.
#[derive(Default)]
struct PostingsBatch<'a> {
    slots: HashMap<RawPair<'a>, usize, foldhash::fast::RandomState>,
    lists: Vec<(RawPair<'a>, Vec<u32>)>,
    /// The slot of each label (by position) of the series added last.
    previous: Vec<usize>,
}

impl<'a> PostingsBatch<'a> {
    /// The postings of `(local number, labels)` pairs, numbers ascending.
    fn of(series: impl IntoIterator<Item = (u32, EncodedLabels<'a>)>) -> Self {
        let mut postings = Self::default();
        for (local, labels) in series {
            postings.add(local, labels);
        }
        postings
    }

    /// `local` must be larger than every number added before.
    fn add(&mut self, local: u32, labels: EncodedLabels<'a>) {
        for (position, pair) in labels.raw_pairs().enumerate() {
            let slot = match self.previous.get(position) {
                Some(&slot) if self.lists[slot].0 == pair => slot,
                _ => {
                    let next = self.lists.len();
                    let slot = *self.slots.entry(pair).or_insert(next);
                    if slot == next {
                        self.lists.push((pair, Vec::new()));
                    }
                    match self.previous.get_mut(position) {
                        Some(previous) => *previous = slot,
                        None => self.previous.push(slot),
                    }
                    slot
                }
            };
            self.lists[slot].1.push(local);
        }
    }

    fn add_to(self, postings: &mut Postings) {
        for ((name, value), locals) in self.lists {
            // The encodings were checked canonical: names and values are UTF-8.
            let (Ok(name), Ok(value)) = (std::str::from_utf8(name), std::str::from_utf8(value)) else {
                continue;
            };
            let values = postings.entry_ref(name).or_default();
            match values.get_mut(value) {
                Some(bitmap) => add_sorted(bitmap, &locals),
                None => {
                    let mut bitmap = RoaringBitmap::new();
                    add_sorted(&mut bitmap, &locals);
                    values.insert(value.into(), bitmap);
                }
            }
        }
    }
}

/// The label encoding whose length prefix starts at `at` in `chunk`.
fn labels_at(chunk: &[u8], at: u32) -> &[u8] {
    let from = chunk.get(at as usize..).unwrap_or_default();
    match get_uvarint(from) {
        Ok((len, rest)) => rest.get(..len as usize).unwrap_or_default(),
        Err(_) => &[],
    }
}

/// Bits of a preferred series id that hash its metric name.
const METRIC_ID_BITS: u32 = 20;
const METRIC_ID_MASK: u64 = !(u64::MAX >> METRIC_ID_BITS);

/// The preferred series id of a canonical label encoding: its top
/// [`METRIC_ID_BITS`] hash the metric name, the rest all the labels. The
/// series of one metric are so neighbours in id order, and parts keep
/// blocks in id order: a selector finds and reads its series in one region
/// of each part instead of all over it (VictoriaMetrics' series ids begin
/// with the metric name's for the same reason). The labels' bits are the
/// top of [`cairn_storage::Shard::hash_encoded`], whose ranges are the
/// shards of a select: a shard's series are neighbours too. On a collision
/// the partition probes on from it (ids stay unique per partition).
pub fn series_hash(encoded: &[u8]) -> u64 {
    metric_id_bits(encoded) | (xxhash_rust::xxh3::xxh3_64(encoded) >> METRIC_ID_BITS)
}

fn metric_id_bits(encoded: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(Labels::encoded_metric_name(encoded)) & METRIC_ID_MASK
}

/// The preferred id of the first format: the labels' hash alone. Data
/// written so is still found ([`PartitionIndex::lookup`]).
fn legacy_id(encoded: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(encoded)
}

impl PartitionIndex {
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Releases spare capacity (up to half of each growing buffer). A no-op
    /// when already tight.
    pub fn shrink_to_fit(&mut self) {
        self.tail.shrink_to_fit();
        self.entries.shrink_to_fit();
        let entries = &self.entries;
        self.by_id.shrink_to_fit(|&l| slot_hash_at(entries, l));
    }

    /// Moves the labels of series added since the last call out of the
    /// growing tail into an immutable chunk, except those `earlier` (the
    /// index of an earlier day) holds already: their entries point into
    /// its chunk instead, which this index then shares. A chunk is shared
    /// only when this index uses at least half of its bytes (or holds it
    /// already), so a few long-lived series cannot keep many mostly dead
    /// chunks alive: an index never holds more than twice its labels.
    /// Returns how many series now share labels with `earlier`.
    pub fn seal_labels(&mut self, earlier: Option<&PartitionIndex>) -> usize {
        if self.sealed == self.entries.len() {
            return 0;
        }
        let tail = std::mem::take(&mut self.tail);
        let found: Vec<Option<SealedLabels<'_>>> = self.entries[self.sealed..]
            .iter()
            .map(|e| earlier.and_then(|ix| ix.sealed_labels(e.id, labels_at(&tail, e.at))))
            .collect();
        if found.iter().all(Option::is_none) {
            // The tail is already a chunk of these entries' labels, in order.
            drop(found);
            let number = self.chunks.len() as u32;
            for e in &mut self.entries[self.sealed..] {
                e.chunk = number;
            }
            self.chunks.push(sealed_chunk(tail));
            self.sealed = self.entries.len();
            return 0;
        }
        // Chunk (by address) → this index's number for it, for chunks it
        // holds or will; and bytes of each other chunk this seal would use.
        let mut numbers: HashMap<*const u8, u32> = self
            .chunks
            .iter()
            .enumerate()
            .map(|(n, c)| (c.as_ptr(), n as u32))
            .collect();
        let mut used: HashMap<*const u8, usize> = HashMap::new();
        for (chunk, at) in found.iter().flatten() {
            // The labels and their length prefix, of a byte or two.
            let len = labels_at(chunk, *at).len();
            *used.entry(chunk.as_ptr()).or_default() += len + if len < 128 { 1 } else { 2 };
        }
        for (chunk, _) in found.iter().flatten() {
            let worth = used.get(&chunk.as_ptr()).is_some_and(|&u| 2 * u >= chunk.len());
            if worth && !numbers.contains_key(&chunk.as_ptr()) {
                numbers.insert(chunk.as_ptr(), self.chunks.len() as u32);
                self.chunks.push(Arc::clone(chunk));
            }
        }
        let own_number = self.chunks.len() as u32;
        let mut own = Vec::new();
        let mut shared = 0;
        for (e, found) in self.entries[self.sealed..].iter_mut().zip(&found) {
            match found
                .as_ref()
                .and_then(|(c, at)| Some((*numbers.get(&c.as_ptr())?, *at)))
            {
                Some((number, at)) => {
                    (e.chunk, e.at) = (number, at);
                    shared += 1;
                }
                None => {
                    let encoded = labels_at(&tail, e.at);
                    (e.chunk, e.at) = (own_number, own.len() as u32);
                    put_uvarint(&mut own, encoded.len() as u64);
                    own.extend_from_slice(encoded);
                }
            }
        }
        if !own.is_empty() {
            self.chunks.push(sealed_chunk(own));
        }
        self.sealed = self.entries.len();
        shared
    }

    /// The chunk and offset of `id`'s labels when they are `encoded` and sealed.
    fn sealed_labels(&self, id: u64, encoded: &[u8]) -> Option<SealedLabels<'_>> {
        let e = self.entries.get(self.local_of(id)? as usize)?;
        let chunk = self.chunks.get(e.chunk as usize)?;
        (labels_at(chunk, e.at) == encoded).then_some((chunk, e.at))
    }

    /// Bytes of label encodings this index holds (shared chunks included),
    /// and how many of them sit in chunks it shares with another index.
    #[cfg(test)]
    pub fn label_bytes(&self) -> (usize, usize) {
        let all = self.chunks.iter().map(|c| c.len()).sum::<usize>() + self.tail.len();
        let shared = self
            .chunks
            .iter()
            .filter(|c| Arc::strong_count(c) > 1)
            .map(|c| c.len())
            .sum();
        (all, shared)
    }

    /// Series known to this partition, deleted ones included.
    pub fn series_count(&self) -> usize {
        self.entries.len()
    }

    /// Whether any series of this day is marked deleted.
    pub fn has_deleted(&self) -> bool {
        self.live.len() != self.entries.len() as u64
    }

    pub fn live(&self) -> &RoaringBitmap {
        &self.live
    }

    /// Finds the series with these canonical labels, probing from `hash`
    /// (their [`series_hash`]). Returns its id and local number, or the id a
    /// new series would get.
    pub fn lookup(&self, hash: u64, encoded: &[u8]) -> Result<(u64, u32), u64> {
        match self.probe(hash, encoded) {
            Err(free) if self.legacy_ids => self.probe(legacy_id(encoded), encoded).or(Err(free)),
            found => found,
        }
    }

    /// [`Self::lookup`] of many series, in their order; `None` for a series
    /// the index lacks. The lookups are independent, so they run a batch at a
    /// time in two short passes, the id table first and the labels second:
    /// in an index larger than the caches each lookup waits on dependent
    /// misses (table, entry, labels), and short passes let the processor
    /// overlap those of many series instead of waiting on each in turn.
    pub fn lookup_many<'a>(&self, series: impl IntoIterator<Item = (u64, &'a [u8])>) -> Vec<Option<(u64, u32)>> {
        const BATCH: usize = 256;
        let mut series = series.into_iter().peekable();
        let mut out = Vec::with_capacity(series.size_hint().0);
        let mut batch: Vec<(u64, &[u8])> = Vec::with_capacity(BATCH);
        let mut locals: Vec<Option<u32>> = Vec::with_capacity(BATCH);
        while series.peek().is_some() {
            batch.clear();
            batch.extend(series.by_ref().take(BATCH));
            locals.clear();
            locals.extend(batch.iter().map(|&(hash, _)| self.local_of(hash)));
            out.extend(batch.iter().zip(&locals).map(|(&(hash, encoded), &local)| match local {
                Some(l) if self.encoded(l) == encoded => Some((hash, l)),
                None if !self.legacy_ids => None,
                // A collision moved the series off its preferred id, or it may have a legacy one.
                _ => self.lookup(hash, encoded).ok(),
            }));
        }
        out
    }

    fn probe(&self, hash: u64, encoded: &[u8]) -> Result<(u64, u32), u64> {
        let mut id = hash;
        loop {
            match self.local_of(id) {
                None => return Err(id),
                Some(local) if self.encoded(local) == encoded => return Ok((id, local)),
                // A 64-bit hash collision: linear probing keeps ids unique per partition.
                Some(_) => id = id.wrapping_add(1),
            }
        }
    }

    /// Fails if adding `new_series` would exceed what one day's index can
    /// number or address. A commit checks before its WAL write, so applying
    /// it cannot fail for this reason after the write.
    pub fn check_room(&self, new_series: &[(u64, &[u8])]) -> Result<(), StorageError> {
        // Local numbers are u32 and one value means "not yet known" (`UNKNOWN_LOCAL`).
        if self.entries.len() as u64 + new_series.len() as u64 > u64::from(crate::head::UNKNOWN_LOCAL) {
            return Err(StorageError::LimitExceeded(
                "more than 2^32 - 1 series in one day".into(),
            ));
        }
        // Each label encoding is stored after a varint length of at most 10 bytes.
        let new_bytes: u64 = new_series.iter().map(|(_, e)| e.len() as u64 + 10).sum();
        if self.tail.len() as u64 + new_bytes > u64::from(u32::MAX) {
            return Err(StorageError::LimitExceeded(
                "more than 4 GiB of new labels in one flush".into(),
            ));
        }
        Ok(())
    }

    /// Adds a series (or revives a deleted one). Returns its local number.
    pub fn insert(&mut self, id: u64, labels: EncodedLabels<'_>) -> Result<u32, StorageError> {
        if let Some(local) = self.local_of(id) {
            self.revive(local);
            return Ok(local);
        }
        let local = self.add_entry(id, labels)?;
        // Borrowed pairs, and keys allocated only when new.
        for (name, value) in labels.pairs() {
            let values = self.postings.entry_ref(name).or_default();
            match values.get_mut(value) {
                Some(bitmap) => add_sorted(bitmap, &[local]),
                None => {
                    let mut bitmap = RoaringBitmap::new();
                    add_sorted(&mut bitmap, &[local]);
                    values.insert(value.into(), bitmap);
                }
            }
        }
        add_sorted(&mut self.live, &[local]);
        Ok(local)
    }

    /// Adds a new series' entry, labels and id, but not its postings nor
    /// its place among the live series. Returns its local number.
    fn add_entry(&mut self, id: u64, labels: EncodedLabels<'_>) -> Result<u32, StorageError> {
        let encoded = labels.as_bytes();
        self.check_room(&[(id, encoded)])?;
        // Probing past the end of a metric's id range is as rare as a
        // 44-bit collision; such a series merely counts as legacy.
        if id & METRIC_ID_MASK != metric_id_bits(encoded) {
            self.legacy_ids = true;
        }
        let (local, at) = (self.entries.len() as u32, self.tail.len() as u32);
        self.entries.push(Entry { id, chunk: TAIL, at });
        put_uvarint(&mut self.tail, encoded.len() as u64);
        self.tail.extend_from_slice(encoded);
        let entries = &self.entries;
        self.by_id
            .insert_unique(slot_hash(id), local, |&l| slot_hash_at(entries, l));
        self.version += 1;
        Ok(local)
    }

    /// Makes a deleted series visible again (it was written after the delete).
    pub fn revive(&mut self, local: u32) {
        if self.live.insert(local) {
            self.version += 1;
        }
    }

    pub fn mark_deleted(&mut self, local: u32) {
        if self.live.remove(local) {
            self.version += 1;
        }
    }

    /// Changes whenever the set of live series does: what [`Self::select`]
    /// returned stays right while this is the same.
    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn local_of(&self, id: u64) -> Option<u32> {
        let entries = &self.entries;
        self.by_id.find(slot_hash(id), |&l| id_at(entries, l) == id).copied()
    }

    pub fn id_of(&self, local: u32) -> u64 {
        id_at(&self.entries, local)
    }

    pub fn encoded(&self, local: u32) -> &[u8] {
        let Some(e) = self.entries.get(local as usize) else {
            return &[];
        };
        let chunk = match e.chunk {
            TAIL => &self.tail[..],
            n => self.chunks.get(n as usize).map_or(&[][..], |c| &c[..]),
        };
        labels_at(chunk, e.at)
    }

    pub fn labels_of(&self, local: u32) -> Labels {
        // Chunks only ever hold encodings that decoded on insert.
        Labels::decode(self.encoded(local)).map(|(l, _)| l).unwrap_or_default()
    }

    /// Live series matching every matcher.
    pub fn select(&self, matchers: &[Matcher]) -> RoaringBitmap {
        // Positive, selective matchers first: they shrink the set the most.
        let mut ordered: Vec<&Matcher> = matchers.iter().collect();
        ordered.sort_by_key(|m| (m.matches_empty(), m.set_values().is_none()));
        // Starts from the first positive matcher's postings rather than a
        // copy of every live series.
        let mut result: Option<RoaringBitmap> = None;
        for m in ordered {
            if result.as_ref().is_some_and(RoaringBitmap::is_empty) {
                break;
            }
            let values = self.postings.get(m.name.as_str());
            if m.matches_empty() {
                let result = result.get_or_insert_with(|| self.live.clone());
                // Series lacking the label match; remove those whose value does not.
                if let Some(values) = values {
                    for (v, bm) in values {
                        if !m.matches(v) {
                            *result -= bm;
                        }
                    }
                }
            } else {
                let matching = self.matching_postings(m, values);
                match &mut result {
                    Some(result) => *result &= matching,
                    None => result = Some(matching & &self.live),
                }
            }
        }
        result.unwrap_or_else(|| self.live.clone())
    }

    fn matching_postings(&self, m: &Matcher, values: Option<&BTreeMap<Box<str>, RoaringBitmap>>) -> RoaringBitmap {
        let Some(values) = values else {
            return RoaringBitmap::new();
        };
        let mut out = RoaringBitmap::new();
        if let Some(set) = m.set_values() {
            for v in set {
                if let Some(bm) = values.get(v) {
                    out |= bm;
                }
            }
        } else if let Some(prefix) = m.literal_prefix() {
            for (v, bm) in values.range::<str, _>((std::ops::Bound::Included(prefix), std::ops::Bound::Unbounded)) {
                if !v.starts_with(prefix) {
                    break;
                }
                if m.matches(v) {
                    out |= bm;
                }
            }
        } else {
            for (v, bm) in values {
                if m.matches(v) {
                    out |= bm;
                }
            }
        }
        out
    }

    /// Label names used by `set` (all live series if `None`).
    pub fn label_names(&self, set: Option<&RoaringBitmap>, out: &mut BTreeSet<String>) {
        for (name, values) in &self.postings {
            if out.contains(name) {
                continue;
            }
            let used = values.values().any(|bm| match set {
                Some(s) => !bm.is_disjoint(s),
                None => !bm.is_disjoint(&self.live),
            });
            if used {
                out.insert(name.clone());
            }
        }
    }

    /// Values of label `name` among `set` (all live series if `None`).
    pub fn label_values(&self, name: &str, set: Option<&RoaringBitmap>, out: &mut BTreeSet<String>) {
        let Some(values) = self.postings.get(name) else {
            return;
        };
        let set = set.unwrap_or(&self.live);
        if (set.len() as usize) < values.len() / 4 {
            // Few series, many values: read the series' own labels instead.
            for local in set {
                if let Some(v) = self.labels_of(local).get(name) {
                    out.insert(v.to_string());
                }
            }
            return;
        }
        for (v, bm) in values {
            if !out.contains(v.as_ref()) && !bm.is_disjoint(set) {
                out.insert(v.to_string());
            }
        }
    }

    /// Writes the series added since the last call as a new segment file
    /// (tmp + fsync + rename). Returns false when there was nothing to write.
    pub fn persist_new(&mut self, dir: &Path, seq: u64) -> Result<bool, StorageError> {
        if self.persisted == self.entries.len() {
            return Ok(false);
        }
        let new = self.persisted..self.entries.len();
        let raw_len: usize = new
            .clone()
            .map(|local| {
                let len = self.encoded(local as u32).len();
                8 + uvarint_len(len as u64) + len
            })
            .sum();
        let count = new.len() as u64;
        // Streamed through the compressor: the entries of a flush that saw
        // many new series would be a large buffer uncompressed.
        let buf = encode_segment_streamed(raw_len as u64, count, |out| {
            let mut head = Vec::with_capacity(8 + MAX_UVARINT_LEN);
            for local in new {
                let enc = self.encoded(local as u32);
                head.clear();
                head.extend_from_slice(&self.entries[local].id.to_le_bytes());
                put_uvarint(&mut head, enc.len() as u64);
                out.write_all(&head)?;
                out.write_all(enc)?;
            }
            Ok(())
        })
        .map_err(StorageError::io("compress index segment", dir))?;
        let path = dir.join(segment_name(seq));
        write_atomically(&path, &buf)?;
        self.persisted = self.entries.len();
        Ok(true)
    }

    /// Loads one segment file written by [`Self::persist_new`].
    pub fn load_segment(&mut self, path: &Path) -> Result<(), StorageError> {
        let bytes = fs::read(path).map_err(StorageError::io("read", path))?;
        self.load_segment_bytes(&bytes, path)
    }

    fn load_segment_bytes(&mut self, bytes: &[u8], path: &Path) -> Result<(), StorageError> {
        let entries = decode_segment(bytes).map_err(|reason| StorageError::Corrupt {
            path: path.to_path_buf(),
            reason: reason.to_string(),
        })?;
        // Every entry is checked before any is added, so that a damaged
        // segment leaves the index as it was (and can be quarantined).
        let checked = entries
            .checked()
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|reason| StorageError::Corrupt {
                path: path.to_path_buf(),
                reason: reason.to_string(),
            })?;
        self.entries.reserve(checked.len());
        self.tail.reserve(entries.label_bytes());
        let ids = &self.entries;
        self.by_id.reserve(checked.len(), |&l| slot_hash_at(ids, l));
        let first_new = self.entries.len() as u32;
        // The postings are built on another core while the entries are added,
        // as if every entry were a new series, as a segment's always are;
        // should one not be, they are built again from what was added.
        let (postings, added) = rayon::join(
            || PostingsBatch::of((first_new..).zip(checked.iter().map(|(_, labels)| *labels))),
            || self.add_segment_entries(&checked),
        );
        let postings = match added? {
            None => postings,
            Some(locals) => PostingsBatch::of(
                locals
                    .into_iter()
                    .zip(&checked)
                    .filter_map(|(local, (_, labels))| Some((local?, *labels))),
            ),
        };
        postings.add_to(&mut self.postings);
        self.live.insert_range(first_new..self.entries.len() as u32);
        self.persisted = self.entries.len();
        Ok(())
    }

    /// Adds a segment's entries (but not their postings). `None` when each
    /// was a new series, numbered in order; else the local number each new
    /// one got (`None` for those already known, which are revived).
    fn add_segment_entries(
        &mut self,
        checked: &[(u64, EncodedLabels<'_>)],
    ) -> Result<Option<Vec<Option<u32>>>, StorageError> {
        let first_new = self.entries.len() as u32;
        let mut locals: Option<Vec<Option<u32>>> = None;
        for (i, &(id, labels)) in checked.iter().enumerate() {
            let local = match self.local_of(id) {
                Some(known) => {
                    self.revive(known);
                    None
                }
                None => Some(self.add_entry(id, labels)?),
            };
            match &mut locals {
                Some(locals) => locals.push(local),
                None if local.is_none() => {
                    let mut all = Vec::with_capacity(checked.len());
                    all.extend((first_new..).take(i).map(Some));
                    all.push(None);
                    locals = Some(all);
                }
                None => {}
            }
        }
        Ok(locals)
    }
}

/// A segment file holding `count` entries, `entries` being their stream
/// (`id: u64 LE | uvarint(len) | labels`, one after another).
pub fn encode_segment(entries: &[u8], count: u64) -> std::io::Result<Vec<u8>> {
    encode_segment_streamed(entries.len() as u64, count, |out| out.write_all(entries))
}

/// [`encode_segment`] for a stream of `raw_len` bytes that `write_entries`
/// writes, compressed as it comes, never held whole.
fn encode_segment_streamed(
    raw_len: u64,
    count: u64,
    write_entries: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<Vec<u8>> {
    let mut buf = MAGIC.to_vec();
    put_uvarint(&mut buf, raw_len);
    let mut frame = zstd::stream::write::Encoder::new(buf, SEGMENT_ZSTD_LEVEL)?;
    // The content size in the frame header, as a one-shot compression writes it.
    frame.include_contentsize(true)?;
    frame.set_pledged_src_size(Some(raw_len))?;
    let mut out = std::io::BufWriter::with_capacity(STREAM_CHUNK, frame);
    write_entries(&mut out)?;
    let mut buf = out.into_inner().map_err(|e| e.into_error())?.finish()?;
    buf.extend_from_slice(&count.to_le_bytes());
    buf.extend_from_slice(&cairn_codec::crc32c(&buf).to_le_bytes());
    buf.extend_from_slice(MAGIC);
    Ok(buf)
}

/// Loads a segment's bytes into a day's index as opening a partition does,
/// then into a second day's that shares labels with the first, and checks
/// that both read back every entry: the whole load path, for fuzzing.
/// Returns the entry count; panics only when the two days disagree (a bug).
pub fn check_segment(bytes: &[u8]) -> Result<usize, StorageError> {
    let path = Path::new("<fuzz>");
    let mut earlier = PartitionIndex::default();
    earlier.load_segment_bytes(bytes, path)?;
    earlier.seal_labels(None);
    let mut later = PartitionIndex::default();
    later.load_segment_bytes(bytes, path)?;
    later.seal_labels(Some(&earlier));
    assert_eq!(earlier.series_count(), later.series_count());
    for local in 0..later.series_count() as u32 {
        assert_eq!(earlier.encoded(local), later.encoded(local), "entry {local}");
        assert_eq!(later.local_of(later.id_of(local)), Some(local), "entry {local}");
    }
    Ok(later.series_count())
}

/// The entries of a decoded index segment.
pub struct SegmentEntries<'a> {
    /// The entry stream: borrowed from an uncompressed (v1) segment, else decompressed.
    raw: Cow<'a, [u8]>,
    /// Series id and where its label encoding lies in `raw`.
    entries: Vec<(u64, Range<usize>)>,
}

impl SegmentEntries<'_> {
    /// `(series id, canonical label encoding)` in the order written; each
    /// encoding is checked here, once (an error for one that is not canonical).
    pub fn iter(&self) -> impl Iterator<Item = Result<(u64, EncodedLabels<'_>), &'static str>> {
        self.entries.iter().map(|entry| self.check(entry))
    }

    /// What [`Self::iter`] yields, checked on every core (the checks are
    /// much of the CPU of loading a day's index, and restarts wait for it).
    pub fn checked(&self) -> Vec<Result<(u64, EncodedLabels<'_>), &'static str>> {
        use rayon::prelude::*;
        let mut out = Vec::new();
        self.entries
            .par_iter()
            .map(|entry| self.check(entry))
            .collect_into_vec(&mut out);
        out
    }

    /// Bytes of the entries' labels with their length prefixes (what the
    /// stream holds besides the 8-byte ids).
    fn label_bytes(&self) -> usize {
        self.raw.len().saturating_sub(8 * self.entries.len())
    }

    fn check(&self, (id, at): &(u64, Range<usize>)) -> Result<(u64, EncodedLabels<'_>), &'static str> {
        let labels =
            EncodedLabels::new(self.raw.get(at.clone()).unwrap_or_default()).map_err(|_| "undecodable labels")?;
        Ok((*id, labels))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Decodes an index segment, verifying its checksum and framing (the
/// label encodings are checked as [`SegmentEntries::iter`] yields them).
/// Never panics and never allocates more than a bounded multiple
/// of the input, whatever the bytes.
pub fn decode_segment(bytes: &[u8]) -> Result<SegmentEntries<'_>, &'static str> {
    let n = bytes.len();
    let compressed = bytes.starts_with(MAGIC) && bytes.ends_with(MAGIC);
    let v1 = bytes.starts_with(MAGIC_V1) && bytes.ends_with(MAGIC_V1);
    if n < 2 * MAGIC.len() + 12 || !(compressed || v1) {
        return Err("not an index segment (bad size or magic)");
    }
    let body_end = n - MAGIC.len() - 4;
    let crc = bytes.get(body_end..body_end + 4).and_then(|b| b.first_chunk::<4>());
    let body = bytes.get(..body_end).unwrap_or_default();
    if crc.map(|c| u32::from_le_bytes(*c)) != Some(cairn_codec::crc32c(body)) {
        return Err("checksum mismatch");
    }
    let count_at = body_end - 8;
    let count = bytes
        .get(count_at..body_end)
        .and_then(|b| b.first_chunk::<8>())
        .map(|c| u64::from_le_bytes(*c))
        .ok_or("missing count")?;
    let stored = bytes.get(MAGIC.len()..count_at).unwrap_or_default();
    let raw: Cow<'_, [u8]> = if compressed {
        let (raw_len, frame) = get_uvarint(stored).map_err(|_| "bad entries length")?;
        if raw_len > (frame.len() as u64).saturating_mul(MAX_SEGMENT_EXPANSION) {
            return Err("entries length impossible for the compressed size");
        }
        let raw = zstd::bulk::decompress(frame, raw_len as usize).map_err(|_| "undecompressable entries")?;
        if raw.len() as u64 != raw_len {
            return Err("entries length mismatch");
        }
        Cow::Owned(raw)
    } else {
        Cow::Borrowed(stored)
    };
    if count > raw.len() as u64 {
        return Err("count exceeds segment size");
    }
    let mut entries = Vec::with_capacity(count as usize);
    let mut src: &[u8] = &raw;
    for _ in 0..count {
        let (id, rest) = src.split_first_chunk::<8>().ok_or("truncated entry")?;
        let (len, rest) = get_uvarint(rest).map_err(|_| "bad label length")?;
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= rest.len())
            .ok_or("label overrun")?;
        let rest = rest.get(len..).unwrap_or_default();
        let at = raw.len() - rest.len() - len;
        entries.push((u64::from_le_bytes(*id), at..at + len));
        src = rest;
    }
    if !src.is_empty() {
        return Err("trailing bytes");
    }
    Ok(SegmentEntries { raw, entries })
}

/// Writes `bytes` to `path` so that a crash leaves either nothing or the whole file.
/// The file name of the index segment a flush into WAL segment `seq` writes.
pub fn segment_name(seq: u64) -> String {
    format!("index-{seq:020}.cidx")
}

/// The sequence number an index segment's file name carries; `None` for
/// any other file (a `.tmp` one included).
pub fn segment_seq(name: &str) -> Option<u64> {
    name.strip_prefix("index-")?.strip_suffix(".cidx")?.parse().ok()
}

pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StorageError> {
    write_atomically_with(path, |out| {
        out.write_all(bytes).map_err(StorageError::io("write", path))
    })
}

/// [`write_atomically`] for a file that `write` writes as it goes (through
/// a buffer), so it is never held whole. An error from `write` leaves no
/// file.
pub fn write_atomically_with<T>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<T, StorageError>,
) -> Result<T, StorageError> {
    place_atomically(path, |tmp| {
        let f = fs::File::create(tmp).map_err(StorageError::io("create", tmp))?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, f);
        let value = write(&mut out)?;
        let f = out
            .into_inner()
            .map_err(|e| StorageError::io("write", tmp)(e.into_error()))?;
        f.sync_all().map_err(StorageError::io("sync", tmp))?;
        Ok(value)
    })
}

/// Puts the file that `fill` writes, and syncs, at a temporary path in
/// the place of `path`, atomically: a crash or an error leaves the old
/// file or the new one whole, and an error leaves no temporary file.
pub fn place_atomically<T>(
    path: &Path,
    fill: impl FnOnce(&Path) -> Result<T, StorageError>,
) -> Result<T, StorageError> {
    let tmp = path.with_extension("tmp");
    let placed = fill(&tmp).and_then(|value| {
        fs::rename(&tmp, path).map_err(StorageError::io("rename", &tmp))?;
        Ok(value)
    });
    if placed.is_err() {
        // A full disk must not keep what a failed attempt wrote.
        let _ = fs::remove_file(&tmp);
    }
    let value = placed?;
    if let Some(dir) = path.parent() {
        crate::wal::sync_dir(dir)?;
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use cairn_model::MatchOp;

    use super::*;

    fn labels(encoded: &[u8]) -> EncodedLabels<'_> {
        EncodedLabels::new(encoded).unwrap()
    }

    fn add(ix: &mut PartitionIndex, pairs: &[(&str, &str)]) -> u64 {
        let enc = encode(pairs);
        let id = ix.lookup(series_hash(&enc), &enc).unwrap_err();
        ix.insert(id, labels(&enc)).unwrap();
        id
    }

    fn names(ix: &PartitionIndex, ms: &[Matcher]) -> Vec<String> {
        let mut v: Vec<String> = ix.select(ms).iter().map(|l| ix.labels_of(l).to_string()).collect();
        v.sort();
        v
    }

    #[test]
    fn a_metrics_series_ids_order_them_by_the_shard_hash() {
        // A select's shards are ranges of the shard hash: each must be one
        // run of the metric's ids, so ids order by that hash within a metric.
        let mut by_id: Vec<(u64, u64)> = (0..200)
            .map(|i| {
                let enc = encode(&[("__name__", "m"), ("instance", &i.to_string())]);
                (series_hash(&enc), cairn_storage::Shard::hash_encoded(&enc))
            })
            .collect();
        by_id.sort_unstable();
        assert!(
            by_id
                .windows(2)
                .all(|w| w[0].1 >> METRIC_ID_BITS <= w[1].1 >> METRIC_ID_BITS)
        );
        for count in [2, 3, 8] {
            let shard_of = |hash| {
                (0..count)
                    .find(|&index| cairn_storage::Shard::new(index, count).contains_hash(hash))
                    .unwrap()
            };
            let shards: Vec<usize> = by_id.iter().map(|&(_, hash)| shard_of(hash)).collect();
            assert!(shards.is_sorted(), "{count} shards: {shards:?}");
        }
    }

    #[test]
    fn index_selects_with_every_matcher_kind() {
        let mut ix = PartitionIndex::default();
        add(&mut ix, &[("__name__", "a"), ("job", "x")]);
        add(&mut ix, &[("__name__", "a"), ("job", "y")]);
        add(&mut ix, &[("__name__", "b")]);
        let m = |op, n: &str, v: &str| Matcher::new(op, n, v).unwrap();
        assert_eq!(names(&ix, &[m(MatchOp::Equal, "job", "x")]), vec![r#"a{job="x"}"#]);
        assert_eq!(
            names(&ix, &[m(MatchOp::NotEqual, "job", "x")]),
            vec![r#"a{job="y"}"#, "b"]
        );
        assert_eq!(names(&ix, &[m(MatchOp::RegexMatch, "job", "x|y")]).len(), 2);
        assert_eq!(
            names(
                &ix,
                &[m(MatchOp::RegexMatch, "__name__", "a.*"), m(MatchOp::Equal, "job", "")]
            )
            .len(),
            0
        );
        assert_eq!(names(&ix, &[m(MatchOp::RegexNoMatch, "job", ".+")]), vec!["b"]);
    }

    #[test]
    fn series_of_one_metric_get_neighbouring_ids() {
        let mut ix = PartitionIndex::default();
        let mut ids: Vec<(u64, &str)> = Vec::new();
        for host in 0..50 {
            for name in ["node_load1", "node_load5", "up"] {
                let id = add(&mut ix, &[("__name__", name), ("instance", &format!("h{host}"))]);
                ids.push((id, name));
            }
        }
        ids.sort();
        // In id order each metric's series form one run.
        let runs = ids.windows(2).filter(|w| w[0].1 != w[1].1).count() + 1;
        assert_eq!(runs, 3);
        assert!(!ix.legacy_ids);
    }

    /// Ids given before the metric-name prefix (the labels' hash alone)
    /// are still found, and new series there get preferred ids.
    #[test]
    fn legacy_ids_are_still_found() {
        let mut ix = PartitionIndex::default();
        let old = host_series(1);
        ix.insert(legacy_id(&old), labels(&old)).unwrap();
        assert!(ix.legacy_ids);
        assert_eq!(
            ix.lookup(series_hash(&old), &old),
            Ok((legacy_id(&old), ix.local_of(legacy_id(&old)).unwrap()))
        );
        let new = host_series(2);
        assert_eq!(ix.lookup(series_hash(&new), &new), Err(series_hash(&new)));

        let mut fresh = PartitionIndex::default();
        assert_eq!(fresh.lookup(series_hash(&old), &old), Err(series_hash(&old)));
        fresh.insert(series_hash(&old), labels(&old)).unwrap();
        assert!(!fresh.legacy_ids);
    }

    proptest::proptest! {
        /// Batched lookups agree with one lookup at a time: series at their
        /// preferred id, moved off it by a collision, or at a legacy id; asked
        /// for in any order, with repeats, across batch boundaries.
        #[test]
        fn lookup_many_agrees_with_lookup(
            placed in proptest::collection::vec((0usize..60, 0u8..3, 0usize..60), 0..60),
            asked in proptest::collection::vec(0usize..80, 0..700),
        ) {
            let mut ix = PartitionIndex::default();
            for (host, how, other) in placed {
                let enc = host_series(host);
                if ix.lookup(series_hash(&enc), &enc).is_ok() {
                    continue;
                }
                let mut id = match how {
                    0 => series_hash(&enc),
                    1 => legacy_id(&enc),
                    _ => series_hash(&host_series(other)),
                };
                while ix.local_of(id).is_some() {
                    id = id.wrapping_add(1);
                }
                ix.insert(id, labels(&enc)).unwrap();
            }
            let asked: Vec<Vec<u8>> = asked.into_iter().map(host_series).collect();
            let one_by_one: Vec<_> = asked.iter().map(|e| ix.lookup(series_hash(e), e).ok()).collect();
            let batched = ix.lookup_many(asked.iter().map(|e| (series_hash(e), e.as_slice())));
            proptest::prop_assert_eq!(batched, one_by_one);
        }
    }

    #[test]
    fn index_resolves_hash_collisions_by_probing() {
        let mut ix = PartitionIndex::default();
        let mut a = Vec::new();
        Labels::from_pairs([("__name__", "a")]).encode(&mut a);
        let mut b = Vec::new();
        Labels::from_pairs([("__name__", "b")]).encode(&mut b);
        // Pretend both hash to 7.
        ix.insert(7, labels(&a)).unwrap();
        assert_eq!(ix.lookup(7, &b), Err(8));
        ix.insert(8, labels(&b)).unwrap();
        assert_eq!(ix.lookup(7, &b).unwrap().0, 8);
        assert_eq!(ix.lookup(7, &a).unwrap().0, 7);
    }

    #[test]
    fn index_segments_persist_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let mut ix = PartitionIndex::default();
        let a = add(&mut ix, &[("__name__", "a")]);
        assert!(ix.persist_new(dir.path(), 1).unwrap());
        assert!(!ix.persist_new(dir.path(), 2).unwrap(), "nothing new");
        let b = add(&mut ix, &[("__name__", "b"), ("k", "v")]);
        assert!(ix.persist_new(dir.path(), 3).unwrap());
        let mut back = PartitionIndex::default();
        for seq in [1, 3] {
            back.load_segment(&dir.path().join(format!("index-{seq:020}.cidx")))
                .unwrap();
        }
        assert_eq!(back.len(), 2);
        assert_eq!(back.labels_of(back.local_of(a).unwrap()).to_string(), "a");
        assert_eq!(back.labels_of(back.local_of(b).unwrap()).to_string(), r#"b{k="v"}"#);
        // Every single-byte flip is detected.
        let path = dir.path().join(format!("index-{:020}.cidx", 3));
        let good = fs::read(&path).unwrap();
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x20;
            fs::write(&path, &bad).unwrap();
            assert!(PartitionIndex::default().load_segment(&path).is_err(), "flip at {at}");
        }
    }

    /// Loading segments builds the postings in batches; the index must be
    /// the one inserting series one by one built: same series, labels,
    /// live set and answers to every label pair, also for a pair that
    /// gains series in a later segment and a series deleted in between.
    #[test]
    fn loaded_segments_index_as_inserted_series_do() {
        let dir = tempfile::tempdir().unwrap();
        let mut ix = PartitionIndex::default();
        let series = |i: usize| {
            encode(&[
                ("__name__", ["cpu", "mem", "disk"][i % 3]),
                ("instance", &format!("h{}", i / 7)),
                ("job", "node"),
                ("mode", ["idle", "user"][i % 2]),
            ])
        };
        for i in 0..200 {
            add_encoded(&mut ix, &series(i));
        }
        ix.persist_new(dir.path(), 1).unwrap();
        ix.mark_deleted(5);
        for i in 200..300 {
            add_encoded(&mut ix, &series(i));
        }
        add_encoded(&mut ix, &encode(&[("__name__", "solo")]));
        ix.persist_new(dir.path(), 2).unwrap();
        let mut back = PartitionIndex::default();
        for seq in [1, 2] {
            back.load_segment(&dir.path().join(format!("index-{seq:020}.cidx")))
                .unwrap();
        }
        back.mark_deleted(5);
        assert_eq!(back.len(), ix.len());
        assert_eq!(back.live(), ix.live());
        for local in 0..ix.len() as u32 {
            assert_eq!(back.encoded(local), ix.encoded(local));
            assert_eq!(back.id_of(local), ix.id_of(local));
        }
        let mut names = BTreeSet::new();
        ix.label_names(None, &mut names);
        let mut back_names = BTreeSet::new();
        back.label_names(None, &mut back_names);
        assert_eq!(back_names, names);
        for name in &names {
            let mut values = BTreeSet::new();
            ix.label_values(name, None, &mut values);
            let mut back_values = BTreeSet::new();
            back.label_values(name, None, &mut back_values);
            assert_eq!(back_values, values);
            for value in &values {
                let m = [Matcher::new(MatchOp::Equal, name, value).unwrap()];
                assert_eq!(back.select(&m), ix.select(&m), "{name}={value}");
                assert!(!ix.select(&m).is_empty());
            }
        }
    }

    /// A segment that repeats series already known (the index revives them,
    /// adding no entry) indexes its new ones as inserting them does: the
    /// postings built alongside the entries are rebuilt for what was added.
    #[test]
    fn a_segment_repeating_known_series_indexes_only_its_new_ones() {
        let segment = |hosts: &[usize]| segment_of(&hosts.iter().map(|&h| host_series(h)).collect::<Vec<_>>());
        let mut back = PartitionIndex::default();
        let path = Path::new("<test>");
        back.load_segment_bytes(&segment(&[0, 1, 2]), path).unwrap();
        back.load_segment_bytes(&segment(&[3, 1, 4, 3, 5]), path).unwrap();
        let mut ix = PartitionIndex::default();
        add_hosts(&mut ix, 0..6);
        assert_eq!(back.len(), ix.len());
        assert_eq!(back.live(), ix.live());
        for host in 0..7 {
            let instance = format!("host-{host:05}:9100");
            let m = [Matcher::new(MatchOp::Equal, "instance", &instance).unwrap()];
            assert_eq!(back.select(&m), ix.select(&m), "{instance}");
        }
        let all = [Matcher::new(MatchOp::Equal, "__name__", "node_load1").unwrap()];
        assert_eq!(back.select(&all), ix.select(&all));
    }

    /// A segment of these encoded label sets, each under its hash id.
    fn segment_of(encoded: &[Vec<u8>]) -> Vec<u8> {
        let mut stream = Vec::new();
        for enc in encoded {
            stream.extend_from_slice(&series_hash(enc).to_le_bytes());
            put_uvarint(&mut stream, enc.len() as u64);
            stream.extend_from_slice(enc);
        }
        encode_segment(&stream, encoded.len() as u64).unwrap()
    }

    /// A segment whose checksum holds but whose last entry does not decode
    /// (written so by a bug, or rotted before it was checksummed) is
    /// refused whole: none of its entries is added.
    #[test]
    fn a_segment_with_a_bad_entry_adds_none_of_its_entries() {
        let mut ix = PartitionIndex::default();
        add_hosts(&mut ix, 0..2);
        let before = (ix.len(), ix.live().clone());
        let bad = segment_of(&[host_series(5), host_series(6), vec![0xff; 3]]);
        let err = ix.load_segment_bytes(&bad, Path::new("<test>")).unwrap_err();
        assert!(matches!(err, StorageError::Corrupt { .. }), "{err}");
        assert_eq!((ix.len(), ix.live().clone()), before);
        let m = [Matcher::new(MatchOp::Equal, "instance", "host-00005:9100").unwrap()];
        assert!(ix.select(&m).is_empty());
        add_hosts(&mut ix, 5..6);
        assert_eq!(ix.select(&m).len(), 1);
    }

    fn add_encoded(ix: &mut PartitionIndex, enc: &[u8]) {
        ix.insert(series_hash(enc), labels(enc)).unwrap();
    }

    fn encode(pairs: &[(&str, &str)]) -> Vec<u8> {
        let mut enc = Vec::new();
        Labels::from_pairs(pairs.iter().copied()).encode(&mut enc);
        enc
    }

    /// Adds the series of `hosts` (see [`host_series`]) under their hash ids.
    fn add_hosts(ix: &mut PartitionIndex, hosts: std::ops::Range<usize>) {
        for host in hosts {
            let enc = host_series(host);
            ix.insert(series_hash(&enc), labels(&enc)).unwrap();
        }
    }

    fn host_series(host: usize) -> Vec<u8> {
        encode(&[
            ("__name__", "node_load1"),
            ("instance", &format!("host-{host:05}:9100")),
        ])
    }

    /// A day whose series mostly live on from the day before keeps one
    /// copy of their labels: the next day's entries point into the earlier
    /// day's chunk, and stay readable once the earlier index is gone.
    #[test]
    fn next_day_shares_labels_of_series_that_live_on() {
        let mut yesterday = PartitionIndex::default();
        add_hosts(&mut yesterday, 0..100);
        assert_eq!(yesterday.seal_labels(None), 0);
        let (own, _) = yesterday.label_bytes();

        let mut today = PartitionIndex::default();
        add_hosts(&mut today, 50..160);
        // Before sealing, labels are read from the tail.
        assert_eq!(
            today
                .labels_of(today.local_of(series_hash(&host_series(55))).unwrap())
                .get("instance"),
            Some("host-00055:9100")
        );
        assert_eq!(today.seal_labels(Some(&yesterday)), 50);
        let (all, shared) = today.label_bytes();
        assert_eq!(shared, own, "today holds yesterday's one chunk");
        assert!(
            all - shared < own * 65 / 100,
            "only the 60 new series are copied: {all} {shared} {own}"
        );
        drop(yesterday);
        for host in 50..160 {
            let enc = host_series(host);
            let (_, local) = today.lookup(series_hash(&enc), &enc).unwrap();
            assert_eq!(today.encoded(local), enc.as_slice());
        }
        // Sealing again with nothing new changes nothing.
        assert_eq!(today.seal_labels(None), 0);
    }

    /// A chunk is shared only when most of it is used: a few survivors of a
    /// large day are copied rather than keeping the whole chunk alive.
    #[test]
    fn sparse_survivors_are_copied_not_shared() {
        let mut yesterday = PartitionIndex::default();
        add_hosts(&mut yesterday, 0..1000);
        yesterday.seal_labels(None);
        let mut today = PartitionIndex::default();
        add_hosts(&mut today, 0..5);
        assert_eq!(today.seal_labels(Some(&yesterday)), 0);
        let (all, shared) = today.label_bytes();
        assert_eq!(shared, 0);
        assert!(all < 5 * 64, "{all}");
    }

    /// The same id with other labels (a probe step in one day, a hash in
    /// the other) is never shared, and unsealed labels are never shared.
    #[test]
    fn only_identical_sealed_labels_are_shared() {
        let a = encode(&[("__name__", "a")]);
        let b = encode(&[("__name__", "b")]);
        let mut yesterday = PartitionIndex::default();
        yesterday.insert(7, labels(&a)).unwrap();
        yesterday.insert(9, labels(&b)).unwrap();
        let mut today = PartitionIndex::default();
        today.insert(9, labels(&b)).unwrap();
        assert_eq!(
            today.seal_labels(Some(&yesterday)),
            0,
            "yesterday's labels are not sealed yet"
        );
        yesterday.seal_labels(None);
        let mut today = PartitionIndex::default();
        today.insert(7, labels(&b)).unwrap();
        today.insert(9, labels(&b)).unwrap();
        assert_eq!(today.seal_labels(Some(&yesterday)), 1);
        assert_eq!(today.encoded(today.local_of(7).unwrap()), b.as_slice());
        assert_eq!(today.encoded(today.local_of(9).unwrap()), b.as_slice());
    }

    /// Segments persisted after a seal hold the same labels as before it.
    #[test]
    fn sealed_labels_persist_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let mut yesterday = PartitionIndex::default();
        let mut today = PartitionIndex::default();
        add_hosts(&mut yesterday, 0..20);
        add_hosts(&mut today, 0..20);
        yesterday.seal_labels(None);
        today.seal_labels(Some(&yesterday));
        let extra = host_series(99);
        today.insert(series_hash(&extra), labels(&extra)).unwrap();
        today.persist_new(dir.path(), 1).unwrap();
        let mut back = PartitionIndex::default();
        back.load_segment(&dir.path().join(format!("index-{:020}.cidx", 1)))
            .unwrap();
        assert_eq!(back.len(), 21);
        for local in 0..21 {
            assert_eq!(back.encoded(local), today.encoded(local));
            assert_eq!(back.id_of(local), today.id_of(local));
        }
    }

    /// The fuzzing entry point loads real segments, and refuses damaged
    /// ones and entry streams whose labels are not canonical.
    #[test]
    fn check_segment_loads_real_segments_and_refuses_bad_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut ix = PartitionIndex::default();
        add_hosts(&mut ix, 0..10);
        ix.persist_new(dir.path(), 1).unwrap();
        let good = fs::read(dir.path().join(format!("index-{:020}.cidx", 1))).unwrap();
        assert_eq!(check_segment(&good).unwrap(), 10);
        assert!(check_segment(&good[1..]).is_err());
        let mut stream = 5u64.to_le_bytes().to_vec();
        put_uvarint(&mut stream, 3);
        stream.extend_from_slice(&[1, 0, 0]); // one label with an empty name
        assert!(check_segment(&encode_segment(&stream, 1).unwrap()).is_err());
    }

    /// Segments of the first (uncompressed) format still load.
    #[test]
    fn v1_segments_still_load() {
        let mut enc = Vec::new();
        Labels::from_pairs([("__name__", "up"), ("job", "a")]).encode(&mut enc);
        let mut buf = MAGIC_V1.to_vec();
        buf.extend_from_slice(&42u64.to_le_bytes());
        put_uvarint(&mut buf, enc.len() as u64);
        buf.extend_from_slice(&enc);
        buf.extend_from_slice(&1u64.to_le_bytes());
        buf.extend_from_slice(&cairn_codec::crc32c(&buf).to_le_bytes());
        buf.extend_from_slice(MAGIC_V1);
        let got = decode_segment(&buf).unwrap();
        assert_eq!(got.iter().collect::<Vec<_>>(), vec![Ok((42, labels(&enc)))]);
    }

    /// A fleet's label sets differ in little more than the instance: the
    /// compressed segment is a small fraction of the labels' size, and
    /// one streamed through the compressor reads back as written.
    #[test]
    fn fleet_segments_compress() {
        let dir = tempfile::tempdir().unwrap();
        let mut ix = PartitionIndex::default();
        let mut raw = 0;
        for host in 0..200 {
            for cpu in 0..8 {
                for mode in ["idle", "user", "system", "iowait", "irq"] {
                    let set = Labels::from_pairs([
                        ("__name__", "node_cpu_seconds_total"),
                        ("cpu", &cpu.to_string()),
                        ("instance", &format!("host-{host:05}.example.net:9100")),
                        ("job", "node"),
                        ("mode", mode),
                    ]);
                    let mut enc = Vec::new();
                    set.encode(&mut enc);
                    raw += enc.len();
                    ix.insert(series_hash(&enc), labels(&enc)).unwrap();
                }
            }
        }
        ix.persist_new(dir.path(), 1).unwrap();
        let path = dir.path().join(format!("index-{:020}.cidx", 1));
        let size = fs::metadata(&path).unwrap().len() as usize;
        assert!(size * 8 < raw, "segment {size} B for {raw} B of labels");
        let mut back = PartitionIndex::default();
        back.load_segment(&path).unwrap();
        assert_eq!(back.len(), 8000);
        // The stream spans many compressor chunks; every entry reads back whole.
        assert!(raw > 8 * STREAM_CHUNK);
        for local in 0..ix.len() as u32 {
            assert_eq!(back.encoded(back.local_of(ix.id_of(local)).unwrap()), ix.encoded(local));
        }
    }
}
