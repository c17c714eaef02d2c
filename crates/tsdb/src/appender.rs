use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;

use cairn_model::{Labels, Sample};
use cairn_storage::{Appender, CommitReport, RejectReason, StorageError};

use crate::day::Day;
use crate::engine::Inner;
use crate::index::hash_labels;
use crate::rows::Row;
use crate::wal::record::{DayBatch, SeriesRows, encode_batch};

/// One series' samples for one day.
struct Pending {
    encoded: Vec<u8>,
    hash: u64,
    ts: Vec<i64>,
    vs: Vec<f64>,
}

pub struct TsdbAppender<'a> {
    db: &'a Inner,
    by_day: BTreeMap<Day, Vec<Pending>>,
    rejected: BTreeMap<RejectReason, u64>,
    min_t: i64,
    max_t: i64,
}

impl<'a> TsdbAppender<'a> {
    pub fn new(db: &'a Inner) -> Self {
        Self {
            db,
            by_day: BTreeMap::new(),
            rejected: BTreeMap::new(),
            min_t: db.min_valid_t(),
            max_t: db.max_valid_t(),
        }
    }
}

impl Appender for TsdbAppender<'_> {
    fn append(&mut self, labels: &Labels, samples: &[Sample]) -> Result<(), StorageError> {
        labels.validate_for_storage().map_err(|e| StorageError::InvalidSeries {
            labels: labels.to_string(),
            reason: e.to_string(),
        })?;
        let mut buf = Vec::with_capacity(128);
        labels.encode(&mut buf);
        let hash = hash_labels(&buf);
        // Moved into the first day's entry; only samples spanning days clone it.
        let mut encoded = Some(buf);
        // Where this series' samples go, per day touched (usually one).
        let mut slots: Vec<(Day, usize)> = Vec::with_capacity(1);
        for s in samples {
            let reason = if s.t < self.min_t {
                Some(RejectReason::OutOfRetention)
            } else if s.t > self.max_t {
                Some(RejectReason::TooFarInFuture)
            } else {
                None
            };
            if let Some(r) = reason {
                *self.rejected.entry(r).or_default() += 1;
                continue;
            }
            let day = Day::of(s.t);
            let at = match slots.iter().find(|(d, _)| *d == day) {
                Some(&(_, at)) => at,
                None => {
                    let encoded = match (encoded.take(), slots.first()) {
                        (Some(e), _) => e,
                        (None, Some((d, i))) => self.by_day[d][*i].encoded.clone(),
                        (None, None) => unreachable!("BUG: label encoding taken without a slot"),
                    };
                    let list = self.by_day.entry(day).or_default();
                    list.push(Pending {
                        encoded,
                        hash,
                        ts: Vec::with_capacity(samples.len()),
                        vs: Vec::with_capacity(samples.len()),
                    });
                    slots.push((day, list.len() - 1));
                    list.len() - 1
                }
            };
            let p = &mut self.by_day.get_mut(&day).expect("BUG: slot without a day")[at];
            p.ts.push(s.t);
            p.vs.push(s.v);
        }
        Ok(())
    }

    fn commit(self: Box<Self>) -> Result<CommitReport, StorageError> {
        let db = self.db;
        let mut report = CommitReport {
            samples_rejected: self.rejected,
            ..CommitReport::default()
        };
        for (reason, n) in &report.samples_rejected {
            let counter = match reason {
                RejectReason::OutOfRetention => &db.counters.out_of_retention,
                RejectReason::TooFarInFuture => &db.counters.too_far_in_future,
            };
            counter.fetch_add(*n, Ordering::Relaxed);
        }
        if self.by_day.is_empty() {
            return Ok(report);
        }
        let partitions = self
            .by_day
            .keys()
            .map(|&d| db.partition(d))
            .collect::<Result<Vec<_>, _>>()?;

        let commit = db.commit_lock.lock();
        let seq = db.next_seq.fetch_add(1, Ordering::Relaxed);
        // Resolve series ids. New series get the first free id probing from
        // their hash, also avoiding ids given to other new series of this batch.
        let mut ids: Vec<Vec<u64>> = Vec::with_capacity(partitions.len());
        let mut new_series: Vec<Vec<(u64, &[u8])>> = Vec::with_capacity(partitions.len());
        for (p, pending) in partitions.iter().zip(self.by_day.values()) {
            let index = p.index.read();
            let mut day_ids = Vec::with_capacity(pending.len());
            let mut created: HashMap<u64, &[u8]> = HashMap::new();
            let mut day_new = Vec::new();
            for s in pending {
                let id = match index.lookup(s.hash, &s.encoded) {
                    Ok((id, _)) => id,
                    Err(mut id) => loop {
                        match created.get(&id) {
                            Some(&enc) if enc == s.encoded.as_slice() => break id,
                            Some(_) => id = id.wrapping_add(1),
                            None if index.local_of(id).is_some() => id = id.wrapping_add(1),
                            None => {
                                created.insert(id, &s.encoded);
                                day_new.push((id, s.encoded.as_slice()));
                                break id;
                            }
                        }
                    },
                };
                day_ids.push(id);
            }
            ids.push(day_ids);
            new_series.push(day_new);
        }

        let mut payload = Vec::new();
        let groups: Vec<_> = self
            .by_day
            .iter()
            .zip(&ids)
            .zip(&new_series)
            .map(|(((day, pending), day_ids), day_new)| {
                let rows = pending
                    .iter()
                    .zip(day_ids)
                    .map(|(s, &id)| SeriesRows {
                        id,
                        ts: &s.ts,
                        vs: &s.vs,
                    })
                    .collect();
                DayBatch {
                    day: *day,
                    new_series: day_new.clone(),
                    rows,
                }
            })
            .collect();
        encode_batch(&mut payload, &groups);
        db.wal.append(&payload)?;

        let mut full = Vec::new();
        for ((p, pending), (day_ids, day_new)) in partitions
            .iter()
            .zip(self.by_day.values())
            .zip(ids.iter().zip(&new_series))
        {
            let rows: Vec<Row> = pending
                .iter()
                .zip(day_ids)
                .flat_map(|(s, &id)| s.ts.iter().zip(&s.vs).map(move |(&t, &v)| Row { id, t, v }))
                .collect();
            report.samples_accepted += rows.len() as u64;
            report.series_created += day_new.len() as u64;
            if p.apply(day_new, &rows, seq, db.config.max_rows_per_buffer)? {
                full.push(p);
            }
        }
        drop(commit);
        // Compression of full row buffers runs outside the commit lock, so
        // the next commit proceeds meanwhile (on another core).
        for p in full {
            p.seal_rows()?;
        }
        db.counters
            .samples_ingested
            .fetch_add(report.samples_accepted, Ordering::Relaxed);
        db.counters
            .series_created
            .fetch_add(report.series_created, Ordering::Relaxed);
        if db.memory_bytes() > db.config.max_in_memory_bytes as u64 {
            db.nudge();
        }
        Ok(report)
    }

    fn rollback(self: Box<Self>) {}
}
