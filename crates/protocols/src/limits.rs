/// Bounds a decoder enforces on untrusted input before and while decoding.
///
/// Every limit is checked before the memory it guards is allocated, so a
/// hostile body costs at most about `max_decompressed_bytes` plus the decoded
/// batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Largest decompressed body accepted (identity bodies included).
    pub max_decompressed_bytes: usize,
    /// Most labels one series may carry, counted as sent (before empty values
    /// are dropped).
    pub max_labels_per_series: usize,
    /// Longest label name accepted, in bytes.
    pub max_label_name_len: usize,
    /// Longest label value accepted, in bytes.
    pub max_label_value_len: usize,
    /// Most buckets one native histogram sample may have, both sides
    /// together; a histogram with more is refused on its own.
    pub max_histogram_buckets: usize,
}

impl DecodeLimits {
    /// 64 MiB decompressed: far above Prometheus' default batches (2,000
    /// samples, well under 1 MiB) and what other receivers accept.
    pub const DEFAULT_MAX_DECOMPRESSED_BYTES: usize = 64 << 20;
    /// Prometheus sets no limit; 256 is ten times what real exporters send.
    pub const DEFAULT_MAX_LABELS_PER_SERIES: usize = 256;
    pub const DEFAULT_MAX_LABEL_NAME_LEN: usize = 1024;
    pub const DEFAULT_MAX_LABEL_VALUE_LEN: usize = 16 * 1024;
    /// Client libraries and the OpenTelemetry SDKs default to 160 buckets;
    /// this leaves room for far finer histograms while keeping one sample
    /// near 1 MiB decoded.
    pub const DEFAULT_MAX_HISTOGRAM_BUCKETS: usize = 1 << 16;
}

impl Default for DecodeLimits {
    fn default() -> Self {
        Self {
            max_decompressed_bytes: Self::DEFAULT_MAX_DECOMPRESSED_BYTES,
            max_labels_per_series: Self::DEFAULT_MAX_LABELS_PER_SERIES,
            max_label_name_len: Self::DEFAULT_MAX_LABEL_NAME_LEN,
            max_label_value_len: Self::DEFAULT_MAX_LABEL_VALUE_LEN,
            max_histogram_buckets: Self::DEFAULT_MAX_HISTOGRAM_BUCKETS,
        }
    }
}
