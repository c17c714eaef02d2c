use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use cairn_model::{EncodedLabels, Histogram, HistogramSample, LabelError, Labels, Sample};
use cairn_storage::{Appender, CommitReport, RejectReason, StorageError};

use crate::day::Day;
use crate::engine::Inner;
use crate::head::{Row, UNKNOWN_LOCAL};
use crate::histograms;
use crate::index::series_hash;
use crate::partition::Partition;
use crate::wal::record::{DayBatch, SeriesRows, encode_batch};

/// One series' samples for one day: ranges into the appender's shared
/// buffers, so buffering a series allocates nothing of its own.
struct Pending {
    /// Canonical label encoding: `labels[encoded]`.
    encoded: Range<usize>,
    hash: u64,
    /// Samples: `DaySamples::{ts, vs}[samples]`.
    samples: Range<usize>,
}

/// The samples of one day, of every series, series after series.
#[derive(Default)]
struct DaySamples {
    series: Vec<Pending>,
    ts: Vec<i64>,
    vs: Vec<f64>,
    /// Bodies of the histogram samples among them (whose value is the
    /// marker): the series' label encoding, timestamp and histogram.
    histograms: Vec<(Range<usize>, i64, Arc<Histogram>)>,
}

/// Histogram bodies per day, in `by_day` order, with their series' ids.
type DayHistograms = Vec<Vec<(u64, i64, Arc<Histogram>)>>;

pub struct TsdbAppender<'a> {
    db: &'a Inner,
    /// Label encodings of every appended series, one after another.
    labels: Vec<u8>,
    by_day: BTreeMap<Day, DaySamples>,
    rejected: BTreeMap<RejectReason, u64>,
    min_t: i64,
    max_t: i64,
}

impl<'a> TsdbAppender<'a> {
    pub fn new(db: &'a Inner) -> Self {
        Self {
            db,
            labels: Vec::new(),
            by_day: BTreeMap::new(),
            rejected: BTreeMap::new(),
            min_t: db.min_valid_t(),
            max_t: db.max_valid_t(),
        }
    }

    /// [`Self::add_samples`] for floats a client wrote: one with the
    /// histogram marker's bits is kept as the ordinary NaN.
    fn add_floats(&mut self, encoded: Range<usize>, samples: &[Sample]) {
        if samples.iter().any(|s| histograms::is_marker(s.v)) {
            let unmarked: Vec<Sample> = samples
                .iter()
                .map(|s| Sample::new(s.t, histograms::unmark(s.v)))
                .collect();
            self.add_samples(encoded, &unmarked);
        } else {
            self.add_samples(encoded, samples);
        }
    }

    /// Buffers one series' samples by day; `encoded` is its label
    /// encoding's range in `self.labels`.
    fn add_samples(&mut self, encoded: Range<usize>, samples: &[Sample]) {
        let hash = series_hash(&self.labels[encoded.clone()]);
        let mut rest = samples;
        while let Some(first) = rest.first() {
            if first.t < self.min_t || first.t > self.max_t {
                let reason = if first.t < self.min_t {
                    RejectReason::OutOfRetention
                } else {
                    RejectReason::TooFarInFuture
                };
                *self.rejected.entry(reason).or_default() += 1;
                rest = &rest[1..];
                continue;
            }
            // The run of samples in this day and in the accepted range
            // (usually all of them) is buffered in one step.
            let day = Day::of(first.t);
            let (lo, hi) = (day.mint().max(self.min_t), day.maxt().min(self.max_t));
            let n = rest.iter().position(|s| s.t < lo || s.t > hi).unwrap_or(rest.len());
            let (run, tail) = rest.split_at(n);
            rest = tail;
            let d = self.by_day.entry(day).or_default();
            // A series' samples for one day must be one contiguous range: start
            // a new entry unless this series' run was the last one added to the day.
            let continues = d
                .series
                .last()
                .is_some_and(|p| p.encoded == encoded && p.samples.end == d.ts.len());
            if !continues {
                d.series.push(Pending {
                    encoded: encoded.clone(),
                    hash,
                    samples: d.ts.len()..d.ts.len(),
                });
            }
            d.ts.extend(run.iter().map(|s| s.t));
            d.vs.extend(run.iter().map(|s| s.v));
            if let Some(p) = d.series.last_mut() {
                p.samples.end = d.ts.len();
            }
        }
    }
}

impl TsdbAppender<'_> {
    /// Drops the series new to today's partition beyond the limit of active
    /// series, counting their samples as refused; `partitions` and `known`
    /// are in `by_day` order and stay so. Checked before the commit lock, so
    /// commits racing at the limit may pass it by a batch.
    fn limit_new_series(&mut self, partitions: &mut Vec<Arc<Partition>>, known: &mut Vec<Vec<Option<(u64, u32)>>>) {
        let limit = self.db.max_active_series.load(Ordering::Relaxed);
        if limit == 0 {
            return;
        }
        let today = Day::of(crate::engine::now_ms());
        let Some(at) = partitions.iter().position(|p| p.day == today) else {
            return;
        };
        let new = known[at].iter().filter(|k| k.is_none()).count() as u64;
        if new == 0 {
            return;
        }
        let mut room = limit.saturating_sub(partitions[at].index().live().len());
        if new <= room {
            return;
        }
        let Some(day) = self.by_day.get_mut(&today) else {
            return;
        };
        let mut refused = 0u64;
        let mut kept_known = Vec::with_capacity(known[at].len());
        let series = std::mem::take(&mut day.series);
        for (pending, id) in series.into_iter().zip(std::mem::take(&mut known[at])) {
            if id.is_none() {
                if room == 0 {
                    refused += pending.samples.len() as u64;
                    continue;
                }
                room -= 1;
            }
            day.series.push(pending);
            kept_known.push(id);
        }
        known[at] = kept_known;
        *self.rejected.entry(RejectReason::SeriesLimit).or_default() += refused;
        if day.series.is_empty() {
            self.by_day.remove(&today);
            partitions.remove(at);
            known.remove(at);
        }
    }
}

/// Series ids and local numbers per day, in `by_day` order, one per
/// pending series; the local number of a series the commit creates is
/// [`UNKNOWN_LOCAL`] (the index gives it one when the commit applies).
type DayIds = Vec<Vec<(u64, u32)>>;
/// Series created by a commit per day: id and canonical label encoding.
type NewSeries<'l> = Vec<Vec<(u64, &'l [u8])>>;
/// What the commit lock writes and applies (see [`TsdbAppender::prepare`]).
type Prepared<'l> = (Vec<Vec<Row>>, NewSeries<'l>, DayHistograms, Vec<u8>);

impl TsdbAppender<'_> {
    /// Gives ids to the series `known` lacks: the first free id probing from
    /// their hash, also avoiding ids given to other new series of this batch.
    /// Runs under the commit lock, so two commits never give one id twice.
    fn resolve_new_series(
        &self,
        partitions: &[Arc<Partition>],
        known: Vec<Vec<Option<(u64, u32)>>>,
    ) -> (DayIds, NewSeries<'_>) {
        let mut ids = Vec::with_capacity(partitions.len());
        let mut new_series = Vec::with_capacity(partitions.len());
        for ((p, d), known) in partitions.iter().zip(self.by_day.values()).zip(known) {
            let index = p.index();
            let mut created: HashMap<u64, &[u8]> = HashMap::new();
            let mut day_new = Vec::new();
            let mut day_ids = Vec::with_capacity(d.series.len());
            for (s, known) in d.series.iter().zip(known) {
                let encoded = &self.labels[s.encoded.clone()];
                let id = match known.ok_or(()).or_else(|()| index.lookup(s.hash, encoded)) {
                    Ok(known) => known,
                    Err(mut id) => loop {
                        match created.get(&id) {
                            Some(&enc) if enc == encoded => break (id, UNKNOWN_LOCAL),
                            Some(_) => id = id.wrapping_add(1),
                            None if index.local_of(id).is_some() => id = id.wrapping_add(1),
                            None => {
                                created.insert(id, encoded);
                                day_new.push((id, encoded));
                                break (id, UNKNOWN_LOCAL);
                            }
                        }
                    },
                };
                day_ids.push(id);
            }
            ids.push(day_ids);
            new_series.push(day_new);
        }
        (ids, new_series)
    }

    /// What the commit lock writes and applies: the rows per day, the new
    /// series per day, the histogram bodies per day, and the batch as one
    /// framed WAL record.
    fn prepare<'l>(&'l self, ids: &DayIds, new_series: NewSeries<'l>) -> Prepared<'l> {
        let histograms = self.histograms(ids);
        let record = self.encode_record(ids, &new_series, &histograms, false);
        (self.rows(ids), new_series, histograms, record)
    }

    /// The histogram bodies per day with their series' ids; those of series
    /// refused for the series limit are left out with their markers.
    fn histograms(&self, ids: &DayIds) -> DayHistograms {
        self.by_day
            .values()
            .zip(ids)
            .map(|(d, day_ids)| {
                if d.histograms.is_empty() {
                    return Vec::new();
                }
                let id_of: HashMap<(usize, usize), u64> = d
                    .series
                    .iter()
                    .zip(day_ids)
                    .map(|(s, &(id, _))| ((s.encoded.start, s.encoded.end), id))
                    .collect();
                let mut out: Vec<(u64, i64, Arc<Histogram>)> = d
                    .histograms
                    .iter()
                    .filter_map(|(enc, t, h)| Some((*id_of.get(&(enc.start, enc.end))?, *t, h.clone())))
                    .collect();
                // Grouped by series for the WAL's blocks; stable, so later
                // writes of a timestamp stay later.
                out.sort_by_key(|h| h.0);
                out
            })
            .collect()
    }

    /// The batch as one framed WAL record.
    fn encode_record(
        &self,
        ids: &DayIds,
        new_series: &NewSeries<'_>,
        histograms: &DayHistograms,
        labelled: bool,
    ) -> Vec<u8> {
        let groups: Vec<DayBatch> = self
            .by_day
            .iter()
            .zip(ids)
            .zip(new_series)
            .zip(histograms)
            .map(|((((day, d), day_ids), day_new), day_histograms)| DayBatch {
                day: *day,
                histograms: day_histograms,
                new_series: day_new,
                rows: d
                    .series
                    .iter()
                    .zip(day_ids)
                    .map(|(s, &(id, _))| SeriesRows {
                        id,
                        ts: &d.ts[s.samples.clone()],
                        vs: &d.vs[s.samples.clone()],
                    })
                    .collect(),
            })
            .collect();
        crate::wal::frame(|dst| encode_batch(dst, &groups, labelled))
    }

    /// The batch as rows, per day.
    fn rows(&self, ids: &DayIds) -> Vec<Vec<Row>> {
        self.by_day
            .values()
            .zip(ids)
            .map(|(d, day_ids)| {
                let mut rows = Vec::with_capacity(d.ts.len());
                for (s, &(id, local)) in d.series.iter().zip(day_ids) {
                    let samples = s.samples.clone();
                    rows.extend(d.ts[samples.clone()].iter().zip(&d.vs[samples]).map(|(&t, &v)| Row {
                        id,
                        local,
                        t,
                        v,
                    }));
                }
                rows
            })
            .collect()
    }
}

impl Appender for TsdbAppender<'_> {
    fn append(&mut self, labels: &Labels, samples: &[Sample]) -> Result<(), StorageError> {
        labels.validate_for_storage().map_err(|e| StorageError::InvalidSeries {
            labels: labels.to_string(),
            reason: e.to_string(),
        })?;
        let start = self.labels.len();
        labels.encode(&mut self.labels);
        self.add_floats(start..self.labels.len(), samples);
        Ok(())
    }

    fn append_histograms(&mut self, labels: &Labels, samples: &[HistogramSample]) -> Result<(), StorageError> {
        let invalid = |reason: String| StorageError::InvalidSeries {
            labels: labels.to_string(),
            reason,
        };
        labels.validate_for_storage().map_err(|e| invalid(e.to_string()))?;
        for s in samples {
            s.h.validate().map_err(|e| invalid(e.to_string()))?;
        }
        let start = self.labels.len();
        labels.encode(&mut self.labels);
        let encoded = start..self.labels.len();
        // Refused samples are counted by `add_samples`, from the markers.
        let mut markers = Vec::with_capacity(samples.len());
        for s in samples {
            markers.push(Sample::new(s.t, histograms::marker()));
            if s.t >= self.min_t && s.t <= self.max_t {
                let day = self.by_day.entry(Day::of(s.t)).or_default();
                day.histograms.push((encoded.clone(), s.t, s.h.clone()));
            }
        }
        self.add_samples(encoded, &markers);
        Ok(())
    }

    fn append_encoded(&mut self, labels: EncodedLabels<'_>, samples: &[Sample]) -> Result<(), StorageError> {
        // Canonical by its type; only the empty set is not a series.
        if labels.is_empty() {
            return Err(StorageError::InvalidSeries {
                labels: "{}".into(),
                reason: LabelError::Empty.to_string(),
            });
        }
        let start = self.labels.len();
        self.labels.extend_from_slice(labels.as_bytes());
        self.add_floats(start..self.labels.len(), samples);
        Ok(())
    }

    fn commit(mut self: Box<Self>) -> Result<CommitReport, StorageError> {
        let db = self.db;
        db.check_writable()?;
        if !self.by_day.is_empty() {
            db.admit_write()?;
        }
        if !db.config.keep_samples {
            return (*self).commit_labelled();
        }
        let mut partitions = self
            .by_day
            .keys()
            .map(|&d| db.partition(d))
            .collect::<Result<Vec<_>, _>>()?;

        // Known series are looked up before taking the commit lock (an id,
        // once given, stays with its labels); only new ones are resolved under it.
        let mut known: Vec<Vec<Option<(u64, u32)>>> = partitions
            .iter()
            .zip(self.by_day.values())
            .map(|(p, d)| {
                p.index()
                    .lookup_many(d.series.iter().map(|s| (s.hash, &self.labels[s.encoded.clone()])))
            })
            .collect();
        self.limit_new_series(&mut partitions, &mut known);
        let mut report = self.take_rejected();
        if self.by_day.is_empty() {
            return Ok(report);
        }
        // When every series is known (the steady state), the WAL record and
        // the rows are built here too, so the commit lock only orders, writes
        // and applies them: it is the one serial step of ingestion.
        let oldest = self.by_day.values().next().and_then(|d| d.ts.iter().min().copied());
        let all_known = known.iter().flatten().all(Option::is_some);
        let prepared = all_known.then(|| {
            let ids: DayIds = known.iter().map(|d| d.iter().flatten().copied().collect()).collect();
            self.prepare(&ids, vec![Vec::new(); ids.len()])
        });

        let commit = db.commit_lock.lock();
        let seq = db.sequence.take()?;
        let (rows, new_series, histograms, record) = match prepared {
            Some(p) => p,
            None => {
                let (ids, new_series) = self.resolve_new_series(&partitions, known);
                self.prepare(&ids, new_series)
            }
        };
        // Everything that can refuse the batch is asked before the WAL write:
        // once the record is written the batch is committed (replay would
        // apply it), so the commit must not report a failure after that.
        for (p, day_new) in partitions.iter().zip(&new_series).filter(|(_, n)| !n.is_empty()) {
            p.check_room(day_new)?;
        }
        let appended = db.wal.append_framed(&record);
        db.health.record_wal_append(&appended);
        appended?;

        let mut full = Vec::new();
        for (((p, rows), day_new), day_histograms) in partitions.iter().zip(&rows).zip(&new_series).zip(&histograms) {
            report.samples_accepted += rows.len() as u64;
            report.histograms_accepted += day_histograms.len() as u64;
            report.series_created += day_new.len() as u64;
            // Fails only on a broken invariant (a row of a series the index
            // lacks), which replaying this record would meet again.
            if p.apply(day_new, rows, day_histograms, seq, &db.config)? {
                full.push(p);
            }
        }
        drop(commit);
        if let Some(t) = oldest {
            db.settled.record_write(t);
        }
        // Compression of full heads runs outside the commit lock, so the
        // next commit proceeds meanwhile (on another core). The rows are
        // committed and visible whether or not sealing succeeds: a failed
        // seal leaves them in the head for the next one to retry.
        for p in full {
            if let Err(e) = p.seal_rows() {
                tracing::error!(day = %p.day, error = %e, "sealing committed rows failed; retrying at the next seal");
            }
            if p.memory_part_count() > crate::engine::MAX_MEMORY_PARTS {
                db.nudge();
            }
        }
        db.counters
            .samples_ingested
            .fetch_add(report.samples_accepted, Ordering::Relaxed);
        db.counters
            .series_created
            .fetch_add(report.series_created, Ordering::Relaxed);
        let memory = db.memory_bytes();
        db.health.note_memory(memory);
        if memory > db.config.flush_threshold_bytes() {
            db.nudge();
        }
        Ok(report)
    }

    fn rollback(self: Box<Self>) {}
}

impl TsdbAppender<'_> {
    /// A report of the samples refused so far, counted in the engine's counters.
    fn take_rejected(&mut self) -> CommitReport {
        let report = CommitReport {
            samples_rejected: std::mem::take(&mut self.rejected),
            ..CommitReport::default()
        };
        for (reason, n) in &report.samples_rejected {
            let counter = match reason {
                RejectReason::OutOfRetention => &self.db.counters.out_of_retention,
                RejectReason::TooFarInFuture => &self.db.counters.too_far_in_future,
                RejectReason::SeriesLimit => &self.db.counters.series_limit,
                // Decided before storage, by a cluster's HA tracker.
                RejectReason::HaReplica => continue,
            };
            counter.fetch_add(*n, Ordering::Relaxed);
        }
        report
    }

    /// Agent mode: the batch goes to the WAL only, as a labelled record
    /// (each series with its labels, under record-local ids), for remote
    /// write to forward. No index or partition learns of it, so memory does
    /// not grow with the series forwarded.
    fn commit_labelled(mut self) -> Result<CommitReport, StorageError> {
        let db = self.db;
        let mut report = self.take_rejected();
        if self.by_day.is_empty() {
            return Ok(report);
        }
        let ids: DayIds = self
            .by_day
            .values()
            .map(|d| (0..d.series.len() as u64).map(|i| (i, UNKNOWN_LOCAL)).collect())
            .collect();
        let new_series: NewSeries<'_> = self
            .by_day
            .values()
            .map(|d| {
                d.series
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (i as u64, &self.labels[s.encoded.clone()]))
                    .collect()
            })
            .collect();
        let histograms = self.histograms(&ids);
        let record = self.encode_record(&ids, &new_series, &histograms, true);
        let appended = db.wal.append_framed(&record);
        db.health.record_wal_append(&appended);
        appended?;
        for (d, h) in self.by_day.values().zip(&histograms) {
            report.samples_accepted += d.ts.len() as u64;
            report.histograms_accepted += h.len() as u64;
        }
        db.counters
            .samples_ingested
            .fetch_add(report.samples_accepted, Ordering::Relaxed);
        Ok(report)
    }
}
