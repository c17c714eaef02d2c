//! The compactor (`--cluster.role=compact`): each ingester uploads its
//! replicas of the days that are over under `nodes/<id>/` of the shared
//! bucket; the compactor merges them into one copy under `compacted/`,
//! which every node reads, and then tells each ingester, by a note in the
//! bucket, which of its parts that copy holds (the ingester drops them:
//! retire.rs). After that the bucket holds each sample once.
//!
//! A round, every `compaction_interval`:
//! 1. It opens a read-only view of each node's prefix that it has not seen,
//!    and brings the others up to the bucket.
//! 2. For each tenant and day, it takes from each node the parts that node
//!    uploaded, unless a note still names some of them: then the node has
//!    not dropped what it was told to, and copying again would store those
//!    samples twice.
//! 3. It reads the replicas' series side by side and writes each series
//!    once, its replicas joined (every timestamp any holds), into its own
//!    engine.
//! 4. It flushes, merges and uploads that day, and once the bucket holds all
//!    of it, writes each node's note. A round that fails before leaves no
//!    note: the next one copies again, which stores nothing twice while the
//!    day is still on its disk.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;

use cairn_bucket::{Bucket, ObjectInfo};
use cairn_model::{Labels, Sample};
use cairn_storage::{Queryable, SelectHints, Shard, Storage, StorageError, TenantId, Tenants};
use cairn_tsdb::{Config, Day, Tsdb, TsdbTenants};
use parking_lot::{Condvar, Mutex};

use crate::layout::{self, Note};
use crate::node::{Cluster, now_ms};
use crate::read::ReplicaSeries;

/// A day is copied in this many slices of its series, each read as the
/// copy reaches its series: memory holds the replicas' current series and
/// the samples batched for the next commit.
const SHARDS: usize = 16;
/// Samples per commit into the compactor's engine.
const BATCH_SAMPLES: usize = 1 << 20;

/// One node's replicas of one tenant's day: the parts to copy.
struct Replica {
    node: String,
    engine: Arc<Tsdb>,
    parts: Vec<ObjectInfo>,
}

pub struct Compactor {
    cluster: Arc<Cluster>,
    bucket: Bucket,
    /// The compactor's engine: each day once, under `compacted/`.
    out: Arc<TsdbTenants>,
    /// What a node's read-only view is opened with, but for its path and URL.
    source_config: Config,
    base: cairn_bucket::BucketConfig,
    /// A read-only view of each node's prefix, by node directory.
    sources: Mutex<BTreeMap<String, Arc<TsdbTenants>>>,
    settings: cairn_tsdb::SettingsOf,
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Compactor {
    /// Starts compacting into `out` (opened with `out_config`, its bucket
    /// at `layout::compacted_bucket_url`) every `compaction_interval`. The
    /// nodes' views are opened with the tenants' `settings` (their
    /// retentions: a day one keeps longer is copied too).
    pub fn start(
        cluster: &Arc<Cluster>,
        out: Arc<TsdbTenants>,
        out_config: &Config,
        settings: cairn_tsdb::SettingsOf,
    ) -> Result<Arc<Self>, StorageError> {
        let base = cluster.config.bucket.clone().ok_or_else(|| {
            StorageError::InvalidArgument("the compactor needs the shared bucket (--storage.object-store.url)".into())
        })?;
        let bucket = Bucket::open_uncached(&base)?;
        let mut source_config = out_config.clone();
        source_config.read_only = true;
        source_config.background = false;
        // Each part is read once, straight through: nothing to cache.
        source_config.cache_max_bytes = 0;
        source_config.wal_replay = Arc::default();
        let compactor = Arc::new(Self {
            cluster: cluster.clone(),
            bucket,
            out,
            source_config,
            base,
            sources: Mutex::default(),
            settings,
            stop: Arc::default(),
            thread: Mutex::new(None),
        });
        let worker = compactor.clone();
        let handle = std::thread::Builder::new()
            .name("cairn-compactor".into())
            .spawn(move || worker.run())
            .map_err(|e| StorageError::Unavailable(format!("cannot start the compactor: {e}")))?;
        *compactor.thread.lock() = Some(handle);
        Ok(compactor)
    }

    /// Stops after the round in progress.
    pub fn stop(&self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock() = true;
        wake.notify_all();
        if let Some(handle) = self.thread.lock().take() {
            let _ = handle.join();
        }
        for (_, source) in std::mem::take(&mut *self.sources.lock()) {
            let _ = source.close();
        }
    }

    fn run(&self) {
        loop {
            {
                let (stopped, wake) = &*self.stop;
                let mut stopped = stopped.lock();
                if !*stopped {
                    wake.wait_for(&mut stopped, self.cluster.config.compaction_interval);
                }
                if *stopped {
                    return;
                }
            }
            match self.round() {
                Ok(0) => {}
                Ok(days) => tracing::info!(days, "compacted the replicas of uploaded days"),
                Err(e) => tracing::warn!(error = %e, "a compaction round failed; the next one tries again"),
            }
        }
    }

    /// One round; how many days it compacted. A node or a day that fails is
    /// left for the next round; the others go on. (A node left out keeps its
    /// parts, un-noted, so the next round copies them.)
    pub fn round(&self) -> Result<usize, StorageError> {
        let sources = self.sources()?;
        let mut first_error = self.retire_for_departed(&sources).err();
        let mut jobs: BTreeMap<(TenantId, Day), Vec<Replica>> = BTreeMap::new();
        for (node, source) in sources {
            if let Err(e) = self.gather(&node, &source, &mut jobs) {
                tracing::warn!(node, error = %e, "reading a node's uploads failed");
                first_error.get_or_insert(e);
            }
        }
        let mut done = 0;
        for ((tenant, day), replicas) in jobs {
            match self.compact(&tenant, day, &replicas) {
                Ok(()) => done += 1,
                Err(e) => {
                    tracing::warn!(%tenant, %day, error = %e, "compacting a day failed");
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(done), Err)
    }

    /// Drops, for the nodes that left the cluster (gracefully, or forgotten
    /// by an operator), the parts noted to them: no one else would.
    fn retire_for_departed(&self, sources: &[(String, Arc<TsdbTenants>)]) -> Result<(), StorageError> {
        let ring = self.cluster.ring();
        // An empty ring (etcd not read yet) would make every node look gone.
        if !ring.members().iter().any(|m| self.cluster.is_me(m)) {
            return Ok(());
        }
        for (node, _) in sources {
            if ring.members().iter().any(|m| layout::node_dir(&m.id) == *node) {
                continue;
            }
            let delay = self.cluster.config.retire_delay;
            crate::retire::retire_noted(&self.bucket, node, delay, |_, _, objects| {
                for object in objects {
                    self.bucket.delete(&layout::node_key(node, &object.key))?;
                }
                Ok(objects.len())
            })?;
        }
        Ok(())
    }

    /// Adds to `jobs` the parts of `node`'s days that no note names.
    fn gather(
        &self,
        node: &str,
        source: &TsdbTenants,
        jobs: &mut BTreeMap<(TenantId, Day), Vec<Replica>>,
    ) -> Result<(), StorageError> {
        source.open_found()?;
        let noted: BTreeMap<(TenantId, Day), String> = layout::notes_to(&self.bucket, node)?
            .into_iter()
            .map(|(key, tenant, day)| ((tenant, day), key))
            .collect();
        for (tenant, engine) in source.engines() {
            engine.refresh()?;
            for (day, parts) in engine.uploaded_parts() {
                if let Some(key) = noted.get(&(tenant.clone(), day)) {
                    let note = layout::read_note(&self.bucket, key)?;
                    if parts.iter().any(|p| note.names(p)) {
                        continue;
                    }
                }
                jobs.entry((tenant.clone(), day)).or_default().push(Replica {
                    node: node.to_string(),
                    engine: engine.clone(),
                    parts,
                });
            }
        }
        Ok(())
    }

    /// Every node's read-only view, opened for the nodes new in the bucket.
    fn sources(&self) -> Result<Vec<(String, Arc<TsdbTenants>)>, StorageError> {
        for node in layout::nodes_in(&self.bucket)? {
            if self.sources.lock().contains_key(&node) {
                continue;
            }
            let mut config = self.source_config.clone();
            config.path = self.source_config.path.join("sources").join(&node);
            config.object_store = Some(layout::with_url(
                &self.base,
                layout::node_bucket_url(&self.base.url, &node),
            ));
            let source = TsdbTenants::open(config, self.settings.clone())?;
            tracing::info!(node, "compactor: reading a node's uploads");
            self.sources.lock().insert(node, source);
        }
        Ok(self
            .sources
            .lock()
            .iter()
            .map(|(n, s)| (n.clone(), s.clone()))
            .collect())
    }

    /// Copies the replicas' samples of `tenant`'s `day` into the compactor's
    /// engine, has the bucket hold that day, and notes it to each node.
    fn compact(&self, tenant: &TenantId, day: Day, replicas: &[Replica]) -> Result<(), StorageError> {
        let storage = self.out.get_or_create(tenant)?;
        let sources: Vec<&Tsdb> = replicas.iter().map(|r| &*r.engine).collect();
        let samples = copy_day(&sources, storage.as_ref(), day)?;
        let engine = self
            .out
            .engine(tenant)
            .ok_or_else(|| StorageError::Unavailable(format!("tenant {tenant}'s compacted storage closed")))?;
        engine.flush()?;
        engine.compact()?;
        engine.upload()?;
        if !engine.is_uploaded(day) {
            return Err(StorageError::Unavailable(format!(
                "the compacted {day} of tenant {tenant} is not in the bucket yet"
            )));
        }
        // The notes let the ingesters delete their copies: first the bucket
        // itself must show this one.
        let uploaded = engine.uploaded_parts().remove(&day).unwrap_or_default();
        if samples > 0 && uploaded.is_empty() {
            return Err(StorageError::Unavailable(format!(
                "the compacted {day} of tenant {tenant} has no part in the bucket"
            )));
        }
        for part in &uploaded {
            let listed = self.bucket.head(&layout::compacted_key(&part.key))?;
            if listed.size != part.size {
                return Err(StorageError::Corrupt {
                    path: self.bucket.url_of(&listed.key),
                    reason: format!("{} bytes in the bucket, {} written", listed.size, part.size),
                });
            }
        }
        let written_ms = now_ms();
        for replica in replicas {
            let note = Note::new(written_ms, &replica.parts);
            layout::write_note(&self.bucket, &layout::note_key(&replica.node, tenant, day), &note)?;
        }
        tracing::info!(%tenant, %day, replicas = replicas.len(), samples, "compacted a day");
        Ok(())
    }
}

/// Appends to `out` every sample the replicas in `sources` hold of `day`,
/// each series once with its replicas joined (every timestamp any holds);
/// returns how many samples that was. The replicas' series are read side by
/// side in label order, shard by shard.
fn copy_day(sources: &[&Tsdb], out: &dyn Storage, day: Day) -> Result<u64, StorageError> {
    let every_series = crate::every_series();
    let queriers = sources
        .iter()
        .map(|s| s.querier(day.mint(), day.maxt()))
        .collect::<Result<Vec<_>, _>>()?;
    let (mut ts, mut vs, mut samples) = (Vec::new(), Vec::new(), Vec::new());
    let mut copied = 0;
    for shard in 0..SHARDS {
        let hints = SelectHints {
            shard: Some(Shard::new(shard, SHARDS)),
            ..SelectHints::default()
        };
        let mut replicas = queriers
            .iter()
            .map(|q| q.select(&hints, &every_series).map(Iterator::peekable))
            .collect::<Result<Vec<_>, _>>()?;
        let mut appender = out.appender();
        let mut batched = 0;
        while let Some(labels) = least_next(&mut replicas)? {
            let mut joined = ReplicaSeries {
                labels: labels.clone(),
                ts: Vec::new(),
                vs: Vec::new(),
                histograms: Vec::new(),
            };
            for replica in &mut replicas {
                if !replica
                    .peek()
                    .is_some_and(|s| s.as_ref().is_ok_and(|s| s.labels == labels))
                {
                    continue;
                }
                let Some(series) = replica.next() else { continue };
                let mut series = series?;
                let range = series.samples.read_into(&mut ts, &mut vs)?;
                joined.join(&ReplicaSeries {
                    labels: Labels::default(),
                    ts: ts[range.clone()].to_vec(),
                    vs: vs[range].to_vec(),
                    histograms: std::mem::take(&mut series.histograms),
                });
            }
            let ReplicaSeries {
                ts: joined_ts,
                vs: joined_vs,
                histograms: joined_hs,
                ..
            } = joined;
            if !joined_ts.is_empty() {
                samples.clear();
                samples.extend(joined_ts.iter().zip(&joined_vs).map(|(&t, &v)| Sample::new(t, v)));
                appender.append(&labels, &samples)?;
            }
            if !joined_hs.is_empty() {
                appender.append_histograms(&labels, &joined_hs)?;
            }
            batched += joined_ts.len() + joined_hs.len();
            if batched >= BATCH_SAMPLES {
                copied += kept_all(appender.commit()?)?;
                appender = out.appender();
                batched = 0;
            }
        }
        copied += kept_all(appender.commit()?)?;
    }
    Ok(copied)
}

/// The samples a commit of the copy stored, or an error when it refused
/// some (a retention shorter than the ingesters'): the ingesters must not
/// drop copies the compacted day lacks.
fn kept_all(report: cairn_storage::CommitReport) -> Result<u64, StorageError> {
    match report.rejected_total() {
        0 => Ok(report.samples_accepted),
        n => Err(StorageError::InvalidArgument(format!(
            "the compactor's storage refused {n} samples ({:?}): is its retention shorter than the ingesters'?",
            report.samples_rejected
        ))),
    }
}

/// The least labels among the replicas' next series (`None` when all are
/// done); a replica's failure to read is the copy's.
fn least_next(
    replicas: &mut [std::iter::Peekable<cairn_storage::SeriesSet>],
) -> Result<Option<cairn_model::Labels>, StorageError> {
    let mut least: Option<cairn_model::Labels> = None;
    for replica in replicas.iter_mut() {
        match replica.peek() {
            Some(Ok(s)) if least.as_ref().is_none_or(|l| s.labels < *l) => least = Some(s.labels.clone()),
            Some(Ok(_)) | None => {}
            Some(Err(_)) => {
                if let Some(Err(e)) = replica.next() {
                    return Err(e);
                }
            }
        }
    }
    Ok(least)
}
