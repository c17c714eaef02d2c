//! Remote write decoding of arbitrary bytes, with each content encoding and
//! with default and tiny limits: it must return, never panic, hang or
//! allocate past the limits; and whatever decodes must survive an
//! encode/decode round trip unchanged.

use cairn_protocols::DecodeLimits;
use cairn_protocols::WriteBatch;
use cairn_protocols::remote_write::{decode_write_request, encode_write_request_with};

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
    for (encoding, limits) in crate::remote_write_settings() {
        let Ok(batch) = decode_write_request(data, encoding, &limits) else {
            continue;
        };
        for s in &batch.to_series() {
            crate::check_remote_write_series(s, &limits);
        }
        // Whatever decodes re-encodes to the same batch.
        let mut body = Vec::new();
        encode_write_request_with(&batch.to_series(), &batch.metadata, encoding, &mut body).expect("encodable");
        let again = decode_write_request(&body, encoding, &DecodeLimits::default()).expect("re-encoded batch decodes");
        assert!(again.histograms_invalid.is_empty(), "{:?}", again.histograms_invalid);
        assert_eq!(shown(&again), shown(&batch));
        assert_eq!(again.metadata, batch.metadata);
    }
}
