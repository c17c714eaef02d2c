//! OTLP metrics decoding of arbitrary bytes (protobuf, identity and gzip,
//! and OTLP/JSON), with default
//! and tiny limits: it must return, never panic, hang or allocate past the
//! limits; every series it yields must be storable and within the limits;
//! and a body prost's full decoder accepts must decode here too (the
//! hand-walked outer messages are never stricter than the schema).

use cairn_protocols::DecodeLimits;
use cairn_protocols::otlp::proto::ExportMetricsServiceRequest;
use cairn_protocols::otlp::{ContentEncoding, decode_export_request, decode_export_request_json};
use prost::Message;

const NOW_MS: i64 = 1_700_000_000_000;

pub fn otlp(data: &[u8]) {
    let [_, tiny] = crate::limits();
    for encoding in [ContentEncoding::Identity, ContentEncoding::Gzip] {
        for limits in crate::limits() {
            let result = decode_export_request(data, encoding, &limits, NOW_MS);
            if encoding == ContentEncoding::Identity
                && limits == DecodeLimits::default()
                && ExportMetricsServiceRequest::decode(data).is_ok()
            {
                assert!(result.is_ok(), "prost accepts what the walker refused: {result:?}");
            }
            let Ok(decoded) = result else {
                continue;
            };
            for s in &decoded.batch.to_series() {
                assert!(!s.samples.is_empty() || !s.histograms.is_empty());
                for h in &s.histograms {
                    assert_eq!(h.h.validate(), Ok(()));
                    assert!(h.h.schema <= 8);
                }
                assert!(s.labels.metric_name().is_some_and(|n| !n.is_empty()));
                assert!(s.labels.len() <= limits.max_labels_per_series);
                for l in &s.labels {
                    assert!(l.name.len() <= limits.max_label_name_len || l.name == "__name__");
                }
            }
            let _ = decoded.rejected.message();
        }
    }
    // OTLP/JSON: any bytes, never a panic; what decodes obeys the limits.
    if let Ok(decoded) = decode_export_request_json(data, ContentEncoding::Identity, &tiny, NOW_MS) {
        for s in &decoded.batch.to_series() {
            assert!(!s.samples.is_empty() || !s.histograms.is_empty());
            assert!(s.labels.len() <= tiny.max_labels_per_series);
        }
    }
}
