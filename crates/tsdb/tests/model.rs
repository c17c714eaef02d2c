//! Model-based test: random sequences of writes, flushes, merges, deletes and
//! reopens against the TSDB and against `MemStorage`, the reference
//! implementation; every read must agree, and so must the newest sample a
//! select that asks only for it returns.

use cairn_model::{Labels, Matcher, Sample};
use cairn_storage::conformance::read;
use cairn_storage::{Admin, Appendable, MemStorage, Queryable, SelectHints};
use cairn_tsdb::{Config, Tsdb};
use proptest::prelude::*;

const HOUR: i64 = 3_600_000;

#[derive(Debug, Clone)]
enum Op {
    /// (series, offset in 15 s steps, value)
    Append(Vec<(u8, u16, i16)>),
    Flush,
    Maintain,
    Compact,
    Delete {
        series: u8,
        from: u16,
        to: u16,
    },
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => proptest::collection::vec((0u8..6, 0u16..8000, any::<i16>()), 1..40).prop_map(Op::Append),
        1 => Just(Op::Flush),
        1 => Just(Op::Maintain),
        1 => Just(Op::Compact),
        1 => (0u8..6, 0u16..8000, 0u16..8000).prop_map(|(series, a, b)| Op::Delete { series, from: a.min(b), to: a.max(b) }),
        1 => Just(Op::Reopen),
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

fn everything(s: &dyn Queryable) -> Vec<(Labels, Vec<Sample>)> {
    read(s, &[Matcher::equal("__name__", "m")], i64::MIN / 2, i64::MAX / 2)
}

/// Each series' newest sample in `[maxt - 6 h, maxt]`, from a select with
/// `newest_only` (only the last sample it returns counts).
fn newest(s: &dyn Queryable, maxt: i64) -> Vec<(Labels, Sample)> {
    let hints = SelectHints {
        newest_only: true,
        ..SelectHints::default()
    };
    let q = s.querier(maxt - 6 * HOUR, maxt).unwrap();
    q.select(&hints, &[Matcher::equal("__name__", "m")])
        .unwrap()
        .map(|series| {
            let mut series = series.unwrap();
            let (mut ts, mut vs) = (Vec::new(), Vec::new());
            let range = series.samples.read_into(&mut ts, &mut vs).unwrap();
            let last = range.end - 1;
            (series.labels, Sample::new(ts[last], vs[last]))
        })
        .collect()
}

fn newest_of_all(everything: Vec<(Labels, Vec<Sample>)>, maxt: i64) -> Vec<(Labels, Sample)> {
    everything
        .into_iter()
        .filter_map(|(labels, samples)| {
            let last = samples.into_iter().rfind(|s| s.t <= maxt && s.t >= maxt - 6 * HOUR)?;
            Some((labels, last))
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
                    for (s, step, v) in points {
                        let sample = [Sample::new(t(step), f64::from(v))];
                        a.append(&labels(s), &sample).unwrap();
                        b.append(&labels(s), &sample).unwrap();
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
            }
            let d = db.as_ref().unwrap();
            prop_assert_eq!(everything(d), everything(&model));
            for step in [500, 2000, 4000, 6000, 7999] {
                prop_assert_eq!(newest(d, t(step)), newest_of_all(everything(&model), t(step)), "at step {}", step);
            }
        }
    }
}
