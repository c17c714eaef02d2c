//! A queue's figures, kept as atomics by the queue and rendered by the
//! server under Prometheus' `prometheus_remote_storage_*` names.

use std::sync::atomic::{AtomicU64, Ordering};

/// The upper bounds of `prometheus_remote_storage_sent_batch_duration_seconds`.
pub const BATCH_DURATION_BUCKETS: [f64; 15] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 60.0, 120.0, 300.0,
];

#[derive(Default)]
pub struct QueueMetrics {
    pub samples: AtomicU64,
    pub histograms: AtomicU64,
    pub samples_failed: AtomicU64,
    pub histograms_failed: AtomicU64,
    pub samples_retried: AtomicU64,
    pub histograms_retried: AtomicU64,
    /// Dropped before sending: relabelled away, too old, or of a series
    /// whose labels were gone.
    pub samples_dropped: AtomicU64,
    pub histograms_dropped: AtomicU64,
    /// Read from the WAL and not yet delivered or given up.
    pub pending: AtomicU64,
    pub bytes: AtomicU64,
    pub metadata: AtomicU64,
    pub metadata_failed: AtomicU64,
    pub metadata_retried: AtomicU64,
    pub metadata_bytes: AtomicU64,
    pub shards: AtomicU64,
    pub shards_desired: AtomicU64,
    /// Unix milliseconds of the newest sample delivered.
    pub highest_sent_ms: AtomicU64,
    /// Unix milliseconds of the newest sample read from the WAL.
    pub highest_read_ms: AtomicU64,
    /// Stretches of the WAL lost before they were read (deleted past the
    /// backlog bound, or damaged).
    pub wal_gaps: AtomicU64,
    batch_duration_buckets: [AtomicU64; BATCH_DURATION_BUCKETS.len()],
    batch_duration_count: AtomicU64,
    batch_duration_micros: AtomicU64,
}

/// The figures at one moment, for rendering.
#[derive(Debug, Clone, Default)]
pub struct QueueFigures {
    pub remote_name: String,
    pub url: String,
    pub samples: u64,
    pub histograms: u64,
    pub samples_failed: u64,
    pub histograms_failed: u64,
    pub samples_retried: u64,
    pub histograms_retried: u64,
    pub samples_dropped: u64,
    pub histograms_dropped: u64,
    pub pending: u64,
    pub bytes: u64,
    pub metadata: u64,
    pub metadata_failed: u64,
    pub metadata_retried: u64,
    pub metadata_bytes: u64,
    pub shards: u64,
    pub shards_desired: u64,
    pub shards_min: u64,
    pub shards_max: u64,
    pub shard_capacity: u64,
    pub highest_sent_seconds: f64,
    pub highest_read_seconds: f64,
    pub wal_gaps: u64,
    /// Cumulative counts per bucket of [`BATCH_DURATION_BUCKETS`].
    pub batch_duration_buckets: Vec<u64>,
    pub batch_duration_count: u64,
    pub batch_duration_sum: f64,
}

pub(crate) fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

pub(crate) fn raise(gauge: &AtomicU64, to: u64) {
    gauge.fetch_max(to, Ordering::Relaxed);
}

impl QueueMetrics {
    pub(crate) fn observe_batch(&self, seconds: f64) {
        for (bucket, bound) in self.batch_duration_buckets.iter().zip(BATCH_DURATION_BUCKETS) {
            if seconds <= bound {
                add(bucket, 1);
            }
        }
        add(&self.batch_duration_count, 1);
        add(&self.batch_duration_micros, (seconds * 1e6) as u64);
    }

    pub(crate) fn figures(&self, remote_name: &str, url: &str) -> QueueFigures {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        QueueFigures {
            remote_name: remote_name.to_string(),
            url: url.to_string(),
            samples: get(&self.samples),
            histograms: get(&self.histograms),
            samples_failed: get(&self.samples_failed),
            histograms_failed: get(&self.histograms_failed),
            samples_retried: get(&self.samples_retried),
            histograms_retried: get(&self.histograms_retried),
            samples_dropped: get(&self.samples_dropped),
            histograms_dropped: get(&self.histograms_dropped),
            pending: get(&self.pending),
            bytes: get(&self.bytes),
            metadata: get(&self.metadata),
            metadata_failed: get(&self.metadata_failed),
            metadata_retried: get(&self.metadata_retried),
            metadata_bytes: get(&self.metadata_bytes),
            shards: get(&self.shards),
            shards_desired: get(&self.shards_desired),
            shards_min: 0,
            shards_max: 0,
            shard_capacity: 0,
            highest_sent_seconds: get(&self.highest_sent_ms) as f64 / 1000.0,
            highest_read_seconds: get(&self.highest_read_ms) as f64 / 1000.0,
            wal_gaps: get(&self.wal_gaps),
            batch_duration_buckets: self.batch_duration_buckets.iter().map(get).collect(),
            batch_duration_count: get(&self.batch_duration_count),
            batch_duration_sum: get(&self.batch_duration_micros) as f64 / 1e6,
        }
    }
}
