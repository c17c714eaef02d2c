use std::collections::BTreeMap;

use cairn_model::{EncodedLabels, HistogramSample, Labels, Sample, WireLabels};

use crate::{RejectReason, StorageError};

/// A sink for samples.
pub trait Appendable: Send + Sync {
    /// A new batch. Appenders are cheap; use one per request.
    fn appender(&self) -> Box<dyn Appender + '_>;

    /// Whether appending and committing may wait (on a lock, a write stall,
    /// a sync to disk): a caller on an async runtime then does it on a
    /// blocking thread. One that never waits may be called in place.
    fn commit_may_wait(&self) -> bool {
        true
    }
}

/// One batch of writes.
///
/// Contract: nothing appended is visible to queries before [`Appender::commit`]
/// returns `Ok`, and once it does every accepted sample is durable (it survives
/// a crash of the process). The batch is all-or-nothing for durability; samples
/// that storage can never keep (outside retention, too far in the future) are
/// dropped and counted in the [`CommitReport`] rather than failing the batch.
/// A second write of the same series and timestamp replaces the first.
/// Dropping an appender without committing is a rollback.
pub trait Appender: Send {
    /// Adds samples of one series. `labels` must be canonical and non-empty.
    /// Samples need not be sorted, and may be older than what is stored (backfill).
    fn append(&mut self, labels: &Labels, samples: &[Sample]) -> Result<(), StorageError>;

    /// [`Appender::append`] for a label set already in its canonical
    /// [`Labels::encode`] form, which ingestion produces without building
    /// `Labels`. Storage that keys series by that encoding uses it as is
    /// (the type carries the proof that it is canonical).
    fn append_encoded(&mut self, labels: EncodedLabels<'_>, samples: &[Sample]) -> Result<(), StorageError> {
        self.append(&labels.decode(), samples)
    }

    /// [`Appender::append`] for a label set in the form remote write 1.0
    /// sends it, which a forwarder writes into its requests as it is.
    fn append_wire(&mut self, labels: WireLabels<'_>, samples: &[Sample]) -> Result<(), StorageError> {
        self.append(&labels.decode(), samples)
    }

    /// Adds native histogram samples of one series, with the contract of
    /// [`Appender::append`]; a histogram and a float at one timestamp
    /// replace each other like two floats. Histograms must be valid
    /// ([`cairn_model::Histogram::validate`]); staleness markers come as
    /// float stale NaNs.
    fn append_histograms(&mut self, labels: &Labels, samples: &[HistogramSample]) -> Result<(), StorageError> {
        let _ = samples;
        Err(StorageError::InvalidSeries {
            labels: labels.to_string(),
            reason: "this storage does not keep native histograms".into(),
        })
    }

    /// A series' floats and histograms: [`Appender::append_encoded`] and
    /// [`Appender::append_histograms`], the latter only when it has any (a
    /// series of histograms only is not appended floats).
    fn append_series(
        &mut self,
        labels: EncodedLabels<'_>,
        samples: &[Sample],
        histograms: &[HistogramSample],
    ) -> Result<(), StorageError> {
        if !samples.is_empty() || histograms.is_empty() {
            self.append_encoded(labels, samples)?;
        }
        if !histograms.is_empty() {
            self.append_histograms(&labels.decode(), histograms)?;
        }
        Ok(())
    }

    /// Makes the batch durable and visible.
    fn commit(self: Box<Self>) -> Result<CommitReport, StorageError>;

    /// Discards the batch.
    fn rollback(self: Box<Self>);
}

/// What a commit stored and what it dropped, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitReport {
    /// Float and histogram samples stored.
    pub samples_accepted: u64,
    /// Of those, histogram samples.
    pub histograms_accepted: u64,
    pub series_created: u64,
    pub samples_rejected: BTreeMap<RejectReason, u64>,
}

impl CommitReport {
    pub fn rejected_total(&self) -> u64 {
        self.samples_rejected.values().sum()
    }
}
