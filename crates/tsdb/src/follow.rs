//! The WAL as a feed: what remote write forwards is read back from the log
//! every acknowledged write is in, so a queue resumes after a restart or a
//! kill where it stopped, and the write path pays nothing for it. A reader
//! holds the segments it has not passed (wal/holds.rs).

use std::sync::Arc;

use cairn_model::{EncodedLabels, Histogram, Labels};
use cairn_storage::StorageError;

use crate::day::Day;
use crate::engine::Tsdb;
use crate::histograms::is_marker;
use crate::wal;
use crate::wal::record::{self, ForwardBatch};
use crate::wal::tail::{TailEvent, WalPosition, WalTail};

/// One day's part of a WAL record.
#[derive(Debug, Default, PartialEq)]
pub struct WalFeedDay<'a> {
    pub day: i32,
    /// Series this record created: their ids and labels.
    pub new_series: Vec<(u64, Labels)>,
    /// A labelled record's series (agent mode's, which no index knows), by
    /// the record-local id its samples carry: their label encodings
    /// ([`Labels::encode`]), borrowed from the record. `new_series` is
    /// empty then.
    pub labelled: Vec<EncodedLabels<'a>>,
    /// Float samples: series id, timestamp, value (stale markers included).
    pub samples: Vec<(u64, i64, f64)>,
    /// Native histogram samples: series id, timestamp, histogram.
    pub histograms: Vec<(u64, i64, Arc<Histogram>)>,
}

/// A record of the WAL: one committed batch.
pub type WalFeedRecord<'a> = Vec<WalFeedDay<'a>>;

impl Tsdb {
    /// The end of the WAL now: a reader starting here sees what is committed after.
    pub fn wal_end(&self) -> WalPosition {
        self.inner.wal.end()
    }

    /// Records appended to the WAL so far: taken before [`Tsdb::read_wal`],
    /// it is what [`Tsdb::wait_for_wal`] waits past when that finds the end.
    pub fn wal_appends(&self) -> u64 {
        self.inner.wal.appends()
    }

    /// Waits until a record is appended after [`Tsdb::wal_appends`] gave
    /// `seen`, [`Tsdb::wake_wal_readers`] is called, or `timeout` passes.
    pub fn wait_for_wal(&self, seen: u64, timeout: std::time::Duration) {
        self.inner.wal.wait_for_append(seen, timeout);
    }

    /// Ends every [`Tsdb::wait_for_wal`] now.
    pub fn wake_wal_readers(&self) {
        self.inner.wal.wake_readers();
    }

    /// The next record after `tail`'s position, into `payload`.
    pub fn read_wal(&self, tail: &mut WalTail, payload: &mut Vec<u8>) -> Result<TailEvent, StorageError> {
        tail.next(&self.inner.wal, payload)
    }

    /// Appends a forward batch (agent mode's): durable as a commit is, stored nowhere.
    pub fn append_forward_batch(&self, batch: &ForwardBatch<'_>) -> Result<(), StorageError> {
        let db = &*self.inner;
        db.check_writable()?;
        db.admit_write()?;
        let record = wal::frame(|dst| record::encode_forward(dst, batch));
        let appended = db.wal.append_framed(&record);
        db.health.record_wal_append(&appended);
        appended?;
        db.counters
            .samples_ingested
            .fetch_add(u64::from(batch.series), std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Whether a commit waits for the WAL to reach the disk (`WalSync::EveryCommit`).
    pub fn syncs_every_commit(&self) -> bool {
        self.inner.config.wal_sync == crate::WalSync::EveryCommit
    }

    /// The times a sample may have to be accepted: inside retention, not too far ahead.
    pub fn accepted_times(&self) -> std::ops::RangeInclusive<i64> {
        self.inner.min_valid_t()..=self.inner.max_valid_t()
    }

    /// The forward batch a record [`Tsdb::read_wal`] read holds, if it is
    /// one (then [`Tsdb::decode_wal_record`] finds nothing in it).
    pub fn forward_batch(payload: &[u8]) -> Result<Option<ForwardBatch<'_>>, String> {
        record::decode_forward(payload).map_err(str::to_string)
    }

    /// Decodes a record [`Tsdb::read_wal`] read, decompressing into
    /// `scratch` (kept by the caller, so a reader allocates it once).
    /// Errors name what was malformed.
    pub fn decode_wal_record<'a>(payload: &'a [u8], scratch: &'a mut Vec<u8>) -> Result<WalFeedRecord<'a>, String> {
        let days = record::decode_batch(payload, scratch).map_err(str::to_string)?;
        days.into_iter()
            .map(|d| {
                let new_series = d
                    .new_series
                    .iter()
                    .map(|&(id, encoded)| {
                        Labels::decode(encoded)
                            .map(|(labels, _)| (id, labels))
                            .map_err(|e| format!("labels of series {id}: {e}"))
                    })
                    .collect::<Result<_, _>>()?;
                // A histogram's row holds only its marker; the body comes apart.
                let samples = d.rows.into_iter().filter(|&(_, _, v)| !is_marker(v)).collect();
                Ok(WalFeedDay {
                    day: d.day,
                    new_series,
                    labelled: d.labelled,
                    samples,
                    histograms: d.histograms,
                })
            })
            .collect()
    }

    /// The labels of series `id` of day `day`, while that day is kept.
    pub fn series_labels(&self, day: i32, id: u64) -> Option<Labels> {
        let partition = self.inner.partitions.read().get(&Day(day)).cloned()?;
        let index = partition.index();
        index.local_of(id).map(|local| index.labels_of(local))
    }

    /// Keeps WAL segments from `segment` on for the reader `name` (across
    /// restarts too) until moved on or dropped.
    pub fn hold_wal(&self, name: &str, segment: u64) -> Result<(), StorageError> {
        self.inner.wal.hold(name, segment)
    }

    /// The segment `name` holds, if any.
    pub fn wal_hold(&self, name: &str) -> Option<u64> {
        self.inner.wal.held(name)
    }

    /// Drops every WAL hold but those named.
    pub fn retain_wal_holds(&self, keep: &[String]) -> Result<(), StorageError> {
        self.inner.wal.retain_holds(keep)
    }
}
