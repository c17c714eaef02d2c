use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::Arc;

use rayon::slice::ParallelSliceMut;

use cairn_model::{Histogram, HistogramSample, Labels, Matcher};
use cairn_storage::{
    Querier, ReadWarnings, SampleBlocks, SelectHints, Series, SeriesSet, StorageError, VecSampleBlocks,
};

use crate::histograms::is_marker;
use crate::partition::{Partition, PartitionSnapshot, newest_sources_of, sources_of, tombstones_by_id};
use crate::series_reader::{LossReport, Ranked, SeriesReader, keep_newest_source, lost_samples_warning};
use crate::shared_reads::{SELECT_BUDGET, share_part_reads};

/// Selects of at least this many series sort on every core.
pub(crate) const PARALLEL_SORT_MIN: usize = 1 << 15;

/// A series a select found: its canonical label encoding and its sort key
/// (ranges of the select's arena), and where its samples are.
struct Selected {
    labels: Range<usize>,
    order: Range<usize>,
    sources: Vec<Ranked>,
    /// The partitions (and the series' id in each) whose samples may hold
    /// histogram markers; empty for a series of floats only.
    histograms: Vec<(Arc<Partition>, u64)>,
}

/// A read view: the partitions overlapping `[mint, maxt]`, as they were
/// when the querier was created. Samples lost to damage are left out, and
/// said so in `warnings` if given.
pub struct TsdbQuerier {
    snaps: Vec<PartitionSnapshot>,
    mint: i64,
    maxt: i64,
    warnings: Option<ReadWarnings>,
}

impl TsdbQuerier {
    pub fn new(snaps: Vec<PartitionSnapshot>, mint: i64, maxt: i64, warnings: Option<ReadWarnings>) -> Self {
        Self {
            snaps,
            mint,
            maxt,
            warnings,
        }
    }

    /// Warns of the losses recorded by repairs among the `selected` series
    /// (id, local, labels in `arena`, sort key) in this querier's range.
    fn report_recorded_losses(
        &self,
        snap: &PartitionSnapshot,
        selected: &[(u64, u32, Range<usize>, Range<usize>)],
        arena: &[u8],
        warnings: &ReadWarnings,
    ) {
        let in_range: Vec<_> = snap
            .losses
            .iter()
            .filter(|l| l.overlaps(self.mint, self.maxt))
            .collect();
        if in_range.is_empty() {
            return;
        }
        for (id, _, labels, _) in selected {
            for loss in in_range.iter().filter(|l| l.id == *id) {
                let series = Labels::decode(&arena[labels.clone()])
                    .map_or_else(|_| format!("#{id:016x}"), |(l, _)| l.to_string());
                let why = format!("a repair of day {} dropped a damaged block", snap.partition.day);
                warnings.push(lost_samples_warning(&series, loss.samples, loss.mint, loss.maxt, &why));
            }
        }
    }
}

impl Querier for TsdbQuerier {
    fn series_upper_bound(&self, matchers: &[Matcher]) -> Result<usize, StorageError> {
        // A series living in several days counts once per day.
        Ok(self
            .snaps
            .iter()
            .map(|snap| snap.partition.selection(&snap.partition.index(), matchers).series.len())
            .sum())
    }

    fn select(&self, hints: &SelectHints, matchers: &[Matcher]) -> Result<SeriesSet, StorageError> {
        // Series are keyed by labels: ids are only unique within a day. Their
        // canonical encodings are copied into one arena, each followed by a
        // key whose byte order is the label sets' (`Labels::sort_key`: a sort
        // compares with `memcmp`; within one day, the series' rank in its
        // kept selection), and each is decoded only when the iterator
        // reaches it: decoding all first and sorting `Labels` was most of a
        // 500k-series `/api/v1/series`.
        let mut arena: Vec<u8> = Vec::new();
        let mut series: Vec<Selected> = Vec::new();
        let mut read_budget = SELECT_BUDGET;
        let one_day = self.snaps.len() == 1;
        for snap in &self.snaps {
            // In id order, as parts keep their blocks: each part's cursor
            // moves forward through one region (a metric's series are
            // neighbours there, see `series_hash`).
            let selected: Vec<(u64, u32, Range<usize>, Range<usize>)> = {
                let index = snap.partition.index();
                let selection = snap.partition.selection(&index, matchers);
                let mut selected = Vec::with_capacity(selection.series.len());
                for s in &selection.series {
                    // Another shard's labels are not read: each is a cache
                    // miss in a large index.
                    let in_shard = hints.shard.as_ref().is_none_or(|sh| match sh.by {
                        None => sh.contains_hash(s.shard_hash),
                        Some(_) => sh.contains_encoded(index.encoded(s.local)),
                    });
                    if in_shard {
                        let encoded = index.encoded(s.local);
                        let at = arena.len();
                        arena.extend_from_slice(encoded);
                        let key_at = arena.len();
                        if one_day {
                            arena.extend_from_slice(&s.rank.to_be_bytes());
                        } else {
                            Labels::sort_key(encoded, &mut arena);
                        }
                        selected.push((s.id, s.local, at..key_at, key_at..arena.len()));
                    }
                }
                selected
            };
            if hints.labels_only {
                series.extend(selected.into_iter().map(|(_, _, labels, order)| Selected {
                    labels,
                    order,
                    sources: Vec::new(),
                    histograms: Vec::new(),
                }));
                continue;
            }
            if let Some(warnings) = &self.warnings {
                self.report_recorded_losses(snap, &selected, &arena, warnings);
            }
            let locals: Vec<u32> = selected.iter().map(|&(_, local, ..)| local).collect();
            let fresh = snap.head.series(&locals, self.mint, self.maxt);
            // Parts outside the range are not searched per series: a query
            // over the last minutes skips those flushed before them.
            let (mint, maxt) = (self.mint, self.maxt);
            let mut parts: Vec<_> = snap
                .parts
                .all()
                .filter(|p| p.meta().maxt >= mint && p.meta().mint <= maxt)
                .cloned()
                .collect();
            let tombs = tombstones_by_id(&snap.tombstones);
            // Only the newest sample is wanted and no deletion can hide it:
            // parts are searched latest-ending first, only until one ends
            // before the newest sample found.
            let newest_first = hints.newest_only && tombs.is_empty();
            if newest_first {
                parts.sort_by_key(|p| std::cmp::Reverse(p.meta().maxt));
            }
            let mut cursors: Vec<_> = parts.iter().map(|p| p.block_cursor()).collect();
            let (mut keys, mut sources) = (Vec::new(), Vec::new());
            let store = snap.partition.histograms();
            // A partition that lost a histogram file may hold markers of any series.
            let lost = snap.partition.lost_histograms();
            let with_histograms =
                |id: u64| (lost || (!store.is_empty() && store.has(id))).then(|| (snap.partition.clone(), id));
            for ((id, _, labels, order), rows) in selected.into_iter().zip(fresh) {
                // Unflushed rows are the newest writes of all.
                // About one block per part, and the rows: allocated once.
                let mut of_series = Vec::with_capacity(parts.len() + 1);
                of_series.extend(Ranked::rows(u64::MAX, rows));
                if newest_first {
                    newest_sources_of(&parts, &mut cursors, id, self.mint, self.maxt, &mut of_series);
                } else {
                    sources_of(&parts, &mut cursors, id, self.mint, self.maxt, &tombs, &mut of_series);
                }
                if hints.newest_only {
                    keep_newest_source(&mut of_series, self.maxt);
                }
                if !of_series.is_empty() {
                    keys.push((labels, order, with_histograms(id)));
                    sources.push(of_series);
                }
            }
            drop(store);
            for part in &parts {
                share_part_reads(part, &mut sources, &mut read_budget);
            }
            series.extend(
                keys.into_iter()
                    .zip(sources)
                    .map(|((labels, order, histograms), sources)| Selected {
                        labels,
                        order,
                        sources,
                        histograms: histograms.into_iter().collect(),
                    }),
            );
        }
        // Stable: a series found in several days keeps its days in order.
        let order = |a: &Selected, b: &Selected| arena[a.order.clone()].cmp(&arena[b.order.clone()]);
        if series.len() >= PARALLEL_SORT_MIN {
            series.par_sort_by(order);
        } else {
            series.sort_by(order);
        }
        // Sort keys are equal exactly when the label sets are.
        series.dedup_by(|later, earlier| {
            let same = arena[later.order.clone()] == arena[earlier.order.clone()];
            if same {
                earlier.sources.append(&mut later.sources);
                earlier.histograms.append(&mut later.histograms);
            }
            same
        });
        let (mint, maxt, labels_only) = (self.mint, self.maxt, hints.labels_only);
        let arena = Arc::new(arena);
        let warnings = self.warnings.clone();
        let limit = hints.limit.unwrap_or(usize::MAX);
        let iter = series
            .into_iter()
            .filter_map(
                move |Selected {
                          labels,
                          sources,
                          histograms,
                          ..
                      }| {
                    let losses = warnings.as_ref().map(|warnings| LossReport {
                        warnings: warnings.clone(),
                        arena: arena.clone(),
                        labels: labels.clone(),
                    });
                    // The index only holds encodings that decoded when inserted.
                    let labels = match Labels::decode(&arena[labels]) {
                        Ok((labels, _)) => labels,
                        Err(e) => {
                            return Some(Err(StorageError::Corrupt {
                                path: "<index>".into(),
                                reason: format!("undecodable labels: {e}"),
                            }));
                        }
                    };
                    if labels_only {
                        let samples: Box<dyn SampleBlocks> = Box::new(VecSampleBlocks::new([]));
                        return Some(Ok(Series::floats(labels, samples)));
                    }
                    let mut reader = SeriesReader::reporting_losses(sources, mint, maxt, losses);
                    if !histograms.is_empty() {
                        return with_histograms(labels, reader, &histograms, mint, maxt).transpose();
                    }
                    // Deletions can leave a series with blocks but no samples: skip it.
                    match reader.has_samples() {
                        Ok(true) => Some(Ok(Series::floats(labels, Box::new(reader)))),
                        Ok(false) => None,
                        Err(e) => Some(Err(e)),
                    }
                },
            )
            .take(limit);
        Ok(Box::new(iter))
    }

    fn label_names(&self, matchers: &[Matcher], limit: Option<usize>) -> Result<Vec<String>, StorageError> {
        let mut out = BTreeSet::new();
        for snap in &self.snaps {
            let index = snap.partition.index();
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
            let index = snap.partition.index();
            let set = (!matchers.is_empty()).then(|| index.select(matchers));
            index.label_values(name, set.as_ref(), &mut out);
        }
        Ok(out.into_iter().take(limit.unwrap_or(usize::MAX)).collect())
    }
}

/// A series whose samples may hold histogram markers, read whole: its
/// floats, and the bodies of its markers in place of them. `None` if
/// nothing is left in range.
fn with_histograms(
    labels: Labels,
    mut reader: SeriesReader,
    partitions: &[(Arc<Partition>, u64)],
    mint: i64,
    maxt: i64,
) -> Result<Option<Series>, StorageError> {
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let range = reader.read_into(&mut ts, &mut vs)?;
    let (ts, vs) = (&ts[range.clone()], &vs[range]);
    let marked: Vec<i64> = ts
        .iter()
        .zip(vs)
        .filter(|(_, v)| is_marker(**v))
        .map(|(t, _)| *t)
        .collect();
    let mut bodies: BTreeMap<i64, Arc<Histogram>> = BTreeMap::new();
    if let (Some(&first), Some(&last)) = (marked.first(), marked.last()) {
        // Days do not overlap, so each timestamp is found in one partition.
        for (p, id) in partitions {
            bodies.extend(p.histograms().read(*id, first.max(mint), last.min(maxt))?);
        }
    }
    // Every visible marker has its body (an invariant of the store): one
    // that does not is damage to report, not a sample to leave out, unless
    // the file that held it was quarantined (then it is left out).
    let lost = partitions.iter().any(|(p, _)| p.lost_histograms());
    let histograms: Vec<HistogramSample> = marked
        .iter()
        .filter(|t| !lost || bodies.contains_key(t))
        .map(|t| match bodies.get(t) {
            Some(h) => Ok(HistogramSample { t: *t, h: h.clone() }),
            None => Err(StorageError::Corrupt {
                path: "<histogram store>".into(),
                reason: format!("series {labels} has a histogram at {t} without its body"),
            }),
        })
        .collect::<Result<_, _>>()?;
    let (fts, fvs): (Vec<i64>, Vec<f64>) = ts
        .iter()
        .zip(vs)
        .filter(|(_, v)| !is_marker(**v))
        .map(|(t, v)| (*t, *v))
        .unzip();
    if fts.is_empty() && histograms.is_empty() {
        return Ok(None);
    }
    Ok(Some(Series {
        labels,
        samples: Box::new(VecSampleBlocks::from_columns(fts, fvs)),
        histograms,
    }))
}
