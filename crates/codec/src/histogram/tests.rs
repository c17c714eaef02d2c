use proptest::prelude::*;

use super::*;

/// Round-trips a block (with a byte after it that must be left) and
/// returns its size in bytes.
fn check(ts: &[i64], hs: &[HistogramValue]) -> usize {
    let mut buf = Vec::new();
    encode_histograms(&mut buf, ts, hs);
    let size = buf.len();
    buf.push(0xee);
    let (mut got_ts, mut got_hs) = (vec![-1], Vec::new());
    let rest = decode_histograms(&buf, &mut got_ts, &mut got_hs).unwrap();
    assert_eq!(rest, [0xee]);
    assert_eq!(got_ts[1..], *ts);
    assert_eq!(got_hs.len(), hs.len());
    for (got, want) in got_hs.iter().zip(hs) {
        assert_eq!(bits(got), bits(want));
    }
    size
}

/// Every field as bits, so NaNs and signed zeros compare exactly.
fn bits(h: &HistogramValue) -> Vec<u64> {
    let mut out = vec![
        h.schema as u64,
        u64::from(h.reset_hint),
        h.count.to_bits(),
        h.sum.to_bits(),
        h.zero_threshold.to_bits(),
        h.zero_count.to_bits(),
    ];
    for side in [&h.positive, &h.negative] {
        out.push(side.len() as u64);
        out.extend(side.iter().flat_map(|b| [b.0 as u64, b.1.to_bits()]));
    }
    match &h.custom_bounds {
        None => out.push(u64::MAX),
        Some(b) => out.extend(b.iter().map(|v| v.to_bits())),
    }
    out
}

/// A schema 3 histogram of `buckets` populated buckets after `step` scrapes
/// of a counter: each bucket grows at its own rate, by a varying amount
/// each scrape.
fn realistic(step: u64, buckets: i32) -> HistogramValue {
    let positive: Vec<(i32, f64)> = (0..buckets)
        .map(|i| {
            let rate = 1 + (i as u64 * 7) % 13;
            // A deterministic stand-in for the noise of real increments.
            let total: u64 = (1..=step)
                .map(|s| rate + (s.wrapping_mul(2_654_435_761) ^ (i as u64 * 40_503)) % 5)
                .sum();
            (i + 10, total as f64)
        })
        .collect();
    let count: f64 = positive.iter().map(|b| b.1).sum::<f64>() + step as f64;
    HistogramValue {
        schema: 3,
        reset_hint: 2,
        count,
        sum: count * 0.173 + step as f64 * 0.01,
        zero_threshold: 1e-128,
        zero_count: step as f64,
        positive,
        negative: Vec::new(),
        custom_bounds: None,
    }
}

#[test]
fn empty_and_single_blocks_round_trip() {
    assert_eq!(check(&[], &[]), 2);
    check(&[7], &[HistogramValue::default()]);
    check(
        &[i64::MIN, i64::MAX, 0],
        &[realistic(1, 3), realistic(2, 3), realistic(3, 3)],
    );
}

#[test]
fn every_kind_of_histogram_round_trips() {
    let bounds: Arc<[f64]> = Arc::from(vec![0.1, 0.5, 1.0, 5.0]);
    let custom = HistogramValue {
        schema: -53,
        count: 9.0,
        sum: 12.5,
        positive: vec![(0, 2.0), (1, 3.0), (4, 4.0)],
        custom_bounds: Some(bounds.clone()),
        ..HistogramValue::default()
    };
    let float = HistogramValue {
        schema: -4,
        reset_hint: 3,
        count: 3.5,
        sum: f64::NAN,
        zero_threshold: 0.001,
        zero_count: 0.25,
        positive: vec![(-3, 1.25), (9, -0.0)],
        negative: vec![(-100, 2.0), (i32::MAX, f64::INFINITY)],
        custom_bounds: None,
    };
    let mut schema8 = realistic(5, 40);
    schema8.schema = 8;
    schema8.negative = vec![(i32::MIN, 1.0), (0, 2.0)];
    let hs = vec![custom.clone(), custom.clone(), float, schema8, custom];
    check(&[1, 2, 3, 4, 5], &hs);
}

#[test]
fn custom_bounds_are_written_once_and_shared_when_decoded() {
    let bounds: Arc<[f64]> = Arc::from((0..50).map(f64::from).collect::<Vec<_>>());
    let h = |c: f64| HistogramValue {
        schema: -53,
        count: c,
        positive: vec![(3, c)],
        custom_bounds: Some(bounds.clone()),
        ..HistogramValue::default()
    };
    let hs: Vec<_> = (0..100).map(|i| h(f64::from(i))).collect();
    let ts: Vec<i64> = (0..100).map(|i| i * 15_000).collect();
    // The bounds once (400 bytes), then a few bits per sample.
    assert!(check(&ts, &hs) < 400 + 100 * 4);
    let (mut got_ts, mut got) = (Vec::new(), Vec::new());
    let mut buf = Vec::new();
    encode_histograms(&mut buf, &ts, &hs);
    decode_histograms(&buf, &mut got_ts, &mut got).unwrap();
    let first = got[0].custom_bounds.clone().unwrap();
    assert!(
        got.iter()
            .all(|h| Arc::ptr_eq(h.custom_bounds.as_ref().unwrap(), &first))
    );
}

#[test]
fn a_realistic_series_costs_a_few_bits_per_bucket() {
    let n = 120;
    let ts: Vec<i64> = (0..n).map(|i| 1_700_000_000_000 + i * 15_000 + (i * 7) % 3).collect();
    for buckets in [20, 40] {
        let hs: Vec<_> = (0..n as u64).map(|s| realistic(s + 1, buckets)).collect();
        let size = check(&ts, &hs);
        let per_sample = size as f64 / n as f64;
        println!("schema 3, {buckets} buckets, 15 s: {per_sample:.1} bytes per histogram sample");
        // Six bits a bucket for these increments, and the sum.
        assert!(
            per_sample < 0.8 * f64::from(buckets) + 12.0,
            "{per_sample} bytes per sample"
        );
    }
}

#[test]
fn a_layout_change_mid_block_round_trips() {
    let mut hs: Vec<_> = (1..=10).map(|s| realistic(s, 5)).collect();
    hs[4].positive.push((100, 1.0));
    hs[7].positive.remove(0);
    hs[8].zero_threshold = 0.5;
    let ts: Vec<i64> = (0..10).collect();
    check(&ts, &hs);
}

#[test]
fn decoding_errors_append_nothing() {
    let mut buf = Vec::new();
    let hs: Vec<_> = (1..=4).map(|s| realistic(s, 6)).collect();
    encode_histograms(&mut buf, &[1, 2, 3, 4], &hs);
    for cut in 0..buf.len() {
        let (mut ts, mut out) = (Vec::new(), Vec::new());
        assert!(
            decode_histograms(&buf[..cut], &mut ts, &mut out).is_err(),
            "cut at {cut}"
        );
        assert!(ts.is_empty() && out.is_empty());
    }
    let err = decode_histograms(&[9, 0], &mut Vec::new(), &mut Vec::new()).unwrap_err();
    assert!(matches!(err, Error::UnknownTag { tag: 9, .. }), "{err}");
}

fn bucket_side() -> impl Strategy<Value = Vec<(i32, f64)>> {
    proptest::collection::btree_map(any::<i32>(), count(), 0..12).prop_map(|m| m.into_iter().collect())
}

/// Mostly integral counts, sometimes any float.
fn count() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => (0u32..1000).prop_map(f64::from),
        1 => any::<u64>().prop_map(f64::from_bits),
    ]
}

fn histogram() -> impl Strategy<Value = HistogramValue> {
    let bounds = proptest::option::of(proptest::collection::vec(any::<u64>().prop_map(f64::from_bits), 0..6));
    (
        (any::<i32>(), 0u8..4, count(), any::<u64>(), any::<u64>(), count()),
        bucket_side(),
        bucket_side(),
        bounds,
    )
        .prop_map(
            |((schema, reset_hint, count, sum, zt, zero_count), positive, negative, bounds)| HistogramValue {
                schema,
                reset_hint,
                count,
                sum: f64::from_bits(sum),
                zero_threshold: f64::from_bits(zt),
                zero_count,
                positive,
                negative,
                custom_bounds: bounds.map(Arc::from),
            },
        )
}

proptest! {
    #[test]
    fn arbitrary_histograms_round_trip(
        samples in proptest::collection::vec((any::<i64>(), histogram()), 0..20),
    ) {
        let (ts, hs): (Vec<i64>, Vec<HistogramValue>) = samples.into_iter().unzip();
        check(&ts, &hs);
    }

    /// A counter's consecutive samples share their layout, the case the
    /// block codes most tightly.
    #[test]
    fn growing_counters_round_trip(start in 1u64..1000, n in 1usize..60, buckets in 0i32..50) {
        let hs: Vec<_> = (0..n as u64).map(|s| realistic(start + s, buckets)).collect();
        let ts: Vec<i64> = (0..n as i64).map(|i| i * 15_000).collect();
        check(&ts, &hs);
    }

    /// Damaged blocks, which reach deeper into the decoder than random bytes.
    #[test]
    fn decoding_damaged_blocks_never_panics(
        samples in proptest::collection::vec((any::<i64>(), histogram()), 1..6),
        flips in proptest::collection::vec((any::<usize>(), 1u8..=255), 1..4),
        cut in any::<usize>(),
    ) {
        let (ts, hs): (Vec<i64>, Vec<HistogramValue>) = samples.into_iter().unzip();
        let mut buf = Vec::new();
        encode_histograms(&mut buf, &ts, &hs);
        for (at, x) in flips {
            let len = buf.len();
            buf[at % len] ^= x;
        }
        buf.truncate(cut % (buf.len() + 1));
        let (mut got_ts, mut got_hs) = (Vec::new(), Vec::new());
        if decode_histograms(&buf, &mut got_ts, &mut got_hs).is_err() {
            prop_assert!(got_ts.is_empty() && got_hs.is_empty());
        }
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let (mut ts, mut hs) = (Vec::new(), Vec::new());
        if let Ok(rest) = decode_histograms(&bytes, &mut ts, &mut hs) {
            prop_assert!(rest.len() < bytes.len());
            prop_assert_eq!(ts.len(), hs.len());
        }
    }
}
