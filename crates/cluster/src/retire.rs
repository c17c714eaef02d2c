//! Once the compactor holds a day, the replicas of it in the ingesters'
//! prefixes are redundant: each ingester drops the parts the compactor's
//! note to it names, `retire_delay` after the note was written (by then
//! every node reading the bucket has listed the compacted copy), and then
//! deletes the note. The compactor does the same for nodes that left the
//! cluster (compactor.rs).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use cairn_bucket::{Bucket, ObjectInfo};
use cairn_storage::{StorageError, TenantId};
use cairn_tsdb::{Day, TsdbTenants};

use crate::layout;
use crate::node::{Cluster, now_ms};

/// An ingester's loop: every `compaction_interval`, drops what the
/// compactor's notes to it name.
pub(crate) fn retire_compacted(cluster: Arc<Cluster>, local: Arc<TsdbTenants>) {
    let Some(base) = cluster.config.bucket.clone() else {
        return;
    };
    let bucket = match Bucket::open_uncached(&base) {
        Ok(b) => b,
        Err(e) => {
            tracing::error!(error = %e, "cannot reach the shared bucket: this node keeps its copies of compacted days");
            return;
        }
    };
    let node = layout::node_dir(&cluster.config.node_id);
    let delay = cluster.config.retire_delay;
    while !cluster.deregistered.load(Ordering::Acquire) {
        std::thread::sleep(cluster.config.compaction_interval);
        let retired = retire_noted(&bucket, &node, delay, |tenant, day, objects| {
            match local.engine(tenant) {
                Some(engine) => engine.retire_uploaded(day, objects),
                None => Ok(0),
            }
        });
        match retired {
            Ok(0) => {}
            Ok(parts) => tracing::info!(parts, "dropped this node's copies of days the compactor holds"),
            Err(e) => tracing::warn!(error = %e, "dropping copies of compacted days failed; tried again later"),
        }
    }
}

/// Acts on every note to `node` older than `delay`: `retire` drops the
/// parts it names (returning how many), then the note is deleted. Returns
/// the parts dropped.
pub(crate) fn retire_noted(
    bucket: &Bucket,
    node: &str,
    delay: std::time::Duration,
    retire: impl Fn(&TenantId, Day, &[ObjectInfo]) -> Result<usize, StorageError>,
) -> Result<usize, StorageError> {
    let (mut retired, mut first_error) = (0, None);
    for (key, tenant, day) in layout::notes_to(bucket, node)? {
        // One note failing (another process deleting it meanwhile, say)
        // leaves it for the next pass; the others go on.
        let done = layout::read_note(bucket, &key).and_then(|note| {
            if now_ms() - note.written_ms < delay.as_millis() as i64 {
                return Ok(0);
            }
            let n = retire(&tenant, day, &note.objects())?;
            bucket.delete(&key)?;
            Ok(n)
        });
        match done {
            Ok(n) => retired += n,
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(retired), Err)
}
