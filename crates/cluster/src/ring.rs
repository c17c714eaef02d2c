//! The token ring: which ingesters own which series.
//!
//! Every ingester holds [`TOKENS_PER_NODE`] tokens on a ring of `u32`
//! values, derived from its id (so a node that restarts takes back the
//! same share, and every node computes the same ring from the same member
//! list without storing tokens anywhere). A series hashes onto the ring
//! (tenant and labels together) and its owners are the first
//! `replication_factor` distinct ingesters found clockwise from that point,
//! in distinct zones first when zones are set. Adding a node takes about
//! `1/n` of the ring from the others, spread over all of them.
//!
//! With shuffle sharding a tenant's series live on a shard of the
//! ingesters ([`Ring::for_tenant`]), and its reads ask only the shard and
//! whichever other ingesters registered holding some of its series
//! ([`Ring::readers_of`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;

use serde::{Deserialize, Serialize};

/// Tokens per ingester: enough that shares differ by a few percent.
pub const TOKENS_PER_NODE: u32 = 128;

/// What a member does, as registered in etcd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    /// Owns its tokens: takes writes, answers reads.
    Active,
    /// Shutting down: takes no new writes, still answers reads until it is gone.
    Leaving,
}

/// One member of the cluster.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Member {
    /// Unique and stable across restarts (the node's tokens derive from it).
    pub id: String,
    /// `host:port` of its HTTP listener, where peers reach it.
    pub addr: String,
    /// Failure domain (rack, availability zone); empty when not used.
    #[serde(default)]
    pub zone: String,
    /// Whether it stores series (an ingester) or only routes.
    pub ingester: bool,
    /// Whether it is a compactor, which holds the merged copy of old days.
    #[serde(default)]
    pub compactor: bool,
    /// Whether it answers queries (and so evaluates parts of others').
    #[serde(default)]
    pub queries: bool,
    /// From when (ms since the epoch) it takes a share of the scrape targets
    /// and rule groups of `--config.file`; `None` when it runs none.
    #[serde(default)]
    pub monitors_from_ms: Option<i64>,
    pub state: NodeState,
    /// Whether it reads compressed series frames (`crate::wire`); nodes of
    /// earlier versions do not say, and get uncompressed ones.
    #[serde(default)]
    pub reads_compressed_frames: bool,
}

/// The ingesters and their tokens at one moment; immutable, replaced whole.
#[derive(Debug, Clone, Default)]
pub struct Ring {
    members: Vec<Member>,
    /// Per member: whether it holds a live lease now.
    alive: Vec<bool>,
    /// `(token, index into members)`, sorted by token: active ingesters only.
    tokens: Vec<(u32, usize)>,
    zone_aware: bool,
    /// By tenant: the members that registered holding some of its series.
    holders: BTreeMap<String, BTreeSet<String>>,
    shards: ShardCache,
}

/// Tenants' shards of one ring, made when first asked for: by tenant and
/// size, the shard's members and its ring (`None`: the whole ring).
#[derive(Default)]
struct ShardCache(Mutex<HashMap<(String, usize), Option<Shard>>>);

#[derive(Clone)]
struct Shard {
    members: Vec<usize>,
    ring: Arc<Ring>,
}

impl Clone for ShardCache {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for ShardCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} shards", self.0.lock().len())
    }
}

impl Ring {
    /// The ring of `members`, of whom those named in `alive` are up.
    pub fn new(mut members: Vec<Member>, alive: &[String], zone_aware: bool) -> Self {
        members.sort();
        members.dedup_by(|a, b| a.id == b.id);
        let alive = members.iter().map(|m| alive.contains(&m.id)).collect();
        let mut tokens: Vec<(u32, usize)> = members
            .iter()
            .enumerate()
            .filter(|(_, m)| m.ingester && m.state == NodeState::Active)
            .flat_map(|(i, m)| (0..TOKENS_PER_NODE).map(move |t| (token_of(&m.id, t), i)))
            .collect();
        // Equal tokens of two nodes (rare) are ordered by node, so every
        // node builds the same ring.
        tokens.sort_unstable();
        Self {
            members,
            alive,
            tokens,
            zone_aware,
            holders: BTreeMap::new(),
            shards: ShardCache::default(),
        }
    }

    /// The ring, knowing which members hold series of which tenants
    /// (tenant → member ids).
    pub fn with_holders(mut self, holders: BTreeMap<String, BTreeSet<String>>) -> Self {
        self.holders = holders;
        self
    }

    /// Whether a member owns any part of this ring.
    pub fn has_tokens(&self, index: usize) -> bool {
        self.tokens.iter().any(|&(_, i)| i == index)
    }

    /// By tenant: the members that registered holding some of its series.
    pub fn holders(&self) -> &BTreeMap<String, BTreeSet<String>> {
        &self.holders
    }

    /// The ring `tenant`'s series are written on with a shard of `size`
    /// ingesters: the same members, with only the shard's tokens. The
    /// whole ring when `size` is 0 or covers every active ingester.
    pub fn for_tenant(self: &Arc<Self>, tenant: &str, size: usize) -> Arc<Ring> {
        match self.cached_shard(tenant, size) {
            Some(shard) => shard.ring,
            None => self.clone(),
        }
    }

    /// The ingesters a read of `tenant` asks: its shard of `size`, and any
    /// other that registered holding some of its series (written there
    /// before the shard changed, or by a node whose shard size differed).
    /// Every readable ingester when `size` is 0 or covers them all.
    pub fn readers_of(&self, tenant: &str, size: usize) -> Vec<usize> {
        let Some(shard) = self.cached_shard(tenant, size) else {
            return self.readable_ingesters().collect();
        };
        let holders = self.holders.get(tenant);
        self.readable_ingesters()
            .filter(|i| shard.members.contains(i) || holders.is_some_and(|h| h.contains(&self.members[*i].id)))
            .collect()
    }

    fn cached_shard(&self, tenant: &str, size: usize) -> Option<Shard> {
        if size == 0 {
            return None;
        }
        let key = (tenant.to_string(), size);
        if let Some(shard) = self.shards.0.lock().get(&key) {
            return shard.clone();
        }
        let shard = self.shard(tenant, size).map(|members| {
            let ring = Arc::new(Ring {
                tokens: self
                    .tokens
                    .iter()
                    .copied()
                    .filter(|(_, i)| members.contains(i))
                    .collect(),
                shards: ShardCache::default(),
                ..self.clone()
            });
            Shard { members, ring }
        });
        self.shards.0.lock().insert(key, shard.clone());
        shard
    }

    /// The members of `tenant`'s shard of `size` active ingesters, sorted;
    /// `None` when that is all of them. Chosen by rendezvous hashing: each
    /// ingester scores a hash of the tenant and its id, and the highest
    /// scores make the shard, so an ingester joining or leaving changes a
    /// shard by at most one member. On a zone-aware ring each zone gives
    /// as many (`size` rounded up to a multiple of the zones), so a
    /// series' replicas still span the zones.
    fn shard(&self, tenant: &str, size: usize) -> Option<Vec<usize>> {
        let active: Vec<usize> = self
            .members
            .iter()
            .enumerate()
            .filter(|(_, m)| m.ingester && m.state == NodeState::Active)
            .map(|(i, _)| i)
            .collect();
        if size == 0 || size >= active.len() {
            return None;
        }
        let mut zones: BTreeMap<&str, Vec<(u64, usize)>> = BTreeMap::new();
        for &i in &active {
            let zone = if self.zone_aware {
                self.members[i].zone.as_str()
            } else {
                ""
            };
            zones
                .entry(zone)
                .or_default()
                .push((rendezvous_score(tenant, &self.members[i].id), i));
        }
        let per_zone = size.div_ceil(zones.len());
        let mut shard: Vec<usize> = zones
            .into_values()
            .flat_map(|mut scored| {
                scored.sort_unstable_by(|a, b| b.cmp(a));
                scored.into_iter().take(per_zone).map(|(_, i)| i)
            })
            .collect();
        if shard.len() >= active.len() {
            return None;
        }
        shard.sort_unstable();
        Some(shard)
    }

    /// Whether a member holds a live lease (it may still fail a request).
    pub fn is_alive(&self, index: usize) -> bool {
        self.alive[index]
    }

    /// The live compactor that takes the work named `key` (a tenant's
    /// day), by rendezvous hashing over the live compactors.
    pub fn compactor_of(&self, key: &str) -> Option<&Member> {
        self.members
            .iter()
            .enumerate()
            .filter(|&(i, m)| m.compactor && self.is_alive(i))
            .max_by_key(|(_, m)| (rendezvous_score(key, &m.id), m.id.as_str()))
            .map(|(_, m)| m)
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    pub fn member(&self, index: usize) -> &Member {
        &self.members[index]
    }

    /// Every ingester a read must ask: active and leaving alike (a leaving
    /// one still holds what it was sent).
    pub fn readable_ingesters(&self) -> impl Iterator<Item = usize> + '_ {
        self.members
            .iter()
            .enumerate()
            .filter(|(_, m)| m.ingester)
            .map(|(i, _)| i)
    }

    /// The owners of the series with this ring hash ([`series_hash`]),
    /// as indexes into [`Self::members`]: `replication_factor` distinct
    /// active ingesters (fewer when the ring has fewer), in distinct zones
    /// first when the ring is zone-aware. Owners that are down stay owners:
    /// a write counts them as failed rather than going elsewhere.
    pub fn owners(&self, hash: u32, replication_factor: usize, out: &mut Vec<usize>) {
        out.clear();
        if self.tokens.is_empty() {
            return;
        }
        let start = self.tokens.partition_point(|&(t, _)| t < hash);
        let walk = || {
            self.tokens[start..]
                .iter()
                .chain(&self.tokens[..start])
                .map(|&(_, i)| i)
        };
        let mut zones = BTreeSet::new();
        if self.zone_aware {
            for i in walk() {
                if out.len() == replication_factor {
                    return;
                }
                if !out.contains(&i) && zones.insert(self.members[i].zone.as_str()) {
                    out.push(i);
                }
            }
        }
        // Without zones, or with fewer zones than replicas: distinct nodes.
        for i in walk() {
            if out.len() == replication_factor {
                return;
            }
            if !out.contains(&i) {
                out.push(i);
            }
        }
    }

    /// The failure domain of a member: its zone on a zone-aware ring with a
    /// zone per replica at least (each series then has one owner per zone),
    /// else the member itself.
    pub fn domain_of(&self, index: usize, replication_factor: usize) -> &str {
        let m = &self.members[index];
        let zones: BTreeSet<&str> = self
            .members
            .iter()
            .filter(|m| m.ingester && m.state == NodeState::Active)
            .map(|m| m.zone.as_str())
            .collect();
        if self.zone_aware && zones.len() >= replication_factor {
            &m.zone
        } else {
            &m.id
        }
    }
}

/// How many owners must store a write before it is acknowledged: a majority.
pub fn write_quorum(replication_factor: usize) -> usize {
    replication_factor / 2 + 1
}

/// How many failure domains may fail to answer a read that must still be
/// complete: every series then has `replication_factor - write_quorum + 1`
/// owners that answered, and any such set meets every write quorum.
pub fn read_tolerance(replication_factor: usize) -> usize {
    write_quorum(replication_factor) - 1
}

/// Where a series of `tenant` with labels in their `Labels::encode` form
/// falls on the ring.
pub fn series_hash(tenant: &str, encoded_labels: &[u8]) -> u32 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(tenant.as_bytes());
    // Tenant ids never hold 0xFF.
    h.update(&[0xFF]);
    h.update(encoded_labels);
    (h.digest() >> 32) as u32
}

/// A member's score for a tenant's shard (see `Ring::shard`).
/// A key's weight on a node, for rendezvous hashing: the node with the
/// highest weight takes the key, and a node coming or going moves only the
/// keys it takes or took.
fn rendezvous_score(key: &str, node: &str) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(key.as_bytes());
    h.update(&[0xFF]);
    h.update(node.as_bytes());
    h.digest()
}

fn token_of(node: &str, i: u32) -> u32 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(node.as_bytes());
    h.update(&i.to_le_bytes());
    h.digest() as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn member(id: &str, zone: &str) -> Member {
        Member {
            id: id.into(),
            addr: format!("{id}:9090"),
            zone: zone.into(),
            ingester: true,
            compactor: false,
            queries: true,
            monitors_from_ms: None,
            state: NodeState::Active,
            reads_compressed_frames: true,
        }
    }

    fn ring(n: usize) -> Ring {
        Ring::new((0..n).map(|i| member(&format!("node-{i}"), "")).collect(), &[], false)
    }

    #[test]
    fn quorums_meet() {
        for rf in 1..=7 {
            let w = write_quorum(rf);
            let r = rf - read_tolerance(rf);
            assert!(w + r > rf, "rf {rf}: a read of {r} owners must meet every write of {w}");
            assert!(w <= rf);
        }
        assert_eq!((write_quorum(3), read_tolerance(3)), (2, 1));
        assert_eq!((write_quorum(1), read_tolerance(1)), (1, 0));
        assert_eq!((write_quorum(2), read_tolerance(2)), (2, 1));
    }

    #[test]
    fn shares_are_even() {
        let r = ring(5);
        let mut owned = [0usize; 5];
        let mut out = Vec::new();
        for s in 0..50_000u32 {
            r.owners(series_hash("t", &s.to_le_bytes()), 1, &mut out);
            owned[out[0]] += 1;
        }
        for n in owned {
            assert!((7_000..13_000).contains(&n), "uneven shares: {owned:?}");
        }
    }

    #[test]
    fn leaving_nodes_own_nothing_but_are_read() {
        let mut members: Vec<_> = (0..3).map(|i| member(&format!("n{i}"), "")).collect();
        members[1].state = NodeState::Leaving;
        let r = Ring::new(members, &[], false);
        let mut out = Vec::new();
        for s in 0..1000u32 {
            r.owners(series_hash("t", &s.to_le_bytes()), 3, &mut out);
            assert_eq!(out.len(), 2);
            assert!(!out.contains(&1));
        }
        assert_eq!(r.readable_ingesters().count(), 3);
    }

    #[test]
    fn zone_aware_owners_span_zones() {
        let members = ["a", "b", "c"]
            .iter()
            .flat_map(|z| (0..3).map(move |i| member(&format!("{z}-{i}"), z)))
            .collect();
        let r = Ring::new(members, &[], true);
        let mut out = Vec::new();
        for s in 0..2000u32 {
            r.owners(series_hash("t", &s.to_le_bytes()), 3, &mut out);
            let zones: BTreeSet<_> = out.iter().map(|&i| r.member(i).zone.clone()).collect();
            assert_eq!(zones.len(), 3, "owners {out:?}");
        }
    }

    #[test]
    fn zones_are_failure_domains_only_with_a_zone_per_replica() {
        let members = ["a", "b"]
            .iter()
            .flat_map(|z| (0..2).map(move |i| member(&format!("{z}-{i}"), z)))
            .collect();
        let r = Ring::new(members, &[], true);
        // Two zones, three replicas: two owners of a series share a zone.
        assert_eq!(r.domain_of(0, 3), r.member(0).id);
        assert_eq!(r.domain_of(0, 2), "a");
    }

    fn shard_ids(ring: &Ring, tenant: &str, size: usize) -> BTreeSet<String> {
        let ring = Arc::new(ring.clone()).for_tenant(tenant, size);
        let mut owners = BTreeSet::new();
        let mut out = Vec::new();
        for s in 0..2000u32 {
            ring.owners(series_hash(tenant, &s.to_le_bytes()), 1, &mut out);
            owners.extend(out.iter().map(|&i| ring.member(i).id.clone()));
        }
        owners
    }

    #[test]
    fn a_tenants_series_stay_on_its_shard() {
        let r = Arc::new(ring(9));
        let shard = r.shard("team-a", 3).expect("a shard of 3 of 9");
        assert_eq!(shard.len(), 3);
        let tenant_ring = r.for_tenant("team-a", 3);
        let mut out = Vec::new();
        for s in 0..5000u32 {
            tenant_ring.owners(series_hash("team-a", &s.to_le_bytes()), 3, &mut out);
            let owners: BTreeSet<usize> = out.iter().copied().collect();
            assert_eq!(
                owners,
                shard.iter().copied().collect(),
                "every series on the whole shard at RF 3"
            );
        }
        // Indexes name the same members as the whole ring's.
        assert_eq!(tenant_ring.members(), r.members());
        assert_eq!(shard_ids(&r, "team-a", 3).len(), 3);
    }

    #[test]
    fn no_shard_when_it_would_hold_every_ingester() {
        let r = Arc::new(ring(3));
        for size in [0, 3, 4] {
            assert!(r.shard("t", size).is_none());
            assert!(Arc::ptr_eq(&r.for_tenant("t", size), &r));
            assert_eq!(r.readers_of("t", size), [0, 1, 2]);
        }
    }

    #[test]
    fn tenants_spread_over_the_ingesters() {
        let r = ring(9);
        let mut load = [0usize; 9];
        for t in 0..900 {
            for i in r.shard(&format!("tenant-{t}"), 3).unwrap() {
                load[i] += 1;
            }
        }
        for n in load {
            assert!((200..400).contains(&n), "uneven shards: {load:?}");
        }
    }

    #[test]
    fn zone_aware_shards_take_each_zone_alike() {
        let members = ["a", "b", "c"]
            .iter()
            .flat_map(|z| (0..4).map(move |i| member(&format!("{z}-{i}"), z)))
            .collect();
        let r = Arc::new(Ring::new(members, &[], true));
        for (size, per_zone) in [(3, 1), (4, 2), (6, 2)] {
            let shard = r.shard("t", size).unwrap();
            let mut zones: BTreeMap<String, usize> = BTreeMap::new();
            for i in &shard {
                *zones.entry(r.member(*i).zone.clone()).or_default() += 1;
            }
            assert_eq!(
                zones.values().copied().collect::<Vec<_>>(),
                [per_zone; 3],
                "size {size}"
            );
        }
        let tenant_ring = r.for_tenant("t", 3);
        let mut out = Vec::new();
        for s in 0..500u32 {
            tenant_ring.owners(series_hash("t", &s.to_le_bytes()), 3, &mut out);
            let zones: BTreeSet<_> = out.iter().map(|&i| r.member(i).zone.clone()).collect();
            assert_eq!(zones.len(), 3);
        }
    }

    #[test]
    fn reads_ask_the_shard_and_the_registered_holders() {
        let r = ring(6);
        let shard = r.shard("t", 2).unwrap();
        assert_eq!(r.readers_of("t", 2), shard);
        let outside = (0..6).find(|i| !shard.contains(i)).unwrap();
        let holders = BTreeMap::from([("t".to_string(), BTreeSet::from([r.member(outside).id.clone()]))]);
        let r = r.with_holders(holders);
        let mut want = shard.clone();
        want.push(outside);
        want.sort();
        assert_eq!(r.readers_of("t", 2), want);
        // Another tenant's holders do not widen this one's reads.
        assert_eq!(r.readers_of("u", 2), r.shard("u", 2).unwrap());
    }

    proptest! {
        /// Rendezvous hashing: one more ingester moves at most one member
        /// into a shard, and that member is the new one.
        #[test]
        fn a_joining_ingester_changes_a_shard_by_at_most_itself(n in 2usize..12, size in 1usize..6, t in any::<u32>()) {
            let tenant = format!("tenant-{t}");
            let ids = |r: &Ring| -> BTreeSet<String> {
                let all = (0..r.members().len()).collect();
                r.shard(&tenant, size).unwrap_or(all).into_iter().map(|i| r.member(i).id.clone()).collect()
            };
            let (before, after) = (ids(&ring(n)), ids(&ring(n + 1)));
            let joined: Vec<_> = after.difference(&before).collect();
            prop_assert!(joined.is_empty() || joined == [&format!("node-{n}")], "{before:?} -> {after:?}");
            prop_assert!(before.difference(&after).count() <= 1);
        }

        #[test]
        fn owners_are_distinct_and_as_many_as_possible(n in 1usize..8, rf in 1usize..5, key in any::<u64>()) {
            let r = ring(n);
            let mut out = Vec::new();
            r.owners(series_hash("t", &key.to_le_bytes()), rf, &mut out);
            prop_assert_eq!(out.len(), rf.min(n));
            let distinct: BTreeSet<_> = out.iter().collect();
            prop_assert_eq!(distinct.len(), out.len());
        }

        /// Adding a node moves series only to it, never between old nodes.
        #[test]
        fn a_new_node_only_takes(n in 1usize..6, key in any::<u64>()) {
            let before = ring(n);
            let after = ring(n + 1);
            let h = series_hash("t", &key.to_le_bytes());
            let (mut a, mut b) = (Vec::new(), Vec::new());
            before.owners(h, 1, &mut a);
            after.owners(h, 1, &mut b);
            let (old, new) = (&before.member(a[0]).id, &after.member(b[0]).id);
            let joined = format!("node-{n}");
            prop_assert!(old == new || *new == joined);
        }
    }

    #[test]
    fn a_day_goes_to_one_live_compactor_and_moves_only_with_it() {
        let compactor = |id: &str| Member {
            ingester: false,
            compactor: true,
            ..member(id, "")
        };
        let members = || {
            let mut m: Vec<Member> = (0..3).map(|i| compactor(&format!("c-{i}"))).collect();
            m.push(member("ingester", ""));
            m
        };
        let all: Vec<String> = ["c-0", "c-1", "c-2", "ingester"].map(String::from).to_vec();
        let ring = Ring::new(members(), &all, false);
        let days: Vec<String> = (0..300).map(|d| format!("team-a/2026-11-{d}")).collect();
        let owner = |ring: &Ring, day: &str| ring.compactor_of(day).map(|m| m.id.clone());
        let mut share = BTreeMap::<String, usize>::new();
        for day in &days {
            let id = owner(&ring, day).expect("a live compactor");
            assert_ne!(id, "ingester");
            *share.entry(id).or_default() += 1;
        }
        assert_eq!(share.len(), 3, "every compactor takes days: {share:?}");
        assert!(share.values().all(|&n| n > 60), "{share:?}");
        // c-1 down: only its days move, to the others.
        let without = Ring::new(members(), &["c-0", "c-2", "ingester"].map(String::from), false);
        for day in &days {
            let (was, now) = (owner(&ring, day).unwrap(), owner(&without, day).unwrap());
            assert!(was == now || was == "c-1", "{day} moved from {was} to {now}");
            assert_ne!(now, "c-1");
        }
        let none = Ring::new(members(), &["ingester".to_string()], false);
        assert!(none.compactor_of("team-a/2026-11-20").is_none());
    }
}
