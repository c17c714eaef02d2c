//! Agent mode's scrapes, written as remote write sends them: a commit's
//! samples become remote write 1.0 series fields, the external labels
//! merged in, compressed once into a snappy block that is the commit's WAL
//! record (a forward batch). A queue without relabelling sends that block
//! as it is, so a sample is neither decoded nor compressed again on its way
//! out. External labels are those of the moment of the scrape, as vmagent
//! attaches them.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::sync::Arc;

use cairn_model::{EncodedLabels, HistogramSample, LabelError, Labels, Sample, WireLabels};
use cairn_protocols::remote_write::{
    encode_float_series, encode_label_pairs, encode_series, encode_wire_series, snappy_block,
};
use cairn_storage::{Appendable, Appender, CommitReport, RejectReason, StorageError};
use cairn_tsdb::{ForwardBatch, Tsdb};
use parking_lot::{Mutex, RwLock};

use crate::series::merge_missing;

/// Where agent mode's scrapes are appended.
pub struct ForwardAppendable {
    db: Arc<Tsdb>,
    external: RwLock<Arc<Labels>>,
    /// Buffers of finished appenders, for the next ones: as many as ever
    /// appended at once.
    buffers: Mutex<Vec<Buffers>>,
}

#[derive(Default)]
struct Buffers {
    /// The series fields of the commit so far.
    fields: Vec<u8>,
    /// One series' label fields.
    labels: Vec<u8>,
    /// Where the commit's block is compressed, at its start.
    block: Vec<u8>,
}

/// What a finished appender's buffers keep for the next one.
const KEPT_BUFFER_BYTES: usize = 1 << 20;

impl ForwardAppendable {
    pub fn new(db: Arc<Tsdb>) -> Self {
        Self {
            db,
            external: RwLock::default(),
            buffers: Mutex::default(),
        }
    }

    /// The external labels of the samples appended from now on.
    pub fn set_external_labels(&self, labels: Labels) {
        *self.external.write() = Arc::new(labels);
    }
}

impl Appendable for ForwardAppendable {
    /// A commit is a buffered write of one block, unless the WAL syncs
    /// every commit: no index, no lock held for long, no memory bound to
    /// wait under (agent mode keeps nothing in memory).
    fn commit_may_wait(&self) -> bool {
        self.db.syncs_every_commit()
    }

    fn appender(&self) -> Box<dyn Appender + '_> {
        Box::new(ForwardAppender {
            owner: self,
            external: self.external.read().clone(),
            buffers: self.buffers.lock().pop().unwrap_or_default(),
            times: self.db.accepted_times(),
            series: 0,
            histograms: 0,
            min_t: i64::MAX,
            max_t: i64::MIN,
            rejected: BTreeMap::new(),
        })
    }
}

struct ForwardAppender<'a> {
    owner: &'a ForwardAppendable,
    external: Arc<Labels>,
    buffers: Buffers,
    times: RangeInclusive<i64>,
    series: u32,
    histograms: u32,
    min_t: i64,
    max_t: i64,
    rejected: BTreeMap<RejectReason, u64>,
}

impl ForwardAppender<'_> {
    /// Writes one series' label fields, the external labels it lacks merged in.
    fn set_labels<'x>(&mut self, pairs: impl Iterator<Item = (&'x [u8], &'x [u8])>) {
        let labels = &mut self.buffers.labels;
        labels.clear();
        if self.external.is_empty() {
            encode_label_pairs(pairs, labels);
        } else {
            let external = self.external.iter().map(|l| (l.name.as_bytes(), l.value.as_bytes()));
            encode_label_pairs(merge_missing(pairs, external), labels);
        }
    }

    /// Whether a sample at `t` is taken; counts it either way.
    fn take(&mut self, t: i64) -> bool {
        if !self.times.contains(&t) {
            let reason = if t < *self.times.start() {
                RejectReason::OutOfRetention
            } else {
                RejectReason::TooFarInFuture
            };
            *self.rejected.entry(reason).or_default() += 1;
            return false;
        }
        self.series += 1;
        self.min_t = self.min_t.min(t);
        self.max_t = self.max_t.max(t);
        true
    }

    fn add_floats(&mut self, samples: &[Sample]) {
        for s in samples {
            if self.take(s.t) {
                let Buffers { fields, labels, .. } = &mut self.buffers;
                encode_series(labels, std::slice::from_ref(s), &[], fields);
            }
        }
    }

    fn add_histograms(&mut self, histograms: &[HistogramSample]) {
        for h in histograms {
            if self.take(h.t) {
                self.histograms += 1;
                let Buffers { fields, labels, .. } = &mut self.buffers;
                encode_series(labels, &[], std::slice::from_ref(h), fields);
            }
        }
    }
}

impl Appender for ForwardAppender<'_> {
    fn append(&mut self, labels: &Labels, samples: &[Sample]) -> Result<(), StorageError> {
        not_empty(labels.is_empty())?;
        self.set_labels(labels.iter().map(|l| (l.name.as_bytes(), l.value.as_bytes())));
        self.add_floats(samples);
        Ok(())
    }

    fn append_encoded(&mut self, labels: EncodedLabels<'_>, samples: &[Sample]) -> Result<(), StorageError> {
        not_empty(labels.is_empty())?;
        if !self.external.is_empty() {
            self.set_labels(labels.raw_pairs());
            self.add_floats(samples);
            return Ok(());
        }
        for s in samples {
            if self.take(s.t) {
                encode_float_series(labels, s, &mut self.buffers.fields);
            }
        }
        Ok(())
    }

    fn append_wire(&mut self, labels: WireLabels<'_>, samples: &[Sample]) -> Result<(), StorageError> {
        not_empty(labels.is_empty())?;
        if !self.external.is_empty() {
            self.set_labels(labels.pairs().map(|(name, value)| (name.as_bytes(), value.as_bytes())));
            self.add_floats(samples);
            return Ok(());
        }
        for s in samples {
            if self.take(s.t) {
                encode_wire_series(labels, s, &mut self.buffers.fields);
            }
        }
        Ok(())
    }

    fn append_histograms(&mut self, labels: &Labels, samples: &[HistogramSample]) -> Result<(), StorageError> {
        not_empty(labels.is_empty())?;
        self.set_labels(labels.iter().map(|l| (l.name.as_bytes(), l.value.as_bytes())));
        self.add_histograms(samples);
        Ok(())
    }

    fn append_series(
        &mut self,
        labels: EncodedLabels<'_>,
        samples: &[Sample],
        histograms: &[HistogramSample],
    ) -> Result<(), StorageError> {
        not_empty(labels.is_empty())?;
        self.set_labels(labels.raw_pairs());
        self.add_floats(samples);
        self.add_histograms(histograms);
        Ok(())
    }

    fn commit(mut self: Box<Self>) -> Result<CommitReport, StorageError> {
        let mut report = CommitReport {
            samples_rejected: std::mem::take(&mut self.rejected),
            ..CommitReport::default()
        };
        if self.series == 0 {
            return Ok(report);
        }
        let Buffers { fields, block, .. } = &mut self.buffers;
        let len = snappy_block(fields, block)
            .map_err(|reason| StorageError::LimitExceeded(format!("a commit of {} samples: {reason}", self.series)))?;
        self.owner.db.append_forward_batch(&ForwardBatch {
            series: self.series,
            histograms: self.histograms,
            min_t: self.min_t,
            max_t: self.max_t,
            block: block.get(..len).unwrap_or_default(),
        })?;
        report.samples_accepted = u64::from(self.series - self.histograms);
        report.histograms_accepted = u64::from(self.histograms);
        Ok(report)
    }

    fn rollback(self: Box<Self>) {}
}

/// The empty label set is no series.
fn not_empty(empty: bool) -> Result<(), StorageError> {
    if empty {
        return Err(StorageError::InvalidSeries {
            labels: "{}".into(),
            reason: LabelError::Empty.to_string(),
        });
    }
    Ok(())
}

impl Drop for ForwardAppender<'_> {
    fn drop(&mut self) {
        let mut buffers = std::mem::take(&mut self.buffers);
        for b in [&mut buffers.fields, &mut buffers.labels] {
            b.clear();
            b.shrink_to(KEPT_BUFFER_BYTES);
        }
        // Kept at its length: compressing into it again zeroes nothing.
        if buffers.block.len() > KEPT_BUFFER_BYTES {
            buffers.block = Vec::new();
        }
        self.owner.buffers.lock().push(buffers);
    }
}

#[cfg(test)]
mod tests {
    use cairn_protocols::DecodeLimits;
    use cairn_protocols::remote_write::{ContentEncoding, decode_write_request};
    use cairn_tsdb::{TailEvent, WalTail};

    use super::*;

    fn open(dir: &std::path::Path) -> Arc<Tsdb> {
        let mut config = cairn_tsdb::Config::new(dir);
        config.keep_samples = false;
        Arc::new(Tsdb::open(config).unwrap())
    }

    /// Every forward batch the WAL holds after `from`.
    fn forward_batches(db: &Tsdb, from: cairn_tsdb::WalPosition) -> Vec<(u32, u32, i64, i64, Vec<u8>)> {
        let mut tail = WalTail::new(from);
        let mut payload = Vec::new();
        let mut out = Vec::new();
        while let TailEvent::Record { .. } = db.read_wal(&mut tail, &mut payload).unwrap() {
            if let Some(b) = Tsdb::forward_batch(&payload).unwrap() {
                out.push((b.series, b.histograms, b.min_t, b.max_t, b.block.to_vec()));
            }
        }
        out
    }

    #[test]
    fn a_commit_is_one_block_of_what_remote_write_sends() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let appendable = ForwardAppendable::new(db.clone());
        let start = db.wal_end();
        appendable.set_external_labels(Labels::from_pairs([("cluster", "eu"), ("job", "ext")]));
        let now = db.accepted_times().end() - 1;
        let mut app = appendable.appender();
        let up = Labels::from_pairs([("__name__", "up"), ("job", "node")]);
        app.append(&up, &[Sample::new(now - 1, 1.0), Sample::new(now, 0.0)])
            .unwrap();
        let h = HistogramSample {
            t: now,
            h: Arc::new(cairn_model::Histogram {
                count: 2.0,
                sum: 3.0,
                zero_count: 2.0,
                zero_threshold: 0.001,
                ..Default::default()
            }),
        };
        app.append_histograms(&Labels::from_pairs([("__name__", "lat")]), std::slice::from_ref(&h))
            .unwrap();
        app.append(&up, &[Sample::new(0, 5.0), Sample::new(i64::MAX, 5.0)])
            .unwrap();
        assert!(app.append(&Labels::empty(), &[Sample::new(now, 1.0)]).is_err());
        let report = app.commit().unwrap();
        assert_eq!((report.samples_accepted, report.histograms_accepted), (2, 1));
        assert_eq!(report.rejected_total(), 2);

        let batches = forward_batches(&db, start);
        assert_eq!(batches.len(), 1);
        let (series, histograms, min_t, max_t, block) = &batches[0];
        assert_eq!((*series, *histograms, *min_t, *max_t), (3, 1, now - 1, now));
        let batch = decode_write_request(block, ContentEncoding::Snappy, &DecodeLimits::default()).unwrap();
        let got: Vec<(String, usize, usize)> = batch
            .series()
            .map(|s| (s.labels().to_string(), s.samples().len(), s.histograms().len()))
            .collect();
        assert_eq!(
            got,
            [
                (r#"up{cluster="eu", job="node"}"#.to_string(), 1, 0),
                (r#"up{cluster="eu", job="node"}"#.to_string(), 1, 0),
                (r#"lat{cluster="eu", job="ext"}"#.to_string(), 0, 1),
            ]
        );
    }

    #[test]
    fn encoded_series_are_sent_under_their_labels_with_or_without_external_labels() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let appendable = ForwardAppendable::new(db.clone());
        let start = db.wal_end();
        let now = db.accepted_times().end() - 1;
        let labels = Labels::from_pairs([("__name__", "up"), ("job", "node")]);
        let up = cairn_model::SharedEncodedLabels::new(&labels);
        let mut wire = Vec::new();
        let wire = WireLabels::of_labels(&labels, &mut wire);
        for external in [Labels::empty(), Labels::from_pairs([("cluster", "eu"), ("job", "ext")])] {
            appendable.set_external_labels(external);
            let mut app = appendable.appender();
            app.append_encoded(up.get(), &[Sample::new(now, 2.5), Sample::new(0, 1.0)])
                .unwrap();
            app.append_wire(wire, &[Sample::new(now, 2.5), Sample::new(0, 1.0)])
                .unwrap();
            assert!(
                app.append_wire(WireLabels::new(&[]).unwrap(), &[Sample::new(now, 1.0)])
                    .is_err()
            );
            assert_eq!(app.commit().unwrap().samples_accepted, 2);
        }
        let sent: Vec<(String, Vec<Sample>)> = forward_batches(&db, start)
            .iter()
            .flat_map(|(.., block)| {
                let batch = decode_write_request(block, ContentEncoding::Snappy, &DecodeLimits::default()).unwrap();
                batch.to_series().into_iter().map(|s| (s.labels.to_string(), s.samples))
            })
            .collect();
        assert_eq!(
            sent,
            [
                (r#"up{job="node"}"#.to_string(), vec![Sample::new(now, 2.5)]),
                (r#"up{job="node"}"#.to_string(), vec![Sample::new(now, 2.5)]),
                (
                    r#"up{cluster="eu", job="node"}"#.to_string(),
                    vec![Sample::new(now, 2.5)]
                ),
                (
                    r#"up{cluster="eu", job="node"}"#.to_string(),
                    vec![Sample::new(now, 2.5)]
                ),
            ]
        );
    }

    #[test]
    fn a_commit_with_nothing_taken_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let appendable = ForwardAppendable::new(db.clone());
        let start = db.wal_end();
        let mut app = appendable.appender();
        app.append(&Labels::from_pairs([("__name__", "up")]), &[Sample::new(0, 1.0)])
            .unwrap();
        assert_eq!(app.commit().unwrap().rejected_total(), 1);
        let mut app = appendable.appender();
        app.append(&Labels::from_pairs([("__name__", "up")]), &[Sample::new(1, 1.0)])
            .unwrap();
        app.rollback();
        assert!(forward_batches(&db, start).is_empty());
    }
}
