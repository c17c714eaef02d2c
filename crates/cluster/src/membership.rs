//! Membership in etcd. Each node writes two keys: its member key (who it
//! is, where, its state), which stays until it leaves gracefully, and an
//! alive key under a lease it keeps renewing. Every node reads both
//! prefixes once and then watches them to build the ring: members own
//! their share whether alive or not; the alive keys say which can answer
//! now.
//!
//! etcd is the one source of truth for who is in the ring; no node decides
//! membership by itself, so a node cut off from the others cannot take
//! over their share. A node killed stops renewing its lease and etcd drops
//! its alive key when the lease expires; the node stays a member, counted
//! as down by writes and reads, until it comes back. When etcd cannot be
//! reached a node keeps the last ring it read, and registers again (a new
//! lease) as soon as etcd answers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use etcd_client::{Client, ConnectOptions, EventType, GetOptions, PutOptions, Txn, TxnOp, WatchOptions};

use crate::node::Cluster;
use crate::ring::{Member, NodeState, Ring};

/// How long to wait before trying etcd again after a failure.
const RETRY: Duration = Duration::from_secs(1);

pub(crate) async fn connect(endpoints: &[String]) -> Result<Client, etcd_client::Error> {
    let options = ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(2))
        .with_timeout(Duration::from_secs(5))
        .with_keep_alive(Duration::from_secs(2), Duration::from_secs(2));
    Client::connect(endpoints, Some(options)).await
}

/// Keeps this node's member key in etcd under a live lease, for as long as
/// the node runs; registers again after the lease is lost.
pub(crate) async fn keep_registered(cluster: Arc<Cluster>) {
    loop {
        if let Err(e) = register_and_renew(&cluster).await {
            tracing::warn!(error = %e, "cluster membership: etcd unreachable or lease lost; registering again");
        }
        *cluster.lease.lock() = None;
        if cluster.deregistered.load(Ordering::Acquire) {
            return;
        }
        tokio::time::sleep(RETRY).await;
    }
}

async fn register_and_renew(cluster: &Cluster) -> Result<(), etcd_client::Error> {
    let config = &cluster.config;
    let mut client = connect(&config.etcd_endpoints).await?;
    let ttl = granted_ttl(config).as_secs() as i64;
    let lease = client.lease_grant(ttl, None).await?.id();
    let mut last_alive = cluster.last_alive_ms.load(Ordering::Acquire);
    if last_alive == 0 {
        // No note of when it was last alive: a new node, or a member back
        // on an empty disk, which catches up over the whole window.
        let key = format!("{}{}", config.members_prefix(), config.node_id);
        if !client.get(key, None).await?.kvs().is_empty() {
            last_alive = crate::catch_up::WHOLE_WINDOW;
        }
    }
    // Every node reads the new member before its share moves to it, so the
    // nodes giving that share up stop when it starts.
    let from = crate::node::now_ms() + crate::work::settle(config).as_millis() as i64;
    cluster.monitors_from_ms.store(from, Ordering::Release);
    // Before the ring gives it any series, so reads find what it held.
    cluster.hold_local_tenants().await?;
    let mut published = put_member(&mut client, cluster, lease).await?;
    *cluster.lease.lock() = Some(lease);
    cluster.catch_up_since.store(last_alive, Ordering::Release);
    cluster.registrations.fetch_add(1, Ordering::AcqRel);
    cluster.renewed();
    tracing::info!(node = %config.node_id, lease, "registered in the cluster");
    let (mut keeper, mut answers) = client.lease_keep_alive(lease).await?;
    let period = Duration::from_secs((ttl / 3).max(1) as u64);
    loop {
        if cluster.deregistered.load(Ordering::Acquire) {
            let _ = client.lease_revoke(lease).await;
            return Ok(());
        }
        keeper.keep_alive().await?;
        match answers.message().await? {
            Some(answer) if answer.ttl() > 0 => cluster.renewed(),
            _ => {
                return Err(etcd_client::Error::LeaseKeepAliveError("the lease expired".into()));
            }
        }
        if cluster.state() != published {
            published = put_member(&mut client, cluster, lease).await?;
        }
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = cluster.membership_changed.notified() => {}
        }
    }
}

/// The time to live of this node's lease, as it asks etcd for it.
pub(crate) fn granted_ttl(config: &crate::ClusterConfig) -> Duration {
    Duration::from_secs(config.lease_ttl.as_secs().max(2))
}

/// Writes this node's member and alive keys; returns the state it wrote,
/// which a leave may have changed since the caller last looked.
async fn put_member(client: &mut Client, cluster: &Cluster, lease: i64) -> Result<NodeState, etcd_client::Error> {
    let me = cluster.me();
    let config = &cluster.config;
    let value = serde_json::to_vec(&me).map_err(|e| etcd_client::Error::InvalidArgs(e.to_string()))?;
    client
        .put(format!("{}{}", config.members_prefix(), me.id), value, None)
        .await?;
    client
        .put(
            format!("{}{}", config.alive_prefix(), me.id),
            Vec::new(),
            Some(PutOptions::new().with_lease(lease)),
        )
        .await?;
    Ok(me.state)
}

/// Takes a node out of the ring for good: its member key and its alive key.
pub(crate) async fn forget(config: &crate::ClusterConfig, node: &str) -> Result<(), etcd_client::Error> {
    let mut client = connect(&config.etcd_endpoints).await?;
    client
        .delete(format!("{}{node}", config.members_prefix()), None)
        .await?;
    client.delete(format!("{}{node}", config.alive_prefix()), None).await?;
    client
        .delete(
            format!("{}{node}/", config.holders_prefix()),
            Some(etcd_client::DeleteOptions::new().with_prefix()),
        )
        .await?;
    Ok(())
}

/// Follows the members in etcd: reads them once, then watches both
/// prefixes from the revision read and rebuilds the ring on each change.
/// A watch that breaks (etcd restarted, unreachable, the revision
/// compacted away) is replaced by a new read and a new watch; meanwhile
/// the node keeps the last ring it had.
pub(crate) async fn follow_ring(cluster: Arc<Cluster>) {
    loop {
        if let Err(e) = follow(&cluster).await {
            tracing::warn!(error = %e, "cluster ring: lost the watch on etcd; keeping the last ring");
        }
        tokio::time::sleep(cluster.config.ring_propagation).await;
    }
}

/// How long a watch may stay silent before it is asked for its progress,
/// and then before it is given up as dead (a connection that went away
/// without a word, as under a partition).
const WATCH_QUIET: Duration = Duration::from_secs(5);

async fn follow(cluster: &Cluster) -> Result<(), etcd_client::Error> {
    let config = &cluster.config;
    let mut client = connect(&config.etcd_endpoints).await?;
    let mut members = read_members(&mut client, config).await?;
    cluster.ring_reads.fetch_add(1, Ordering::Relaxed);
    cluster.set_ring(members.ring(config.zone_aware));
    let from = WatchOptions::new()
        .with_prefix()
        .with_start_revision(members.revision + 1);
    let mut watch = client.watch(config.members_prefix(), Some(from.clone())).await?;
    watch.watch(config.alive_prefix(), Some(from.clone())).await?;
    watch.watch(config.holders_prefix(), Some(from)).await?;
    let mut asked_progress = false;
    loop {
        let answer = match tokio::time::timeout(WATCH_QUIET, watch.message()).await {
            Ok(answer) => answer?,
            Err(_) if asked_progress => {
                return Err(etcd_client::Error::WatchError(
                    "etcd stopped answering the watch".into(),
                ));
            }
            Err(_) => {
                watch.request_progress().await?;
                asked_progress = true;
                continue;
            }
        };
        asked_progress = false;
        let Some(answer) = answer else {
            return Err(etcd_client::Error::WatchError("etcd closed the watch".into()));
        };
        if answer.canceled() {
            return Err(etcd_client::Error::WatchError(format!(
                "etcd cancelled the watch: {}",
                answer.cancel_reason()
            )));
        }
        if !answer.events().is_empty() {
            for event in answer.events() {
                let Some(kv) = event.kv() else { continue };
                let value = (event.event_type() == EventType::Put).then(|| kv.value());
                members.apply(config, &String::from_utf8_lossy(kv.key()), value);
            }
            cluster.set_ring(members.ring(config.zone_aware));
        }
    }
}

/// The members as etcd holds them, at a revision.
#[derive(Debug, Default)]
struct Members {
    /// By id.
    members: BTreeMap<String, Member>,
    alive: BTreeSet<String>,
    /// By tenant: the members that registered holding some of its series.
    holders: BTreeMap<String, BTreeSet<String>>,
    revision: i64,
}

impl Members {
    fn ring(&self, zone_aware: bool) -> Ring {
        let alive: Vec<String> = self.alive.iter().cloned().collect();
        Ring::new(self.members.values().cloned().collect(), &alive, zone_aware).with_holders(self.holders.clone())
    }

    /// A change of `key` in etcd: put with its new value, or deleted (`None`).
    fn apply(&mut self, config: &crate::ClusterConfig, key: &str, value: Option<&[u8]>) {
        if let Some((node, tenant)) = key.strip_prefix(&config.holders_prefix()).and_then(holder_of) {
            match value {
                Some(_) => {
                    self.holders
                        .entry(tenant.to_string())
                        .or_default()
                        .insert(node.to_string());
                }
                None => {
                    if let Some(nodes) = self.holders.get_mut(tenant) {
                        nodes.remove(node);
                        if nodes.is_empty() {
                            self.holders.remove(tenant);
                        }
                    }
                }
            }
        } else if let Some(id) = key.strip_prefix(&config.alive_prefix()) {
            match value {
                Some(_) => self.alive.insert(id.to_string()),
                None => self.alive.remove(id),
            };
        } else if let Some(id) = key.strip_prefix(&config.members_prefix()) {
            match value {
                None => {
                    self.members.remove(id);
                }
                // An unreadable member keeps what was known of it.
                Some(value) => {
                    if let Some(member) = parse_member(key, value) {
                        self.members.insert(id.to_string(), member);
                    }
                }
            }
        }
    }
}

/// `(node, tenant)` of a holder key below its prefix: `<node>/<tenant>`
/// (tenant ids hold no `/`).
fn holder_of(key: &str) -> Option<(&str, &str)> {
    key.rsplit_once('/')
        .filter(|(node, tenant)| !node.is_empty() && !tenant.is_empty())
}

/// The key saying that `node` holds some of `tenant`'s series.
pub(crate) fn holder_key(config: &crate::ClusterConfig, node: &str, tenant: &str) -> String {
    format!("{}{node}/{tenant}", config.holders_prefix())
}

/// Registers this node as holding some of each of `tenants`' series, in
/// one transaction; done before the node stores any of them.
pub(crate) async fn publish_holder(
    config: &crate::ClusterConfig,
    tenants: &[cairn_storage::TenantId],
) -> Result<(), etcd_client::Error> {
    if tenants.is_empty() {
        return Ok(());
    }
    let mut client = connect(&config.etcd_endpoints).await?;
    let puts: Vec<TxnOp> = tenants
        .iter()
        .map(|t| TxnOp::put(holder_key(config, &config.node_id, t.as_str()), Vec::new(), None))
        .collect();
    client.txn(Txn::new().and_then(puts)).await?;
    Ok(())
}

/// Drops this node's registration as holding some of `tenant`'s series.
pub(crate) async fn unpublish_holder(
    config: &crate::ClusterConfig,
    tenant: &cairn_storage::TenantId,
) -> Result<(), etcd_client::Error> {
    let mut client = connect(&config.etcd_endpoints).await?;
    client
        .delete(holder_key(config, &config.node_id, tenant.as_str()), None)
        .await?;
    Ok(())
}

fn parse_member(key: &str, value: &[u8]) -> Option<Member> {
    serde_json::from_slice::<Member>(value)
        .inspect_err(|e| tracing::warn!(key, error = %e, "cluster ring: unreadable member"))
        .ok()
}

/// The members and which are alive, read at one revision.
async fn read_members(client: &mut Client, config: &crate::ClusterConfig) -> Result<Members, etcd_client::Error> {
    let alive_prefix = config.alive_prefix();
    let alive = client
        .get(
            alive_prefix.as_str(),
            Some(GetOptions::new().with_prefix().with_keys_only()),
        )
        .await?;
    let revision = alive.header().map_or(0, |h| h.revision());
    let alive = alive
        .kvs()
        .iter()
        .filter_map(|kv| Some(kv.key_str().ok()?.strip_prefix(&alive_prefix)?.to_string()))
        .collect();
    // At the same revision as the alive keys, so the watch misses nothing.
    let answer = client
        .get(
            config.members_prefix(),
            Some(GetOptions::new().with_prefix().with_revision(revision)),
        )
        .await?;
    let holders_prefix = config.holders_prefix();
    let mut holders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let held = client
        .get(
            holders_prefix.as_str(),
            Some(GetOptions::new().with_prefix().with_keys_only().with_revision(revision)),
        )
        .await?;
    for kv in held.kvs() {
        let Some((node, tenant)) = kv
            .key_str()
            .ok()
            .and_then(|k| k.strip_prefix(&holders_prefix))
            .and_then(holder_of)
        else {
            continue;
        };
        holders.entry(tenant.to_string()).or_default().insert(node.to_string());
    }
    let mut members = BTreeMap::new();
    for kv in answer.kvs() {
        let Ok(key) = kv.key_str() else { continue };
        if let (Some(id), Some(member)) = (
            key.strip_prefix(&config.members_prefix()),
            parse_member(key, kv.value()),
        ) {
            members.insert(id.to_string(), member);
        }
    }
    Ok(Members {
        members,
        alive,
        holders,
        revision,
    })
}

impl NodeState {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Leaving => "leaving",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: &str, state: NodeState) -> Vec<u8> {
        let m = Member {
            id: id.into(),
            addr: format!("{id}:9090"),
            zone: String::new(),
            ingester: true,
            compactor: false,
            queries: true,
            monitors_from_ms: None,
            state,
            reads_compressed_frames: true,
        };
        serde_json::to_vec(&m).unwrap()
    }

    fn ids(ring: &Ring) -> Vec<(String, bool, NodeState)> {
        (0..ring.members().len())
            .map(|i| (ring.member(i).id.clone(), ring.is_alive(i), ring.member(i).state))
            .collect()
    }

    #[test]
    fn watched_changes_build_the_ring_a_whole_read_would() {
        let config = crate::ClusterConfig::new("http://etcd:2379", "a", "a:9090");
        let (members, alive) = (config.members_prefix(), config.alive_prefix());
        let mut m = Members::default();
        m.apply(&config, &format!("{members}a"), Some(&member("a", NodeState::Active)));
        m.apply(&config, &format!("{members}b"), Some(&member("b", NodeState::Active)));
        m.apply(&config, &format!("{alive}a"), Some(b""));
        m.apply(&config, &format!("{alive}b"), Some(b""));
        // Keys of this cluster that are not membership, and other clusters', change nothing.
        m.apply(&config, "/cairn/cairn/ha/t/c", Some(b"{}"));
        m.apply(&config, "/cairn/other/members/c", Some(&member("c", NodeState::Active)));
        let active = NodeState::Active;
        assert_eq!(
            ids(&m.ring(false)),
            [("a".into(), true, active), ("b".into(), true, active)]
        );
        // b's lease expires: still a member, down.
        m.apply(&config, &format!("{alive}b"), None);
        assert_eq!(ids(&m.ring(false))[1], ("b".into(), false, active));
        // An unreadable update keeps what was known; a new state replaces it.
        m.apply(&config, &format!("{members}a"), Some(b"not json"));
        assert_eq!(ids(&m.ring(false))[0], ("a".into(), true, active));
        m.apply(&config, &format!("{members}a"), Some(&member("a", NodeState::Leaving)));
        assert_eq!(ids(&m.ring(false))[0], ("a".into(), true, NodeState::Leaving));
        // b forgotten: out of the ring.
        m.apply(&config, &format!("{members}b"), None);
        assert_eq!(ids(&m.ring(false)).len(), 1);
    }

    #[test]
    fn holder_keys_say_who_holds_which_tenants_series() {
        let config = crate::ClusterConfig::new("http://etcd:2379", "a", "a:9090");
        let mut m = Members::default();
        let key = |node: &str, tenant: &str| holder_key(&config, node, tenant);
        m.apply(&config, &key("a", "t1"), Some(b""));
        m.apply(&config, &key("b", "t1"), Some(b""));
        m.apply(&config, &key("zone/b", "t2"), Some(b""));
        let held = |m: &Members| {
            m.ring(false)
                .holders()
                .iter()
                .map(|(t, nodes)| (t.clone(), nodes.iter().cloned().collect::<Vec<_>>()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            held(&m),
            [
                ("t1".to_string(), vec!["a".to_string(), "b".to_string()]),
                ("t2".to_string(), vec!["zone/b".to_string()])
            ]
        );
        m.apply(&config, &key("a", "t1"), None);
        m.apply(&config, &key("zone/b", "t2"), None);
        assert_eq!(held(&m), [("t1".to_string(), vec!["b".to_string()])]);
        // A key without a tenant changes nothing.
        m.apply(&config, &format!("{}a/", config.holders_prefix()), Some(b""));
        assert_eq!(held(&m).len(), 1);
    }
}
