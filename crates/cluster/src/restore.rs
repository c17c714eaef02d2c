//! A part block an ingester found damaged is lost on that node only: the
//! other owners of its series hold the same samples. Each round, this node
//! asks its peers for the series of each damaged block over the block's
//! time range, stores what they hold again, and once every sample the block
//! held is back, rewrites its part without the block (recording no loss).
//! Until then its reads without warnings fail, and the cluster's reads are
//! complete through the other replicas.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use cairn_model::{HistogramSample, Matcher, Sample};
use cairn_storage::{Appendable, Querier, SelectHints, StorageError, TenantId};
use cairn_tsdb::{DamagedBlock, Tsdb, TsdbTenants};

use crate::node::Cluster;
use crate::wire::{SampleReader, SelectRequest, frames};

/// How often this node looks for damaged blocks to restore.
const ROUND: std::time::Duration = std::time::Duration::from_secs(10);

/// Restores damaged blocks round after round, for as long as the node is
/// registered.
pub(crate) fn restore_damaged_blocks(cluster: Arc<Cluster>, local: Arc<TsdbTenants>) {
    while !cluster.deregistered.load(Ordering::Acquire) {
        std::thread::sleep(ROUND);
        for (tenant, engine) in local.engines() {
            match restore_tenant(&cluster, &tenant, &engine) {
                Ok(0) => {}
                Ok(blocks) => tracing::warn!(%tenant, blocks, "restored damaged blocks from the other replicas"),
                Err(e) => tracing::warn!(%tenant, error = %e, "restoring damaged blocks failed; tried again later"),
            }
        }
    }
}

/// Restores what it can of `engine`'s damaged blocks, a part at a time (a
/// part is rewritten only once every damaged block of it is restored);
/// returns how many blocks it dropped from its parts.
pub(crate) fn restore_tenant(cluster: &Arc<Cluster>, tenant: &TenantId, engine: &Tsdb) -> Result<usize, StorageError> {
    let mut by_part: BTreeMap<PathBuf, Vec<DamagedBlock>> = BTreeMap::new();
    for block in engine.damaged_blocks() {
        by_part.entry(block.part.clone()).or_default().push(block);
    }
    let mut restored = Vec::new();
    for blocks in by_part.into_values() {
        // A delete waits for this write as for any other in flight.
        let _in_flight = cluster.writes_in_flight.begin();
        let mut held = Vec::new();
        for block in &blocks {
            let (samples, histograms) = held_by_peers(cluster, tenant, block)?;
            let times: BTreeSet<i64> = samples
                .iter()
                .map(|s| s.t)
                .chain(histograms.iter().map(|h| h.t))
                .collect();
            // The peers' samples in range must cover what this node still
            // reads there besides the block, and the block's own.
            let here = readable_here(engine, block)?;
            if times.len() < here + block.block.samples as usize {
                break;
            }
            held.push((samples, histograms));
        }
        if held.len() < blocks.len() {
            continue;
        }
        let mut appender = engine.appender();
        for (block, (samples, histograms)) in blocks.iter().zip(&held) {
            if !samples.is_empty() {
                appender.append(&block.labels, samples)?;
            }
            if !histograms.is_empty() {
                appender.append_histograms(&block.labels, histograms)?;
            }
        }
        appender.commit()?;
        restored.extend(blocks);
    }
    if restored.is_empty() {
        return Ok(0);
    }
    // Durable in parts before the damaged blocks go.
    engine.flush()?;
    engine.drop_restored_blocks(&restored)
}

/// How many samples of `block`'s series over its range this node reads
/// without the damaged block (and the other damaged ones, which it says so).
fn readable_here(engine: &Tsdb, block: &DamagedBlock) -> Result<usize, StorageError> {
    let warnings = cairn_storage::ReadWarnings::default();
    let querier = engine.querier_warning(block.block.mint, block.block.maxt, Some(warnings));
    let mut n = 0;
    for series in querier.select(&SelectHints::default(), &equal_matchers(block))? {
        let mut series = series?;
        if series.labels == block.labels {
            n += cairn_storage::collect_samples(series.samples.as_mut())?.len() + series.histograms.len();
        }
    }
    Ok(n)
}

fn equal_matchers(block: &DamagedBlock) -> Vec<Matcher> {
    block
        .labels
        .iter()
        .map(|l| Matcher::equal(l.name.as_str(), l.value.as_str()))
        .collect()
}

/// What the live peers hold of `block`'s series over its time range, each
/// timestamp once.
fn held_by_peers(
    cluster: &Arc<Cluster>,
    tenant: &TenantId,
    block: &DamagedBlock,
) -> Result<(Vec<Sample>, Vec<HistogramSample>), StorageError> {
    let ring = cluster.ring();
    let request = SelectRequest::new(
        block.block.mint,
        block.block.maxt,
        &SelectHints::default(),
        &equal_matchers(block),
    );
    let body = serde_json::to_vec(&request).unwrap_or_default();
    let (mut samples, mut histograms) = (Vec::<Sample>::new(), Vec::<HistogramSample>::new());
    let mut reader = SampleReader::default();
    for i in ring.readable_ingesters() {
        let peer = ring.member(i);
        if !ring.is_alive(i) || cluster.is_me(peer) {
            continue;
        }
        // A peer that does not answer is one replica fewer, not a failure.
        let Ok(answer) = cluster.block_on(cluster.post(peer, "select", tenant, body.clone())) else {
            continue;
        };
        for frame in frames(&answer)?.iter() {
            let frame = frame?;
            // Equal matchers also select series with more labels.
            if frame.labels.decode() != block.labels {
                continue;
            }
            samples.extend_from_slice(reader.read(&frame)?);
            histograms.extend(frame.histograms.iter().cloned());
        }
    }
    samples.sort_by_key(|s| s.t);
    samples.dedup_by_key(|s| s.t);
    histograms.sort_by_key(|h| h.t);
    histograms.dedup_by_key(|h| h.t);
    Ok((samples, histograms))
}
