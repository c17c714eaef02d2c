//! Remote write decoding of arbitrary bytes, with each content encoding and
//! with default and tiny limits: it must return, never panic, hang or
//! allocate past the limits; and whatever decodes must survive an
//! encode/decode round trip unchanged.
#![no_main]

use cairn_protocols::DecodeLimits;
use cairn_protocols::remote_write::{
    ContentEncoding, decode_write_request, encode_write_request_with,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let tiny = DecodeLimits {
        max_decompressed_bytes: 4096,
        max_labels_per_series: 4,
        max_label_name_len: 8,
        max_label_value_len: 8,
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
                assert!(!s.labels.is_empty() && !s.samples.is_empty());
                assert!(s.labels.len() <= limits.max_labels_per_series);
            }
            // Whatever decodes re-encodes to the same batch.
            let mut body = Vec::new();
            encode_write_request_with(&batch.to_series(), &batch.metadata, encoding, &mut body)
                .expect("encodable");
            let again = decode_write_request(&body, encoding, &DecodeLimits::default())
                .expect("re-encoded batch decodes");
            assert_eq!(again.to_series(), batch.to_series());
            assert_eq!(again.metadata, batch.metadata);
        }
    }
});
