//! Remote write decoding of arbitrary bytes, with each content encoding and
//! with default and tiny limits: it must return, never panic, hang or
//! allocate past the limits; and whatever decodes must survive an
//! encode/decode round trip unchanged.

use cairn_protocols::DecodeLimits;
use cairn_protocols::WriteBatch;
use cairn_protocols::remote_write::{ContentEncoding, decode_write_request, encode_write_request_with};

/// The series as text: NaN counts compare equal, and a histogram's `-0.0`
/// sum or zero threshold, which the encoder sends as zero, reads as `0.0`.
fn shown(batch: &WriteBatch) -> String {
    let mut series = batch.to_series();
    for s in &mut series {
        for h in &mut s.histograms {
            let h = std::sync::Arc::make_mut(&mut h.h);
            h.sum += 0.0;
            h.zero_threshold += 0.0;
        }
    }
    format!("{series:?}")
}

pub fn remote_write(data: &[u8]) {
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
            let Ok(batch) = decode_write_request(data, encoding, &limits) else {
                continue;
            };
            for s in &batch.to_series() {
                assert!(!s.labels.is_empty() && (!s.samples.is_empty() || !s.histograms.is_empty()));
                assert!(s.labels.len() <= limits.max_labels_per_series);
                for h in &s.histograms {
                    assert_eq!(h.h.validate(), Ok(()));
                }
            }
            // Whatever decodes re-encodes to the same batch.
            let mut body = Vec::new();
            encode_write_request_with(&batch.to_series(), &batch.metadata, encoding, &mut body).expect("encodable");
            let again =
                decode_write_request(&body, encoding, &DecodeLimits::default()).expect("re-encoded batch decodes");
            assert!(again.histograms_invalid.is_empty(), "{:?}", again.histograms_invalid);
            assert_eq!(shown(&again), shown(&batch));
            assert_eq!(again.metadata, batch.metadata);
        }
    }
}
