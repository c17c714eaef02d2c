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

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File};
use std::io::Read;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cairn_codec::varint::{get_uvarint, put_uvarint};
use cairn_codec::{HistogramValue, decode_histograms, encode_histograms};
use cairn_model::Histogram;
use cairn_model::histogram::ResetHint;
use cairn_storage::StorageError;
use parking_lot::RwLock;

use crate::quarantine::{FileKind, Quarantine};

/// The float value that stands for a histogram sample: a NaN payload
/// spelling "hist", distinct from the staleness marker.
pub const MARKER: u64 = 0x7ff4_0000_6869_7374;

const FILE_MAGIC: &[u8; 4] = b"CHST";
/// Version 1 counted its blocks up front; version 2 lists them up to the
/// checksum, so a merge can write blocks as it makes them.
const FILE_VERSION: u32 = 2;

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

/// The file of the histograms a flush at WAL segment `seq` wrote.
fn file_name(seq: u64) -> String {
    format!("hist-{seq:020}.chist")
}

/// The WAL segment of a histogram file's name.
pub fn file_seq(name: &str) -> Option<u64> {
    name.strip_prefix("hist-")?.strip_suffix(".chist")?.parse().ok()
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

/// A block's place in its file, as the file's directory lists it.
#[derive(Debug, PartialEq)]
struct Entry {
    id: u64,
    mint: i64,
    maxt: i64,
    bytes: Range<u64>,
}

/// Some of one series' histograms encoded for a new file.
struct Encoded {
    id: u64,
    mint: i64,
    maxt: i64,
    bytes: Vec<u8>,
}

/// Histogram files a partition keeps before a flush merges some of them
/// into one, which bounds the files a read goes through.
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
                    store.attach(file.clone(), entries);
                    store.files.push(file);
                }
                Err(reason) => damaged.push((path, reason.to_string())),
            }
        }
        Ok((store, damaged))
    }

    /// Adds the blocks of a file, which is newer than those attached before.
    fn attach(&mut self, file: Arc<HistogramFile>, entries: Vec<Entry>) {
        for e in entries {
            self.flushed.entry(e.id).or_default().push(Block {
                mint: e.mint,
                maxt: e.maxt,
                file: file.clone(),
                bytes: e.bytes,
            });
        }
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
    /// (and wins over the file's). Nothing changes on error.
    /// `dead` tells, of a list of series ids, those the partition's index
    /// holds as deleted (no sample left): a merge of the files drops their
    /// bodies. It is called without the store's lock. Returns whether
    /// bodies were lost: a merge of the files met blocks that did not
    /// decode, whose files went to `quarantine` (copied: the merge replaces them).
    pub fn flush(
        lock: &RwLock<Self>,
        dir: &Path,
        seq: u64,
        dead: impl FnOnce(&[u64]) -> HashSet<u64>,
        quarantine: &Quarantine,
    ) -> Result<bool, StorageError> {
        let fresh = lock.read().fresh.clone();
        if fresh.is_empty() {
            return Ok(false);
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
        store.attach(file.clone(), entries);
        store.files.push(file);
        if store.files.len() > MAX_FILES {
            let ids: Vec<u64> = store.flushed.keys().copied().collect();
            drop(store);
            return Self::merge_files(lock, dir, &dead(&ids), quarantine);
        }
        Ok(false)
    }

    /// Rewrites the newest files (see [`merge_from`]) as one under the
    /// newest one's name (replaced atomically; it then holds what they do,
    /// newest body winning, less the bodies of `dead` series), then removes
    /// the others. A crash in between leaves files the merged one overrides.
    /// Only flushes call it, one at a time (the caller's partition
    /// serialises them), so the flushed blocks do not change meanwhile. A
    /// block that does not decode is left out and its file copied to the
    /// quarantine; returns whether any was.
    fn merge_files(
        lock: &RwLock<Self>,
        dir: &Path,
        dead: &HashSet<u64>,
        quarantine: &Quarantine,
    ) -> Result<bool, StorageError> {
        // Where each live series' blocks in the merged files lie: the merge
        // then reads and writes a block at a time, without the lock.
        let (series, merged) = {
            let store = lock.read();
            let sizes: Vec<u64> = store.files.iter().map(|f| f.len).collect();
            let merged = store.files[merge_from(&sizes)..].to_vec();
            let Some(first) = merged.first().map(|f| f.seq) else {
                return Ok(false);
            };
            let mut series: Vec<(u64, Vec<Block>)> = store
                .flushed
                .iter()
                .filter(|(id, _)| !dead.contains(id))
                .map(|(&id, blocks)| (id, blocks.iter().filter(|b| b.file.seq >= first).cloned().collect()))
                .filter(|(_, blocks): &(u64, Vec<Block>)| !blocks.is_empty())
                .collect();
            series.sort_unstable_by_key(|&(id, _)| id);
            (series, merged)
        };
        // Not empty: the block above returned otherwise.
        let (first, newest) = (merged[0].seq, merged[merged.len() - 1].seq);
        let damaged: RefCell<BTreeMap<PathBuf, String>> = RefCell::default();
        let write = |w: &mut FileWriter<'_>| {
            for (id, blocks) in &series {
                merge_series(w, *id, blocks, &damaged)?;
            }
            Ok(())
        };
        // Damaged files are copied before the merged file replaces the newest.
        let (file, entries) = write_file(dir, newest, write, || {
            for (path, reason) in damaged.borrow().iter() {
                quarantine.copy(path, FileKind::Histograms, reason)?;
            }
            Ok(())
        })?;
        {
            let mut store = lock.write();
            store.flushed.retain(|_, blocks| {
                blocks.retain(|b| b.file.seq < first);
                !blocks.is_empty()
            });
            store.files.retain(|f| f.seq < first);
            store.attach(file.clone(), entries);
            store.files.push(file);
        }
        for f in &merged[..merged.len() - 1] {
            fs::remove_file(&f.path).map_err(StorageError::io("remove merged histogram file", &f.path))?;
        }
        crate::wal::sync_dir(dir)?;
        Ok(!damaged.into_inner().is_empty())
    }
}

/// Where the files a merge rewrites begin, given the files' sizes oldest
/// first: the newest two, and each older file no larger than the newer
/// ones taken. Files then grow by about doubling, so a body is rewritten a
/// few times a day rather than at every merge, and a merge leaves at most
/// as many files as it found less one.
fn merge_from(sizes: &[u64]) -> usize {
    let mut from = sizes.len().saturating_sub(2);
    let mut taken: u64 = sizes[from..].iter().sum();
    while from > 0 && sizes[from - 1] <= taken {
        from -= 1;
        taken += sizes[from];
    }
    from
}

/// Writes series `id`'s histograms of `blocks` (oldest file first, each
/// file's by time) merged by timestamp, the newest file's body winning,
/// in blocks of [`BLOCK_SAMPLES`]. Holds one decoded block per file and
/// the block being made. A block that does not decode is left out and
/// its file noted in `damaged`.
fn merge_series(
    w: &mut FileWriter<'_>,
    id: u64,
    blocks: &[Block],
    damaged: &RefCell<BTreeMap<PathBuf, String>>,
) -> Result<(), StorageError> {
    let mut files: Vec<FileBodies> = blocks
        .chunk_by(|a, b| a.file.seq == b.file.seq)
        .map(|blocks| FileBodies {
            blocks,
            ts: Vec::new(),
            hs: Vec::new(),
            at: 0,
        })
        .collect();
    let (mut ts, mut hs) = (Vec::with_capacity(BLOCK_SAMPLES), Vec::with_capacity(BLOCK_SAMPLES));
    loop {
        // The earliest timestamp a file holds next, and the newest file holding it.
        let mut next: Option<(i64, usize)> = None;
        for (i, f) in files.iter_mut().enumerate() {
            if let Some(t) = f.peek(id, damaged)?
                && next.is_none_or(|(earliest, _)| t <= earliest)
            {
                next = Some((t, i));
            }
        }
        let Some((t, newest)) = next else { break };
        let winner = &mut files[newest];
        let h = std::mem::take(&mut winner.hs[winner.at]);
        for f in &mut files {
            while f.peek(id, damaged)? == Some(t) {
                f.at += 1;
            }
        }
        // A file's blocks out of order (written so by no version) cannot
        // make the merged block's timestamps go back.
        if ts.last().is_some_and(|&last| t <= last) {
            continue;
        }
        ts.push(t);
        hs.push(h);
        if ts.len() == BLOCK_SAMPLES {
            w.add(&Encoded::new(id, &ts, &hs))?;
            ts.clear();
            hs.clear();
        }
    }
    if !ts.is_empty() {
        w.add(&Encoded::new(id, &ts, &hs))?;
    }
    Ok(())
}

/// One series' bodies in one file, decoded a block at a time for a merge.
struct FileBodies<'a> {
    blocks: &'a [Block],
    ts: Vec<i64>,
    hs: Vec<HistogramValue>,
    /// The next body of the decoded block.
    at: usize,
}

impl FileBodies<'_> {
    /// The timestamp of the next body, decoding the next block when the
    /// last is used up; `None` once all are.
    fn peek(&mut self, id: u64, damaged: &RefCell<BTreeMap<PathBuf, String>>) -> Result<Option<i64>, StorageError> {
        while self.at == self.ts.len() {
            let Some((block, rest)) = self.blocks.split_first() else {
                return Ok(None);
            };
            self.blocks = rest;
            self.at = 0;
            (self.ts, self.hs) = match block.decode(id) {
                Ok(decoded) => decoded,
                Err(StorageError::Corrupt { path, reason }) => {
                    damaged.borrow_mut().entry(path).or_insert(reason);
                    (Vec::new(), Vec::new())
                }
                Err(e) => return Err(e),
            };
        }
        Ok(Some(self.ts[self.at]))
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

impl Encoded {
    fn new(id: u64, ts: &[i64], hs: &[HistogramValue]) -> Self {
        let mut bytes = Vec::new();
        encode_histograms(&mut bytes, ts, hs);
        Encoded {
            id,
            mint: ts.first().copied().unwrap_or(0),
            maxt: ts.last().copied().unwrap_or(0),
            bytes,
        }
    }
}

/// Writes the histogram file of WAL segment `seq` in `dir` atomically, of
/// the blocks `fill` adds, and opens it for reads. `before_rename` runs
/// once every block is written, before the file takes its name.
fn write_file(
    dir: &Path,
    seq: u64,
    fill: impl FnOnce(&mut FileWriter<'_>) -> Result<(), StorageError>,
    before_rename: impl FnOnce() -> Result<(), StorageError>,
) -> Result<(Arc<HistogramFile>, Vec<Entry>), StorageError> {
    let path = dir.join(file_name(seq));
    let entries = crate::index::write_atomically_with(&path, |out| {
        let mut w = FileWriter::start(out, &path)?;
        fill(&mut w)?;
        let entries = w.finish()?;
        before_rename()?;
        Ok(entries)
    })?;
    let file = File::open(&path).map_err(StorageError::io("open", &path))?;
    let len = file.metadata().map_err(StorageError::io("stat", &path))?.len();
    Ok((Arc::new(HistogramFile { seq, path, file, len }), entries))
}

/// Writes `magic "CHST" | version:u32 LE = 2 | (id:u64 LE | varint(mint) |
/// varint(maxt) | uvarint(len) | block[len])* | crc32c:u32 LE` (of all
/// before) a block at a time, keeping where each lies in the file.
struct FileWriter<'a> {
    out: Checksummed<'a>,
    entries: Vec<Entry>,
    head: Vec<u8>,
}

impl<'a> FileWriter<'a> {
    fn start(out: &'a mut dyn std::io::Write, path: &'a Path) -> Result<Self, StorageError> {
        let mut out = Checksummed {
            out,
            path,
            crc: 0,
            written: 0,
        };
        out.write(FILE_MAGIC)?;
        out.write(&FILE_VERSION.to_le_bytes())?;
        Ok(Self {
            out,
            entries: Vec::new(),
            head: Vec::new(),
        })
    }

    /// Adds a block: series by increasing id, a series' blocks by
    /// increasing time.
    fn add(&mut self, b: &Encoded) -> Result<(), StorageError> {
        self.head.clear();
        self.head.extend_from_slice(&b.id.to_le_bytes());
        cairn_codec::varint::put_varint(&mut self.head, b.mint);
        cairn_codec::varint::put_varint(&mut self.head, b.maxt);
        put_uvarint(&mut self.head, b.bytes.len() as u64);
        self.out.write(&self.head)?;
        let start = self.out.written;
        self.out.write(&b.bytes)?;
        self.entries.push(Entry {
            id: b.id,
            mint: b.mint,
            maxt: b.maxt,
            bytes: start..self.out.written,
        });
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<Entry>, StorageError> {
        let crc = self.out.crc.to_le_bytes();
        self.out.write(&crc)?;
        Ok(self.entries)
    }
}

/// A writer that keeps the CRC-32C and the count of what went through.
struct Checksummed<'a> {
    out: &'a mut dyn std::io::Write,
    /// What errors name.
    path: &'a Path,
    crc: u32,
    written: u64,
}

impl Checksummed<'_> {
    fn write(&mut self, bytes: &[u8]) -> Result<(), StorageError> {
        self.out
            .write_all(bytes)
            .map_err(StorageError::io("write", self.path))?;
        self.crc = cairn_codec::crc32c_append(self.crc, bytes);
        self.written += bytes.len() as u64;
        Ok(())
    }
}

/// The file `blocks` make, and where each lies in it.
#[cfg(test)]
fn encode_file(blocks: &[Encoded]) -> (Vec<u8>, Vec<Entry>) {
    let mut out = Vec::new();
    let mut w = FileWriter::start(&mut out, Path::new("<memory>")).expect("writing to memory");
    for b in blocks {
        w.add(b).expect("writing to memory");
    }
    let entries = w.finish().expect("writing to memory");
    (out, entries)
}

/// Where the blocks of a histogram file lie; never panics.
fn decode_file(bytes: &[u8]) -> Result<Vec<Entry>, &'static str> {
    // A slice fails to read only where it ends, which the lengths rule out.
    decode_from(bytes, bytes.len() as u64).unwrap_or(Err("truncated histogram file"))
}

/// Where the blocks of a histogram file of `len` bytes lie, read from `src` front to
/// back, a chunk at a time: a merged file can be larger than memory should
/// hold at once. The outer error is the reader's; the inner one, damage.
fn decode_from(src: impl Read, len: u64) -> std::io::Result<Result<Vec<Entry>, &'static str>> {
    let Some(body_len) = len.checked_sub(4) else {
        return Ok(Err("truncated histogram file"));
    };
    let mut scan = Scanner::new(src, body_len);
    let head = scan.peek(FILE_MAGIC.len() + 4 + MAX_VARINT)?;
    let Some(rest) = head.strip_prefix(FILE_MAGIC) else {
        return Ok(Err("not a histogram file"));
    };
    let Some((version, rest)) = rest.split_first_chunk::<4>() else {
        return Ok(Err("truncated histogram file"));
    };
    // How many blocks a version 1 file says it holds; a version 2 file's
    // end up to its checksum.
    let (count, rest) = match u32::from_le_bytes(*version) {
        1 => match get_uvarint(rest) {
            Ok((n, rest)) => (Some(n), rest),
            Err(_) => return Ok(Err("bad histogram block count")),
        },
        FILE_VERSION => (None, rest),
        _ => return Ok(Err("unknown histogram file version")),
    };
    let used = head.len() - rest.len();
    scan.consume(used);
    // A block takes 11 bytes at least (id, three one-byte varints).
    if count.is_some_and(|n| n > body_len / 11) {
        return Ok(Err("histogram block count exceeds file"));
    }
    let mut out = Vec::with_capacity(count.unwrap_or(0) as usize);
    while count.map_or(!scan.at_end()?, |n| (out.len() as u64) < n) {
        let header = scan.peek(BLOCK_HEADER_MAX)?;
        let parsed = (|| {
            let (id, r) = header.split_first_chunk::<8>().ok_or("truncated histogram block")?;
            let (mint, r) = cairn_codec::varint::get_varint(r).map_err(|_| "bad histogram block mint")?;
            let (maxt, r) = cairn_codec::varint::get_varint(r).map_err(|_| "bad histogram block maxt")?;
            let (len, r) = get_uvarint(r).map_err(|_| "bad histogram block length")?;
            Ok((u64::from_le_bytes(*id), mint, maxt, len, header.len() - r.len()))
        })();
        let (id, mint, maxt, len, used) = match parsed {
            Ok(p) => p,
            Err(reason) => return Ok(Err(reason)),
        };
        scan.consume(used);
        let start = scan.offset;
        if !scan.skip(len)? {
            return Ok(Err("histogram block overruns file"));
        }
        out.push(Entry {
            id,
            mint,
            maxt,
            bytes: start..start + len,
        });
    }
    if !scan.at_end()? {
        return Ok(Err("trailing bytes in histogram file"));
    }
    let mut crc = [0u8; 4];
    scan.src.read_exact(&mut crc)?;
    if scan.crc != u32::from_le_bytes(crc) {
        return Ok(Err("histogram file checksum mismatch"));
    }
    Ok(Ok(out))
}

/// The longest varint.
const MAX_VARINT: usize = 10;
/// The longest block header: id, mint, maxt and length.
const BLOCK_HEADER_MAX: usize = 8 + 3 * MAX_VARINT;
/// How much of a file [`Scanner`] reads at once.
const SCAN_CHUNK: usize = 1 << 20;

/// Reads the `body_len` bytes of a file body in chunks, checksumming each
/// byte as it is consumed.
struct Scanner<R> {
    src: R,
    buf: Vec<u8>,
    /// The first byte of `buf` not consumed yet.
    start: usize,
    /// Body bytes not read into `buf` yet.
    unread: u64,
    /// The file offset of `buf[start]`.
    offset: u64,
    crc: u32,
}

impl<R: Read> Scanner<R> {
    fn new(src: R, body_len: u64) -> Self {
        Self {
            src,
            buf: Vec::new(),
            start: 0,
            unread: body_len,
            offset: 0,
            crc: 0,
        }
    }

    /// The bytes from the current offset on: at least `want` of them
    /// (at most [`SCAN_CHUNK`]), fewer only where the body ends.
    fn peek(&mut self, want: usize) -> std::io::Result<&[u8]> {
        if self.buf.len() - self.start < want && self.unread > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
            let have = self.buf.len();
            let more = self.unread.min((SCAN_CHUNK - have) as u64) as usize;
            self.buf.resize(have + more, 0);
            self.src.read_exact(&mut self.buf[have..])?;
            self.unread -= more as u64;
        }
        Ok(&self.buf[self.start..])
    }

    /// Consumes `n` bytes of what [`Self::peek`] returned.
    fn consume(&mut self, n: usize) {
        self.crc = cairn_codec::crc32c_append(self.crc, &self.buf[self.start..self.start + n]);
        self.start += n;
        self.offset += n as u64;
    }

    /// Consumes `n` bytes, however many chunks they span; false when the
    /// body ends first.
    fn skip(&mut self, mut n: u64) -> std::io::Result<bool> {
        while n > 0 {
            let have = self.peek(1)?.len();
            if have == 0 {
                return Ok(false);
            }
            let take = n.min(have as u64) as usize;
            self.consume(take);
            n -= take as u64;
        }
        Ok(true)
    }

    fn at_end(&mut self) -> std::io::Result<bool> {
        Ok(self.peek(1)?.is_empty())
    }
}

/// Checks a histogram file whole: its checksum and every block's
/// histograms, reading a chunk and a block at a time. Returns how many
/// blocks it holds.
pub fn check_file(path: &Path) -> Result<usize, String> {
    fn cannot(action: &'static str) -> impl Fn(std::io::Error) -> String {
        move |e| format!("cannot {action}: {e}")
    }
    let file = File::open(path).map_err(cannot("open"))?;
    let len = file.metadata().map_err(cannot("stat"))?.len();
    let entries = decode_from(&file, len).map_err(cannot("read"))??;
    let mut block = Vec::new();
    for e in &entries {
        let size = usize::try_from(e.bytes.end - e.bytes.start).map_err(|_| "histogram block too large")?;
        block.resize(size, 0);
        file.read_exact_at(&mut block, e.bytes.start).map_err(cannot("read"))?;
        check_block(e, &block)?;
    }
    Ok(entries.len())
}

/// [`check_file`] of a file's bytes; never panics.
pub fn check_bytes(bytes: &[u8]) -> Result<usize, String> {
    let entries = decode_file(bytes)?;
    for e in &entries {
        let block = bytes
            .get(e.bytes.start as usize..e.bytes.end as usize)
            .ok_or("histogram block overruns file")?;
        check_block(e, block)?;
    }
    Ok(entries.len())
}

fn check_block(e: &Entry, block: &[u8]) -> Result<(), String> {
    let (mut ts, mut hs) = (Vec::new(), Vec::new());
    decode_histograms(block, &mut ts, &mut hs).map_err(|err| {
        format!(
            "histogram block of series {:016x} at offset {}: {err}",
            e.id, e.bytes.start
        )
    })?;
    Ok(())
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
    use super::*;

    fn none_dead(_: &[u64]) -> HashSet<u64> {
        HashSet::new()
    }

    fn h(count: f64) -> Arc<Histogram> {
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
        HistogramStore::flush(&store, dir.path(), 1, none_dead, &Quarantine::new(dir.path())).unwrap();
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
        HistogramStore::flush(&store, dir.path(), 2, none_dead, &Quarantine::new(dir.path())).unwrap();
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
        HistogramStore::flush(&store, dir.path(), 1, none_dead, &Quarantine::new(dir.path())).unwrap();
        assert_eq!(store.read().unflushed_bytes(), 0);
        store.write().insert(2, 30, wide(5.0));
        assert_eq!(store.read().unflushed_bytes(), body_bytes(&wide(5.0)));
    }

    #[test]
    fn a_merge_takes_the_newest_files_and_the_older_ones_no_larger_than_those() {
        assert_eq!(merge_from(&[100, 10, 10, 1, 1]), 3);
        assert_eq!(merge_from(&[100, 1, 1, 1, 1, 1, 1, 1, 1]), 1);
        assert_eq!(merge_from(&[8, 1, 1, 1, 1, 1, 1, 1, 1]), 0);
        assert_eq!(merge_from(&[4, 2, 1, 1]), 0);
        assert_eq!(merge_from(&[1, 5, 5]), 0);
        assert_eq!(merge_from(&[50, 5, 5]), 1);
    }

    /// Flushes and merges of thousands of bodies per series: blocks stay
    /// within [`BLOCK_SAMPLES`], later writes of a timestamp win through
    /// every merge, the file count stays bounded, and a reload reads the same.
    #[test]
    fn series_of_many_bodies_merge_block_by_block_newest_winning() {
        let dir = tempfile::tempdir().unwrap();
        let quarantine = Quarantine::new(dir.path());
        let store = RwLock::new(HistogramStore::default());
        let mut want: BTreeMap<(u64, i64), Arc<Histogram>> = BTreeMap::new();
        for seq in 1..=40u64 {
            // Each flush writes 700 new timestamps and rewrites 300 older ones.
            let first = (seq as i64 - 1) * 700;
            for t in (first - 300).max(0)..first + 700 {
                for id in [5, 9] {
                    let body = h((seq * 100_000 + t as u64 + id) as f64);
                    store.write().insert(id, t, body.clone());
                    want.insert((id, t), body);
                }
            }
            HistogramStore::flush(&store, dir.path(), seq, none_dead, &quarantine).unwrap();
            assert!(store.read().files.len() <= MAX_FILES);
        }
        let sizes: Vec<u64> = store.read().files.iter().map(|f| f.len).collect();
        assert!(
            sizes.len() > 1,
            "the oldest, largest file outlives later merges: {sizes:?}"
        );
        for s in [&*store.read(), &HistogramStore::load(dir.path()).unwrap()] {
            for id in [5, 9] {
                let got: Vec<(i64, Arc<Histogram>)> = s.read(id, 0, i64::MAX).unwrap().into_iter().collect();
                let expected: Vec<(i64, Arc<Histogram>)> = want
                    .range((id, 0)..=(id, i64::MAX))
                    .map(|(&(_, t), h)| (t, h.clone()))
                    .collect();
                assert_eq!(got.len(), expected.len());
                assert!(got == expected, "series {id} differs after merges");
                assert_eq!(s.read(id, 10_000, 10_009).unwrap().len(), 10);
            }
            for blocks in s.flushed.values() {
                for b in blocks {
                    let (ts, _) = b.decode(0).unwrap();
                    assert!(ts.len() <= BLOCK_SAMPLES && ts.windows(2).all(|w| w[0] < w[1]));
                    assert_eq!((ts[0], ts[ts.len() - 1]), (b.mint, b.maxt));
                }
            }
        }
    }

    /// Files of version 1 (a block count up front) still open.
    #[test]
    fn version_1_files_still_decode() {
        let blocks: Vec<Encoded> = (0..3u64)
            .map(|id| Encoded::new(id, &[id as i64 * 10], &[to_value(&h(id as f64))]))
            .collect();
        let (v2, entries) = encode_file(&blocks);
        let mut v1 = FILE_MAGIC.to_vec();
        v1.extend_from_slice(&1u32.to_le_bytes());
        put_uvarint(&mut v1, blocks.len() as u64);
        let shift = v1.len() as u64 - 8;
        v1.extend_from_slice(&v2[8..v2.len() - 4]);
        v1.extend_from_slice(&cairn_codec::crc32c_append(0, &v1).to_le_bytes());
        let decoded = decode_file(&v1).unwrap();
        let shifted: Vec<Range<u64>> = entries
            .iter()
            .map(|e| e.bytes.start + shift..e.bytes.end + shift)
            .collect();
        assert_eq!(decoded.iter().map(|e| e.bytes.clone()).collect::<Vec<_>>(), shifted);
        // A count larger than the blocks there is damage.
        v1[8] = 4;
        let len = v1.len();
        let crc = cairn_codec::crc32c_append(0, &v1[..len - 4]).to_le_bytes();
        v1[len - 4..].copy_from_slice(&crc);
        assert!(decode_file(&v1).is_err());
        assert_eq!(decode_file(&v2).unwrap(), entries);
    }

    #[test]
    fn flushes_past_the_file_limit_merge_the_files_keeping_the_newest_bodies_of_live_series() {
        let dir = tempfile::tempdir().unwrap();
        let store = RwLock::new(HistogramStore::default());
        for seq in 1..=(MAX_FILES as u64 + 1) {
            store.write().insert(1, 10, h(seq as f64));
            store.write().insert(2, seq as i64, h(seq as f64));
            store.write().insert(3, seq as i64, h(seq as f64));
            // Series 3 is deleted by the time the files merge.
            let dead = |ids: &[u64]| ids.iter().copied().filter(|&id| id == 3).collect();
            HistogramStore::flush(&store, dir.path(), seq, dead, &Quarantine::new(dir.path())).unwrap();
        }
        let files = fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files, 1);
        for s in [&*store.read(), &HistogramStore::load(dir.path()).unwrap()] {
            assert_eq!(
                s.read(1, 0, 100).unwrap().into_values().collect::<Vec<_>>(),
                vec![h(9.0)]
            );
            assert_eq!(s.read(2, 0, 100).unwrap().len(), MAX_FILES + 1);
            assert!(!s.has(3));
        }
    }

    #[test]
    fn a_merge_of_the_files_leaves_out_blocks_that_do_not_decode_and_quarantines_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let quarantine = Quarantine::new(dir.path());
        let store = RwLock::new(HistogramStore::default());
        for seq in 1..=MAX_FILES as u64 {
            store.write().insert(1, seq as i64, h(seq as f64));
            store.write().insert(2, seq as i64, h(seq as f64));
            assert!(!HistogramStore::flush(&store, dir.path(), seq, none_dead, &quarantine).unwrap());
        }
        // Series 1's block of the second file rots after it was loaded.
        let path = dir.path().join(file_name(2));
        let bytes = fs::read(&path).unwrap();
        let entries = decode_file(&bytes).unwrap();
        let block = entries.iter().find(|e| e.id == 1).unwrap().bytes.clone();
        let mut rotten = bytes.clone();
        rotten[block.start as usize..block.end as usize].fill(0xff);
        fs::write(&path, &rotten).unwrap();
        assert!(store.read().read(1, 0, 100).is_err());
        store.write().insert(2, 100, h(100.0));
        let lost = HistogramStore::flush(&store, dir.path(), 100, none_dead, &quarantine).unwrap();
        assert!(lost);
        assert_eq!(
            fs::read(dir.path().join("quarantine").join(file_name(2))).unwrap(),
            rotten
        );
        assert_eq!(quarantine.counts()[3], ("histograms", 1));
        let kept: Vec<i64> = store.read().read(1, 0, 100).unwrap().into_keys().collect();
        assert_eq!(kept, [1, 3, 4, 5, 6, 7, 8]);
        assert_eq!(store.read().read(2, 0, 100).unwrap().len(), MAX_FILES + 1);
    }

    /// A file of many chunks (blocks straddling the chunk boundaries) reads
    /// from a file as it does from memory, and damage past the first chunk
    /// is found.
    #[test]
    fn a_file_larger_than_a_read_chunk_decodes_chunk_by_chunk() {
        let blocks: Vec<Encoded> = (0..3000u64)
            .map(|id| Encoded {
                id,
                mint: id as i64,
                maxt: id as i64 + 7,
                bytes: vec![(id % 251) as u8; 997],
            })
            .collect();
        let (bytes, entries) = encode_file(&blocks);
        assert!(bytes.len() > 2 * SCAN_CHUNK);
        let decoded = decode_from(&bytes[..], bytes.len() as u64).unwrap().unwrap();
        let key = |e: &Entry| (e.id, e.mint, e.maxt, e.bytes.clone());
        assert_eq!(
            decoded.iter().map(key).collect::<Vec<_>>(),
            entries.iter().map(key).collect::<Vec<_>>()
        );
        let mut bad = bytes.clone();
        bad[SCAN_CHUNK + SCAN_CHUNK / 2] ^= 1;
        assert_eq!(
            decode_from(&bad[..], bad.len() as u64).unwrap().err(),
            Some("histogram file checksum mismatch")
        );
    }

    #[test]
    fn a_damaged_histogram_file_is_refused_and_decoding_never_panics() {
        let store = RwLock::new(HistogramStore::default());
        store.write().insert(1, 1, h(1.0));
        let dir = tempfile::tempdir().unwrap();
        HistogramStore::flush(&store, dir.path(), 3, none_dead, &Quarantine::new(dir.path())).unwrap();
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
        HistogramStore::flush(&store, dir.path(), 4, none_dead, &Quarantine::new(dir.path())).unwrap();
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
