use std::collections::BTreeMap;

use cairn_model::{LabelError, Labels, Sample};

use crate::{RejectReason, StorageError};

/// A sink for samples.
pub trait Appendable: Send + Sync {
    /// A new batch. Appenders are cheap; use one per request.
    fn appender(&self) -> Box<dyn Appender + '_>;
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
    /// `Labels`. Storage that keys series by that encoding uses it as is.
    fn append_encoded(&mut self, encoded_labels: &[u8], samples: &[Sample]) -> Result<(), StorageError> {
        check_encoded_labels(encoded_labels)?;
        let (labels, _) = Labels::decode(encoded_labels).map_err(|e| invalid_encoding(encoded_labels, e))?;
        self.append(&labels, samples)
    }

    /// Makes the batch durable and visible.
    fn commit(self: Box<Self>) -> Result<CommitReport, StorageError>;

    /// Discards the batch.
    fn rollback(self: Box<Self>);
}

/// Checks, without allocating, what [`Appender::append_encoded`] requires:
/// exactly one canonical, non-empty [`Labels::encode`] form. A storage that
/// keys series by these bytes must not take malformed ones on trust.
pub fn check_encoded_labels(encoded_labels: &[u8]) -> Result<(), StorageError> {
    match Labels::check_encoding(encoded_labels) {
        Ok(0) => Err(invalid_encoding(encoded_labels, LabelError::Empty)),
        Ok(_) => Ok(()),
        Err(e) => Err(invalid_encoding(encoded_labels, e)),
    }
}

fn invalid_encoding(encoded_labels: &[u8], e: LabelError) -> StorageError {
    StorageError::InvalidSeries {
        labels: String::from_utf8_lossy(encoded_labels).chars().take(200).collect(),
        reason: e.to_string(),
    }
}

/// What a commit stored and what it dropped, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitReport {
    pub samples_accepted: u64,
    pub series_created: u64,
    pub samples_rejected: BTreeMap<RejectReason, u64>,
}

impl CommitReport {
    pub fn rejected_total(&self) -> u64 {
        self.samples_rejected.values().sum()
    }
}
