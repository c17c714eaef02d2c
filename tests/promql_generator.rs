//! Random PromQL expressions (tests/qgen/gen.rs: grammar-based, seeded,
//! valid and deliberately invalid) asked of Prometheus 3.14 and of Cairn
//! over the data set of the differential test (tests/differential/data.rs),
//! as two instant queries and one range query each. The answers must agree
//! as in tests/promql_differential.rs: status, errorType, the duplicate
//! label set message, result type, label sets, values within 1e-9 relative,
//! numbers written alike, order where Prometheus defines it; and here also
//! the warnings and infos. A difference is shrunk to a small expression that
//! still differs, and the test fails listing seed, original and shrunk
//! expression and both answers.
//!
//! Policies for what is not defined (docs/promql-differences.md, "Random
//! query generator"): which series a limitk keeps or which of several tied
//! at a topk/bottomk cut; last-place float differences where count_values or
//! the math library magnify them; annotation positions; the sort warning
//! under `@` or in a subquery; Prometheus' own recovered panics.
//!
//! CI runs `QGEN_COUNT` expressions from a fixed seed. A soak:
//! `CAIRN_QGEN_SECS=3600 cargo test --release --test e2e promql_generator:: -- --nocapture`
//! runs new seeds (from the clock, or `CAIRN_QGEN_SEED`) for that long.
//! `CAIRN_QGEN_EXPR='<query>'` prints both answers to an expression (one a
//! line);
//! `CAIRN_QGEN_PRINT=<n>` prints the run's first n expressions only.

use crate::differential::compare;
use crate::differential::data;
#[path = "qgen/gen.rs"]
mod r#gen;
use crate::differential::servers;

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::peers::{Prometheus, in_ci};
use crate::common::*;
use compare::{Answer, Order};
use r#gen::E;
use servers::{Eval, ask_raw, major_version, prometheus_binary};

/// Expressions per CI run (at `CI_SEED`).
const QGEN_COUNT: u64 = 5000;
const CI_SEED: u64 = 0x5eed_0055;
/// Shrinking stops after this many candidate evaluations per difference.
const SHRINK_BUDGET: usize = 400;
/// Differences shrunk per run; the rest are listed as found.
const MAX_SHRUNK: usize = 30;

/// Two instant queries (just after the data, with its last samples within
/// the lookback; during host-00001's outage) and a 30-minute range query.
fn evaluations(d: &data::Dataset) -> Vec<Eval> {
    let (s, e) = (d.start_ms, d.end_ms);
    vec![
        Eval::Instant { t_ms: e + 30_500 },
        Eval::Instant { t_ms: s + 3_300_500 },
        Eval::Range {
            start_ms: e - 1_799_500,
            end_ms: e + 500,
            step_ms: 60_000,
        },
    ]
}

/// The seed of the `i`-th expression of a run.
fn expr_seed(run_seed: u64, i: u64) -> u64 {
    cairn_bench::fleet::mix(run_seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

struct Peers {
    http: reqwest::blocking::Client,
    prom: String,
    cairn: String,
    evals: Vec<Eval>,
    origin_ms: i64,
    /// Evaluations that failed in both, and of them as `bad_data`.
    errors_both: std::cell::Cell<(u64, u64)>,
}

/// Both answers to one evaluation.
struct Pair {
    prom: (Answer, String),
    cairn: (Answer, String),
}

impl Peers {
    fn ask(&self, q: &str, ev: &Eval) -> Pair {
        let (prom, cairn) = std::thread::scope(|s| {
            let (http, prom) = (&self.http, &self.prom);
            let p = s.spawn(move || ask_raw(http, prom, q, ev));
            let c = ask_raw(http, &self.cairn, q, ev);
            (p.join().expect("prometheus query thread"), c)
        });
        Pair { prom, cairn }
    }

    /// The first evaluation (index) where the answers differ, and how.
    fn first_difference(&self, e: &E, only: Option<usize>) -> Option<(usize, String, Pair)> {
        let q = e.to_string();
        for (i, ev) in self.evals.iter().enumerate() {
            if only.is_some_and(|o| o != i) {
                continue;
            }
            let pair = self.ask(&q, ev);
            if only.is_none()
                && let (Answer::Error { error_type, .. }, Answer::Error { .. }) = (&pair.prom.0, &pair.cairn.0)
            {
                let (a, b) = self.errors_both.get();
                self.errors_both.set((a + 1, b + u64::from(error_type == "bad_data")));
            }
            let inner = |x: &E| ask_raw(&self.http, &self.prom, &x.to_string(), ev).0;
            if let Some(d) = difference(e, ev, &pair, &inner) {
                return Some((i, d, pair));
            }
        }
        None
    }

    /// Shrinks `e` while it still differs at evaluation `at`.
    fn shrink(&self, e: &E, at: usize) -> (E, usize) {
        let mut cur = e.clone();
        let mut tried = 0;
        'outer: loop {
            for cand in r#gen::shrinks(&cur) {
                if tried >= SHRINK_BUDGET {
                    break 'outer;
                }
                tried += 1;
                if self.first_difference(&cand, Some(at)).is_some() {
                    cur = cand;
                    continue 'outer;
                }
            }
            break;
        }
        (cur, tried)
    }
}

/// How the answers to `e` at `ev` differ, under the comparison policy
/// (docs/promql-differences.md, "Random query generator"). `inner` asks
/// Prometheus for the expression a `limitk` selects from.
fn difference(e: &E, ev: &Eval, pair: &Pair, inner: &dyn Fn(&E) -> Answer) -> Option<String> {
    let (pa, pb) = (&pair.prom.0, &pair.cairn.0);
    let instant = matches!(ev, Eval::Instant { .. });
    let outer = e.outer();
    let order = match outer {
        Some(("sort" | "sort_desc", _)) | Some(("topk" | "bottomk", false)) if instant => Order::ByValue,
        _ => Order::None,
    };
    // A panic Prometheus recovered from, or an internal check of its engine
    // that failed, is its bug, not an answer.
    if let Answer::Error { message, .. } = pa
        && (message.starts_with("unexpected error: ") || message == "unexpected number of samples")
    {
        return None;
    }
    // Where Prometheus 3.14 evaluates at other times than it should, any
    // Cairn answer and notes are accepted (documented): a range function of a
    // subquery under `@` evaluated step by step answers nothing; timestamp()
    // of a selector with `@` drops its offset but reads the series fetched
    // for it; subquery steps under `@` 292 years away overflow; info series
    // are looked up at steps other than the times they were selected for.
    if e.at_subquery_step_by_step() || e.timestamp_at_offset() || e.subquery_at_far() || e.info_of_shifted_input() {
        return None;
    }
    let mut d = compare::diff(pa, pb, order);
    if d.is_some() && e.has_choice() {
        // Which series a limitk keeps, or which of several tied at a
        // topk/bottomk cut, is not defined (Prometheus: the order series
        // come from storage).
        let mut unparen = e;
        while let E::Paren(inner) = unparen {
            unparen = inner;
        }
        d = match (outer, e) {
            // A choice inside the outer one's input changes what it chooses from.
            (Some(("topk" | "bottomk", _)), _) if !matches!(unparen, E::Agg { expr, .. } if expr.has_choice()) => {
                servers::ties_diff(pa, pb, ev)
            }
            (
                Some(("limitk", false)),
                E::Agg {
                    param: Some(k), expr, ..
                },
            ) if !expr.has_choice()
                && let Some(k) = k.literal() =>
            {
                servers::subset_diff(&inner(expr), pb, k.max(0.0) as usize)
            }
            // Nested: the choice changes what follows it; the same kind of
            // answer is all that is defined, and where the series chosen
            // meet (once their names are gone, or in a match group), one
            // fails where the other answers.
            _ if choice_error(pa) != choice_error(pb) => None,
            _ => shape_diff(pa, pb),
        };
    }
    if d.is_some() && e.absent_of_conflicting_matchers() {
        // absent's labels of `{a!="b", a="c"}`: Prometheus' matcher order
        // depends on whether its TSDB holds data the query reaches.
        d = shape_diff(pa, pb);
    }
    if d.is_some() && e.sums_across_series() && same_points(pa, pb) {
        // Sums across series in storage order: where cancellation leaves
        // few digits (stdvar of values near 1.8e9), they differ beyond 1e-9.
        d = None;
    }
    if d.is_some()
        && (e.has_libm() || e.counts_computed_values())
        && shape_diff(pa, pb).is_none()
        && !matches!(pa, Answer::Error { .. })
    {
        // Last-place differences of float arithmetic (the order of a sum,
        // the math library), which count_values (a value becomes a label),
        // comparisons and periodic functions of huge arguments magnify: the
        // same kind of answer is compared.
        d = None;
    }
    if d.is_none()
        && instant
        && matches!(outer, Some(("sort_by_label" | "sort_by_label_desc", _)))
        && let (Answer::Vector(a), Answer::Vector(b)) = (pa, pb)
    {
        let la: Vec<_> = a.iter().map(|x| &x.0).collect();
        let lb: Vec<_> = b.iter().map(|x| &x.0).collect();
        let allowed = |(names, desc): (Vec<String>, bool)| natsort::same_order_where_defined(&la, &lb, &names, desc);
        let same_series = {
            let (mut x, mut y) = (la.clone(), lb.clone());
            x.sort();
            y.sort();
            x == y
        };
        // Other series (a nested limitk's choice) were accepted above.
        if same_series && la != lb && !e.sort_by_label_args().is_some_and(allowed) {
            d = Some("    sort_by_label order differs".into());
        }
    }
    if d.is_none() {
        d = compare::format_diff(&pair.prom.1, &pair.cairn.1).map(|f| format!("    values written differently:\n{f}"));
    }
    if d.is_none() {
        let notes = |body: &str| {
            let (w, i) = compare::annotations(body);
            (notes_compared(w), notes_compared(i))
        };
        let ((mut pw, mut pi), (mut cw, mut ci)) = (notes(&pair.prom.1), notes(&pair.cairn.1));
        if e.has_choice() && !matches!(outer, Some(("topk" | "bottomk" | "limitk", _))) {
            // A nested choice's notes are as undefined as its values: an info
            // can name the series chosen (`rate(limitk(1, x)[5m:])`), a
            // warning hold a number of it (a quantile). They are compared
            // only where both chose alike, and then without numbers.
            if compare::diff(pa, pb, order).is_some() {
                return None;
            }
            for list in [&mut pw, &mut pi, &mut cw, &mut ci] {
                *list = list.iter().map(|n| numbers_masked(n)).collect();
            }
        }
        if pw != cw && (e.has_libm() || e.sums_across_series()) && notes_close(&pw, &cw) {
            // A number computed by the math library, or summed across
            // series in storage order, in the last place.
            cw = pw.clone();
        }
        if pw != cw {
            d = Some(format!("    warnings: prometheus {pw:?}\n              cairn {cw:?}"));
        } else if pi != ci {
            d = Some(format!("    infos: prometheus {pi:?}\n           cairn {ci:?}"));
        }
    }
    d
}

/// Whether `a` failed with an error that which series meet decides: the
/// duplicate label set, or a match group's duplicates.
fn choice_error(a: &Answer) -> bool {
    matches!(a, Answer::Error { message, .. } if message == "vector cannot contain metrics with the same labelset"
        || message.starts_with("found duplicate series for the match group")
        || message.starts_with("multiple matches for labels"))
}

/// `note`'s words, numbers written as `#`.
fn numbers_masked(note: &str) -> String {
    note.split(' ')
        .map(|w| {
            let w = w.trim_end_matches(',');
            if w.parse::<f64>().is_ok() { "#" } else { w }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The same notes but for numbers within 1e-9 of each other, relative.
fn notes_close(a: &[String], b: &[String]) -> bool {
    let words = |n: &String| {
        n.split(' ')
            .map(|w| w.trim_end_matches(',').to_string())
            .collect::<Vec<_>>()
    };
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            let (x, y) = (words(x), words(y));
            x.len() == y.len()
                && x.iter()
                    .zip(&y)
                    .all(|(p, q)| match (p.parse::<f64>(), q.parse::<f64>()) {
                        (Ok(u), Ok(v)) => u == v || (u - v).abs() <= 1e-9 * u.abs().max(v.abs()),
                        _ => p == q,
                    })
        })
}

/// Prometheus' comparison of label values in `sort_by_label`: the natural
/// sort of github.com/facette/natsort (the version Prometheus 3.14 pins),
/// which says neither of some different values comes first (an empty value
/// and any other; `01` and `1` as last runs). Prometheus' order of such
/// series follows the order its storage returns them in, so only the pairs
/// it orders are compared.
mod natsort {
    use std::cmp::Ordering;

    use crate::differential::compare::Labels;

    /// natsort's `Compare`: whether `a` comes before `b`.
    fn precedes(a: &str, b: &str) -> bool {
        let (x, y) = (runs(a), runs(b));
        for (i, p) in x.iter().enumerate() {
            let Some(q) = y.get(i) else { return false };
            let (last_x, last_y) = (i + 1 == x.len(), i + 1 == y.len());
            let same = match (p.parse::<i64>(), q.parse::<i64>()) {
                (Ok(m), Ok(n)) if m != n => return m < n,
                (Ok(_), Ok(_)) => true,
                _ => p == q,
            };
            if !same {
                return p < q;
            }
            if last_x {
                return true;
            }
            if last_y {
                return false;
            }
        }
        false
    }

    fn runs(s: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut rest = s;
        while let Some(first) = rest.bytes().next() {
            let digits = first.is_ascii_digit();
            let end = rest
                .bytes()
                .position(|b| b.is_ascii_digit() != digits)
                .unwrap_or(rest.len());
            out.push(&rest[..end]);
            rest = &rest[end..];
        }
        out
    }

    /// Prometheus' comparison of two series by `names` (then by all their
    /// labels); `None` where it is not an order (each comes first).
    fn order(a: &Labels, b: &Labels, names: &[String], desc: bool) -> Option<Ordering> {
        let get = |l: &Labels, n: &str| l.get(n).cloned().unwrap_or_default();
        for n in names {
            let (x, y) = (get(a, n), get(b, n));
            if x == y {
                continue;
            }
            return match (precedes(&x, &y), precedes(&y, &x)) {
                (true, false) => Some(if desc { Ordering::Greater } else { Ordering::Less }),
                (false, true) => Some(if desc { Ordering::Less } else { Ordering::Greater }),
                _ => None,
            };
        }
        let o = a.cmp(b);
        Some(if desc { o.reverse() } else { o })
    }

    /// Whether Cairn's answer `b` may differ from Prometheus' `a` (the same
    /// series in another order): where Prometheus' comparison is not an
    /// order for some two series, its sort (Go's pdqsort) may leave even
    /// series it orders in either order, so `b` need only hold every two
    /// series it orders in that order; where it is, `a` is the one answer.
    pub fn same_order_where_defined(a: &[&Labels], b: &[&Labels], names: &[String], desc: bool) -> bool {
        let pairs = |list: &[&Labels]| -> Vec<Option<Ordering>> {
            let mut out = Vec::new();
            for (i, x) in list.iter().enumerate() {
                for y in &list[i + 1..] {
                    out.push(order(x, y, names, desc));
                }
            }
            out
        };
        pairs(a).contains(&None) && pairs(b).iter().all(|o| *o != Some(Ordering::Greater))
    }
}

/// The same series at the same times (values aside).
fn same_points(a: &Answer, b: &Answer) -> bool {
    match (servers::points_by_time(a), servers::points_by_time(b)) {
        (Some(x), Some(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(&y)
                    .all(|((ta, sa), (tb, sb))| ta == tb && sa.keys().eq(sb.keys()))
        }
        _ => matches!((a, b), (Answer::Scalar(ta, _), Answer::Scalar(tb, _)) if ta == tb),
    }
}

/// Both fail with the same errorType, or both answer the same type.
fn shape_diff(a: &Answer, b: &Answer) -> Option<String> {
    let kind = |x: &Answer| match x {
        Answer::Error { error_type, .. } => format!("error {error_type}"),
        Answer::Scalar(..) => "scalar".into(),
        Answer::String(_) => "string".into(),
        Answer::Vector(_) => "vector".into(),
        Answer::Matrix(_) => "matrix".into(),
    };
    (kind(a) != kind(b)).then(|| format!("    prometheus: {}, cairn: {}", kind(a), kind(b)))
}

/// Annotations as compared: without the ` (line:col)` position Cairn finds
/// by searching the query text, and without the warning that a sort is
/// ineffective in a range query, which Prometheus decides per step-invariant
/// part and subquery (both documented).
fn notes_compared(list: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = list
        .into_iter()
        .filter(|n| !n.contains("sort is ineffective for range queries"))
        .map(|n| match n.rsplit_once(" (") {
            Some((head, tail))
                if tail.ends_with(')') && tail[..tail.len() - 1].split(':').all(|p| p.parse::<u32>().is_ok()) =>
            {
                head.to_string()
            }
            _ => n,
        })
        .collect();
    out.dedup();
    out
}

fn brief_body(body: &str) -> String {
    let mut s: String = body.chars().take(600).collect();
    if body.len() > 600 {
        s.push_str("...");
    }
    s
}

#[test]
fn generated_queries_match_prometheus() {
    let Some(prom_bin) = prometheus_binary() else { return };
    assert!(major_version(&prom_bin) >= 3, "the generator needs Prometheus 3");
    let trace_path = Path::new(cairn_bench::DEFAULT_TRACE);
    if !trace_path.exists() {
        if in_ci() {
            panic!("benchmark trace {} missing but CI is set", trace_path.display());
        }
        println!("SKIPPED: benchmark trace {} missing", trace_path.display());
        return;
    }
    let soak_secs: Option<u64> = std::env::var("CAIRN_QGEN_SECS").ok().and_then(|s| s.parse().ok());
    let run_seed: u64 = match std::env::var("CAIRN_QGEN_SEED").ok() {
        Some(s) => s.parse().expect("CAIRN_QGEN_SEED is a u64"),
        None if soak_secs.is_some() => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1),
        None => CI_SEED,
    };
    let count: u64 = std::env::var("CAIRN_QGEN_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if soak_secs.is_some() { u64::MAX } else { QGEN_COUNT });

    // CAIRN_QGEN_PRINT=<n>: only print the run's first n expressions.
    if let Some(n) = std::env::var("CAIRN_QGEN_PRINT")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        for i in 0..n {
            let seed = expr_seed(run_seed, i);
            println!("{seed:>20}  {}", r#gen::generate(seed));
        }
        return;
    }
    let t0 = Instant::now();
    let trace = Arc::new(cairn_bench::trace::Trace::load(trace_path).expect("load trace"));
    let dataset = data::build(trace, now_ms());
    let prom = Prometheus::start(
        &prom_bin,
        "global:\n  scrape_interval: 15s\n",
        &[
            "--web.enable-remote-write-receiver",
            "--log.level=warn",
            "--enable-feature=promql-experimental-functions",
        ],
    );
    let cairn = Server::start();
    let http = http_client(Duration::from_secs(60));
    servers::write_all(&http, &prom, &dataset.requests(), &[&cairn.client()]);
    println!(
        "loaded {} series into both servers in {:.1}s",
        dataset.series.len(),
        t0.elapsed().as_secs_f64()
    );
    let peers = Peers {
        http,
        prom: prom.url(),
        cairn: cairn.url(),
        evals: evaluations(&dataset),
        origin_ms: dataset.end_ms,
        errors_both: Default::default(),
    };

    let t1 = Instant::now();
    let deadline = soak_secs.map(|s| t1 + Duration::from_secs(s));
    if let Ok(qs) = std::env::var("CAIRN_QGEN_EXPR") {
        // Expressions by hand, one a line: both answers at every evaluation.
        for q in qs.lines().filter(|q| !q.trim().is_empty()) {
            println!("=== {q}");
            for ev in &peers.evals {
                let pair = peers.ask(q, ev);
                println!(
                    "{}\n  prometheus: {}\n  cairn:      {}",
                    ev.describe(peers.origin_ms),
                    pair.prom.1,
                    pair.cairn.1
                );
            }
        }
        return;
    }
    let mut found: Vec<String> = Vec::new();
    let mut shrunk_seen = std::collections::BTreeSet::new();
    let mut asked = 0u64;
    let mut i = 0u64;
    while i < count && deadline.is_none_or(|d| Instant::now() < d) {
        let seed = expr_seed(run_seed, i);
        i += 1;
        let e = r#gen::generate(seed);
        asked += 1;
        let Some((at, d, pair)) = peers.first_difference(&e, None) else {
            continue;
        };
        let report = if found.len() < MAX_SHRUNK {
            let (small, tried) = peers.shrink(&e, at);
            let text = small.to_string();
            if !shrunk_seen.insert(text.clone()) {
                found.push(format!(
                    "seed {seed}: {e}\n  shrinks to an expression reported above: {text}"
                ));
                continue;
            }
            let (_, sd, sp) = peers
                .first_difference(&small, Some(at))
                .unwrap_or((at, d.clone(), pair));
            let sd = if sd.ends_with('\n') { sd } else { format!("{sd}\n") };
            format!(
                "seed {seed} ({}):\n  original: {e}\n  shrunk ({tried} tries): {text}\n{sd}  prometheus: {}\n  cairn:      {}",
                peers.evals[at].describe(peers.origin_ms),
                brief_body(&sp.prom.1),
                brief_body(&sp.cairn.1)
            )
        } else {
            format!(
                "seed {seed} ({}): {e}\n{}",
                d.trim_end(),
                peers.evals[at].describe(peers.origin_ms)
            )
        };
        println!("--- {report}");
        found.push(report);
    }
    let (errors_both, invalid_both) = peers.errors_both.get();
    let mut report = String::new();
    let _ = writeln!(
        report,
        "\n=== PromQL generator: run seed {run_seed}, {asked} expressions x {} evaluations in {:.1}s; \
         {errors_both} evaluations failed in both ({invalid_both} as bad_data); {} differences ===",
        peers.evals.len(),
        t1.elapsed().as_secs_f64(),
        found.len()
    );
    for f in &found {
        let _ = writeln!(report, "--- {f}");
    }
    println!("{report}");
    assert!(
        found.is_empty(),
        "{} generated expressions differ from Prometheus (see above)",
        found.len()
    );
}
