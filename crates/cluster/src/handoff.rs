//! A leaving node's handoff: everything it stores is written again through
//! the ring, which no longer gives this node any share, so each series
//! reaches its new owners (a quorum of them, as any write) before the node
//! leaves for good. Writing a sample its owner holds already replaces it
//! with itself, so a handoff repeated after a failure is harmless.

use std::sync::Arc;

use cairn_model::Sample;
use cairn_storage::{Appender, SelectHints, StorageError};

use crate::node::Cluster;
use crate::write::ClusterAppender;

/// Series per write of the handoff.
const BATCH_SERIES: usize = 1000;

/// Hands every series this node stores to its owners; returns how many
/// samples went.
pub(crate) fn hand_off(cluster: &Arc<Cluster>) -> Result<u64, StorageError> {
    let Some(local) = cluster.local() else {
        return Ok(0);
    };
    let every_series = crate::every_series();
    let mut sent = 0u64;
    for tenant in local.list() {
        let Some(storage) = local.get(&tenant)? else { continue };
        let querier = storage.querier(i64::MIN, i64::MAX)?;
        let mut appender = ClusterAppender::new(cluster.clone(), tenant.clone());
        let mut batched = 0usize;
        let (mut ts, mut vs, mut samples) = (Vec::new(), Vec::new(), Vec::<Sample>::new());
        for series in querier.select(&SelectHints::default(), &every_series)? {
            let mut series = series?;
            crate::read_samples(&mut series, &mut ts, &mut vs, &mut samples)?;
            if !samples.is_empty() {
                appender.append(&series.labels, &samples)?;
            }
            if !series.histograms.is_empty() {
                appender.append_histograms(&series.labels, &series.histograms)?;
            }
            sent += (samples.len() + series.histograms.len()) as u64;
            batched += 1;
            if batched == BATCH_SERIES {
                Box::new(appender).commit()?;
                appender = ClusterAppender::new(cluster.clone(), tenant.clone());
                batched = 0;
            }
        }
        Box::new(appender).commit()?;
    }
    Ok(sent)
}
