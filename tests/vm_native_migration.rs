//! A migration with `vmctl vm-native` (VictoriaMetrics 1.150, built from
//! source by `scripts/build-peers.sh vmctl`) out of VictoriaMetrics 1.150
//! into Cairn, and out of Cairn into a fresh VictoriaMetrics: an hour of
//! 100 node-exporter-like targets, with counters, gauges of every size,
//! values of up to 17 significant digits, infinities and staleness markers
//! of targets that went away. vmctl explores metric names through
//! `/api/v1/label/__name__/values` and moves each through
//! `/api/v1/export/native` and `/api/v1/import/native`. Every sample must
//! arrive: Cairn holds exactly the floats the source answers with, and the
//! VictoriaMetrics migrated from Cairn answers exactly as one migrated
//! straight from the source. (VictoriaMetrics re-rounds what it imports to
//! about twelve significant digits, truncating, so a few values of long
//! ratios lose their last digit on any migration into it, with or without
//! Cairn between; the test counts them.)

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use crate::common::peers::{VictoriaMetrics, built_from_source, victoria_metrics_1_150};
use crate::common::*;
use cairn_protocols::remote_write::ContentEncoding;

const TARGETS: usize = 100;
const STEP_MS: i64 = 15_000;
const POINTS: i64 = 240;

type Samples = BTreeMap<BTreeMap<String, String>, Vec<(i64, u64)>>;

/// vmctl 1.150, from `CAIRN_VMCTL_BIN` or `target/tools/`, or `None` after
/// printing `SKIPPED` (outside CI; under CI its absence fails).
fn vmctl() -> Option<PathBuf> {
    built_from_source(
        "vmctl",
        "CAIRN_VMCTL_BIN",
        "vmctl-v1.150.0",
        "scripts/build-peers.sh vmctl",
    )
}

/// The targets' series over the hour before `end`.
fn fleet(end: i64) -> Vec<cairn_protocols::SeriesSamples> {
    let start = end - POINTS * STEP_MS;
    let mut out = Vec::new();
    for target in 0..TARGETS {
        let instance = format!("10.0.{}.{}:9100", target / 50, target % 50);
        let k = target as f64 + 1.0;
        // Ten targets go away halfway through: their series end in staleness markers.
        let gone = target % 10 == 9;
        let mut add = |name: &str, extra: &[(&str, &str)], value: &dyn Fn(i64) -> f64| {
            let mut labels = vec![("__name__", name), ("instance", instance.as_str()), ("job", "node")];
            labels.extend_from_slice(extra);
            let mut samples: Vec<(i64, f64)> = (0..POINTS)
                .take_while(|&i| !gone || i < POINTS / 2)
                .map(|i| (start + i * STEP_MS, value(i)))
                .collect();
            if gone {
                samples.push((start + POINTS / 2 * STEP_MS, cairn_model::stale_nan()));
            }
            out.push(series(&labels, &samples));
        };
        for cpu in ["0", "1"] {
            for (mode, rate) in [("idle", 0.97), ("user", 0.021), ("system", 0.0093), ("iowait", 0.0)] {
                add("node_cpu_seconds_total", &[("cpu", cpu), ("mode", mode)], &|i| {
                    ((123_456.78 * k + i as f64 * 15.0 * rate) * 100.0).round() / 100.0
                });
            }
        }
        add("node_memory_MemAvailable_bytes", &[], &|i| {
            8_589_934_592.0 - (i * 4096 * (target as i64 + 1)) as f64
        });
        add("node_memory_MemTotal_bytes", &[], &|_| 16_777_216_000.0);
        add("node_load1", &[], &|i| ((i * 37 + target as i64) % 400) as f64 / 100.0);
        add("node_network_receive_bytes_total", &[("device", "eth0")], &|i| {
            1.234_567_890_123e12 * k + (i * i * 1500) as f64
        });
        add("node_hwmon_temp_celsius", &[("chip", "0"), ("sensor", "temp1")], &|i| {
            40.0 + (i % 17) as f64 * 0.125
        });
        // Sixteen and seventeen significant digits, as ratios and averages give.
        add("node_filesystem_usage_ratio", &[("mountpoint", "/")], &|i| {
            (i as f64 + k) / 7.0
        });
        add("node_timex_offset_seconds", &[], &|i| {
            (i as f64 - 120.0) * 1.1e-7 + 0.1 + 0.2
        });
        add("node_boot_time_seconds", &[], &|_| 1.7e9 + k);
        add("up", &[], &|_| 1.0);
        add("node_scrape_collector_success", &[("collector", "cpu")], &|_| 0.0);
        add("node_hwmon_limit", &[("sensor", "max")], &|i| {
            if i % 60 == 0 { f64::INFINITY } else { 105.0 }
        });
        add("node_textfile_mtime_seconds", &[("file", "x.prom")], &|i| {
            -1.0 - i as f64 * 0.5
        });
    }
    out
}

/// Every sample of `url`'s JSON export in the range, by series, as bits
/// (VictoriaMetrics may split a series over lines; merged here).
fn samples_of(url: &str, start: i64, end: i64) -> Samples {
    let client = Client::new(url.to_string());
    let body = client
        .get_query(
            "/api/v1/export",
            &[
                ("match[]", "{__name__=~\".+\"}"),
                ("start", &ms_to_param(start)),
                ("end", &ms_to_param(end)),
            ],
        )
        .body;
    let mut out = Samples::new();
    for e in parse_export(&body) {
        out.entry(e.labels)
            .or_default()
            .extend(e.samples.iter().map(|s| (s.t, s.v.to_bits())));
    }
    for samples in out.values_mut() {
        samples.sort_unstable();
    }
    out
}

fn migrate(vmctl: &PathBuf, from: &str, to: &str, start: i64, end: i64) -> String {
    let out = Command::new(vmctl)
        .args(["vm-native", "-s", "--disable-progress-bar"])
        .arg(format!("--vm-native-src-addr={from}"))
        .arg(format!("--vm-native-dst-addr={to}"))
        .arg("--vm-native-filter-match={__name__=~\".+\"}")
        .arg(format!("--vm-native-filter-time-start={}", start / 1000))
        .arg(format!("--vm-native-filter-time-end={}", end / 1000))
        .output()
        .expect("run vmctl");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "vmctl {from} -> {to} failed:\n{text}");
    text
}

/// Makes what VictoriaMetrics holds searchable at once.
fn flush(vm: &VictoriaMetrics) {
    let resp = http_client(std::time::Duration::from_secs(30))
        .get(format!("{}/internal/force_flush", vm.url()))
        .send()
        .expect("force_flush");
    assert!(resp.status().is_success());
}

fn assert_same(got: &Samples, want: &Samples, what: &str) {
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{what}: other series"
    );
    for (labels, samples) in want {
        let have = &got[labels];
        assert_eq!(have.len(), samples.len(), "{what}: sample count of {labels:?}");
        for (h, w) in have.iter().zip(samples) {
            assert_eq!(
                h,
                w,
                "{what}: {labels:?} at {}: {} vs {}",
                w.0,
                show(f64::from_bits(h.1)),
                show(f64::from_bits(w.1))
            );
        }
    }
}

#[test]
fn vmctl_migrates_from_victoria_metrics_to_cairn_and_back() {
    let (Some(vm_bin), Some(vmctl)) = (victoria_metrics_1_150(), vmctl()) else {
        return;
    };
    let end = now_ms() / 60_000 * 60_000 - 60_000;
    let start = end - POINTS * STEP_MS - 60_000;
    let source = VictoriaMetrics::start(&vm_bin, &[]);
    let data = fleet(end);
    let writer = http_client(std::time::Duration::from_secs(60));
    for chunk in data.chunks(500) {
        let resp = writer
            .post(format!("{}/api/v1/write", source.url()))
            .header("content-encoding", "snappy")
            .header("content-type", "application/x-protobuf")
            .body(encode(chunk, ContentEncoding::Snappy))
            .send()
            .expect("write to VictoriaMetrics");
        assert!(resp.status().is_success(), "{}", resp.text().unwrap_or_default());
    }
    flush(&source);
    let original = samples_of(&source.url(), start, end);
    let sent: usize = data.iter().map(|s| s.samples.len()).sum();
    assert_eq!(original.len(), data.len(), "VictoriaMetrics holds every series");
    assert!(
        original.values().map(Vec::len).sum::<usize>() >= sent - data.len(),
        "VictoriaMetrics holds the samples (staleness markers aside)"
    );

    let cairn = Server::start();
    let out = migrate(&vmctl, &source.url(), &cairn.url(), start, end);
    assert!(out.contains("Import finished"), "{out}");
    assert_same(
        &samples_of(&cairn.url(), start, end),
        &original,
        "Cairn after vmctl from VictoriaMetrics",
    );

    let back = VictoriaMetrics::start(&vm_bin, &[]);
    migrate(&vmctl, &cairn.url(), &back.url(), start, end);
    flush(&back);
    let direct = VictoriaMetrics::start(&vm_bin, &[]);
    migrate(&vmctl, &source.url(), &direct.url(), start, end);
    flush(&direct);
    let direct = samples_of(&direct.url(), start, end);
    assert_same(
        &samples_of(&back.url(), start, end),
        &direct,
        "VictoriaMetrics after vmctl from Cairn",
    );
    let rerounded = original
        .iter()
        .flat_map(|(labels, samples)| samples.iter().zip(&direct[labels]))
        .filter(|(a, b)| a != b)
        .count();
    let total: usize = original.values().map(Vec::len).sum();
    println!("{rerounded} of {total} samples re-rounded by VictoriaMetrics on import, Cairn between or not");
    assert!(
        rerounded < total / 100,
        "{rerounded} of {total} samples changed on a direct migration"
    );
}
