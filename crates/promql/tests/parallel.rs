//! Parallel evaluation never changes an answer: the same queries on a
//! one-thread and a four-thread pool give bit-identical results (sharded
//! selects, step-chunked aggregations, Kahan sums whose order matters), and
//! an aggregation folded into its select gives the node-by-node answer.

use cairn_model::{Labels, Sample};
use cairn_promql::{Engine, Value};
use cairn_storage::{Appendable, MemStorage};

fn storage() -> MemStorage {
    let s = MemStorage::new();
    let mut app = s.appender();
    let mut x: u64 = 7;
    for inst in 0..30 {
        for cpu in 0..8 {
            let labels = Labels::from_pairs([
                ("__name__", "cpu_seconds_total"),
                ("instance", &format!("host-{inst}")),
                ("cpu", &cpu.to_string()),
                ("mode", if cpu % 2 == 0 { "idle" } else { "user" }),
            ]);
            let mut v = 0.0;
            let samples: Vec<Sample> = (0..400)
                .map(|k| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    // Mixed magnitudes so summation order shows in the last bits.
                    let inc = (x >> 40) as f64 * if k % 7 == 0 { 1e9 } else { 1e-3 };
                    v += inc;
                    if k == 200 && inst % 3 == 0 {
                        v = 0.0; // counter reset
                    }
                    Sample::new(k * 15_000 + inst * 17, v)
                })
                .collect();
            app.append(&labels, &samples).unwrap();
        }
    }
    app.commit().unwrap();
    s
}

/// A query evaluated over the test storage.
type Eval<'a> = dyn Fn(&str) -> cairn_promql::QueryResult + Sync + 'a;

fn bits(v: &Value) -> Vec<(String, Vec<(i64, u64)>)> {
    match v {
        Value::Matrix(m) => m
            .iter()
            .map(|s| {
                (
                    s.metric.to_string(),
                    s.floats.iter().map(|p| (p.t, p.v.to_bits())).collect(),
                )
            })
            .collect(),
        Value::Vector(v) => v
            .iter()
            .map(|s| (s.metric.to_string(), vec![(s.t, s.value.as_float().unwrap().to_bits())]))
            .collect(),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn parallel_evaluation_is_bit_identical_to_sequential() {
    let s = storage();
    let engine = Engine::default();
    let queries = [
        "sum by (mode) (rate(cpu_seconds_total[1m]))",
        "avg without (cpu) (rate(cpu_seconds_total[2m]))",
        "sum(cpu_seconds_total)",
        "stddev by (instance) (cpu_seconds_total)",
        "quantile(0.9, rate(cpu_seconds_total[1m]))",
        "count by (mode) (cpu_seconds_total > 1e6)",
        "max by (instance) (irate(cpu_seconds_total[1m])) / on (instance) min by (instance) (cpu_seconds_total)",
        "cpu_seconds_total{mode=\"idle\"} / ignoring(mode, cpu) group_left sum without (mode, cpu) (cpu_seconds_total)",
        "topk(3, rate(cpu_seconds_total[5m]))",
        "sum by (mode) (sum_over_time(cpu_seconds_total[10m:1m]))",
    ];
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let four = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    for q in queries {
        let seq = one.install(|| engine.range(&s, q, 600_000, 5_900_000, 15_000)).unwrap();
        let par = four
            .install(|| engine.range(&s, q, 600_000, 5_900_000, 15_000))
            .unwrap();
        let (a, b) = (bits(&seq.value), bits(&par.value));
        assert!(!a.is_empty(), "{q}: empty result");
        assert_eq!(a, b, "{q}: range results differ");
        let seq = one.install(|| engine.instant(&s, q, 3_000_000)).unwrap();
        let par = four.install(|| engine.instant(&s, q, 3_000_000)).unwrap();
        assert_eq!(bits(&seq.value), bits(&par.value), "{q}: instant results differ");
    }
}

/// Range queries split by steps over the threads (`StepSplit`) answer
/// exactly as one evaluation of all steps: selectors, windows, subqueries,
/// `@`, offsets, joins, and series that exist in only some parts.
#[test]
fn split_by_steps_is_bit_identical_to_whole() {
    let s = storage();
    let whole = Engine::default();
    let split = Engine::new(cairn_promql::EngineOptions {
        step_split: cairn_promql::StepSplit::Always,
        ..Default::default()
    });
    let queries = [
        "cpu_seconds_total",
        "sum by (mode) (rate(cpu_seconds_total[1m]))",
        "avg without (cpu) (increase(cpu_seconds_total[2m] offset 3m))",
        "max by (instance) (irate(cpu_seconds_total[1m])) / on (instance) min by (instance) (cpu_seconds_total)",
        "sum by (mode) (sum_over_time(cpu_seconds_total[10m:1m]))",
        "rate(cpu_seconds_total{instance=\"host-3\"}[5m] @ end())",
        "cpu_seconds_total{instance=\"host-1\"} @ start()",
        "topk(3, deriv(cpu_seconds_total[5m]))",
        "count_values(\"v\", floor(cpu_seconds_total / 1e12))",
        "absent(cpu_seconds_total{instance=\"host-1\"} > 1e17)",
        "changes(cpu_seconds_total[30m]) + resets(cpu_seconds_total[30m])",
        "timestamp(cpu_seconds_total{cpu=\"0\"}) - time()",
        "label_replace(rate(cpu_seconds_total[1m]), \"m\", \"$1\", \"mode\", \"(.*)\")",
        "cpu_seconds_total > bool 1e12",
        "scalar(sum(cpu_seconds_total)) * 2",
        "predict_linear(cpu_seconds_total{cpu=\"1\"}[10m], 600)",
    ];
    // Parts of at least 40 minutes: two parts of these ranges, each on two
    // of four threads (sharded selects and step-chunked aggregations inside).
    let split_in_two = Engine::new(cairn_promql::EngineOptions {
        step_split: cairn_promql::StepSplit::Auto {
            min_part_span: std::time::Duration::from_secs(40 * 60),
            min_part_per_window: 0,
        },
        ..Default::default()
    });
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    // Three threads: parts of unequal length, one thread each.
    let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    let four = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    for q in queries {
        for (start, end, step) in [
            (60_000, 6_000_000, 15_000),
            (600_000, 5_900_000, 60_000),
            (95_000, 5_950_000, 7_000),
        ] {
            let a = one.install(|| whole.range(&s, q, start, end, step)).unwrap();
            let ab = bits(&a.value);
            assert!(!ab.is_empty(), "{q}: empty result");
            for b in [
                three.install(|| split.range(&s, q, start, end, step)).unwrap(),
                four.install(|| split_in_two.range(&s, q, start, end, step)).unwrap(),
            ] {
                assert_eq!(ab, bits(&b.value), "{q} {start}..{end}/{step}: results differ");
                assert_eq!(
                    (&a.warnings, &a.infos),
                    (&b.warnings, &b.infos),
                    "{q}: annotations differ"
                );
            }
        }
    }
}

#[test]
fn parallel_evaluation_respects_limits() {
    let s = storage();
    let four = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    let opts = cairn_promql::EngineOptions {
        max_samples: 10_000,
        ..Default::default()
    };
    let err = four
        .install(|| Engine::new(opts).range(&s, "sum(rate(cpu_seconds_total[5m]))", 0, 6_000_000, 15_000))
        .unwrap_err();
    assert_eq!(err.kind(), cairn_promql::ErrorKind::Execution);
    let opts = cairn_promql::EngineOptions {
        max_series: 100,
        ..Default::default()
    };
    let err = four
        .install(|| Engine::new(opts).instant(&s, "sum(cpu_seconds_total)", 3_000_000))
        .unwrap_err();
    assert_eq!(err.to_string(), "query processing would load too many series");
    // Split by steps, every part selects the same 240 series: they count once,
    // and the parts' samples add up against the limit.
    let split = |max_series, max_samples| {
        let opts = cairn_promql::EngineOptions {
            max_series,
            max_samples,
            step_split: cairn_promql::StepSplit::Always,
            ..Default::default()
        };
        four.install(|| Engine::new(opts).range(&s, "cpu_seconds_total", 0, 6_000_000, 15_000))
    };
    assert!(split(240, 1_000_000).is_ok());
    assert_eq!(
        split(239, 1_000_000).unwrap_err().to_string(),
        "query processing would load too many series"
    );
    let points: usize = match split(240, 1_000_000).unwrap().value {
        Value::Matrix(m) => m.iter().map(|s| s.floats.len()).sum(),
        other => panic!("unexpected {other:?}"),
    };
    assert!(split(240, points).is_ok());
    assert_eq!(
        split(240, points - 1).unwrap_err().kind(),
        cairn_promql::ErrorKind::Execution
    );
}

/// A simple aggregation of a range function is folded into its select
/// (`fused.rs`), on one thread (as in each part of a query split by steps)
/// and on several (the select sharded by the grouping labels); its answers
/// are the node-by-node evaluation's on one thread, bit for bit.
#[test]
fn folded_aggregations_equal_node_by_node() {
    let s = storage();
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let four = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    // Folded on four threads too, however few the points.
    let engine = Engine::new(cairn_promql::EngineOptions {
        fold_sharded_min_points: 0,
        ..Default::default()
    });
    for op in ["sum", "avg", "count", "min", "max", "group", "stddev", "stdvar"] {
        for func in [
            "rate",
            "irate",
            "increase",
            "avg_over_time",
            "last_over_time",
            "changes",
            "stddev_over_time",
            "mad_over_time",
            "ts_of_max_over_time",
            "present_over_time",
        ] {
            for grouping in ["by (mode)", "without (cpu)", "by (instance, mode)", "by (nothing)", ""] {
                // `* 1` keeps every value's bits but is not a function call,
                // so that form is evaluated node by node.
                let folded = format!("{op} {grouping} ({func}(cpu_seconds_total[2m]))");
                let plain = format!("{op} {grouping} ({func}(cpu_seconds_total[2m]) * 1)");
                let range = |q: &str| engine.range(&s, q, 0, 6_000_000, 30_000).unwrap();
                let instant = |q: &str| engine.instant(&s, q, 3_000_000).unwrap();
                let evals: [(&str, &Eval); 2] = [("range", &range), ("instant", &instant)];
                for (kind, eval) in evals {
                    let expected = bits(&one.install(|| eval(&plain)).value);
                    assert!(!expected.is_empty(), "{plain}: empty {kind} result");
                    for pool in [&one, &four] {
                        let got = bits(&pool.install(|| eval(&folded)).value);
                        let threads = pool.current_num_threads();
                        assert_eq!(got, expected, "{folded} on {threads} threads: {kind} results differ");
                    }
                }
            }
        }
    }
    // Folded, the series read still count against the limit.
    let opts = cairn_promql::EngineOptions {
        max_series: 100,
        fold_sharded_min_points: 0,
        ..Default::default()
    };
    for pool in [&one, &four] {
        let err = pool
            .install(|| {
                Engine::new(opts.clone()).range(&s, "sum by (mode) (rate(cpu_seconds_total[5m]))", 0, 6_000_000, 15_000)
            })
            .unwrap_err();
        assert_eq!(err.to_string(), "query processing would load too many series");
    }
}
