//! A cluster node's part in keeping old days once in the shared bucket: the
//! compactor merges the replicas (cairn-cluster's compactor), and every
//! other node reads the merged copy through a read-only view of it.

use std::sync::Arc;

use anyhow::Context;
use cairn_cluster::{Cluster, Compactor, Role, layout};
use cairn_tsdb::{SettingsOf, TsdbTenants};

use crate::ServerConfig;

/// What runs for the compacted copy on this node, stopped at shutdown.
pub enum Compaction {
    /// Nothing: the cluster has no shared bucket.
    None,
    /// This node is the compactor.
    Compactor(Arc<Compactor>),
    /// This node reads the compactor's copy.
    Reader(Arc<TsdbTenants>),
}

impl Compaction {
    pub fn stop(self) {
        match self {
            Self::None => {}
            Self::Compactor(compactor) => compactor.stop(),
            Self::Reader(view) => {
                if let Err(e) = view.close() {
                    tracing::warn!(error = %e, "closing the view of the compacted days failed");
                }
            }
        }
    }
}

/// Starts the compactor on a compactor node (over `db`, its engine), or
/// opens the read-only view of the compacted days on any other node.
pub async fn start(
    cluster: &Arc<Cluster>,
    config: &ServerConfig,
    db: Option<&Arc<TsdbTenants>>,
    settings: SettingsOf,
) -> anyhow::Result<Compaction> {
    let Some(base) = cluster.config().bucket.clone() else {
        if cluster.config().role == Role::Compact {
            anyhow::bail!("the compactor merges what the ingesters upload: it needs --storage.object-store.url");
        }
        return Ok(Compaction::None);
    };
    if cluster.config().role == Role::Compact {
        let db = db.context("the compactor's engine is not open")?.clone();
        cluster.set_compacted(db.clone());
        let compactor = Compactor::start(cluster, db, &config.storage, settings)?;
        return Ok(Compaction::Compactor(compactor));
    }
    let mut view = config.storage.clone();
    view.path = config.storage.path.join("compacted");
    view.read_only = true;
    view.wal_replay = Arc::default();
    view.object_store = Some(layout::with_url(&base, layout::compacted_bucket_url(&base.url)));
    let path = view.path.clone();
    // The tenants' retentions, so a tenant kept longer is read longer.
    let view = tokio::task::spawn_blocking(move || TsdbTenants::open(view, settings))
        .await
        .context("opening the compacted days failed")?
        .with_context(|| format!("cannot open the compacted days' view at {}", path.display()))?;
    cluster.set_compacted(view.clone());
    Ok(Compaction::Reader(view))
}
