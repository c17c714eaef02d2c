//! The storage seam.
//!
//! Everything above storage (the PromQL engine, the HTTP API, later a cluster
//! layer) sees data only through these traits, so the same engine can run over
//! the embedded TSDB, the in-memory reference store, or remote storage nodes.
//!
//! - [`Queryable`] / [`Querier`]: select series by matchers in a time range and
//!   iterate their samples block by block (one dynamic call per block, not per sample).
//! - [`Appendable`] / [`Appender`]: batched writes, acknowledged only once durable.
//! - [`Admin`]: deletes, status and statistics.
//! - [`Tenants`]: a storage per tenant; [`Federated`] reads several together.
//! - [`WorkShare`]: the scrape targets and rule groups that are this process's.
//!
//! [`MemStorage`] is the reference implementation; [`conformance`] is the suite
//! every implementation must pass.

mod admin;
mod append;
pub mod conformance;
mod error;
mod mem;
mod query;
mod settled;
mod shard_view;
mod tenant;
mod wal_replay;
mod work;

pub use admin::{
    Admin, CardinalityQuery, ObjectStoreStats, PartInfo, RefusalReason, RejectReason, SeriesCounter, StorageStats,
    TsdbStatus, WriteOperation, WriteRefusal,
};
pub use append::{Appendable, Appender, CommitReport};
pub use conformance::Storage;
pub use error::{ErrorKind, StorageError};
pub use mem::MemStorage;
pub use query::{
    Querier, Queryable, SampleBlock, SampleBlocks, SelectHints, Series, SeriesSet, Shard, ShardBy, VecSampleBlocks,
    collect_samples,
};
pub use settled::{SETTLED_AFTER_MS, SettledChanges, settled_before};
pub use shard_view::ShardView;
pub use tenant::{
    DEFAULT_TENANT, Federated, MemTenants, ReadOptions, ReadWarnings, TENANT_ID_LABEL, TENANT_SEPARATOR, TenantId,
    TenantScope, Tenants,
};
pub use wal_replay::{WalReplay, WalReplayStatus};
pub use work::{WorkShare, rule_group_key};

// A shared storage is a storage: what `Tenants` hands out runs wherever a
// storage does (the conformance suite, the PromQL scripts).
impl<T: Queryable + ?Sized> Queryable for std::sync::Arc<T> {
    fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier>, StorageError> {
        (**self).querier(mint, maxt)
    }

    fn settled_changes(&self) -> Option<u64> {
        (**self).settled_changes()
    }
}

impl<T: Appendable + ?Sized> Appendable for std::sync::Arc<T> {
    fn appender(&self) -> Box<dyn Appender + '_> {
        (**self).appender()
    }

    fn commit_may_wait(&self) -> bool {
        (**self).commit_may_wait()
    }
}

impl<T: Admin + ?Sized> Admin for std::sync::Arc<T> {
    fn delete_series(&self, matchers: &[cairn_model::Matcher], mint: i64, maxt: i64) -> Result<(), StorageError> {
        (**self).delete_series(matchers, mint, maxt)
    }

    fn tsdb_status(&self, query: &CardinalityQuery) -> Result<TsdbStatus, StorageError> {
        (**self).tsdb_status(query)
    }

    fn stats(&self) -> StorageStats {
        (**self).stats()
    }

    fn parts(&self) -> Result<Vec<PartInfo>, StorageError> {
        (**self).parts()
    }

    fn snapshot(&self, dest: &std::path::Path, skip_head: bool) -> Result<(), StorageError> {
        (**self).snapshot(dest, skip_head)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// A sink whose commits never wait.
    struct InPlace(MemStorage);

    impl Appendable for InPlace {
        fn appender(&self) -> Box<dyn Appender + '_> {
            self.0.appender()
        }

        fn commit_may_wait(&self) -> bool {
            false
        }
    }

    #[test]
    fn a_shared_sink_answers_as_the_sink_itself() {
        let shared: Arc<dyn Appendable> = Arc::new(InPlace(MemStorage::new()));
        assert!(!shared.commit_may_wait());
        assert!(!Arc::new(shared.clone()).commit_may_wait());
        let waits: Arc<dyn Appendable> = Arc::new(MemStorage::new());
        assert!(waits.commit_may_wait());
    }
}
