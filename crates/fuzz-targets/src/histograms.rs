//! Native histograms reached directly: the input is one histogram message,
//! sent as a remote write 1.0 series' histogram, as a 2.0 one (when prost
//! reads it), and as an OTLP exponential histogram data point. Decoding must
//! never panic or allocate past the bucket limit; every histogram kept
//! validates; what 1.0 keeps re-encodes to the same batch.

use cairn_protocols::DecodeLimits;
use cairn_protocols::otlp::{self, decode_export_request};
use cairn_protocols::remote_write::{
    ContentEncoding, decode_write_request, decode_write_request_v2, encode_write_request_with, proto, proto_v2,
};
use prost::Message;
use prost::encoding::encode_varint;

/// A length-delimited field.
fn field(tag: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 6);
    encode_varint(u64::from(tag << 3 | 2), &mut out);
    encode_varint(payload.len() as u64, &mut out);
    out.extend_from_slice(payload);
    out
}

fn check(batch: &cairn_protocols::WriteBatch) {
    for s in batch.series() {
        for h in s.histograms() {
            assert_eq!(h.h.validate(), Ok(()));
            assert!(h.h.schema <= 8);
        }
    }
}

pub fn histograms(data: &[u8]) {
    let tiny = DecodeLimits {
        max_histogram_buckets: 4,
        ..DecodeLimits::default()
    };
    // Remote write 1.0: label __name__="h", then the histogram twice.
    let label = [field(1, b"__name__"), field(2, b"h")].concat();
    let series = [field(1, &label), field(4, data), field(4, data)].concat();
    let body = field(1, &series);
    for limits in [DecodeLimits::default(), tiny] {
        let result = decode_write_request(&body, ContentEncoding::Identity, &limits);
        let Ok(batch) = result else {
            assert!(proto::Histogram::decode(data).is_err(), "{result:?}");
            continue;
        };
        check(&batch);
        assert_eq!(batch.histograms_written() + batch.histograms_invalid.count, 2);
        let mut again = Vec::new();
        encode_write_request_with(&batch.to_series(), &[], ContentEncoding::Identity, &mut again).expect("encodable");
        let again = decode_write_request(&again, ContentEncoding::Identity, &DecodeLimits::default())
            .expect("re-encoded batch decodes");
        assert!(again.histograms_invalid.is_empty());
        assert_eq!(again.histogram_count(), batch.histogram_count());
    }
    // Remote write 2.0, the same message.
    if let Ok(h) = proto::Histogram::decode(data) {
        let req = proto_v2::Request {
            symbols: vec![String::new(), "__name__".into(), "h".into()],
            timeseries: vec![proto_v2::TimeSeries {
                labels_refs: vec![1, 2],
                histograms: vec![h],
                ..Default::default()
            }],
        };
        for limits in [DecodeLimits::default(), tiny] {
            let batch = decode_write_request_v2(&req.encode_to_vec(), ContentEncoding::Identity, &limits)
                .expect("a valid request");
            check(&batch);
            assert_eq!(batch.histograms_written() + batch.histograms_invalid.count, 1);
        }
    }
    // OTLP: the input as a cumulative exponential histogram's data point.
    let exponential = [field(1, data), vec![2 << 3, 2]].concat();
    let metric = [field(1, b"h"), field(10, &exponential)].concat();
    let body = field(1, &field(2, &field(2, &metric)));
    for limits in [DecodeLimits::default(), tiny] {
        if let Ok(decoded) = decode_export_request(&body, otlp::ContentEncoding::Identity, &limits, 1) {
            check(&decoded.batch);
            let _ = decoded.rejected.message();
        }
    }
}
