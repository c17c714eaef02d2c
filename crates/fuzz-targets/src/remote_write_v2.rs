//! Remote write 2.0 decoding of arbitrary bytes, with each content encoding
//! and with default and tiny limits: it must return, never panic or
//! allocate past the limits, and every kept series respects the limits.

use cairn_protocols::remote_write::decode_write_request_v2;

pub fn remote_write_v2(data: &[u8]) {
    for (encoding, limits) in crate::remote_write_settings() {
        let Ok(batch) = decode_write_request_v2(data, encoding, &limits) else {
            continue;
        };
        for s in &batch.to_series() {
            crate::check_remote_write_series(s, &limits);
            assert!(s.labels.metric_name().is_some());
        }
    }
}
