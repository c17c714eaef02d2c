use cairn_model::{Histogram, HistogramSample, Label, Labels, STALE_NAN_BITS, Sample, stale_nan};
use proptest::prelude::*;
use prost::Message;
use prost::encoding::encode_varint;

use super::*;
use crate::{DecodeLimits, ErrorKind, MetricMetadata, MetricType, SeriesSamples, WriteBatch};

const ALL: [ContentEncoding; 3] = [
    ContentEncoding::Snappy,
    ContentEncoding::Zstd,
    ContentEncoding::Identity,
];

// ---- raw protobuf builders (able to express what the encoder refuses to) ----

fn field(key: u8, payload: &[u8], dst: &mut Vec<u8>) {
    dst.push(key);
    encode_varint(payload.len() as u64, dst);
    dst.extend_from_slice(payload);
}

fn raw_series(labels: &[(&[u8], &[u8])], samples: &[(i64, f64)]) -> Vec<u8> {
    let mut s = Vec::new();
    for (n, v) in labels {
        let mut l = Vec::new();
        field(0x0a, n, &mut l);
        field(0x12, v, &mut l);
        field(0x0a, &l, &mut s);
    }
    for &(t, v) in samples {
        let smp = proto::Sample { value: v, timestamp: t };
        field(0x12, &smp.encode_to_vec(), &mut s);
    }
    s
}

fn raw_request(series: &[Vec<u8>]) -> Vec<u8> {
    let mut r = Vec::new();
    for s in series {
        field(0x0a, s, &mut r);
    }
    r
}

fn outcome(body: &[u8], encoding: ContentEncoding, limits: &DecodeLimits) -> String {
    match decode_write_request(body, encoding, limits) {
        Ok(b) => b.series().map(|s| s.labels().to_string()).collect::<Vec<_>>().join(" "),
        Err(e) => format!("error: {e}"),
    }
}

/// One series with one sample and `labels` in sender order.
#[track_caller]
fn check_raw_with(limits: &DecodeLimits, labels: &[(&[u8], &[u8])], want: &str) {
    let body = raw_request(&[raw_series(labels, &[(1, 1.0)])]);
    assert_eq!(outcome(&body, ContentEncoding::Identity, limits), want);
}

#[track_caller]
fn check_with(limits: &DecodeLimits, labels: &[(&str, &str)], want: &str) {
    let raw: Vec<_> = labels.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())).collect();
    check_raw_with(limits, &raw, want);
}

#[track_caller]
fn check(labels: &[(&str, &str)], want: &str) {
    check_with(&DecodeLimits::default(), labels, want);
}

#[track_caller]
fn check_body(body: &[u8], encoding: ContentEncoding, want: &str) {
    assert_eq!(outcome(body, encoding, &DecodeLimits::default()), want);
}

fn series(pairs: &[(&str, &str)], samples: &[(i64, f64)]) -> SeriesSamples {
    SeriesSamples::new(
        Labels::from_pairs(pairs.iter().copied()),
        samples.iter().map(|&(t, v)| Sample::new(t, v)).collect(),
    )
}

fn encode(series: &[SeriesSamples], encoding: ContentEncoding) -> Vec<u8> {
    let mut body = Vec::new();
    encode_write_request_with(series, &[], encoding, &mut body).unwrap();
    body
}

// ---- labels: canonicalisation and validation ----

#[test]
fn labels_are_canonicalised() {
    check(&[("__name__", "up"), ("job", "node")], r#"up{job="node"}"#);
    check(&[("job", "node"), ("__name__", "up")], r#"up{job="node"}"#);
    check(
        &[("zone", ""), ("job", "node"), ("__name__", "up")],
        r#"up{job="node"}"#,
    );
    check(&[("__name__", "up"), ("a", ""), ("a", "1")], r#"up{a="1"}"#);
    check(&[("__name__", "up"), ("", "")], "up");
    check(&[("__name__", "ünïcode"), ("ключ", "値")], r#"ünïcode{ключ="値"}"#);
}

#[test]
fn invalid_label_sets_are_rejected() {
    check(&[], "error: invalid series at index 0: no labels");
    check(&[("job", "")], "error: invalid series at index 0: no labels");
    check(
        &[("job", "node")],
        "error: invalid series at index 0: no metric name (__name__ label)",
    );
    check(&[("__name__", "")], "error: invalid series at index 0: no labels");
    check(
        &[("__name__", "up"), ("a", "1"), ("a", "2")],
        r#"error: invalid series at index 0: duplicate label name "a""#,
    );
    check(
        &[("__name__", "up"), ("__name__", "up")],
        r#"error: invalid series at index 0: duplicate label name "__name__""#,
    );
    check(
        &[("__name__", "up"), ("", "x")],
        "error: invalid series at index 0: empty label name",
    );
}

#[test]
fn non_utf8_labels_are_rejected() {
    let d = DecodeLimits::default();
    check_raw_with(
        &d,
        &[(b"__name__", b"up"), (b"\xff", b"x")],
        "error: invalid series at index 0: label 1 has a name that is not valid UTF-8",
    );
    check_raw_with(
        &d,
        &[(b"__name__", b"up"), (b"a", b"\xc3")],
        r#"error: invalid series at index 0: label "a" has a value that is not valid UTF-8"#,
    );
    check_raw_with(
        &d,
        &[(b"__name__", b"\xed\xa0\x80")],
        r#"error: invalid series at index 0: label "__name__" has a value that is not valid UTF-8"#,
    );
}

/// Labels are UTF-8-checked as one run when they come first and together,
/// one by one otherwise; both ways accept the same and reject the same.
#[test]
fn label_text_is_checked_as_a_run_or_one_by_one() {
    let long = "ü".repeat(200); // a length of 400 is not ASCII: the run check fails over
    check(
        &[
            ("__name__", "up"),
            ("city", "Zürich"),
            ("word", "日本"),
            ("long", &long),
        ],
        &format!(r#"up{{city="Zürich", long="{long}", word="日本"}}"#),
    );
    // A label after a sample lies outside the run.
    let mut body_series = raw_series(&[(b"__name__", b"up")], &[(1, 1.0)]);
    let mut late = Vec::new();
    field(0x0a, b"late", &mut late);
    field(0x12, "é".as_bytes(), &mut late);
    field(0x0a, &late, &mut body_series);
    let body = raw_request(&[body_series.clone()]);
    check_body(&body, ContentEncoding::Identity, r#"up{late="é"}"#);
    let mut bad = body_series;
    let at = bad.len() - 1;
    bad[at] = 0xa9; // "é" loses its lead byte: a lone continuation byte
    bad[at - 1] = b'x';
    check_body(
        &raw_request(&[bad]),
        ContentEncoding::Identity,
        r#"error: invalid series at index 0: label "late" has a value that is not valid UTF-8"#,
    );
}

#[test]
fn label_limits_are_enforced() {
    let lim = DecodeLimits {
        max_labels_per_series: 3,
        max_label_name_len: 8,
        max_label_value_len: 4,
        ..DecodeLimits::default()
    };
    check_with(
        &lim,
        &[("__name__", "up"), ("a", "1"), ("b", "1234")],
        r#"up{a="1", b="1234"}"#,
    );
    check_with(
        &lim,
        &[("__name__", "up"), ("a", "1"), ("b", "2"), ("c", "3")],
        "error: invalid series at index 0: more than 3 labels",
    );
    // Counted as sent: empty values count too.
    check_with(
        &lim,
        &[("__name__", "up"), ("a", "1"), ("b", ""), ("c", "")],
        "error: invalid series at index 0: more than 3 labels",
    );
    check_with(
        &lim,
        &[("__name__", "up"), ("abcdefghi", "1")],
        r#"error: invalid series at index 0: label name "abcdefghi" is 9 bytes, over the 8-byte limit"#,
    );
    check_with(
        &lim,
        &[("__name__", "up"), ("a", "12345")],
        r#"error: invalid series at index 0: value of label "a" is 5 bytes, over the 4-byte limit"#,
    );
    let long = "x".repeat(100);
    let got = outcome(
        &raw_request(&[raw_series(&[(long.as_bytes(), b"1")], &[(1, 1.0)])]),
        ContentEncoding::Identity,
        &lim,
    );
    assert!(
        got.contains(&format!("{:?} is 100 bytes", "x".repeat(64))),
        "evidence is cut to 64 chars: {got}"
    );
}

#[test]
fn one_invalid_series_rejects_the_whole_request_and_names_its_index() {
    let ok = raw_series(&[(b"__name__", b"up")], &[(1, 1.0)]);
    let bad = raw_series(&[(b"job", b"x")], &[(1, 1.0)]);
    let body = raw_request(&[ok.clone(), ok.clone(), bad]);
    check_body(
        &body,
        ContentEncoding::Identity,
        "error: invalid series at index 2: no metric name (__name__ label)",
    );
}

#[test]
fn series_without_float_samples_are_skipped_but_counted() {
    let ts = |labels: Vec<proto::Label>, samples: usize, exemplars: usize, histograms: usize| proto::TimeSeries {
        labels,
        samples: (0..samples)
            .map(|i| proto::Sample {
                value: 1.0,
                timestamp: i as i64,
            })
            .collect(),
        exemplars: (0..exemplars)
            .map(|_| proto::Exemplar {
                labels: vec![],
                value: 1.0,
                timestamp: 5,
            })
            .collect(),
        histograms: (0..histograms)
            .map(|_| proto::Histogram {
                sum: 1.0,
                schema: 3,
                timestamp: 5,
                ..Default::default()
            })
            .collect(),
    };
    let name = |v: &str| {
        vec![proto::Label {
            name: "__name__".into(),
            value: v.into(),
        }]
    };
    let req = proto::WriteRequest {
        timeseries: vec![
            ts(name("a"), 2, 1, 0),
            ts(name("hist"), 0, 0, 3),
            // Invalid labels but nothing to store: skipped, not an error.
            ts(vec![], 0, 2, 0),
            ts(name("b"), 1, 0, 0),
        ],
        metadata: vec![],
    };
    let batch = decode_write_request(
        &req.encode_to_vec(),
        ContentEncoding::Identity,
        &DecodeLimits::default(),
    )
    .unwrap();
    let names: Vec<_> = batch.to_series().iter().map(|s| s.labels.to_string()).collect();
    assert_eq!(names, ["a", "hist", "b"]);
    assert_eq!(
        (batch.sample_count(), batch.histogram_count(), batch.exemplars_dropped),
        (3, 3, 3)
    );
}

#[test]
fn unknown_fields_are_skipped() {
    let mut label = Vec::new();
    field(0x0a, b"__name__", &mut label);
    field(0x1a, b"future", &mut label); // label field 3
    field(0x12, b"up", &mut label);
    let mut s = Vec::new();
    field(0x0a, &label, &mut s);
    s.extend_from_slice(&[0x48, 0x07]); // series field 9, varint
    let mut smp = proto::Sample {
        value: 2.5,
        timestamp: 7,
    }
    .encode_to_vec();
    smp.extend_from_slice(&[0x1d, 1, 2, 3, 4]); // sample field 3, fixed32
    field(0x12, &smp, &mut s);
    let mut body = Vec::new();
    field(0x12, b"cortex", &mut body); // reserved WriteRequest field 2
    field(0x0a, &s, &mut body);
    let batch = decode_write_request(&body, ContentEncoding::Identity, &DecodeLimits::default()).unwrap();
    assert_eq!(batch.to_series(), [series(&[("__name__", "up")], &[(7, 2.5)])]);
}

#[test]
fn repeated_scalar_fields_take_the_last_value() {
    let mut label = Vec::new();
    field(0x0a, b"__name__", &mut label);
    field(0x12, b"first", &mut label);
    field(0x12, b"last", &mut label);
    let mut s = Vec::new();
    field(0x0a, &label, &mut s);
    let mut smp = proto::Sample {
        value: 1.0,
        timestamp: 1,
    }
    .encode_to_vec();
    smp.extend(
        proto::Sample {
            value: 2.0,
            timestamp: 2,
        }
        .encode_to_vec(),
    );
    field(0x12, &smp, &mut s);
    let batch = decode_write_request(&raw_request(&[s]), ContentEncoding::Identity, &DecodeLimits::default()).unwrap();
    assert_eq!(batch.to_series(), [series(&[("__name__", "last")], &[(2, 2.0)])]);
}

// ---- content encodings and error classes ----

#[test]
fn content_encoding_from_header() {
    use ContentEncoding::*;
    let parse = |h: Option<&str>| ContentEncoding::from_header(h).map_err(|e| e.to_string());
    assert_eq!(parse(None), Ok(Snappy));
    assert_eq!(parse(Some("")), Ok(Snappy));
    assert_eq!(parse(Some("snappy")), Ok(Snappy));
    assert_eq!(parse(Some(" Snappy ")), Ok(Snappy));
    assert_eq!(parse(Some("zstd")), Ok(Zstd));
    assert_eq!(parse(Some("identity")), Ok(Identity));
    assert_eq!(
        parse(Some("gzip")),
        Err(r#"unsupported content encoding "gzip": want snappy, zstd or identity"#.into())
    );
    assert_eq!(
        parse(Some("snappy, gzip")),
        Err(r#"unsupported content encoding "snappy, gzip": want snappy, zstd or identity"#.into())
    );
    for e in ALL {
        assert_eq!(ContentEncoding::from_header(Some(e.as_str())), Ok(e));
    }
}

#[test]
fn error_kinds_map_to_one_status_each() {
    let unsupported = ContentEncoding::from_header(Some("br")).unwrap_err();
    assert!(unsupported.is_unsupported_encoding());
    assert_eq!(unsupported.kind(), ErrorKind::UnsupportedEncoding);
    assert_eq!(unsupported.kind().http_status(), 415);
    let d = DecodeLimits::default();
    let bad_data = [
        decode_write_request(b"\xff\xff\xff", ContentEncoding::Snappy, &d),
        decode_write_request(b"\x0a\x05", ContentEncoding::Identity, &d),
        decode_write_request(
            &raw_request(&[raw_series(&[], &[(1, 1.0)])]),
            ContentEncoding::Identity,
            &d,
        ),
        decode_write_request(
            &[0; 10],
            ContentEncoding::Identity,
            &DecodeLimits {
                max_decompressed_bytes: 9,
                ..d
            },
        ),
    ];
    for r in bad_data {
        let e = r.unwrap_err();
        assert!(!e.is_unsupported_encoding(), "{e}");
        assert_eq!(e.kind().http_status(), 400, "{e}");
    }
}

#[test]
fn decompression_errors() {
    let d = DecodeLimits::default();
    let starts = |body: &[u8], enc, prefix: &str| {
        let got = outcome(body, enc, &d);
        assert!(got.starts_with(prefix), "{got:?} does not start with {prefix:?}");
    };
    starts(
        b"\x05garbage",
        ContentEncoding::Snappy,
        "error: snappy decompression failed: ",
    );
    starts(b"", ContentEncoding::Snappy, "error: snappy decompression failed: ");
    starts(b"\x80", ContentEncoding::Snappy, "error: snappy decompression failed: ");
    starts(
        b"not zstd at all",
        ContentEncoding::Zstd,
        "error: zstd decompression failed: ",
    );
    // A valid zstd frame, cut short.
    let full = zstd::bulk::compress(&[7; 4096], 3).unwrap();
    starts(
        &full[..full.len() - 4],
        ContentEncoding::Zstd,
        "error: zstd decompression failed: ",
    );
    // An empty body is an empty request in every encoding but snappy's
    // (whose block starts with the length varint).
    check_body(b"", ContentEncoding::Identity, "");
    check_body(&encode(&[], ContentEncoding::Snappy), ContentEncoding::Snappy, "");
    check_body(&encode(&[], ContentEncoding::Zstd), ContentEncoding::Zstd, "");
}

#[test]
fn malformed_protobuf_errors_say_where() {
    let id = ContentEncoding::Identity;
    check_body(
        b"\x0a\x05\x0a",
        id,
        "error: malformed protobuf in series 0: length runs past the end of the message",
    );
    check_body(
        b"\x08\x01",
        id,
        "error: malformed protobuf in series 0: field 1 has wire type Varint, want LengthDelimited",
    );
    check_body(
        b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        id,
        "error: malformed protobuf in series 0: invalid varint",
    );
    check_body(
        b"\x07",
        id,
        "error: malformed protobuf in write request: invalid wire type value: 7",
    );
    check_body(
        b"\x1a\x02\x08",
        id,
        "error: malformed protobuf in metadata 0: length runs past the end of the message",
    );
    check_body(
        b"\x1a\x02\x12\x05",
        id,
        "error: malformed protobuf in metadata 0: MetricMetadata.metric_family_name: buffer underflow",
    );
    // A label whose value runs past the label.
    let mut s = Vec::new();
    field(0x0a, b"\x0a\x02up\x12\x09x", &mut s);
    check_body(
        &raw_request(&[s]),
        id,
        "error: malformed protobuf in series 0 label 0: length runs past the end of the message",
    );
    // A sample whose value is a varint, and one cut inside its double.
    let mut s = raw_series(&[(b"__name__", b"up")], &[]);
    field(0x12, b"\x08\x01", &mut s);
    check_body(
        &raw_request(&[s]),
        id,
        "error: malformed protobuf in series 0 sample 0: field 1 has wire type Varint, want LengthDelimited",
    );
    let mut s = raw_series(&[(b"__name__", b"up")], &[(1, 1.0)]);
    field(0x12, b"\x09\x00\x00", &mut s);
    check_body(
        &raw_request(&[s]),
        id,
        "error: malformed protobuf in series 0 sample 1: length runs past the end of the message",
    );
}

#[test]
fn oversized_bodies_are_rejected_before_allocating() {
    let d = DecodeLimits::default();
    // Identity: the body itself.
    let small = DecodeLimits {
        max_decompressed_bytes: 100,
        ..d
    };
    assert_eq!(
        outcome(&[0; 101], ContentEncoding::Identity, &small),
        "error: identity body decompresses to more than the 100-byte limit (101 bytes)"
    );
    // Snappy: a forged header declaring 3 GiB is refused from the header alone.
    let mut forged = Vec::new();
    encode_varint(3 << 30, &mut forged);
    forged.extend_from_slice(b"\x00\x00");
    assert_eq!(
        outcome(&forged, ContentEncoding::Snappy, &d),
        "error: snappy body decompresses to more than the 67108864-byte limit (3221225472 bytes)"
    );
    // ... and one within the limit but impossible for the body's size.
    let mut forged = Vec::new();
    encode_varint(60 << 20, &mut forged);
    forged.extend_from_slice(b"\x00\x00");
    assert_eq!(
        outcome(&forged, ContentEncoding::Snappy, &d),
        "error: snappy decompression failed: declared length 62914560 is impossible for a 6-byte body"
    );
}

#[test]
fn decompression_bombs_are_refused() {
    let limit = DecodeLimits {
        max_decompressed_bytes: 1 << 20,
        ..DecodeLimits::default()
    };
    let zeros = vec![0u8; 16 << 20];
    // Snappy: 16 MiB of zeros is ~750 KiB compressed.
    let bomb = snap::raw::Encoder::new().compress_vec(&zeros).unwrap();
    assert_eq!(
        outcome(&bomb, ContentEncoding::Snappy, &limit),
        "error: snappy body decompresses to more than the 1048576-byte limit (16777216 bytes)"
    );
    // Zstd with the size in the frame header: refused from the header.
    let bomb = zstd::bulk::compress(&zeros, 3).unwrap();
    assert!(bomb.len() < 2048, "{}", bomb.len());
    assert_eq!(
        outcome(&bomb, ContentEncoding::Zstd, &limit),
        "error: zstd body decompresses to more than the 1048576-byte limit (16777216 bytes)"
    );
    // Zstd streamed without a declared size: the bounded read stops it.
    let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    enc.include_contentsize(false).unwrap();
    for _ in 0..16 {
        std::io::Write::write_all(&mut enc, &zeros).unwrap();
    }
    let bomb = enc.finish().unwrap();
    assert_eq!(
        outcome(&bomb, ContentEncoding::Zstd, &limit),
        "error: zstd body decompresses to more than the 1048576-byte limit"
    );
    // And 256 MiB against the default 64 MiB limit.
    assert_eq!(
        outcome(&bomb, ContentEncoding::Zstd, &DecodeLimits::default()),
        "error: zstd body decompresses to more than the 67108864-byte limit"
    );
}

#[test]
fn zstd_window_is_bounded_by_the_limit() {
    assert_eq!(decode::window_log_for_test(1 << 20), 23);
    assert_eq!(decode::window_log_for_test(64 << 20), 26);
    assert_eq!(decode::window_log_for_test((64 << 20) + 1), 27);
    assert_eq!(decode::window_log_for_test(0), 23);
    assert_eq!(decode::window_log_for_test(usize::MAX), 31);
    // A body made with a window wider than the limit needs is refused.
    let limit = DecodeLimits {
        max_decompressed_bytes: 1 << 16,
        ..DecodeLimits::default()
    };
    let mut enc = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    enc.include_contentsize(false).unwrap();
    enc.window_log(25).unwrap();
    std::io::Write::write_all(&mut enc, &[1; 100]).unwrap();
    let body = enc.finish().unwrap();
    let got = outcome(&body, ContentEncoding::Zstd, &limit);
    assert!(got.starts_with("error: zstd decompression failed: "), "{got}");
}

// ---- values, encoder and interop ----

#[test]
fn float_bits_survive_every_encoding() {
    let values = [
        stale_nan(),
        f64::NAN,
        f64::from_bits(0xfff8_dead_beef_0001),
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
        0.0,
        f64::MIN_POSITIVE,
        f64::from_bits(1),
        f64::MAX,
    ];
    let samples: Vec<_> = values.iter().enumerate().map(|(i, &v)| (i as i64 - 3, v)).collect();
    let input = [series(&[("__name__", "up")], &samples)];
    for enc in ALL {
        let batch = decode_write_request(&encode(&input, enc), enc, &DecodeLimits::default()).unwrap();
        let got: Vec<_> = batch.to_series()[0]
            .samples
            .iter()
            .map(|s| (s.t, s.v.to_bits()))
            .collect();
        let want: Vec<_> = samples.iter().map(|&(t, v)| (t, v.to_bits())).collect();
        assert_eq!(got, want, "{enc}");
    }
}

#[test]
fn stale_markers_from_prost_encoders_are_bit_exact() {
    let req = proto::WriteRequest {
        timeseries: vec![proto::TimeSeries {
            labels: vec![proto::Label {
                name: "__name__".into(),
                value: "up".into(),
            }],
            samples: vec![proto::Sample {
                value: stale_nan(),
                timestamp: 1_700_000_000_000,
            }],
            ..Default::default()
        }],
        metadata: vec![],
    };
    let body = snap::raw::Encoder::new().compress_vec(&req.encode_to_vec()).unwrap();
    let batch = decode_write_request(&body, ContentEncoding::Snappy, &DecodeLimits::default()).unwrap();
    assert_eq!(batch.to_series()[0].samples[0].v.to_bits(), STALE_NAN_BITS);
    assert_eq!(batch.to_series()[0].samples[0].t, 1_700_000_000_000);
}

#[test]
fn encoder_matches_prost_byte_for_byte() {
    let input = [
        series(
            &[("__name__", "node_cpu_seconds_total"), ("cpu", "0"), ("mode", "idle")],
            &[(0, 0.0), (1, 1.5), (-5, f64::NAN)],
        ),
        series(&[("__name__", "up")], &[(1_700_000_000_000, 1.0)]),
    ];
    let metadata = [
        MetricMetadata {
            metric_family_name: "up".into(),
            metric_type: MetricType::Gauge,
            help: "1 if up".into(),
            unit: String::new(),
        },
        MetricMetadata::default(),
        MetricMetadata {
            metric_family_name: "h".into(),
            metric_type: MetricType::Summary,
            help: String::new(),
            unit: "seconds".into(),
        },
    ];
    let via_prost = proto::WriteRequest {
        timeseries: input
            .iter()
            .map(|s| proto::TimeSeries {
                labels: s
                    .labels
                    .iter()
                    .map(|l| proto::Label {
                        name: l.name.to_string(),
                        value: l.value.to_string(),
                    })
                    .collect(),
                samples: s
                    .samples
                    .iter()
                    .map(|x| proto::Sample {
                        value: x.v,
                        timestamp: x.t,
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        metadata: metadata.iter().map(proto::MetricMetadata::from).collect(),
    }
    .encode_to_vec();
    let mut ours = Vec::new();
    encode_write_request_with(&input, &metadata, ContentEncoding::Identity, &mut ours).unwrap();
    assert_eq!(ours, via_prost);
    // The default encoder is snappy's block format of the same bytes.
    let mut snappy = Vec::new();
    encode_write_request(&input, &metadata, &mut snappy).unwrap();
    assert_eq!(snap::raw::Decoder::new().decompress_vec(&snappy).unwrap(), via_prost);
    // Appends rather than overwrites.
    let mut appended = b"prefix".to_vec();
    encode_write_request_with(&input, &metadata, ContentEncoding::Identity, &mut appended).unwrap();
    assert_eq!(&appended[6..], via_prost);
}

#[test]
fn metadata_round_trips_with_upstream_type_numbers() {
    assert_eq!(proto::MetricType::Histogram as i32, 3);
    assert_eq!(proto::MetricType::Gaugehistogram as i32, 4);
    assert_eq!(proto::MetricType::Summary as i32, 5);
    let types = [
        MetricType::Unknown,
        MetricType::Counter,
        MetricType::Gauge,
        MetricType::Histogram,
        MetricType::GaugeHistogram,
        MetricType::Summary,
        MetricType::Info,
        MetricType::StateSet,
    ];
    let metadata: Vec<_> = types
        .iter()
        .map(|&t| MetricMetadata {
            metric_family_name: format!("m_{t}"),
            metric_type: t,
            help: "help ✓".into(),
            unit: "bytes".into(),
        })
        .collect();
    for enc in ALL {
        let mut body = Vec::new();
        encode_write_request_with(&[], &metadata, enc, &mut body).unwrap();
        let batch = decode_write_request(&body, enc, &DecodeLimits::default()).unwrap();
        assert_eq!(batch.metadata, metadata, "{enc}");
    }
    // A type number from a newer sender becomes Unknown.
    let req = proto::WriteRequest {
        timeseries: vec![],
        metadata: vec![proto::MetricMetadata {
            r#type: 42,
            metric_family_name: "x".into(),
            help: String::new(),
            unit: String::new(),
        }],
    };
    let batch = decode_write_request(
        &req.encode_to_vec(),
        ContentEncoding::Identity,
        &DecodeLimits::default(),
    )
    .unwrap();
    assert_eq!(batch.metadata[0].metric_type, MetricType::Unknown);
}

#[test]
fn identity_body_decodes() {
    let input = [
        series(&[("__name__", "a"), ("x", "1")], &[(10, 1.0), (20, 2.0)]),
        series(&[("__name__", "a"), ("x", "1")], &[(30, 3.0)]),
    ];
    let batch = decode_write_request(
        &encode(&input, ContentEncoding::Identity),
        ContentEncoding::Identity,
        &DecodeLimits::default(),
    )
    .unwrap();
    assert_eq!(batch, input.iter().cloned().collect::<WriteBatch>());
}

// ---- property tests ----

fn arb_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        any::<u64>().prop_map(f64::from_bits),
        Just(stale_nan()),
        Just(-0.0),
        Just(0.0),
    ]
}

fn arb_series() -> impl Strategy<Value = SeriesSamples> {
    (
        "[a-zA-Z_:][a-zA-Z0-9_:]{0,20}",
        proptest::collection::btree_map("[a-z_]{1,8}", "\\PC{0,12}", 0..8),
        proptest::collection::vec((any::<i64>(), arb_value()), 1..6),
    )
        .prop_map(|(name, mut labels, samples)| {
            labels.insert("__name__".into(), name);
            SeriesSamples::new(
                Labels::from_pairs(labels),
                samples.into_iter().map(|(t, v)| Sample::new(t, v)).collect(),
            )
        })
}

fn arb_encoding() -> impl Strategy<Value = ContentEncoding> {
    prop_oneof![
        Just(ContentEncoding::Snappy),
        Just(ContentEncoding::Zstd),
        Just(ContentEncoding::Identity),
    ]
}

proptest! {
    /// The one-pass encoding of a scraped sample is the general one's, for
    /// short labels (copied as they are) and for labels with lengths past
    /// one varint byte.
    #[test]
    fn a_float_series_from_an_encoding_is_written_as_encode_series_writes_it(
        labels in prop_oneof![
            proptest::collection::btree_map("[a-z_]{1,20}", "\\PC{0,20}", 1..6),
            proptest::collection::btree_map("[a-z_]{1,150}", "\\PC{0,150}", 1..6),
        ],
        t in any::<i64>(),
        v in arb_value(),
    ) {
        let labels = Labels::from_pairs(labels);
        let sample = Sample::new(t, v);
        let mut pairs = Vec::new();
        encode_label_pairs(labels.iter().map(|l| (l.name.as_bytes(), l.value.as_bytes())), &mut pairs);
        let mut general = Vec::new();
        encode_series(&pairs, std::slice::from_ref(&sample), &[], &mut general);
        let encoded = cairn_model::SharedEncodedLabels::new(&labels);
        let mut one_pass = Vec::new();
        encode_float_series(encoded.get(), &sample, &mut one_pass);
        prop_assert_eq!(one_pass, general);
    }
}

proptest! {
    #[test]
    fn encode_decode_round_trips(input in proptest::collection::vec(arb_series(), 0..8), enc in arb_encoding()) {
        let batch = decode_write_request(&encode(&input, enc), enc, &DecodeLimits::default()).unwrap();
        prop_assert_eq!(batch.to_series(), input);
    }

    /// Whatever order and empty labels the sender uses, the decoder yields
    /// what the prost schema plus `Labels::new` would.
    #[test]
    fn decoder_agrees_with_prost_schema(
        raw in proptest::collection::vec((
            proptest::collection::btree_map("[a-z_]{1,6}", "[a-z0-9]{0,4}", 0..6),
            any::<bool>(),
            proptest::collection::vec((any::<i64>(), arb_value()), 0..4),
            0..3usize,
        ), 0..6),
        shuffle_seed in any::<u64>(),
    ) {
        let mut req = proto::WriteRequest::default();
        let mut want = Vec::new();
        for (i, (labels, named, samples, histograms)) in raw.into_iter().enumerate() {
            let mut pl: Vec<_> = labels.iter().map(|(n, v)| proto::Label { name: n.clone(), value: v.clone() }).collect();
            if named {
                pl.push(proto::Label { name: "__name__".into(), value: format!("m{i}") });
            }
            let k = pl.len().max(1);
            pl.rotate_left((shuffle_seed as usize + i) % k);
            req.timeseries.push(proto::TimeSeries {
                labels: pl.clone(),
                samples: samples.iter().map(|&(t, v)| proto::Sample { value: v, timestamp: t }).collect(),
                exemplars: vec![],
                histograms: (0..histograms).map(|_| proto::Histogram { sum: 1.0, timestamp: 1, ..Default::default() }).collect(),
            });
            if !samples.is_empty() || histograms > 0 {
                let l = Labels::new(pl.into_iter().map(|l| Label::new(l.name, l.value)).collect()).unwrap();
                // prost, like Prometheus' Go encoder, omits a -0.0 value
                // (it equals the 0.0 default), so it arrives as +0.0.
                let arrives = |v: f64| if v == 0.0 { 0.0 } else { v };
                let hs = (0..histograms).map(|_| HistogramSample::new(1, Histogram { sum: 1.0, ..Histogram::default() })).collect();
                want.push(if named { Some(SeriesSamples::with_histograms(l, samples.iter().map(|&(t, v)| Sample::new(t, arrives(v))).collect(), hs)) } else { None });
            }
        }
        let got = decode_write_request(&req.encode_to_vec(), ContentEncoding::Identity, &DecodeLimits::default());
        if want.iter().all(Option::is_some) {
            let got = got.unwrap();
            prop_assert_eq!(got.to_series(), want.into_iter().flatten().collect::<Vec<_>>());
        } else {
            prop_assert!(matches!(got, Err(DecodeError::InvalidSeries { .. })), "{:?}", got);
        }
    }

    #[test]
    fn never_panics_on_arbitrary_bytes(body in proptest::collection::vec(any::<u8>(), 0..512), enc in arb_encoding()) {
        let _ = decode_write_request(&body, enc, &DecodeLimits::default());
    }

    /// Valid requests with a few bytes changed reach deeper than random bytes.
    #[test]
    fn never_panics_on_corrupted_requests(
        input in proptest::collection::vec(arb_series(), 1..4),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        enc in arb_encoding(),
    ) {
        let mut body = encode(&input, enc);
        for (at, byte) in edits {
            let i = at.index(body.len());
            body[i] = byte;
        }
        let _ = decode_write_request(&body, enc, &DecodeLimits::default());
        let _ = decode_write_request(&body, enc, &DecodeLimits { max_decompressed_bytes: 64, max_labels_per_series: 2, max_label_name_len: 3, max_label_value_len: 3, max_histogram_buckets: 2 });
    }
}

#[test]
fn v2_encoder_round_trips_through_the_v2_decoder() {
    let input = vec![
        series(&[("__name__", "up"), ("job", "a")], &[(1000, 1.0), (2000, stale_nan())]),
        series(&[("__name__", "up"), ("job", "b")], &[(1000, -0.0)]),
        series(&[("__name__", "temp"), ("job", "a")], &[(1500, f64::INFINITY)]),
    ];
    for encoding in [
        ContentEncoding::Snappy,
        ContentEncoding::Zstd,
        ContentEncoding::Identity,
    ] {
        let mut body = Vec::new();
        encode_write_request_v2(&input, encoding, &mut body).unwrap();
        let batch = decode_write_request_v2(&body, encoding, &DecodeLimits::default()).unwrap();
        let mut want = input.clone();
        // proto3 omits a zero double, so -0.0 arrives as +0.0 (as from Prometheus' encoder).
        want[1].samples[0].v = 0.0;
        assert_eq!(batch.to_series(), want, "{encoding:?}");
    }
    // Each distinct string is one symbol: "", __name__, up, job, a, b, temp.
    let mut body = Vec::new();
    encode_write_request_v2(&input, ContentEncoding::Identity, &mut body).unwrap();
    let req = proto_v2::Request::decode(body.as_slice()).unwrap();
    assert_eq!(req.symbols, ["", "__name__", "up", "job", "a", "b", "temp"]);
}
