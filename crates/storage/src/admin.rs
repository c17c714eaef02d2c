use cairn_model::Matcher;

use crate::StorageError;

/// Why a sample was not stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RejectReason {
    /// Older than the retention period.
    OutOfRetention,
    /// Further in the future than storage accepts.
    TooFarInFuture,
    /// Of a series the commit would have created beyond the limit of
    /// active series (a tenant's `max_active_series`).
    SeriesLimit,
    /// From a replica of an HA pair of Prometheus that is not the elected
    /// one (its twin's samples are stored instead).
    HaReplica,
}

impl RejectReason {
    /// Stable name for metrics labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OutOfRetention => "out_of_retention",
            Self::TooFarInFuture => "too_far_in_future",
            Self::SeriesLimit => "series_limit",
            Self::HaReplica => "ha_replica",
        }
    }
}

/// Operations beside reading and writing.
pub trait Admin: Send + Sync {
    /// Deletes samples of series matching `matchers` in `[mint, maxt]`.
    /// Effective for queries at once; space is reclaimed in the background.
    fn delete_series(&self, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<(), StorageError>;

    /// Cardinality statistics of the series `query` asks about.
    fn tsdb_status(&self, query: &CardinalityQuery) -> Result<TsdbStatus, StorageError>;

    /// Counters and gauges for self-monitoring.
    fn stats(&self) -> StorageStats;

    /// The immutable parts samples are stored in, oldest day first
    /// (`/api/v1/status/tsdb/blocks`).
    fn parts(&self) -> Result<Vec<PartInfo>, StorageError>;
}

/// One stored part, as `/api/v1/status/tsdb/blocks` lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartInfo {
    /// Unique in the store: the part's file under the data directory, or
    /// its day and sequence range while it is only in memory.
    pub name: String,
    pub min_time: i64,
    pub max_time: i64,
    pub samples: u64,
    pub series: u64,
    /// Compressed blocks (Prometheus' chunks).
    pub blocks: u64,
    pub bytes: u64,
    /// Not yet written to disk (its samples are in the WAL).
    pub in_memory: bool,
    /// The part format's version (docs/format/part.md).
    pub format: u32,
}

/// What `/api/v1/status/tsdb` asks: which series, and how much of each list.
#[derive(Debug, Clone, PartialEq)]
pub struct CardinalityQuery {
    /// Series with samples in `[mint, maxt]`.
    pub mint: i64,
    pub maxt: i64,
    /// Each top list is cut to this many entries.
    pub limit: usize,
    /// Only series matching one of these selectors (`match[]`); none: all.
    pub selectors: Vec<Vec<Matcher>>,
    /// A label whose values to count series by (`focusLabel`).
    pub focus_label: Option<String>,
}

impl CardinalityQuery {
    /// Every series with samples in `[mint, maxt]`, lists cut to `limit`.
    pub fn all(mint: i64, maxt: i64, limit: usize) -> Self {
        Self {
            mint,
            maxt,
            limit,
            selectors: Vec::new(),
            focus_label: None,
        }
    }

    fn selects(&self, labels: &cairn_model::Labels) -> bool {
        self.selectors.is_empty()
            || self
                .selectors
                .iter()
                .any(|set| set.iter().all(|m| m.matches(labels.get(&m.name).unwrap_or(""))))
    }
}

/// The body of `/api/v1/status/tsdb`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TsdbStatus {
    pub num_series: u64,
    pub num_label_pairs: u64,
    pub min_time: Option<i64>,
    pub max_time: Option<i64>,
    pub series_count_by_metric_name: Vec<(String, u64)>,
    pub label_value_count_by_label_name: Vec<(String, u64)>,
    pub series_count_by_label_value_pair: Vec<(String, u64)>,
    pub series_count_by_label_name: Vec<(String, u64)>,
    /// Series by the value of the focus label, if one was asked for.
    pub series_count_by_focus_label_value: Vec<(String, u64)>,
}

/// Self-monitoring figures, rendered by the HTTP layer as `cairn_*` metrics.
#[derive(Debug, Clone, Default)]
pub struct StorageStats {
    pub samples_ingested_total: u64,
    pub samples_rejected_total: Vec<(RejectReason, u64)>,
    pub series_created_total: u64,
    pub active_series: u64,
    pub head_samples: u64,
    pub storage_bytes: u64,
    pub wal_bytes: u64,
    pub parts: u64,
    pub partitions: u64,
    pub merges_total: u64,
    pub merged_bytes_total: u64,
    pub flushes_total: u64,
    /// CPU time of background work (seals, flushes, merges, retention).
    pub maintenance_cpu_seconds_total: f64,
    /// The object-storage tier, when there is one.
    pub object_store: Option<ObjectStoreStats>,
    /// Why writes are refused now; `None` while they are taken.
    pub write_refusal: Option<WriteRefusal>,
    /// Bytes free to the process on the data directory's filesystem, when known.
    pub free_disk_bytes: Option<u64>,
    /// Failed disk writes of storage, by what was being written
    /// ([`WriteOperation`]); each is retried.
    pub write_errors_total: Vec<(WriteOperation, u64)>,
    /// Files found damaged and moved into the quarantine, by kind (part,
    /// index, tombstones, histograms, wal).
    pub quarantined_files_total: Vec<(&'static str, u64)>,
}

/// Why a store refuses writes for now. Each clears by itself once its
/// cause is gone; meanwhile writes get a retryable error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRefusal {
    pub reason: RefusalReason,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RefusalReason {
    /// Free space is under the configured reserve.
    LowDiskSpace,
    /// The disk is full: the write-ahead log cannot grow.
    DiskFull,
    /// The filesystem turned read-only.
    ReadOnlyFilesystem,
    /// Another I/O error on the write-ahead log.
    IoError,
    /// In-memory data is at its bound and flushes have not made room.
    MemoryFull,
}

impl RefusalReason {
    pub const ALL: [Self; 5] = [
        Self::LowDiskSpace,
        Self::DiskFull,
        Self::ReadOnlyFilesystem,
        Self::IoError,
        Self::MemoryFull,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::LowDiskSpace => "low_disk_space",
            Self::DiskFull => "disk_full",
            Self::ReadOnlyFilesystem => "read_only_filesystem",
            Self::IoError => "io_error",
            Self::MemoryFull => "memory_full",
        }
    }

    /// The reason an I/O error on the write path stands for.
    pub fn of_io(kind: std::io::ErrorKind) -> Self {
        use std::io::ErrorKind as K;
        match kind {
            K::StorageFull | K::QuotaExceeded => Self::DiskFull,
            K::ReadOnlyFilesystem => Self::ReadOnlyFilesystem,
            _ => Self::IoError,
        }
    }
}

/// What storage was writing to disk when a write failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WriteOperation {
    WalAppend,
    Flush,
    Merge,
}

impl WriteOperation {
    pub const ALL: [Self; 3] = [Self::WalAppend, Self::Flush, Self::Merge];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::WalAppend => "wal_append",
            Self::Flush => "flush",
            Self::Merge => "merge",
        }
    }
}

impl StorageStats {
    /// Adds `other`'s counters and gauges to these (several tenants' storages).
    pub fn add(&mut self, other: &StorageStats) {
        self.samples_ingested_total += other.samples_ingested_total;
        for (reason, n) in &other.samples_rejected_total {
            match self.samples_rejected_total.iter_mut().find(|(r, _)| r == reason) {
                Some((_, total)) => *total += n,
                None => self.samples_rejected_total.push((*reason, *n)),
            }
        }
        self.series_created_total += other.series_created_total;
        self.active_series += other.active_series;
        self.head_samples += other.head_samples;
        self.storage_bytes += other.storage_bytes;
        self.wal_bytes += other.wal_bytes;
        self.parts += other.parts;
        self.partitions += other.partitions;
        self.merges_total += other.merges_total;
        self.merged_bytes_total += other.merged_bytes_total;
        self.flushes_total += other.flushes_total;
        self.maintenance_cpu_seconds_total += other.maintenance_cpu_seconds_total;
        for (kind, n) in &other.quarantined_files_total {
            match self.quarantined_files_total.iter_mut().find(|(k, _)| k == kind) {
                Some((_, total)) => *total += n,
                None => self.quarantined_files_total.push((kind, *n)),
            }
        }
        if let Some(theirs) = &other.object_store {
            self.object_store.get_or_insert_with(Default::default).add(theirs);
        }
        // Engines share the disk: one that refuses speaks for the process.
        if self.write_refusal.is_none() {
            self.write_refusal.clone_from(&other.write_refusal);
        }
        self.free_disk_bytes = match (self.free_disk_bytes, other.free_disk_bytes) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for (op, n) in &other.write_errors_total {
            match self.write_errors_total.iter_mut().find(|(o, _)| o == op) {
                Some((_, total)) => *total += n,
                None => self.write_errors_total.push((*op, *n)),
            }
        }
    }
}

/// The bucket: requests made, bytes moved, the cache in front of its reads
/// and the parts waiting on disk for upload.
#[derive(Debug, Clone, Default)]
pub struct ObjectStoreStats {
    /// Requests by operation (get, put, list, delete): made, and failed.
    pub requests_total: Vec<(&'static str, u64)>,
    pub request_failures_total: Vec<(&'static str, u64)>,
    pub read_bytes_total: u64,
    pub written_bytes_total: u64,
    pub cache_hits_total: u64,
    pub cache_misses_total: u64,
    pub cache_bytes: u64,
    pub cache_max_bytes: u64,
    pub upload_backlog_parts: u64,
    pub upload_backlog_bytes: u64,
    pub uploaded_parts_total: u64,
    pub uploaded_bytes_total: u64,
    pub upload_failures_total: u64,
}

impl ObjectStoreStats {
    /// Adds another engine's figures. The engines of one process (one per
    /// tenant) share a bucket client and its cache, so each reports the same
    /// request, byte and cache figures: those are taken once, not summed.
    fn add(&mut self, other: &ObjectStoreStats) {
        if self.requests_total.is_empty() {
            self.requests_total = other.requests_total.clone();
            self.request_failures_total = other.request_failures_total.clone();
            self.read_bytes_total = other.read_bytes_total;
            self.written_bytes_total = other.written_bytes_total;
            self.cache_hits_total = other.cache_hits_total;
            self.cache_misses_total = other.cache_misses_total;
            self.cache_bytes = other.cache_bytes;
            self.cache_max_bytes = other.cache_max_bytes;
        }
        self.upload_backlog_parts += other.upload_backlog_parts;
        self.upload_backlog_bytes += other.upload_backlog_bytes;
        self.uploaded_parts_total += other.uploaded_parts_total;
        self.uploaded_bytes_total += other.uploaded_bytes_total;
        self.upload_failures_total += other.upload_failures_total;
    }
}

impl TsdbStatus {
    /// Computes the cardinality lists from label sets, each series given once
    /// (those `query` does not select are skipped). Lists are sorted by
    /// count descending, then by name.
    pub fn from_series<'a>(series: impl Iterator<Item = &'a cairn_model::Labels>, query: &CardinalityQuery) -> Self {
        let mut counter = SeriesCounter::new(query);
        for labels in series {
            counter.add(labels);
        }
        counter.status()
    }
}

/// [`TsdbStatus`] counted series by series, holding only the distinct label
/// pairs and metric names seen, not the series.
#[derive(Debug)]
pub struct SeriesCounter<'q> {
    query: &'q CardinalityQuery,
    num_series: u64,
    by_metric: std::collections::HashMap<String, u64>,
    by_pair: std::collections::HashMap<(String, String), u64>,
}

impl<'q> SeriesCounter<'q> {
    pub fn new(query: &'q CardinalityQuery) -> Self {
        Self {
            query,
            num_series: 0,
            by_metric: Default::default(),
            by_pair: Default::default(),
        }
    }

    /// Counts one series if the query selects it; each must be given once.
    pub fn add(&mut self, labels: &cairn_model::Labels) {
        if !self.query.selects(labels) {
            return;
        }
        self.num_series += 1;
        if let Some(name) = labels.metric_name() {
            match self.by_metric.get_mut(name) {
                Some(n) => *n += 1,
                None => {
                    self.by_metric.insert(name.to_string(), 1);
                }
            }
        }
        for l in labels {
            let key = (l.name.to_string(), l.value.to_string());
            *self.by_pair.entry(key).or_default() += 1;
        }
    }

    /// The lists, each cut to the query's `limit` largest.
    pub fn status(self) -> TsdbStatus {
        let limit = self.query.limit;
        let mut values_by_name: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
        let mut series_by_name: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
        for ((name, _), series) in &self.by_pair {
            *values_by_name.entry(name).or_default() += 1;
            *series_by_name.entry(name).or_default() += series;
        }
        let top = |mut v: Vec<(String, u64)>| {
            v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v.truncate(limit);
            v
        };
        let focus = self.query.focus_label.as_deref();
        let by_focus_value = self
            .by_pair
            .iter()
            .filter(|((name, _), _)| Some(name.as_str()) == focus)
            .map(|((_, value), series)| (value.clone(), *series))
            .collect();
        TsdbStatus {
            num_series: self.num_series,
            num_label_pairs: self.by_pair.len() as u64,
            min_time: None,
            max_time: None,
            label_value_count_by_label_name: top(values_by_name.into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
            series_count_by_label_name: top(series_by_name.into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
            series_count_by_focus_label_value: top(by_focus_value),
            series_count_by_metric_name: top(self.by_metric.into_iter().collect()),
            series_count_by_label_value_pair: top(self
                .by_pair
                .iter()
                .map(|((n, v), c)| (format!("{n}={v}"), *c))
                .collect()),
        }
    }
}
