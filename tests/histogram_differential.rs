//! Differential test of native histograms against Prometheus 3.14
//! (`../shared/peers/`), the oracle: the same histograms (four exponential
//! schemas, custom buckets of two layouts, a gauge histogram, a series that
//! turns from floats to histograms; resets, a gap, a staleness marker;
//! tests/differential/histogram_data.rs) are remote-written to both, then
//! every query of tests/differential/histogram_queries.txt runs on both as
//! instant queries at three times and as range queries with three steps.
//! Answers must be equal (exact bucket layouts and boundary rules; values
//! and bounds within 1e-9 relative) and so must the warnings and infos,
//! except for the evaluations [`KNOWN_DIFFERENCES`] names, where Prometheus'
//! answer depends on how its chunks store the data
//! (docs/native-histograms.md); those must differ, so the list stays true.
//!
//! Without the Prometheus binary the test prints `SKIPPED` and passes,
//! unless `CI` is set, where that is a failure.

use crate::differential::compare;
use crate::differential::histogram_data;
use crate::differential::histogram_wire;

use std::fmt::Write as _;
use std::time::Duration;

use crate::common::peers::{Prometheus, in_ci, prometheus_3};
use crate::common::*;

const QUERIES: &str = include_str!("differential/histogram_queries.txt");
const MIN_QUERIES: usize = 100;

/// `(query, evaluation)` pairs whose answers differ from Prometheus' for a
/// reason docs/native-histograms.md explains.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    // Prometheus reads the first sample back with the empty negative
    // buckets its chunk gained from later samples, so the zero bucket keeps
    // its negative half.
    (
        "histogram_fraction(0, 0.1, rpc_seconds)",
        "range end-3599s..end+300s step 217s",
    ),
];

/// One evaluation: the API path, the parameters besides `query`, and a
/// description.
type Evaluation = (&'static str, Vec<(&'static str, String)>, String);

fn evaluations(d: &histogram_data::Dataset) -> Vec<Evaluation> {
    let (s, e) = (d.start_ms, d.end_ms);
    let instant = |t: i64| {
        (
            "/api/v1/query",
            vec![("time", ms_to_param(t))],
            format!("instant at end{:+}s", (t - e) / 1000),
        )
    };
    let range = |a: i64, b: i64, step: i64| {
        (
            "/api/v1/query_range",
            vec![
                ("start", ms_to_param(a)),
                ("end", ms_to_param(b)),
                ("step", ms_to_param(step)),
            ],
            format!(
                "range end{:+}s..end{:+}s step {}s",
                (a - e) / 1000,
                (b - e) / 1000,
                step / 1000
            ),
        )
    };
    vec![
        instant(e + 60_500),
        // In svc="c"'s gap and just after its staleness marker.
        instant(s + 112 * histogram_data::INTERVAL_MS + 500),
        instant(s + 181 * histogram_data::INTERVAL_MS + 500),
        range(s + 300_500, e + 60_500, 60_000),
        range(s + 500, e + 300_500, 217_000),
        range(e - 1_199_500, e + 500, 15_000),
    ]
}

#[test]
fn native_histograms_answer_as_prometheus_does() {
    let Some(prom_bin) = prometheus_3() else {
        assert!(!in_ci(), "Prometheus 3.14 (../shared/peers) is needed when CI is set");
        println!("SKIPPED: Prometheus 3.14 not in ../shared/peers; set CI=true to make this a failure");
        return;
    };
    let cairn = Server::start();
    let mut prom = Prometheus::start(
        &prom_bin,
        "global:\n  scrape_interval: 1m\n",
        &["--web.enable-remote-write-receiver"],
    );
    let http = http_client(Duration::from_secs(30));

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64;
    let data = histogram_data::build(now);
    let body = histogram_wire::write_request(&data.series);
    for base in [prom.url(), cairn.url()] {
        let r = http
            .post(format!("{base}/api/v1/write"))
            .header("Content-Encoding", "snappy")
            .header("Content-Type", "application/x-protobuf")
            .header("X-Prometheus-Remote-Write-Version", "0.1.0")
            .body(body.clone())
            .send()
            .expect("write");
        let status = r.status().as_u16();
        assert!(
            status == 204 || status == 200,
            "{base}: {status} {}",
            r.text().unwrap_or_default()
        );
    }

    let queries: Vec<&str> = QUERIES
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(queries.len() >= MIN_QUERIES, "only {} queries", queries.len());
    let evals = evaluations(&data);
    let (mut compared, mut differences, mut known) = (0, Vec::new(), Vec::new());
    for q in &queries {
        for (path, params, what) in &evals {
            let mut form = params.clone();
            form.push(("query", q.to_string()));
            let ask = |base: &str| {
                let r = http.post(format!("{base}{path}")).form(&form).send().expect("query");
                let status = r.status().as_u16();
                let body = r.text().unwrap_or_default();
                (compare::parse(status, &body), compare::annotations(&body))
            };
            let (want, want_notes) = ask(&prom.url());
            let (got, got_notes) = ask(&cairn.url());
            compared += 1;
            let mut diff = compare::diff(&want, &got, compare::Order::None).unwrap_or_default();
            if want_notes != got_notes {
                let _ = writeln!(
                    diff,
                    "    annotations: prometheus {want_notes:?}\n           cairn {got_notes:?}"
                );
            }
            let expected = KNOWN_DIFFERENCES.contains(&(*q, what.as_str()));
            match (diff.is_empty(), expected) {
                (false, false) => differences.push(format!("{q}  ({what})\n{diff}")),
                (true, true) => differences.push(format!("{q}  ({what})\n    equal, but listed as a known difference")),
                (false, true) => known.push(format!("{q}  ({what})")),
                (true, false) => {}
            }
        }
    }
    prom.assert_running();
    println!(
        "native histograms: {} queries, {compared} evaluations, {} equal, {} known differences, {} unexplained",
        queries.len(),
        compared - differences.len() - known.len(),
        known.len(),
        differences.len()
    );
    assert!(
        differences.is_empty(),
        "{} of {compared} evaluations differ from Prometheus 3.14:\n{}",
        differences.len(),
        differences.join("\n")
    );
}
