//! Differential test of Cairn's PromQL engine against Prometheus itself:
//! Prometheus 3.14 (`../shared/peers/`, with its experimental functions on),
//! the oracle of Prometheus 3 semantics; `CAIRN_TEST_PROMETHEUS` names
//! another binary, e.g. Debian's `prometheus` 2.42.
//!
//! Both servers get the same remote-write requests: a node_exporter fleet
//! replayed from the recorded trace plus synthetic series (tests/differential/
//! data.rs). Then every query of tests/differential/queries.txt and every
//! alert rule of the shared alerts file runs on both, as instant queries at
//! three times and as range queries with three steps, and the answers must be
//! equal (values within 1e-9 relative; label sets exact; order where
//! Prometheus defines it; for errors, the type, and the duplicate label set
//! message). Against Prometheus 3 every query is asked as it is. Against
//! 2.42, where Prometheus 3 (which Cairn follows) differs, the query is
//! handled as a named exception (queries.rs, docs/promql-differences.md).
//! The test prints a summary and fails on any unexplained difference.
//! Two more deployments of Cairn must give the one node's answers byte for
//! byte: one that splits every range query by steps, and a cluster of
//! three nodes (RF 3) written to through one node and asked through another.
//!
//! Without the binary the test prints `SKIPPED` and passes, unless `CI` is
//! set, where that is a failure.

use crate::differential::compare;
use crate::differential::data;
use crate::differential::queries;
use crate::differential::servers;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::peers::{Prometheus, in_ci};
use crate::common::three_nodes::ThreeNodes;
use crate::common::*;
use compare::{Answer, Order};
use queries::{Handling, Query};
use servers::{Eval, ask, ask_raw, major_version, prometheus_binary, subset_diff, ties_diff};

const ALERTS: &str = "/work/shared/benchdata/prometheus-benchmark-alerts.yaml";
const MIN_QUERIES: usize = 300;

/// Evaluation times at `.500` s (samples are at `.250`): the end of the data
/// plus lookback, during host-00001's outage, and early, when long ranges
/// reach before the first sample.
fn evaluations(d: &data::Dataset) -> Vec<Eval> {
    let (s, e) = (d.start_ms, d.end_ms);
    vec![
        Eval::Instant { t_ms: e + 90_500 },
        Eval::Instant { t_ms: s + 3_300_500 },
        Eval::Instant { t_ms: s + 1_500_500 },
        Eval::Range {
            start_ms: s + 600_500,
            end_ms: e + 60_500,
            step_ms: 60_000,
        },
        Eval::Range {
            start_ms: s + 500,
            end_ms: e + 300_500,
            step_ms: 217_000,
        },
        Eval::Range {
            start_ms: e - 1_199_500,
            end_ms: e + 500,
            step_ms: 15_000,
        },
    ]
}

/// Checks for exceptions whose answers are not compared one to one.
fn check_special(q: &Query, handling: Handling, ev: &Eval, prom: &Answer, cairn: &Answer) -> Option<String> {
    let instant = matches!(ev, Eval::Instant { .. });
    match handling {
        Handling::SortedByLabels => {
            let d = compare::diff(prom, cairn, Order::None);
            if d.is_some() || !instant {
                return d;
            }
            let inner = q.prometheus.as_deref().unwrap_or_default();
            let (names, desc) = queries::sort_labels(&q.cairn, inner);
            let Answer::Vector(v) = cairn else { return None };
            let key = |l: &compare::Labels| -> (Vec<String>, compare::Labels) {
                (
                    names.iter().map(|n| l.get(n).cloned().unwrap_or_default()).collect(),
                    l.clone(),
                )
            };
            let sorted = v.windows(2).all(|w| {
                let (a, b) = (key(&w[0].0), key(&w[1].0));
                if desc { a.0 >= b.0 } else { a.0 <= b.0 }
            });
            (!sorted).then(|| format!("    cairn's answer is not sorted by {names:?}"))
        }
        Handling::TiesAtCut => ties_diff(prom, cairn, ev),
        Handling::Subset => {
            let k = queries::limitk_k(&q.cairn);
            subset_diff(prom, cairn, k)
        }
        _ => compare::diff(prom, cairn, Order::None),
    }
}

#[derive(Default)]
struct ClassTally {
    queries: usize,
    evals: usize,
    matched: usize,
}

#[test]
fn promql_answers_match_prometheus() {
    let Some(prom_bin) = prometheus_binary() else { return };
    let major = major_version(&prom_bin);
    let trace_path = Path::new(cairn_bench::DEFAULT_TRACE);
    if !trace_path.exists() {
        if in_ci() {
            panic!("benchmark trace {} missing but CI is set", trace_path.display());
        }
        println!("SKIPPED: benchmark trace {} missing", trace_path.display());
        return;
    }

    // Queries first: a bad list fails before anything starts.
    let list = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/differential/queries.txt");
    let mut all = queries::load_list(&list);
    all.extend(queries::load_alerts(Path::new(ALERTS)));
    if major >= 3 {
        // Prometheus 3 is asked every query as it is; the exceptions were
        // 2.42's, but for which of several series tied at a `topk` cut is
        // kept, which neither version defines.
        for q in &mut all {
            q.prometheus = Some(q.cairn.clone());
            q.exception = q.exception.filter(|e| *e == "topk-tie-breaking");
        }
    }
    let mut seen = std::collections::HashSet::new();
    for q in &all {
        assert!(
            seen.insert(q.cairn.clone()),
            "{}: duplicate query {}",
            q.origin,
            q.cairn
        );
    }
    assert!(
        all.len() >= MIN_QUERIES,
        "only {} queries, want at least {MIN_QUERIES}",
        all.len()
    );

    let t0 = Instant::now();
    let trace = Arc::new(cairn_bench::trace::Trace::load(trace_path).expect("load trace"));
    let dataset = data::build(trace, now_ms());
    let requests = dataset.requests();
    let feature = (major >= 3).then_some("--enable-feature=promql-experimental-functions");
    let flags: Vec<&str> = ["--web.enable-remote-write-receiver", "--log.level=warn"]
        .into_iter()
        .chain(feature)
        .collect();
    let prom = Prometheus::start(&prom_bin, "global:\n  scrape_interval: 15s\n", &flags);
    let prom_url = prom.url();
    let cairn = Server::start();
    // Splitting range queries by steps must not change a byte of an answer:
    // a second Cairn splits every range query it can.
    let cairn_split = Server::start_with(&["--query.step-split=always"]);
    // So must a cluster of three (RF 3): written to through one node, asked
    // through another.
    let Some(cluster) = ThreeNodes::start(&[]) else { return };
    let http = http_client(Duration::from_secs(60));
    let c = cairn.client();
    let cs = cairn_split.client();
    let cluster_writer = cluster.nodes[0].client();
    servers::write_all(&http, &prom, &requests, &[&c, &cs, &cluster_writer]);
    println!(
        "loaded {} series, {} samples in {} requests into both servers in {:.1}s",
        dataset.series.len(),
        dataset.samples(),
        requests.len(),
        t0.elapsed().as_secs_f64()
    );

    let evals = evaluations(&dataset);
    // Both must hold the same series before queries mean anything.
    let census = "count by (job) ({__name__=~\".+\"})";
    let ev = Eval::Range {
        start_ms: dataset.start_ms + 500,
        end_ms: dataset.end_ms + 500,
        step_ms: 300_000,
    };
    if let Some(d) = compare::diff(
        &ask(&http, &prom_url, census, &ev),
        &ask(&http, &cairn.url(), census, &ev),
        Order::None,
    ) {
        panic!("the servers hold different data:\n{d}");
    }

    // CAIRN_DIFF_FILTER=<text> runs only queries containing the text.
    if let Ok(f) = std::env::var("CAIRN_DIFF_FILTER") {
        all.retain(|q| q.cairn.contains(&f));
    }
    let t1 = Instant::now();
    let mut tally: BTreeMap<String, ClassTally> = BTreeMap::new();
    let mut by_exception: BTreeMap<&str, usize> = BTreeMap::new();
    let mut mismatches = Vec::new();
    let mut both_failed = 0usize;
    let mut skipped_by_exception = 0usize;
    let cairn_base = cairn.url();
    let split_base = cairn_split.url();
    let cluster_base = cluster.nodes[1].url();
    let mut split_compared = 0usize;
    let mut cluster_compared = 0usize;
    for q in &all {
        let tl = tally.entry(q.class.clone()).or_default();
        tl.queries += 1;
        let handling = q.exception.and_then(queries::exception).map(|e| e.handling);
        if let Some(e) = q.exception {
            *by_exception.entry(e).or_default() += 1;
        }
        for ev in &evals {
            if handling == Some(Handling::InsideData)
                && ev.earliest_ms(queries::reach_ms(&q.cairn)) < dataset.start_ms + data::INTERVAL_MS
            {
                skipped_by_exception += 1;
                continue;
            }
            tl.evals += 1;
            let (p, (a, a_body)) = std::thread::scope(|s| {
                let p = s.spawn(|| q.prometheus.as_deref().map(|pq| ask_raw(&http, &prom_url, pq, ev)));
                let a = ask_raw(&http, &cairn_base, &q.cairn, ev);
                (p.join().expect("prometheus query thread"), a)
            });
            if matches!(ev, Eval::Range { .. }) {
                split_compared += 1;
                let (_, split_body) = ask_raw(&http, &split_base, &q.cairn, ev);
                if split_body != a_body {
                    mismatches.push(format!(
                        "[split] {} ({})\n  {}\n    split by steps: {}\n    whole:          {}",
                        q.cairn,
                        q.origin,
                        ev.describe(dataset.end_ms),
                        split_body.chars().take(300).collect::<String>(),
                        a_body.chars().take(300).collect::<String>()
                    ));
                }
            }
            let (_, cluster_body) = ask_raw(&http, &cluster_base, &q.cairn, ev);
            cluster_compared += 1;
            if cluster_body != a_body {
                mismatches.push(format!(
                    "[cluster] {} ({})\n  {}\n    cluster:  {}\n    one node: {}",
                    q.cairn,
                    q.origin,
                    ev.describe(dataset.end_ms),
                    cluster_body.chars().take(300).collect::<String>(),
                    a_body.chars().take(300).collect::<String>()
                ));
            }
            // Numbers must also be written as Prometheus writes them.
            let format = p.as_ref().and_then(|(_, pb)| compare::format_diff(pb, &a_body));
            let p = p.map(|(answer, _)| answer);
            let d = match (&p, handling) {
                (None, _) => match &a {
                    // Cairn-only: a range query over a range-vector expression fails in both.
                    Answer::Error { error_type, message } => Some(format!("    cairn failed: {error_type}: {message}")),
                    _ => None,
                },
                (Some(p), Some(h)) if h != Handling::Rewrite && h != Handling::Data => check_special(q, h, ev, p, &a),
                (Some(p), _) => {
                    let order = match (ev, queries::outer_call(&q.cairn)) {
                        (Eval::Instant { .. }, Some("sort" | "sort_desc" | "topk" | "bottomk")) => Order::ByValue,
                        _ => Order::None,
                    };
                    if matches!((p, &a), (Answer::Error { .. }, Answer::Error { .. })) {
                        both_failed += 1;
                    }
                    compare::diff(p, &a, order)
                }
            };
            let d = match (d, format) {
                (None, Some(f)) => Some(format!("    values written differently:\n{f}")),
                (d, _) => d,
            };
            match d {
                None => tl.matched += 1,
                Some(d) => mismatches.push(format!(
                    "[{}] {} ({})\n  {}{}\n{d}",
                    q.class,
                    q.cairn,
                    q.origin,
                    ev.describe(dataset.end_ms),
                    q.prometheus
                        .as_deref()
                        .filter(|p| *p != q.cairn)
                        .map(|p| format!("; prometheus asked: {p}"))
                        .unwrap_or_default()
                )),
            }
        }
    }

    let mut report = String::new();
    let (mut nq, mut ne, mut nm) = (0, 0, 0);
    let _ = writeln!(
        report,
        "\n=== PromQL differential test: Cairn vs Prometheus {major} ==="
    );
    for (class, t) in &tally {
        let _ = writeln!(
            report,
            "{class:<14} queries {:>4}  evaluations {:>5}  matched {:>5}",
            t.queries, t.evals, t.matched
        );
        nq += t.queries;
        ne += t.evals;
        nm += t.matched;
    }
    let _ = writeln!(
        report,
        "TOTAL          queries {nq:>4}  evaluations {ne:>5}  matched {nm:>5} ({:.2}%), {both_failed} of them errors in both",
        100.0 * nm as f64 / ne.max(1) as f64
    );
    let _ = writeln!(
        report,
        "documented exceptions (Prometheus 3 semantics, docs/promql-differences.md); {skipped_by_exception} evaluations skipped by them:"
    );
    for e in queries::EXCEPTIONS {
        let _ = writeln!(
            report,
            "  {:<26} {:>2} queries  {}",
            e.name,
            by_exception.get(e.name).copied().unwrap_or(0),
            e.reason
        );
    }
    let _ = writeln!(
        report,
        "queries took {:.1}s (both servers; {} evaluations per query)",
        t1.elapsed().as_secs_f64(),
        evals.len()
    );
    let _ = writeln!(
        report,
        "split by steps (--query.step-split=always): {split_compared} range evaluations compared byte for byte with the whole evaluation"
    );
    let _ = writeln!(
        report,
        "a cluster of three (RF 3): {cluster_compared} evaluations compared byte for byte with the one node"
    );
    let _ = writeln!(report, "mismatches: {}", mismatches.len());
    for m in &mismatches {
        let _ = writeln!(report, "--- {m}");
    }
    println!("{report}");
    // CAIRN_DIFF_HOLD_SECS=<n> keeps both servers up for n seconds to look
    // into a difference by hand.
    if let Some(secs) = std::env::var("CAIRN_DIFF_HOLD_SECS").ok().and_then(|s| s.parse().ok()) {
        println!(
            "holding for {secs}s: prometheus {} cairn {} (data end {})",
            prom_url,
            cairn.url(),
            ms_to_param(dataset.end_ms)
        );
        std::thread::sleep(Duration::from_secs(secs));
    }
    assert!(
        mismatches.is_empty(),
        "{} evaluations differ from Prometheus (see above)",
        mismatches.len()
    );
}
