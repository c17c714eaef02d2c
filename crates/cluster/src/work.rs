//! The monitoring work of a cluster (scrape targets, rule groups), spread
//! over the nodes that run `--config.file`. Each piece of work, named by a
//! key every node derives alike, belongs to one of the members that
//! monitor, are alive and are not leaving: the one whose hash with the key
//! is highest (rendezvous hashing), so that a node coming or going moves
//! only its own share.
//!
//! A node that registers takes its share from a time it publishes with its
//! member key, later than every other node sees the ring change: at that
//! time the nodes giving work up stop and it starts, each by its own clock,
//! so a target is neither scraped twice in an interval nor skipped. A node
//! killed loses its alive key when its lease expires, and its share goes to
//! the others as soon as the ring shows it.
//!
//! A node cut off from etcd keeps the last ring it read, and so its share,
//! as writes and reads do, so the cluster never stops monitoring because
//! etcd is down; but once another node that reaches etcd sees it down (and
//! so has taken its share), it gives its share up until it registers again
//! (`fence.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cairn_storage::WorkShare;
use tokio::sync::watch;

use crate::ClusterConfig;
use crate::node::{Cluster, now_ms};
use crate::ring::{NodeState, Ring};

/// How long after registering a node takes its share: twice the ring's
/// propagation and a second, so that every node has seen it by then.
pub(crate) fn settle(config: &ClusterConfig) -> Duration {
    config.ring_propagation * 2 + Duration::from_secs(1)
}

/// The members that share the monitoring work, each from when.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkOwners {
    /// `(id, from ms)`, by id.
    members: Vec<(String, i64)>,
}

impl WorkOwners {
    pub(crate) fn of(ring: &Ring) -> Self {
        let mut members: Vec<(String, i64)> = ring
            .members()
            .iter()
            .enumerate()
            .filter(|&(i, m)| m.state == NodeState::Active && ring.is_alive(i))
            .filter_map(|(_, m)| Some((m.id.clone(), m.monitors_from_ms?)))
            .collect();
        members.sort();
        Self { members }
    }

    /// The member that does the work named by `key` at `now_ms`, if any does.
    pub fn owner(&self, key: u64, now_ms: i64) -> Option<&str> {
        self.members
            .iter()
            .filter(|(_, from)| *from <= now_ms)
            .max_by_key(|(id, _)| (score(key, id), id.as_str()))
            .map(|(id, _)| id.as_str())
    }

    /// The next time after `now_ms` a member starts taking its share.
    pub fn next_change(&self, now_ms: i64) -> Option<i64> {
        self.members.iter().map(|&(_, from)| from).filter(|&f| f > now_ms).min()
    }

    /// The members sharing the work at `now_ms`.
    pub fn ids(&self, now_ms: i64) -> Vec<&str> {
        let at = self.members.iter().filter(|(_, from)| *from <= now_ms);
        at.map(|(id, _)| id.as_str()).collect()
    }
}

/// A key's weight on a member.
fn score(key: u64, id: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(id.as_bytes(), key)
}

/// This node's share of the monitoring work, as the scrape and rule
/// managers ask for it.
#[derive(Debug)]
pub(crate) struct NodeWork {
    node_id: String,
    owners: watch::Receiver<WorkOwners>,
    fenced: Arc<AtomicBool>,
}

impl WorkShare for NodeWork {
    fn owns(&self, key: u64) -> bool {
        !self.fenced.load(Ordering::Acquire) && self.owners.borrow().owner(key, now_ms()) == Some(self.node_id.as_str())
    }
}

impl Cluster {
    /// This node's share of the monitoring work.
    pub fn work_share(&self) -> Arc<dyn WorkShare> {
        Arc::new(NodeWork {
            node_id: self.config.node_id.clone(),
            owners: self.work.subscribe(),
            fenced: self.fenced.clone(),
        })
    }

    /// Changes whenever the members sharing the monitoring work change;
    /// [`WorkOwners::next_change`] says when the share moves next without one.
    pub fn work_changes(&self) -> watch::Receiver<WorkOwners> {
        self.work.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owners(members: &[(&str, i64)]) -> WorkOwners {
        WorkOwners {
            members: members.iter().map(|&(id, from)| (id.to_string(), from)).collect(),
        }
    }

    #[test]
    fn work_spreads_evenly_and_a_member_leaving_moves_only_its_own_share() {
        let three = owners(&[("a", 0), ("b", 0), ("c", 0)]);
        let two = owners(&[("a", 0), ("c", 0)]);
        let mut per_member = std::collections::BTreeMap::new();
        for key in 0..30_000u64 {
            let key = xxhash_rust::xxh3::xxh3_64(&key.to_le_bytes());
            let owner = three.owner(key, 0).unwrap();
            *per_member.entry(owner).or_insert(0) += 1;
            let after = two.owner(key, 0).unwrap();
            if owner != "b" {
                assert_eq!(after, owner, "a key of a member still there stays with it");
            }
        }
        for (member, n) in per_member {
            assert!((9_000..11_000).contains(&n), "{member} owns {n} of 30000");
        }
        assert_eq!(WorkOwners::default().owner(1, 0), None);
    }

    #[test]
    fn a_member_takes_its_share_from_the_time_it_published() {
        let w = owners(&[("a", 0), ("b", 0), ("c", 5_000)]);
        let moving: Vec<u64> = (0..1_000u64)
            .filter(|&k| owners(&[("a", 0), ("b", 0), ("c", 0)]).owner(k, 0) == Some("c"))
            .collect();
        assert!(!moving.is_empty());
        for &k in &moving {
            assert_ne!(w.owner(k, 4_999), Some("c"), "not before its time");
            assert_eq!(w.owner(k, 5_000), Some("c"), "from its time on");
        }
        assert_eq!(w.next_change(4_999), Some(5_000));
        assert_eq!(w.next_change(5_000), None);
        assert_eq!(w.ids(0), ["a", "b"]);
    }
}
