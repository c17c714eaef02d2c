//! Native histogram samples of one day partition.
//!
//! A histogram sample is written to the float column as [`MARKER`] (a NaN
//! no float write keeps, see [`is_marker`]) and its body to this store, by
//! series id and timestamp. The float path then decides alone which write
//! of a timestamp wins (a float or a histogram, newest first), what deletes
//! hide and what a part, a merge or retention keeps; a reader that meets a
//! marker takes the histogram of that timestamp from here. Series without
//! histograms cost nothing here.
//!
//! Bodies committed since the last flush are held decoded; a flush writes
//! them to an immutable, checksummed file per flush (`hist-<seq>.chist`, see
//! docs/format/part.md), codec blocks of at most [`BLOCK_SAMPLES`] bodies
//! per series. Memory then keeps only
//! where each block lies in its open file and its time range; a read takes
//! the blocks it needs from the file. A later write of the same series and
//! timestamp wins: files are read oldest first, then the unflushed bodies.

mod file;
mod merge;

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_codec::{HistogramValue, decode_histograms};
use cairn_model::Histogram;
use cairn_model::histogram::ResetHint;
use cairn_storage::StorageError;
use parking_lot::RwLock;

use file::{Encoded, Entry, FileWriter, decode_from, write_file};
pub use file::{check_bytes, check_file, file_seq};

/// The float value that stands for a histogram sample: a NaN payload
/// spelling "hist", distinct from the staleness marker.
pub const MARKER: u64 = 0x7ff4_0000_6869_7374;

/// Bodies of one series per codec block at most: a read decodes whole
/// blocks, and a merge holds one decoded block per file it merges.
const BLOCK_SAMPLES: usize = 1024;

pub fn marker() -> f64 {
    f64::from_bits(MARKER)
}

pub fn is_marker(v: f64) -> bool {
    v.to_bits() == MARKER
}

/// A float written by a client with the marker's bits is kept as the
/// ordinary NaN, so it is never read back as a histogram.
pub fn unmark(v: f64) -> f64 {
    if is_marker(v) { f64::NAN } else { v }
}

/// A histogram file, open for reading its blocks.
struct HistogramFile {
    /// The WAL segment of the flush that wrote it (or of the newest file a merge rewrote).
    seq: u64,
    path: PathBuf,
    file: File,
    len: u64,
}

/// Some of one series' histograms of one file: where their codec block
/// lies, and its time range.
#[derive(Clone)]
struct Block {
    mint: i64,
    maxt: i64,
    file: Arc<HistogramFile>,
    bytes: Range<u64>,
}

/// Histogram files a partition keeps before the merge thread merges some
/// of them into one, which bounds the files a read goes through (flushes
/// may add more meanwhile: a restart's replay never waits for a merge).
const MAX_FILES: usize = 8;

#[derive(Default)]
pub struct HistogramStore {
    /// Blocks per series, oldest file first.
    flushed: HashMap<u64, Vec<Block>>,
    /// The files, oldest first.
    files: Vec<Arc<HistogramFile>>,
    /// Bodies committed since the last flush, by series and timestamp.
    fresh: HashMap<u64, BTreeMap<i64, Arc<Histogram>>>,
    /// `body_bytes` summed over `fresh`, kept as it changes: the memory
    /// budget reads it after every commit and every replayed WAL record.
    fresh_bytes: usize,
}

/// Bytes of an unflushed body, roughly.
fn body_bytes(h: &Histogram) -> usize {
    96 + 16 * (h.positive.len() + h.negative.len())
}

impl HistogramStore {
    /// Loads the histogram files of a partition directory; a damaged one is an error.
    pub fn load(dir: &Path) -> Result<Self, StorageError> {
        match Self::load_lenient(dir)? {
            (_, damaged) if !damaged.is_empty() => {
                let (path, reason) = damaged.into_iter().next().unwrap_or_default();
                Err(StorageError::Corrupt { path, reason })
            }
            (store, _) => Ok(store),
        }
    }

    /// Loads the histogram files of a partition directory, leaving out the
    /// damaged ones, which it returns with what is wrong with each.
    pub fn load_lenient(dir: &Path) -> Result<(Self, Vec<(PathBuf, String)>), StorageError> {
        let mut files: Vec<(u64, PathBuf)> = Vec::new();
        for entry in fs::read_dir(dir).map_err(StorageError::io("list", dir))? {
            let path = entry.map_err(StorageError::io("list", dir))?.path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if let Some(seq) = file_seq(&name) {
                files.push((seq, path));
            }
        }
        files.sort();
        let mut store = Self::default();
        let mut damaged = Vec::new();
        for (seq, path) in files {
            let file = File::open(&path).map_err(StorageError::io("open", &path))?;
            let len = file.metadata().map_err(StorageError::io("stat", &path))?.len();
            let decoded = decode_from(&file, len).map_err(StorageError::io("read", &path))?;
            match decoded {
                Ok(entries) => {
                    let file = Arc::new(HistogramFile { seq, path, file, len });
                    store.attach(file, entries);
                }
                Err(reason) => damaged.push((path, reason.to_string())),
            }
        }
        Ok((store, damaged))
    }

    /// Adds a file and its blocks, in WAL segment order among the files
    /// (the newest, but for a merge's file while flushes ran).
    fn attach(&mut self, file: Arc<HistogramFile>, entries: Vec<Entry>) {
        let seq = file.seq;
        for e in entries {
            let blocks = self.flushed.entry(e.id).or_default();
            let at = blocks.partition_point(|b| b.file.seq <= seq);
            blocks.insert(
                at,
                Block {
                    mint: e.mint,
                    maxt: e.maxt,
                    file: file.clone(),
                    bytes: e.bytes,
                },
            );
        }
        let at = self.files.partition_point(|f| f.seq <= seq);
        self.files.insert(at, file);
    }

    pub fn is_empty(&self) -> bool {
        self.flushed.is_empty() && self.fresh.is_empty()
    }

    /// Whether series `id` ever had a histogram in this partition.
    pub fn has(&self, id: u64) -> bool {
        self.fresh.contains_key(&id) || self.flushed.contains_key(&id)
    }

    pub fn insert(&mut self, id: u64, t: i64, h: Arc<Histogram>) {
        self.fresh_bytes += body_bytes(&h);
        if let Some(replaced) = self.fresh.entry(id).or_default().insert(t, h) {
            self.fresh_bytes -= body_bytes(&replaced);
        }
    }

    /// Bytes of the unflushed bodies, roughly: what a flush frees (it
    /// counts toward the in-memory budget that triggers flushes). Bodies in
    /// files are not counted: no flush frees them.
    pub fn unflushed_bytes(&self) -> usize {
        self.fresh_bytes
    }

    /// The newest histogram of series `id` at each timestamp in `[mint, maxt]`.
    pub fn read(&self, id: u64, mint: i64, maxt: i64) -> Result<BTreeMap<i64, Arc<Histogram>>, StorageError> {
        let mut out = BTreeMap::new();
        for b in self.flushed.get(&id).into_iter().flatten() {
            if b.maxt < mint || b.mint > maxt {
                continue;
            }
            let (ts, hs) = b.decode(id)?;
            for (t, h) in ts.into_iter().zip(hs) {
                if (mint..=maxt).contains(&t) {
                    out.insert(t, Arc::new(from_value(h)));
                }
            }
        }
        if let Some(fresh) = self.fresh.get(&id) {
            out.extend(fresh.range(mint..=maxt).map(|(&t, h)| (t, h.clone())));
        }
        Ok(out)
    }

    /// Writes the bodies unflushed when it starts to the file of WAL
    /// segment `seq`, then reads them from there. The file is written without
    /// the lock, so commits go on; a body replaced meanwhile stays unflushed
    /// (and wins over the file's). Nothing changes on error. Files add up
    /// until [`Self::merge_files`] (the merge thread's) merges them.
    pub fn flush(lock: &RwLock<Self>, dir: &Path, seq: u64) -> Result<(), StorageError> {
        let fresh = lock.read().fresh.clone();
        if fresh.is_empty() {
            return Ok(());
        }
        let mut ids: Vec<u64> = fresh.keys().copied().collect();
        ids.sort_unstable();
        let write = |w: &mut FileWriter<'_>| {
            for id in ids {
                let Some(of_series) = fresh.get(&id) else { continue };
                let (ts, hs): (Vec<i64>, Vec<HistogramValue>) =
                    of_series.iter().map(|(&t, h)| (t, to_value(h))).unzip();
                for (ts, hs) in ts.chunks(BLOCK_SAMPLES).zip(hs.chunks(BLOCK_SAMPLES)) {
                    w.add(&Encoded::new(id, ts, hs))?;
                }
            }
            Ok(())
        };
        let (file, entries) = write_file(dir, seq, write, || Ok(()))?;
        let mut store = lock.write();
        let mut freed = 0;
        for (id, written) in &fresh {
            if let Some(now) = store.fresh.get_mut(id) {
                now.retain(|t, h| {
                    let kept = written.get(t).is_none_or(|w| !Arc::ptr_eq(w, h));
                    if !kept {
                        freed += body_bytes(h);
                    }
                    kept
                });
                if now.is_empty() {
                    store.fresh.remove(id);
                }
            }
        }
        store.fresh_bytes -= freed;
        store.attach(file, entries);
        Ok(())
    }

    /// Whether the store holds more files than [`MAX_FILES`], which a
    /// merge of some of them should bring down.
    pub fn wants_merge(&self) -> bool {
        self.files.len() > MAX_FILES
    }
}

impl Block {
    /// The block's histograms, read from its file.
    fn decode(&self, id: u64) -> Result<(Vec<i64>, Vec<HistogramValue>), StorageError> {
        let path = &self.file.path;
        let len = usize::try_from(self.bytes.end - self.bytes.start).map_err(|_| StorageError::Corrupt {
            path: path.clone(),
            reason: "histogram block too large".into(),
        })?;
        let mut bytes = vec![0; len];
        self.file
            .file
            .read_exact_at(&mut bytes, self.bytes.start)
            .map_err(StorageError::io("read", path))?;
        let (mut ts, mut hs) = (Vec::new(), Vec::new());
        decode_histograms(&bytes, &mut ts, &mut hs).map_err(|e| StorageError::Corrupt {
            path: path.clone(),
            reason: format!("histogram block of series {id:016x}: {e}"),
        })?;
        Ok((ts, hs))
    }
}
/// The model's histogram as the codec stores it.
pub fn to_value(h: &Histogram) -> HistogramValue {
    HistogramValue {
        schema: h.schema,
        reset_hint: h.reset_hint.code(),
        count: h.count,
        sum: h.sum,
        zero_threshold: h.zero_threshold,
        zero_count: h.zero_count,
        positive: h.positive.clone(),
        negative: h.negative.clone(),
        custom_bounds: h.custom_bounds.clone(),
    }
}

pub fn from_value(v: HistogramValue) -> Histogram {
    Histogram {
        schema: v.schema,
        reset_hint: ResetHint::from_code(i64::from(v.reset_hint)),
        count: v.count,
        sum: v.sum,
        zero_threshold: v.zero_threshold,
        zero_count: v.zero_count,
        positive: v.positive,
        negative: v.negative,
        custom_bounds: v.custom_bounds,
    }
}

#[cfg(test)]
mod tests {
    use super::file::{decode_file, file_name};
    use super::*;

    pub(super) fn h(count: f64) -> Arc<Histogram> {
        Arc::new(Histogram {
            schema: 3,
            count,
            sum: count * 1.5,
            positive: vec![(1, count)],
            ..Histogram::default()
        })
    }

    #[test]
    fn histograms_survive_flushes_and_reloads_newest_write_winning() {
        let dir = tempfile::tempdir().unwrap();
        let store = RwLock::new(HistogramStore::default());
        store.write().insert(7, 10, h(1.0));
        store.write().insert(7, 20, h(2.0));
        HistogramStore::flush(&store, dir.path(), 1).unwrap();
        store.write().insert(7, 20, h(3.0));
        store.write().insert(8, 5, h(4.0));
        let want = |s: &HistogramStore| {
            assert_eq!(
                s.read(7, 0, 100).unwrap().into_iter().collect::<Vec<_>>(),
                vec![(10, h(1.0)), (20, h(3.0))]
            );
            assert_eq!(s.read(7, 11, 100).unwrap().len(), 1);
            assert_eq!(
                s.read(8, 0, 100).unwrap().into_values().collect::<Vec<_>>(),
                vec![h(4.0)]
            );
            assert!(!s.has(9) && s.has(8));
        };
        want(&store.read());
        HistogramStore::flush(&store, dir.path(), 2).unwrap();
        assert!(store.read().fresh.is_empty());
        want(&store.read());
        want(&HistogramStore::load(dir.path()).unwrap());
    }

    #[test]
    fn unflushed_bytes_follow_inserts_replacements_and_flushes() {
        let recount =
            |s: &HistogramStore| -> usize { s.fresh.values().flat_map(|m| m.values()).map(|h| body_bytes(h)).sum() };
        let wide = |count: f64| {
            Arc::new(Histogram {
                positive: vec![(1, count); 5],
                negative: vec![(2, count); 3],
                ..(*h(count)).clone()
            })
        };
        let dir = tempfile::tempdir().unwrap();
        let store = RwLock::new(HistogramStore::default());
        store.write().insert(1, 10, h(1.0));
        store.write().insert(1, 20, wide(2.0));
        store.write().insert(2, 10, h(3.0));
        let before = store.read().unflushed_bytes();
        assert_eq!(before, recount(&store.read()));
        // A body replaced at the same timestamp counts once, at its new size.
        store.write().insert(1, 10, wide(4.0));
        assert_eq!(store.read().unflushed_bytes(), recount(&store.read()));
        assert!(store.read().unflushed_bytes() > before);
        HistogramStore::flush(&store, dir.path(), 1).unwrap();
        assert_eq!(store.read().unflushed_bytes(), 0);
        store.write().insert(2, 30, wide(5.0));
        assert_eq!(store.read().unflushed_bytes(), body_bytes(&wide(5.0)));
    }

    #[test]
    fn a_damaged_histogram_file_is_refused_and_decoding_never_panics() {
        let store = RwLock::new(HistogramStore::default());
        store.write().insert(1, 1, h(1.0));
        let dir = tempfile::tempdir().unwrap();
        HistogramStore::flush(&store, dir.path(), 3).unwrap();
        let path = dir.path().join(file_name(3));
        let bytes = fs::read(&path).unwrap();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(decode_file(&bad).is_err());
            assert!(decode_file(&bytes[..i]).is_err());
        }
        assert_eq!(check_file(&path), Ok(1));
        assert_eq!(check_bytes(&bytes), Ok(1));
        fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(HistogramStore::load(dir.path()).is_err());
        assert!(check_file(&path).is_err());
        let (store, damaged) = HistogramStore::load_lenient(dir.path()).unwrap();
        assert!(store.is_empty());
        assert_eq!(damaged.len(), 1);
        assert_eq!(damaged[0].0, path);
    }

    #[test]
    fn flushed_bodies_are_read_from_their_file_where_its_directory_places_them() {
        let store = RwLock::new(HistogramStore::default());
        for id in 1..=3 {
            store.write().insert(id, 10 * id as i64, h(id as f64));
        }
        let dir = tempfile::tempdir().unwrap();
        HistogramStore::flush(&store, dir.path(), 4).unwrap();
        let path = dir.path().join(file_name(4));
        let bytes = fs::read(&path).unwrap();
        let entries = decode_file(&bytes).unwrap();
        assert_eq!(entries.iter().map(|e| e.id).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(entries[1].mint, 20);
        // Damage series 2's block in place: only its read fails, naming the file.
        let mut damaged = bytes.clone();
        for b in &mut damaged[entries[1].bytes.start as usize..entries[1].bytes.end as usize] {
            *b = 0xff;
        }
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .write_all_at(&damaged, 0)
            .unwrap();
        let s = store.read();
        assert_eq!(
            s.read(1, 0, 100).unwrap().into_values().collect::<Vec<_>>(),
            vec![h(1.0)]
        );
        assert_eq!(
            s.read(3, 0, 100).unwrap().into_values().collect::<Vec<_>>(),
            vec![h(3.0)]
        );
        let err = s.read(2, 0, 100).unwrap_err().to_string();
        assert!(err.contains("hist-"), "{err}");
    }

    #[test]
    fn marker_is_no_float_a_client_keeps() {
        assert!(is_marker(marker()) && marker().is_nan());
        assert!(!is_marker(unmark(marker())));
        assert_ne!(MARKER, cairn_model::STALE_NAN_BITS);
    }
}
