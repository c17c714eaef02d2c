//! This node's registrations in etcd as holding tenants' series
//! (`ClusterConfig::holders_prefix`). One is written before the node stores
//! its first series of a tenant, and dropped once the node holds none of
//! them, so that the tenant's reads stop asking it.
//!
//! A drop must never race a store: a store holds a [`HoldGuard`] while it
//! runs, a drop begins only when none does, and a store that comes during
//! a drop waits for it to end and registers again. The node checks that it
//! holds nothing only once the drop has begun, when no store can start.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use cairn_storage::{SelectHints, StorageError, TenantId, Tenants};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::node::Cluster;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holding {
    /// Registered; this many stores of its series are under way.
    Registered { storing: usize },
    /// Its key is being deleted.
    Dropping,
}

#[derive(Default)]
pub(crate) struct Holdings {
    state: Mutex<HashMap<TenantId, Holding>>,
    /// Signalled when a drop ends.
    dropped: Notify,
}

/// Keeps a tenant's registration while its series are being stored.
pub(crate) struct HoldGuard {
    holdings: Arc<Holdings>,
    tenant: TenantId,
}

impl Drop for HoldGuard {
    fn drop(&mut self) {
        if let Some(Holding::Registered { storing }) = self.holdings.state.lock().get_mut(&self.tenant) {
            *storing = storing.saturating_sub(1);
        }
    }
}

impl Holdings {
    /// A guard for storing `tenant`'s series, once this node is registered
    /// as holding them: `publish` registers it when it is not.
    pub(crate) async fn hold<F, Fut>(self: &Arc<Self>, tenant: &TenantId, publish: F) -> Result<HoldGuard, StorageError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<(), StorageError>>,
    {
        loop {
            match self.enter(tenant) {
                Some(true) => return Ok(self.guard(tenant)),
                Some(false) => {
                    self.wait_for_drop(tenant).await;
                    continue;
                }
                None => {}
            }
            publish().await?;
            let mut state = self.state.lock();
            match state
                .entry(tenant.clone())
                .or_insert(Holding::Registered { storing: 0 })
            {
                Holding::Registered { storing } => {
                    *storing += 1;
                    drop(state);
                    return Ok(self.guard(tenant));
                }
                // A drop began meanwhile and may delete the key written:
                // once it ends, register again.
                Holding::Dropping => continue,
            }
        }
    }

    /// A guard for storing `tenant`'s series when this node is registered
    /// as holding them already.
    pub(crate) fn try_hold(self: &Arc<Self>, tenant: &TenantId) -> Option<HoldGuard> {
        (self.enter(tenant) == Some(true)).then(|| self.guard(tenant))
    }

    /// Counts one more store of a registered tenant (`Some(true)`);
    /// `Some(false)` while it is being dropped, `None` when not registered.
    fn enter(&self, tenant: &TenantId) -> Option<bool> {
        match self.state.lock().get_mut(tenant)? {
            Holding::Registered { storing } => {
                *storing += 1;
                Some(true)
            }
            Holding::Dropping => Some(false),
        }
    }

    fn guard(self: &Arc<Self>, tenant: &TenantId) -> HoldGuard {
        HoldGuard {
            holdings: self.clone(),
            tenant: tenant.clone(),
        }
    }

    async fn wait_for_drop(&self, tenant: &TenantId) {
        loop {
            let ended = self.dropped.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.state.lock().get(tenant) != Some(&Holding::Dropping) {
                return;
            }
            ended.await;
        }
    }

    /// Notes tenants registered all at once (at registration).
    pub(crate) fn registered(&self, tenants: &[TenantId]) {
        let mut state = self.state.lock();
        for t in tenants {
            state.entry(t.clone()).or_insert(Holding::Registered { storing: 0 });
        }
    }

    /// The registered tenants none of whose series are being stored.
    pub(crate) fn idle(&self) -> Vec<TenantId> {
        let state = self.state.lock();
        state
            .iter()
            .filter(|(_, h)| **h == Holding::Registered { storing: 0 })
            .map(|(t, _)| t.clone())
            .collect()
    }

    /// Begins dropping `tenant`'s registration: true when no store of its
    /// series is under way, and from then on none starts until
    /// [`Self::end_drop`].
    pub(crate) fn begin_drop(&self, tenant: &TenantId) -> bool {
        let mut state = self.state.lock();
        match state.get_mut(tenant) {
            Some(h @ Holding::Registered { storing: 0 }) => {
                *h = Holding::Dropping;
                true
            }
            _ => false,
        }
    }

    /// Ends a drop: the registration is gone (`dropped`), or stays.
    pub(crate) fn end_drop(&self, tenant: &TenantId, dropped: bool) {
        {
            let mut state = self.state.lock();
            if dropped {
                state.remove(tenant);
            } else {
                state.insert(tenant.clone(), Holding::Registered { storing: 0 });
            }
        }
        self.dropped.notify_waiters();
    }
}

/// Whether a read of this node's engine would find any of `tenant`'s
/// series, in its head, its parts or its bucket (an engine may be open and
/// empty: the default tenant's always is). True when that cannot be told.
pub(crate) fn holds_series(local: &dyn Tenants, tenant: &TenantId) -> bool {
    let found = || -> Result<bool, StorageError> {
        let Some(storage) = local.get(tenant)? else {
            return Ok(false);
        };
        let querier = storage.querier(i64::MIN, i64::MAX)?;
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        // A series whose samples were all deleted may still be listed.
        for series in querier.select(&SelectHints::default(), &crate::every_series())? {
            let mut series = series?;
            if !series.histograms.is_empty() || !series.samples.read_into(&mut ts, &mut vs)?.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    };
    found().unwrap_or(true)
}

/// Every `compaction_interval`, drops the registrations of the tenants
/// this node no longer holds any series of (their days retired to the
/// bucket, or past retention), so that their reads stop asking it.
pub(crate) async fn drop_unneeded(cluster: Arc<Cluster>) {
    loop {
        tokio::time::sleep(cluster.config.compaction_interval).await;
        if cluster.deregistered.load(Ordering::Acquire) {
            return;
        }
        let Some(local) = cluster.local() else { continue };
        for tenant in cluster.holdings.idle() {
            // Series of the current day: held, without stopping its writes
            // for the longer look below.
            let active = local
                .get(&tenant)
                .ok()
                .flatten()
                .is_some_and(|s| s.stats().active_series > 0);
            if active || !cluster.holdings.begin_drop(&tenant) {
                continue;
            }
            // Looked at only now, when no store of its series can start.
            let (engines, t) = (local.clone(), tenant.clone());
            let holds = tokio::task::spawn_blocking(move || holds_series(engines.as_ref(), &t))
                .await
                .unwrap_or(true);
            let dropped = !holds
                && match crate::membership::unpublish_holder(&cluster.config, &tenant).await {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::warn!(%tenant, error = %e, "cannot drop this node's registration as a holder");
                        false
                    }
                };
            if dropped {
                tracing::info!(%tenant, "holds none of the tenant's series any more: its reads stop asking this node");
            }
            cluster.holdings.end_drop(&tenant, dropped);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    fn tenant() -> TenantId {
        TenantId::new("t").unwrap()
    }

    async fn counted(publishes: &AtomicUsize) -> Result<(), StorageError> {
        publishes.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    #[tokio::test]
    async fn a_tenant_is_registered_once_and_not_dropped_while_stored() {
        let h = Arc::new(Holdings::default());
        let publishes = AtomicUsize::new(0);
        let g1 = h.hold(&tenant(), || counted(&publishes)).await.unwrap();
        let g2 = h.hold(&tenant(), || counted(&publishes)).await.unwrap();
        assert_eq!(publishes.load(Ordering::SeqCst), 1);
        assert!(h.idle().is_empty());
        assert!(!h.begin_drop(&tenant()));
        drop((g1, g2));
        assert_eq!(h.idle(), [tenant()]);
        assert!(h.begin_drop(&tenant()));
        assert!(h.idle().is_empty(), "a dropping tenant is not idle");
        h.end_drop(&tenant(), false);
        assert_eq!(h.idle(), [tenant()]);
        // Kept: no new registration needed.
        drop(h.hold(&tenant(), || counted(&publishes)).await.unwrap());
        assert_eq!(publishes.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_store_during_a_drop_waits_for_it_and_registers_again() {
        let h = Arc::new(Holdings::default());
        h.registered(&[tenant()]);
        assert!(h.begin_drop(&tenant()));
        let publishes = Arc::new(AtomicUsize::new(0));
        let store = {
            let (h, publishes) = (h.clone(), publishes.clone());
            tokio::spawn(async move {
                let guard = h.hold(&tenant(), || counted(&publishes)).await.unwrap();
                drop(guard);
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!store.is_finished(), "the store waits for the drop");
        assert_eq!(publishes.load(Ordering::SeqCst), 0);
        h.end_drop(&tenant(), true);
        store.await.unwrap();
        assert_eq!(publishes.load(Ordering::SeqCst), 1, "registered again after the drop");
        assert_eq!(h.idle(), [tenant()]);
    }

    #[tokio::test]
    async fn a_failed_registration_stores_nothing_and_leaves_no_state() {
        let h = Arc::new(Holdings::default());
        let failed = h
            .hold(&tenant(), || async {
                Err(StorageError::Unavailable("etcd down".into()))
            })
            .await;
        assert!(failed.is_err());
        assert!(h.idle().is_empty());
        assert!(!h.begin_drop(&tenant()));
    }
}
