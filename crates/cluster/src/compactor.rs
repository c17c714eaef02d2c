//! The compactors (`--cluster.role=compact`): each ingester uploads its
//! replicas of the days that are over under `nodes/<id>/` of the shared
//! bucket; a compactor merges them into one copy under its own
//! `compactors/<id>/`, which every node reads, and then tells each
//! ingester, by a note in the bucket, which of its parts that copy holds
//! (the ingester drops them: retire.rs). After that the bucket holds each
//! sample once.
//!
//! Several compactors share the work by tenant and day: each takes the
//! days that rendezvous hashing gives it among the live compactors, and
//! compacts one only under a lease on it in etcd (jobs.rs), so that a
//! day is compacted by one compactor at a time.
//!
//! A round, every `compaction_interval`:
//! 1. It opens a read-only view of each node's prefix that it has not seen,
//!    and brings the others up to the bucket.
//! 2. For each tenant and day, it takes from each node the parts that node
//!    uploaded, unless a note still names some of them: then the node has
//!    not dropped what it was told to, and copying again would store those
//!    samples twice. It waits for a day's replicas to gather (the ingesters
//!    upload a day each as it settles), so that one job joins them all.
//! 3. For each of those days that is its own, it takes the day's lease,
//!    then finishes or undoes every job a compactor left on that day
//!    (below), and runs its own job:
//!    - it records the job in etcd: the parts its day held and the least
//!      sequence number the job's rows will have (numbers are never
//!      handed out twice, not even to rows a replay restores), so that the
//!      parts the job makes are known;
//!    - it reads the replicas' series side by side and writes each series
//!      once, its replicas joined (every timestamp any holds), into its
//!      own engine;
//!    - it flushes, merges and uploads that day, and records that the job's
//!      copy is in the bucket;
//!    - if it still holds the lease, it writes each node's note, and then
//!      deletes the job's record.
//!
//! A job left behind (its compactor killed, cut off from etcd, or paused
//! past its lease) is finished or undone by the next holder of the day's
//! lease, before anything else is copied: one whose copy was all in the
//! bucket gets its nodes' notes written; one that was still copying has the
//! parts it made retired, by a note to its compactor (which drops them as
//! an ingester does, or, once it left the cluster, the others drop them for
//! it), and its nodes' parts are copied again. Either way each sample ends
//! up in one copy, and a node's parts are dropped only once a copy of them
//! is in the bucket. A compactor keeps the record of its own job until no
//! part of that day is left on its disk: rows of the job found in its WAL
//! after a crash reach the bucket later, and are retired then.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cairn_bucket::{Bucket, ObjectInfo};
use cairn_model::{Labels, Sample};
use cairn_storage::{Queryable, SelectHints, Shard, Storage, StorageError, TenantId, Tenants};
use cairn_tsdb::{Config, Day, Tsdb, TsdbTenants};
use parking_lot::{Condvar, Mutex};

use crate::jobs::{self, Job, JobLease, JobSource, Stage};
use crate::layout::{self, NotedPart};
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
    /// This compactor's directory in the bucket (`compactors/<me>/`).
    me: String,
    /// The compactor's engine: the days it compacted, under `compactors/<me>/`.
    out: Arc<TsdbTenants>,
    /// What a node's read-only view is opened with, but for its path and URL.
    source_config: Config,
    base: cairn_bucket::BucketConfig,
    /// A read-only view of each node's prefix, by node directory.
    sources: Mutex<BTreeMap<String, Arc<TsdbTenants>>>,
    settings: cairn_tsdb::SettingsOf,
    /// When this compactor first found each day with parts to copy.
    first_seen: Mutex<BTreeMap<(TenantId, Day), Instant>>,
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Compactor {
    /// Starts compacting into `out` (opened with `out_config`, its bucket
    /// at `layout::compactor_bucket_url`) every `compaction_interval`. The
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
            me: layout::node_dir(&cluster.config.node_id),
            out: out.clone(),
            source_config,
            base,
            sources: Mutex::default(),
            settings,
            first_seen: Mutex::default(),
            stop: Arc::default(),
            thread: Mutex::new(None),
        });
        let worker = compactor.clone();
        let handle = std::thread::Builder::new()
            .name("cairn-compactor".into())
            .spawn(move || worker.run())
            .map_err(|e| StorageError::Unavailable(format!("cannot start the compactor: {e}")))?;
        *compactor.thread.lock() = Some(handle);
        // The parts of its own that another compactor's copy superseded
        // are noted to it, as an ingester's are.
        let cluster = cluster.clone();
        std::thread::spawn(move || crate::retire::retire_compacted(cluster, out));
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
        let mut days: BTreeMap<(TenantId, Day), Vec<Replica>> = BTreeMap::new();
        for (node, source) in sources {
            if let Err(e) = self.gather(&node, &source, &mut days) {
                tracing::warn!(node, error = %e, "reading a node's uploads failed");
                first_error.get_or_insert(e);
            }
        }
        // A job left behind needs its day's lease holder even when nothing
        // of that day is left to copy; this compactor's own, this one.
        let mut left = BTreeMap::<(TenantId, Day), Vec<String>>::new();
        for (compactor, tenant, day) in jobs::recorded(&self.cluster)? {
            days.entry((tenant.clone(), day)).or_default();
            left.entry((tenant, day)).or_default().push(compactor);
        }
        self.wait_for_replicas(&mut days);
        let ring = self.cluster.ring();
        let mut done = 0;
        for ((tenant, day), replicas) in days {
            if replicas.is_empty() && !left.contains_key(&(tenant.clone(), day)) {
                continue;
            }
            let mine_left = left.get(&(tenant.clone(), day)).is_some_and(|c| c.contains(&self.me));
            let ours = ring
                .compactor_of(&format!("{tenant}/{day}", tenant = tenant.as_str()))
                .is_some_and(|m| self.cluster.is_me(m));
            if !ours && !mine_left {
                continue;
            }
            // Another's day only has this compactor's own job settled.
            let replicas = if ours { replicas } else { Vec::new() };
            let jobs = left.remove(&(tenant.clone(), day)).unwrap_or_default();
            match self.compact_leased(&tenant, day, replicas, &jobs) {
                Ok(true) => done += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(%tenant, %day, error = %e, "compacting a day failed");
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(done), Err)
    }

    /// Holds back each day's replicas until `replicas_gather` after they
    /// were first found: the ingesters upload a day when it settles, each
    /// on its own round, and replicas copied in separate jobs would each
    /// add their samples to the copy again.
    fn wait_for_replicas(&self, days: &mut BTreeMap<(TenantId, Day), Vec<Replica>>) {
        let now = Instant::now();
        let gather = self.replicas_gather();
        let mut first_seen = self.first_seen.lock();
        first_seen.retain(|day, _| days.get(day).is_some_and(|r| !r.is_empty()));
        for (day, replicas) in days.iter_mut() {
            if replicas.is_empty() {
                continue;
            }
            let seen = *first_seen.entry(day.clone()).or_insert(now);
            if now.duration_since(seen) < gather {
                replicas.clear();
            }
        }
    }

    /// How long the replicas of a day take to reach the bucket after the
    /// first: a settle time and an upload round of the ingesters', and a
    /// round of this compactor's.
    fn replicas_gather(&self) -> Duration {
        self.source_config.idle_merge_after
            + self.source_config.maintenance_interval
            + self.cluster.config.compaction_interval
    }

    /// Compacts `tenant`'s `day` under its lease, if this compactor gets it:
    /// first the jobs `left` on it (by these compactors), then its own, of
    /// the `replicas` no note names by then. Whether it copied anything.
    fn compact_leased(
        &self,
        tenant: &TenantId,
        day: Day,
        replicas: Vec<Replica>,
        left: &[String],
    ) -> Result<bool, StorageError> {
        let Some(lease) = jobs::take(&self.cluster, tenant, day)? else {
            return Ok(false);
        };
        let compacted = self.settle_and_compact(tenant, day, replicas, left, &lease);
        jobs::release(&self.cluster, lease);
        compacted
    }

    fn settle_and_compact(
        &self,
        tenant: &TenantId,
        day: Day,
        replicas: Vec<Replica>,
        left: &[String],
        lease: &JobLease,
    ) -> Result<bool, StorageError> {
        for compactor in left {
            self.settle_job(compactor, tenant, day, lease)?;
        }
        let replicas = self.unnoted(tenant, day, replicas)?;
        if replicas.is_empty() {
            return Ok(false);
        }
        self.compact(tenant, day, &replicas, lease).map(|()| true)
    }

    /// Finishes or undoes `compactor`'s job on `tenant`'s `day`, if it left
    /// one. The caller holds the day's `lease`, so that job is not running,
    /// or, paused past its own lease, cannot record anything any more.
    fn settle_job(&self, compactor: &str, tenant: &TenantId, day: Day, lease: &JobLease) -> Result<(), StorageError> {
        let Some(job) = jobs::read(&self.cluster, compactor, tenant, day)? else {
            return Ok(());
        };
        let mine = compactor == self.me;
        if mine {
            // The rows a crash left in the WAL go to the bucket first.
            let engine = self.engine(tenant)?;
            engine.flush()?;
            engine.upload()?;
        }
        match job.stage {
            // Its copy is the day's: its nodes may drop what it copied.
            Stage::Uploaded => {
                for source in &job.sources {
                    let listed = self.listed(&layout::node_key(&source.node, ""), tenant, day)?;
                    let parts: Vec<ObjectInfo> = source
                        .parts
                        .iter()
                        .filter(|p| listed.iter().any(|l| p.is(l)))
                        .map(NotedPart::object)
                        .collect();
                    layout::add_to_note(&self.bucket, &source.node, tenant, day, &parts, now_ms())?;
                }
            }
            // Its copy is not: the parts it made are retired, and its
            // nodes' parts, un-noted, are copied again.
            Stage::Copying => {
                let made: Vec<ObjectInfo> = self
                    .listed(&layout::compactor_key(compactor, ""), tenant, day)?
                    .into_iter()
                    .filter(|p| job.made(p))
                    .collect();
                layout::add_to_note(&self.bucket, compactor, tenant, day, &made, now_ms())?;
            }
        }
        let over = match job.stage {
            Stage::Uploaded => true,
            // Rows of the job may still be on its compactor's disk, to
            // reach the bucket later: it keeps the record until none are
            // (a compactor that left the cluster has none).
            Stage::Copying if mine => self.engine(tenant)?.local_min_seq(day).is_none(),
            Stage::Copying => !self
                .cluster
                .ring()
                .members()
                .iter()
                .any(|m| layout::node_dir(&m.id) == compactor),
        };
        if over {
            jobs::write(&self.cluster, lease, compactor, tenant, day, None)?;
        }
        tracing::info!(compactor, %tenant, %day, stage = ?job.stage, "settled a compaction job left behind");
        Ok(())
    }

    /// The parts of `tenant`'s `day` in the engine whose prefix (below the
    /// base URL) is `prefix`, with keys as that engine names them.
    fn listed(&self, prefix: &str, tenant: &TenantId, day: Day) -> Result<Vec<ObjectInfo>, StorageError> {
        let dir = format!("{prefix}{}", cairn_tsdb::day_keys_prefix(tenant, day));
        Ok(self
            .bucket
            .list(&dir)?
            .into_iter()
            .filter(|o| o.key.ends_with(".cpart"))
            .filter_map(|o| {
                let key = o.key.strip_prefix(prefix)?.to_string();
                Some(ObjectInfo { key, ..o })
            })
            .collect())
    }

    /// `replicas` but those whose parts a note names by now (a job settled
    /// just before copied them).
    fn unnoted(&self, tenant: &TenantId, day: Day, replicas: Vec<Replica>) -> Result<Vec<Replica>, StorageError> {
        let mut kept = Vec::with_capacity(replicas.len());
        for replica in replicas {
            let noted = layout::read_note_if_there(&self.bucket, &layout::note_key(&replica.node, tenant, day))?;
            if noted.is_none_or(|note| !replica.parts.iter().any(|p| note.names(p))) {
                kept.push(replica);
            }
        }
        Ok(kept)
    }

    /// Drops, for the nodes and compactors that left the cluster
    /// (gracefully, or forgotten by an operator), the parts noted to them:
    /// no one else would.
    fn retire_for_departed(&self, sources: &[(String, Arc<TsdbTenants>)]) -> Result<(), StorageError> {
        let ring = self.cluster.ring();
        // An empty ring (etcd not read yet) would make every node look gone.
        if !ring.members().iter().any(|m| self.cluster.is_me(m)) {
            return Ok(());
        }
        let departed = |dir: &str| !ring.members().iter().any(|m| layout::node_dir(&m.id) == dir);
        // Drops what the notes to `dir` name, each object's key below the
        // base URL given by `key_of`.
        let retire = |dir: &str, key_of: &dyn Fn(&str) -> String| {
            crate::retire::retire_noted(&self.bucket, dir, self.cluster.config.retire_delay, |_, _, objects| {
                for object in objects {
                    self.bucket.delete(&key_of(&object.key))?;
                }
                Ok(objects.len())
            })
        };
        for (node, _) in sources {
            if departed(node) {
                retire(node, &|key| layout::node_key(node, key))?;
            }
        }
        for compactor in layout::compactors_in(&self.bucket)? {
            if departed(&compactor) {
                retire(&compactor, &|key| layout::compactor_key(&compactor, key))?;
            }
        }
        Ok(())
    }

    /// Adds to `days` the parts of `node`'s days that no note names.
    fn gather(
        &self,
        node: &str,
        source: &TsdbTenants,
        days: &mut BTreeMap<(TenantId, Day), Vec<Replica>>,
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
                days.entry((tenant.clone(), day)).or_default().push(Replica {
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

    /// `tenant`'s engine in the compactor's own storage.
    fn engine(&self, tenant: &TenantId) -> Result<Arc<Tsdb>, StorageError> {
        self.out.get_or_create(tenant)?;
        self.out
            .engine(tenant)
            .ok_or_else(|| StorageError::Unavailable(format!("tenant {tenant}'s compacted storage closed")))
    }

    /// Copies the replicas' samples of `tenant`'s `day` into the compactor's
    /// engine, has the bucket hold that day, and notes it to each node,
    /// recording the job in etcd until it is over (the module's doc).
    fn compact(&self, tenant: &TenantId, day: Day, replicas: &[Replica], lease: &JobLease) -> Result<(), StorageError> {
        let engine = self.engine(tenant)?;
        // What is not in the bucket yet is made part of this job, so that
        // the job's rows are all at or above `min_seq`.
        engine.flush()?;
        let before = engine.uploaded_parts().remove(&day).unwrap_or_default();
        let min_seq = engine
            .local_min_seq(day)
            .map_or(engine.next_seq(), |s| s.min(engine.next_seq()));
        let lost =
            || StorageError::Unavailable(format!("lost the lease on tenant {tenant}'s {day} while compacting it"));
        let mut job = Job {
            stage: Stage::Copying,
            before: before.iter().map(NotedPart::from).collect(),
            min_seq,
            sources: replicas
                .iter()
                .map(|r| JobSource {
                    node: r.node.clone(),
                    parts: r.parts.iter().map(NotedPart::from).collect(),
                })
                .collect(),
        };
        if !jobs::write(&self.cluster, lease, &self.me, tenant, day, Some(&job))? {
            return Err(lost());
        }
        tracing::info!(%tenant, %day, replicas = replicas.len(), "began compacting a day");

        let sources: Vec<&Tsdb> = replicas.iter().map(|r| &*r.engine).collect();
        let samples = copy_day(&sources, engine.as_ref(), day)?;
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
        let made: Vec<ObjectInfo> = engine
            .uploaded_parts()
            .remove(&day)
            .unwrap_or_default()
            .into_iter()
            .filter(|p| job.made(p))
            .collect();
        if samples > 0 && made.is_empty() {
            return Err(StorageError::Unavailable(format!(
                "the compacted {day} of tenant {tenant} has no new part in the bucket"
            )));
        }
        for part in &made {
            let listed = self.bucket.head(&layout::compactor_key(&self.me, &part.key))?;
            if listed.size != part.size {
                return Err(StorageError::Corrupt {
                    path: self.bucket.url_of(&listed.key),
                    reason: format!("{} bytes in the bucket, {} written", listed.size, part.size),
                });
            }
        }
        job.stage = Stage::Uploaded;
        if !jobs::write(&self.cluster, lease, &self.me, tenant, day, Some(&job))? {
            // Another compactor took the day over and found this job still
            // copying: its own copy stands, and this one goes.
            layout::add_to_note(&self.bucket, &self.me, tenant, day, &made, now_ms())?;
            return Err(lost());
        }
        let written_ms = now_ms();
        for replica in replicas {
            layout::add_to_note(&self.bucket, &replica.node, tenant, day, &replica.parts, written_ms)?;
        }
        // Lost by now, the record stays for the next holder, which finds
        // the copy in the bucket and writes the same notes.
        jobs::write(&self.cluster, lease, &self.me, tenant, day, None)?;
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
