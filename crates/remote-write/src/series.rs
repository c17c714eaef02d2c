//! The series a queue forwards, by WAL id: their labels with the external
//! labels added and `write_relabel_configs` applied, encoded once for every
//! request that carries them, or the decision to drop them.

use std::hash::BuildHasher;
use std::sync::Arc;

use cairn_config::RelabelConfig;
use cairn_model::{EncodedLabels, Label, Labels};
use cairn_protocols::remote_write::encode_label_pairs;
use cairn_tsdb::Tsdb;

use crate::send::Protocol;

/// A series as it is sent: only what the queue's protocol needs, in an
/// allocation shared by every sample of it in flight.
#[derive(Clone)]
pub enum Series {
    /// The label fields of a remote write 1.0 `TimeSeries`.
    Encoded(EncodedSeries),
    /// The labels, for remote write 2.0's per-request symbols.
    Labels(Arc<Labels>),
}

impl Series {
    /// The same for every clone of one series, different between series.
    pub fn identity(&self) -> *const () {
        match self {
            Self::Encoded(e) => Arc::as_ptr(&e.buf).cast::<u8>().wrapping_add(e.start as usize).cast(),
            Self::Labels(labels) => Arc::as_ptr(labels).cast(),
        }
    }
}

/// Remote write 1.0's label fields of one series: part of a buffer that may
/// hold other series' too, so that a labelled WAL record's series take one
/// allocation together.
#[derive(Clone)]
pub struct EncodedSeries {
    buf: Arc<[u8]>,
    start: u32,
    end: u32,
}

impl EncodedSeries {
    fn whole(bytes: Vec<u8>) -> Self {
        let end = bytes.len() as u32;
        Self {
            buf: bytes.into(),
            start: 0,
            end,
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf[self.start as usize..self.end as usize]
    }
}

impl std::fmt::Debug for EncodedSeries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EncodedSeries({:?})", self.bytes())
    }
}

impl PartialEq for EncodedSeries {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl From<Vec<u8>> for EncodedSeries {
    fn from(bytes: Vec<u8>) -> Self {
        Self::whole(bytes)
    }
}

/// What becomes of a series' samples.
#[derive(Clone)]
pub enum Resolved {
    /// Sent, through the shard the hash picks: a series' samples all go
    /// through one, in order.
    Send(Series, u64),
    /// Dropped by relabelling.
    Dropped,
    /// Its day is gone (retention) and the record did not create it.
    Unknown,
}

pub struct SeriesCache {
    /// Every series resolved, in the order first resolved. Records repeat
    /// their series in one order scrape after scrape, so each slot keeps
    /// the slot resolved after it the last time: a lookup on that path
    /// reads the slots in order instead of probing a table at random.
    slots: Vec<Slot>,
    /// Looked up off that path: slot numbers only, by a fast hash of the
    /// slot's day and id (seeded per process).
    by_id: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::RandomState,
    /// The slot resolved last.
    last: Option<u32>,
    external_labels: Labels,
    relabel: Vec<RelabelConfig>,
    protocol: Protocol,
    newest_day: i32,
}

struct Slot {
    day: i32,
    id: u64,
    /// `None`: dropped by relabelling.
    series: Option<(Series, u64)>,
    /// The slot resolved after this one the last time ([`NO_SLOT`]: none yet).
    next: u32,
}

const NO_SLOT: u32 = u32::MAX;

impl SeriesCache {
    pub fn new(external_labels: Labels, relabel: Vec<RelabelConfig>, protocol: Protocol) -> Self {
        Self {
            slots: Vec::new(),
            by_id: hashbrown::HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
            last: None,
            external_labels,
            relabel,
            protocol,
            newest_day: i32::MIN,
        }
    }

    /// The series `id` of `day`: from `created` (the labels of the series the
    /// record created), this cache, or the engine's index.
    pub fn resolve(&mut self, db: &Tsdb, day: i32, id: u64, created: &[(u64, Labels)]) -> Resolved {
        if day > self.newest_day {
            self.newest_day = day;
            // A day's ids mean nothing the day after next: records are in
            // commit order, and late samples of the day before still come.
            self.forget_days_before(day - 1);
        }
        let slot = match self.predicted(day, id) {
            Some(slot) => slot,
            None => match self.find(day, id) {
                Some(slot) => slot,
                None => {
                    let labels = match created.iter().find(|(new, _)| *new == id) {
                        Some((_, labels)) => labels.clone(),
                        None => match db.series_labels(day, id) {
                            Some(labels) => labels,
                            None => return Resolved::Unknown,
                        },
                    };
                    let series = self.prepare(labels);
                    let slot = self.slots.len() as u32;
                    self.slots.push(Slot {
                        day,
                        id,
                        series,
                        next: NO_SLOT,
                    });
                    self.index(slot);
                    slot
                }
            },
        };
        if let Some(last) = self.last.and_then(|l| self.slots.get_mut(l as usize)) {
            last.next = slot;
        }
        self.last = Some(slot);
        match &self.slots[slot as usize].series {
            Some((series, hash)) => Resolved::Send(series.clone(), *hash),
            None => Resolved::Dropped,
        }
    }

    /// The slot that followed the last one resolved, if it is `(day, id)`.
    fn predicted(&self, day: i32, id: u64) -> Option<u32> {
        let next = self.slots.get(self.last? as usize)?.next;
        let slot = self.slots.get(next as usize)?;
        (slot.day == day && slot.id == id).then_some(next)
    }

    fn forget_days_before(&mut self, day: i32) {
        if self.slots.iter().all(|s| s.day >= day) {
            return;
        }
        self.slots.retain(|s| s.day >= day);
        self.by_id.clear();
        for slot in &mut self.slots {
            slot.next = NO_SLOT;
        }
        for i in 0..self.slots.len() {
            self.index(i as u32);
        }
        self.last = None;
    }

    fn slot_hash(&self, day: i32, id: u64) -> u64 {
        self.hasher.hash_one((day, id))
    }

    fn find(&self, day: i32, id: u64) -> Option<u32> {
        let slots = &self.slots;
        self.by_id
            .find(self.slot_hash(day, id), |&s| {
                let slot = &slots[s as usize];
                slot.day == day && slot.id == id
            })
            .copied()
    }

    /// Makes slot `s` found by its day and id.
    fn index(&mut self, s: u32) {
        let slot = &self.slots[s as usize];
        let hash = self.slot_hash(slot.day, slot.id);
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.by_id.insert_unique(hash, s, |&other| {
            let o = &slots[other as usize];
            hasher.hash_one((o.day, o.id))
        });
    }

    /// The series of a labelled record (agent mode), from their label
    /// encodings: not cached, as no id names them beyond their record.
    /// Without relabelling, remote write 1.0's labels are written straight
    /// from the encodings, the external labels merged in, all into one
    /// buffer.
    pub fn resolve_labelled(&self, labels: &[EncodedLabels<'_>]) -> Vec<Resolved> {
        if !self.relabel.is_empty() || self.protocol != Protocol::V1 {
            return labels
                .iter()
                .map(|l| match self.prepare(l.decode()) {
                    Some((series, hash)) => Resolved::Send(series, hash),
                    None => Resolved::Dropped,
                })
                .collect();
        }
        let size: usize = labels
            .iter()
            .map(|l| l.as_bytes().len() + 8 * self.external_labels.len() + 8)
            .sum();
        let mut buf = Vec::with_capacity(size);
        let mut spans = Vec::with_capacity(labels.len());
        for l in labels {
            let start = buf.len();
            let external = self
                .external_labels
                .iter()
                .map(|l| (l.name.as_bytes(), l.value.as_bytes()));
            encode_label_pairs(merge_missing(l.raw_pairs(), external), &mut buf);
            let hash = xxhash_rust::xxh3::xxh3_64(&buf[start..]);
            spans.push((start as u32, buf.len() as u32, hash));
        }
        let buf: Arc<[u8]> = buf.into();
        spans
            .into_iter()
            .map(|(start, end, hash)| {
                let series = EncodedSeries {
                    buf: buf.clone(),
                    start,
                    end,
                };
                Resolved::Send(Series::Encoded(series), hash)
            })
            .collect()
    }

    /// Whether a forward batch's series go out as they were written: no
    /// relabelling to apply, and remote write 1.0's encoding.
    pub fn sends_as_written(&self) -> bool {
        self.relabel.is_empty() && self.protocol == Protocol::V1
    }

    /// A forward batch's series, for a queue that does not send it as
    /// written. Its external labels are the ones it was written with; the
    /// queue's are added where it lacks them.
    pub fn resolve_forwarded(&self, labels: Labels) -> Resolved {
        match self.prepare(labels) {
            Some((series, hash)) => Resolved::Send(series, hash),
            None => Resolved::Dropped,
        }
    }

    fn prepare(&self, labels: Labels) -> Option<(Series, u64)> {
        let labels = with_external_labels(labels, &self.external_labels);
        let labels = if self.relabel.is_empty() {
            labels
        } else {
            cairn_config::relabel::process(&labels, &self.relabel)?
        };
        if labels.is_empty() {
            return None;
        }
        let mut encoded = Vec::new();
        cairn_protocols::remote_write::encode_labels(&labels, &mut encoded);
        let hash = xxhash_rust::xxh3::xxh3_64(&encoded);
        let series = match self.protocol {
            Protocol::V1 => Series::Encoded(EncodedSeries::whole(encoded)),
            Protocol::V2 => Series::Labels(Arc::new(labels)),
        };
        Some((series, hash))
    }
}

/// Two label lists in name order merged in name order; a name in both
/// keeps `own`'s value (as [`with_external_labels`] does).
pub(crate) fn merge_missing<'a, 'o: 'a, 'e: 'a>(
    own: impl Iterator<Item = (&'o [u8], &'o [u8])>,
    external: impl Iterator<Item = (&'e [u8], &'e [u8])>,
) -> impl Iterator<Item = (&'a [u8], &'a [u8])> {
    let mut own = own.peekable();
    let mut external = external.peekable();
    std::iter::from_fn(move || match (own.peek(), external.peek()) {
        (Some(o), Some(e)) if e.0 < o.0 => external.next().map(shorter),
        (Some(o), Some(e)) if e.0 == o.0 => {
            external.next();
            own.next().map(shorter)
        }
        (Some(_), _) => own.next().map(shorter),
        (None, _) => external.next().map(shorter),
    })
}

fn shorter<'a>((name, value): (&'a [u8], &'a [u8])) -> (&'a [u8], &'a [u8]) {
    (name, value)
}

/// `labels` with each external label it lacks, as Prometheus adds them
/// before relabelling.
fn with_external_labels(labels: Labels, external: &Labels) -> Labels {
    if external.iter().all(|e| labels.get(&e.name).is_some()) {
        return labels;
    }
    let mut all: Vec<Label> = labels.iter().cloned().collect();
    for e in external {
        if labels.get(&e.name).is_none() {
            all.push(e.clone());
        }
    }
    Labels::new(all).unwrap_or(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_labels_are_added_only_where_missing() {
        let external = Labels::from_pairs([("cluster", "a"), ("replica", "1")]);
        let labels = Labels::from_pairs([("__name__", "up"), ("cluster", "own")]);
        assert_eq!(
            with_external_labels(labels, &external),
            Labels::from_pairs([("__name__", "up"), ("cluster", "own"), ("replica", "1")])
        );
    }

    #[test]
    fn a_labelled_series_is_sent_as_its_labels_resolved_through_the_cache_would_be() {
        let external = Labels::from_pairs([("a", "ext"), ("cluster", "c"), ("zone", "z")]);
        let drop_m3 = RelabelConfig {
            source_labels: vec!["__name__".into()],
            regex: cairn_config::relabel::RelabelRegex::new("m3").unwrap(),
            action: cairn_config::relabel::RelabelAction::Drop,
            ..RelabelConfig::default()
        };
        let sets = [
            Labels::from_pairs([("__name__", "m1")]),
            Labels::from_pairs([("__name__", "m2"), ("cluster", "own"), ("y", "1")]),
            Labels::from_pairs([("__name__", "m3"), ("a", "mine"), ("zz", "2")]),
        ];
        for relabel in [vec![], vec![drop_m3]] {
            for protocol in [Protocol::V1, Protocol::V2] {
                let cache = SeriesCache::new(external.clone(), relabel.clone(), protocol);
                let encoded: Vec<Vec<u8>> = sets
                    .iter()
                    .map(|labels| {
                        let mut e = Vec::new();
                        labels.encode(&mut e);
                        e
                    })
                    .collect();
                let encoded: Vec<EncodedLabels<'_>> = encoded.iter().map(|e| EncodedLabels::new(e).unwrap()).collect();
                let got = cache.resolve_labelled(&encoded);
                assert_eq!(got.len(), sets.len());
                for (labels, got) in sets.iter().zip(got) {
                    let want = cache.prepare(labels.clone());
                    match (got, want) {
                        (Resolved::Send(Series::Encoded(g), gh), Some((Series::Encoded(w), wh))) => {
                            assert_eq!((g, gh), (w, wh), "{labels}");
                        }
                        (Resolved::Send(Series::Labels(g), gh), Some((Series::Labels(w), wh))) => {
                            assert_eq!((g, gh), (w, wh), "{labels}");
                        }
                        (Resolved::Dropped, None) => {}
                        _ => panic!("{labels} resolved otherwise than through the cache"),
                    }
                }
            }
        }
    }

    #[test]
    fn series_resolve_alike_on_and_off_the_path_records_repeat() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = cairn_tsdb::Config::new(dir.path());
        config.background = false;
        let db = Tsdb::open(config).unwrap();
        let labels = |i: u64| Labels::from_pairs([("__name__", format!("m{}", i % 7)), ("i", i.to_string())]);
        let created: Vec<(u64, Labels)> = (0..40).map(|i| (i, labels(i))).collect();
        let relabel = RelabelConfig {
            source_labels: vec!["__name__".into()],
            regex: cairn_config::relabel::RelabelRegex::new("m3").unwrap(),
            action: cairn_config::relabel::RelabelAction::Drop,
            ..RelabelConfig::default()
        };
        let mut cache = SeriesCache::new(Labels::empty(), vec![relabel], Protocol::V2);
        let name_of = |r: Resolved| match r {
            Resolved::Send(Series::Labels(l), _) => Some((*l).clone()),
            Resolved::Send(Series::Encoded(_), _) => unreachable!(),
            Resolved::Dropped => None,
            Resolved::Unknown => panic!("every series is created"),
        };
        // One order again and again, then orders that leave the path
        // anywhere, then the next day's ids.
        let mut orders: Vec<Vec<u64>> = vec![(0..40).collect(); 3];
        orders.push((0..40).rev().collect());
        orders.push((0..40).map(|i| (i * 17) % 40).collect());
        orders.push((0..40).chain(0..40).collect());
        for (day, order) in [(19_000, &orders[..]), (19_001, &orders[..2])] {
            for order in order {
                for &id in order {
                    let want = cairn_config::relabel::process(&labels(id), &cache.relabel);
                    assert_eq!(
                        name_of(cache.resolve(&db, day, id, &created)),
                        want,
                        "day {day}, id {id}"
                    );
                }
            }
        }
        assert_eq!(cache.slots.len(), 80);
        cache.resolve(&db, 19_002, 1, &created);
        assert_eq!(cache.slots.len(), 41, "the days before yesterday are forgotten");
    }
}
