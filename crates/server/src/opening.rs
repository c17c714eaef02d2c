//! A storage handle that exists before the TSDB has finished opening, so the
//! HTTP API can answer (503, retryable) during a long WAL replay.

use std::sync::{Arc, OnceLock};

use cairn_model::{Labels, Matcher, Sample};
use cairn_storage::{
    Admin, Appendable, Appender, CommitReport, PartInfo, Querier, Queryable, Storage, StorageError, StorageStats,
    TsdbStatus,
};

#[derive(Default)]
pub struct OpeningStorage {
    inner: OnceLock<Arc<dyn Storage>>,
}

impl OpeningStorage {
    pub fn set(&self, storage: Arc<dyn Storage>) {
        let _ = self.inner.set(storage);
    }

    fn get(&self) -> Result<&Arc<dyn Storage>, StorageError> {
        self.inner
            .get()
            .ok_or_else(|| StorageError::Unavailable("storage is still opening (replaying its WAL)".into()))
    }
}

impl Queryable for OpeningStorage {
    fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier>, StorageError> {
        self.get()?.querier(mint, maxt)
    }
}

impl Appendable for OpeningStorage {
    fn appender(&self) -> Box<dyn Appender + '_> {
        match self.get() {
            Ok(s) => s.appender(),
            Err(_) => Box::new(NotReady),
        }
    }
}

impl Admin for OpeningStorage {
    fn delete_series(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<(), StorageError> {
        self.get()?.delete_series(matchers, mint, maxt)
    }

    fn tsdb_status(&self, mint: i64, maxt: i64, limit: usize) -> Result<TsdbStatus, StorageError> {
        self.get()?.tsdb_status(mint, maxt, limit)
    }

    fn stats(&self) -> StorageStats {
        self.get().map(|s| s.stats()).unwrap_or_default()
    }

    fn parts(&self) -> Result<Vec<PartInfo>, StorageError> {
        self.get()?.parts()
    }
}

/// Rejects writes while storage opens; senders see 503 and retry.
struct NotReady;

impl Appender for NotReady {
    fn append(&mut self, _: &Labels, _: &[Sample]) -> Result<(), StorageError> {
        Err(StorageError::Unavailable(
            "storage is still opening (replaying its WAL)".into(),
        ))
    }

    fn commit(self: Box<Self>) -> Result<CommitReport, StorageError> {
        Err(StorageError::Unavailable(
            "storage is still opening (replaying its WAL)".into(),
        ))
    }

    fn rollback(self: Box<Self>) {}
}
