use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use cairn_bucket::{Bucket, ObjectInfo};
use cairn_codec::varint::get_uvarint;
use cairn_storage::StorageError;

use super::block_index::{BlockCursor, BlockIndex, BlockIndexBuilder};
use super::{
    ENTRY_BYTES, FOOTER_BYTES, MAGIC, MAGIC_V1, MAX_TIMESTAMP_BYTES, PartMeta, SHARED_TIMESTAMPS,
    V1_SHARED_TIMESTAMPS_BYTES,
};

/// Blocks this process has found damaged, in any part of any engine: a
/// find changes what reads answer, as a delete does, so it counts among
/// the changes of settled data (see `Tsdb::settled_changes`).
pub(crate) static BLOCKS_FOUND_DAMAGED: AtomicU64 = AtomicU64::new(0);

/// Where a block lives inside a part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRef {
    pub id: u64,
    pub mint: i64,
    pub maxt: i64,
    offset: u64,
    len: u32,
    pub count: u32,
    crc: u32,
}

/// Where a part's bytes are.
enum Data {
    Memory(Vec<u8>),
    File(File),
    /// An object in the bucket, read by range through its cache.
    Object {
        bucket: Arc<Bucket>,
        object: ObjectInfo,
    },
}

impl Data {
    /// Fills `buf` from `offset` of a file or object; `name` is the part's,
    /// for errors. Memory parts are sliced, never read.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64, name: &Path) -> Result<(), StorageError> {
        match self {
            Data::Memory(m) => {
                let piece = slice_at(m, offset, buf.len() as u32).ok_or_else(|| StorageError::Corrupt {
                    path: name.to_path_buf(),
                    reason: "read out of bounds".into(),
                })?;
                buf.copy_from_slice(piece);
                Ok(())
            }
            Data::File(f) => f.read_exact_at(buf, offset).map_err(StorageError::io("read", name)),
            Data::Object { bucket, object } => bucket.read_at(object, offset, buf),
        }
    }
}

impl BlockRef {
    /// Whether some of its samples may lie in `[mint, maxt]`.
    pub fn overlaps(&self, mint: i64, maxt: i64) -> bool {
        self.maxt >= mint && self.mint <= maxt
    }

    pub(super) fn new(id: u64, mint: i64, maxt: i64, offset: u64, len: u32, count: u32, crc: u32) -> Self {
        Self {
            id,
            mint,
            maxt,
            offset,
            len,
            count,
            crc,
        }
    }

    /// Where the block's bytes start and end in its part.
    pub fn start(&self) -> u64 {
        self.offset
    }

    pub fn end(&self) -> u64 {
        self.offset.saturating_add(u64::from(self.len))
    }

    /// Length of the block's bytes.
    pub fn byte_len(&self) -> u32 {
        self.len
    }

    pub(super) fn crc(&self) -> u32 {
        self.crc
    }
}

/// Bytes of consecutive blocks of a stored part (file or object), read with one call and kept for
/// the blocks that follow (a series' blocks lie one after another).
#[derive(Default)]
pub struct ReadBuffer {
    part_uid: u64,
    start: u64,
    bytes: Vec<u8>,
}

/// At most this much is read ahead in one call.
const MAX_READ_AHEAD: u64 = 1 << 20;

/// Format-1 index entries opening a file part reads at a time (1.5 MiB).
pub(super) const INDEX_READ_ENTRIES: usize = 1 << 15;

/// A byte range of a stored part holding blocks of several series one select
/// reads ([`crate::shared_reads`]): read with one call when the first of
/// them is decoded, then shared by the readers of all of them.
pub struct SharedRead {
    part_uid: u64,
    start: u64,
    end: u64,
    bytes: OnceLock<Vec<u8>>,
}

impl SharedRead {
    /// `[start, end)` of `part`, which must be a stored part.
    pub fn new(part: &Part, start: u64, end: u64) -> Self {
        Self {
            part_uid: part.uid,
            start,
            end,
            bytes: OnceLock::new(),
        }
    }

    fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Whether the bytes of `b` lie within this read.
    pub fn covers(&self, b: &BlockRef) -> bool {
        self.start <= b.start() && b.end() <= self.end
    }
}

/// The part formats a reader understands (docs/format/part.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// 48-byte index entries, 17-byte shared-timestamp references.
    V1,
    /// Packed index entries, varint shared-timestamp references.
    V2,
}

/// How errors name a part held in memory.
const MEMORY_PART: &str = "<memory part>";

/// Source of [`Part::uid`]s; 0 is never handed out (an empty [`ReadBuffer`]).
static NEXT_UID: AtomicU64 = AtomicU64::new(1);

/// An immutable part, in memory, in a file or in the bucket. The block index
/// is held in memory, packed (about 16 bytes per block); blocks are read on
/// demand.
pub struct Part {
    /// Unique among the parts of this process: names the part in caches.
    uid: u64,
    format: Format,
    meta: PartMeta,
    index: BlockIndex,
    data: Data,
    /// The file's path or the object's URL, as errors name the part.
    name: PathBuf,
    bytes: u64,
    /// Set once a read found a block of the stored part damaged (then
    /// listed in `lost`): a flag, so intact parts' reads take no lock.
    damaged: AtomicBool,
    /// The blocks found damaged, by offset: reads leave them out.
    lost: parking_lot::Mutex<BTreeMap<u64, LostBlock>>,
}

/// A block of a stored part whose bytes failed their checksum or did not
/// decode: its series' samples over its time range are lost from this part.
#[derive(Debug, Clone, PartialEq)]
pub struct LostBlock {
    /// The series' id in its partition.
    pub id: u64,
    pub mint: i64,
    pub maxt: i64,
    pub samples: u32,
    pub reason: String,
}

fn le_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(*b.get(at..at + 8)?.first_chunk::<8>()?))
}

fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(*b.get(at..at + 4)?.first_chunk::<4>()?))
}

impl Part {
    /// A part held in memory, as [`super::PartWriter`] writes it to a `Vec`.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self, StorageError> {
        let corrupt = |reason: &str| StorageError::Corrupt {
            path: PathBuf::from(MEMORY_PART),
            reason: reason.to_string(),
        };
        let footer_at = bytes
            .len()
            .checked_sub(FOOTER_BYTES)
            .ok_or_else(|| corrupt("too short"))?;
        let footer = bytes.get(footer_at..).ok_or_else(|| corrupt("too short"))?;
        let (format, meta, index_offset) = parse_footer(footer).map_err(corrupt)?;
        let raw = bytes
            .get(index_offset as usize..footer_at)
            .ok_or_else(|| corrupt("index out of bounds"))?;
        let index = match format {
            Format::V1 => {
                let mut packer = IndexPacker::new(meta.blocks, raw.len() as u64);
                packer.feed(raw);
                packer.finish(footer, index_offset)
            }
            Format::V2 => unpack_index(raw.to_vec(), footer, &meta, index_offset),
        }
        .map_err(corrupt)?;
        Ok(Self {
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            format,
            meta,
            index,
            bytes: bytes.len() as u64,
            data: Data::Memory(bytes),
            name: PathBuf::from(MEMORY_PART),
            damaged: AtomicBool::new(false),
            lost: Default::default(),
        })
    }

    /// A part held in memory whose blocks are `data` (from the magic up to
    /// where the index would start) and whose index is `index`. Its size
    /// counts both, as memory limits do.
    pub(super) fn in_memory(data: Vec<u8>, index: BlockIndex, meta: PartMeta) -> Self {
        Self {
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            format: Format::V2,
            meta,
            bytes: data.len() as u64 + index.heap_bytes() as u64,
            index,
            data: Data::Memory(data),
            name: PathBuf::from(MEMORY_PART),
            damaged: AtomicBool::new(false),
            lost: Default::default(),
        }
    }

    /// Opens a part file, verifying its footer and index checksums.
    pub fn open(path: &Path) -> Result<Self, StorageError> {
        let file = File::open(path).map_err(StorageError::io("open", path))?;
        let len = file.metadata().map_err(StorageError::io("stat", path))?.len();
        Self::open_stored(Data::File(file), len, path.to_path_buf())
    }

    /// Opens a part kept in the bucket: reads its footer and index (by range,
    /// through the cache) and verifies their checksums; blocks are read as
    /// queries need them.
    pub fn open_object(bucket: Arc<Bucket>, object: ObjectInfo) -> Result<Self, StorageError> {
        let (len, name) = (object.size, bucket.url_of(&object.key));
        Self::open_stored(Data::Object { bucket, object }, len, name)
    }

    fn open_stored(data: Data, len: u64, name: PathBuf) -> Result<Self, StorageError> {
        let corrupt = |reason: &str| StorageError::Corrupt {
            path: name.clone(),
            reason: reason.to_string(),
        };
        if len < (MAGIC.len() + FOOTER_BYTES) as u64 {
            return Err(corrupt("file too short to be a part"));
        }
        let mut footer = [0u8; FOOTER_BYTES];
        data.read_exact_at(&mut footer, len - FOOTER_BYTES as u64, &name)?;
        let (format, meta, index_offset) = parse_footer(&footer).map_err(corrupt)?;
        let index_len = (len - FOOTER_BYTES as u64)
            .checked_sub(index_offset)
            .ok_or_else(|| corrupt("index out of bounds"))?;
        let index = match format {
            Format::V1 => {
                if meta.blocks.checked_mul(ENTRY_BYTES as u64) != Some(index_len) {
                    return Err(corrupt("index size does not match file size"));
                }
                // Packed a bounded read at a time: the raw index is three
                // times the packed one.
                let mut packer = IndexPacker::new(meta.blocks, index_len);
                let mut buf = vec![0u8; INDEX_READ_ENTRIES * ENTRY_BYTES];
                let mut at = index_offset;
                while at < index_offset + index_len {
                    let n = ((index_offset + index_len - at) as usize).min(buf.len());
                    let chunk = &mut buf[..n];
                    data.read_exact_at(chunk, at, &name)?;
                    packer.feed(chunk);
                    at += n as u64;
                }
                packer.finish(&footer, index_offset)
            }
            Format::V2 => {
                // Read straight into the vector the index keeps.
                let mut packed = vec![0u8; index_len as usize];
                data.read_exact_at(&mut packed, index_offset, &name)?;
                unpack_index(packed, &footer, &meta, index_offset)
            }
        }
        .map_err(corrupt)?;
        Ok(Self {
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            format,
            meta,
            index,
            data,
            name,
            bytes: len,
            damaged: AtomicBool::new(false),
            lost: Default::default(),
        })
    }

    pub fn meta(&self) -> &PartMeta {
        &self.meta
    }

    /// The part's file, if it is one.
    pub fn path(&self) -> Option<&Path> {
        matches!(self.data, Data::File(_)).then_some(self.name.as_path())
    }

    /// The part's object in the bucket, if it is one.
    pub fn object(&self) -> Option<&ObjectInfo> {
        match &self.data {
            Data::Object { object, .. } => Some(object),
            _ => None,
        }
    }

    /// Size in bytes (file or memory).
    pub fn size_bytes(&self) -> u64 {
        self.bytes
    }

    pub fn block_count(&self) -> usize {
        self.index.len()
    }

    /// The version of the format the part is in (1 or 2).
    pub fn format_version(&self) -> u32 {
        match self.format {
            Format::V1 => 1,
            Format::V2 => 2,
        }
    }

    /// Distinct series with blocks here (walks the whole block index).
    pub fn series_count(&self) -> u64 {
        let mut last = None;
        self.blocks().filter(|b| last.replace(b.id) != Some(b.id)).count() as u64
    }

    /// Every block, in (id, mint) order.
    pub fn blocks(&self) -> impl Iterator<Item = BlockRef> + '_ {
        self.index.iter_from(0)
    }

    /// Blocks of series `id` that overlap `[mint, maxt]`, in time order.
    #[cfg(test)]
    pub fn blocks_of(&self, id: u64, mint: i64, maxt: i64) -> impl Iterator<Item = BlockRef> + use<> {
        let mut out = Vec::new();
        self.block_cursor().series(id, |b| {
            if b.overlaps(mint, maxt) {
                out.push(b);
            }
        });
        out.into_iter()
    }

    /// A cursor over the block index for series visited in ascending id order.
    pub fn block_cursor(&self) -> BlockCursor<'_> {
        self.index.cursor()
    }

    /// Decodes a block, appending to `ts` and `vs`.
    pub fn read_block(&self, b: &BlockRef, ts: &mut Vec<i64>, vs: &mut Vec<f64>) -> Result<(), StorageError> {
        self.read_block_buffered(b, std::iter::empty(), &mut ReadBuffer::default(), ts, vs)
    }

    /// Decodes a block like [`Self::read_block`]. A stored part's block is taken
    /// from `buf` when it holds it; otherwise `buf` is refilled with this block
    /// and those of `ahead` (blocks of this part to be read next, in order)
    /// that follow it without a gap, in one read.
    pub fn read_block_buffered<'a>(
        &self,
        b: &BlockRef,
        ahead: impl Iterator<Item = &'a BlockRef>,
        buf: &mut ReadBuffer,
        ts: &mut Vec<i64>,
        vs: &mut Vec<f64>,
    ) -> Result<(), StorageError> {
        let bytes: &[u8] = match &self.data {
            Data::Memory(m) => slice_at(m, b.offset, b.len).ok_or_else(|| self.corrupt(b, "block out of bounds"))?,
            // The index, checked at open, places the block past the part's end.
            Data::File(_) | Data::Object { .. } if b.end() > self.bytes => {
                return Err(self.damaged(b, self.corrupt(b, "block out of bounds")));
            }
            Data::File(_) | Data::Object { .. } => {
                let held =
                    buf.part_uid == self.uid && buf.start <= b.offset && b.end() <= buf.start + buf.bytes.len() as u64;
                if !held {
                    let mut end = b.end();
                    for next in ahead {
                        if next.offset != end || next.end() > self.bytes || next.end() - b.offset > MAX_READ_AHEAD {
                            break;
                        }
                        end = next.end();
                    }
                    buf.part_uid = 0;
                    buf.bytes.resize((end - b.offset) as usize, 0);
                    self.data.read_exact_at(&mut buf.bytes, b.offset, &self.name)?;
                    (buf.part_uid, buf.start) = (self.uid, b.offset);
                }
                let at = (b.offset - buf.start) as usize;
                buf.bytes
                    .get(at..at + b.len as usize)
                    .ok_or_else(|| self.corrupt(b, "block out of bounds"))?
            }
        };
        self.decode_block(b, bytes, ts, vs)
    }

    /// Whether blocks are read from a file or the bucket (not held in memory).
    pub fn is_stored(&self) -> bool {
        !matches!(self.data, Data::Memory(_))
    }

    /// Decodes block `b` of this stored part from `shared`, which covers it,
    /// reading `shared` first if no reader has yet.
    pub fn read_block_shared(
        &self,
        b: &BlockRef,
        shared: &SharedRead,
        ts: &mut Vec<i64>,
        vs: &mut Vec<f64>,
    ) -> Result<(), StorageError> {
        if !self.is_stored() {
            return self.read_block(b, ts, vs);
        }
        if shared.part_uid != self.uid || b.offset < shared.start || b.end() > shared.end || shared.end > self.bytes {
            return Err(self.corrupt(b, "block outside its shared read"));
        }
        let bytes = match shared.bytes.get() {
            Some(bytes) => bytes,
            None => {
                let mut bytes = vec![0; shared.len() as usize];
                self.data.read_exact_at(&mut bytes, shared.start, &self.name)?;
                shared.bytes.get_or_init(|| bytes)
            }
        };
        let at = (b.offset - shared.start) as usize;
        let block = bytes
            .get(at..at + b.len as usize)
            .ok_or_else(|| self.corrupt(b, "block out of bounds"))?;
        self.decode_block(b, block, ts, vs)
    }

    /// Checks and decodes the bytes of block `b`; a block of a stored part
    /// found damaged is listed as lost (see [`Self::lost_block`]).
    fn decode_block(
        &self,
        b: &BlockRef,
        bytes: &[u8],
        ts: &mut Vec<i64>,
        vs: &mut Vec<f64>,
    ) -> Result<(), StorageError> {
        self.decode_checked_block(b, bytes, ts, vs)
            .map_err(|e| self.damaged(b, e))
    }

    /// `e`, after listing block `b` of a stored part as lost when `e` says
    /// its bytes are damaged. A read that failed (a file or bucket error)
    /// loses nothing: the next read may succeed.
    fn damaged(&self, b: &BlockRef, e: StorageError) -> StorageError {
        if let StorageError::Corrupt { reason, .. } = &e
            && self.is_stored()
        {
            self.lose(b, reason);
        }
        e
    }

    fn lose(&self, b: &BlockRef, reason: &str) {
        let reason = reason.to_string();
        let mut lost = self.lost.lock();
        if lost.contains_key(&b.offset) {
            return;
        }
        tracing::error!(part = %self.name.display(), series = b.id, mint = b.mint, maxt = b.maxt, %reason,
            "a block is damaged: its samples are left out of answers, which say so");
        lost.insert(
            b.offset,
            LostBlock {
                id: b.id,
                mint: b.mint,
                maxt: b.maxt,
                samples: b.count,
                reason,
            },
        );
        self.damaged.store(true, Ordering::Relaxed);
        BLOCKS_FOUND_DAMAGED.fetch_add(1, Ordering::AcqRel);
    }

    /// The file's path or the object's URL, as errors name the part.
    pub fn name(&self) -> &Path {
        &self.name
    }

    /// Whether a read found a block of this stored part damaged.
    pub fn is_damaged(&self) -> bool {
        self.damaged.load(Ordering::Relaxed)
    }

    /// Reads every block, so that each damaged one is listed as lost.
    pub fn find_damaged_blocks(&self) -> Result<(), StorageError> {
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        for b in self.blocks() {
            ts.clear();
            vs.clear();
            if let Err(e) = self.read_block(&b, &mut ts, &mut vs)
                && self.lost_block(&b).is_none()
            {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Block `b`, if a read found it damaged.
    pub fn lost_block(&self, b: &BlockRef) -> Option<LostBlock> {
        if !self.is_damaged() {
            return None;
        }
        self.lost.lock().get(&b.offset).cloned()
    }

    /// The blocks reads found damaged, in file order.
    pub fn lost_blocks(&self) -> Vec<LostBlock> {
        self.lost.lock().values().cloned().collect()
    }

    fn decode_checked_block(
        &self,
        b: &BlockRef,
        bytes: &[u8],
        ts: &mut Vec<i64>,
        vs: &mut Vec<f64>,
    ) -> Result<(), StorageError> {
        if cairn_codec::crc32c(bytes) != b.crc {
            return Err(self.corrupt(b, "block checksum mismatch"));
        }
        let (t0, v0) = (ts.len(), vs.len());
        let rest = if bytes.first() == Some(&SHARED_TIMESTAMPS) {
            self.read_shared_timestamps(b, bytes, ts)?
        } else {
            cairn_codec::decode_timestamps(bytes, ts).map_err(|e| self.corrupt(b, &e.to_string()))?
        };
        let rest = cairn_codec::decode_values(rest, vs).map_err(|e| {
            ts.truncate(t0);
            self.corrupt(b, &e.to_string())
        })?;
        if !rest.is_empty() || ts.len() - t0 != b.count as usize || vs.len() - v0 != b.count as usize {
            ts.truncate(t0);
            vs.truncate(v0);
            return Err(self.corrupt(b, "block sample count mismatch"));
        }
        Ok(())
    }

    /// Appends the timestamps another block of this part holds, for a block
    /// that refers to them (see [`SHARED_TIMESTAMPS`]): from the thread's
    /// cache, or read, checked against the crc the reference carries, decoded
    /// and cached. Returns the block's bytes after the reference.
    fn read_shared_timestamps<'a>(
        &self,
        b: &BlockRef,
        block: &'a [u8],
        ts: &mut Vec<i64>,
    ) -> Result<&'a [u8], StorageError> {
        let (offset, len, crc, rest) = match self.format {
            Format::V1 => (|| {
                let rest = block.get(V1_SHARED_TIMESTAMPS_BYTES..)?;
                Some((le_u64(block, 1)?, le_u32(block, 9)?, le_u32(block, 13)?, rest))
            })(),
            Format::V2 => (|| {
                let (offset, r) = get_uvarint(block.get(1..)?).ok()?;
                let (len, r) = get_uvarint(r).ok()?;
                let (crc, rest) = r.split_first_chunk::<4>()?;
                Some((offset, u32::try_from(len).ok()?, u32::from_le_bytes(*crc), rest))
            })(),
        }
        .ok_or_else(|| self.corrupt(b, "truncated shared-timestamps reference"))?;
        if len > MAX_TIMESTAMP_BYTES || offset >= b.offset {
            return Err(self.corrupt(b, "shared-timestamps reference out of bounds"));
        }
        let key = (self.uid, offset);
        if super::ts_cache::get(key, ts) {
            return Ok(rest);
        }
        let shared = match &self.data {
            Data::Memory(m) => slice_at(m, offset, len)
                .ok_or_else(|| self.corrupt(b, "shared-timestamps reference out of bounds"))?
                .to_vec(),
            Data::File(_) | Data::Object { .. } => {
                let mut owned = vec![0; len as usize];
                self.data.read_exact_at(&mut owned, offset, &self.name)?;
                owned
            }
        };
        if cairn_codec::crc32c(&shared) != crc {
            return Err(self.corrupt(b, "shared timestamps checksum mismatch"));
        }
        let t0 = ts.len();
        let trailing = cairn_codec::decode_timestamps(&shared, ts).map_err(|e| self.corrupt(b, &e.to_string()))?;
        if !trailing.is_empty() {
            ts.truncate(t0);
            return Err(self.corrupt(b, "shared timestamps have trailing bytes"));
        }
        super::ts_cache::put(key, &ts[t0..]);
        Ok(rest)
    }

    fn corrupt(&self, b: &BlockRef, reason: &str) -> StorageError {
        StorageError::Corrupt {
            path: self.name.clone(),
            reason: format!("{reason} (series {:016x}, block at offset {})", b.id, b.offset),
        }
    }
}

/// `len` bytes of `m` at `offset`, if they lie inside it.
fn slice_at(m: &[u8], offset: u64, len: u32) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    m.get(start..start.checked_add(len as usize)?)
}

/// Packs a part's raw index, fed in pieces of whole entries, and checks it
/// against the footer: its size, its checksum (the error to report for a
/// damaged index, whatever the damage broke first), then its order.
struct IndexPacker {
    builder: BlockIndexBuilder,
    entries: u64,
    bytes: u64,
    crc: u32,
    malformed: Option<&'static str>,
}

impl IndexPacker {
    /// For an index said to hold `entries` entries, sized for `bytes` of
    /// them (what is there: the footer's count is only checked at the end).
    fn new(entries: u64, bytes: u64) -> Self {
        Self {
            builder: BlockIndexBuilder::new((bytes / ENTRY_BYTES as u64) as usize),
            entries,
            bytes: 0,
            crc: 0,
            malformed: None,
        }
    }

    fn feed(&mut self, piece: &[u8]) {
        self.bytes += piece.len() as u64;
        self.crc = cairn_codec::crc32c_append(self.crc, piece);
        if self.malformed.is_none() {
            self.malformed = piece
                .chunks_exact(ENTRY_BYTES)
                .try_for_each(|e| self.builder.push_v1(e))
                .err();
        }
    }

    fn finish(self, footer: &[u8], index_offset: u64) -> Result<BlockIndex, &'static str> {
        if Some(self.bytes) != self.entries.checked_mul(ENTRY_BYTES as u64) {
            return Err("index size mismatch");
        }
        if le_u32(footer, 56).ok_or("malformed footer")? != self.crc {
            return Err("index checksum mismatch");
        }
        if let Some(reason) = self.malformed {
            return Err(reason);
        }
        self.builder.finish(index_offset)
    }
}

/// A format-2 index read whole: checked against the footer's checksum (the
/// error to report for a damaged index, whatever the damage broke first),
/// then unpacked.
fn unpack_index(
    packed: Vec<u8>,
    footer: &[u8],
    meta: &PartMeta,
    index_offset: u64,
) -> Result<BlockIndex, &'static str> {
    if le_u32(footer, 56).ok_or("malformed footer")? != cairn_codec::crc32c(&packed) {
        return Err("index checksum mismatch");
    }
    BlockIndex::from_packed(packed, meta.blocks, index_offset)
}

/// The format, metadata and index offset a footer records.
fn parse_footer(f: &[u8]) -> Result<(Format, PartMeta, u64), &'static str> {
    let bad = "malformed footer";
    let format = match f.get(FOOTER_BYTES - 8..) {
        Some(m) if m == &MAGIC[..] => Format::V2,
        Some(m) if m == &MAGIC_V1[..] => Format::V1,
        _ => return Err("bad magic: not a part file"),
    };
    let body = f.get(..60).ok_or(bad)?;
    if le_u32(f, 60).ok_or(bad)? != cairn_codec::crc32c(body) {
        return Err("footer checksum mismatch");
    }
    let meta = PartMeta {
        min_seq: le_u64(f, 16).ok_or(bad)?,
        max_seq: le_u64(f, 24).ok_or(bad)?,
        mint: le_u64(f, 32).ok_or(bad)? as i64,
        maxt: le_u64(f, 40).ok_or(bad)? as i64,
        samples: le_u64(f, 48).ok_or(bad)?,
        blocks: le_u64(f, 8).ok_or(bad)?,
    };
    let index_offset = le_u64(f, 0).ok_or(bad)?;
    if index_offset < MAGIC.len() as u64 {
        return Err("index out of bounds");
    }
    Ok((format, meta, index_offset))
}
