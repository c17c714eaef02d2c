//! The cluster as the storage seam: what the HTTP API and the PromQL engine
//! of any node read and write, whichever nodes hold the data.

use std::sync::Arc;

use cairn_model::Matcher;
use cairn_storage::{
    Admin, Appendable, Appender, CardinalityQuery, PartInfo, Querier, Queryable, ReadOptions, SelectHints,
    SeriesCounter, Shard, Storage, StorageError, StorageStats, TenantId, Tenants, TsdbStatus,
};

use crate::node::Cluster;
use crate::read::{ClusterQuerier, Needed, fan_out};
use crate::wire::SelectRequest;
use crate::write::ClusterAppender;

/// Pages the TSDB status reads the cluster's series in.
const STATUS_PAGES: usize = 16;

/// Every tenant's series, spread over the cluster's ingesters.
pub struct ClusterTenants {
    cluster: Arc<Cluster>,
}

impl ClusterTenants {
    pub fn new(cluster: Arc<Cluster>) -> Self {
        Self { cluster }
    }

    fn storage(&self, tenant: &TenantId, options: ReadOptions) -> Arc<dyn Storage> {
        Arc::new(ClusterStorage {
            cluster: self.cluster.clone(),
            tenant: tenant.clone(),
            options,
        })
    }
}

impl Tenants for ClusterTenants {
    /// A tenant's series may be on any ingester: every tenant reads (as empty
    /// when none has any).
    fn get(&self, tenant: &TenantId) -> Result<Option<Arc<dyn Storage>>, StorageError> {
        Ok(Some(self.storage(tenant, ReadOptions::default())))
    }

    fn get_or_create(&self, tenant: &TenantId) -> Result<Arc<dyn Storage>, StorageError> {
        Ok(self.storage(tenant, ReadOptions::default()))
    }

    /// The tenants this node stores.
    fn list(&self) -> Vec<TenantId> {
        self.cluster.local().map(|l| l.list()).unwrap_or_default()
    }

    fn get_for_read(&self, tenant: &TenantId, options: &ReadOptions) -> Result<Option<Arc<dyn Storage>>, StorageError> {
        Ok(Some(self.storage(tenant, options.clone())))
    }
}

/// One tenant's series across the cluster.
struct ClusterStorage {
    cluster: Arc<Cluster>,
    tenant: TenantId,
    options: ReadOptions,
}

impl ClusterStorage {
    /// This tenant's storage on this node, if it stores any.
    fn here(&self) -> Option<Arc<dyn Storage>> {
        self.cluster.local()?.get(&self.tenant).ok()?
    }
}

impl Queryable for ClusterStorage {
    /// Each ingester's view is consistent by itself; the answers of several
    /// are taken at about the same moment, not at one.
    fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier>, StorageError> {
        Ok(Box::new(ClusterQuerier {
            cluster: self.cluster.clone(),
            tenant: self.tenant.clone(),
            mint,
            maxt,
            options: self.options.clone(),
        }))
    }

    /// A fingerprint of the counts of every ingester a read asks and of
    /// every copy of compacted days this node reads: it moves when any of
    /// them moves, when an ingester stops or starts answering, and when the
    /// ring changes whom a read asks (each count starts from its own
    /// arbitrary point). `None` when a complete read cannot be done now or
    /// a copy cannot tell.
    fn settled_changes(&self) -> Option<u64> {
        use std::hash::{Hash, Hasher};
        // `fan_out` sends every route a select request; this route ignores it.
        let request = SelectRequest::new(0, 0, &SelectHints::default(), &[]);
        let answers = fan_out(
            &self.cluster,
            &self.tenant,
            &ReadOptions::default(),
            Needed::Quorum,
            "settled_changes",
            &request,
            |local, t, _| {
                let count = crate::routes::settled_changes_here(local, t)?;
                serde_json::to_vec(&count)
                    .map(bytes::Bytes::from)
                    .map_err(|e| StorageError::Unavailable(e.to_string()))
            },
        )
        .ok()?;
        // In ring order, as the answers come.
        let mut fingerprint = std::hash::DefaultHasher::new();
        for body in answers {
            let count: Option<u64> = serde_json::from_slice(&body).ok()?;
            count?.hash(&mut fingerprint);
        }
        for tenants in self.cluster.compacted() {
            let count = match tenants.get(&self.tenant).ok()? {
                Some(storage) => storage.settled_changes()?,
                None => 0,
            };
            count.hash(&mut fingerprint);
        }
        Some(fingerprint.finish())
    }
}

impl Appendable for ClusterStorage {
    fn appender(&self) -> Box<dyn Appender + '_> {
        Box::new(ClusterAppender::new(self.cluster.clone(), self.tenant.clone()))
    }
}

impl Admin for ClusterStorage {
    /// Deletes on every ingester and the compactor; all must answer (a
    /// replica that kept the samples would bring them back into answers).
    /// Writes acknowledged before the delete are deleted too: their last
    /// copies, still on their way, arrive first.
    fn delete_series(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<(), StorageError> {
        settle_writes_everywhere(&self.cluster)?;
        let request = SelectRequest::new(mint, maxt, &SelectHints::default(), matchers);
        let all = ReadOptions::default();
        fan_out(
            &self.cluster,
            &self.tenant,
            &all,
            Needed::All,
            "delete",
            &request,
            |local, t, r| crate::routes::delete_here(local, t, r).map(|()| bytes::Bytes::new()),
        )?;
        let ring = self.cluster.ring();
        // And the compactor's copy of old days.
        for compactor in ring.members().iter().filter(|m| m.compactor) {
            if self.cluster.is_me(compactor) {
                let local = self.cluster.local().ok_or_else(|| {
                    StorageError::Unavailable("the compactor's engine is not open yet; retry the delete".into())
                })?;
                crate::routes::delete_here(local.as_ref(), &self.tenant, &request)?;
                continue;
            }
            let body = serde_json::to_vec(&request).unwrap_or_default();
            let applied = self
                .cluster
                .block_on(self.cluster.post(compactor, "delete", &self.tenant, body));
            applied.map_err(|e| {
                StorageError::Unavailable(format!("the compactor did not apply the delete ({e}); retry it"))
            })?;
        }
        Ok(())
    }

    /// The tenant's series across the cluster (replicas and the compacted
    /// days joined: each series once), counted here; the time range is
    /// this node's own data's.
    fn tsdb_status(&self, query: &CardinalityQuery) -> Result<TsdbStatus, StorageError> {
        let every_series = crate::every_series();
        let querier = self.querier(query.mint, query.maxt)?;
        let mut counter = SeriesCounter::new(query);
        // Page by page (shards of the series): memory holds one page's label
        // sets and the distinct label pairs, not every series at once.
        for page in 0..STATUS_PAGES {
            let hints = SelectHints {
                labels_only: true,
                shard: Some(Shard::new(page, STATUS_PAGES)),
                ..SelectHints::default()
            };
            for series in querier.select(&hints, &every_series)? {
                counter.add(&series?.labels);
            }
        }
        let mut status = counter.status();
        if let Some(here) = self.here() {
            let own = here.tsdb_status(&CardinalityQuery::all(query.mint, query.maxt, 0))?;
            (status.min_time, status.max_time) = (own.min_time, own.max_time);
        }
        Ok(status)
    }

    fn stats(&self) -> StorageStats {
        self.here().map(|s| s.stats()).unwrap_or_default()
    }

    fn parts(&self) -> Result<Vec<PartInfo>, StorageError> {
        self.here().map_or_else(|| Ok(Vec::new()), |s| s.parts())
    }
}

/// Waits until every write that any live member began sending before now
/// reached all its owners that answer.
fn settle_writes_everywhere(cluster: &Arc<Cluster>) -> Result<(), StorageError> {
    let ring = cluster.ring();
    let anyone = TenantId::default_tenant();
    let calls: Vec<_> = ring
        .members()
        .iter()
        .enumerate()
        .filter(|(i, member)| ring.is_alive(*i) && !cluster.is_me(member))
        .map(|(_, member)| cluster.post(member, "settle_writes", &anyone, Vec::new()))
        .collect();
    let here = cluster.clone();
    let failed = cluster.block_on(async move {
        let mut settling = tokio::task::JoinSet::new();
        for call in calls {
            settling.spawn(call);
        }
        here.writes_in_flight.settle().await;
        let mut failed = None;
        while let Some(joined) = settling.join_next().await {
            if let Ok(Err(e)) = joined {
                failed = Some(e);
            }
        }
        failed
    });
    match failed {
        None => Ok(()),
        Some(e) => Err(StorageError::Unavailable(format!(
            "a member did not say its writes in flight had arrived ({e}); retry the delete"
        ))),
    }
}
