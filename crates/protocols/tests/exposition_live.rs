//! Real exporters, real bodies: node_exporter (Debian's
//! `prometheus-node-exporter`) and Prometheus 3.14 serve `/metrics` in the
//! text format, OpenMetrics and protobuf depending on `Accept`. Each body
//! must parse, under the format its `Content-Type` names, to the same
//! series and metadata; values are compared where they cannot change
//! between two requests.
//!
//! Neither serves OpenMetrics (both answer such a request with the text
//! format, which the test checks is recognised as such), so OpenMetrics is
//! covered by the parser's unit tests on captured bodies.
//!
//! A missing binary skips its test with a message, unless `CI` is set.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cairn_protocols::MetricType;
use cairn_protocols::exposition::{Exposition, ParseOptions, ScrapeFormat, ScrapedValue, parse};

const NODE_EXPORTER: &str = "/usr/bin/prometheus-node-exporter";
/// Prometheus 3.14 from `../shared/peers/` beside the repository.
const PROMETHEUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/peers/prometheus-3.14.0");

/// Kills the exporter when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn binary(path: &str) -> Option<PathBuf> {
    let p = Path::new(path);
    if p.exists() {
        return Some(p.to_path_buf());
    }
    assert!(std::env::var_os("CI").is_none(), "{path} is missing and CI is set");
    eprintln!("skipping: {path} is not installed");
    None
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One HTTP/1.0 GET (the server closes the connection after the body):
/// the `Content-Type` and the body.
fn get(port: u16, accept: &str) -> std::io::Result<(u16, String, Vec<u8>)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        s,
        "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: {accept}\r\nAccept-Encoding: identity\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or(std::io::ErrorKind::InvalidData)?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let content_type = head
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        })
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default();
    Ok((status, content_type, raw[split + 4..].to_vec()))
}

fn wait_ready(port: u16, child: &mut Running) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok((200, _, _)) = get(port, "text/plain") {
            return;
        }
        assert!(child.0.try_wait().unwrap().is_none(), "exporter exited early");
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("exporter on port {port} never answered");
}

/// Fetches `/metrics` asking for `want`, parses it as its `Content-Type` says.
fn scrape(port: u16, want: ScrapeFormat, opts: &ParseOptions) -> (ScrapeFormat, Exposition) {
    let (status, content_type, body) = get(port, &ScrapeFormat::accept_header(&[want])).unwrap();
    assert_eq!(status, 200);
    let format = ScrapeFormat::from_content_type(&content_type).unwrap_or_else(|| panic!("{content_type:?}"));
    let parsed = parse(format, &body, opts).unwrap_or_else(|e| panic!("{format:?}: {e}"));
    assert!(!parsed.samples.is_empty());
    (format, parsed)
}

/// Series → value (histograms as their count).
fn series(e: &Exposition) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for s in &e.samples {
        let v = match &s.value {
            ScrapedValue::Float(v) => *v,
            ScrapedValue::Histogram(h) => h.count,
        };
        assert!(s.timestamp_ms.is_none(), "{}", s.labels);
        assert!(out.insert(s.labels.to_string(), v).is_none(), "{} twice", s.labels);
    }
    out
}

/// Family → (type, help), named as OpenMetrics names counters (no `_total`).
fn metadata(e: &Exposition) -> BTreeMap<String, (MetricType, String)> {
    e.metadata
        .iter()
        .map(|m| {
            let name = match m.kind {
                MetricType::Counter => m.name.strip_suffix("_total").unwrap_or(&m.name),
                _ => &m.name,
            };
            (name.to_string(), (m.kind, m.help.clone()))
        })
        .collect()
}

/// Values that cannot change between two requests.
fn stable(name: &str) -> bool {
    name.ends_with("_info") || name.starts_with("process_max_fds") || name.contains("_build_info")
}

/// Every name in both text bodies is in `got`, and every name in `got` is in
/// one of them: the formats agree up to what changed between requests.
fn assert_bracketed(
    what: &str,
    format: &str,
    before: &BTreeSet<String>,
    after: &BTreeSet<String>,
    got: &BTreeSet<String>,
) {
    let missing: Vec<_> = before.intersection(after).filter(|k| !got.contains(*k)).collect();
    assert!(missing.is_empty(), "{format} lacks text {what}: {missing:?}");
    let extra: Vec<_> = got
        .iter()
        .filter(|k| !before.contains(*k) && !after.contains(*k))
        .collect();
    assert!(extra.is_empty(), "{format} has {what} the text format lacks: {extra:?}");
}

fn compare_formats(port: u16, serves_openmetrics: bool) {
    let text_opts = ParseOptions::default();
    let om_opts = ParseOptions {
        skip_openmetrics_created_series: true,
        ..ParseOptions::default()
    };
    let (text_format, text) = scrape(port, ScrapeFormat::PrometheusText0_0_4, &text_opts);
    assert_eq!(text_format, ScrapeFormat::PrometheusText0_0_4);
    let (om_format, om) = scrape(port, ScrapeFormat::OpenMetricsText1_0_0, &om_opts);
    if serves_openmetrics {
        assert_eq!(om_format, ScrapeFormat::OpenMetricsText1_0_0);
    }
    let (proto_format, proto) = scrape(port, ScrapeFormat::PrometheusProto, &text_opts);
    assert_eq!(proto_format, ScrapeFormat::PrometheusProto);
    // A second text body brackets the others: a series or family that
    // appears between requests (an exporter still starting up creates some
    // lazily) is in the later text body but not the earlier one.
    let (_, text_after) = scrape(port, ScrapeFormat::PrometheusText0_0_4, &text_opts);

    let (text_series, om_series, proto_series) = (series(&text), series(&om), series(&proto));
    let text_after_series = series(&text_after);
    // Series that come and go between requests (per-request gauges).
    let volatile = |k: &str| k.contains("scrape_") || k.contains("promhttp_metric_handler_requests_in_flight");
    let steady = |m: &BTreeMap<String, f64>| m.keys().filter(|k| !volatile(k)).cloned().collect::<BTreeSet<_>>();
    let (before, after) = (steady(&text_series), steady(&text_after_series));
    assert_bracketed("series", "protobuf", &before, &after, &steady(&proto_series));
    assert_bracketed("series", "OpenMetrics", &before, &after, &steady(&om_series));
    for (k, v) in &text_series {
        let name = k.split('{').next().unwrap_or_default();
        if stable(name) {
            assert_eq!(Some(v), proto_series.get(k), "{k}");
            assert_eq!(Some(v), om_series.get(k), "{k}");
        }
    }
    assert!(
        text_series
            .keys()
            .any(|k| stable(k.split('{').next().unwrap_or_default()))
    );

    let (text_md, om_md, proto_md) = (metadata(&text), metadata(&om), metadata(&proto));
    let text_after_md = metadata(&text_after);
    let families = |m: &BTreeMap<String, (MetricType, String)>| m.keys().cloned().collect::<BTreeSet<_>>();
    let (before, after) = (families(&text_md), families(&text_after_md));
    for (format, md) in [("protobuf", &proto_md), ("OpenMetrics", &om_md)] {
        assert_bracketed("families", format, &before, &after, &families(md));
        for (name, meta) in md {
            let text_meta = text_md.get(name).or_else(|| text_after_md.get(name));
            assert_eq!(text_meta, Some(meta), "{format} metadata of {name}");
        }
    }
    assert!(text_md.values().any(|(kind, _)| *kind == MetricType::Counter));
    assert!(
        text_md
            .values()
            .any(|(kind, _)| *kind == MetricType::Histogram || *kind == MetricType::Summary)
    );

    // Native histogram scraping: the histograms with a native part become
    // one sample; everything else is unchanged.
    let native_opts = ParseOptions {
        native_histograms: true,
        ..ParseOptions::default()
    };
    let (_, native) = scrape(port, ScrapeFormat::PrometheusProto, &native_opts);
    let native_count = native
        .samples
        .iter()
        .filter(|s| matches!(s.value, ScrapedValue::Histogram(_)))
        .count();
    eprintln!(
        "{} series, {} families, {native_count} native histograms",
        text_series.len(),
        text.metadata.len()
    );
    // Histograms created since the first text body (the scrapes' own
    // request histograms among them) are in a text body read after this one.
    let (_, text_latest) = scrape(port, ScrapeFormat::PrometheusText0_0_4, &text_opts);
    let text_latest_series = series(&text_latest);
    for s in &native.samples {
        if let ScrapedValue::Histogram(h) = &s.value {
            h.validate().unwrap();
            let name = s.labels.metric_name().unwrap();
            assert!(
                text_latest_series
                    .keys()
                    .any(|k| k.starts_with(&format!("{name}_count"))),
                "{name}"
            );
        }
    }
    // NHCB conversion turns every classic histogram into one sample.
    let nhcb_opts = ParseOptions {
        convert_classic_histograms_to_nhcb: true,
        ..ParseOptions::default()
    };
    let (_, converted) = scrape(port, ScrapeFormat::PrometheusText0_0_4, &nhcb_opts);
    let histograms = text.metadata.iter().filter(|m| m.kind == MetricType::Histogram).count();
    if histograms > 0 {
        assert!(
            converted
                .samples
                .iter()
                .any(|s| matches!(s.value, ScrapedValue::Histogram(_)))
        );
        assert!(!converted.samples.iter().any(|s| {
            s.labels.get("le").is_some()
                && text.metadata.iter().any(|m| {
                    m.kind == MetricType::Histogram && s.labels.metric_name() == Some(&format!("{}_bucket", m.name))
                })
        }));
    }
}

#[test]
fn node_exporter_formats_agree() {
    let Some(bin) = binary(NODE_EXPORTER) else {
        return;
    };
    let port = free_port();
    let mut child = Running(
        Command::new(bin)
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_ready(port, &mut child);
    // node_exporter 1.5 answers OpenMetrics requests with the text format.
    compare_formats(port, false);
}

#[test]
fn prometheus_formats_agree() {
    let Some(bin) = binary(PROMETHEUS) else {
        return;
    };
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("cairn-expo-prom-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(&config, "global:\n  scrape_interval: 1h\n").unwrap();
    let mut child = Running(
        Command::new(bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_ready(port, &mut child);
    // Prometheus' own `/metrics` does not offer OpenMetrics either.
    compare_formats(port, false);
    drop(child);
    let _ = std::fs::remove_dir_all(&dir);
}
