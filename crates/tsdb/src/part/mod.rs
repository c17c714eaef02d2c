//! Immutable parts: per-series compressed sample blocks plus a block index.
//!
//! A part is self-describing (magic, footer with its own checksum, checksummed
//! index and blocks), so it can be read from a local file, from memory, or
//! later by range requests from object storage. Format: docs/format/part.md.

mod block_index;
mod reader;
mod ts_cache;
mod writer;

pub use block_index::BlockCursor;
pub(crate) use reader::BLOCKS_FOUND_DAMAGED;
pub use reader::{BlockRef, LostBlock, Part, ReadBuffer, SharedRead};
pub use writer::{BlockEncoding, PartMeta, PartWriter};

pub const MAGIC: &[u8; 8] = b"CAIRNPT2";
/// Format 1: the same blocks and footer, but an index of 48-byte entries and
/// 17-byte shared-timestamp references. Still read; no longer written.
pub const MAGIC_V1: &[u8; 8] = b"CAIRNPT1";
/// Bytes of a format-1 index entry.
pub const ENTRY_BYTES: usize = 48;
pub const FOOTER_BYTES: usize = 72;
/// Longer series are split into several blocks so a reader decodes bounded chunks.
pub const MAX_BLOCK_SAMPLES: usize = 8192;
/// Blocks are cut at every multiple of this many milliseconds since the epoch
/// (2 h, as Prometheus' head chunks): a query over the last few minutes decodes
/// one 2 h window per series, not a whole merged day. Only a run of one
/// repeated value spans several whole windows (it decodes as cheaply as a
/// copy). Series scraped together are cut at the same instants, so they keep
/// sharing timestamp columns.
pub const BLOCK_SPAN_MS: i64 = 2 * 3600 * 1000;
/// First byte of a block whose timestamps are those of an earlier block of the
/// same part (series scraped together share every timestamp). No timestamp
/// coding of cairn-codec starts with it. Followed by the earlier block's
/// offset and the length of its timestamp bytes (uvarints; u64 LE and u32 LE
/// in format 1) and their crc32c (u32 LE); then the values.
pub const SHARED_TIMESTAMPS: u8 = 0xf0;
/// Bytes of a format-1 shared-timestamps reference.
pub const V1_SHARED_TIMESTAMPS_BYTES: usize = 17;
/// Distinct timestamp columns a writer remembers (a fleet's targets × the
/// 12 windows of a day, plus the spans of constant runs); past this, new
/// columns are written in full. 2 h columns are short, so the memory this
/// bounds is about what 2^16 day-long columns took.
const MAX_SHARED_COLUMNS: usize = 1 << 18;
/// Columns of fewer timestamps are written in every block, not shared: a
/// reader decodes a few timestamps faster than it finds a shared column in
/// its cache (a lookup per series and part), and their encoding is about as
/// long as a reference. These are the blocks of young parts, a minute or
/// less of each series.
const MIN_SHARED_TIMESTAMPS: usize = 16;
/// A reference to more timestamp bytes than any block can hold is corrupt.
const MAX_TIMESTAMP_BYTES: u32 = (MAX_BLOCK_SAMPLES as u32) * 11 + 16;

#[cfg(test)]
mod tests;
