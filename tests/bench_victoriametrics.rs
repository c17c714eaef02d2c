//! `cairn bench run` end to end against real targets: Debian's
//! `victoria-metrics` (installed by scripts/test.sh) and a started `cairn`.
//! Proves zero lost samples: what the bench reports as delivered equals the
//! number of samples the target exports afterwards, series by series count.
//!
//! Without `victoria-metrics` the VictoriaMetrics test is skipped with a
//! printed reason, or fails when `CI` is set.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

/// Runs `cairn bench run --backfill` and returns its JSON report.
fn bench(base: &str, extra: &[&str]) -> Value {
    let out_dir = tempfile::tempdir().expect("tempdir");
    let report = out_dir.path().join("report.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cairn"));
    cmd.args([
        "bench",
        "run",
        "--write-url",
        &format!("{base}/api/v1/write"),
        "--query-url",
        base,
        "--targets",
        "6",
        "--replicas",
        "2",
        "--churn",
        "50",
        "--churn-interval",
        "10m",
        "--backfill",
        "30m",
        "--query-interval",
        "1s",
        "--quiet",
        "--report-json",
    ])
    .arg(&report)
    .args(extra);
    let out = cmd.output().expect("run cairn bench");
    assert!(
        out.status.success(),
        "cairn bench failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains("samples/s delivered"), "summary table: {summary}");
    serde_json::from_slice(&std::fs::read(&report).expect("report written")).expect("report is JSON")
}

/// Total samples and distinct series the target exports for the bench's job.
fn exported(base: &str) -> (u64, usize) {
    let http = crate::common::http_client(Duration::from_secs(120));
    let body = http
        .get(format!("{base}/api/v1/export"))
        .query(&[("match[]", r#"{job="node_exporter"}"#)])
        .send()
        .expect("export")
        .text()
        .expect("export body");
    let mut samples = 0u64;
    let mut series = 0usize;
    for line in body.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("export line is JSON");
        let n = v["values"].as_array().expect("values").len();
        assert_eq!(n, v["timestamps"].as_array().expect("timestamps").len());
        samples += n as u64;
        series += 1;
    }
    (samples, series)
}

fn assert_nothing_lost(report: &Value, base: &str) {
    let delivered = report["samples_delivered"].as_u64().expect("samples_delivered");
    let generated = report["samples_generated"].as_u64().expect("samples_generated");
    assert_eq!(report["samples_failed"], 0, "errors: {}", report["errors"]);
    assert_eq!(report["requests_rejected"], 0);
    assert_eq!(delivered, generated);
    // 6 targets x 507 series x 2 replicas x 120 scrapes (30 min at 15 s).
    assert_eq!(delivered, 6 * 507 * 2 * 120);
    let (samples, series) = exported(base);
    assert_eq!(
        samples, delivered,
        "target stores exactly what the bench says it delivered"
    );
    // Half the targets get a new identity at 10 and 20 minutes: 3 generations of 3 targets
    // and 2 of the other 3 before the window wraps (50% of 6 = 3 per generation).
    assert!(series > 6 * 507 * 2, "churn adds series: {series}");
    assert_eq!(series % (507 * 2), 0, "whole targets x replicas: {series}");
    // The read load ran: every embedded rule was evaluated at least once without errors.
    let queries = report["queries"].as_array().expect("queries");
    assert_eq!(queries.len(), 35);
    assert!(queries.iter().all(|q| q["errors"] == 0), "query errors: {queries:?}");
    assert!(queries.iter().all(|q| q["count"].as_u64() >= Some(1)));
}

#[test]
fn bench_backfill_into_victoriametrics_loses_nothing() {
    let Some(bin) = crate::common::peers::require("victoria-metrics", "victoria-metrics") else {
        return;
    };
    let vm = crate::common::peers::VictoriaMetrics::start(&bin, &[]);
    let base = format!("http://127.0.0.1:{}", vm.port);
    let report = bench(
        &base,
        &["--name", "victoriametrics", "--pid", &vm.child.id().to_string()],
    );
    let http = crate::common::http_client(Duration::from_secs(30));
    let flushed = http
        .get(format!("{base}/internal/force_flush"))
        .send()
        .expect("force_flush");
    assert!(flushed.status().is_success());
    assert_nothing_lost(&report, &base);
    assert!(report["target"]["rss_peak_bytes"].as_u64().is_some_and(|r| r > 0));
}

#[test]
fn bench_backfill_into_cairn_loses_nothing() {
    let server = crate::common::Server::start();
    let base = server.url();
    let report = bench(
        &base,
        &[
            "--name",
            "cairn",
            "--pid",
            &server.pid().to_string(),
            "--data-dir",
            &server.data_dir.display().to_string(),
        ],
    );
    assert_nothing_lost(&report, &base);
    assert!(report["target"]["disk_last_bytes"].as_u64().is_some_and(|d| d > 0));
    // The count a fault run reads back afterwards is the same count.
    let client = cairn_bench::query::QueryClient::new(&base, Default::default()).expect("client");
    let span = &report["workload"];
    let (start, end) = (
        span["data_start_ms"].as_i64().unwrap(),
        span["data_end_ms"].as_i64().unwrap(),
    );
    assert_eq!(client.samples_stored(start, end).expect("count"), 6 * 507 * 2 * 120);
    assert_eq!(client.samples_stored(end + 60_000, end + 120_000).expect("count"), 0);
}

/// The same backfill over remote write 2.0 (Cairn accepts it; VictoriaMetrics
/// 1.79 predates it).
#[test]
fn bench_backfill_over_remote_write_2_into_cairn_loses_nothing() {
    let server = crate::common::Server::start();
    let base = server.url();
    let report = bench(&base, &["--name", "cairn", "--remote-write-protocol", "2.0"]);
    assert_eq!(report["workload"]["remote_write_protocol"], "2.0");
    assert_nothing_lost(&report, &base);
    let client = server.client();
    assert_eq!(
        client.metric(r#"cairn_ingest_samples_total{protocol="remote_write_2"}"#),
        Some(6.0 * 507.0 * 2.0 * 120.0)
    );
}

/// Runs a real-time `cairn bench run` ramp (5 s scrapes) writing to
/// `write_url`: its summary and its JSON report.
fn ramp(write_url: &str, extra: &[&str]) -> (String, Value) {
    let out_dir = tempfile::tempdir().expect("tempdir");
    let report = out_dir.path().join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["bench", "run", "--write-url", write_url, "--scrape-interval", "5s"])
        .args(extra)
        .args(["--quiet", "--report-json"])
        .arg(&report)
        .output()
        .expect("run cairn bench");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = serde_json::from_slice(&std::fs::read(&report).expect("report")).expect("JSON");
    (stdout, report)
}

/// A real-time ramp against a started `cairn`: each stage reports what it
/// delivered and whether the system kept up, and the run the largest load
/// it kept up with.
#[test]
fn bench_ramp_reports_each_stage_against_cairn() {
    let server = crate::common::Server::start();
    let write_url = format!("{}/api/v1/write", server.url());
    let (stdout, report) = ramp(&write_url, &["--stages", "2:10s,4:10s"]);
    assert!(stdout.contains("kept up with"), "summary: {stdout}");
    let stages = report["stages"].as_array().expect("stages");
    let figure = |i: usize, k: &str| stages[i][k].as_u64().unwrap_or_else(|| panic!("{k}: {report}"));
    assert_eq!(stages.len(), 2);
    assert_eq!((figure(0, "targets"), figure(1, "targets")), (2, 4));
    assert!(stages.iter().all(|s| s["kept_up"] == true), "{report}");
    assert_eq!(report["capacity_targets"], 4);
    // Every delivery is counted in one stage, and twice the targets deliver more.
    assert_eq!(
        figure(0, "samples_delivered") + figure(1, "samples_delivered"),
        report["samples_delivered"].as_u64().unwrap()
    );
    assert!(
        figure(1, "samples_delivered") > figure(0, "samples_delivered"),
        "{report}"
    );
}

/// `--stop-when-behind` ends a ramp at the first stage not kept up with:
/// here every write is refused, so the first stage fails and the next never runs.
#[test]
fn bench_ramp_stops_at_the_first_stage_not_kept_up_with() {
    let server = crate::common::Server::start();
    // A GET-only endpoint: every write gets a 405, which is not retried.
    let refused = format!("{}/api/v1/status/buildinfo", server.url());
    let (stdout, report) = ramp(&refused, &["--stages", "2:20s,4:20s", "--stop-when-behind"]);
    assert!(stdout.contains("not run"), "summary: {stdout}");
    let stages = report["stages"].as_array().expect("stages");
    assert_eq!(stages[0]["ran"], true, "{report}");
    assert_eq!(stages[0]["kept_up"], false, "{report}");
    assert!(stages[0]["samples_failed"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(stages[1]["ran"], false, "{report}");
    assert!(report["capacity_targets"].is_null(), "{report}");
    assert!(report["elapsed_s"].as_f64().unwrap() < 30.0, "{report}");
}
