use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cairn_bucket::BucketConfig;
use cairn_storage::WalReplay;

/// How the WAL reaches stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalSync {
    /// fsync before every commit returns: survives power loss, costs a disk flush per batch.
    EveryCommit,
    /// Written to the OS before commit returns (survives a process crash,
    /// including kill -9) and fsynced at this interval (power loss may lose it).
    Interval(Duration),
}

/// Engine settings. Only the binary parses flags; this is plain data with defaults.
#[derive(Debug, Clone)]
pub struct Config {
    pub path: PathBuf,
    /// Samples older than this are dropped on ingest and removed with their day partition.
    pub retention: Duration,
    pub wal_sync: WalSync,
    /// Rows a partition's head holds before they are sorted and compressed
    /// into an in-memory part, at least (see `seal_rows_per_series`).
    pub max_rows_per_buffer: usize,
    /// A head also waits for this many rows per series of its partition
    /// (bounded by an eighth of `max_in_memory_bytes`): sealing one sample per
    /// series would make parts whose block index outweighs their samples.
    pub seal_rows_per_series: usize,
    /// How often in-memory data is written to disk as parts (the WAL is truncated after).
    pub flush_interval: Duration,
    /// The bound of in-memory data (unsealed rows, in-memory parts,
    /// unflushed histogram bodies): a flush starts at half of it, and
    /// commits wait for room (up to `max_write_stall`) past all of it.
    pub max_in_memory_bytes: usize,
    /// How long a commit waits for a flush to bring in-memory data under
    /// its bound before it is refused with a retryable error.
    pub max_write_stall: Duration,
    /// Writes are refused while fewer bytes than this are free on the data
    /// directory's filesystem (0: only a full disk refuses them), so that
    /// flushes and merges keep room to finish.
    pub min_free_disk_bytes: u64,
    /// WAL segment size before rotation.
    pub wal_segment_bytes: u64,
    /// Bound of the WAL segments kept after their flush for readers that
    /// have not passed them yet (remote write's backlog); past it the oldest
    /// go, and those readers report the samples lost.
    pub wal_max_retained_bytes: u64,
    /// Samples further in the future than this are rejected.
    pub max_future: Duration,
    /// Background merges and retention run every this often.
    pub maintenance_interval: Duration,
    /// A partition without writes for this long has its parts merged into one
    /// (best compression; old days end up as a single part each).
    pub idle_merge_after: Duration,
    /// Run the background threads (tests turn them off to drive maintenance by hand).
    pub background: bool,
    /// Keep samples (false: agent mode, where the WAL and the series' labels
    /// are all that is kept, for remote write to forward; nothing is queryable).
    pub keep_samples: bool,
    /// Where opening reports how far its WAL replay has come.
    pub wal_replay: Arc<WalReplay>,
    /// Tenants a process holds at most (`TsdbTenants`): each has an engine
    /// with threads and a memory budget of its own, so a write may not
    /// create them without bound.
    pub max_tenants: usize,
    /// Series today's partition may hold before commits stop creating more
    /// (0: no limit; changeable while open: `Tsdb::set_max_active_series`).
    pub max_active_series: u64,
    /// The bucket that days are uploaded to once they are over and settled,
    /// and read back from by range (`None`: everything stays on disk).
    pub object_store: Option<BucketConfig>,
    /// Bytes of the disk cache of what was read from the bucket.
    pub cache_max_bytes: u64,
    /// Serve the bucket's data without writing anything: writes are refused,
    /// nothing is merged, uploaded or deleted, and the bucket is listed every
    /// `bucket_refresh_interval` for what the writing instance uploaded.
    pub read_only: bool,
    pub bucket_refresh_interval: Duration,
    /// A failed upload round is retried after this long, doubling up to
    /// `upload_max_backoff` while the bucket keeps failing.
    pub upload_min_backoff: Duration,
    pub upload_max_backoff: Duration,
}

impl Config {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            retention: Duration::from_secs(31 * 86_400),
            wal_sync: WalSync::Interval(Duration::from_secs(1)),
            max_rows_per_buffer: 16_384,
            // Only a backfill fills a head before the flush interval seals it,
            // and there each part's per-series block index entries and each
            // merge's per-series work are paid per seal (docs/benchmarks.md,
            // "Engine settings"). Live scraping seals at the flush interval first.
            seal_rows_per_series: 16,
            flush_interval: Duration::from_secs(60),
            // An eighth of this caps a head: much less, and a large fleet
            // seals parts of one or two samples per series, whose block index
            // outweighs the samples and whose merges cost a quarter of ingest.
            max_in_memory_bytes: 512 << 20,
            max_write_stall: Duration::from_secs(2),
            min_free_disk_bytes: 64 << 20,
            wal_segment_bytes: 64 << 20,
            wal_max_retained_bytes: 4 << 30,
            max_future: Duration::from_secs(2 * 86_400),
            maintenance_interval: Duration::from_secs(5),
            idle_merge_after: Duration::from_secs(60),
            background: true,
            keep_samples: true,
            wal_replay: Arc::default(),
            max_tenants: 100,
            max_active_series: 0,
            object_store: None,
            cache_max_bytes: 1 << 30,
            read_only: false,
            bucket_refresh_interval: Duration::from_secs(30),
            upload_min_backoff: Duration::from_secs(1),
            upload_max_backoff: Duration::from_secs(300),
        }
    }
}

impl Config {
    /// In-memory bytes past which a flush starts: half the bound, so that
    /// ingestion goes on into the other half while the flush writes.
    pub(crate) fn flush_threshold_bytes(&self) -> u64 {
        self.max_in_memory_bytes as u64 / 2
    }

    /// Rows a partition with `series` series buffers before sealing.
    pub(crate) fn seal_rows(&self, series: usize) -> usize {
        const ROW_BYTES: usize = 24;
        let cap = (self.flush_threshold_bytes() as usize / 4 / ROW_BYTES).max(self.max_rows_per_buffer);
        series
            .saturating_mul(self.seal_rows_per_series)
            .clamp(self.max_rows_per_buffer, cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_size_grows_with_series_up_to_an_eighth_of_memory() {
        let c = Config::new("/x");
        assert_eq!(c.seal_rows(10), 16_384);
        assert_eq!(c.seal_rows(20_000), 320_000);
        assert_eq!(c.seal_rows(100_000), 1_600_000);
        // 512 MiB / 8 / 24 B per row.
        assert_eq!(c.seal_rows(1_000_000), 2_796_202);
    }
}
