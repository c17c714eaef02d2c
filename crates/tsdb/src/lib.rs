//! Cairn's embedded storage engine.
//!
//! Write path: [`Appender::commit`](cairn_storage::Appender::commit) resolves
//! series ids in the day partition's index, appends one WAL record (in the
//! OS before returning, fsynced per [`WalSync`]), then makes the rows visible
//! in the partition's row buffer. Full row buffers are sorted and compressed
//! into in-memory parts; a periodic flush writes them to disk as immutable
//! parts and truncates the WAL; background merges combine parts into bigger
//! ones (better compression, fewer files) and drop deleted samples.
//!
//! Read path: a querier snapshots the part lists and row buffers of the
//! partitions overlapping its range, selects series per partition index and
//! streams each series' blocks, merging overlaps newest-write-wins.
//!
//! See ARCHITECTURE.md and docs/format/ for the invariants and byte layouts.

mod appender;
mod config;
mod day;
mod engine;
mod head;
mod index;
mod part;
mod partition;
mod querier;
mod series_reader;
mod tombstones;
mod wal;

pub use config::{Config, WalSync};
pub use day::Day;
pub use engine::Tsdb;
pub use part::{Part, PartWriter};

/// Decoders of every on-disk format, for fuzzing and inspection tools. Each
/// must return an error, never panic, on arbitrary bytes.
pub mod formats {
    pub use crate::index::check_segment as check_index_segment;
    pub use crate::index::decode_segment as decode_index_segment;
    pub use crate::index::encode_segment as encode_index_segment;
    pub use crate::part::Part;
    pub use crate::tombstones::decode as decode_tombstones;
    pub use crate::wal::record::decode_batch as decode_wal_record;
}
