//! The series a queue forwards, by WAL id: their labels with the external
//! labels added and `write_relabel_configs` applied, encoded once for every
//! request that carries them, or the decision to drop them.

use std::collections::HashMap;
use std::sync::Arc;

use cairn_config::RelabelConfig;
use cairn_model::{Label, Labels};
use cairn_tsdb::Tsdb;

use crate::send::Protocol;

/// A series as it is sent.
pub struct Series {
    /// Only what the queue's protocol needs, for the memory of every series.
    pub labels: SeriesLabels,
    /// Picks the shard: a series' samples all go through one, in order.
    pub hash: u64,
}

pub enum SeriesLabels {
    /// The label fields of a remote write 1.0 `TimeSeries`.
    Encoded(Box<[u8]>),
    /// The labels, for remote write 2.0's per-request symbols.
    Labels(Labels),
}

/// What becomes of a series' samples.
pub enum Resolved {
    Send(Arc<Series>),
    /// Dropped by relabelling.
    Dropped,
    /// Its day is gone (retention) and the record did not create it.
    Unknown,
}

pub struct SeriesCache {
    /// Looked up for every sample forwarded: a fast hash, seeded per process.
    by_id: HashMap<(i32, u64), Option<Arc<Series>>, foldhash::fast::RandomState>,
    external_labels: Labels,
    relabel: Vec<RelabelConfig>,
    protocol: Protocol,
    newest_day: i32,
}

impl SeriesCache {
    pub fn new(external_labels: Labels, relabel: Vec<RelabelConfig>, protocol: Protocol) -> Self {
        Self {
            by_id: HashMap::default(),
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
            self.by_id.retain(|&(d, _), _| d + 1 >= day);
        }
        let entry = match self.by_id.get(&(day, id)) {
            Some(entry) => entry.clone(),
            None => {
                let labels = match created.iter().find(|(new, _)| *new == id) {
                    Some((_, labels)) => labels.clone(),
                    None => match db.series_labels(day, id) {
                        Some(labels) => labels,
                        None => return Resolved::Unknown,
                    },
                };
                let entry = self.prepare(labels);
                self.by_id.insert((day, id), entry.clone());
                entry
            }
        };
        entry.map_or(Resolved::Dropped, Resolved::Send)
    }

    fn prepare(&self, labels: Labels) -> Option<Arc<Series>> {
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
        let labels = match self.protocol {
            Protocol::V1 => SeriesLabels::Encoded(encoded.into_boxed_slice()),
            Protocol::V2 => SeriesLabels::Labels(labels),
        };
        Some(Arc::new(Series { labels, hash }))
    }
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
}
