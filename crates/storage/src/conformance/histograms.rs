//! Conformance cases for native histogram samples.

use std::sync::Arc;

use cairn_model::histogram::{CUSTOM_BUCKETS_SCHEMA, ResetHint};
use cairn_model::{Histogram, HistogramSample, Labels, Matcher, Sample};

use super::{Case, Storage, eq, labels, samples, write};
use crate::{Appendable, Queryable, SelectHints, collect_samples};

pub(super) fn cases<S: Storage>() -> Vec<Case<S>> {
    vec![
        ("histograms_round_trip_every_schema", histograms_round_trip_every_schema),
        (
            "floats_and_histograms_share_a_series",
            floats_and_histograms_share_a_series,
        ),
        (
            "histogram_and_float_replace_each_other",
            histogram_and_float_replace_each_other,
        ),
        ("histograms_deleted_like_floats", histograms_deleted_like_floats),
        ("newest_only_sees_either_kind", newest_only_sees_either_kind),
        ("invalid_histograms_rejected", invalid_histograms_rejected),
    ]
}

/// A series as a select returns it: floats and histograms.
type Read = (Labels, Vec<Sample>, Vec<HistogramSample>);

fn read_with(s: &dyn Queryable, hints: &SelectHints, matchers: &[Matcher], mint: i64, maxt: i64) -> Vec<Read> {
    let q = s.querier(mint, maxt).expect("querier");
    q.select(hints, matchers)
        .expect("select")
        .map(|series| {
            let mut series = series.expect("series");
            let floats = collect_samples(series.samples.as_mut()).expect("samples");
            assert!(
                series.histograms.windows(2).all(|w| w[0].t < w[1].t),
                "histograms strictly increasing"
            );
            (series.labels, floats, series.histograms)
        })
        .collect()
}

fn read(s: &dyn Queryable, matchers: &[Matcher], mint: i64, maxt: i64) -> Vec<Read> {
    read_with(s, &SelectHints::default(), matchers, mint, maxt)
}

fn write_histograms(s: &dyn Appendable, series: &[(Labels, Vec<HistogramSample>)]) {
    let mut app = s.appender();
    for (l, hs) in series {
        app.append_histograms(l, hs).expect("append histograms");
    }
    let report = app.commit().expect("commit");
    let n: usize = series.iter().map(|(_, hs)| hs.len()).sum();
    assert_eq!(report.histograms_accepted, n as u64, "histograms accepted");
}

/// An exponential histogram of `schema` with a zero bucket and buckets on
/// both sides; `c` scales its counts.
fn exponential(schema: i32, c: f64) -> Histogram {
    Histogram {
        schema,
        reset_hint: ResetHint::NotReset,
        count: 10.0 * c,
        sum: 17.25 * c,
        zero_threshold: 0.001,
        zero_count: c,
        positive: vec![(-2, c), (0, 2.0 * c), (1, 3.0 * c), (7, c)],
        negative: vec![(-1, c), (3, c)],
        custom_bounds: None,
    }
}

fn custom(c: f64) -> Histogram {
    Histogram {
        schema: CUSTOM_BUCKETS_SCHEMA,
        count: 6.0 * c,
        sum: 4.5 * c,
        positive: vec![(0, c), (1, 2.0 * c), (3, 3.0 * c)],
        custom_bounds: Some(Arc::from(vec![0.1, 0.5, 1.0, 2.5])),
        ..Histogram::default()
    }
}

fn at(t: i64, h: Histogram) -> HistogramSample {
    HistogramSample::new(t, h)
}

fn histograms_round_trip_every_schema(s: &impl Storage) {
    let mut want = Vec::new();
    for schema in (-4..=8).chain([CUSTOM_BUCKETS_SCHEMA]) {
        let l = labels(&[("__name__", "h"), ("schema", &schema.to_string())]);
        let make = |c: f64| {
            if schema == CUSTOM_BUCKETS_SCHEMA {
                custom(c)
            } else {
                exponential(schema, c)
            }
        };
        let mut hs: Vec<_> = (1..=5).map(|i| at(i * 15_000, make(i as f64))).collect();
        // A float count and a layout change mid-series.
        hs[2].h = Arc::new(Histogram {
            count: hs[2].h.count + 0.5,
            positive: vec![(0, 1.5)],
            ..(*hs[2].h).clone()
        });
        want.push((l, hs));
    }
    write_histograms(s, &want);
    let mut got = read(s, &[eq("__name__", "h")], 0, 100_000);
    got.sort_by(|a, b| a.0.cmp(&b.0));
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got.len(), want.len());
    for ((l, floats, hs), (wl, whs)) in got.iter().zip(&want) {
        assert_eq!(l, wl);
        assert!(floats.is_empty(), "no floats in {l}");
        assert_eq!(hs, whs, "histograms of {l}");
    }
}

fn floats_and_histograms_share_a_series(s: &impl Storage) {
    let a = labels(&[("__name__", "mixed")]);
    let only = labels(&[("__name__", "mixed"), ("only", "histograms")]);
    write(s, &[(a.clone(), samples(&[(1000, 1.0), (3000, 3.0)]))]);
    write_histograms(
        s,
        &[
            (
                a.clone(),
                vec![at(2000, exponential(0, 1.0)), at(4000, exponential(0, 2.0))],
            ),
            (only.clone(), vec![at(2000, custom(1.0))]),
        ],
    );
    let got = read(s, &[eq("__name__", "mixed")], 0, 10_000);
    assert_eq!(
        got,
        vec![
            (
                a.clone(),
                samples(&[(1000, 1.0), (3000, 3.0)]),
                vec![at(2000, exponential(0, 1.0)), at(4000, exponential(0, 2.0))]
            ),
            (only.clone(), Vec::new(), vec![at(2000, custom(1.0))]),
        ]
    );
    // A range holding only the series' histograms still returns it; one
    // holding neither kind does not.
    let got = read(s, &[eq("__name__", "mixed")], 3500, 4500);
    assert_eq!(got, vec![(a, Vec::new(), vec![at(4000, exponential(0, 2.0))])]);
    assert!(read(s, &[eq("only", "histograms")], 2500, 9000).is_empty());
}

fn histogram_and_float_replace_each_other(s: &impl Storage) {
    let a = labels(&[("__name__", "replace")]);
    write(s, &[(a.clone(), samples(&[(1, 1.0), (2, 2.0)]))]);
    write_histograms(s, &[(a.clone(), vec![at(1, exponential(1, 1.0))])]);
    assert_eq!(
        read(s, &[eq("__name__", "replace")], 0, 10),
        vec![(a.clone(), samples(&[(2, 2.0)]), vec![at(1, exponential(1, 1.0))])]
    );
    // Back to a float, and in one commit a histogram then a float at 2: the last wins.
    write(s, &[(a.clone(), samples(&[(1, 5.0)]))]);
    let mut app = s.appender();
    app.append_histograms(&a, &[at(2, custom(2.0))]).expect("append");
    app.append(&a, &samples(&[(2, 6.0)])).expect("append");
    app.append_histograms(&a, &[at(3, custom(3.0))]).expect("append");
    app.append_histograms(&a, &[at(3, custom(4.0))]).expect("append");
    app.commit().expect("commit");
    assert_eq!(
        read(s, &[eq("__name__", "replace")], 0, 10),
        vec![(a, samples(&[(1, 5.0), (2, 6.0)]), vec![at(3, custom(4.0))])]
    );
}

fn histograms_deleted_like_floats(s: &impl Storage) {
    let a = labels(&[("__name__", "hdel"), ("k", "1")]);
    let b = labels(&[("__name__", "hdel"), ("k", "2")]);
    write(s, &[(a.clone(), samples(&[(1, 1.0)]))]);
    write_histograms(
        s,
        &[
            (a.clone(), (2..=5).map(|t| at(t, exponential(2, t as f64))).collect()),
            (b.clone(), vec![at(1, custom(1.0))]),
        ],
    );
    s.delete_series(&[eq("k", "1")], 3, 4).expect("delete");
    assert_eq!(
        read(s, &[eq("k", "1")], 0, 10),
        vec![(
            a.clone(),
            samples(&[(1, 1.0)]),
            vec![at(2, exponential(2, 2.0)), at(5, exponential(2, 5.0))]
        )]
    );
    s.delete_series(&[eq("k", "2")], i64::MIN, i64::MAX).expect("delete");
    assert!(read(s, &[eq("k", "2")], 0, 10).is_empty());
    // Written again after the delete: only the new sample.
    write_histograms(s, &[(b.clone(), vec![at(4, custom(4.0))])]);
    assert_eq!(
        read(s, &[eq("k", "2")], 0, 10),
        vec![(b, Vec::new(), vec![at(4, custom(4.0))])]
    );
}

fn newest_only_sees_either_kind(s: &impl Storage) {
    let a = labels(&[("__name__", "newest"), ("k", "a")]);
    let b = labels(&[("__name__", "newest"), ("k", "b")]);
    write(
        s,
        &[
            (a.clone(), samples(&[(1, 1.0)])),
            (b.clone(), samples(&[(1, 1.0), (3, 3.0)])),
        ],
    );
    write_histograms(
        s,
        &[
            (a.clone(), vec![at(2, exponential(3, 2.0))]),
            (b.clone(), vec![at(2, exponential(3, 2.0))]),
        ],
    );
    let hints = SelectHints {
        newest_only: true,
        ..SelectHints::default()
    };
    let newest = |got: Vec<Read>| -> Vec<(Labels, Option<i64>)> {
        got.into_iter()
            .map(|(l, floats, hs)| {
                let t = floats.iter().map(|s| s.t).chain(hs.iter().map(|h| h.t)).max();
                (l, t)
            })
            .collect()
    };
    let got = read_with(s, &hints, &[eq("__name__", "newest")], 0, 10);
    assert_eq!(newest(got.clone()), vec![(a.clone(), Some(2)), (b.clone(), Some(3))]);
    assert_eq!(got[0].2.last(), Some(&at(2, exponential(3, 2.0))));
    assert_eq!(got[1].1.last(), Some(&Sample::new(3, 3.0)));
    let got = read_with(s, &hints, &[eq("__name__", "newest")], 0, 2);
    assert_eq!(newest(got), vec![(a, Some(2)), (b, Some(2))]);
}

fn invalid_histograms_rejected(s: &impl Storage) {
    let a = labels(&[("__name__", "bad")]);
    let mut bad = exponential(0, 1.0);
    bad.schema = 9;
    let mut app = s.appender();
    assert!(app.append_histograms(&a, &[at(1, bad)]).is_err());
    let mut negative = custom(1.0);
    negative.negative = vec![(0, 1.0)];
    assert!(app.append_histograms(&a, &[at(1, negative)]).is_err());
}
