//! Model-based test: random sequences of writes (floats and native
//! histograms), flushes, merges, deletes, reopens and crashes against the
//! TSDB and against `MemStorage`, the reference implementation; every read
//! must agree, and so must the newest sample a select that asks only for it
//! returns.

use std::sync::Arc;

use cairn_model::{Histogram, HistogramSample, Labels, Matcher, Sample};
use cairn_storage::conformance::read;
use cairn_storage::{Admin, Appendable, MemStorage, Queryable, SelectHints, collect_samples};
use cairn_tsdb::{Config, Tsdb};
use proptest::prelude::*;

const HOUR: i64 = 3_600_000;

#[derive(Debug, Clone)]
enum Op {
    /// (series, offset in 15 s steps, value, as a histogram)
    Append(Vec<(u8, u16, i16, bool)>),
    Flush,
    Maintain,
    Compact,
    Delete {
        series: u8,
        from: u16,
        to: u16,
    },
    Reopen,
    /// The process dies: nothing flushed or closed.
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => proptest::collection::vec((0u8..6, 0u16..8000, any::<i16>(), proptest::bool::weighted(0.3)), 1..40).prop_map(Op::Append),
        1 => Just(Op::Flush),
        1 => Just(Op::Maintain),
        1 => Just(Op::Compact),
        1 => (0u8..6, 0u16..8000, 0u16..8000).prop_map(|(series, a, b)| Op::Delete { series, from: a.min(b), to: a.max(b) }),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
    ]
}

fn labels(series: u8) -> Labels {
    Labels::from_pairs([("__name__", "m"), ("s", &series.to_string())])
}

fn config(dir: &std::path::Path) -> Config {
    let mut c = Config::new(dir);
    c.background = false;
    c.max_rows_per_buffer = 50;
    c.seal_rows_per_series = 0;
    c
}

/// A histogram standing for the value `v`.
fn histogram(v: i16) -> Histogram {
    let c = f64::from(v.unsigned_abs());
    Histogram {
        schema: i32::from(v.rem_euclid(9)) - 4,
        count: 2.0 * c,
        sum: f64::from(v) * 0.5,
        zero_count: c,
        positive: vec![(i32::from(v % 7), c)],
        ..Histogram::default()
    }
}

fn everything(s: &dyn Queryable) -> Vec<(Labels, Vec<Sample>)> {
    read(s, &[Matcher::equal("__name__", "m")], i64::MIN / 2, i64::MAX / 2)
}

fn all_histograms(s: &dyn Queryable) -> Vec<(Labels, Vec<HistogramSample>)> {
    let q = s.querier(i64::MIN / 2, i64::MAX / 2).unwrap();
    q.select(&SelectHints::default(), &[Matcher::equal("__name__", "m")])
        .unwrap()
        .map(|series| {
            let series = series.unwrap();
            (series.labels, series.histograms)
        })
        .collect()
}

/// A sample of either kind: a float's bits or a histogram.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Float(u64),
    Histogram(Arc<Histogram>),
}

/// Each series' newest sample in `[maxt - 6 h, maxt]`, from a select with
/// `newest_only` (only the last sample of either kind it returns counts).
fn newest(s: &dyn Queryable, maxt: i64, newest_only: bool) -> Vec<(Labels, i64, Value)> {
    let hints = SelectHints {
        newest_only,
        ..SelectHints::default()
    };
    let q = s.querier(maxt - 6 * HOUR, maxt).unwrap();
    q.select(&hints, &[Matcher::equal("__name__", "m")])
        .unwrap()
        .map(|series| {
            let mut series = series.unwrap();
            let floats = collect_samples(series.samples.as_mut()).unwrap();
            let float = floats.last().map(|s| (s.t, Value::Float(s.v.to_bits())));
            let hist = series.histograms.last().map(|h| (h.t, Value::Histogram(h.h.clone())));
            let (t, v) = match (float, hist) {
                (Some(f), Some(h)) => {
                    if f.0 > h.0 {
                        f
                    } else {
                        h
                    }
                }
                (f, h) => f.or(h).expect("a selected series has a sample"),
            };
            (series.labels, t, v)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn tsdb_agrees_with_reference_model(ops in proptest::collection::vec(op(), 1..25)) {
        let dir = tempfile::tempdir().unwrap();
        // 8000 steps of 15 s span ~33 h: data lands in two or three day partitions.
        let base = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64 - 40 * HOUR;
        let t = |step: u16| base + i64::from(step) * 15_000;
        let model = MemStorage::new();
        let mut db = Some(Tsdb::open(config(dir.path())).unwrap());
        for op in ops {
            let d = db.as_ref().unwrap();
            match op {
                Op::Append(points) => {
                    let (mut a, mut b) = (d.appender(), model.appender());
                    for (s, step, v, as_histogram) in points {
                        if as_histogram {
                            let sample = [HistogramSample::new(t(step), histogram(v))];
                            a.append_histograms(&labels(s), &sample).unwrap();
                            b.append_histograms(&labels(s), &sample).unwrap();
                        } else {
                            let sample = [Sample::new(t(step), f64::from(v))];
                            a.append(&labels(s), &sample).unwrap();
                            b.append(&labels(s), &sample).unwrap();
                        }
                    }
                    a.commit().unwrap();
                    b.commit().unwrap();
                }
                Op::Flush => d.flush().unwrap(),
                Op::Maintain => d.maintain().unwrap(),
                Op::Compact => d.compact().unwrap(),
                Op::Delete { series, from, to } => {
                    let m = [Matcher::equal("s", series.to_string())];
                    d.delete_series(&m, t(from), t(to)).unwrap();
                    model.delete_series(&m, t(from), t(to)).unwrap();
                }
                Op::Reopen => {
                    drop(db.take());
                    db = Some(Tsdb::open(config(dir.path())).unwrap());
                }
                Op::Crash => {
                    std::mem::forget(db.take());
                    // A dead process holds no lock.
                    std::fs::remove_file(dir.path().join("LOCK")).ok();
                    db = Some(Tsdb::open(config(dir.path())).unwrap());
                }
            }
            let d = db.as_ref().unwrap();
            prop_assert_eq!(everything(d), everything(&model));
            prop_assert_eq!(all_histograms(d), all_histograms(&model));
            for step in [500, 2000, 4000, 6000, 7999] {
                prop_assert_eq!(newest(d, t(step), true), newest(&model, t(step), false), "at step {}", step);
            }
        }
    }
}
