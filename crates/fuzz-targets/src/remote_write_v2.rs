//! Remote write 2.0 decoding of arbitrary bytes, with each content encoding
//! and with default and tiny limits: it must return, never panic or
//! allocate past the limits, and every kept series respects the limits.

use cairn_protocols::DecodeLimits;
use cairn_protocols::remote_write::{ContentEncoding, decode_write_request_v2};

pub fn remote_write_v2(data: &[u8]) {
    let tiny = DecodeLimits {
        max_decompressed_bytes: 4096,
        max_labels_per_series: 4,
        max_label_name_len: 8,
        max_label_value_len: 8,
        max_histogram_buckets: 4,
    };
    for encoding in [
        ContentEncoding::Snappy,
        ContentEncoding::Zstd,
        ContentEncoding::Identity,
    ] {
        for limits in [DecodeLimits::default(), tiny] {
            let Ok(batch) = decode_write_request_v2(data, encoding, &limits) else {
                continue;
            };
            for s in &batch.to_series() {
                assert!(!s.labels.is_empty() && (!s.samples.is_empty() || !s.histograms.is_empty()));
                for h in &s.histograms {
                    assert_eq!(h.h.validate(), Ok(()));
                }
                assert!(s.labels.len() <= limits.max_labels_per_series);
                assert!(s.labels.metric_name().is_some());
            }
        }
    }
}
