//! A cluster node's part in keeping old days once in the shared bucket: the
//! compactors merge the replicas (cairn-cluster's compactor), and every
//! node reads their copies through read-only views (a compactor reads its
//! own from its engine).

use std::sync::Arc;

use anyhow::Context;
use cairn_cluster::{Cluster, CompactedDays, Compactor, Role};
use cairn_tsdb::{SettingsOf, TsdbTenants};

use crate::ServerConfig;

/// What runs for the compacted copies on this node, stopped at shutdown.
pub enum Compaction {
    /// Nothing: the cluster has no shared bucket.
    None,
    /// This node is a compactor, and reads the others' copies.
    Compactor(Arc<Compactor>, Arc<CompactedDays>),
    /// This node reads the compactors' copies.
    Reader(Arc<CompactedDays>),
}

impl Compaction {
    pub fn stop(self) {
        match self {
            Self::None => {}
            Self::Compactor(compactor, days) => {
                compactor.stop();
                days.close();
            }
            Self::Reader(days) => days.close(),
        }
    }
}

/// Starts the compactor on a compactor node (over `db`, its engine), and
/// opens the read-only views of the compactors' days.
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
    let own = match cluster.config().role {
        Role::Compact => Some(db.context("the compactor's engine is not open")?.clone()),
        _ => None,
    };
    let (node_id, storage, view_settings) = (
        cluster.config().node_id.clone(),
        config.storage.clone(),
        settings.clone(),
    );
    let views = own.clone();
    // The tenants' retentions, so a tenant kept longer is read longer.
    let days =
        tokio::task::spawn_blocking(move || CompactedDays::start(base, &node_id, &storage, view_settings, views))
            .await
            .context("opening the compacted days failed")?
            .context("cannot open the views of the compacted days")?;
    cluster.set_compacted(days.clone());
    match own {
        Some(db) => {
            let compactor = Compactor::start(cluster, db, &config.storage, settings)?;
            Ok(Compaction::Compactor(compactor, days))
        }
        None => Ok(Compaction::Reader(days)),
    }
}
