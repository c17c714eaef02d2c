//! Immutable parts: per-series compressed sample blocks plus a block index.
//!
//! A part is self-describing (magic, footer with its own checksum, checksummed
//! index and blocks), so it can be read from a local file, from memory, or
//! later by range requests from object storage. Format: docs/format/part.md.

mod reader;
mod writer;

pub use reader::{BlockRef, Part};
pub use writer::{BlockEncoding, PartMeta, PartWriter};

pub const MAGIC: &[u8; 8] = b"CAIRNPT1";
pub const ENTRY_BYTES: usize = 48;
pub const FOOTER_BYTES: usize = 72;
/// Longer series are split into several blocks so a reader decodes bounded chunks.
pub const MAX_BLOCK_SAMPLES: usize = 8192;

#[cfg(test)]
mod tests;
