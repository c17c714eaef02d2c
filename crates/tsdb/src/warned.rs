//! A tenant's engine as one read sees it: samples the engine leaves out
//! because they were lost to damage are named in that read's warnings.

use std::path::Path;
use std::sync::Arc;

use cairn_model::Matcher;
use cairn_storage::{
    Admin, Appendable, Appender, CardinalityQuery, PartInfo, Querier, Queryable, ReadWarnings, StorageError,
    StorageStats, TsdbStatus,
};

use crate::engine::Tsdb;

pub(crate) struct WarnedReads {
    pub(crate) tsdb: Arc<Tsdb>,
    pub(crate) warnings: ReadWarnings,
}

impl Queryable for WarnedReads {
    fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier>, StorageError> {
        Ok(Box::new(self.tsdb.querier_warning(
            mint,
            maxt,
            Some(self.warnings.clone()),
        )))
    }

    fn settled_changes(&self) -> Option<u64> {
        self.tsdb.settled_changes()
    }
}

impl Appendable for WarnedReads {
    fn appender(&self) -> Box<dyn Appender + '_> {
        self.tsdb.appender()
    }
}

impl Admin for WarnedReads {
    fn delete_series(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<(), StorageError> {
        self.tsdb.delete_series(matchers, mint, maxt)
    }

    fn tsdb_status(&self, query: &CardinalityQuery) -> Result<TsdbStatus, StorageError> {
        self.tsdb.tsdb_status(query)
    }

    fn stats(&self) -> StorageStats {
        self.tsdb.stats()
    }

    fn parts(&self) -> Result<Vec<PartInfo>, StorageError> {
        self.tsdb.parts()
    }

    fn snapshot(&self, dest: &Path, skip_head: bool) -> Result<(), StorageError> {
        Admin::snapshot(&*self.tsdb, dest, skip_head)
    }
}
