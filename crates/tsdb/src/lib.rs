//! Cairn's embedded storage engine.
//!
//! Write path: [`Appender::commit`](cairn_storage::Appender::commit) resolves
//! series ids in the day partition's index, checks everything that could
//! refuse the batch, appends one WAL record (in the OS before returning,
//! fsynced per [`WalSync`]), then appends the rows to the partition's head,
//! where each row links to its series' previous one. A full head is sorted
//! and compressed into an in-memory part; a periodic flush writes those to
//! disk as immutable parts and truncates the WAL; background merges combine
//! parts into bigger ones (better compression, fewer files) and drop deleted
//! samples.
//!
//! Read path: a querier snapshots the part lists and heads of the partitions
//! overlapping its range, selects series per partition index, walks each
//! selected series' chain in the head and streams its blocks from the parts,
//! merging overlaps newest-write-wins.
//!
//! See ARCHITECTURE.md and docs/format/ for the invariants and byte layouts.

mod appender;
mod background;
pub mod check;
mod config;
mod day;
mod engine;
mod follow;
mod head;
mod health;
mod histograms;
mod index;
mod losses;
mod part;
mod partition;
mod quarantine;
mod querier;
mod selection;
mod sequence;
mod series_reader;
mod shared_reads;
mod tenants;
mod tier;
mod tombstones;
mod wal;
mod warned;

pub use background::lower_own_priority;
pub use cairn_bucket::BucketConfig;
pub use config::{Config, WalSync};
pub use day::Day;
pub use engine::Tsdb;
pub use follow::{WalFeedDay, WalFeedRecord};
pub use part::{BlockRef, LostBlock, Part, PartWriter};

/// Blocks this process has found damaged so far, in every engine.
pub fn blocks_found_damaged() -> u64 {
    part::BLOCKS_FOUND_DAMAGED.load(std::sync::atomic::Ordering::Acquire)
}
pub use partition::{DamagedBlock, part_seq_range};
pub use tenants::{SettingsOf, TenantSettings, TsdbTenants, day_keys_prefix};
pub use wal::record::ForwardBatch;
pub use wal::tail::{TailEvent, WalPosition, WalTail};

/// Decoders of every on-disk format, for fuzzing and inspection tools. Each
/// must return an error, never panic, on arbitrary bytes.
pub mod formats {
    pub use crate::histograms::check_bytes as check_histogram_file;
    pub use crate::index::check_segment as check_index_segment;
    pub use crate::index::decode_segment as decode_index_segment;
    pub use crate::index::encode_segment as encode_index_segment;
    pub use crate::losses::decode as decode_losses;
    pub use crate::part::Part;
    pub use crate::tombstones::decode as decode_tombstones;
    pub use crate::wal::record::decode_batch as decode_wal_record;
}
