use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cairn_bucket::{ObjectInfo, Op};
use cairn_model::{Labels, Matcher};
use cairn_storage::{
    Admin, Appendable, Appender, CardinalityQuery, ObjectStoreStats, PartInfo, Querier, Queryable, ReadWarnings,
    RejectReason, StorageError, StorageStats, TsdbStatus,
};
use parking_lot::{Condvar, Mutex, RwLock};
use rayon::prelude::*;

use crate::appender::TsdbAppender;
use crate::background;
use crate::config::{Config, WalSync};
use crate::day::Day;
use crate::head::{Row, UNKNOWN_LOCAL};
use crate::health::WriteHealth;
use crate::partition::{DamagedBlock, Partition, Remote};
use crate::quarantine::Quarantine;
use crate::querier::TsdbQuerier;
use crate::sequence::Sequence;
use crate::tier;
use crate::wal::{self, Wal, record};

/// In-memory parts per partition before they are merged together. Only a
/// backfill seals faster than a flush interval drains them; every merge
/// before the flush's re-encodes the same samples, so each halving of
/// this costs ingest CPU (docs/benchmarks.md, "Engine settings").
pub(crate) const MAX_MEMORY_PARTS: usize = 16;
/// Disk parts per partition before a merge is started, and at most how many
/// parts one merges (picked by size: `Partition::merge_disk_parts`). Few parts
/// keep a select's sources, the parts' block indexes in memory and the young
/// data on disk small; picking parts of similar size keeps the re-encoding
/// this costs logarithmic (docs/benchmarks.md, "Merge policy").
const MAX_DISK_PARTS: usize = 5;
const DISK_MERGE_FAN_IN: usize = 5;
/// The two newest disk parts are merged as soon as together they hold at
/// most this much time (ms): the default look-back and the window most alert
/// rules rate over then lie in one or two parts (partition.rs
/// `next_disk_merge`, docs/benchmarks.md, "Young parts").
const YOUNG_PART_SPAN: i64 = 10 * 60 * 1000;
/// In-memory parts merged at a time.
const MEMORY_MERGE_FAN_IN: usize = 6;

/// The embedded engine. Cheap to share behind an `Arc`; closing flushes.
pub struct Tsdb {
    pub(crate) inner: Arc<Inner>,
    background: Mutex<Vec<JoinHandle<()>>>,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub samples_ingested: AtomicU64,
    pub out_of_retention: AtomicU64,
    pub too_far_in_future: AtomicU64,
    pub series_limit: AtomicU64,
    pub series_created: AtomicU64,
    pub merges: AtomicU64,
    pub merged_bytes: AtomicU64,
    pub flushes: AtomicU64,
    pub maintenance_cpu_nanos: AtomicU64,
    pub uploaded_parts: AtomicU64,
    pub uploaded_bytes: AtomicU64,
    pub upload_failures: AtomicU64,
}

pub(crate) struct Inner {
    pub config: Config,
    pub wal: Wal,
    partitions_dir: PathBuf,
    pub partitions: RwLock<BTreeMap<Day, Arc<Partition>>>,
    /// Serialises commits: sequence numbers, WAL order and row order agree.
    pub commit_lock: Mutex<()>,
    /// One flush, delete or close at a time.
    flush_lock: Mutex<()>,
    /// Numbers for commits, replayed records and deletes (sequence.rs).
    pub sequence: Sequence,
    pub counters: Counters,
    pub(crate) stop: Mutex<bool>,
    pub(crate) wake: Condvar,
    /// Keeps other processes out of the data directory while open.
    _lock_file: fs::File,
    /// The bucket, when days are kept there (tier.rs).
    pub remote: Option<Arc<Remote>>,
    /// Partitions past retention whose removal failed, retried every round.
    pub expired: Mutex<Vec<Arc<Partition>>>,
    /// `config.retention`, changeable while open (a tenant's limits reloaded).
    retention_ms: AtomicI64,
    /// Changes of settled data, for caches of answers.
    pub settled: cairn_storage::SettledChanges,
    /// Series today's partition may hold before commits stop creating more
    /// (0: no limit).
    pub max_active_series: AtomicU64,
    /// Where files found damaged go (quarantine.rs).
    pub quarantine: Arc<Quarantine>,
    /// Whether writes are taken, and why not (health.rs).
    pub health: WriteHealth,
}

/// Flushes `partitions` (in day order, as a map of them yields them), each
/// sharing labels with the one before it.
fn flush_partitions(partitions: &[Arc<Partition>], seq: u64) -> Result<(), StorageError> {
    let mut earlier = None;
    for p in partitions {
        p.flush(seq, earlier)?;
        earlier = Some(&**p);
    }
    Ok(())
}

/// What a write or a delete gets from a `--storage.read-only` instance.
pub(crate) fn read_only() -> StorageError {
    StorageError::Unavailable(
        "this instance is read-only (--storage.read-only): it serves the bucket's data and takes no writes".into(),
    )
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Tsdb {
    /// Opens (or creates) the data directory, replays the WAL with bounded
    /// memory (flushing to parts as it goes) and starts background work.
    pub fn open(config: Config) -> Result<Self, StorageError> {
        let remote = tier::connect(&config)?;
        Self::open_with(config, remote)
    }

    /// [`Tsdb::open`] with the bucket (and where in it) given, not connected
    /// to: tenants share one client and its cache.
    pub(crate) fn open_with(config: Config, remote: Option<Arc<Remote>>) -> Result<Self, StorageError> {
        let opening = Instant::now();
        let root = config.path.clone();
        fs::create_dir_all(&root).map_err(StorageError::io("create", &root))?;
        let lock_path = root.join("LOCK");
        let lock_file = fs::File::create(&lock_path).map_err(StorageError::io("create", &lock_path))?;
        lock_file.try_lock().map_err(|_| {
            StorageError::Unavailable(format!(
                "data directory {} is in use by another process",
                root.display()
            ))
        })?;
        let partitions_dir = root.join("partitions");
        fs::create_dir_all(&partitions_dir).map_err(StorageError::io("create", &partitions_dir))?;
        let quarantine = Arc::new(Quarantine::new(&root));
        let oldest_day = Day::of(now_ms() - config.retention.as_millis() as i64);
        // Each day to open, with the bucket's objects of it.
        let mut to_open: BTreeMap<Day, Vec<ObjectInfo>> = BTreeMap::new();
        for entry in fs::read_dir(&partitions_dir).map_err(StorageError::io("list", &partitions_dir))? {
            let path = entry.map_err(StorageError::io("list", &partitions_dir))?.path();
            let Some(day) = path.file_name().and_then(|n| Day::parse(&n.to_string_lossy())) else {
                continue;
            };
            if day < oldest_day {
                fs::remove_dir_all(&path).map_err(StorageError::io("remove expired partition", &path))?;
                continue;
            }
            to_open.insert(day, Vec::new());
        }
        if let Some(remote) = &remote {
            for (day, objects) in tier::list_retained(remote, oldest_day)? {
                to_open.insert(day, objects);
            }
        }
        // Loading a day's index is CPU-bound (decompress, build postings):
        // days load on every core (a restart holds at least two).
        let opened: Vec<Partition> = to_open
            .into_par_iter()
            .map(|(day, objects)| {
                let dir = partitions_dir.join(day.to_string());
                Partition::open(dir, day, remote.clone(), &objects, quarantine.clone())
            })
            .collect::<Result<_, _>>()?;
        tracing::info!(
            partitions = opened.len(),
            elapsed_ms = opening.elapsed().as_millis() as u64,
            "opened partitions"
        );
        let mut partitions = BTreeMap::new();
        let (mut max_seq, mut max_index_segment) = (0, 0);
        for p in opened {
            max_seq = max_seq.max(p.max_seq());
            max_index_segment = max_index_segment.max(p.max_index_segment()?);
            partitions.insert(p.day, Arc::new(p));
        }
        // Each day shares the labels of series it has in common with the day before.
        let mut earlier = None;
        for p in partitions.values() {
            p.seal_labels(earlier);
            earlier = Some(&**p);
        }
        let wal_dir = root.join("wal");
        // Above every index segment's number: a new disk holds none of the
        // WAL segments those were named after, and a flush must never write
        // an index segment over one downloaded from the bucket.
        let wal = Wal::open(
            &wal_dir,
            config.wal_segment_bytes,
            config.wal_sync == WalSync::EveryCommit,
            max_index_segment,
        )?;
        wal.set_max_retired_bytes(config.wal_max_retained_bytes)?;
        let inner = Arc::new(Inner {
            wal,
            partitions_dir,
            partitions: RwLock::new(partitions),
            commit_lock: Mutex::new(()),
            flush_lock: Mutex::new(()),
            sequence: Sequence::open(&root, max_seq),
            counters: Counters::default(),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            _lock_file: lock_file,
            remote,
            expired: Mutex::default(),
            retention_ms: AtomicI64::new(config.retention.as_millis() as i64),
            settled: cairn_storage::SettledChanges::default(),
            max_active_series: AtomicU64::new(config.max_active_series),
            quarantine,
            health: WriteHealth::new(config.min_free_disk_bytes),
            config,
        });
        inner.health.check_free_space(&root);
        inner.replay_wal(&wal_dir)?;
        let db = Self {
            inner,
            background: Mutex::default(),
        };
        if db.inner.config.background {
            *db.background.lock() =
                background::spawn(&db.inner).map_err(StorageError::io("spawn background threads for", &root))?;
        }
        Ok(db)
    }

    pub fn path(&self) -> &Path {
        &self.inner.config.path
    }

    /// Writes everything in memory to disk parts and truncates the WAL.
    pub fn flush(&self) -> Result<(), StorageError> {
        self.inner.flush()
    }

    /// Runs one round of merges, retention and WAL sync, as the background threads do.
    pub fn maintain(&self) -> Result<(), StorageError> {
        self.inner.maintain()
    }

    /// Changes how long samples are kept: ingestion refuses older ones at
    /// once, and the merge thread drops the days that fell out.
    pub fn set_retention(&self, retention: Duration) {
        let ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        self.inner.retention_ms.store(ms, Ordering::Relaxed);
        self.inner.settled.record();
        self.inner.nudge();
    }

    /// Changes how many series today's partition may hold before commits
    /// stop creating more (0: no limit); see [`cairn_storage::RejectReason::SeriesLimit`].
    pub fn set_max_active_series(&self, max: u64) {
        self.inner.max_active_series.store(max, Ordering::Relaxed);
    }

    /// Uploads what is settled to the bucket, as the upload thread does.
    pub fn upload(&self) -> Result<(), StorageError> {
        self.inner.upload_round()
    }

    /// Brings a read-only instance up to the bucket, as its refresh thread does.
    pub fn refresh(&self) -> Result<(), StorageError> {
        self.inner.refresh_from_bucket()
    }

    /// Each day's parts in the bucket, as this instance has them open.
    pub fn uploaded_parts(&self) -> BTreeMap<Day, Vec<ObjectInfo>> {
        let partitions: Vec<_> = self.inner.partitions.read().values().cloned().collect();
        partitions
            .iter()
            .map(|p| (p.day, p.uploaded_parts()))
            .filter(|(_, parts)| !parts.is_empty())
            .collect()
    }

    /// The sequence number the next write will get: every row written
    /// from now on, and every part made of such rows, is at or above it.
    pub fn next_seq(&self) -> u64 {
        self.inner.sequence.peek()
    }

    /// The least sequence number of `day`'s local parts, those the bucket
    /// does not hold yet (rows still in memory not counted: flush first).
    pub fn local_min_seq(&self, day: Day) -> Option<u64> {
        let partition = self.inner.partitions.read().get(&day).cloned();
        partition.and_then(|p| p.local_min_seq())
    }

    /// Whether the bucket holds all of `day` this engine has (true for a
    /// day it has nothing of).
    pub fn is_uploaded(&self, day: Day) -> bool {
        let partition = self.inner.partitions.read().get(&day).cloned();
        partition.is_none_or(|p| p.is_all_uploaded())
    }

    /// Drops `day`'s uploaded parts among `objects` and deletes them from
    /// the bucket: a cluster's compactor holds their samples now. The day's
    /// index stays (later writes to the day may name its series).
    pub fn retire_uploaded(&self, day: Day, objects: &[ObjectInfo]) -> Result<usize, StorageError> {
        self.inner.check_writable()?;
        let partition = self.inner.partitions.read().get(&day).cloned();
        let Some(p) = partition else { return Ok(0) };
        let retired = p.retire(objects);
        // The day is answered from the compactor's copy now, which may
        // hold samples this replica missed: a change of settled data.
        self.inner.settled.record();
        retired
    }

    /// Merges all of every partition's disk parts into one (drops deleted data).
    pub fn compact(&self) -> Result<(), StorageError> {
        let partitions: Vec<_> = self.inner.partitions.read().values().cloned().collect();
        for p in partitions {
            let bytes = p.compact_all()?;
            self.inner.counters.merged_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Rewrites every local part that has damaged blocks without them,
    /// recording their samples as lost (`cairn check --repair`). Returns
    /// how many blocks and samples were lost.
    pub fn repair(&self) -> Result<(usize, u64), StorageError> {
        let partitions: Vec<_> = self.inner.partitions.read().values().cloned().collect();
        let (mut blocks, mut samples) = (0, 0);
        for p in partitions {
            let lost = p.repair()?;
            blocks += lost.len();
            samples += lost.iter().map(|l| u64::from(l.samples)).sum::<u64>();
        }
        Ok((blocks, samples))
    }

    /// The blocks of local parts that reads found damaged, with their
    /// series' labels: what another copy (a replica) could restore.
    pub fn damaged_blocks(&self) -> Vec<DamagedBlock> {
        let partitions: Vec<_> = self.inner.partitions.read().values().cloned().collect();
        partitions.iter().flat_map(|p| p.damaged_blocks()).collect()
    }

    /// Drops from the parts the damaged blocks whose samples were written
    /// again (`restored`, as [`Self::damaged_blocks`] gave them), recording
    /// no loss. A part with another damaged block stays as it is.
    pub fn drop_restored_blocks(&self, restored: &[DamagedBlock]) -> Result<usize, StorageError> {
        let partitions: Vec<_> = self.inner.partitions.read().values().cloned().collect();
        let mut dropped = 0;
        for p in partitions {
            dropped += p.drop_restored_blocks(restored)?;
        }
        Ok(dropped)
    }

    /// Stops background work and flushes. Also done on drop, ignoring errors.
    pub fn close(&self) -> Result<(), StorageError> {
        *self.inner.stop.lock() = true;
        self.inner.wake.notify_all();
        for h in std::mem::take(&mut *self.background.lock()) {
            let _ = h.join();
        }
        self.inner.flush()
    }
}

impl Drop for Tsdb {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::error!(error = %e, "flush on close failed; the WAL still holds the data");
        }
    }
}

impl Inner {
    pub fn partition(&self, day: Day) -> Result<Arc<Partition>, StorageError> {
        if let Some(p) = self.partitions.read().get(&day) {
            return Ok(p.clone());
        }
        let mut map = self.partitions.write();
        if let Some(p) = map.get(&day) {
            return Ok(p.clone());
        }
        let p = Arc::new(Partition::create(
            self.partition_dir(day),
            day,
            self.remote.clone(),
            self.quarantine.clone(),
        )?);
        map.insert(day, p.clone());
        Ok(p)
    }

    pub fn partition_dir(&self, day: Day) -> PathBuf {
        self.partitions_dir.join(day.to_string())
    }

    /// The oldest timestamp that is still inside retention.
    pub fn min_valid_t(&self) -> i64 {
        now_ms() - self.retention_ms.load(Ordering::Relaxed)
    }

    pub fn max_valid_t(&self) -> i64 {
        now_ms() + self.config.max_future.as_millis() as i64
    }

    fn replay_wal(&self, wal_dir: &Path) -> Result<(), StorageError> {
        let active = wal::list_segments(wal_dir)?.last().copied().unwrap_or(0);
        let started = Instant::now();
        let mut records = 0u64;
        let min_t = self.min_valid_t();
        let mut scratch = Vec::new();
        let (progress, quarantine) = (&self.config.wal_replay, &*self.quarantine);
        let mut unknown_rows = 0;
        wal::replay(wal_dir, active, progress, quarantine, |segment, payload| {
            let days = record::decode_batch(payload, &mut scratch).map_err(|reason| StorageError::Corrupt {
                path: wal_dir.to_path_buf(),
                reason: format!("undecodable record in segment {segment}: {reason}"),
            })?;
            let seq = self.sequence.take()?;
            for d in days {
                let day = Day(d.day);
                // Labelled batches are agent mode's: forwarded, never stored.
                if !d.labelled.is_empty() || day.maxt() < min_t {
                    continue;
                }
                let p = self.partition(day)?;
                let mut rows: Vec<Row> = d
                    .rows
                    .iter()
                    .map(|&(id, t, v)| Row {
                        id,
                        local: UNKNOWN_LOCAL,
                        t,
                        v,
                    })
                    .collect();
                let mut histograms = d.histograms;
                unknown_rows += p.retain_known(&d.new_series, &mut rows, &mut histograms);
                if p.apply(&d.new_series, &rows, &histograms, seq, &self.config)? {
                    p.seal_rows()?;
                }
            }
            records += 1;
            // Bounded memory: flush to parts when in-memory data grows, and
            // drop the segments replayed completely so far.
            if self.memory_bytes() > self.config.flush_threshold_bytes() {
                let seq = self.seal_and_flush_all()?;
                self.wal.remove_before(segment.min(seq))?;
            }
            Ok(())
        })?;
        let replayed_ms = started.elapsed().as_millis() as u64;
        self.flush()?;
        if unknown_rows > 0 {
            tracing::error!(
                unknown_rows,
                "WAL samples of series whose index segment was quarantined were dropped"
            );
        }
        if records > 0 {
            let elapsed_ms = started.elapsed().as_millis() as u64;
            // The closing flush apart: the one write a start waits for.
            tracing::info!(records, elapsed_ms, flush_ms = elapsed_ms - replayed_ms, "replayed WAL");
        }
        Ok(())
    }

    pub fn memory_bytes(&self) -> u64 {
        self.partitions.read().values().map(|p| p.memory_bytes()).sum()
    }

    /// Seals every head and flushes every partition; the caller holds
    /// the commit lock or is alone (replay). Returns the new WAL segment.
    fn seal_and_flush_all(&self) -> Result<u64, StorageError> {
        let partitions: Vec<_> = self.partitions.read().values().cloned().collect();
        for p in &partitions {
            p.seal_rows()?;
        }
        let seq = self.wal.rotate()?;
        flush_partitions(&partitions, seq)?;
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        Ok(seq)
    }

    /// Writes in-memory data to disk and truncates the WAL. Commits wait only
    /// while heads are sealed and the WAL rotates, not during the writes.
    pub fn flush(&self) -> Result<(), StorageError> {
        let _flush = self.flush_lock.lock();
        self.flush_holding_lock()
    }

    /// [`Self::flush`] for a caller that holds `flush_lock`; its outcome is
    /// recorded in the write health.
    fn flush_holding_lock(&self) -> Result<(), StorageError> {
        let result = (|| {
            let (partitions, seq) = {
                let _commits = self.commit_lock.lock();
                let partitions: Vec<_> = self.partitions.read().values().cloned().collect();
                for p in &partitions {
                    p.seal_rows()?;
                }
                (partitions, self.wal.rotate()?)
            };
            flush_partitions(&partitions, seq)?;
            self.wal.remove_before(seq)?;
            self.counters.flushes.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })();
        self.health.record_flush(&result);
        result
    }

    /// Puts a consistent copy of the data directory (partitions; no WAL) in
    /// `dest`. Unless `skip_head`, in-memory data is
    /// flushed first, so the copy holds every write acknowledged before the
    /// call. The flush lock is held throughout: no index segment or
    /// histogram file appears and no WAL segment goes while files are linked.
    pub fn snapshot(&self, dest: &Path, skip_head: bool) -> Result<(), StorageError> {
        let _flush = self.flush_lock.lock();
        if !skip_head {
            self.flush_holding_lock()?;
        }
        let partitions: Vec<_> = self.partitions.read().values().cloned().collect();
        let partitions_dir = dest.join("partitions");
        fs::create_dir_all(&partitions_dir).map_err(StorageError::io("create", &partitions_dir))?;
        for p in &partitions {
            p.snapshot_into(&partitions_dir.join(p.day.to_string()))?;
        }
        wal::sync_dir(&partitions_dir)?;
        wal::sync_dir(dest)
    }

    /// Merges in-memory parts until no partition has more than [`MAX_MEMORY_PARTS`].
    pub(crate) fn merge_memory_parts(&self) -> Result<(), StorageError> {
        let partitions: Vec<_> = self.partitions.read().values().cloned().collect();
        for p in &partitions {
            while p.merge_memory_parts(MAX_MEMORY_PARTS, MEMORY_MERGE_FAN_IN)? {
                self.counters.merges.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// A round of the background work that is not about memory: WAL sync,
    /// disk merges, retention (the merge thread's round, plus the sync).
    fn maintain(&self) -> Result<(), StorageError> {
        self.sync_wal_on_interval()?;
        self.merge_disk_parts()?;
        self.apply_retention()
    }

    /// Syncs the WAL unless every commit does.
    pub(crate) fn sync_wal_on_interval(&self) -> Result<(), StorageError> {
        match self.config.wal_sync {
            WalSync::Interval(_) => self.wal.sync(),
            WalSync::EveryCommit => Ok(()),
        }
    }

    /// Merges disk parts where a partition has more than [`MAX_DISK_PARTS`]
    /// or two young ones (one merge per partition), or compacts an idle
    /// partition fully, and merges histogram files where a partition has
    /// too many; whether it wrote anything.
    pub(crate) fn merge_disk_parts(&self) -> Result<bool, StorageError> {
        let partitions: Vec<_> = self.partitions.read().values().cloned().collect();
        let mut merged = false;
        for p in &partitions {
            let mut bytes = p.merge_disk_parts(MAX_DISK_PARTS, DISK_MERGE_FAN_IN, YOUNG_PART_SPAN)?;
            // Idleness first: it is an atomic, the head is a lock commits take.
            if bytes == 0 && p.wants_idle_merge(self.config.idle_merge_after.as_millis() as i64) && p.head_rows() == 0 {
                bytes = p.compact_all()?;
            }
            if bytes > 0 {
                merged = true;
                self.counters.merges.fetch_add(1, Ordering::Relaxed);
                self.counters.merged_bytes.fetch_add(bytes, Ordering::Relaxed);
            }
            if p.merge_histogram_files()? {
                merged = true;
                self.counters.merges.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(merged)
    }

    /// Drops the partitions past retention, from disk and bucket. One that
    /// cannot be removed is logged and tried again next round; the others go on.
    pub(crate) fn apply_retention(&self) -> Result<(), StorageError> {
        let oldest = Day::of(self.min_valid_t());
        let mut expired = std::mem::take(&mut *self.expired.lock());
        // Looked at under the read lock first: this runs every few seconds on
        // the low-priority merge thread, and a queued writer would hold off
        // every commit and query until that thread runs.
        if self.partitions.read().keys().next().is_some_and(|&day| day < oldest) {
            let mut map = self.partitions.write();
            let keep = map.split_off(&oldest);
            expired.extend(std::mem::replace(&mut *map, keep).into_values());
            drop(map);
            self.settled.record();
        }
        let mut first_error = None;
        for p in expired {
            tracing::info!(day = %p.day, "dropping partition past retention");
            if let Err(e) = p.remove() {
                tracing::error!(day = %p.day, error = %e, "removing a partition past retention failed");
                first_error.get_or_insert(e);
                self.expired.lock().push(p);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Admits a commit, or refuses it with a retryable error while the
    /// disk is under its free-space reserve or memory stays over its bound.
    pub fn admit_write(&self) -> Result<(), StorageError> {
        self.health.admit(
            &self.config.path,
            || self.memory_bytes(),
            self.config.max_in_memory_bytes as u64,
            self.config.max_write_stall,
            || self.nudge(),
        )
    }

    /// Refuses a change of data on a read-only instance.
    pub fn check_writable(&self) -> Result<(), StorageError> {
        if self.config.read_only {
            return Err(read_only());
        }
        Ok(())
    }

    /// Asks the background threads to look at memory now.
    pub fn nudge(&self) {
        self.wake.notify_all();
    }

    pub fn delete(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<(), StorageError> {
        self.check_writable()?;
        let _flush = self.flush_lock.lock();
        let _commits = self.commit_lock.lock();
        // Everything written so far goes to disk parts first, so the
        // tombstone's sequence number orders it after all of it.
        let wal_seq = self.seal_and_flush_all()?;
        self.wal.remove_before(wal_seq)?;
        let seq = self.sequence.take()?;
        let partitions: Vec<_> = self
            .partitions
            .read()
            .range(Day::of(mint)..=Day::of(maxt))
            .map(|(_, p)| p.clone())
            .collect();
        for p in partitions {
            let ids: Vec<u64> = {
                let index = p.index();
                index.select(matchers).iter().map(|l| index.id_of(l)).collect()
            };
            p.delete(&ids, mint, maxt, seq)?;
        }
        self.settled.record();
        Ok(())
    }
}

impl Appendable for Tsdb {
    fn appender(&self) -> Box<dyn Appender + '_> {
        Box::new(TsdbAppender::new(&self.inner))
    }
}

impl Tsdb {
    /// A querier that says in `warnings` which samples it left out because
    /// they were lost to damage.
    pub fn querier_warning(&self, mint: i64, maxt: i64, warnings: Option<ReadWarnings>) -> TsdbQuerier {
        if mint > maxt {
            return TsdbQuerier::new(Vec::new(), mint, maxt, warnings);
        }
        let snaps = self
            .inner
            .partitions
            .read()
            .range(Day::of(mint)..=Day::of(maxt))
            .map(|(_, p)| p.snapshot())
            .collect();
        TsdbQuerier::new(snaps, mint, maxt, warnings)
    }
}

impl Queryable for Tsdb {
    fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier>, StorageError> {
        Ok(Box::new(self.querier_warning(mint, maxt, None)))
    }

    fn settled_changes(&self) -> Option<u64> {
        Some(self.inner.settled.get().wrapping_add(crate::blocks_found_damaged()))
    }
}

impl Admin for Tsdb {
    fn delete_series(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<(), StorageError> {
        self.inner.delete(matchers, mint, maxt)
    }

    fn tsdb_status(&self, query: &CardinalityQuery) -> Result<TsdbStatus, StorageError> {
        let (mint, maxt) = (query.mint, query.maxt);
        let mut series = std::collections::BTreeSet::<Labels>::new();
        let mut min_time = None::<i64>;
        let mut max_time = None::<i64>;
        let partitions: Vec<_> = self
            .inner
            .partitions
            .read()
            .range(Day::of(mint)..=Day::of(maxt.max(mint)))
            .map(|(_, p)| p.clone())
            .collect();
        for p in partitions {
            if let Some((mint, maxt)) = p.parts_time_range() {
                min_time = Some(min_time.map_or(mint, |m| m.min(mint)));
                max_time = Some(max_time.map_or(maxt, |m| m.max(maxt)));
            }
            let index = p.index();
            series.extend(index.live().iter().map(|l| index.labels_of(l)));
        }
        let mut st = TsdbStatus::from_series(series.iter(), query);
        st.min_time = min_time;
        st.max_time = max_time;
        Ok(st)
    }

    fn stats(&self) -> StorageStats {
        let c = &self.inner.counters;
        let partitions: Vec<_> = self.inner.partitions.read().values().cloned().collect();
        let today = Day::of(now_ms());
        StorageStats {
            samples_ingested_total: c.samples_ingested.load(Ordering::Relaxed),
            samples_rejected_total: vec![
                (RejectReason::OutOfRetention, c.out_of_retention.load(Ordering::Relaxed)),
                (
                    RejectReason::TooFarInFuture,
                    c.too_far_in_future.load(Ordering::Relaxed),
                ),
                (RejectReason::SeriesLimit, c.series_limit.load(Ordering::Relaxed)),
            ],
            series_created_total: c.series_created.load(Ordering::Relaxed),
            active_series: partitions
                .iter()
                .filter(|p| p.day == today)
                .map(|p| p.index().live().len())
                .sum(),
            head_samples: partitions.iter().map(|p| p.head_rows() as u64).sum(),
            storage_bytes: partitions.iter().map(|p| p.disk_bytes()).sum(),
            wal_bytes: self.inner.wal.disk_bytes(),
            parts: partitions.iter().map(|p| p.part_count() as u64).sum(),
            partitions: partitions.len() as u64,
            merges_total: c.merges.load(Ordering::Relaxed),
            merged_bytes_total: c.merged_bytes.load(Ordering::Relaxed),
            flushes_total: c.flushes.load(Ordering::Relaxed),
            maintenance_cpu_seconds_total: c.maintenance_cpu_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            quarantined_files_total: self.inner.quarantine.counts(),
            write_refusal: (!self.inner.config.read_only)
                .then(|| {
                    self.inner.health.refusal(
                        &self.inner.config.path,
                        partitions.iter().map(|p| p.memory_bytes()).sum(),
                        self.inner.config.max_in_memory_bytes as u64,
                    )
                })
                .flatten(),
            free_disk_bytes: self.inner.health.free_bytes(),
            write_errors_total: self.inner.health.errors(),
            object_store: self.inner.remote.as_ref().map(|remote| {
                let (bucket, cache) = (&remote.bucket.counters, &remote.bucket.cache);
                let (backlog_parts, backlog_bytes) = self.inner.upload_backlog();
                ObjectStoreStats {
                    requests_total: Op::ALL.iter().map(|&op| (op.name(), bucket.requests(op))).collect(),
                    request_failures_total: Op::ALL.iter().map(|&op| (op.name(), bucket.errors(op))).collect(),
                    read_bytes_total: bucket.read_bytes.load(Ordering::Relaxed),
                    written_bytes_total: bucket.written_bytes.load(Ordering::Relaxed),
                    cache_hits_total: cache.hits.load(Ordering::Relaxed),
                    cache_misses_total: cache.misses.load(Ordering::Relaxed),
                    cache_bytes: cache.bytes(),
                    cache_max_bytes: cache.max_bytes(),
                    upload_backlog_parts: backlog_parts,
                    upload_backlog_bytes: backlog_bytes,
                    uploaded_parts_total: c.uploaded_parts.load(Ordering::Relaxed),
                    uploaded_bytes_total: c.uploaded_bytes.load(Ordering::Relaxed),
                    upload_failures_total: c.upload_failures.load(Ordering::Relaxed),
                }
            }),
        }
    }

    fn snapshot(&self, dest: &Path, skip_head: bool) -> Result<(), StorageError> {
        self.inner.snapshot(dest, skip_head)
    }

    fn parts(&self) -> Result<Vec<PartInfo>, StorageError> {
        let partitions: Vec<_> = self.inner.partitions.read().values().cloned().collect();
        let root = &self.inner.config.path;
        let mut out = Vec::new();
        for p in partitions {
            let parts = p.snapshot().parts;
            for part in parts.all() {
                let meta = part.meta();
                let name = match (part.path(), part.object(), &self.inner.remote) {
                    (Some(path), _, _) => path.strip_prefix(root).unwrap_or(path).display().to_string(),
                    (None, Some(object), Some(remote)) => remote.bucket.url_of(&object.key).display().to_string(),
                    _ => format!("{}/memory-{}-{}", p.day, meta.min_seq, meta.max_seq),
                };
                out.push(PartInfo {
                    name,
                    min_time: meta.mint,
                    max_time: meta.maxt,
                    samples: meta.samples,
                    series: part.series_count(),
                    blocks: part.block_count() as u64,
                    bytes: part.size_bytes(),
                    in_memory: !part.is_stored(),
                    format: part.format_version(),
                });
            }
        }
        Ok(out)
    }
}
