use std::collections::HashMap;
use std::io::Write;

use cairn_codec::varint::put_uvarint;
use cairn_storage::StorageError;

use super::block_index::BlockIndexBuilder;
use super::reader::{BlockRef, Part};
use super::{BLOCK_SPAN_MS, MAGIC, MAX_BLOCK_SAMPLES, MAX_SHARED_COLUMNS, MIN_SHARED_TIMESTAMPS, SHARED_TIMESTAMPS};

/// What a part's footer records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartMeta {
    /// Range of write sequence numbers whose data the part holds; a newer
    /// sequence wins when two parts hold the same series and timestamp.
    pub min_seq: u64,
    pub max_seq: u64,
    pub mint: i64,
    pub maxt: i64,
    pub samples: u64,
    pub blocks: u64,
}

/// How hard a [`PartWriter`] works on compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockEncoding {
    /// The smallest of every coding (disk parts, which live long).
    Compact,
    /// Only the cheap codings (in-memory parts, which a merge soon re-encodes).
    Fast,
}

/// Streams a part: series in ascending id order, each with sorted, unique timestamps.
pub struct PartWriter<W: Write> {
    encoding: BlockEncoding,
    out: W,
    /// Packed as it is written, so a part's index is never held as the
    /// 48-byte entries of format 1.
    index: BlockIndexBuilder,
    meta: PartMeta,
    last_id: Option<u64>,
    scratch: Vec<u8>,
    /// Timestamp encodings already written, by hash: (block offset, bytes, crc).
    /// Series scraped together have identical timestamps; later blocks refer
    /// to the first instead of repeating it.
    columns: HashMap<u64, (u64, Vec<u8>, u32)>,
    /// Timestamp columns by a hash of the timestamps themselves: what a
    /// block with exactly these timestamps writes (usually a reference to
    /// the first such block), so the column is encoded once per part rather
    /// than once per series (encoding it 507 times per target was a tenth of
    /// ingest CPU). Holds at most [`RAW_COLUMN_BUDGET`] timestamps.
    raw_columns: HashMap<u64, (Vec<i64>, Vec<u8>)>,
    raw_column_timestamps: usize,
}

/// Timestamps [`PartWriter::raw_columns`] may hold (8 bytes each).
const RAW_COLUMN_BUDGET: usize = 1 << 21;

impl<W: Write> PartWriter<W> {
    pub fn new(mut out: W, min_seq: u64, max_seq: u64) -> std::io::Result<Self> {
        out.write_all(MAGIC)?;
        Ok(Self {
            encoding: BlockEncoding::Compact,
            out,
            index: BlockIndexBuilder::new(0),
            meta: PartMeta {
                min_seq,
                max_seq,
                mint: i64::MAX,
                maxt: i64::MIN,
                samples: 0,
                blocks: 0,
            },
            last_id: None,
            scratch: Vec::new(),
            columns: HashMap::new(),
            raw_columns: HashMap::new(),
            raw_column_timestamps: 0,
        })
    }

    /// Uses `encoding` for the blocks written from now on.
    pub fn with_encoding(mut self, encoding: BlockEncoding) -> Self {
        self.encoding = encoding;
        self
    }

    /// Adds one series. Panics (a bug) if ids are not ascending or timestamps
    /// are not strictly increasing.
    pub fn add_series(&mut self, id: u64, ts: &[i64], vs: &[f64]) -> std::io::Result<()> {
        assert!(
            self.last_id.is_none_or(|last| last < id),
            "BUG: part series ids must ascend"
        );
        assert_eq!(ts.len(), vs.len(), "BUG: timestamp and value counts differ");
        debug_assert!(
            ts.windows(2).all(|w| w[0] < w[1]),
            "BUG: timestamps must strictly increase"
        );
        self.last_id = Some(id);
        let mut start = 0;
        while start < ts.len() {
            let end = block_end(ts, vs, start);
            self.add_block(id, &ts[start..end], &vs[start..end])?;
            start = end;
        }
        Ok(())
    }

    /// Writes one block: `ts` is non-empty and strictly increasing.
    fn add_block(&mut self, id: u64, ts: &[i64], vs: &[f64]) -> std::io::Result<()> {
        self.scratch.clear();
        let key = hash_timestamps(ts);
        match self.raw_columns.get(&key) {
            Some((raw, written)) if raw.as_slice() == ts => self.scratch.extend_from_slice(written),
            _ => {
                match self.encoding {
                    BlockEncoding::Compact => cairn_codec::encode_timestamps(&mut self.scratch, ts),
                    BlockEncoding::Fast => cairn_codec::encode_timestamps_fast(&mut self.scratch, ts),
                }
                let reference = self.share_timestamps(ts.len());
                if self.raw_column_timestamps + ts.len() <= RAW_COLUMN_BUDGET {
                    self.raw_column_timestamps += ts.len();
                    let later = reference.unwrap_or_else(|| self.scratch.clone());
                    self.raw_columns.insert(key, (ts.to_vec(), later));
                }
            }
        }
        match self.encoding {
            BlockEncoding::Compact => cairn_codec::encode_values(&mut self.scratch, vs),
            BlockEncoding::Fast => cairn_codec::encode_values_fast(&mut self.scratch, vs),
        }
        let (mint, maxt) = (ts[0], ts[ts.len() - 1]);
        self.out.write_all(&self.scratch)?;
        let block = BlockRef::new(
            id,
            mint,
            maxt,
            self.index.offset(),
            u32::try_from(self.scratch.len()).map_err(|_| std::io::Error::other("block over 4 GiB"))?,
            ts.len() as u32,
            cairn_codec::crc32c(&self.scratch),
        );
        self.index.push(block).map_err(std::io::Error::other)?;
        self.meta.mint = self.meta.mint.min(mint);
        self.meta.maxt = self.meta.maxt.max(maxt);
        self.meta.samples += ts.len() as u64;
        self.meta.blocks += 1;
        Ok(())
    }

    /// `scratch` holds this block's encoding of `count` timestamps: replaces
    /// it with a reference when an earlier block has the same, else
    /// remembers it. Returns the reference a later block with the same
    /// timestamps writes, if it is not to repeat the encoding.
    fn share_timestamps(&mut self, count: usize) -> Option<Vec<u8>> {
        // A short column, or an encoding no longer than a reference to it,
        // is not worth one.
        let offset = self.index.offset();
        if count < MIN_SHARED_TIMESTAMPS || self.scratch.len() <= reference_bytes(offset, self.scratch.len()) {
            return None;
        }
        let hash = xxhash_rust::xxh3::xxh3_64(&self.scratch);
        match self.columns.get(&hash) {
            Some((offset, bytes, crc)) if *bytes == self.scratch => {
                let reference = shared_reference(*offset, bytes.len(), *crc);
                self.scratch.clear();
                self.scratch.extend_from_slice(&reference);
                return Some(reference);
            }
            Some(_) => {} // a hash collision: write this column in full
            None if self.columns.len() < MAX_SHARED_COLUMNS => {
                let crc = cairn_codec::crc32c(&self.scratch);
                let reference = shared_reference(offset, self.scratch.len(), crc);
                self.columns.insert(hash, (offset, self.scratch.clone(), crc));
                return Some(reference);
            }
            None => {}
        }
        None
    }

    /// Writes the index and footer; returns the writer and the part's metadata.
    pub fn finish(mut self) -> std::io::Result<(W, PartMeta)> {
        let index_offset = self.index.offset();
        let index = self.index.packed();
        self.out.write_all(index)?;
        let mut footer = Vec::with_capacity(super::FOOTER_BYTES);
        footer.extend_from_slice(&index_offset.to_le_bytes());
        footer.extend_from_slice(&self.meta.blocks.to_le_bytes());
        footer.extend_from_slice(&self.meta.min_seq.to_le_bytes());
        footer.extend_from_slice(&self.meta.max_seq.to_le_bytes());
        footer.extend_from_slice(&self.meta.mint.to_le_bytes());
        footer.extend_from_slice(&self.meta.maxt.to_le_bytes());
        footer.extend_from_slice(&self.meta.samples.to_le_bytes());
        footer.extend_from_slice(&cairn_codec::crc32c(index).to_le_bytes());
        footer.extend_from_slice(&cairn_codec::crc32c(&footer).to_le_bytes());
        footer.extend_from_slice(MAGIC);
        debug_assert_eq!(footer.len(), super::FOOTER_BYTES);
        self.out.write_all(&footer)?;
        self.out.flush()?;
        Ok((self.out, self.meta))
    }
}

impl PartWriter<Vec<u8>> {
    /// The part written so far, held in memory: its blocks stay in this
    /// writer's buffer and its index as packed, with no footer written and
    /// nothing parsed back.
    pub fn finish_in_memory(self) -> Result<Part, StorageError> {
        let corrupt = |reason: &str| StorageError::Corrupt {
            path: "<memory part>".into(),
            reason: reason.to_string(),
        };
        let index = self.index.finish(self.out.len() as u64).map_err(corrupt)?;
        Ok(Part::in_memory(self.out, index, self.meta))
    }
}

/// Where the block starting at `ts[start]` ends (exclusive): at the next
/// multiple of [`BLOCK_SPAN_MS`], after at most [`MAX_BLOCK_SAMPLES`] samples,
/// and after at least one. A block of one repeated value decodes at about the
/// cost of a copy whatever its length, so it runs on over whole windows that
/// repeat the value: most node_exporter series are constant for hours, and a
/// block costs about 70 bytes of index, timestamp reference and header.
fn block_end(ts: &[i64], vs: &[f64], start: usize) -> usize {
    let limit = ts.len().min(start + MAX_BLOCK_SAMPLES);
    let mut end = window_end(ts, start, limit);
    let bits = vs[start].to_bits();
    let repeats = |range: std::ops::Range<usize>| vs[range].iter().all(|v| v.to_bits() == bits);
    if repeats(start..end) {
        while end < limit {
            let next = window_end(ts, end, limit);
            // A window that reaches the sample cap may go on past it: not
            // known to be whole, so the run stops before it.
            if (next == limit && limit < ts.len()) || !repeats(end..next) {
                break;
            }
            end = next;
        }
    }
    end
}

/// The end of the window `ts[start]` lies in, within `..limit`, after at
/// least one sample.
fn window_end(ts: &[i64], start: usize, limit: usize) -> usize {
    let next_cut = ts[start]
        .div_euclid(BLOCK_SPAN_MS)
        .checked_add(1)
        .and_then(|w| w.checked_mul(BLOCK_SPAN_MS))
        .unwrap_or(i64::MAX);
    start + ts[start..limit].partition_point(|&t| t < next_cut).max(1)
}

/// The longest reference to shared timestamps: tag, two uvarints, crc.
const MAX_REFERENCE_BYTES: usize = 1 + 10 + 5 + 4;

/// How long a reference to `len` timestamp bytes at `offset` is.
fn reference_bytes(offset: u64, len: usize) -> usize {
    let uvarint = |x: u64| (64 - (x | 1).leading_zeros() as usize).div_ceil(7);
    1 + uvarint(offset) + uvarint(len as u64) + 4
}

/// A block's reference to the timestamp bytes of an earlier block
/// ([`SHARED_TIMESTAMPS`]).
fn shared_reference(offset: u64, len: usize, crc: u32) -> Vec<u8> {
    let mut r = Vec::with_capacity(MAX_REFERENCE_BYTES);
    r.push(SHARED_TIMESTAMPS);
    put_uvarint(&mut r, offset);
    put_uvarint(&mut r, len as u64);
    r.extend_from_slice(&crc.to_le_bytes());
    r
}

/// A fast hash of a timestamp column, for [`PartWriter::raw_columns`]
/// (a match is confirmed by comparing the timestamps).
fn hash_timestamps(ts: &[i64]) -> u64 {
    ts.iter().fold(ts.len() as u64, |h, &t| {
        (h ^ t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29)
    })
}
