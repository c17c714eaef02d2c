//! The series a selector matches in one partition, kept for the next select
//! with the same matchers while the partition's index is unchanged. Alert
//! rules and dashboards send the same selectors every few seconds over a set
//! of series that rarely changes: a kept selection saves the postings, the
//! label sort and the shard hashing of every select after the first.

use std::collections::HashMap;
use std::sync::Arc;

use cairn_model::{Labels, Matcher};
use cairn_storage::Shard;
use rayon::slice::ParallelSliceMut;

use crate::index::PartitionIndex;
use crate::querier::PARALLEL_SORT_MIN;

/// Bytes of selections kept per partition. A selection is small (24 bytes a
/// series): this holds a few hundred rules' selectors over thousands of series
/// each, and a selection of more than a quarter of it is not kept.
const CACHE_BYTES: usize = 8 << 20;

/// One series of a selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SelectedSeries {
    pub id: u64,
    pub local: u32,
    /// Position in label order among the selection's series.
    pub rank: u32,
    /// [`Shard::hash_encoded`] of its labels.
    pub shard_hash: u64,
}

/// The live series matching some matchers in one partition, in id order.
#[derive(Debug, Default)]
pub struct Selection {
    pub series: Vec<SelectedSeries>,
}

impl Selection {
    pub fn compute(index: &PartitionIndex, matchers: &[Matcher]) -> Self {
        let matching = index.select(matchers);
        let mut series = Vec::with_capacity(matching.len() as usize);
        let (mut keys, mut key_ends) = (Vec::new(), Vec::with_capacity(series.capacity()));
        for local in &matching {
            let encoded = index.encoded(local);
            Labels::sort_key(encoded, &mut keys);
            key_ends.push(keys.len());
            series.push(SelectedSeries {
                id: index.id_of(local),
                local,
                rank: 0,
                shard_hash: Shard::hash_encoded(encoded),
            });
        }
        let key = |i: usize| &keys[if i == 0 { 0 } else { key_ends[i - 1] }..key_ends[i]];
        let mut by_labels: Vec<usize> = (0..series.len()).collect();
        if by_labels.len() >= PARALLEL_SORT_MIN {
            by_labels.par_sort_unstable_by(|&a, &b| key(a).cmp(key(b)));
        } else {
            by_labels.sort_unstable_by(|&a, &b| key(a).cmp(key(b)));
        }
        for (rank, i) in by_labels.into_iter().enumerate() {
            series[i].rank = rank as u32;
        }
        series.sort_unstable_by_key(|s| s.id);
        Self { series }
    }

    fn bytes(&self) -> usize {
        self.series.len() * size_of::<SelectedSeries>()
    }
}

/// Selections of one partition by matchers, valid for one index version,
/// least recently used dropped first.
#[derive(Default)]
pub struct SelectionCache {
    version: u64,
    entries: HashMap<Vec<u8>, (Arc<Selection>, u64)>,
    bytes: usize,
    clock: u64,
}

impl SelectionCache {
    /// The kept selection of `key` if the index is still at `version`.
    pub fn get(&mut self, key: &[u8], version: u64) -> Option<Arc<Selection>> {
        if version != self.version {
            return None;
        }
        self.clock += 1;
        let (selection, used) = self.entries.get_mut(key)?;
        *used = self.clock;
        Some(selection.clone())
    }

    /// Keeps `selection`, computed from the index at `version`. A newer
    /// version drops every selection of older ones.
    pub fn put(&mut self, key: Vec<u8>, version: u64, selection: Arc<Selection>) {
        if version < self.version {
            return;
        }
        if version > self.version {
            self.version = version;
            self.entries.clear();
            self.bytes = 0;
        }
        let bytes = selection.bytes() + key.len();
        if bytes > CACHE_BYTES / 4 {
            return;
        }
        while self.bytes + bytes > CACHE_BYTES {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some((s, _)) = self.entries.remove(&oldest) {
                self.bytes -= s.bytes() + oldest.len();
            }
        }
        self.clock += 1;
        if let Some((old, _)) = self.entries.insert(key.clone(), (selection, self.clock)) {
            self.bytes -= old.bytes() + key.len();
        }
        self.bytes += bytes;
    }
}

/// A key that two matcher lists share exactly when they select the same
/// series: each matcher's operator, name and value, length-prefixed, in a
/// fixed order.
pub fn key_of(matchers: &[Matcher]) -> Vec<u8> {
    let mut parts: Vec<Vec<u8>> = matchers
        .iter()
        .map(|m| {
            let mut part = vec![m.op as u8];
            for text in [&m.name, &m.value] {
                part.extend_from_slice(&(text.len() as u64).to_le_bytes());
                part.extend_from_slice(text.as_bytes());
            }
            part
        })
        .collect();
    parts.sort_unstable();
    parts.concat()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_model::{EncodedLabels, MatchOp};

    fn index_of(sets: &[Labels]) -> PartitionIndex {
        let mut index = PartitionIndex::default();
        for (i, labels) in sets.iter().enumerate() {
            let mut encoded = Vec::new();
            labels.encode(&mut encoded);
            // Ids in the reverse of label order, so the two orders differ.
            let id = 1000 - i as u64;
            index.insert(id, EncodedLabels::new(&encoded).unwrap()).unwrap();
        }
        index
    }

    #[test]
    fn a_selection_is_in_id_order_and_ranks_follow_the_labels() {
        let sets: Vec<Labels> = ["a", "b", "c", "d"]
            .iter()
            .map(|i| Labels::from_pairs([("__name__", "up"), ("instance", *i)]))
            .collect();
        let index = index_of(&sets);
        let up = [Matcher::new(MatchOp::Equal, "__name__", "up").unwrap()];
        let s = Selection::compute(&index, &up);
        let ids: Vec<u64> = s.series.iter().map(|s| s.id).collect();
        assert_eq!(ids, [997, 998, 999, 1000]);
        let ranks: Vec<u32> = s.series.iter().map(|s| s.rank).collect();
        assert_eq!(ranks, [3, 2, 1, 0], "instance d has the lowest id and sorts last");
        let not_b = [
            Matcher::new(MatchOp::NotEqual, "instance", "b").unwrap(),
            Matcher::new(MatchOp::Equal, "__name__", "up").unwrap(),
        ];
        assert_eq!(Selection::compute(&index, &not_b).series.len(), 3);
    }

    #[test]
    fn keys_ignore_matcher_order_and_tell_operators_and_values_apart() {
        let m = |op, n: &str, v: &str| Matcher::new(op, n, v).unwrap();
        let a = m(MatchOp::Equal, "job", "x");
        let b = m(MatchOp::RegexMatch, "mode", "idle|user");
        assert_eq!(key_of(&[a.clone(), b.clone()]), key_of(&[b.clone(), a.clone()]));
        assert_ne!(
            key_of(std::slice::from_ref(&a)),
            key_of(&[m(MatchOp::NotEqual, "job", "x")])
        );
        assert_ne!(key_of(&[m(MatchOp::Equal, "jo", "bx")]), key_of(&[a]));
        assert_ne!(key_of(std::slice::from_ref(&b)), key_of(&[b.clone(), b]));
    }

    fn selection(n: usize) -> Arc<Selection> {
        let s = SelectedSeries {
            id: 1,
            local: 0,
            rank: 0,
            shard_hash: 0,
        };
        Arc::new(Selection { series: vec![s; n] })
    }

    #[test]
    fn the_cache_answers_only_for_its_version_and_evicts_the_least_recently_used() {
        let mut cache = SelectionCache::default();
        cache.put(b"a".to_vec(), 3, selection(1));
        assert!(cache.get(b"a", 3).is_some());
        assert!(cache.get(b"a", 4).is_none(), "the index changed since");
        cache.put(b"b".to_vec(), 2, selection(1));
        assert!(cache.get(b"b", 3).is_none(), "computed from an older index: not kept");
        cache.put(b"c".to_vec(), 4, selection(1));
        assert!(
            cache.get(b"a", 4).is_none(),
            "a newer version drops the older selections"
        );
        assert!(cache.get(b"c", 4).is_some());

        // Fill to the budget, touching the first one, then one more.
        let quarter = CACHE_BYTES / 4 / size_of::<SelectedSeries>() - 1;
        let mut cache = SelectionCache::default();
        for k in 0..4u8 {
            cache.put(vec![k], 1, selection(quarter));
        }
        assert!(cache.get(&[0], 1).is_some());
        cache.put(vec![9], 1, selection(quarter));
        assert!(cache.get(&[0], 1).is_some(), "recently used");
        assert!(cache.get(&[1], 1).is_none(), "least recently used, evicted");
        assert!(cache.get(&[9], 1).is_some());
        cache.put(vec![10], 1, selection(CACHE_BYTES));
        assert!(cache.get(&[10], 1).is_none(), "too large to keep");
    }
}
