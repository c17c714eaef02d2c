//! A node back from a crash replays its WAL like any restart, then catches
//! up on the writes it missed while down (or cut off): it reads from its
//! peers every series with samples since it was last alive in the ring and
//! stores those the ring gives it. Until it is done, reads stay complete
//! through the other replicas (quorum reads); after it, the node holds its
//! full share again. The window is by sample time: a backfill of older
//! samples acknowledged meanwhile stays on the other replicas only.

use std::collections::BTreeSet;
use std::sync::Arc;

use cairn_storage::{SelectHints, Shard, StorageError, TenantId};

use crate::node::Cluster;
use crate::ring::series_hash;
use crate::wire::{SampleReader, SelectRequest, frames};

/// Samples a little older than the moment the node went away may have
/// reached the others after it (senders' delays): the window starts this
/// much earlier.
const MARGIN_MS: i64 = 5 * 60 * 1000;
/// A node down longer than this catches up on this much only (the rest
/// stays on the other replicas).
const MAX_WINDOW_MS: i64 = 24 * 3600 * 1000;
/// `last_alive_ms` of a member whose last renewal is unknown (back on an
/// empty disk): it catches up over the longest window.
pub(crate) const WHOLE_WINDOW: i64 = 1;
/// Series per local commit.
const BATCH_SERIES: usize = 1000;
/// Pages each peer's answer comes in: each a shard of the series, so
/// neither side holds more than a slice of the window at once.
const PAGES: usize = 16;

/// Stores what the peers hold of this node's share since `last_alive_ms`
/// (when it last renewed its lease; 0 for a node never in the ring), each
/// peer sending only the series this node owns, page by page; returns how
/// many samples that was (some already here). Fails when a peer that is up
/// does not answer: the caller tries again.
pub(crate) fn catch_up(cluster: &Arc<Cluster>, last_alive_ms: i64, now_ms: i64) -> Result<u64, StorageError> {
    let Some(local) = cluster.local() else {
        return Ok(0);
    };
    if last_alive_ms == 0 {
        // A new node: it owns only what is written from now on.
        return Ok(0);
    }
    let mut tenants: BTreeSet<TenantId> = local.list().into_iter().collect();
    let from = (last_alive_ms - MARGIN_MS).max(now_ms - MAX_WINDOW_MS);
    let ring = cluster.ring();
    let peers: Vec<_> = ring
        .readable_ingesters()
        .filter(|&i| ring.is_alive(i) && !cluster.is_me(ring.member(i)))
        .map(|i| ring.member(i).clone())
        .collect();
    for peer in &peers {
        let listed = cluster
            .block_on(cluster.post(peer, "tenants", &TenantId::default_tenant(), Vec::new()))
            .map_err(|e| {
                StorageError::Unavailable(format!("peer {} did not list its tenants: {}", e.node, e.reason))
            })?;
        let ids: Vec<String> = serde_json::from_slice(&listed)
            .map_err(|e| StorageError::Unavailable(format!("peer {}'s tenants are unreadable: {e}", peer.id)))?;
        tenants.extend(ids.iter().filter_map(|id| TenantId::new(id).ok()));
    }
    let every_series = crate::every_series();
    let me = ring.members().iter().position(|m| cluster.is_me(m));
    let (mut stored, mut owners, mut reader) = (0u64, Vec::new(), SampleReader::default());
    for tenant in &tenants {
        let ring = ring.for_tenant(tenant.as_str(), cluster.shard_size(tenant));
        if me.is_none_or(|me| !ring.has_tokens(me)) {
            // Not in the tenant's shard: none of its series are this node's.
            continue;
        }
        let _holding = cluster.hold_blocking(tenant)?;
        let storage = local.get_or_create(tenant)?;
        for peer in &peers {
            for page in 0..PAGES {
                let hints = SelectHints {
                    shard: Some(Shard::new(page, PAGES)),
                    ..SelectHints::default()
                };
                let request = SelectRequest {
                    owned_by: Some(cluster.config.node_id.clone()),
                    ..SelectRequest::new(from, i64::MAX, &hints, &every_series)
                };
                let body = serde_json::to_vec(&request).unwrap_or_default();
                let answer = cluster
                    .block_on(cluster.post(peer, "select", tenant, body))
                    .map_err(|e| StorageError::Unavailable(format!("peer {} did not answer: {}", e.node, e.reason)))?;
                let mut appender = storage.appender();
                let mut batched = 0;
                for frame in frames(&answer)?.iter() {
                    let frame = frame?;
                    // The peer's ring may be older than this node's.
                    ring.owners(
                        series_hash(tenant.as_str(), frame.labels.as_bytes()),
                        cluster.config.replication_factor,
                        &mut owners,
                    );
                    if me.is_none_or(|me| !owners.contains(&me)) {
                        continue;
                    }
                    let samples = reader.read(&frame)?;
                    appender.append_series(frame.labels, samples, &frame.histograms)?;
                    stored += (samples.len() + frame.histograms.len()) as u64;
                    batched += 1;
                    if batched == BATCH_SERIES {
                        appender.commit()?;
                        appender = storage.appender();
                        batched = 0;
                    }
                }
                appender.commit()?;
            }
        }
    }
    Ok(stored)
}
