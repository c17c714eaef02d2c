//! A real sender of native histograms: Prometheus 3.14 (`../shared/peers/`)
//! scrapes a target that Prometheus' own Go client library serves in the
//! protobuf exposition (`tests/histogram_exporter`, built here with `go`),
//! and remote-writes to two Cairns, one with remote write 1.0 and one with
//! 2.0. What each Cairn stored must equal what Prometheus stored: every
//! sample, float or histogram, of the exporter's series, over the span all
//! three have. The histogram series are listed by `/api/v1/series`, counted
//! by `/api/v1/status/tsdb`, and typed `histogram` by `/api/v1/metadata`
//! from the metadata Prometheus sends with remote write 1.0.
//!
//! Without `go` or the Prometheus binary the test prints `SKIPPED` and
//! passes, unless `CI` is set, where that is a failure.

use crate::differential::compare;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::peers::{Prometheus, in_ci, prometheus_3};
use crate::common::*;

/// The exporter process, killed when dropped.
struct Exporter {
    child: Child,
    port: u16,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Builds `tests/histogram_exporter` into `dir`; `None` without `go`.
fn build_exporter(dir: &Path) -> Option<PathBuf> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/histogram_exporter");
    let bin = dir.join("histogram_exporter");
    let status = Command::new("go")
        .arg("build")
        .arg("-o")
        .arg(&bin)
        .arg(".")
        .current_dir(&source)
        .status()
        .ok()?;
    assert!(status.success(), "go build of {} failed", source.display());
    Some(bin)
}

fn start_exporter(bin: &Path) -> Exporter {
    let mut child = Command::new(bin)
        .arg("--listen=127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the exporter");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("exporter port");
    let port = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("exporter printed {line:?}"));
    Exporter { child, port }
}

/// Every sample of the exporter's series in the 10 minutes up to `time`.
fn stored(http: &reqwest::blocking::Client, base: &str, time_ms: i64) -> compare::Answer {
    let r = http
        .get(format!("{base}/api/v1/query"))
        .query(&[
            ("query", r#"{__name__=~"test_.+"}[10m]"#),
            ("time", &ms_to_param(time_ms)),
        ])
        .send()
        .expect("query");
    let status = r.status().as_u16();
    compare::parse(status, &r.text().expect("body"))
}

fn histogram_samples(a: &compare::Answer) -> usize {
    match a {
        compare::Answer::Matrix(m) => m
            .iter()
            .flat_map(|(_, pts)| pts)
            .filter(|(_, p)| matches!(p, compare::Point::Histogram(_)))
            .count(),
        _ => 0,
    }
}

#[test]
fn prometheus_scraping_native_histograms_writes_what_it_stores() {
    let tools = tempfile::tempdir().expect("tempdir");
    let (Some(prom_bin), Some(exporter_bin)) = (prometheus_3(), build_exporter(tools.path())) else {
        assert!(
            !in_ci(),
            "Prometheus 3.14 (../shared/peers) and go are needed when CI is set"
        );
        println!("SKIPPED: needs Prometheus 3.14 in ../shared/peers and go; set CI=true to make this a failure");
        return;
    };
    let exporter = start_exporter(&exporter_bin);
    let v1 = Server::start();
    let v2 = Server::start();
    let config = |_: u16| {
        let queue =
            "    queue_config:\n      batch_send_deadline: 200ms\n      min_backoff: 50ms\n      max_backoff: 500ms\n";
        format!(
            r#"global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: histograms
    scrape_native_histograms: true
    static_configs:
      - targets: ["127.0.0.1:{exporter}"]
remote_write:
  - url: "http://127.0.0.1:{v1}/api/v1/write"
    send_native_histograms: true
    metadata_config:
      send_interval: 2s
{queue}  - url: "http://127.0.0.1:{v2}/api/v1/write"
    protobuf_message: io.prometheus.write.v2.Request
    send_native_histograms: true
{queue}"#,
            exporter = exporter.port,
            v1 = v1.port,
            v2 = v2.port,
        )
    };
    let mut prom = Prometheus::start_on_port(&prom_bin, config, &["--log.level=info"]);
    let http = http_client(Duration::from_secs(10));

    // Let Prometheus scrape a while, then compare up to a time a little in
    // the past, until the remote writes have caught up with it.
    let started = Instant::now();
    let (time_ms, expected) = loop {
        std::thread::sleep(Duration::from_secs(1));
        let time_ms = now_ms() - 2_000;
        let expected = stored(&http, &prom.url(), time_ms);
        // Four histogram series, five scrapes each.
        if histogram_samples(&expected) >= 20 {
            break (time_ms, expected);
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "Prometheus stored too few histograms: {expected:?}\n{}",
            prom.log()
        );
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    for (name, cairn) in [("remote write 1.0", &v1), ("remote write 2.0", &v2)] {
        loop {
            let got = stored(&http, &cairn.url(), time_ms);
            let Some(diff) = compare::diff(&expected, &got, compare::Order::None) else {
                println!("{name}: {} histogram samples equal", histogram_samples(&got));
                break;
            };
            if Instant::now() > deadline {
                prom.assert_running();
                panic!(
                    "{name}: Cairn's samples differ from Prometheus':\n{diff}\n{}",
                    cairn.log()
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        let c = cairn.client();
        let series = c.series(&["test_request_duration_seconds"]);
        assert_eq!(series.len(), 2, "{name}: {series:?}");
        let status = c.get("/api/v1/status/tsdb").json();
        let counted = status["data"]["seriesCountByMetricName"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["name"] == "test_request_duration_seconds")
            .map(|m| m["value"].clone());
        assert_eq!(counted, Some(serde_json::json!(2)), "{name}: {status}");
    }
    // Remote write 1.0 sends metadata in requests of its own (2.0 sends it
    // with the series only when Prometheus keeps it in its WAL, a feature
    // flag).
    let deadline = Instant::now() + Duration::from_secs(30);
    for cairn in [&v1] {
        loop {
            let m = cairn
                .client()
                .get("/api/v1/metadata?metric=test_request_duration_seconds")
                .json();
            if m["data"]["test_request_duration_seconds"][0]["type"] == "histogram" {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no histogram metadata in {}: {m}",
                cairn.url()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64
}
