//! One day of data: its series index, unflushed rows, parts and tombstones.

mod bucket;

use bucket::file_name;
pub use bucket::{PARTITIONS, Remote};

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

use cairn_bucket::ObjectInfo;
use cairn_model::{EncodedLabels, Histogram, Matcher};
use cairn_storage::StorageError;
use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard};
use rayon::prelude::*;

use crate::day::Day;
use crate::head::{Head, HeadSnapshot, Row, UNKNOWN_LOCAL};
use crate::histograms::HistogramStore;
use crate::index::PartitionIndex;
use crate::losses::{self, Loss};
use crate::part::{BlockCursor, BlockEncoding, LostBlock, Part, PartWriter};
use crate::quarantine::{FileKind, Quarantine};
use crate::selection::{self, Selection, SelectionCache};
use crate::series_reader::{Deleted, Ranked, SeriesReader};
use crate::shared_reads::SequentialReads;
use crate::tombstones::{self, Tombstone};
use cairn_storage::SampleBlocks;

/// The parts of a partition in write-sequence order; replaced as a whole
/// (copy on write) so a query keeps the list it started with.
#[derive(Default)]
pub struct PartSet {
    /// Flushed parts, older than every in-memory part.
    pub disk: Vec<Arc<Part>>,
    /// Compressed but not yet written to disk (their rows are still in the WAL).
    pub memory: Vec<Arc<Part>>,
}

impl PartSet {
    pub fn all(&self) -> impl Iterator<Item = &Arc<Part>> {
        self.disk.iter().chain(&self.memory)
    }
}

/// Its locks are private: the order they are taken in (`index` → `head` →
/// `parts`, see ARCHITECTURE.md) is kept by this file alone.
pub struct Partition {
    pub day: Day,
    dir: PathBuf,
    index: RwLock<PartitionIndex>,
    head: Mutex<Head>,
    parts: RwLock<Arc<PartSet>>,
    tombstones: RwLock<Arc<Vec<Tombstone>>>,
    /// Bodies of the histogram samples whose markers the head and parts
    /// hold. Taken after `head` where both are held.
    histograms: RwLock<HistogramStore>,
    /// When rows were last applied (ms since the epoch), to find idle partitions.
    last_write_ms: AtomicI64,
    /// Tombstones up to this sequence number are merged out of all disk parts.
    applied_tombstone_seq: AtomicU64,
    /// Serialises flushes and merges of in-memory parts: each picks memory
    /// parts from the list and replaces them, which must not interleave.
    rewrite: Mutex<()>,
    /// Serialises merges and compactions of disk parts, which replace runs
    /// of them. Flushes only append disk parts, so a flush need not wait for
    /// a long merge. Taken after `rewrite` where both are held (removal).
    disk_merge: Mutex<()>,
    /// Serialises seals, so parts are installed in commit order and a flush
    /// (which seals under the commit lock) waits for a seal in progress.
    seal: Mutex<()>,
    /// Recent selects' series, valid while the index's version holds. Taken
    /// under `index` (read) and alone otherwise.
    selections: Mutex<SelectionCache>,
    /// The bucket, when there is one.
    remote: Option<Arc<Remote>>,
    /// The index segments and tombstones the bucket holds: name → the
    /// fingerprint of the file version uploaded (bucket.rs).
    uploaded: Mutex<HashMap<String, u64>>,
    /// Serialises uploads: two at once (the upload thread's round and an
    /// explicit one) would each upload the same part, and the one finding
    /// it installed by the other would delete the object both wrote.
    upload: Mutex<()>,
    /// Where files found damaged go (the engine's).
    quarantine: Arc<Quarantine>,
    /// Set when a histogram file was quarantined: markers whose bodies it
    /// held are left out of reads rather than failing them.
    lost_histograms: AtomicBool,
    /// Samples lost for good when a repair dropped damaged blocks.
    losses: RwLock<Arc<Vec<Loss>>>,
}

/// A damaged block of a disk part, and the series it held.
#[derive(Debug, Clone, PartialEq)]
pub struct DamagedBlock {
    pub part: PathBuf,
    pub labels: cairn_model::Labels,
    pub block: LostBlock,
}

/// What a query sees of a partition.
pub struct PartitionSnapshot {
    pub partition: Arc<Partition>,
    pub parts: Arc<PartSet>,
    pub head: HeadSnapshot,
    pub tombstones: Arc<Vec<Tombstone>>,
    pub losses: Arc<Vec<Loss>>,
}

/// Where a part found when a partition opens is.
enum Stored {
    File(PathBuf),
    Object(ObjectInfo),
}

fn part_file_name(min_seq: u64, max_seq: u64) -> String {
    format!("part-{min_seq:020}-{max_seq:020}.cpart")
}

/// The sequence numbers a part's rows span, read from its name (its file's
/// or its object key's last segment).
pub fn part_seq_range(key: &str) -> Option<(u64, u64)> {
    parse_part_name(key.rsplit('/').next()?)
}

fn parse_part_name(name: &str) -> Option<(u64, u64)> {
    let rest = name.strip_prefix("part-")?.strip_suffix(".cpart")?;
    let (a, b) = rest.split_once('-')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

impl Partition {
    pub fn create(
        dir: PathBuf,
        day: Day,
        remote: Option<Arc<Remote>>,
        quarantine: Arc<Quarantine>,
    ) -> Result<Self, StorageError> {
        fs::create_dir_all(&dir).map_err(StorageError::io("create", &dir))?;
        if let Some(parent) = dir.parent() {
            crate::wal::sync_dir(parent)?;
        }
        Ok(Self {
            day,
            dir,
            index: RwLock::default(),
            head: Mutex::default(),
            parts: RwLock::default(),
            tombstones: RwLock::default(),
            histograms: RwLock::default(),
            rewrite: Mutex::new(()),
            disk_merge: Mutex::new(()),
            seal: Mutex::new(()),
            selections: Mutex::default(),
            last_write_ms: AtomicI64::default(),
            applied_tombstone_seq: AtomicU64::default(),
            remote,
            uploaded: Mutex::default(),
            upload: Mutex::new(()),
            quarantine,
            lost_histograms: AtomicBool::new(false),
            losses: RwLock::default(),
        })
    }

    /// Opens a partition directory: drops leftovers of interrupted writes
    /// (`*.tmp`, merge inputs superseded by their output) and loads the rest,
    /// with the parts `objects` (the bucket's listing of the day) hold, after
    /// downloading the index segments and tombstones among them that the
    /// directory lacks. A file found damaged is quarantined and the
    /// partition opens without it (docs/corruption.md).
    pub fn open(
        dir: PathBuf,
        day: Day,
        remote: Option<Arc<Remote>>,
        objects: &[ObjectInfo],
        quarantine: Arc<Quarantine>,
    ) -> Result<Self, StorageError> {
        let uploaded = match &remote {
            Some(remote) => {
                fs::create_dir_all(&dir).map_err(StorageError::io("create", &dir))?;
                bucket::fetch_kept_files(&remote.bucket, &dir, objects)?
            }
            None => HashMap::new(),
        };
        let mut found: BTreeMap<String, Stored> = BTreeMap::new();
        let mut index_files = Vec::new();
        for entry in fs::read_dir(&dir).map_err(StorageError::io("list", &dir))? {
            let path = entry.map_err(StorageError::io("list", &dir))?.path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.ends_with(".tmp") {
                fs::remove_file(&path).map_err(StorageError::io("remove", &path))?;
            } else if parse_part_name(&name).is_some() {
                found.insert(name, Stored::File(path));
            } else if crate::index::segment_seq(&name).is_some() {
                index_files.push(path);
            }
        }
        let writable = remote.as_ref().is_some_and(|r| r.writable);
        for object in objects {
            let name = file_name(object).to_string();
            if parse_part_name(&name).is_none() {
                continue;
            }
            match found.get(&name) {
                // Uploaded, but the process stopped before it removed the
                // file (an upload that did not finish left no object).
                Some(Stored::File(path)) if fs::metadata(path).is_ok_and(|m| m.len() == object.size) => {
                    if writable {
                        fs::remove_file(path).map_err(StorageError::io("remove uploaded part", path))?;
                    }
                    found.insert(name, Stored::Object(object.clone()));
                }
                // Rewritten since it was uploaded: the file is newer.
                Some(Stored::File(_)) => {}
                _ => {
                    found.insert(name, Stored::Object(object.clone()));
                }
            }
        }
        // A merge writes its output before deleting its inputs; inputs whose
        // range lies inside another part's are such leftovers.
        let mut part_names: Vec<((u64, u64), Stored)> = found
            .into_iter()
            .filter_map(|(name, stored)| Some((parse_part_name(&name)?, stored)))
            .collect();
        part_names.sort_by_key(|((lo, hi), _)| (*lo, std::cmp::Reverse(*hi)));
        let mut stored_parts = Vec::new();
        let mut covered_to: Option<u64> = None;
        for ((_, hi), stored) in part_names {
            if covered_to.is_some_and(|c| hi <= c) {
                match (&stored, &remote) {
                    (Stored::File(path), _) => {
                        fs::remove_file(path).map_err(StorageError::io("remove superseded part", path))?
                    }
                    (Stored::Object(object), Some(remote)) if remote.writable => remote.bucket.delete(&object.key)?,
                    (Stored::Object(_), _) => {}
                }
                continue;
            }
            covered_to = Some(covered_to.map_or(hi, |c| c.max(hi)));
            stored_parts.push(stored);
        }
        index_files.sort();
        // Building the index's postings and reading the parts' block indexes
        // are both CPU-bound: they run at once (restart time).
        let (disk, index) = rayon::join(
            || {
                stored_parts
                    .par_iter()
                    .map(|stored| match (stored, &remote) {
                        (Stored::File(path), _) => Part::open(path).map(Arc::new),
                        (Stored::Object(object), Some(remote)) => {
                            Part::open_object(remote.bucket.clone(), object.clone()).map(Arc::new)
                        }
                        (Stored::Object(_), None) => unreachable!("objects come with their bucket"),
                    })
                    .collect::<Vec<_>>()
            },
            || {
                let mut index = PartitionIndex::default();
                for path in &index_files {
                    match index.load_segment(path) {
                        // A damaged segment leaves the index as it was.
                        Err(StorageError::Corrupt { reason, .. }) => {
                            quarantine.take(path, FileKind::Index, &reason)?;
                        }
                        loaded => loaded?,
                    }
                }
                Ok::<_, StorageError>(index)
            },
        );
        let mut kept = Vec::with_capacity(disk.len());
        for (opened, stored) in disk.into_iter().zip(&stored_parts) {
            match (opened, stored) {
                (Ok(part), _) => kept.push(part),
                (Err(StorageError::Corrupt { reason, .. }), Stored::File(path)) => {
                    quarantine.take(path, FileKind::Part, &reason)?;
                }
                (Err(StorageError::Corrupt { path, reason }), Stored::Object(_)) => {
                    quarantine.skip(&path, FileKind::Part, &reason);
                }
                (Err(e), _) => return Err(e),
            }
        }
        let parts = PartSet {
            disk: kept,
            memory: Vec::new(),
        };
        let index = index?;
        let tombs = load_tombstones(&dir, &quarantine)?;
        let applied = match tombstones::load_applied(&dir) {
            // Deletes are then merged out again: more work, nothing lost.
            Err(StorageError::Corrupt { path, reason }) => {
                quarantine.take(&path, FileKind::Tombstones, &reason)?;
                0
            }
            applied => applied?,
        };
        let losses = losses::load(&dir)?;
        let (histograms, damaged) = HistogramStore::load_lenient(&dir)?;
        for (path, reason) in &damaged {
            quarantine.take(path, FileKind::Histograms, reason)?;
        }
        let p = Self {
            day,
            dir,
            index: RwLock::new(index),
            head: Mutex::default(),
            parts: RwLock::new(Arc::new(parts)),
            tombstones: RwLock::new(Arc::new(tombs)),
            histograms: RwLock::new(histograms),
            rewrite: Mutex::new(()),
            disk_merge: Mutex::new(()),
            seal: Mutex::new(()),
            selections: Mutex::default(),
            last_write_ms: AtomicI64::default(),
            applied_tombstone_seq: AtomicU64::new(applied),
            remote,
            uploaded: Mutex::new(uploaded),
            upload: Mutex::new(()),
            quarantine,
            lost_histograms: AtomicBool::new(!damaged.is_empty()),
            losses: RwLock::new(Arc::new(losses)),
        };
        let ids: BTreeSet<u64> = p.tombstones.read().iter().map(|t| t.id).collect();
        p.update_liveness(ids)?;
        Ok(p)
    }

    /// The histogram bodies, read-locked: take it alone.
    pub fn histograms(&self) -> RwLockReadGuard<'_, HistogramStore> {
        self.histograms.read()
    }

    /// The series index, read-locked: take it alone, never while holding
    /// another lock of this partition.
    pub fn index(&self) -> RwLockReadGuard<'_, PartitionIndex> {
        self.index.read()
    }

    /// The live series `matchers` select in `index` (this partition's,
    /// read-locked by the caller), kept for the next select of the same
    /// matchers while the index does not change.
    pub fn selection(&self, index: &PartitionIndex, matchers: &[Matcher]) -> Arc<Selection> {
        let key = selection::key_of(matchers);
        let version = index.version();
        if let Some(kept) = self.selections.lock().get(&key, version) {
            return kept;
        }
        let selection = Arc::new(Selection::compute(index, matchers));
        self.selections.lock().put(key, version, selection.clone());
        selection
    }

    /// The highest sequence number in the names of the index segments and
    /// histogram files on disk: the WAL numbers its segments above it, since
    /// a flush names them after the WAL segment it rotated to.
    pub fn max_index_segment(&self) -> Result<u64, StorageError> {
        let mut max = 0;
        for entry in fs::read_dir(&self.dir).map_err(StorageError::io("list", &self.dir))? {
            let name = entry.map_err(StorageError::io("list", &self.dir))?.file_name();
            // Histogram files are named by their flush's segment too: a
            // later flush must not reuse one's name.
            let seq = name
                .to_str()
                .and_then(|n| crate::index::segment_seq(n).or_else(|| crate::histograms::file_seq(n)));
            max = max.max(seq.unwrap_or(0));
        }
        Ok(max)
    }

    /// The newest write sequence number of the parts and tombstones on disk.
    pub fn max_seq(&self) -> u64 {
        let parts = self.parts.read().all().map(|p| p.meta().max_seq).max().unwrap_or(0);
        parts.max(self.newest_tombstone_seq())
    }

    /// Rows in the head, not yet in a part.
    pub fn head_rows(&self) -> usize {
        self.head.lock().len()
    }

    pub fn part_count(&self) -> usize {
        self.parts.read().all().count()
    }

    /// The time range of the samples in parts, if any.
    pub fn parts_time_range(&self) -> Option<(i64, i64)> {
        let parts = self.parts.read();
        let mint = parts.all().map(|p| p.meta().mint).min()?;
        let maxt = parts.all().map(|p| p.meta().maxt).max()?;
        Some((mint, maxt))
    }

    pub fn snapshot(self: &Arc<Self>) -> PartitionSnapshot {
        // Sealing moves rows into a part while holding the head lock, so
        // holding it here sees each row exactly once: in the head or in a part.
        let head = self.head.lock();
        // A part with damaged blocks stays: reads leave out only those blocks.
        let parts = self.parts.read().clone();
        PartitionSnapshot {
            partition: self.clone(),
            parts,
            head: head.snapshot(),
            tombstones: self.tombstones.read().clone(),
            losses: self.losses.read().clone(),
        }
    }

    /// Fails if the index cannot take `new_series` (see
    /// [`PartitionIndex::check_room`]); a commit asks before its WAL write.
    pub fn check_room(&self, new_series: &[(u64, &[u8])]) -> Result<(), StorageError> {
        self.index.read().check_room(new_series)
    }

    /// Makes committed rows visible: registers new series, revives deleted
    /// series written again and appends rows to the head. Every row's series
    /// must be in the index or in `new_series` (WAL replay checks with
    /// [`Self::check_known`] first). Returns whether the open generation is
    /// full: the caller then seals it with [`Self::seal_rows`] once it has
    /// released the commit lock, so compression does not hold up commits.
    pub fn apply(
        &self,
        new_series: &[(u64, &[u8])],
        rows: &[Row],
        histograms: &[(u64, i64, Arc<Histogram>)],
        seq: u64,
        config: &crate::Config,
    ) -> Result<bool, StorageError> {
        let index = self.index.upgradable_read();
        // The usual commit adds no series, the day has no deletes and the
        // appender looked every local number up: the index is not touched.
        let index = if new_series.is_empty() && !index.has_deleted() {
            RwLockUpgradableReadGuard::downgrade(index)
        } else {
            let mut index = RwLockUpgradableReadGuard::upgrade(index);
            for (id, encoded) in new_series {
                // Checked here, where the WAL's bytes become index entries.
                let labels = EncodedLabels::new(encoded).map_err(|e| StorageError::Corrupt {
                    path: self.dir.clone(),
                    reason: format!("series {id:016x} has undecodable labels: {e}"),
                })?;
                index.insert(*id, labels)?;
            }
            let mut last = None;
            for r in rows {
                if last != Some(r.id) {
                    last = Some(r.id);
                    let local = index.local_of(r.id).ok_or_else(|| self.unknown_series(r.id))?;
                    index.revive(local);
                }
            }
            RwLockWriteGuard::downgrade(index)
        };
        if !config.keep_samples {
            // Agent mode: the WAL holds the samples until they are forwarded.
            self.last_write_ms.store(crate::engine::now_ms(), Ordering::Relaxed);
            return Ok(false);
        }
        // Rows of new series (and all rows in WAL replay) come without their local number.
        let mut locals = Vec::new();
        if rows.iter().any(|r| r.local == UNKNOWN_LOCAL) {
            locals.reserve(rows.len());
            let mut last = (u64::MAX, UNKNOWN_LOCAL);
            for r in rows {
                if r.local != UNKNOWN_LOCAL {
                    locals.push(r.local);
                    continue;
                }
                if last.1 == UNKNOWN_LOCAL || last.0 != r.id {
                    last = (r.id, index.local_of(r.id).ok_or_else(|| self.unknown_series(r.id))?);
                }
                locals.push(last.1);
            }
        }
        let seal_at = config.seal_rows(index.series_count());
        self.last_write_ms.store(crate::engine::now_ms(), Ordering::Relaxed);
        let mut head = self.head.lock();
        // Bodies first, under the head lock: a snapshot that sees a marker
        // finds its histogram.
        if !histograms.is_empty() {
            let mut store = self.histograms.write();
            for (id, t, h) in histograms {
                store.insert(*id, *t, h.clone());
            }
        }
        if locals.is_empty() {
            head.extend(seq, rows.iter().map(|r| (r.local, r.t, r.v)));
        } else {
            head.extend(seq, rows.iter().zip(locals).map(|(r, l)| (l, r.t, r.v)));
        }
        Ok(head.unsealed_len() >= seal_at)
    }

    /// Drops the rows (and histogram bodies) whose series is neither in the
    /// index nor in `new_series`, returning how many rows went: a WAL record
    /// naming series of an index segment that was quarantined. Their labels
    /// are lost, so their samples cannot be found again.
    pub fn retain_known(
        &self,
        new_series: &[(u64, &[u8])],
        rows: &mut Vec<Row>,
        histograms: &mut Vec<(u64, i64, Arc<Histogram>)>,
    ) -> usize {
        let index = self.index.read();
        let new: HashSet<u64> = new_series.iter().map(|(id, _)| *id).collect();
        let known = |id: u64| index.local_of(id).is_some() || new.contains(&id);
        if rows.iter().all(|r| known(r.id)) {
            return 0;
        }
        let before = rows.len();
        rows.retain(|r| known(r.id));
        histograms.retain(|(id, ..)| known(*id));
        before - rows.len()
    }

    fn unknown_series(&self, id: u64) -> StorageError {
        StorageError::Corrupt {
            path: self.dir.clone(),
            reason: format!("rows for series {id:016x} that the index does not know"),
        }
    }

    /// Compresses the head's rows into a new in-memory part. The rows stay
    /// visible to queries while they are compressed without the head lock;
    /// installing the part and dropping the rows is one step under it, so a
    /// snapshot sees each row exactly once. Returns once every row appended
    /// before the call is in a part.
    pub fn seal_rows(&self) -> Result<(), StorageError> {
        let _seal = self.seal.lock();
        let Some(sealing) = self.head.lock().begin_seal() else {
            return Ok(());
        };
        // On error the rows stay in the closed generations and the next seal retries them.
        let part = sealing.to_part(|locals| {
            let index = self.index.read();
            locals.iter().map(|&l| index.id_of(l)).collect()
        })?;
        let part = Arc::new(part);
        let mut head = self.head.lock();
        self.edit_parts(|parts| parts.memory.push(part));
        head.end_seal(&sealing);
        Ok(())
    }

    /// Replaces the part list with an edited copy; snapshots keep the old one.
    fn edit_parts(&self, edit: impl FnOnce(&mut PartSet)) {
        Self::edit(&mut self.parts.write(), edit);
    }

    /// [`Self::edit_parts`] for the low-priority merge thread: it takes the
    /// lock when it is free instead of queueing for it. A queued writer holds
    /// off new readers (snapshots, which hold the head meanwhile, so commits
    /// too) until it has run, and the scheduler runs that thread last.
    fn edit_parts_when_free(&self, edit: impl FnOnce(&mut PartSet)) {
        loop {
            if let Some(mut parts) = self.parts.try_write() {
                return Self::edit(&mut parts, edit);
            }
            std::thread::yield_now();
        }
    }

    fn edit(parts: &mut Arc<PartSet>, edit: impl FnOnce(&mut PartSet)) {
        let mut next = PartSet {
            disk: parts.disk.clone(),
            memory: parts.memory.clone(),
        };
        edit(&mut next);
        *parts = Arc::new(next);
    }

    /// Lock order everywhere: `head` before `parts` (sealing holds `head`
    /// while it edits `parts`), so the two are read in separate statements here.
    pub fn memory_bytes(&self) -> u64 {
        let rows = self.head.lock().memory_bytes() as u64;
        let parts: u64 = self.parts.read().memory.iter().map(|p| p.size_bytes()).sum();
        rows + parts + self.histograms.read().unflushed_bytes() as u64
    }

    /// Bytes of the partition's local files (parts in the bucket not counted).
    pub fn disk_bytes(&self) -> u64 {
        let parts: u64 = self
            .parts
            .read()
            .disk
            .iter()
            .filter(|p| p.path().is_some())
            .map(|p| p.size_bytes())
            .sum();
        let other: u64 = fs::read_dir(&self.dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter(|e| !e.file_name().to_string_lossy().ends_with(".cpart"))
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0);
        parts + other
    }

    /// Seals the labels of series added since the last seal, sharing those
    /// `earlier` (the partition of the closest earlier day) holds already.
    /// Lock order: a later day's index before an earlier day's.
    pub fn seal_labels(&self, earlier: Option<&Partition>) -> usize {
        let started = std::time::Instant::now();
        let mut index = self.index.write();
        let earlier_index = earlier.map(|p| p.index.read());
        let shared = index.seal_labels(earlier_index.as_deref());
        if shared > 0 {
            // Commits to this day wait while it runs: worth seeing once a day.
            tracing::debug!(
                day = %self.day,
                shared,
                elapsed_ms = started.elapsed().as_millis() as u64,
                "sealed labels, sharing the day before's"
            );
        }
        shared
    }

    /// Writes all in-memory parts as one disk part and persists new index
    /// entries, sealing their labels (see [`Self::seal_labels`]). Rows must
    /// have been sealed by the caller.
    pub fn flush(&self, index_seq: u64, earlier: Option<&Partition>) -> Result<(), StorageError> {
        let _rewrite = self.rewrite.lock();
        let memory = self.parts.read().memory.clone();
        // Index first: a part must never reference series the index lacks.
        if self.index.write().persist_new(&self.dir, index_seq)? {
            self.seal_labels(earlier);
        } else {
            // No new series since the last flush: the index has stopped
            // growing for now, so its growth slack is only memory.
            self.index.write().shrink_to_fit();
        }
        // Before the WAL that holds these bodies is truncated (the caller's next step).
        HistogramStore::flush(&self.histograms, &self.dir, index_seq)?;
        if memory.is_empty() {
            return Ok(());
        }
        let written = self.write_merged(&memory, &[])?;
        self.edit_parts(|parts| {
            parts.memory.retain(|p| !contains(&memory, p));
            parts.disk.extend(written);
        });
        Ok(())
    }

    pub fn memory_part_count(&self) -> usize {
        self.parts.read().memory.len()
    }

    /// Merges a run of adjacent in-memory parts when there are more than
    /// `max_parts` (picked as for disk parts: [`merge_run`]), so each
    /// sample is re-encoded a logarithmic, not linear, number of times.
    pub fn merge_memory_parts(&self, max_parts: usize, fan_in: usize) -> Result<bool, StorageError> {
        let _rewrite = self.rewrite.lock();
        let memory = self.parts.read().memory.clone();
        if memory.len() <= max_parts {
            return Ok(false);
        }
        let inputs = merge_run(&memory, fan_in);
        if inputs.len() < 2 {
            return Ok(false);
        }
        let tombs = self.tombstones.read().clone();
        let merged = Arc::new(merge_parts(inputs, &tombs, Vec::new(), BlockEncoding::Fast, &[])?.finish_in_memory()?);
        self.edit_parts(|parts| replace_run(&mut parts.memory, inputs, Some(merged)));
        Ok(true)
    }

    /// Merges some of the histogram files when there are too many (see
    /// [`HistogramStore::merge_files`]); whether it did.
    pub fn merge_histogram_files(&self) -> Result<bool, StorageError> {
        let _merge = self.disk_merge.lock();
        if !self.histograms.read().wants_merge() {
            return Ok(false);
        }
        let dead = |ids: &[u64]| {
            let index = self.index.read();
            let dead = |id: &u64| index.local_of(*id).is_none_or(|local| !index.live().contains(local));
            ids.iter().copied().filter(dead).collect()
        };
        if HistogramStore::merge_files(&self.histograms, &self.dir, dead, &self.quarantine)? {
            self.lost_histograms.store(true, Ordering::Relaxed);
        }
        Ok(true)
    }

    /// The disk parts after the last one in the bucket or with damaged
    /// blocks: those merges take. A damaged part is not merged, so its
    /// lost blocks stay known (and named in answers) rather than merged away.
    fn local_disk(disk: &[Arc<Part>]) -> &[Arc<Part>] {
        let after = disk
            .iter()
            .rposition(|p| p.object().is_some() || p.is_damaged())
            .map_or(0, |i| i + 1);
        &disk[after..]
    }

    /// Merges the adjacent local disk parts [`next_disk_merge`] picks, if
    /// any. Returns the bytes written.
    pub fn merge_disk_parts(&self, max_parts: usize, fan_in: usize, young_span: i64) -> Result<u64, StorageError> {
        let _merge = self.disk_merge.lock();
        let disk = Self::local_disk(&self.parts.read().disk).to_vec();
        let shapes: Vec<PartShape> = disk
            .iter()
            .map(|p| PartShape {
                bytes: p.size_bytes(),
                mint: p.meta().mint,
                maxt: p.meta().maxt,
            })
            .collect();
        let inputs = &disk[next_disk_merge(&shapes, max_parts, fan_in, young_span)];
        if inputs.len() < 2 {
            return Ok(0);
        }
        Ok(self.replace_disk_parts_unless_damaged(inputs)?.unwrap_or(0))
    }

    /// [`Self::replace_disk_parts`], except that a merge failing on a
    /// damaged input writes nothing (`None`): later merges leave that part
    /// out (see [`Self::local_disk`]).
    fn replace_disk_parts_unless_damaged(&self, inputs: &[Arc<Part>]) -> Result<Option<u64>, StorageError> {
        match self.replace_disk_parts(inputs, &[]) {
            Err(e) if inputs.iter().any(|p| p.is_damaged()) => {
                tracing::error!(day = %self.day, error = %e, "a merge met a damaged part, which is left unmerged");
                Ok(None)
            }
            replaced => replaced.map(Some),
        }
    }

    /// Reads every block of the local disk parts, and rewrites each part
    /// with damaged blocks without them, after recording what they held as
    /// losses (so answers go on naming it). Returns the losses.
    pub fn repair(&self) -> Result<Vec<Loss>, StorageError> {
        let _merge = self.disk_merge.lock();
        let disk = self.parts.read().disk.clone();
        let mut repaired = Vec::new();
        for part in disk.iter().filter(|p| p.path().is_some()) {
            part.find_damaged_blocks()?;
            let blocks = part.lost_blocks();
            let lost: Vec<Loss> = blocks
                .iter()
                .map(|b| Loss {
                    id: b.id,
                    mint: b.mint,
                    maxt: b.maxt,
                    samples: b.samples,
                })
                .collect();
            if lost.is_empty() {
                continue;
            }
            losses::append(&self.dir, &lost)?;
            {
                let mut known = self.losses.write();
                let mut all = (**known).clone();
                all.extend(&lost);
                *known = Arc::new(all);
            }
            self.drop_lost_blocks(part, &blocks)?;
            repaired.extend(lost);
        }
        Ok(repaired)
    }

    /// The blocks of local disk parts reads found damaged: each with its
    /// series' labels, for another copy of the samples to be found.
    pub fn damaged_blocks(&self) -> Vec<DamagedBlock> {
        let parts = self.parts.read().clone();
        let index = self.index.read();
        let mut out = Vec::new();
        for part in parts.disk.iter().filter(|p| p.is_damaged() && p.path().is_some()) {
            for b in part.lost_blocks() {
                let Some(local) = index.local_of(b.id) else { continue };
                out.push(DamagedBlock {
                    part: part.name().to_path_buf(),
                    labels: index.labels_of(local),
                    block: b,
                });
            }
        }
        out
    }

    /// Rewrites each damaged disk part whose every damaged block is among
    /// `restored` (their samples were written again) without those blocks.
    /// Returns how many blocks were dropped.
    pub fn drop_restored_blocks(&self, restored: &[DamagedBlock]) -> Result<usize, StorageError> {
        let _merge = self.disk_merge.lock();
        let disk = self.parts.read().disk.clone();
        let mut dropped = 0;
        for part in disk.iter().filter(|p| p.is_damaged() && p.path().is_some()) {
            let lost = part.lost_blocks();
            let all_restored = lost
                .iter()
                .all(|b| restored.iter().any(|r| r.part == part.name() && r.block == *b));
            if all_restored {
                self.drop_lost_blocks(part, &lost)?;
                dropped += lost.len();
            }
        }
        Ok(dropped)
    }

    /// Rewrites `part` alone without its damaged blocks `lost` (restored or
    /// recorded); a block found damaged since fails the rewrite. The caller
    /// holds `disk_merge`.
    fn drop_lost_blocks(&self, part: &Arc<Part>, lost: &[LostBlock]) -> Result<(), StorageError> {
        self.replace_disk_parts(std::slice::from_ref(part), lost)?;
        tracing::warn!(day = %self.day, part = %part.name().display(), "rewrote a part without its damaged blocks");
        Ok(())
    }

    /// Whether a read found a block of a disk part damaged.
    fn has_damaged_part(&self) -> bool {
        self.parts.read().disk.iter().any(|p| p.is_damaged())
    }

    /// Whether a histogram file of this partition was quarantined.
    pub fn lost_histograms(&self) -> bool {
        self.lost_histograms.load(Ordering::Relaxed)
    }

    /// Whether nothing was written to the partition for `idle_ms`.
    fn idle_for(&self, now_ms: i64, idle_ms: i64) -> bool {
        now_ms - self.last_write_ms.load(Ordering::Relaxed) >= idle_ms
    }

    /// Whether nothing was written for `idle_ms` and the local disk parts are
    /// several, or the disk parts hold deleted samples: then one full merge
    /// gives the best compression for good and reclaims the space of deletes.
    pub fn wants_idle_merge(&self, idle_ms: i64) -> bool {
        let idle = self.idle_for(crate::engine::now_ms(), idle_ms);
        // Deletes not yet merged away also call for a full merge: that is
        // how their space is reclaimed when no other merge touches the parts.
        // A damaged part is never rewritten, so deletes stay unapplied there.
        let unapplied = self.newest_tombstone_seq() > self.applied_tombstone_seq.load(Ordering::Relaxed)
            && !self.has_damaged_part();
        let parts = self.parts.read();
        let several = Self::local_disk(&parts.disk).len() > 1;
        idle && parts.memory.is_empty() && (several || (unapplied && !parts.disk.is_empty()))
    }

    /// Rewrites the local disk parts into one, or, when deletes are not yet
    /// applied, every disk part (the bucket's too), dropping deleted samples.
    pub fn compact_all(&self) -> Result<u64, StorageError> {
        let _merge = self.disk_merge.lock();
        // Read before the parts: a delete flushes the data it hides before
        // adding its tombstone, so every part that tombstone hides samples
        // of is in the list below. A delete racing the merge only makes this lower.
        let newest_tombstone = self.newest_tombstone_seq();
        let applied = self.applied_tombstone_seq.load(Ordering::Relaxed);
        let disk = self.parts.read().disk.clone();
        // A damaged part is never rewritten, so deletes stay unapplied there.
        let apply_deletes = newest_tombstone > applied && !disk.iter().any(|p| p.is_damaged());
        let inputs = if apply_deletes {
            &disk[..]
        } else {
            Self::local_disk(&disk)
        };
        if inputs.is_empty() || (inputs.len() == 1 && !apply_deletes) {
            return Ok(0);
        }
        // A damaged input left out: the next round compacts the rest.
        let Some(bytes) = self.replace_disk_parts_unless_damaged(inputs)? else {
            return Ok(0);
        };
        if apply_deletes {
            tombstones::store_applied(&self.dir, newest_tombstone)?;
            self.applied_tombstone_seq.store(newest_tombstone, Ordering::Relaxed);
        }
        Ok(bytes)
    }

    fn newest_tombstone_seq(&self) -> u64 {
        self.tombstones.read().iter().map(|t| t.seq).max().unwrap_or(0)
    }

    /// Merges `inputs`, a run of disk parts, and puts the output in their
    /// place. When some are in the bucket the output is uploaded before
    /// they are removed from it: the bucket never lacks what it held.
    fn replace_disk_parts(&self, inputs: &[Arc<Part>], dropping: &[LostBlock]) -> Result<u64, StorageError> {
        let mut written = self.write_merged(inputs, dropping)?;
        let bytes = written.as_ref().map_or(0, |p| p.size_bytes());
        let mut output_key = None;
        if let (Some(remote), Some(local)) = (&self.remote, &written)
            && inputs.iter().any(|p| p.object().is_some())
        {
            let path = local.path().map(Path::to_path_buf);
            // The series the output names, some maybe only in local parts so far.
            let uploaded = self
                .upload_kept_files(remote)
                .and_then(|()| self.upload_part(remote, local));
            let uploaded = uploaded.inspect_err(|_| {
                if let Some(path) = &path {
                    let _ = fs::remove_file(path);
                }
            })?;
            output_key = uploaded.object().map(|o| o.key.clone());
            written = Some(uploaded);
            if let Some(path) = path {
                fs::remove_file(&path).map_err(StorageError::io("remove uploaded part", &path))?;
            }
        }
        let output = written.as_ref().and_then(|w| w.path().map(Path::to_path_buf));
        self.edit_parts_when_free(|parts| replace_run(&mut parts.disk, inputs, written));
        for p in inputs {
            // Rewriting a single part keeps its name: the rename (or the
            // upload) already replaced it.
            if let Some(path) = p.path().filter(|&path| Some(path) != output.as_deref()) {
                fs::remove_file(path).map_err(StorageError::io("remove merged part", path))?;
            }
            if let (Some(object), Some(remote)) = (p.object(), &self.remote)
                && Some(&object.key) != output_key.as_ref()
            {
                remote.bucket.delete(&object.key)?;
            }
        }
        Ok(bytes)
    }

    /// Merges `inputs` into a new part file (tmp, fsync, rename), leaving
    /// out the damaged blocks of `dropping`; `None` if nothing survived the
    /// merge (everything deleted).
    fn write_merged(&self, inputs: &[Arc<Part>], dropping: &[LostBlock]) -> Result<Option<Arc<Part>>, StorageError> {
        let min_seq = inputs.iter().map(|p| p.meta().min_seq).min().unwrap_or(0);
        let max_seq = inputs.iter().map(|p| p.meta().max_seq).max().unwrap_or(0);
        let path = self.dir.join(part_file_name(min_seq, max_seq));
        let tmp = path.with_extension("tmp");
        let written = (|| {
            let file = fs::File::create(&tmp).map_err(StorageError::io("create", &tmp))?;
            let tombs = self.tombstones.read().clone();
            let (writer, meta) = merge_parts(
                inputs,
                &tombs,
                BufWriter::with_capacity(1 << 20, file),
                BlockEncoding::Compact,
                dropping,
            )?
            .finish()
            .map_err(StorageError::io("write", &tmp))?;
            let file = writer
                .into_inner()
                .map_err(|e| StorageError::io("write", &tmp)(e.into_error()))?;
            if meta.blocks > 0 {
                file.sync_all().map_err(StorageError::io("sync", &tmp))?;
                fs::rename(&tmp, &path).map_err(StorageError::io("rename", &tmp))?;
            }
            Ok(meta.blocks > 0)
        })();
        // A failed attempt (a full disk) or an empty result leaves nothing behind.
        if !matches!(written, Ok(true)) {
            let _ = fs::remove_file(&tmp);
        }
        if !written? {
            return Ok(None);
        }
        crate::wal::sync_dir(&self.dir)?;
        Ok(Some(Arc::new(Part::open(&path)?)))
    }

    /// Records deletions (durably) and hides series left without samples.
    pub fn delete(&self, ids: &[u64], mint: i64, maxt: i64, seq: u64) -> Result<(), StorageError> {
        let (mint, maxt) = (mint.max(self.day.mint()), maxt.min(self.day.maxt()));
        if ids.is_empty() || mint > maxt {
            return Ok(());
        }
        let new: Vec<Tombstone> = ids.iter().map(|&id| Tombstone { seq, id, mint, maxt }).collect();
        tombstones::append(&self.dir, &new)?;
        {
            let mut t = self.tombstones.write();
            let mut all = (**t).clone();
            all.extend(new);
            *t = Arc::new(all);
        }
        self.update_liveness(ids.iter().copied().collect())
    }

    /// Marks as deleted those of `ids` with no visible sample left in the
    /// parts. A series whose blocks cannot all be read stays live.
    fn update_liveness(&self, ids: BTreeSet<u64>) -> Result<(), StorageError> {
        let parts = self.parts.read().clone();
        let all: Vec<Arc<Part>> = parts.all().cloned().collect();
        let tombs = self.tombstones.read().clone();
        let by_id = tombstones_by_id(&tombs);
        // A set iterates in ascending id order, as the cursors need.
        let mut cursors: Vec<_> = all.iter().map(|p| p.block_cursor()).collect();
        for id in ids {
            // About one block per part.
            let mut sources = Vec::with_capacity(all.len());
            sources_of(&all, &mut cursors, id, i64::MIN, i64::MAX, &by_id, &mut sources);
            let mut reader = SeriesReader::new(sources, i64::MIN, i64::MAX);
            let has_samples = match reader.has_samples() {
                // A series with a damaged block stays listed, so answers
                // that select it say what is lost.
                Err(e) if all.iter().any(|p| p.is_damaged()) => {
                    tracing::error!(day = %self.day, error = %e, "reading deleted series met a damaged part");
                    true
                }
                has_samples => has_samples?,
            };
            if !has_samples {
                let mut index = self.index.write();
                if let Some(local) = index.local_of(id) {
                    index.mark_deleted(local);
                }
            }
        }
        Ok(())
    }

    /// Puts a consistent copy of the partition's files in `dest`: immutable
    /// files (parts, index segments, histogram files) hard-linked, the others
    /// (tombstones, which grow in place) copied. Flushes, merges and removal
    /// wait meanwhile, so no file is half-written or about to vanish; the
    /// caller holds the engine's flush lock, so no index segment appears.
    /// Parts only in the bucket stay there (the copy lists them by name).
    pub fn snapshot_into(&self, dest: &Path) -> Result<(), StorageError> {
        let _rewrite = self.rewrite.lock();
        let _merge = self.disk_merge.lock();
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            // Dropped past retention before the locks were taken.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(StorageError::io("list", &self.dir)(e)),
        };
        fs::create_dir_all(dest).map_err(StorageError::io("create", dest))?;
        for entry in entries {
            let entry = entry.map_err(StorageError::io("list", &self.dir))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.ends_with(".tmp") || !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let (from, to) = (entry.path(), dest.join(name));
            if is_immutable_file(name) {
                fs::hard_link(&from, &to).map_err(StorageError::io("hard-link", &from))?;
            } else {
                fs::copy(&from, &to).map_err(StorageError::io("copy", &from))?;
            }
        }
        crate::wal::sync_dir(dest)
    }

    /// Deletes the partition's directory and its objects in the bucket once
    /// no flush or merge writes into it; one starting later fails to create
    /// its file, and its partition is no longer listed.
    pub fn remove(&self) -> Result<(), StorageError> {
        let _rewrite = self.rewrite.lock();
        let _merge = self.disk_merge.lock();
        self.delete_objects()?;
        fs::remove_dir_all(&self.dir).map_err(StorageError::io("remove partition", &self.dir))
    }
}

/// Whether a partition file never changes once renamed into place (a
/// snapshot may link it rather than copy it).
fn is_immutable_file(name: &str) -> bool {
    [".cpart", ".cidx", ".chist"].iter().any(|ext| name.ends_with(ext))
}

/// The adjacent run of 2 to `fan_in` parts to merge: the one whose bytes are
/// the largest multiple of its biggest part's (parts of about the same size;
/// the fewest bytes among equals). Each merge then grows a part about
/// `fan_in` times, so a sample is re-encoded a logarithmic number of times,
/// and a big old part is merged again only once others have grown to its
/// size (tiered merging, as VictoriaMetrics picks its merges).
fn merge_run(parts: &[Arc<Part>], fan_in: usize) -> &[Arc<Part>] {
    let sizes: Vec<u64> = parts.iter().map(|p| p.size_bytes()).collect();
    &parts[merge_run_of_sizes(&sizes, fan_in)]
}

/// [`merge_run`] over the parts' sizes; empty when there are fewer than 2
/// parts or `fan_in` is below 2.
fn merge_run_of_sizes(sizes: &[u64], fan_in: usize) -> std::ops::Range<usize> {
    // (start, width, sum, max); the best so far.
    let mut best: Option<(usize, usize, u64, u64)> = None;
    for width in 2..=fan_in.min(sizes.len()) {
        for start in 0..=sizes.len() - width {
            let run = sizes[start..start + width].iter().map(|&b| b.max(1));
            let (sum, max) = run.fold((0u64, 0u64), |(s, m), b| (s.saturating_add(b), m.max(b)));
            let better = best.is_none_or(|(_, _, best_sum, best_max)| {
                // sum / max against best_sum / best_max, exactly.
                let (this, that) = (
                    u128::from(sum) * u128::from(best_max),
                    u128::from(best_sum) * u128::from(max),
                );
                this > that || (this == that && sum < best_sum)
            });
            if better {
                best = Some((start, width, sum, max));
            }
        }
    }
    best.map_or(0..0, |(start, width, _, _)| start..start + width)
}

/// What picking a disk merge looks at of a part: its bytes and the times of
/// its first and last samples.
#[derive(Debug, Clone, Copy)]
struct PartShape {
    bytes: u64,
    mint: i64,
    maxt: i64,
}

/// The adjacent disk parts to merge next, of `parts` in write order: with
/// more than `max_parts`, the run [`merge_run`] picks; otherwise the two
/// newest when together they hold at most `young_span` ms of samples. During
/// live ingestion a flush part a minute would otherwise leave a select over
/// the last minutes one block per series to find and decode in each of
/// them; merged as they come, those minutes lie in one or two parts. A
/// backfill's flush parts span more and wait for the size rule. Empty when
/// nothing is to be merged.
fn next_disk_merge(parts: &[PartShape], max_parts: usize, fan_in: usize, young_span: i64) -> std::ops::Range<usize> {
    if parts.len() > max_parts {
        let sizes: Vec<u64> = parts.iter().map(|p| p.bytes).collect();
        return merge_run_of_sizes(&sizes, fan_in);
    }
    match parts {
        [.., older, newest]
            if newest.maxt.max(older.maxt).saturating_sub(newest.mint.min(older.mint)) <= young_span =>
        {
            parts.len() - 2..parts.len()
        }
        _ => 0..0,
    }
}

fn contains(list: &[Arc<Part>], part: &Arc<Part>) -> bool {
    list.iter().any(|p| Arc::ptr_eq(p, part))
}

/// Replaces the adjacent run `inputs` of `list` with `merged`, keeping the
/// sequence order of the list.
fn replace_run(list: &mut Vec<Arc<Part>>, inputs: &[Arc<Part>], merged: Option<Arc<Part>>) {
    let at = inputs
        .first()
        .and_then(|first| list.iter().position(|p| Arc::ptr_eq(p, first)));
    list.retain(|p| !contains(inputs, p));
    if let Some(m) = merged {
        list.insert(at.unwrap_or(list.len()).min(list.len()), m);
    }
}

pub fn tombstones_by_id(tombs: &[Tombstone]) -> HashMap<u64, Vec<&Tombstone>> {
    let mut m: HashMap<u64, Vec<&Tombstone>> = HashMap::new();
    for t in tombs {
        m.entry(t.id).or_default().push(t);
    }
    m
}

/// Time ranges of series `id` deleted after a part with `max_seq` was written:
/// the tombstones that hide samples of that part.
fn deleted_ranges(tombs: &HashMap<u64, Vec<&Tombstone>>, id: u64, max_seq: u64) -> Vec<Deleted> {
    tombs
        .get(&id)
        .map(|ts| {
            ts.iter()
                .filter(|t| t.seq >= max_seq)
                .map(|t| (t.mint, t.maxt))
                .collect()
        })
        .unwrap_or_default()
}

/// Appends to `out` the blocks of series `id` in `parts` overlapping
/// `[mint, maxt]`, each with the deletions that apply to it (tombstones
/// written after the part's data). `cursors` (one per part, from
/// [`Part::block_cursor`]) carry each part's position from one call to the
/// next: call in ascending id order.
pub fn sources_of(
    parts: &[Arc<Part>],
    cursors: &mut [BlockCursor<'_>],
    id: u64,
    mint: i64,
    maxt: i64,
    tombs: &HashMap<u64, Vec<&Tombstone>>,
    out: &mut Vec<Ranked>,
) {
    for (part, cursor) in parts.iter().zip(cursors) {
        let max_seq = part.meta().max_seq;
        // Hashing the id is skipped in the usual case of a day without deletes.
        let deleted = if tombs.is_empty() {
            Vec::new()
        } else {
            deleted_ranges(tombs, id, max_seq)
        };
        cursor.series(id, |block| {
            if block.overlaps(mint, maxt) && !deleted.iter().any(|&(lo, hi)| lo <= block.mint && block.maxt <= hi) {
                out.push(Ranked::block(part, block, deleted.clone()));
            }
        });
    }
}

/// [`sources_of`] for a series whose newest sample in `[mint, maxt]` is all
/// that is wanted, in a partition without deletions: `parts` come ordered by
/// their newest sample, latest first, and the search stops at the first part
/// ending before the newest sample among `out` (which may hold the series'
/// unflushed rows) when that sample is by `maxt`. A part not searched holds
/// no sample of the series as new as it, so [`keep_newest_source`] keeps
/// the same source as over all of them.
///
/// [`keep_newest_source`]: crate::series_reader::keep_newest_source
pub fn newest_sources_of(
    parts: &[Arc<Part>],
    cursors: &mut [BlockCursor<'_>],
    id: u64,
    mint: i64,
    maxt: i64,
    out: &mut Vec<Ranked>,
) {
    let mut newest = out.iter().map(|s| s.maxt).max();
    for (part, cursor) in parts.iter().zip(cursors) {
        if newest.is_some_and(|t| t <= maxt && part.meta().maxt < t) {
            return;
        }
        cursor.series(id, |block| {
            if block.overlaps(mint, maxt) {
                newest = newest.max(Some(block.maxt));
                out.push(Ranked::block(part, block, Vec::new()));
            }
        });
    }
}

/// Merges parts (given in write order) into one, newest write winning per
/// timestamp and deleted samples dropped; the caller finishes the writer.
pub fn merge_parts<W: Write>(
    inputs: &[Arc<Part>],
    tombs: &[Tombstone],
    out: W,
    encoding: BlockEncoding,
    dropping: &[LostBlock],
) -> Result<PartWriter<W>, StorageError> {
    let min_seq = inputs.iter().map(|p| p.meta().min_seq).min().unwrap_or(0);
    let max_seq = inputs.iter().map(|p| p.meta().max_seq).max().unwrap_or(0);
    let io = |e| StorageError::io("write", "merged part")(e);
    let mut w = PartWriter::new(out, min_seq, max_seq)
        .map_err(io)?
        .with_encoding(encoding);
    let by_id = tombstones_by_id(tombs);
    // One cursor per input walks its block index in (id, time) order, so the
    // merge reads every index entry once instead of searching per series.
    let mut cursors: Vec<_> = inputs.iter().map(|p| p.blocks().peekable()).collect();
    let mut reads = SequentialReads::new(inputs.len());
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    loop {
        let next_id = cursors.iter_mut().filter_map(|c| c.peek().map(|b| b.id)).min();
        let Some(id) = next_id else { break };
        let mut sources = Vec::new();
        for (input, (part, cursor)) in inputs.iter().zip(cursors.iter_mut()).enumerate() {
            let max_seq = part.meta().max_seq;
            let deleted = deleted_ranges(&by_id, id, max_seq);
            while let Some(block) = cursor.next_if(|b| b.id == id) {
                // A block found damaged is left out only when the caller
                // restored or recorded it; any other fails the merge.
                if part.lost_block(&block).is_some_and(|lost| dropping.contains(&lost)) {
                    continue;
                }
                let mut source = Ranked::block(part, block, deleted.clone());
                reads.share(input, &mut source);
                sources.push(source);
            }
        }
        let mut reader = SeriesReader::new(sources, i64::MIN, i64::MAX);
        let range = reader.read_into(&mut ts, &mut vs)?;
        if !range.is_empty() {
            w.add_series(id, &ts[range.clone()], &vs[range]).map_err(io)?;
        }
    }
    Ok(w)
}

/// The tombstones of partition `dir`. Records that fail their checksum are
/// left out (a deletion each, whose samples show again) and the others
/// kept: quarantining the file would undo every deletion in it. The file
/// goes to the quarantine as it was and is rewritten with the records kept.
fn load_tombstones(dir: &Path, quarantine: &Quarantine) -> Result<Vec<Tombstone>, StorageError> {
    let (tombs, damaged) = tombstones::load_lenient(dir)?;
    if let Some(reason) = damaged {
        let path = dir.join(tombstones::FILE);
        quarantine.copy(&path, FileKind::Tombstones, &reason)?;
        tombstones::rewrite(dir, &tombs)?;
    }
    Ok(tombs)
}

#[cfg(test)]
mod merge_policy_tests {
    use super::{PartShape, merge_run_of_sizes, next_disk_merge};

    /// Parts of `minutes` each, sized as flush parts merge: a fixed cost per
    /// series plus a little per sample.
    fn bytes(minutes: u64) -> u64 {
        if minutes == 1 { 19 } else { 14 + minutes * 2 }
    }

    #[test]
    fn similar_sizes_merge_and_a_big_part_waits() {
        assert_eq!(merge_run_of_sizes(&[100, 10, 10, 10, 10], 4), 1..5);
        assert_eq!(merge_run_of_sizes(&[100, 40, 40, 40, 10], 4), 1..5);
        assert_eq!(merge_run_of_sizes(&[100, 40, 40, 40, 10], 3), 1..4);
        assert_eq!(merge_run_of_sizes(&[10, 10], 4), 0..2);
        assert_eq!(merge_run_of_sizes(&[10], 4), 0..0);
        assert_eq!(merge_run_of_sizes(&[0, 0, u64::MAX, u64::MAX], 4), 0..2);
    }

    /// A part a minute for a day, merged whenever there are more than 5, at
    /// most 5 at a time: each minute is re-encoded a logarithmic number of
    /// times (the run of 6 with the fewest bytes, as merges were picked
    /// before, re-encoded a day's minutes 140 times each: as the day grew,
    /// every window of 6 took one of the big parts along).
    #[test]
    fn a_stream_of_flush_parts_is_merged_a_logarithmic_number_of_times() {
        let mut parts: Vec<u64> = Vec::new(); // minutes per part
        let mut reencoded = 0u64;
        for _ in 0..24 * 60 {
            parts.push(1);
            while parts.len() > 5 {
                let sizes: Vec<u64> = parts.iter().map(|&m| bytes(m)).collect();
                let run = merge_run_of_sizes(&sizes, 5);
                assert!(run.len() >= 2);
                let merged: u64 = parts[run.clone()].iter().sum();
                reencoded += merged;
                parts.splice(run, [merged]);
            }
            assert!(parts.len() <= 5);
        }
        assert_eq!(parts.iter().sum::<u64>(), 24 * 60);
        let per_minute = reencoded as f64 / (24.0 * 60.0);
        assert!(per_minute < 7.5, "each minute re-encoded {per_minute:.1} times");
    }

    fn shape(bytes: u64, mint: i64, maxt: i64) -> PartShape {
        PartShape { bytes, mint, maxt }
    }

    #[test]
    fn the_two_newest_parts_merge_while_they_span_at_most_the_young_span() {
        let five = 300;
        let two = |older, newest| next_disk_merge(&[shape(9, -900, -600), older, newest], 5, 5, five);
        assert_eq!(two(shape(1, 0, 100), shape(1, 120, 300)), 1..3);
        assert_eq!(two(shape(1, 0, 100), shape(1, 120, 301)), 0..0);
        assert_eq!(
            two(shape(1, 500, 550), shape(1, -10, 560)),
            0..0,
            "a late sample widens the newest part"
        );
        assert_eq!(next_disk_merge(&[shape(1, 0, 0)], 5, 5, five), 0..0, "one part");
        let many: Vec<PartShape> = (0..6).map(|i| shape(10, i * 60, i * 60 + 45)).collect();
        assert_eq!(
            next_disk_merge(&many, 5, 5, five),
            merge_run_of_sizes(&[10; 6], 5),
            "more than max_parts: by size"
        );
    }

    /// Live ingestion for a day: a flush part a minute (samples from 0 to
    /// 45 s into it), merged as the merge thread does, one merge a round,
    /// with and without a young span of 10 minutes. With it the last five
    /// minutes lie in at most two parts (five without), and each minute is
    /// re-encoded about two times more.
    #[test]
    fn live_flush_parts_leave_the_last_five_minutes_in_two_parts() {
        const MINUTE: i64 = 60;
        let day = |young_span: i64| {
            let mut parts: Vec<(PartShape, u64)> = Vec::new(); // and its minutes
            let (mut reencoded, mut most_in_window) = (0u64, 0);
            for m in 0..24 * 60 {
                parts.push((shape(bytes(1), m * MINUTE, m * MINUTE + 45), 1));
                loop {
                    let shapes: Vec<PartShape> = parts.iter().map(|p| p.0).collect();
                    let run = next_disk_merge(&shapes, 5, 5, young_span);
                    if run.len() < 2 {
                        break;
                    }
                    let inputs = &parts[run.clone()];
                    let minutes: u64 = inputs.iter().map(|p| p.1).sum();
                    let mint = inputs.iter().map(|p| p.0.mint).min().unwrap();
                    let maxt = inputs.iter().map(|p| p.0.maxt).max().unwrap();
                    reencoded += minutes;
                    parts.splice(run, [(shape(bytes(minutes), mint, maxt), minutes)]);
                }
                let now = m * MINUTE + 45;
                let in_window = parts.iter().filter(|p| p.0.maxt >= now - 5 * MINUTE).count();
                most_in_window = most_in_window.max(in_window);
            }
            assert_eq!(parts.iter().map(|p| p.1).sum::<u64>(), 24 * 60);
            (most_in_window, reencoded as f64 / (24.0 * 60.0))
        };
        let (young_window, young_reencoded) = day(10 * MINUTE);
        let (sized_window, sized_reencoded) = day(-1);
        assert_eq!(
            (young_window, sized_window),
            (2, 5),
            "parts holding the last five minutes"
        );
        assert!(
            young_reencoded < sized_reencoded + 2.5,
            "each minute re-encoded {young_reencoded:.1} times against {sized_reencoded:.1}"
        );
    }
}
