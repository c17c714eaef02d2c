//! `prometheus.Histogram` (both protocol versions) to and from the model's
//! [`Histogram`].

use std::sync::Arc;

use cairn_model::histogram::{CUSTOM_BUCKETS_SCHEMA, ResetHint, counts_from_deltas, expand_spans};
use cairn_model::{Histogram, HistogramSample, is_stale_nan};

use super::proto::histogram::{Count, ZeroCount};
use super::proto::{self, BucketSpan};
use crate::histogram::{HistogramError, check_integer_counts, finish};

/// One histogram message, decoded.
#[derive(Debug, PartialEq)]
pub(super) enum Decoded {
    Histogram(HistogramSample),
    /// A staleness marker at this timestamp: storage keeps it as a float.
    Stale(i64),
}

/// Decodes and validates one histogram sample. A staleness marker (sum is
/// the stale NaN) is not checked further: it carries no buckets to store.
pub(super) fn from_proto(p: &proto::Histogram, max_buckets: usize) -> Result<Decoded, HistogramError> {
    if is_stale_nan(p.sum) {
        return Ok(Decoded::Stale(p.timestamp));
    }
    // As Prometheus: a histogram is a float one only when it says so.
    let float = matches!(p.count, Some(Count::CountFloat(_)));
    let buckets = if float {
        p.positive_counts.len().saturating_add(p.negative_counts.len())
    } else {
        p.positive_deltas.len().saturating_add(p.negative_deltas.len())
    };
    if buckets > max_buckets {
        return Err(HistogramError::TooManyBuckets {
            buckets,
            limit: max_buckets,
        });
    }
    let spans = |s: &[BucketSpan]| s.iter().map(|s| (s.offset, s.length)).collect::<Vec<_>>();
    let (count, zero_count, positive, negative) = if float {
        let count = match p.count {
            Some(Count::CountFloat(c)) => c,
            _ => 0.0,
        };
        let zero = match p.zero_count {
            Some(ZeroCount::ZeroCountFloat(c)) => c,
            _ => 0.0,
        };
        let positive = expand_spans(spans(&p.positive_spans), p.positive_counts.iter().copied())?;
        let negative = expand_spans(spans(&p.negative_spans), p.negative_counts.iter().copied())?;
        (count, zero, positive, negative)
    } else {
        let count = match p.count {
            Some(Count::CountInt(c)) => c,
            _ => 0,
        };
        let zero = match p.zero_count {
            Some(ZeroCount::ZeroCountInt(c)) => c,
            _ => 0,
        };
        let positive = expand_spans(spans(&p.positive_spans), counts_from_deltas(&p.positive_deltas))?;
        let negative = expand_spans(spans(&p.negative_spans), counts_from_deltas(&p.negative_deltas))?;
        // Checked in integers, as Prometheus does (a float sum could round).
        check_integer_counts(&p.positive_deltas, &p.negative_deltas, zero, count, p.sum)?;
        (count as f64, zero as f64, positive, negative)
    };
    let custom_bounds =
        (p.schema == CUSTOM_BUCKETS_SCHEMA || !p.custom_values.is_empty()).then(|| Arc::from(&p.custom_values[..]));
    let h = finish(Histogram {
        schema: p.schema,
        reset_hint: ResetHint::from_code(i64::from(p.reset_hint)),
        count,
        sum: p.sum,
        zero_threshold: p.zero_threshold,
        zero_count,
        positive,
        negative,
        custom_bounds,
    })?;
    Ok(Decoded::Histogram(HistogramSample::new(p.timestamp, h)))
}

/// The message for one histogram sample: an integer histogram when every
/// count is a whole number that an integer histogram can carry and the
/// counts add up as Prometheus checks, else a float one. Either decodes
/// back to the same [`Histogram`], but for a `-0.0` sum or zero threshold,
/// which prost (like Prometheus' encoder) omits as zero.
pub fn to_proto(s: &HistogramSample) -> proto::Histogram {
    let h = &s.h;
    // 2^53: above it a float no longer holds every integer; -0.0 must stay
    // a float to keep its sign.
    let whole = |c: f64| c.is_sign_positive() && c < 9_007_199_254_740_992.0 && c.fract() == 0.0;
    let counts = || h.positive.iter().chain(&h.negative).map(|b| b.1);
    let integer = whole(h.count) && whole(h.zero_count) && counts().all(whole) && {
        let in_buckets = counts().map(|c| c as u64).fold(h.zero_count as u64, u64::wrapping_add);
        let count = h.count as u64;
        if h.sum.is_nan() {
            in_buckets <= count
        } else {
            in_buckets == count
        }
    };
    let deltas = |b: &[(i32, f64)]| {
        let mut prev = 0i64;
        b.iter()
            .map(|&(_, c)| {
                let level = c as i64;
                let d = level.wrapping_sub(prev);
                prev = level;
                d
            })
            .collect()
    };
    let floats = |b: &[(i32, f64)]| b.iter().map(|b| b.1).collect();
    let mut p = proto::Histogram {
        sum: h.sum,
        schema: h.schema,
        zero_threshold: h.zero_threshold,
        negative_spans: spans(&h.negative),
        positive_spans: spans(&h.positive),
        reset_hint: i32::from(h.reset_hint.code()),
        timestamp: s.t,
        custom_values: h.bounds().to_vec(),
        ..proto::Histogram::default()
    };
    if integer {
        p.count = Some(Count::CountInt(h.count as u64));
        p.zero_count = Some(ZeroCount::ZeroCountInt(h.zero_count as u64));
        p.positive_deltas = deltas(&h.positive);
        p.negative_deltas = deltas(&h.negative);
    } else {
        p.count = Some(Count::CountFloat(h.count));
        p.zero_count = Some(ZeroCount::ZeroCountFloat(h.zero_count));
        p.positive_counts = floats(&h.positive);
        p.negative_counts = floats(&h.negative);
    }
    p
}

/// The spans of sorted sparse buckets: one per run of consecutive indices.
/// A gap wider than a span offset can say is bridged by empty spans.
fn spans(buckets: &[(i32, f64)]) -> Vec<BucketSpan> {
    let mut out: Vec<BucketSpan> = Vec::new();
    // Index just past the last span.
    let mut next = 0i64;
    for &(idx, _) in buckets {
        let idx = i64::from(idx);
        match out.last_mut() {
            Some(span) if idx == next => span.length += 1,
            _ => {
                let mut gap = idx - next;
                while gap > i64::from(i32::MAX) || gap < i64::from(i32::MIN) {
                    let step = gap.clamp(i64::from(i32::MIN), i64::from(i32::MAX));
                    out.push(BucketSpan {
                        offset: step as i32,
                        length: 0,
                    });
                    gap -= step;
                }
                out.push(BucketSpan {
                    offset: gap as i32,
                    length: 1,
                });
            }
        }
        next = idx + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use cairn_model::histogram::InvalidHistogram;
    use cairn_model::{Labels, Sample, stale_nan};
    use proptest::prelude::*;
    use prost::Message;

    use super::*;
    use crate::remote_write::{
        ContentEncoding, decode_write_request, decode_write_request_v2, encode_write_request_v2,
        encode_write_request_with,
    };
    use crate::{DecodeLimits, SeriesSamples};

    const LIMIT: usize = 1000;

    fn span(offset: i32, length: u32) -> BucketSpan {
        BucketSpan { offset, length }
    }

    /// An integer histogram: 2 in the zero bucket, positive buckets -1, 0
    /// and 3 (3, 2, 6), negative bucket 1 (4).
    fn integer() -> proto::Histogram {
        proto::Histogram {
            count: Some(Count::CountInt(17)),
            sum: 42.5,
            schema: 1,
            zero_threshold: 0.001,
            zero_count: Some(ZeroCount::ZeroCountInt(2)),
            positive_spans: vec![span(-1, 2), span(2, 1)],
            positive_deltas: vec![3, -1, 4],
            negative_spans: vec![span(1, 1)],
            negative_deltas: vec![4],
            reset_hint: proto::histogram::ResetHint::No as i32,
            timestamp: 1234,
            ..Default::default()
        }
    }

    fn float() -> proto::Histogram {
        proto::Histogram {
            count: Some(Count::CountFloat(7.5)),
            sum: -1.25,
            schema: -4,
            zero_threshold: 0.5,
            zero_count: Some(ZeroCount::ZeroCountFloat(0.5)),
            positive_spans: vec![span(0, 1), span(5, 2)],
            positive_counts: vec![1.5, 0.0, 2.5],
            negative_spans: vec![span(-3, 1)],
            negative_counts: vec![3.0],
            reset_hint: proto::histogram::ResetHint::Gauge as i32,
            timestamp: -5,
            ..Default::default()
        }
    }

    fn decode(p: &proto::Histogram) -> Result<Histogram, HistogramError> {
        match from_proto(p, LIMIT)? {
            Decoded::Histogram(s) => Ok(Arc::unwrap_or_clone(s.h)),
            Decoded::Stale(t) => panic!("stale marker at {t}"),
        }
    }

    #[test]
    fn an_integer_histogram_decodes_every_field() {
        let got = from_proto(&integer(), LIMIT).unwrap();
        let want = Histogram {
            schema: 1,
            reset_hint: ResetHint::NotReset,
            count: 17.0,
            sum: 42.5,
            zero_threshold: 0.001,
            zero_count: 2.0,
            positive: vec![(-1, 3.0), (0, 2.0), (3, 6.0)],
            negative: vec![(1, 4.0)],
            custom_bounds: None,
        };
        assert_eq!(got, Decoded::Histogram(HistogramSample::new(1234, want)));
    }

    #[test]
    fn a_float_histogram_decodes_every_field() {
        let want = Histogram {
            schema: -4,
            reset_hint: ResetHint::Gauge,
            count: 7.5,
            sum: -1.25,
            zero_threshold: 0.5,
            zero_count: 0.5,
            positive: vec![(0, 1.5), (6, 0.0), (7, 2.5)],
            negative: vec![(-3, 3.0)],
            custom_bounds: None,
        };
        assert_eq!(decode(&float()), Ok(want));
        // A float histogram's integer fields are not read, nor the other way.
        let mut mixed = float();
        mixed.positive_deltas = vec![100];
        mixed.zero_count = Some(ZeroCount::ZeroCountInt(9));
        let h = decode(&mixed).unwrap();
        assert_eq!((h.positive.len(), h.zero_count), (3, 0.0));
    }

    #[test]
    fn reset_hints_map_and_unknown_numbers_are_unknown() {
        for (n, want) in [
            (0, ResetHint::Unknown),
            (1, ResetHint::Reset),
            (2, ResetHint::NotReset),
            (3, ResetHint::Gauge),
            (9, ResetHint::Unknown),
        ] {
            let mut p = integer();
            p.reset_hint = n;
            assert_eq!(decode(&p).unwrap().reset_hint, want);
        }
    }

    #[test]
    fn every_exponential_schema_and_custom_buckets_decode() {
        for schema in -4..=8 {
            let mut p = integer();
            p.schema = schema;
            assert_eq!(decode(&p).unwrap().schema, schema);
        }
        let custom = proto::Histogram {
            count: Some(Count::CountInt(6)),
            sum: 10.0,
            schema: CUSTOM_BUCKETS_SCHEMA,
            positive_spans: vec![span(0, 2), span(1, 1)],
            positive_deltas: vec![1, 1, 1],
            custom_values: vec![0.5, 1.0, 5.0],
            ..Default::default()
        };
        let h = decode(&custom).unwrap();
        assert_eq!(h.positive, [(0, 1.0), (1, 2.0), (3, 3.0)]);
        assert_eq!(h.bounds(), [0.5, 1.0, 5.0]);
        // Schemas finer than 8, up to 52, are merged down to 8.
        let mut fine = integer();
        fine.schema = 9;
        let h = decode(&fine).unwrap();
        assert_eq!((h.schema, h.positive), (8, vec![(0, 5.0), (2, 6.0)]));
    }

    #[test]
    fn a_staleness_marker_is_only_a_timestamp() {
        let mut p = integer();
        p.sum = stale_nan();
        // Even one Prometheus would not store otherwise: it stores no buckets.
        p.schema = 99;
        assert_eq!(from_proto(&p, LIMIT), Ok(Decoded::Stale(1234)));
        // Another NaN is an ordinary sum.
        p.sum = f64::NAN;
        p.schema = 0;
        assert!(matches!(from_proto(&p, LIMIT), Ok(Decoded::Histogram(_))));
    }

    #[test]
    fn malformed_histograms_are_refused_with_their_reason() {
        let check = |edit: &dyn Fn(&mut proto::Histogram), want: &str| {
            for base in [integer(), float()] {
                let mut p = base;
                edit(&mut p);
                let err = from_proto(&p, LIMIT).unwrap_err().to_string();
                assert!(err.contains(want), "{err}, want {want}");
            }
        };
        check(
            &|p| p.positive_spans.push(span(0, 1)),
            "spans describe 4 buckets but 3 counts are given",
        );
        check(&|p| p.negative_spans.clear(), "spans describe 0 buckets but 1 counts");
        // A huge span length is compared, never allocated.
        check(
            &|p| p.positive_spans = vec![span(0, u32::MAX), span(0, u32::MAX)],
            "spans describe 8589934590 buckets but 3 counts",
        );
        check(&|p| p.positive_spans[1].offset = -1, "negative offset");
        check(&|p| p.schema = 53, "schema 53 is neither exponential");
        check(&|p| p.schema = -5, "schema -5");
        check(&|p| p.custom_values = vec![1.0], "must not carry custom bounds");
        check(&|p| p.schema = CUSTOM_BUCKETS_SCHEMA, "custom-bucket histogram must");
        check(&|p| p.zero_threshold = -1.0, "zero threshold is negative");
        let refused = |p: &proto::Histogram, limit| from_proto(p, limit).unwrap_err();
        assert_eq!(
            refused(&integer(), 3),
            HistogramError::TooManyBuckets { buckets: 4, limit: 3 }
        );
        let mut negative = integer();
        negative.positive_deltas = vec![3, -4, 4];
        assert_eq!(refused(&negative, LIMIT), InvalidHistogram::NegativeCount.into());
        let mut negative = float();
        negative.negative_counts = vec![-3.0];
        assert_eq!(refused(&negative, LIMIT), InvalidHistogram::NegativeCount.into());
        let mut miscounted = integer();
        miscounted.count = Some(Count::CountInt(16));
        assert_eq!(
            refused(&miscounted, LIMIT),
            HistogramError::CountMismatch { buckets: 17, count: 16 }
        );
        // With a NaN sum, the count may be larger than the buckets' total.
        miscounted.count = Some(Count::CountInt(18));
        miscounted.sum = f64::NAN;
        assert!(from_proto(&miscounted, LIMIT).is_ok());
        let mut unsorted = integer();
        unsorted.schema = CUSTOM_BUCKETS_SCHEMA;
        unsorted.zero_count = None;
        unsorted.zero_threshold = 0.0;
        unsorted.negative_spans.clear();
        unsorted.negative_deltas.clear();
        unsorted.count = Some(Count::CountInt(11));
        unsorted.positive_spans = vec![span(0, 3)];
        unsorted.custom_values = vec![2.0, 1.0];
        assert_eq!(refused(&unsorted, LIMIT), InvalidHistogram::CustomBuckets.into());
    }

    fn series(name: &str, samples: Vec<Sample>, histograms: Vec<HistogramSample>) -> SeriesSamples {
        SeriesSamples::with_histograms(Labels::from_pairs([("__name__", name)]), samples, histograms)
    }

    fn sample(p: proto::Histogram) -> HistogramSample {
        match from_proto(&p, LIMIT).unwrap() {
            Decoded::Histogram(s) => s,
            Decoded::Stale(_) => unreachable!(),
        }
    }

    #[test]
    fn requests_keep_histograms_and_refuse_invalid_ones_alone() {
        let mut stale = integer();
        stale.sum = stale_nan();
        stale.timestamp = 2000;
        let mut bad = integer();
        bad.schema = 10_000;
        let ts = |name: &str, samples: Vec<proto::Sample>, histograms: Vec<proto::Histogram>| proto::TimeSeries {
            labels: vec![proto::Label {
                name: "__name__".into(),
                value: name.into(),
            }],
            samples,
            exemplars: vec![],
            histograms,
        };
        let req = proto::WriteRequest {
            timeseries: vec![
                ts(
                    "floats",
                    vec![proto::Sample {
                        value: 1.0,
                        timestamp: 1,
                    }],
                    vec![],
                ),
                ts("hist", vec![], vec![integer(), stale.clone(), bad.clone(), float()]),
                // Nothing left to store: skipped as a series without samples.
                ts("only_bad", vec![], vec![bad]),
            ],
            metadata: vec![],
        };
        let batch = decode_write_request(
            &req.encode_to_vec(),
            ContentEncoding::Identity,
            &DecodeLimits::default(),
        )
        .unwrap();
        let got = batch.to_series();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].histograms, []);
        assert_eq!(got[1].histograms, [sample(integer()), sample(float())]);
        assert_eq!(got[1].samples.len(), 1);
        assert_eq!(
            (got[1].samples[0].t, got[1].samples[0].v.to_bits()),
            (2000, stale_nan().to_bits())
        );
        assert_eq!(
            (
                batch.sample_count(),
                batch.histogram_count(),
                batch.histogram_stale_markers(),
                batch.histograms_written()
            ),
            (2, 2, 1, 3)
        );
        assert_eq!(batch.histograms_invalid.count, 2);
        assert_eq!(
            batch.histograms_invalid.first.as_deref(),
            Some(
                "series 1 histogram 2: histogram schema 10000 is neither exponential (-4 to 8) nor custom buckets (-53)"
            )
        );
    }

    #[test]
    fn an_oversized_histogram_message_is_refused_unread() {
        let mut big = integer();
        big.custom_values = vec![1.0; 200];
        let req = proto::WriteRequest {
            timeseries: vec![proto::TimeSeries {
                labels: vec![proto::Label {
                    name: "__name__".into(),
                    value: "h".into(),
                }],
                histograms: vec![big, integer()],
                ..Default::default()
            }],
            metadata: vec![],
        };
        let limits = DecodeLimits {
            max_histogram_buckets: 4,
            ..DecodeLimits::default()
        };
        let batch = decode_write_request(&req.encode_to_vec(), ContentEncoding::Identity, &limits).unwrap();
        assert_eq!((batch.histogram_count(), batch.histograms_invalid.count), (1, 1));
        let why = batch.histograms_invalid.first.unwrap();
        assert!(
            why.contains("more than any histogram within the 4-bucket limit"),
            "{why}"
        );
        // Broken framing inside a histogram refuses the request.
        let mut body = Vec::new();
        let mut series = Vec::new();
        series.extend_from_slice(&[0x22, 3, 0x62, 5, 1]); // field 12, 5 bytes, 1 given
        prost::encoding::encode_varint(series.len() as u64, &mut body);
        let body = [&[0x0a][..], &body, &series].concat();
        let err = decode_write_request(&body, ContentEncoding::Identity, &DecodeLimits::default()).unwrap_err();
        assert!(err.to_string().contains("series 0 histogram 0"), "{err}");
    }

    fn arb_buckets() -> impl Strategy<Value = Vec<(i32, f64)>> {
        prop_oneof![
            prop::collection::btree_map(-30i32..30, 0u32..1000, 0..10),
            prop::collection::btree_map(any::<i32>(), 0u32..1000, 0..4),
        ]
        .prop_map(|m| m.into_iter().map(|(i, c)| (i, f64::from(c))).collect())
    }

    /// Valid histograms of every kind: integer counts that add up (sent as
    /// integer histograms), fractional ones (sent as float ones), custom
    /// buckets.
    fn arb_histogram() -> impl Strategy<Value = HistogramSample> {
        let exponential = (
            -4i32..=8,
            arb_buckets(),
            arb_buckets(),
            0u32..5,
            prop_oneof![Just(0.0), Just(1e-128), Just(0.25)],
            any::<bool>(),
            0u8..4,
        )
            .prop_map(|(schema, positive, negative, zero, threshold, fractional, hint)| {
                let scale = if fractional { 0.5 } else { 1.0 };
                let positive: Vec<_> = positive.into_iter().map(|(i, c)| (i, c * scale)).collect();
                let negative: Vec<_> = negative.into_iter().map(|(i, c)| (i, c * scale)).collect();
                let zero_count = f64::from(zero) * scale;
                let count = positive.iter().chain(&negative).map(|b| b.1).sum::<f64>() + zero_count;
                Histogram {
                    schema,
                    reset_hint: [
                        ResetHint::Unknown,
                        ResetHint::Reset,
                        ResetHint::NotReset,
                        ResetHint::Gauge,
                    ][usize::from(hint)],
                    count,
                    sum: count * 1.5 - 3.0,
                    zero_threshold: threshold,
                    zero_count,
                    positive,
                    negative,
                    custom_bounds: None,
                }
            });
        let custom = prop::collection::btree_map(0i32..6, 0u32..100, 0..6).prop_map(|m| {
            let positive: Vec<_> = m.into_iter().map(|(i, c)| (i, f64::from(c))).collect();
            // An empty float sum is -0.0.
            let count = positive.iter().map(|b| b.1).sum::<f64>() + 0.0;
            Histogram {
                schema: CUSTOM_BUCKETS_SCHEMA,
                count,
                sum: 2.0,
                positive,
                custom_bounds: Some(vec![0.1, 0.5, 1.0, 2.5, 10.0].into()),
                ..Histogram::default()
            }
        });
        (prop_oneof![exponential, custom], any::<i64>()).prop_map(|(h, t)| HistogramSample::new(t, h))
    }

    fn arb_series() -> impl Strategy<Value = Vec<SeriesSamples>> {
        prop::collection::vec(
            (
                prop::collection::vec((any::<i64>(), -1e6f64..1e6), 0..3),
                prop::collection::vec(arb_histogram(), 0..4),
            ),
            1..4,
        )
        .prop_map(|all| {
            all.into_iter()
                .enumerate()
                .filter(|(_, (s, h))| !s.is_empty() || !h.is_empty())
                .map(|(i, (s, h))| {
                    series(
                        &format!("m{i}"),
                        s.into_iter().map(|(t, v)| Sample::new(t, v)).collect(),
                        h,
                    )
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn v1_histograms_round_trip(input in arb_series(), zstd in any::<bool>()) {
            let enc = if zstd { ContentEncoding::Zstd } else { ContentEncoding::Snappy };
            let mut body = Vec::new();
            encode_write_request_with(&input, &[], enc, &mut body).unwrap();
            let batch = decode_write_request(&body, enc, &DecodeLimits::default()).unwrap();
            prop_assert!(batch.histograms_invalid.is_empty(), "{:?}", batch.histograms_invalid);
            prop_assert_eq!(batch.to_series(), input);
        }

        #[test]
        fn v2_histograms_round_trip(input in arb_series()) {
            // prost drops a +-0.0 float value; keep them out of the comparison.
            let input: Vec<_> = input.into_iter().map(|mut s| { s.samples.retain(|x| x.v != 0.0); s }).collect();
            let mut body = Vec::new();
            encode_write_request_v2(&input, ContentEncoding::Identity, &mut body).unwrap();
            let batch = decode_write_request_v2(&body, ContentEncoding::Identity, &DecodeLimits::default()).unwrap();
            prop_assert!(batch.histograms_invalid.is_empty(), "{:?}", batch.histograms_invalid);
            let input: Vec<_> = input.into_iter().filter(|s| !s.samples.is_empty() || !s.histograms.is_empty()).collect();
            prop_assert_eq!(batch.to_series(), input);
        }

        #[test]
        fn integer_histograms_go_out_as_integers(h in arb_histogram()) {
            let p = to_proto(&h);
            let whole = h.h.positive.iter().chain(&h.h.negative).all(|b| b.1.fract() == 0.0)
                && h.h.zero_count.fract() == 0.0;
            prop_assert_eq!(matches!(p.count, Some(Count::CountInt(_))), whole);
            prop_assert_eq!(from_proto(&p, LIMIT), Ok(Decoded::Histogram(h)));
        }

        #[test]
        fn arbitrary_histogram_messages_never_panic(
            count in any::<u64>(), sum in any::<f64>(), schema in any::<i32>(), zt in any::<f64>(),
            spans in prop::collection::vec((any::<i32>(), any::<u32>()), 0..4),
            deltas in prop::collection::vec(any::<i64>(), 0..6),
            counts in prop::collection::vec(any::<f64>(), 0..6),
            custom in prop::collection::vec(any::<f64>(), 0..4),
            float in any::<bool>(),
        ) {
            let p = proto::Histogram {
                count: Some(if float { Count::CountFloat(f64::from_bits(count)) } else { Count::CountInt(count) }),
                sum,
                schema,
                zero_threshold: zt,
                positive_spans: spans.iter().map(|&(o, l)| span(o, l)).collect(),
                positive_deltas: deltas.clone(),
                positive_counts: counts.clone(),
                negative_spans: spans.iter().rev().map(|&(o, l)| span(o, l % 8)).collect(),
                negative_deltas: deltas,
                negative_counts: counts,
                custom_values: custom,
                ..Default::default()
            };
            if let Ok(Decoded::Histogram(h)) = from_proto(&p, LIMIT) {
                prop_assert_eq!(h.h.validate(), Ok(()));
            }
        }
    }
}
