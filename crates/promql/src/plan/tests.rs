//! Plans chosen for representative queries: alert rules, dashboard panels,
//! subqueries, `@`, `topk` and `count_values`, under 1, 2 and 8 threads and
//! with small and large series bounds. The answers of every plan are
//! checked elsewhere (the upstream corpus, the differential test, and
//! `tests/parallel.rs`, which compares plans against each other bit for bit).

use cairn_model::Matcher;
use cairn_storage::{Querier, Queryable, SelectHints, SeriesSet, StorageError};

use super::*;
use crate::StepSplit as Policy;

const HOUR: i64 = 3_600_000;

/// A storage whose every selector may select `bound` series (and selects none).
struct Bound(usize);

impl Queryable for Bound {
    fn querier(&self, _: i64, _: i64) -> std::result::Result<Box<dyn Querier>, StorageError> {
        Ok(Box::new(BoundQuerier(self.0)))
    }
}

struct BoundQuerier(usize);

impl Querier for BoundQuerier {
    fn select(&self, _: &SelectHints, _: &[Matcher]) -> std::result::Result<SeriesSet, StorageError> {
        Ok(Box::new(std::iter::empty()))
    }
    fn series_upper_bound(&self, _: &[Matcher]) -> std::result::Result<usize, StorageError> {
        Ok(self.0)
    }
    fn label_names(&self, _: &[Matcher], _: Option<usize>) -> std::result::Result<Vec<String>, StorageError> {
        Ok(Vec::new())
    }
    fn label_values(&self, _: &str, _: &[Matcher], _: Option<usize>) -> std::result::Result<Vec<String>, StorageError> {
        Ok(Vec::new())
    }
}

fn limits(threads: usize) -> Limits {
    Limits {
        threads,
        lookback: 300_000,
        step_split: Policy::default(),
        fold_sharded_min_points: 1 << 21,
    }
}

fn plan(q: &str, bound: usize, threads: usize, c: Ctx) -> Plan {
    let root = lower(&crate::parse(q).unwrap(), super::QueryTimes::of(&c)).unwrap();
    decide(&Bound(bound), root, c, &limits(threads)).unwrap()
}

fn instant() -> Ctx {
    Ctx {
        start: 10 * HOUR,
        end: 10 * HOUR,
        step: 0,
    }
}

/// A dashboard panel's range: `hours` at 15 s steps.
fn panel(hours: i64) -> Ctx {
    Ctx {
        start: 48 * HOUR - hours * HOUR,
        end: 48 * HOUR,
        step: 15_000,
    }
}

/// An aggregation's strategy, with the shards a folded one's select is
/// read in.
#[derive(Debug, PartialEq, Eq)]
enum Strategy {
    Folded { shards: usize },
    NodeByNode { threads: usize },
}

fn strategy(a: &Aggregate) -> Strategy {
    match a.strategy {
        AggStrategy::Folded => Strategy::Folded {
            shards: foldable(a).expect("folded aggregations are foldable").set.shards,
        },
        AggStrategy::NodeByNode { threads } => Strategy::NodeByNode { threads },
    }
}

/// The strategy of the query's aggregation (at the top, or an operand).
fn aggregation(p: &Plan) -> Strategy {
    match &p.root {
        Node::Aggregate(a) => strategy(a),
        Node::Binary(b) => match (&b.lhs, &b.rhs) {
            (Node::Aggregate(a), _) | (_, Node::Aggregate(a)) => strategy(a),
            _ => panic!("no aggregation in {p}"),
        },
        _ => panic!("no aggregation in {p}"),
    }
}

/// Every select's shards, in the order the selectors are written.
fn shards(p: &Plan) -> Vec<usize> {
    let mut root = p.root.clone();
    root.selectors_mut()
        .into_iter()
        .flat_map(|sel| sel.sets.iter().map(|s| s.shards))
        .collect()
}

#[test]
fn few_series_over_at_most_a_day_without_subqueries_run_inline() {
    let inline = |q: &str, bound: usize, c: Ctx| plan(q, bound, 2, c).inline;
    let twelve_hours = Ctx {
        start: 0,
        end: 12 * HOUR,
        step: 60_000,
    };
    assert!(inline(r#"rate(m{host="1"}[5m])"#, 1, twelve_hours));
    assert!(inline(r#"m{host=~"1|2"} / on (host) m{host=~"2|3"}"#, 2, twelve_hours));
    assert!(inline(r#"sum(m{host="1"} @ 100)"#, 1, panel(24 * 30)), "pinned by @");
    assert!(inline("1 + 2", 0, panel(24 * 30)));
    assert!(!inline("sum(m)", 20, panel(1)), "20 series");
    assert!(
        !inline(r#"m{host=~"1.*"} + m{host=~"1.*"}"#, 11, panel(1)),
        "11 + 11 series"
    );
    assert!(
        !inline(r#"rate(m{host="1"}[5m])"#, 1, panel(24)),
        "a day plus the range"
    );
    assert!(
        !inline(r#"max_over_time(m{host="1"}[10m:1m])"#, 1, panel(1)),
        "subquery"
    );
    assert!(!inline(r#"m{host="1"}"#, usize::MAX, panel(1)), "no bound");
    assert!(
        !inline("max_over_time(vector(1)[30d:1s])", 0, instant()),
        "subquery without selectors"
    );
    // Inline is on the caller's thread only: never split, nothing on the pool.
    // 16 series × 3,361 steps would be chunked over the threads otherwise.
    let p = plan("sum(m)", 16, 8, panel(14));
    assert!(p.inline && p.split.is_none(), "{p}");
    assert_eq!(aggregation(&p), Strategy::NodeByNode { threads: 1 });
    assert!(!plan("sum(m)", 17, 8, panel(14)).inline);
    assert_eq!(
        aggregation(&plan("sum(m)", 17, 8, panel(14))),
        Strategy::NodeByNode { threads: 8 }
    );
}

/// What the shape alone says, before the storage is asked: only queries
/// that may be inline are planned on the caller's thread.
#[test]
fn the_shape_alone_tells_which_queries_may_run_inline() {
    let may = |q: &str, c: Ctx| {
        let root = lower(&crate::parse(q).unwrap(), super::QueryTimes::of(&c)).unwrap();
        may_be_inline(&root, c, &limits(2))
    };
    assert!(may("sum(rate(m[5m]))", instant()), "whatever its bound");
    assert!(may(r#"m{host=~".+"}"#, panel(23)));
    assert!(may("sum(m @ 100)", panel(24 * 30)), "pinned by @");
    assert!(may("1 + 2", panel(24 * 30)));
    assert!(!may(r#"rate(m{host="1"}[5m])"#, panel(24)), "a day plus the range");
    assert!(!may("max_over_time(m[10m:1m])", instant()), "subquery");
    assert!(!may("m offset 1h + rate(m[2d])", instant()), "one long range");
}

/// A storage that records the reach of each querier asked for.
#[derive(Default)]
struct Reached(std::sync::Mutex<Vec<(i64, i64)>>);

impl Queryable for Reached {
    fn querier(&self, lo: i64, hi: i64) -> std::result::Result<Box<dyn Querier>, StorageError> {
        self.0.lock().unwrap().push((lo, hi));
        Ok(Box::new(BoundQuerier(1)))
    }
}

/// An `@` fixes where a selector reads, so its bound is asked over that
/// window only, not over the whole store.
#[test]
fn selectors_pinned_by_at_are_bounded_over_their_own_window() {
    let reach = |q: &str, c: Ctx| {
        let store = Reached::default();
        let root = lower(&crate::parse(q).unwrap(), super::QueryTimes::of(&c)).unwrap();
        decide(&store, root, c, &limits(2)).unwrap();
        store.0.into_inner().unwrap()
    };
    assert_eq!(
        reach("rate(m[5m] @ 1000)", panel(1)),
        [(1_000_000 - 300_000, 1_000_000)]
    );
    assert_eq!(
        reach("m @ end() offset 1m", panel(1)),
        [(48 * HOUR - 60_000 - 300_000, 48 * HOUR - 60_000)]
    );
    // A subquery pinned by `@` pins what it contains.
    assert_eq!(
        reach("max_over_time(rate(m[5m])[1h:1m] @ 7200)", panel(6)),
        [(HOUR - 300_000, 2 * HOUR)]
    );
    // Unpinned, the reach follows the steps.
    assert_eq!(reach("m", panel(1)), [(47 * HOUR - 300_000, 48 * HOUR)]);
}

#[test]
fn alert_rules_read_small_selects_on_the_calling_thread_and_large_ones_in_shards() {
    let q = r#"(node_filesystem_avail_bytes{fstype!="tmpfs"} / node_filesystem_size_bytes < .10) and on (instance) node_filesystem_readonly == 0"#;
    for threads in [1, 2, 8] {
        assert_eq!(
            shards(&plan(q, 16, threads, instant())),
            vec![1, 1, 1],
            "{threads} threads, 16 series"
        );
        let many = if threads == 1 { 1 } else { threads };
        assert_eq!(
            shards(&plan(q, 5_000, threads, instant())),
            vec![many; 3],
            "{threads} threads, 5,000 series"
        );
    }
}

#[test]
fn fleet_aggregations_fold_into_their_select_when_large_enough_to_shard() {
    let q = "sum by (mode) (rate(node_cpu_seconds_total[1m]))";
    // One thread: always folded, in one shard.
    assert_eq!(
        aggregation(&plan(q, 16_000, 1, panel(1))),
        Strategy::Folded { shards: 1 }
    );
    assert_eq!(aggregation(&plan(q, 10, 1, instant())), Strategy::Folded { shards: 1 });
    for threads in [2, 8] {
        // 16,000 series × 241 steps: folded, sharded by mode.
        assert_eq!(
            aggregation(&plan(q, 16_000, threads, panel(1))),
            Strategy::Folded { shards: threads }
        );
        // An instant query of as many series is under 2 M points: node by
        // node (its one step on one thread, its select in shards).
        let p = plan(q, 16_000, threads, instant());
        assert_eq!(aggregation(&p), Strategy::NodeByNode { threads: 1 });
        assert_eq!(shards(&p), vec![threads]);
        // Nothing to shard by, or not a simple accumulation: node by node.
        for q in [
            "sum(rate(node_cpu_seconds_total[1m]))",
            "quantile by (mode) (0.9, rate(node_cpu_seconds_total[1m]))",
            "sum by (__name__) (rate(node_cpu_seconds_total[1m]))",
            r#"sum by (mode) (rate(node_cpu_seconds_total{a="1" or b="2"}[1m]))"#,
            "sum by (mode) (predict_linear(node_cpu_seconds_total[1m], 60))",
        ] {
            assert!(
                matches!(
                    aggregation(&plan(q, 16_000, threads, panel(1))),
                    Strategy::NodeByNode { .. }
                ),
                "{q}"
            );
        }
    }
    // Small inputs are added up on one thread.
    assert_eq!(
        aggregation(&plan("sum by (mode) (node_cpu_seconds_total)", 100, 8, panel(1))),
        Strategy::NodeByNode { threads: 1 }
    );
}

#[test]
fn long_panels_split_by_steps_and_their_parts_plan_with_their_share_of_threads() {
    let q = "sum by (mode) (rate(node_cpu_seconds_total[75s]))";
    let day = Ctx {
        start: 0,
        end: 24 * HOUR,
        step: 60_000,
    };
    let p = plan(q, 16_000, 2, day);
    let split = p.split.as_ref().expect("a day on two threads is split");
    assert_eq!((split.parts.len(), split.threads_per_part), (2, 1));
    assert_eq!(
        aggregation(&p),
        Strategy::Folded { shards: 1 },
        "each part on one thread"
    );
    let two_days = Ctx { end: 48 * HOUR, ..day };
    let p = plan(q, 16_000, 8, two_days);
    let split = p.split.as_ref().expect("two days on eight threads are split");
    assert_eq!((split.parts.len(), split.threads_per_part), (4, 2));
    assert_eq!(aggregation(&p), Strategy::Folded { shards: 2 });
    assert!(plan(q, 16_000, 1, day).split.is_none(), "one thread");
    assert!(plan(q, 16_000, 2, panel(6)).split.is_none(), "parts under 12 h");
    for q in [
        "topk(10, rate(node_disk_io_time_seconds_total[5m]))",
        r#"count_values("v", node_load1)"#,
        "rate(node_load1[5m] @ end())",
    ] {
        assert!(plan(q, 16_000, 2, day).split.is_none(), "{q}");
    }
}

#[test]
fn subqueries_reduce_on_the_pool_and_count_their_own_steps() {
    let q = "max_over_time(rate(node_network_receive_bytes_total[5m])[1h:1m])";
    let p = plan(q, 5_000, 2, instant());
    let Node::Call(call) = &p.root else { panic!("{p}") };
    let Node::Subquery(sq) = &call.args[0] else {
        panic!("{p}")
    };
    assert_eq!(sq.threads, 2);
    assert_eq!(shards(&p), vec![2]);
    assert!(!p.inline);
    // The inner aggregation runs at the subquery's 60 steps, not the query's one.
    let q = "max_over_time(sum by (device) (rate(node_disk_read_bytes_total[5m]))[1h:1m])";
    let p = plan(q, 50_000, 2, instant());
    let Node::Call(call) = &p.root else { panic!("{p}") };
    let Node::Subquery(sq) = &call.args[0] else {
        panic!("{p}")
    };
    let Node::Aggregate(a) = &sq.inner else { panic!("{p}") };
    assert_eq!(strategy(a), Strategy::Folded { shards: 2 }, "50,000 series × 61 steps");
}

#[test]
fn plans_print_what_was_decided() {
    let p = plan("sum by (mode) (rate(node_cpu_seconds_total[1m]))", 16_000, 2, panel(1));
    let text = p.to_string();
    for line in [
        "range query 169200000..172800000 every 15000 ms (241 steps)",
        "not split by steps",
        "on the query pool",
        "sum by (mode): folded into its select",
        "    node_cpu_seconds_total, range 1m: at most 16000 series, 2 shard(s)",
    ] {
        assert!(text.contains(line), "{line:?} not in\n{text}");
    }
    let text = plan(r#"node_load1{instance="a"} > 4"#, 1, 2, instant()).to_string();
    assert!(text.contains("inline (on the caller's thread)"), "{text}");
    assert!(
        text.contains("  node_load1{instance=\"a\"}: at most 1 series, 1 shard(s)"),
        "{text}"
    );
}

#[test]
fn info_series_are_bounded_and_placed_as_any_select() {
    let p = plan(
        r#"info(rate(http_requests_total[5m]), {__name__="build_info"})"#,
        5_000,
        2,
        panel(1),
    );
    let Node::Info(info) = &p.root else { panic!("{p}") };
    let set = &info.select.sets[0];
    assert_eq!((set.bound, set.shards), (5_000, 2));
    let text = p.to_string();
    assert!(
        text.contains(r#"  info series {__name__="build_info"}: at most 5000 series, 2 shard(s)"#),
        "{text}"
    );
    // Both selects count towards running inline.
    assert!(plan("info(up)", 8, 2, instant()).inline);
    assert!(!plan("info(up)", 9, 2, instant()).inline, "9 + 9 series");
}

#[test]
fn step_invariant_nodes_are_those_prometheus_evaluates_once() {
    let c = Ctx {
        start: 0,
        end: HOUR,
        step: 60_000,
    };
    let invariant = |q: &str| {
        lower(&crate::parse(q).unwrap(), super::QueryTimes::of(&c))
            .unwrap()
            .step_invariant()
    };
    for q in [
        "1",
        "-1 + 2",
        "x @ 100",
        "x @ start()",
        "rate(x[5m] @ end())",
        "max_over_time(x[10m:] @ 100)",
        "sum(x @ 100) * 2",
        "vector(1)",
        "pi()",
        "timestamp(x @ 100)",
        "timestamp((x @ 100))",
        // An aggregation is judged by its input alone.
        "quantile(time(), x @ 100)",
        "topk(scalar(y), x @ 100)",
    ] {
        assert!(invariant(q), "{q}");
    }
    for q in [
        "x",
        "x @ 100 + y",
        "time()",
        "hour(x @ 100)",
        "predict_linear(x[5m] @ 100, 1)",
        "timestamp(+x @ 100)",
        "timestamp(abs(x @ 100))",
        "quantile_over_time(scalar(y), x[5m] @ 100)",
        "x[10m:] offset 1m",
        "sum(x) + (x @ 100)",
    ] {
        assert!(!invariant(q), "{q}");
    }
}
