use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use cairn_model::{Histogram, HistogramSample, Labels, Matcher, Sample};
use parking_lot::RwLock;

use crate::{
    Admin, Appendable, Appender, CardinalityQuery, CommitReport, PartInfo, Querier, Queryable, SelectHints, Series,
    SeriesSet, StorageError, StorageStats, TsdbStatus, VecSampleBlocks,
};

/// A stored value: a float or a native histogram.
#[derive(Clone)]
enum Value {
    Float(f64),
    Histogram(Arc<Histogram>),
}

type Data = BTreeMap<Labels, BTreeMap<i64, Value>>;

/// The reference implementation: everything in memory, nothing durable.
///
/// Simple enough to be obviously right, so the conformance suite and the
/// PromQL test runner can use it as the oracle for other implementations.
#[derive(Default, Clone)]
pub struct MemStorage {
    data: Arc<RwLock<Data>>,
    settled: Arc<crate::SettledChanges>,
}

impl MemStorage {
    pub fn new() -> Self {
        Self::default()
    }
}

pub(crate) fn matches_all(labels: &Labels, matchers: &[Matcher]) -> bool {
    matchers.iter().all(|m| m.matches(labels.get(&m.name).unwrap_or("")))
}

impl Queryable for MemStorage {
    fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier>, StorageError> {
        // A copy of the range is the simplest consistent snapshot.
        let data = self.data.read();
        let snapshot: Data = data
            .iter()
            .map(|(l, s)| {
                (
                    l.clone(),
                    s.range(mint..=maxt)
                        .map(|(&t, v)| (t, v.clone()))
                        .collect::<BTreeMap<_, _>>(),
                )
            })
            .filter(|(_, s)| !s.is_empty())
            .collect();
        Ok(Box::new(MemQuerier { data: snapshot }))
    }

    fn settled_changes(&self) -> Option<u64> {
        Some(self.settled.get())
    }
}

struct MemQuerier {
    data: Data,
}

impl MemQuerier {
    fn matching<'a>(&'a self, matchers: &'a [Matcher]) -> impl Iterator<Item = (&'a Labels, &'a BTreeMap<i64, Value>)> {
        self.data.iter().filter(move |(l, _)| matches_all(l, matchers))
    }
}

impl Querier for MemQuerier {
    fn select(&self, hints: &SelectHints, matchers: &[Matcher]) -> Result<SeriesSet, StorageError> {
        let limit = hints.limit.unwrap_or(usize::MAX);
        let series: Vec<_> = self
            .matching(matchers)
            .filter(|(l, _)| hints.shard.as_ref().is_none_or(|sh| sh.contains(l)))
            .take(limit)
            .map(|(l, s)| {
                // Only the newest when that is all the caller uses, so that
                // engine tests over this storage check when it asks for it.
                let skip = if hints.newest_only { s.len() - 1 } else { 0 };
                let mut floats = Vec::new();
                let mut histograms = Vec::new();
                for (&t, v) in s.iter().skip(skip) {
                    match v {
                        Value::Float(v) => floats.push(Sample::new(t, *v)),
                        Value::Histogram(h) => histograms.push(HistogramSample { t, h: h.clone() }),
                    }
                }
                Ok(Series {
                    labels: l.clone(),
                    samples: Box::new(VecSampleBlocks::new(floats)),
                    histograms,
                })
            })
            .collect();
        Ok(Box::new(series.into_iter()))
    }

    fn label_names(&self, matchers: &[Matcher], limit: Option<usize>) -> Result<Vec<String>, StorageError> {
        let names: BTreeSet<&str> = self
            .matching(matchers)
            .flat_map(|(l, _)| l.iter().map(|l| l.name.as_str()))
            .collect();
        Ok(names
            .into_iter()
            .take(limit.unwrap_or(usize::MAX))
            .map(str::to_string)
            .collect())
    }

    fn label_values(
        &self,
        name: &str,
        matchers: &[Matcher],
        limit: Option<usize>,
    ) -> Result<Vec<String>, StorageError> {
        let values: BTreeSet<&str> = self.matching(matchers).filter_map(|(l, _)| l.get(name)).collect();
        Ok(values
            .into_iter()
            .take(limit.unwrap_or(usize::MAX))
            .map(str::to_string)
            .collect())
    }
}

impl Appendable for MemStorage {
    fn appender(&self) -> Box<dyn Appender + '_> {
        Box::new(MemAppender {
            storage: self,
            pending: Vec::new(),
        })
    }
}

struct MemAppender<'a> {
    storage: &'a MemStorage,
    pending: Vec<(Labels, Vec<(i64, Value)>)>,
}

impl MemAppender<'_> {
    fn add(&mut self, labels: &Labels, samples: Vec<(i64, Value)>) -> Result<(), StorageError> {
        labels.validate_for_storage().map_err(|e| StorageError::InvalidSeries {
            labels: labels.to_string(),
            reason: e.to_string(),
        })?;
        self.pending.push((labels.clone(), samples));
        Ok(())
    }
}

impl Appender for MemAppender<'_> {
    fn append(&mut self, labels: &Labels, samples: &[Sample]) -> Result<(), StorageError> {
        self.add(labels, samples.iter().map(|s| (s.t, Value::Float(s.v))).collect())
    }

    fn append_histograms(&mut self, labels: &Labels, samples: &[HistogramSample]) -> Result<(), StorageError> {
        for s in samples {
            s.h.validate().map_err(|e| StorageError::InvalidSeries {
                labels: labels.to_string(),
                reason: e.to_string(),
            })?;
        }
        self.add(
            labels,
            samples.iter().map(|s| (s.t, Value::Histogram(s.h.clone()))).collect(),
        )
    }

    fn commit(self: Box<Self>) -> Result<CommitReport, StorageError> {
        let mut data = self.storage.data.write();
        let mut report = CommitReport::default();
        let mut min_t = i64::MAX;
        for (labels, samples) in self.pending {
            let series = data.entry(labels).or_insert_with(|| {
                report.series_created += 1;
                BTreeMap::new()
            });
            for (t, v) in samples {
                report.histograms_accepted += u64::from(matches!(v, Value::Histogram(_)));
                series.insert(t, v);
                report.samples_accepted += 1;
                min_t = min_t.min(t);
            }
        }
        drop(data);
        self.storage.settled.record_write(min_t);
        Ok(report)
    }

    fn rollback(self: Box<Self>) {}
}

impl Admin for MemStorage {
    fn delete_series(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<(), StorageError> {
        let mut data = self.data.write();
        for (_, samples) in data.iter_mut().filter(|(l, _)| matches_all(l, matchers)) {
            samples.retain(|&t, _| t < mint || t > maxt);
        }
        data.retain(|_, s| !s.is_empty());
        drop(data);
        self.settled.record();
        Ok(())
    }

    fn tsdb_status(&self, query: &CardinalityQuery) -> Result<TsdbStatus, StorageError> {
        let data = self.data.read();
        let live = data
            .iter()
            .filter(|(_, s)| s.range(query.mint..=query.maxt).next().is_some())
            .map(|(l, _)| l);
        Ok(TsdbStatus::from_series(live, query))
    }

    fn stats(&self) -> StorageStats {
        let data = self.data.read();
        StorageStats {
            active_series: data.len() as u64,
            head_samples: data.values().map(|s| s.len() as u64).sum(),
            ..StorageStats::default()
        }
    }

    /// Samples are held as they come, in no part.
    fn parts(&self) -> Result<Vec<PartInfo>, StorageError> {
        Ok(Vec::new())
    }
}
