use std::collections::BTreeMap;
use std::io::Read;

use cairn_model::{Labels, Sample, is_stale_nan, stale_nan};
use proptest::prelude::*;

use super::*;

const VM_NATIVE: &[u8] = include_bytes!("testdata/victoria-metrics-1.150.native");
const VM_JSON_GZ: &[u8] = include_bytes!("testdata/victoria-metrics-1.150.jsonl.gz");

type Series = BTreeMap<Labels, Vec<Sample>>;

fn read_all(stream: &[u8]) -> Result<(Series, usize), NativeError> {
    let mut reader = NativeReader::new(stream)?;
    let mut out = Series::new();
    let mut blocks = 0;
    while let Some(block) = reader.next_block()? {
        blocks += 1;
        let labels = Labels::new(block.labels).unwrap();
        out.entry(labels).or_default().extend(block.samples);
    }
    Ok((out, blocks))
}

fn write_all(series: &Series, min_t: i64, max_t: i64) -> Vec<u8> {
    let mut out = Vec::new();
    write_header(&mut out, min_t, max_t);
    for (labels, samples) in series {
        let ts: Vec<i64> = samples.iter().map(|s| s.t).collect();
        let vs: Vec<f64> = samples.iter().map(|s| s.v).collect();
        write_series(&mut out, labels, &ts, &vs);
    }
    out
}

/// The samples of VictoriaMetrics' JSON export of the same data.
fn vm_json() -> Series {
    let mut text = String::new();
    flate2::read::GzDecoder::new(VM_JSON_GZ)
        .read_to_string(&mut text)
        .unwrap();
    let mut out = Series::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let labels = Labels::from_pairs(
            v["metric"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap())),
        );
        let values = v["values"].as_array().unwrap().iter().map(|v| match v {
            serde_json::Value::String(s) if s == "Infinity" => f64::INFINITY,
            serde_json::Value::String(s) if s == "-Infinity" => f64::NEG_INFINITY,
            v => v.as_f64().unwrap(),
        });
        let samples = v["timestamps"]
            .as_array()
            .unwrap()
            .iter()
            .zip(values)
            .map(|(t, v)| Sample::new(t.as_i64().unwrap(), v));
        out.insert(labels, samples.collect());
    }
    out
}

fn same_bits(a: &[Sample], b: &[Sample]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(a, b)| a.t == b.t && a.v.to_bits() == b.v.to_bits())
}

#[test]
fn reads_what_victoria_metrics_exports() {
    let (native, blocks) = read_all(VM_NATIVE).unwrap();
    // The 20,000-sample series comes in blocks of at most 8 Ki samples.
    assert!(blocks >= 8, "{blocks} blocks");
    assert_eq!(
        NativeReader::new(VM_NATIVE).unwrap().time_range(),
        (1_699_999_999_000, 1_700_100_000_000)
    );
    let json = vm_json();
    assert_eq!(native.keys().collect::<Vec<_>>(), json.keys().collect::<Vec<_>>());
    for (labels, samples) in &json {
        assert!(same_bits(&native[labels], samples), "{labels:?}");
    }
    assert_eq!(native[&Labels::from_pairs([("__name__", "long")])].len(), 20_000);
}

#[test]
fn victoria_metrics_samples_survive_a_round_trip() {
    let (series, _) = read_all(VM_NATIVE).unwrap();
    let (back, _) = read_all(&write_all(&series, i64::MIN + 1, i64::MAX)).unwrap();
    assert_eq!(back.len(), series.len());
    for (labels, samples) in &series {
        assert!(same_bits(&back[labels], samples), "{labels:?}");
    }
}

#[test]
fn blocks_are_cut_at_eight_ki_samples() {
    let labels = Labels::from_pairs([("__name__", "m")]);
    let ts: Vec<i64> = (0..20_000).collect();
    let vs: Vec<f64> = ts.iter().map(|&t| t as f64 * 0.5).collect();
    let mut out = Vec::new();
    write_header(&mut out, 0, 20_000);
    assert_eq!(write_series(&mut out, &labels, &ts, &vs), 0);
    let (series, blocks) = read_all(&out).unwrap();
    assert_eq!(blocks, 3);
    assert_eq!(series[&labels].len(), 20_000);
}

#[test]
fn the_time_range_filters_samples() {
    let labels = Labels::from_pairs([("__name__", "m")]);
    let samples: Vec<Sample> = (0..10).map(|i| Sample::new(i * 1000, i as f64)).collect();
    let stream = write_all(&Series::from([(labels.clone(), samples.clone())]), 2000, 4000);
    let (series, _) = read_all(&stream).unwrap();
    assert_eq!(series[&labels], samples[2..=4]);
}

#[test]
fn nans_other_than_staleness_markers_are_left_out() {
    let labels = Labels::from_pairs([("__name__", "m")]);
    let mut out = Vec::new();
    write_header(&mut out, 0, 10);
    let left_out = write_series(
        &mut out,
        &labels,
        &[1, 2, 3, 4],
        &[f64::NAN, stale_nan(), 2.0, -f64::NAN],
    );
    assert_eq!(left_out, 2);
    let (series, _) = read_all(&out).unwrap();
    let got = &series[&labels];
    assert_eq!(got.len(), 2);
    assert!(is_stale_nan(got[0].v));
    assert_eq!(got[1], Sample::new(3, 2.0));
    // Nothing but NaNs: no block at all.
    let mut out = Vec::new();
    write_header(&mut out, 0, 10);
    write_series(&mut out, &labels, &[1], &[f64::NAN]);
    assert_eq!(out.len(), 16);
}

#[test]
fn cut_streams_are_errors_never_panics() {
    for cut in 0..VM_NATIVE.len() {
        let result = read_all(&VM_NATIVE[..cut]);
        // A cut exactly between blocks reads as a shorter stream.
        if let Ok((series, _)) = result {
            assert!(series.values().map(Vec::len).sum::<usize>() < 40_000);
        }
    }
    assert!(matches!(read_all(&VM_NATIVE[..10]), Err(NativeError::Corrupt(_))));
}

#[test]
fn oversized_frames_are_refused_before_reading_them() {
    let mut stream = Vec::new();
    write_header(&mut stream, 0, 1);
    stream.extend_from_slice(&(2u32 << 20).to_be_bytes());
    let err = read_all(&stream).unwrap_err().to_string();
    assert!(err.contains("over the limit"), "{err}");
}

#[test]
fn bad_block_headers_are_errors() {
    let labels = Labels::from_pairs([("__name__", "m")]);
    let mut good = Vec::new();
    write_header(&mut good, 0, 10);
    write_series(&mut good, &labels, &[1, 2, 4], &[1.0, 2.0, 3.0]);
    // The block starts after the header, the name's size and name, and the
    // block's size: flip each byte of the block in turn.
    let block_at = 16 + 4 + 2 + 4;
    for i in block_at..good.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[i] ^= flip;
            // Either an error or some samples: never a panic.
            let _ = read_all(&bad);
        }
    }
    let mut zero_rows = good.clone();
    zero_rows[block_at + 3] = 0;
    assert!(read_all(&zero_rows).is_err());
}

fn decimal_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        (-1_000_000_000i64..1_000_000_000, 0i32..6).prop_map(|(m, e)| m as f64 / 10f64.powi(e)),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(stale_nan()),
        Just(0.0),
    ]
}

proptest! {
    /// Short decimals, the values metrics carry, come back bit for bit.
    #[test]
    fn decimal_series_round_trip(
        series in proptest::collection::btree_map(
            "[a-z]{1,6}",
            (0i64..1_000_000, proptest::collection::vec((1i64..100_000, decimal_value()), 1..300)),
            1..5,
        )
    ) {
        let series: Series = series
            .into_iter()
            .map(|(name, (start, points))| {
                let mut t = start;
                let samples = points.into_iter().map(|(dt, v)| { t += dt; Sample::new(t, v) }).collect();
                (Labels::from_pairs([("__name__", name.as_str())]), samples)
            })
            .collect();
        let (back, _) = read_all(&write_all(&series, 0, i64::MAX)).unwrap();
        for (labels, samples) in &series {
            let got = &back[labels];
            prop_assert_eq!(got.len(), samples.len());
            for (g, s) in got.iter().zip(samples) {
                prop_assert_eq!(g.t, s.t);
                prop_assert!(g.v.to_bits() == s.v.to_bits() || (g.v - s.v).abs() <= s.v.abs() * 1e-12, "{} became {}", s.v, g.v);
            }
        }
    }

    #[test]
    fn any_bytes_read_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut stream = Vec::new();
        write_header(&mut stream, 0, i64::MAX);
        stream.extend_from_slice(&bytes);
        let _ = read_all(&stream);
    }
}
