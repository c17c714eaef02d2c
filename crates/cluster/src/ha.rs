//! Deduplication of HA pairs of Prometheus on the way in (Mimir's HA
//! tracker): two Prometheus servers scrape the same targets and label
//! their series alike but for a replica label (`cluster="eu1"`,
//! `__replica__="a"` and `"b"`). Per tenant and cluster one replica is
//! elected; its samples are stored with the replica label removed, the
//! others' dropped. When the elected replica has sent nothing for the
//! failover timeout, the next replica that writes is elected.
//!
//! Elections live in etcd, so every node that takes writes agrees: an
//! election is a compare-and-swap on the (tenant, cluster) key, and each
//! node renews the elected replica's last-seen time there while it keeps
//! receiving from it. Between etcd round trips a node decides from its
//! cache, which it refreshes from etcd periodically.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use cairn_storage::TenantId;
use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp, TxnOpResponse};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::membership::connect;
use crate::node::Cluster;

/// The HA tracker's settings (`--cluster.ha-*`).
#[derive(Debug, Clone)]
pub struct HaConfig {
    pub cluster_label: String,
    pub replica_label: String,
    /// How long the elected replica may be silent before another takes over.
    pub failover_timeout: Duration,
}

impl Default for HaConfig {
    fn default() -> Self {
        Self {
            cluster_label: "cluster".into(),
            replica_label: "__replica__".into(),
            failover_timeout: Duration::from_secs(30),
        }
    }
}

/// An election as etcd holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Elected {
    replica: String,
    /// When a node last received from the replica (ms since the epoch).
    last_seen_ms: i64,
}

/// The cached view of one election.
#[derive(Debug, Clone)]
struct Entry {
    elected: Elected,
    /// etcd's revision of the key when read (for compare-and-swap).
    revision: i64,
    /// When this node last received from the elected replica, if since the
    /// last renewal it wrote to etcd.
    seen_here_ms: Option<i64>,
}

pub(crate) struct HaTracker {
    pub(crate) config: HaConfig,
    entries: Mutex<HashMap<(TenantId, String), Entry>>,
}

impl HaTracker {
    pub(crate) fn new(config: HaConfig) -> Self {
        Self {
            config,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// Whether samples of `replica` of `cluster` are stored now. Decides
    /// from the cache while the elected replica is the one writing, or is
    /// silent for less than the failover timeout; asks etcd otherwise.
    pub(crate) fn accept(
        &self,
        node: &Arc<Cluster>,
        tenant: &TenantId,
        cluster: &str,
        replica: &str,
        now_ms: i64,
    ) -> bool {
        let key = (tenant.clone(), cluster.to_string());
        let failover = self.config.failover_timeout.as_millis() as i64;
        {
            let mut entries = self.entries.lock();
            if let Some(e) = entries.get_mut(&key) {
                if e.elected.replica == replica {
                    e.seen_here_ms = Some(now_ms);
                    return true;
                }
                if now_ms - e.elected.last_seen_ms.max(e.seen_here_ms.unwrap_or(0)) <= failover {
                    return false;
                }
            }
        }
        // No election known, or the elected replica went silent: elect this one.
        let etcd_key = self.key(node, tenant, cluster);
        let endpoints = node.config.etcd_endpoints.clone();
        let (known, revision) = {
            let entries = self.entries.lock();
            entries
                .get(&key)
                .map_or((None, 0), |e| (Some(e.elected.clone()), e.revision))
        };
        let candidate = Elected {
            replica: replica.to_string(),
            last_seen_ms: now_ms,
        };
        let value = serde_json::to_vec(&candidate).unwrap_or_default();
        let outcome = node.block_on(async move {
            let mut client = connect(&endpoints).await?;
            // Swap only what was read: another node's newer election wins.
            let unchanged = match known {
                None => Compare::version(etcd_key.clone(), CompareOp::Equal, 0),
                Some(_) => Compare::mod_revision(etcd_key.clone(), CompareOp::Equal, revision),
            };
            let txn = Txn::new()
                .when([unchanged])
                .and_then([TxnOp::put(etcd_key.clone(), value, None)])
                .or_else([TxnOp::get(etcd_key.clone(), None)]);
            client.txn(txn).await
        });
        let mut entries = self.entries.lock();
        match outcome {
            Ok(answer) if answer.succeeded() => {
                let revision = answer.header().map_or(0, |h| h.revision());
                tracing::info!(%tenant, cluster, replica, "HA tracker: elected");
                entries.insert(
                    key,
                    Entry {
                        elected: candidate,
                        revision,
                        seen_here_ms: Some(now_ms),
                    },
                );
                true
            }
            Ok(answer) => {
                // Someone else's election stands: take it.
                let current = answer.op_responses().into_iter().find_map(|op| match op {
                    TxnOpResponse::Get(get) => get.kvs().first().and_then(|kv| {
                        let elected: Elected = serde_json::from_slice(kv.value()).ok()?;
                        Some((elected, kv.mod_revision()))
                    }),
                    _ => None,
                });
                match current {
                    Some((elected, revision)) => {
                        let accept = elected.replica == replica;
                        entries.insert(
                            key,
                            Entry {
                                elected,
                                revision,
                                seen_here_ms: accept.then_some(now_ms),
                            },
                        );
                        accept
                    }
                    None => false,
                }
            }
            Err(e) => {
                // Without etcd, keep the last election known; with none,
                // accept (storing a replica twice beats losing both).
                tracing::warn!(error = %e, "HA tracker: etcd unreachable; keeping the last election");
                entries.get(&key).is_none_or(|e| e.elected.replica == replica)
            }
        }
    }

    fn key(&self, node: &Cluster, tenant: &TenantId, cluster: &str) -> String {
        ha_key(&node.config.name, tenant.as_str(), cluster)
    }
}

fn ha_key(cluster_name: &str, tenant: &str, cluster: &str) -> String {
    // Tenant ids hold no '/'; a cluster label value may, so it goes last.
    format!("/cairn/{cluster_name}/ha/{tenant}/{cluster}")
}

/// Renews, in etcd, the last-seen time of the replicas this node received
/// from, and reads the elections the other nodes made or renewed.
pub(crate) async fn keep_elections_fresh(node: Arc<Cluster>, tracker: Arc<HaTracker>) {
    let period = (tracker.config.failover_timeout / 3).max(Duration::from_millis(100));
    let prefix = format!("/cairn/{}/ha/", node.config.name);
    loop {
        tokio::time::sleep(period).await;
        if let Err(e) = refresh(&node, &tracker, &prefix).await {
            tracing::warn!(error = %e, "HA tracker: cannot refresh the elections from etcd");
        }
    }
}

async fn refresh(node: &Cluster, tracker: &HaTracker, prefix: &str) -> Result<(), etcd_client::Error> {
    let mut client = connect(&node.config.etcd_endpoints).await?;
    let renewals: Vec<(String, Elected, i64)> = tracker
        .entries
        .lock()
        .iter()
        .filter_map(|((tenant, cluster), e)| {
            let seen = e.seen_here_ms?;
            let elected = Elected {
                replica: e.elected.replica.clone(),
                last_seen_ms: seen.max(e.elected.last_seen_ms),
            };
            Some((ha_key(&node.config.name, tenant.as_str(), cluster), elected, e.revision))
        })
        .collect();
    for (key, elected, revision) in renewals {
        let value = serde_json::to_vec(&elected).unwrap_or_default();
        let txn = Txn::new()
            .when([Compare::mod_revision(key.clone(), CompareOp::Equal, revision)])
            .and_then([TxnOp::put(key, value, None)]);
        // A failed swap means another node renewed or re-elected: the read below takes it.
        client.txn(txn).await?;
    }
    let all = client.get(prefix, Some(GetOptions::new().with_prefix())).await?;
    let mut entries = tracker.entries.lock();
    for kv in all.kvs() {
        let Some(rest) = kv.key_str().ok().and_then(|k| k.strip_prefix(prefix)) else {
            continue;
        };
        let Some((tenant, cluster)) = rest.split_once('/') else {
            continue;
        };
        let (Ok(tenant), Ok(elected)) = (TenantId::new(tenant), serde_json::from_slice::<Elected>(kv.value())) else {
            continue;
        };
        let entry = entries.entry((tenant, cluster.to_string())).or_insert_with(|| Entry {
            elected: elected.clone(),
            revision: kv.mod_revision(),
            seen_here_ms: None,
        });
        // Only newer: an election made here after this read began stands.
        if kv.mod_revision() > entry.revision {
            if entry.elected.replica != elected.replica {
                entry.seen_here_ms = None;
            }
            entry.elected = elected;
            entry.revision = kv.mod_revision();
        }
        // Renewed already unless seen again since.
        if entry.seen_here_ms.is_some_and(|s| s <= entry.elected.last_seen_ms) {
            entry.seen_here_ms = None;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_put_the_cluster_label_last() {
        assert_eq!(ha_key("c", "team-a", "eu/1"), "/cairn/c/ha/team-a/eu/1");
    }
}
