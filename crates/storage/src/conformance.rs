//! The behaviour every storage implementation must show.
//!
//! Call [`run_all`] from an implementation's tests with a factory for a fresh,
//! empty instance. Each case panics with its name on failure.

use std::sync::Arc;

use cairn_model::{EncodedLabels, Labels, MatchOp, Matcher, Sample, WireLabels, stale_nan};

use crate::{Admin, Appendable, CardinalityQuery, Queryable, SelectHints, ShardBy, collect_samples};

mod histograms;

/// Everything the suite needs.
pub trait Storage: Queryable + Appendable + Admin {}
impl<T: Queryable + Appendable + Admin> Storage for T {}

type Case<S> = (&'static str, fn(&S));

/// Runs every case, each on a fresh instance from `make`.
pub fn run_all<S: Storage>(make: impl Fn() -> S) {
    run_all_but(make, &[]);
}

/// [`run_all`] without the cases named in `left_out`: properties an
/// implementation documents it does not have.
pub fn run_all_but<S: Storage>(make: impl Fn() -> S, left_out: &[&str]) {
    let cases: &[Case<S>] = &[
        ("append_then_read_back", append_then_read_back),
        ("series_sorted_by_labels", series_sorted_by_labels),
        ("matchers_all_ops", matchers_all_ops),
        ("range_bounds_inclusive", range_bounds_inclusive),
        ("backfill_out_of_order", backfill_out_of_order),
        (
            "duplicate_timestamp_last_write_wins",
            duplicate_timestamp_last_write_wins,
        ),
        ("special_values_bit_exact", special_values_bit_exact),
        ("one_commit_many_appends", one_commit_many_appends),
        ("rollback_discards", rollback_discards),
        ("invisible_until_commit", invisible_until_commit),
        ("empty_label_set_rejected", empty_label_set_rejected),
        ("append_encoded_is_append", append_encoded_is_append),
        ("append_wire_is_append", append_wire_is_append),
        ("label_names_and_values", label_names_and_values),
        ("delete_whole_series", delete_whole_series),
        ("delete_time_range", delete_time_range),
        ("select_limit", select_limit),
        ("select_shards_partition_series", select_shards_partition_series),
        ("querier_is_a_snapshot", querier_is_a_snapshot),
        ("tsdb_status_counts", tsdb_status_counts),
    ];
    let histogram_cases = histograms::cases::<S>();
    for (name, case) in cases.iter().chain(&histogram_cases) {
        if left_out.contains(name) {
            continue;
        }
        let storage = make();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(&storage)));
        if let Err(e) = result {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("storage conformance case {name} failed: {msg}");
        }
    }
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    Labels::from_pairs(pairs.iter().copied())
}

fn samples(points: &[(i64, f64)]) -> Vec<Sample> {
    points.iter().map(|&(t, v)| Sample::new(t, v)).collect()
}

fn write(s: &dyn Appendable, series: &[(Labels, Vec<Sample>)]) {
    let mut app = s.appender();
    for (l, ss) in series {
        app.append(l, ss).expect("append");
    }
    app.commit().expect("commit");
}

fn eq(name: &str, value: &str) -> Matcher {
    Matcher::equal(name, value)
}

fn m(op: MatchOp, name: &str, value: &str) -> Matcher {
    Matcher::new(op, name, value).expect("valid matcher")
}

/// All series matching `matchers` in `[mint, maxt]` with their samples.
/// Every series of a select with its samples, read block by block; checks
/// that [`crate::SampleBlocks::read_into`] reads the same.
pub fn read(s: &dyn Queryable, matchers: &[Matcher], mint: i64, maxt: i64) -> Vec<(Labels, Vec<Sample>)> {
    let q = s.querier(mint, maxt).expect("querier");
    let by_blocks: Vec<(Labels, Vec<Sample>)> = q
        .select(&SelectHints::default(), matchers)
        .expect("select")
        .map(|series| {
            let mut series = series.expect("series");
            (
                series.labels,
                collect_samples(series.samples.as_mut()).expect("samples"),
            )
        })
        .collect();
    let (mut ts, mut vs) = (vec![7], vec![7.0]);
    let at_once: Vec<(Labels, Vec<Sample>)> = q
        .select(&SelectHints::default(), matchers)
        .expect("select")
        .map(|series| {
            let mut series = series.expect("series");
            let r = series.samples.read_into(&mut ts, &mut vs).expect("samples");
            let samples = ts[r.clone()]
                .iter()
                .zip(&vs[r])
                .map(|(&t, &v)| Sample::new(t, v))
                .collect();
            (series.labels, samples)
        })
        .collect();
    // Bit patterns: NaN payloads and stale markers must match too.
    let bits = |all: &[(Labels, Vec<Sample>)]| -> Vec<(Labels, Vec<(i64, u64)>)> {
        all.iter()
            .map(|(l, s)| (l.clone(), s.iter().map(|x| (x.t, x.v.to_bits())).collect()))
            .collect()
    };
    assert_eq!(bits(&at_once), bits(&by_blocks), "read_into differs from next_block");
    by_blocks
}

fn append_then_read_back(s: &impl Storage) {
    let a = labels(&[("__name__", "up"), ("job", "a")]);
    write(s, &[(a.clone(), samples(&[(1000, 1.0), (2000, 2.0), (3000, 3.0)]))]);
    let got = read(s, &[eq("__name__", "up")], 0, 10_000);
    assert_eq!(got, vec![(a, samples(&[(1000, 1.0), (2000, 2.0), (3000, 3.0)]))]);
}

fn series_sorted_by_labels(s: &impl Storage) {
    let names = ["c", "a", "b", "aa"];
    let series: Vec<_> = names
        .iter()
        .map(|n| (labels(&[("__name__", "m"), ("x", n)]), samples(&[(1, 1.0)])))
        .collect();
    write(s, &series);
    let got: Vec<String> = read(s, &[eq("__name__", "m")], 0, 10)
        .into_iter()
        .map(|(l, _)| l.get("x").unwrap_or_default().to_string())
        .collect();
    assert_eq!(got, vec!["a", "aa", "b", "c"]);
}

fn matchers_all_ops(s: &impl Storage) {
    write(
        s,
        &[
            (
                labels(&[("__name__", "m"), ("env", "prod"), ("dc", "1")]),
                samples(&[(1, 1.0)]),
            ),
            (labels(&[("__name__", "m"), ("env", "dev")]), samples(&[(1, 2.0)])),
            (labels(&[("__name__", "m")]), samples(&[(1, 3.0)])),
            (labels(&[("__name__", "other"), ("env", "prod")]), samples(&[(1, 4.0)])),
        ],
    );
    let count = |ms: &[Matcher]| read(s, ms, 0, 10).len();
    let name = eq("__name__", "m");
    assert_eq!(count(&[name.clone(), eq("env", "prod")]), 1);
    assert_eq!(
        count(&[name.clone(), m(MatchOp::NotEqual, "env", "prod")]),
        2,
        "!= includes missing label"
    );
    assert_eq!(
        count(&[name.clone(), eq("env", "")]),
        1,
        "=\"\" selects series without the label"
    );
    assert_eq!(count(&[name.clone(), m(MatchOp::NotEqual, "env", "")]), 2);
    assert_eq!(count(&[name.clone(), m(MatchOp::RegexMatch, "env", "pr.*")]), 1);
    assert_eq!(count(&[name.clone(), m(MatchOp::RegexMatch, "env", "prod|dev")]), 2);
    assert_eq!(
        count(&[name.clone(), m(MatchOp::RegexMatch, "env", "rod")]),
        0,
        "regex is anchored"
    );
    assert_eq!(count(&[name.clone(), m(MatchOp::RegexNoMatch, "env", "prod")]), 2);
    assert_eq!(count(&[name.clone(), m(MatchOp::RegexMatch, "dc", ".*")]), 3);
    assert_eq!(count(&[m(MatchOp::RegexMatch, "__name__", ".+"), eq("env", "prod")]), 2);
    assert_eq!(count(&[eq("__name__", "nope")]), 0);
}

fn range_bounds_inclusive(s: &impl Storage) {
    let a = labels(&[("__name__", "r")]);
    write(
        s,
        &[(a.clone(), samples(&[(10, 1.0), (20, 2.0), (30, 3.0), (40, 4.0)]))],
    );
    assert_eq!(
        read(s, &[eq("__name__", "r")], 20, 30),
        vec![(a, samples(&[(20, 2.0), (30, 3.0)]))]
    );
    assert!(
        read(s, &[eq("__name__", "r")], 41, 100).is_empty(),
        "no series without samples in range"
    );
}

fn backfill_out_of_order(s: &impl Storage) {
    let a = labels(&[("__name__", "b")]);
    write(s, &[(a.clone(), samples(&[(5000, 5.0), (6000, 6.0)]))]);
    write(s, &[(a.clone(), samples(&[(3000, 3.0), (1000, 1.0)]))]);
    write(s, &[(a.clone(), samples(&[(5500, 5.5)]))]);
    let got = read(s, &[eq("__name__", "b")], 0, 10_000);
    assert_eq!(
        got,
        vec![(
            a,
            samples(&[(1000, 1.0), (3000, 3.0), (5000, 5.0), (5500, 5.5), (6000, 6.0)])
        )]
    );
}

fn duplicate_timestamp_last_write_wins(s: &impl Storage) {
    let a = labels(&[("__name__", "d")]);
    write(s, &[(a.clone(), samples(&[(1000, 1.0), (2000, 2.0)]))]);
    write(s, &[(a.clone(), samples(&[(1000, 10.0)]))]);
    let got = read(s, &[eq("__name__", "d")], 0, 10_000);
    assert_eq!(got, vec![(a, samples(&[(1000, 10.0), (2000, 2.0)]))]);
}

/// One commit appending a series twice, around another series, with samples
/// that cross a UTC day boundary and come back, and a timestamp repeated
/// within the commit (the later append wins).
fn one_commit_many_appends(s: &impl Storage) {
    const DAY: i64 = 86_400_000;
    let a = labels(&[("__name__", "many"), ("s", "a")]);
    let b = labels(&[("__name__", "many"), ("s", "b")]);
    write(
        s,
        &[
            (
                a.clone(),
                samples(&[(DAY - 1000, 1.0), (DAY + 1000, 2.0), (DAY - 500, 3.0)]),
            ),
            (b.clone(), samples(&[(DAY, 4.0)])),
            (a.clone(), samples(&[(DAY + 1000, 5.0), (DAY + 2000, 6.0)])),
        ],
    );
    let got = read(s, &[eq("__name__", "many")], 0, 2 * DAY);
    assert_eq!(
        got,
        vec![
            (
                a,
                samples(&[
                    (DAY - 1000, 1.0),
                    (DAY - 500, 3.0),
                    (DAY + 1000, 5.0),
                    (DAY + 2000, 6.0)
                ])
            ),
            (b, samples(&[(DAY, 4.0)])),
        ]
    );
}

fn special_values_bit_exact(s: &impl Storage) {
    let a = labels(&[("__name__", "special")]);
    let nan_payload = f64::from_bits(0x7ff8_0000_dead_beef);
    let input = samples(&[
        (1, stale_nan()),
        (2, f64::NAN),
        (3, f64::INFINITY),
        (4, f64::NEG_INFINITY),
        (5, -0.0),
        (6, nan_payload),
        (7, f64::MIN_POSITIVE / 2.0),
        (8, f64::MAX),
    ]);
    write(s, &[(a.clone(), input.clone())]);
    assert_eq!(read(s, &[eq("__name__", "special")], 0, 10), vec![(a, input)]);
}

fn rollback_discards(s: &impl Storage) {
    let mut app = s.appender();
    app.append(&labels(&[("__name__", "rb")]), &samples(&[(1, 1.0)]))
        .expect("append");
    app.rollback();
    assert!(read(s, &[eq("__name__", "rb")], 0, 10).is_empty());
}

fn invisible_until_commit(s: &impl Storage) {
    let mut app = s.appender();
    app.append(&labels(&[("__name__", "late")]), &samples(&[(1, 1.0)]))
        .expect("append");
    assert!(read(s, &[eq("__name__", "late")], 0, 10).is_empty());
    app.commit().expect("commit");
    assert_eq!(read(s, &[eq("__name__", "late")], 0, 10).len(), 1);
}

fn empty_label_set_rejected(s: &impl Storage) {
    let mut app = s.appender();
    assert!(app.append(&Labels::empty(), &samples(&[(1, 1.0)])).is_err());
}

/// The encoded form names the same series as `append` with decoded
/// labels; the encoded empty set is refused, not stored.
fn append_encoded_is_append(s: &impl Storage) {
    let l = labels(&[("__name__", "enc"), ("job", "a")]);
    let mut encoded = Vec::new();
    l.encode(&mut encoded);
    let mut app = s.appender();
    let enc = EncodedLabels::new(&encoded).expect("canonical encoding");
    app.append_encoded(enc, &samples(&[(1, 1.0)])).expect("append_encoded");
    app.append(&l, &samples(&[(2, 2.0)])).expect("append");
    app.commit().expect("commit");
    assert_eq!(
        read(s, &[eq("__name__", "enc")], 0, 10),
        vec![(l, samples(&[(1, 1.0), (2, 2.0)]))]
    );
    let mut empty = Vec::new();
    Labels::empty().encode(&mut empty);
    let mut app = s.appender();
    let empty = EncodedLabels::new(&empty).expect("the empty set's encoding");
    assert!(app.append_encoded(empty, &samples(&[(3, 3.0)])).is_err());
    drop(app);
    assert_eq!(read(s, &[eq("job", "a")], 0, 10)[0].1.len(), 2);
}

/// Remote write's form names the same series as `append` with decoded
/// labels; its empty set is refused, not stored.
fn append_wire_is_append(s: &impl Storage) {
    let l = labels(&[("__name__", "wire"), ("job", "a")]);
    let mut bytes = Vec::new();
    let mut app = s.appender();
    app.append_wire(WireLabels::of_labels(&l, &mut bytes), &samples(&[(1, 1.0)]))
        .expect("append_wire");
    app.append(&l, &samples(&[(2, 2.0)])).expect("append");
    app.commit().expect("commit");
    assert_eq!(
        read(s, &[eq("__name__", "wire")], 0, 10),
        vec![(l, samples(&[(1, 1.0), (2, 2.0)]))]
    );
    let mut app = s.appender();
    let empty = WireLabels::new(&[]).expect("the empty set");
    assert!(app.append_wire(empty, &samples(&[(3, 3.0)])).is_err());
}

const DAY_MS: i64 = 86_400_000;

fn label_names_and_values(s: &impl Storage) {
    write(
        s,
        &[
            (
                labels(&[("__name__", "m1"), ("a", "1"), ("b", "x")]),
                samples(&[(1, 1.0)]),
            ),
            (
                labels(&[("__name__", "m2"), ("a", "2"), ("c", "y")]),
                samples(&[(1, 1.0)]),
            ),
            (
                labels(&[("__name__", "m3"), ("a", "3")]),
                samples(&[(10 * DAY_MS, 1.0)]),
            ),
        ],
    );
    let q = s.querier(0, 10).expect("querier");
    assert_eq!(
        q.label_names(&[], None).expect("names"),
        vec!["__name__", "a", "b", "c"]
    );
    assert_eq!(
        q.label_names(&[eq("__name__", "m1")], None).expect("names"),
        vec!["__name__", "a", "b"]
    );
    assert_eq!(
        q.label_values("a", &[], None).expect("values"),
        vec!["1", "2"],
        "m3 is outside the range"
    );
    assert_eq!(q.label_values("a", &[], Some(1)).expect("values"), vec!["1"]);
    assert_eq!(
        q.label_values("__name__", &[eq("c", "y")], None).expect("values"),
        vec!["m2"]
    );
    assert!(q.label_values("missing", &[], None).expect("values").is_empty());
}

fn delete_whole_series(s: &impl Storage) {
    write(
        s,
        &[
            (
                labels(&[("__name__", "del"), ("k", "1")]),
                samples(&[(1, 1.0), (2, 2.0)]),
            ),
            (labels(&[("__name__", "del"), ("k", "2")]), samples(&[(1, 1.0)])),
        ],
    );
    s.delete_series(&[eq("k", "1")], i64::MIN, i64::MAX).expect("delete");
    let got = read(s, &[eq("__name__", "del")], 0, 10);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0.get("k"), Some("2"));
    let q = s.querier(0, 10).expect("querier");
    assert_eq!(q.label_values("k", &[], None).expect("values"), vec!["2"]);
    // Writing the series again after a delete brings it back with only new samples.
    write(s, &[(labels(&[("__name__", "del"), ("k", "1")]), samples(&[(3, 3.0)]))]);
    assert_eq!(read(s, &[eq("k", "1")], 0, 10)[0].1, samples(&[(3, 3.0)]));
}

fn delete_time_range(s: &impl Storage) {
    let a = labels(&[("__name__", "part")]);
    write(s, &[(a.clone(), samples(&[(1, 1.0), (2, 2.0), (3, 3.0), (4, 4.0)]))]);
    s.delete_series(&[eq("__name__", "part")], 2, 3).expect("delete");
    assert_eq!(
        read(s, &[eq("__name__", "part")], 0, 10),
        vec![(a, samples(&[(1, 1.0), (4, 4.0)]))]
    );
}

fn select_limit(s: &impl Storage) {
    let series: Vec<_> = (0..10)
        .map(|i| {
            (
                labels(&[("__name__", "lim"), ("i", &i.to_string())]),
                samples(&[(1, 1.0)]),
            )
        })
        .collect();
    write(s, &series);
    let q = s.querier(0, 10).expect("querier");
    let hints = SelectHints {
        limit: Some(3),
        labels_only: true,
        ..SelectHints::default()
    };
    assert_eq!(q.select(&hints, &[eq("__name__", "lim")]).expect("select").count(), 3);
}

fn select_shards_partition_series(s: &impl Storage) {
    let series: Vec<_> = (0..40)
        .map(|i| {
            let (n, g, h) = (i.to_string(), (i % 5).to_string(), (i % 3).to_string());
            let mut pairs = vec![("__name__", "sh"), ("i", &*n), ("g", &g), ("h", &h)];
            if i % 2 == 1 {
                // A second metric: `without` groups ignore the name.
                pairs[0].1 = "sh2";
            }
            (labels(&pairs), samples(&[(1, f64::from(i)), (2, 2.0)]))
        })
        .collect();
    write(s, &series);
    let q = s.querier(0, 10).expect("querier");
    let matchers = [m(MatchOp::RegexMatch, "__name__", "sh2?")];
    let whole: Vec<(Labels, Vec<Sample>)> = read(s, &matchers, 0, 10);
    assert_eq!(whole.len(), 40);
    // The labels a group is known by, as an aggregation forms it.
    let group = |l: &Labels, by: &Option<Arc<ShardBy>>| -> Vec<(String, String)> {
        l.iter()
            .filter(|x| match by.as_deref() {
                None => true,
                Some(ShardBy::Labels(names)) => names.contains(&x.name.to_string()),
                Some(ShardBy::AllBut(names)) => x.name != "__name__" && !names.contains(&x.name.to_string()),
            })
            .map(|x| (x.name.to_string(), x.value.to_string()))
            .collect()
    };
    let placings = [
        None,
        Some(Arc::new(ShardBy::Labels(vec!["g".into()]))),
        Some(Arc::new(ShardBy::Labels(vec!["g".into(), "h".into(), "absent".into()]))),
        Some(Arc::new(ShardBy::AllBut(vec!["i".into()]))),
    ];
    for by in placings {
        for count in [1, 2, 3] {
            let mut union = Vec::new();
            let mut shard_of_group = std::collections::HashMap::new();
            for index in 0..count {
                let hints = SelectHints {
                    shard: Some(crate::Shard {
                        index,
                        count,
                        by: by.clone(),
                    }),
                    ..SelectHints::default()
                };
                let mut last: Option<Labels> = None;
                for x in q.select(&hints, &matchers).expect("select") {
                    let mut x = x.expect("series");
                    assert!(last.as_ref().is_none_or(|l| *l < x.labels), "shard not sorted");
                    last = Some(x.labels.clone());
                    if by.is_some() {
                        let first = *shard_of_group.entry(group(&x.labels, &by)).or_insert(index);
                        assert_eq!(first, index, "{by:?}: a group split between shards");
                    }
                    let got = crate::collect_samples(x.samples.as_mut()).expect("samples");
                    union.push((x.labels, got));
                }
            }
            union.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(union, whole, "{by:?}: shards of {count} must partition the select");
        }
    }
}

fn querier_is_a_snapshot(s: &impl Storage) {
    let a = labels(&[("__name__", "snap")]);
    write(s, &[(a.clone(), samples(&[(1, 1.0)]))]);
    let q = s.querier(0, 10).expect("querier");
    write(s, &[(a.clone(), samples(&[(2, 2.0)]))]);
    let mut set = q
        .select(&SelectHints::default(), &[eq("__name__", "snap")])
        .expect("select");
    let mut series = set.next().expect("one series").expect("ok");
    assert_eq!(
        collect_samples(series.samples.as_mut()).expect("samples"),
        samples(&[(1, 1.0)])
    );
}

fn tsdb_status_counts(s: &impl Storage) {
    write(
        s,
        &[
            (labels(&[("__name__", "a"), ("job", "x")]), samples(&[(1, 1.0)])),
            (labels(&[("__name__", "a"), ("job", "y")]), samples(&[(1, 1.0)])),
            (labels(&[("__name__", "b"), ("job", "x")]), samples(&[(1, 1.0)])),
        ],
    );
    let st = s.tsdb_status(&CardinalityQuery::all(0, 10, 10)).expect("status");
    assert_eq!(st.num_series, 3);
    assert_eq!(
        st.series_count_by_metric_name,
        vec![("a".to_string(), 2), ("b".to_string(), 1)]
    );
    assert_eq!(
        st.label_value_count_by_label_name,
        vec![("__name__".to_string(), 2), ("job".to_string(), 2)]
    );
    assert_eq!(
        st.series_count_by_label_value_pair[..2],
        [("__name__=a".to_string(), 2), ("job=x".to_string(), 2)]
    );
    assert_eq!(
        st.series_count_by_label_name,
        vec![("__name__".to_string(), 3), ("job".to_string(), 3)]
    );
    assert!(st.series_count_by_focus_label_value.is_empty());

    // A selector (one of several matching) and a focus label.
    let query = CardinalityQuery {
        selectors: vec![
            vec![Matcher::new(MatchOp::Equal, "job", "x").unwrap()],
            vec![Matcher::new(MatchOp::Equal, "job", "none").unwrap()],
        ],
        focus_label: Some("__name__".to_string()),
        ..CardinalityQuery::all(0, 10, 10)
    };
    let st = s.tsdb_status(&query).expect("status");
    assert_eq!(st.num_series, 2);
    assert_eq!(
        st.series_count_by_focus_label_value,
        vec![("a".to_string(), 1), ("b".to_string(), 1)]
    );
    assert_eq!(st.series_count_by_label_value_pair[0], ("job=x".to_string(), 2));
}

#[cfg(test)]
mod tests {
    #[test]
    fn mem_storage_passes_conformance() {
        super::run_all(crate::MemStorage::new);
    }
}
