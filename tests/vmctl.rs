//! A real migration client: `vmctl` (Debian's `victoria-metrics` package)
//! migrates a Prometheus snapshot into Cairn through `/api/v1/import` (JSON
//! lines, gzip, bare `NaN`/`Inf` tokens), after checking `/health`. The
//! snapshot is built by `promtool tsdb create-blocks-from openmetrics` (Debian's
//! `prometheus` package) from samples this test knows, so Cairn's export must
//! hold exactly those samples afterwards; then the export is re-imported into
//! a second Cairn and must export byte for byte the same.
//!
//! Without `vmctl` or `promtool` the test prints `SKIPPED` and passes, unless
//! `CI` is set (`scripts/test.sh` installs both), where that is a failure.
//!
//! vmctl's Prometheus reader (1.x as Debian ships it) sometimes finishes
//! before it has read every block, against VictoriaMetrics just the same; it
//! then reports fewer "total samples". Imports are idempotent, so the test
//! reruns vmctl until it reports every sample sent.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::peers::{binary, in_ci};
use crate::common::*;

type Expected = BTreeMap<BTreeMap<String, String>, Vec<(i64, f64)>>;

/// An OpenMetrics file with counters, gauges, escaped label values and the
/// special values, two hours up to a minute ago (two blocks); and the
/// samples it holds.
fn openmetrics(now_s: i64) -> (String, Expected) {
    let mut text = String::from("# HELP requests Requests.\n# TYPE requests counter\n");
    let mut expected = Expected::new();
    let start = now_s - 2 * 3600;
    for (code, step) in [("200", 10.0), ("500", 0.5)] {
        let labels = lmap(&[("__name__", "requests_total"), ("code", code), ("job", "api")]);
        for i in 0..120 {
            let t = start + i * 60;
            let v = i as f64 * step;
            text.push_str(&format!("requests_total{{code=\"{code}\",job=\"api\"}} {v} {t}\n"));
            expected.entry(labels.clone()).or_default().push((t * 1000, v));
        }
    }
    text.push_str("# TYPE temp gauge\n");
    let labels = lmap(&[("__name__", "temp"), ("note", "a \"quoted\" \\ value"), ("room", "b 1")]);
    let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e-300, -0.5, 0.1 + 0.2];
    for i in 0..120 {
        let t = start + i * 60;
        let v = specials.get(i as usize).copied().unwrap_or(20.0 + i as f64 * 0.25);
        let shown = if v.is_nan() {
            "NaN".to_string()
        } else if v.is_infinite() {
            if v > 0.0 { "+Inf".into() } else { "-Inf".into() }
        } else {
            format!("{v:?}")
        };
        text.push_str(&format!(
            "temp{{room=\"b 1\",note=\"a \\\"quoted\\\" \\\\ value\"}} {shown} {t}\n"
        ));
        expected.entry(labels.clone()).or_default().push((t * 1000, v));
    }
    text.push_str("# EOF\n");
    (text, expected)
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed: {text}");
    text
}

/// Runs vmctl under a pseudo-terminal (`script`): without one it refuses
/// to start, failing to size its progress bar.
fn vmctl(vmctl: &Path, snapshot: &Path, addr: &str) -> String {
    let cmd = format!(
        "{} prometheus -s --vm-disable-progress-bar --prom-snapshot={} --vm-addr={addr}",
        vmctl.display(),
        snapshot.display()
    );
    run(Command::new("script").args(["-qec", &cmd, "/dev/null"]))
}

#[test]
fn vmctl_migrates_a_prometheus_snapshot_into_cairn() {
    let (Some(vmctl_bin), Some(promtool)) = (binary("vmctl"), binary("promtool")) else {
        assert!(
            !in_ci(),
            "vmctl or promtool missing under CI (scripts/test.sh installs them)"
        );
        println!("SKIPPED: vmctl or promtool not installed (apt-get install victoria-metrics prometheus)");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let now_s = now_ms() / 1000 - 60;
    let (text, expected) = openmetrics(now_s);
    let om = dir.path().join("data.om");
    std::fs::write(&om, text).expect("write openmetrics");
    let snapshot = dir.path().join("snapshot");
    run(Command::new(&promtool)
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&om)
        .arg(&snapshot));

    let server = Server::start();
    let total: usize = expected.values().map(Vec::len).sum();
    let mut attempts = Vec::new();
    for _ in 0..10 {
        let out = vmctl(&vmctl_bin, &snapshot, &server.url());
        let done = out.contains(&format!("total samples: {total};"));
        attempts.push(out);
        if done {
            break;
        }
    }
    let last = attempts.last().expect("one attempt");
    assert!(
        last.contains(&format!("total samples: {total};")),
        "vmctl never sent all {total} samples in {} attempts; last output:\n{last}\ncairn log:\n{}",
        attempts.len(),
        server.log()
    );

    let client = server.client();
    let exported = client.export(&["{__name__=~\".+\"}"], None);
    let got: Expected = exported
        .iter()
        .map(|e| (e.labels.clone(), e.samples.iter().map(|s| (s.t, s.v)).collect()))
        .collect();
    assert_eq!(got.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>());
    for (labels, want) in &expected {
        let have = &got[labels];
        assert_eq!(have.len(), want.len(), "{labels:?}");
        for ((t, v), (wt, wv)) in have.iter().zip(want) {
            assert_eq!(t, wt, "{labels:?}");
            assert!(
                v.to_bits() == wv.to_bits() || (v.is_nan() && wv.is_nan() && !cairn_model::is_stale_nan(*v)),
                "{labels:?} at {t}: got {v:?}, want {wv:?}"
            );
        }
    }
    let imported = client
        .metric("cairn_ingest_samples_total{protocol=\"json_lines\"}")
        .expect("json_lines ingest metric");
    assert!(
        imported >= total as f64,
        "{imported} samples counted, want at least {total}"
    );

    // The export re-imports into a second Cairn, gzipped, to the same bytes.
    let body = client.get("/api/v1/export?match[]=%7B__name__%3D~%22.%2B%22%7D").body;
    let second = Server::start();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, body.as_bytes()).expect("gzip");
    let resp = second
        .client()
        .http
        .post(format!("{}/api/v1/import", second.url()))
        .header("content-encoding", "gzip")
        .body(gz.finish().expect("gzip"))
        .send()
        .expect("import");
    assert_eq!(resp.status().as_u16(), 204, "{}", resp.text().unwrap_or_default());
    let again = second
        .client()
        .get("/api/v1/export?match[]=%7B__name__%3D~%22.%2B%22%7D")
        .body;
    assert_eq!(again, body);
}
