//! A partition's share of the bucket: its files there, under
//! `[tenants/<id>/]partitions/<day>/` with the names they have on disk
//! (docs/format/bucket.md).
//!
//! A day is uploaded once it is over and settled: no writes for the idle
//! merge time, nothing in memory, its disk parts merged into one. Its index
//! segments and tombstones go first (a part must never reach the bucket
//! before the series it names), then the part; the local file is deleted
//! once the bucket's copy is opened, read back and checked. From then on
//! the bucket is the part's only copy and queries read it by range through
//! the cache. Index segments and tombstones also stay on disk: the index is
//! loaded whole when the partition opens.
//!
//! Uploaded parts come first in a partition's disk list (older sequence
//! numbers): merges and compactions take only the local parts after them,
//! except a compaction that applies deletes, which rewrites the bucket's
//! parts too and uploads its output before removing them.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::Path;
use std::sync::Arc;

use cairn_bucket::{Bucket, ObjectInfo};
use cairn_storage::StorageError;

use super::{Partition, parse_part_name};
use crate::day::Day;
use crate::part::Part;
use crate::tombstones::FILE as TOMBSTONES;

/// Where the partitions live in the bucket.
pub const PARTITIONS: &str = "partitions";

/// The bucket, where in it an engine's partitions are, and what this
/// process may do to it.
pub struct Remote {
    pub bucket: Arc<Bucket>,
    /// Before every key of this engine's: empty, or `tenants/<id>/`.
    pub prefix: String,
    /// False for a `--storage.read-only` instance: it never writes or
    /// deletes an object.
    pub writable: bool,
}

impl Remote {
    /// The key of a partition's file `name`.
    pub fn key(&self, day: Day, name: &str) -> String {
        format!("{}{PARTITIONS}/{day}/{name}", self.prefix)
    }

    /// Deletes every object of `day` (retention).
    pub fn delete_day(&self, day: Day) -> Result<(), StorageError> {
        for object in self.bucket.list(&format!("{}{PARTITIONS}/{day}", self.prefix))? {
            self.bucket.delete(&object.key)?;
        }
        Ok(())
    }

    /// Every partition's objects, by day; keys that are not a partition's
    /// file are left out.
    pub fn list_days(&self) -> Result<BTreeMap<Day, Vec<ObjectInfo>>, StorageError> {
        let mut days: BTreeMap<Day, Vec<ObjectInfo>> = BTreeMap::new();
        let dir = format!("{}{PARTITIONS}", self.prefix);
        for object in self.bucket.list(&dir)? {
            let Some(rest) = object.key.strip_prefix(&dir) else {
                continue;
            };
            let mut parts = rest.trim_start_matches('/').split('/');
            let (Some(day), Some(_), None) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            if let Some(day) = Day::parse(day) {
                days.entry(day).or_default().push(object);
            }
        }
        Ok(days)
    }
}

/// The file name of an object of a partition: the last part of its key.
pub fn file_name(object: &ObjectInfo) -> &str {
    object.key.rsplit('/').next().unwrap_or_default()
}

/// Whether a file of a partition directory is one the bucket keeps beside
/// the parts: index segments, tombstones and histogram bodies.
pub fn is_kept_file(name: &str) -> bool {
    crate::index::segment_seq(name).is_some()
        || name == TOMBSTONES
        || name == crate::tombstones::APPLIED_FILE
        || crate::histograms::file_seq(name).is_some()
}

/// Downloads into `dir` the index segments and tombstones of `objects` that
/// it lacks (a new disk, or a read-only instance), and returns what the
/// bucket holds of those files: their names and [`fingerprint`]s,
/// where known (a file found on disk too is uploaded again once).
pub(super) fn fetch_kept_files(
    bucket: &Bucket,
    dir: &Path,
    objects: &[ObjectInfo],
) -> Result<HashMap<String, u64>, StorageError> {
    let mut uploaded = HashMap::new();
    for object in objects {
        let name = file_name(object);
        if !is_kept_file(name) {
            continue;
        }
        let path = dir.join(name);
        let local_len = fs::metadata(&path).map(|m| m.len()).ok();
        // Index segments never change once written; a tombstone log only
        // grows, so one of another length is behind (a read-only instance's)
        // or ahead (a writer's, uploaded again once).
        let behind = name == TOMBSTONES && local_len.is_some_and(|len| len < object.size);
        if local_len.is_some() && !behind {
            if crate::index::segment_seq(name).is_some() {
                uploaded.insert(name.to_string(), 0);
            }
            continue;
        }
        download(bucket, &object.key, &path)?;
        uploaded.insert(name.to_string(), fingerprint(&path)?);
    }
    Ok(uploaded)
}

/// Writes the object `key` to `path` atomically, as it arrives: a merged
/// histogram file can be larger than memory should hold at once.
fn download(bucket: &Bucket, key: &str, path: &Path) -> Result<(), StorageError> {
    crate::index::place_atomically(path, |tmp| {
        bucket.download(key, tmp)?;
        fs::File::open(tmp)
            .and_then(|f| f.sync_all())
            .map_err(StorageError::io("sync", tmp))
    })
}

/// What tells one version of a kept file from another without reading it:
/// each is written whole under a new inode (a rename) or, the tombstone
/// log, only appended to, so inode, length and modification time change
/// with the contents.
fn fingerprint(path: &Path) -> Result<u64, StorageError> {
    use std::os::unix::fs::MetadataExt;
    let m = fs::metadata(path).map_err(StorageError::io("stat", path))?;
    let mut bytes = [0u8; 32];
    for (chunk, v) in bytes
        .chunks_exact_mut(8)
        .zip([m.ino(), m.size(), m.mtime() as u64, m.mtime_nsec() as u64])
    {
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    Ok(xxhash_rust::xxh3::xxh3_64(&bytes))
}

/// What one upload round did for a partition.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Uploaded {
    pub parts: u64,
    pub bytes: u64,
}

impl Partition {
    fn writable_remote(&self) -> Option<&Remote> {
        self.remote.as_deref().filter(|r| r.writable)
    }

    /// Whether the day is over and nothing was written to it for `idle_ms`,
    /// so its disk parts are what it will hold: the time to upload them.
    pub fn is_settled(&self, now_ms: i64, idle_ms: i64) -> bool {
        self.day.maxt() < now_ms && self.idle_for(now_ms, idle_ms)
    }

    /// The local disk parts waiting for upload (count, bytes): those of a
    /// day that is over. Zero without a writable bucket.
    pub fn upload_backlog(&self, now_ms: i64) -> (u64, u64) {
        if self.writable_remote().is_none() || self.day.maxt() >= now_ms {
            return (0, 0);
        }
        let parts = self.parts.read();
        let local = parts.disk.iter().filter(|p| p.path().is_some());
        local.fold((0, 0), |(n, b), p| (n + 1, b + p.size_bytes()))
    }

    /// Uploads what the bucket lacks of a settled partition: index segments
    /// and tombstones that changed, then its one local disk part (a day
    /// with several waits for the compaction that merges them). Small files
    /// of a partition whose parts are all uploaded are kept current too
    /// (deletes of old data).
    pub fn upload(&self, now_ms: i64, idle_ms: i64) -> Result<Uploaded, StorageError> {
        let Some(remote) = self.writable_remote() else {
            return Ok(Uploaded::default());
        };
        let _upload = self.upload.lock();
        if !self.is_settled(now_ms, idle_ms) || self.head_rows() > 0 {
            return Ok(Uploaded::default());
        }
        let (local, memory_empty) = {
            let parts = self.parts.read();
            (Self::local_disk(&parts.disk).to_vec(), parts.memory.is_empty())
        };
        if !memory_empty || local.len() > 1 {
            return Ok(Uploaded::default());
        }
        self.upload_kept_files(remote)?;
        let Some(part) = local.first() else {
            return Ok(Uploaded::default());
        };
        let uploaded = self.upload_part(remote, part)?;
        let bytes = uploaded.size_bytes();
        let installed = {
            let _merge = self.disk_merge.lock();
            let mut installed = false;
            self.edit_parts_when_free(|parts| {
                if let Some(slot) = parts.disk.iter_mut().find(|p| Arc::ptr_eq(p, part)) {
                    *slot = uploaded.clone();
                    installed = true;
                }
            });
            installed
        };
        if !installed {
            // Merged away meanwhile: its output is uploaded in its turn.
            if let Some(object) = uploaded.object() {
                remote.bucket.delete(&object.key)?;
            }
            return Ok(Uploaded::default());
        }
        if let Some(path) = part.path() {
            fs::remove_file(path).map_err(StorageError::io("remove uploaded part", path))?;
        }
        Ok(Uploaded { parts: 1, bytes })
    }

    /// Uploads `part` (a local file) and opens the bucket's copy, which
    /// reads back its footer and index and checks them.
    pub(super) fn upload_part(&self, remote: &Remote, part: &Part) -> Result<Arc<Part>, StorageError> {
        let path = part
            .path()
            .ok_or_else(|| StorageError::InvalidArgument("only a part file is uploaded".into()))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let key = remote.key(self.day, &name);
        let object = remote.bucket.put_file(&key, path)?;
        let copy = Part::open_object(remote.bucket.clone(), object)?;
        if copy.meta() != part.meta() || copy.size_bytes() != part.size_bytes() {
            return Err(StorageError::Corrupt {
                path: remote.bucket.url_of(&key),
                reason: "the uploaded part differs from the local file".into(),
            });
        }
        Ok(Arc::new(copy))
    }

    /// Uploads the index segments and tombstones the bucket does not hold
    /// as they are on disk.
    pub(super) fn upload_kept_files(&self, remote: &Remote) -> Result<(), StorageError> {
        let mut names: Vec<String> = fs::read_dir(&self.dir)
            .map_err(StorageError::io("list", &self.dir))?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|name| is_kept_file(name))
            .collect();
        // Index segments first, in order: tombstones name their series.
        names.sort_by_key(|n| crate::index::segment_seq(n).is_none());
        for name in names {
            let known = self.uploaded.lock().get(&name).copied();
            if known.is_some() && crate::index::segment_seq(&name).is_some() {
                continue;
            }
            let path = self.dir.join(&name);
            let print = fingerprint(&path)?;
            if known == Some(print) {
                continue;
            }
            remote.bucket.put_file(&remote.key(self.day, &name), &path)?;
            self.uploaded.lock().insert(name, print);
        }
        Ok(())
    }

    /// The partition's parts that the bucket holds.
    pub fn uploaded_parts(&self) -> Vec<ObjectInfo> {
        self.parts
            .read()
            .disk
            .iter()
            .filter_map(|p| p.object().cloned())
            .collect()
    }

    /// The least sequence number of the partition's local parts (those the
    /// bucket does not hold yet), if it has any.
    pub fn local_min_seq(&self) -> Option<u64> {
        self.parts
            .read()
            .disk
            .iter()
            .filter(|p| p.object().is_none())
            .map(|p| p.meta().min_seq)
            .min()
    }

    /// Whether the bucket holds all the partition has: no row in memory,
    /// no local part.
    pub fn is_all_uploaded(&self) -> bool {
        if self.head_rows() > 0 {
            return false;
        }
        let parts = self.parts.read();
        parts.memory.is_empty() && parts.disk.iter().all(|p| p.object().is_some())
    }

    /// Drops the uploaded parts that are among `objects` (same key and
    /// version: a part rewritten since is not the one named) and deletes
    /// them from the bucket, once a cluster's compactor holds their samples.
    /// Returns how many it dropped.
    pub fn retire(&self, objects: &[ObjectInfo]) -> Result<usize, StorageError> {
        let Some(remote) = self.writable_remote() else {
            return Ok(0);
        };
        let named = |p: &Arc<Part>| {
            p.object()
                .is_some_and(|o| objects.iter().any(|r| r.key == o.key && r.version == o.version))
        };
        let mut retired = Vec::new();
        {
            let _merge = self.disk_merge.lock();
            self.edit_parts(|parts| {
                retired = parts.disk.iter().filter(|p| named(p)).cloned().collect();
                parts.disk.retain(|p| !named(p));
            });
        }
        // Every named object goes, also one an earlier retire took out of the
        // list but failed to delete; a listed part of the same name is
        // another version (rewritten since), and stays.
        let listed: Vec<String> = self.uploaded_parts().into_iter().map(|o| o.key).collect();
        let mut first_error = None;
        for object in objects.iter().filter(|o| !listed.contains(&o.key)) {
            if let Err(e) = remote.bucket.delete(&object.key) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(retired.len()), Err)
    }

    /// Deletes every object of the partition from the bucket (retention).
    pub(super) fn delete_objects(&self) -> Result<(), StorageError> {
        match self.writable_remote() {
            Some(remote) => remote.delete_day(self.day),
            None => Ok(()),
        }
    }

    /// Brings a read-only instance's view of the partition up to `objects`,
    /// the bucket's listing of it: loads new index segments and changed
    /// tombstones, opens new parts and drops those no longer listed (merged
    /// away by the writer). Returns whether anything changed.
    pub fn refresh(&self, objects: &[ObjectInfo]) -> Result<bool, StorageError> {
        let Some(remote) = self.remote.as_deref() else {
            return Ok(false);
        };
        let mut new_segments = Vec::new();
        let mut tombstones_changed = false;
        let mut histograms_changed = false;
        for object in objects {
            let name = file_name(object);
            let path = self.dir.join(name);
            let local_len = fs::metadata(&path).map(|m| m.len()).ok();
            // Segments never change once written; the tombstone log only
            // grows. (The applied-tombstones marker is the writer's business.)
            let changed = match name {
                TOMBSTONES => local_len != Some(object.size),
                _ if crate::index::segment_seq(name).is_some() => local_len.is_none(),
                // New, or rewritten by the writer's merge of its files.
                _ if crate::histograms::file_seq(name).is_some() => local_len != Some(object.size),
                _ => false,
            };
            if !changed {
                continue;
            }
            download(&remote.bucket, &object.key, &path)?;
            if name == TOMBSTONES {
                tombstones_changed = true;
            } else if crate::histograms::file_seq(name).is_some() {
                histograms_changed = true;
            } else {
                new_segments.push(path);
            }
        }
        if !new_segments.is_empty() {
            new_segments.sort();
            let mut index = self.index.write();
            for path in &new_segments {
                index.load_segment(path)?;
            }
        }
        let listed: HashMap<&str, &ObjectInfo> = objects
            .iter()
            .filter(|o| parse_part_name(file_name(o)).is_some())
            .map(|o| (o.key.as_str(), o))
            .collect();
        let current = self.parts.read().clone();
        let known: HashMap<&str, &ObjectInfo> = current
            .disk
            .iter()
            .filter_map(|p| p.object())
            .map(|o| (o.key.as_str(), o))
            .collect();
        let mut added = Vec::new();
        for (key, object) in &listed {
            if known.get(key).is_none_or(|k| k.version != object.version) {
                added.push(Arc::new(Part::open_object(remote.bucket.clone(), (*object).clone())?));
            }
        }
        let gone = |p: &Arc<Part>| {
            p.object()
                .is_some_and(|o| listed.get(o.key.as_str()).is_none_or(|l| l.version != o.version))
        };
        let parts_changed = !added.is_empty() || current.disk.iter().any(gone);
        if parts_changed {
            self.edit_parts(|parts| {
                parts.disk.retain(|p| !gone(p));
                parts.disk.extend(added);
                parts.disk.sort_by_key(|p| p.meta().min_seq);
            });
        }
        if tombstones_changed {
            *self.tombstones.write() = Arc::new(crate::tombstones::load(&self.dir)?);
        }
        if histograms_changed {
            // A read-only instance commits nothing, so every body is in the files.
            *self.histograms.write() = crate::histograms::HistogramStore::load(&self.dir)?;
        }
        if tombstones_changed || !new_segments.is_empty() {
            let ids = self.tombstones.read().iter().map(|t| t.id).collect();
            self.update_liveness(ids)?;
        }
        Ok(parts_changed || tombstones_changed || histograms_changed || !new_segments.is_empty())
    }
}
