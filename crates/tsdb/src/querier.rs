use std::collections::{BTreeSet, HashSet};

use cairn_model::{Labels, Matcher};
use cairn_storage::{Querier, SampleBlocks, SelectHints, Series, SeriesSet, StorageError, VecSampleBlocks};

use crate::partition::{PartitionSnapshot, sources_of, tombstones_by_id};
use crate::series_reader::{Ranked, SeriesReader};

/// A read view: the partitions overlapping `[mint, maxt]`, as they were
/// when the querier was created.
pub struct TsdbQuerier {
    snaps: Vec<PartitionSnapshot>,
    mint: i64,
    maxt: i64,
}

impl TsdbQuerier {
    pub fn new(snaps: Vec<PartitionSnapshot>, mint: i64, maxt: i64) -> Self {
        Self { snaps, mint, maxt }
    }
}

impl Querier for TsdbQuerier {
    fn series_upper_bound(&self, matchers: &[Matcher]) -> Result<usize, StorageError> {
        // A series living in several days counts once per day.
        Ok(self
            .snaps
            .iter()
            .map(|snap| snap.partition.index.read().select(matchers).len() as usize)
            .sum())
    }

    fn select(&self, hints: &SelectHints, matchers: &[Matcher]) -> Result<SeriesSet, StorageError> {
        // Series are keyed by labels: ids are only unique within a day. A
        // vector sorted once is far cheaper than a map for 10^5–10^6 series.
        let mut series: Vec<(Labels, Vec<Ranked>)> = Vec::new();
        for snap in &self.snaps {
            let selected: Vec<(u64, Labels)> = {
                let index = snap.partition.index.read();
                index
                    .select(matchers)
                    .iter()
                    .map(|l| (index.id_of(l), index.labels_of(l)))
                    .filter(|(_, labels)| hints.shard.is_none_or(|sh| sh.contains(labels)))
                    .collect()
            };
            if hints.labels_only {
                series.extend(selected.into_iter().map(|(_, l)| (l, Vec::new())));
                continue;
            }
            let wanted: HashSet<u64> = selected.iter().map(|(id, _)| *id).collect();
            let mut rows = snap.rows.collect(&wanted, self.mint, self.maxt);
            let parts: Vec<_> = snap.parts.all().cloned().collect();
            let tombs = tombstones_by_id(&snap.tombstones);
            for (id, labels) in selected {
                let mut sources = sources_of(&parts, id, self.mint, self.maxt, &tombs);
                // Unflushed rows are the newest writes of all.
                sources.extend(rows.remove(&id).and_then(|r| Ranked::rows(u64::MAX, r)));
                if !sources.is_empty() {
                    series.push((labels, sources));
                }
            }
        }
        // Stable: a series found in several days keeps its days in order.
        series.sort_by(|a, b| a.0.cmp(&b.0));
        series.dedup_by(|later, earlier| {
            let same = later.0 == earlier.0;
            if same {
                earlier.1.append(&mut later.1);
            }
            same
        });
        let (mint, maxt, labels_only) = (self.mint, self.maxt, hints.labels_only);
        let limit = hints.limit.unwrap_or(usize::MAX);
        let iter = series
            .into_iter()
            .filter_map(move |(labels, sources)| {
                if labels_only {
                    let samples: Box<dyn SampleBlocks> = Box::new(VecSampleBlocks::new([]));
                    return Some(Ok(Series { labels, samples }));
                }
                let mut reader = SeriesReader::new(sources, mint, maxt);
                // Deletions can leave a series with blocks but no samples: skip it.
                match reader.has_samples() {
                    Ok(true) => Some(Ok(Series {
                        labels,
                        samples: Box::new(reader),
                    })),
                    Ok(false) => None,
                    Err(e) => Some(Err(e)),
                }
            })
            .take(limit);
        Ok(Box::new(iter))
    }

    fn label_names(&self, matchers: &[Matcher], limit: Option<usize>) -> Result<Vec<String>, StorageError> {
        let mut out = BTreeSet::new();
        for snap in &self.snaps {
            let index = snap.partition.index.read();
            let set = (!matchers.is_empty()).then(|| index.select(matchers));
            index.label_names(set.as_ref(), &mut out);
        }
        Ok(out.into_iter().take(limit.unwrap_or(usize::MAX)).collect())
    }

    fn label_values(
        &self,
        name: &str,
        matchers: &[Matcher],
        limit: Option<usize>,
    ) -> Result<Vec<String>, StorageError> {
        let mut out = BTreeSet::new();
        for snap in &self.snaps {
            let index = snap.partition.index.read();
            let set = (!matchers.is_empty()).then(|| index.select(matchers));
            index.label_values(name, set.as_ref(), &mut out);
        }
        Ok(out.into_iter().take(limit.unwrap_or(usize::MAX)).collect())
    }
}
