//! The data both servers evaluate their rules over, written through remote
//! write one scrape-like batch per second: two node_exporter targets replayed
//! from the recorded trace (`cairn_bench`), and a hand-made node whose
//! memory, filesystems, CPU, OOM kills and systemd units change in phases so
//! that alerts go pending, fire, change labels, keep firing and resolve.

use std::sync::Arc;

use cairn_bench::fleet::{Fleet, FleetConfig};
use cairn_bench::trace::Trace;
use cairn_model::{Labels, Sample, stale_nan};
use cairn_protocols::SeriesSamples;

/// Batches per phase (one batch a second).
pub const PHASE_LEN: u64 = 5;
/// Phases: 0 calm; 1 memory low, `/data` 92 % full, `/scratch` appears,
/// a unit failed, an OOM kill, I/O wait; 2 `/data` 97 % full; 3 calm again,
/// `/scratch` gone; 4 calm (the APIs are compared here).
pub const PHASES: u64 = 5;
pub const JOB: &str = "node";
pub const DRIVEN: &str = "driven:9100";
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

pub struct Data {
    fleet: Fleet,
    fleet_labels: Vec<Vec<Labels>>,
}

impl Data {
    pub fn new(targets: usize) -> Self {
        let trace = Arc::new(Trace::embedded().expect("embedded node_exporter trace"));
        let fleet = Fleet::new(
            trace,
            FleetConfig {
                targets,
                start_ms: 0,
                interval_ms: 1000,
                jitter_ms: 0,
                job: JOB.into(),
                seed: 24,
            },
        );
        let fleet_labels = (0..targets).map(|t| fleet.target_labels(t)).collect();
        Self { fleet, fleet_labels }
    }

    /// Every instance a batch has series of: the fleet's, then the driven node.
    pub fn instances(&self) -> Vec<String> {
        (0..self.fleet_labels.len())
            .map(Fleet::instance)
            .chain([DRIVEN.to_string()])
            .collect()
    }

    /// Series count of one batch (the driven node's varies a little).
    pub fn fleet_series(&self) -> usize {
        self.fleet_labels.iter().map(Vec::len).sum()
    }

    /// Batch `k`, every sample at `t_ms`.
    pub fn batch(&self, k: u64, t_ms: i64) -> Vec<SeriesSamples> {
        let mut out = Vec::with_capacity(self.fleet_series() + 20);
        for (t, labels) in self.fleet_labels.iter().enumerate() {
            for (s, l) in labels.iter().enumerate() {
                out.push(SeriesSamples::new(
                    l.clone(),
                    vec![Sample::new(t_ms, self.fleet.value(t, s, k))],
                ));
            }
        }
        for (pairs, v) in driven(k) {
            let mut all = vec![("instance", DRIVEN), ("job", JOB)];
            all.extend(pairs.iter().map(|(n, v)| (*n, v.as_str())));
            out.push(SeriesSamples::new(Labels::from_pairs(all), vec![Sample::new(t_ms, v)]));
        }
        out
    }
}

/// The hand-made node's samples at batch `k`: `(labels, value)`.
fn driven(k: u64) -> Vec<(Vec<(&'static str, String)>, f64)> {
    let phase = k / PHASE_LEN;
    let s = |v: &str| v.to_string();
    let mut out = Vec::new();
    let mut put = |pairs: &[(&'static str, &str)], v: f64| {
        out.push((pairs.iter().map(|(n, v)| (*n, s(v))).collect::<Vec<_>>(), v));
    };
    let total = 16.0 * GIB;
    // Varies a little every second, so `$value` in annotations changes.
    let wobble = (k % 3) as f64 * 1024.0 * 1024.0;
    let available = if matches!(phase, 1 | 2) {
        0.05 * total
    } else {
        0.5 * total
    };
    put(&[("__name__", "node_memory_MemTotal_bytes")], total);
    put(&[("__name__", "node_memory_MemAvailable_bytes")], available + wobble);
    put(&[("__name__", "node_memory_MemFree_bytes")], 2.0 * GIB + wobble);

    let data = [("device", "/dev/sdb1"), ("fstype", "ext4"), ("mountpoint", "/data")];
    let used = match phase {
        1 => 0.92,
        2 => 0.97,
        _ => 0.5,
    };
    let size = 500.0 * GIB;
    let fs = |name: &'static str, labels: &[(&'static str, &'static str)]| {
        let mut v = vec![("__name__", name)];
        v.extend_from_slice(labels);
        v
    };
    put(&fs("node_filesystem_size_bytes", &data), size);
    put(&fs("node_filesystem_avail_bytes", &data), size * (1.0 - used) - wobble);
    put(&fs("node_filesystem_readonly", &data), 0.0);
    put(&fs("node_filesystem_files", &data), 1e6);
    put(&fs("node_filesystem_files_free", &data), 4e5);
    // A filesystem mounted for phases 1 and 2 only, ended by a staleness
    // marker as a scrape would end it.
    let scratch = [("device", "/dev/sdc1"), ("fstype", "xfs"), ("mountpoint", "/scratch")];
    if matches!(phase, 1 | 2) {
        put(&fs("node_filesystem_size_bytes", &scratch), 100.0 * GIB);
        put(&fs("node_filesystem_avail_bytes", &scratch), 60.0 * GIB);
    } else if k == 3 * PHASE_LEN {
        put(&fs("node_filesystem_size_bytes", &scratch), stale_nan());
        put(&fs("node_filesystem_avail_bytes", &scratch), stale_nan());
    }

    put(
        &[("__name__", "node_vmstat_oom_kill")],
        if k >= PHASE_LEN { 1.0 } else { 0.0 },
    );
    let failed = if phase == 1 { 1.0 } else { 0.0 };
    put(
        &[
            ("__name__", "node_systemd_unit_state"),
            ("name", "cron.service"),
            ("state", "failed"),
            ("type", "simple"),
        ],
        failed,
    );
    put(
        &[
            ("__name__", "node_systemd_unit_state"),
            ("name", "cron.service"),
            ("state", "active"),
            ("type", "simple"),
        ],
        1.0 - failed,
    );

    // CPU counters: I/O wait grows fast in phases 1 and 2 only.
    let busy_until = (k.min(3 * PHASE_LEN).saturating_sub(PHASE_LEN)) as f64;
    let iowait = 0.3 * busy_until;
    let cpu = |mode: &'static str| vec![("__name__", "node_cpu_seconds_total"), ("cpu", "0"), ("mode", mode)];
    put(&cpu("iowait"), 1000.0 + iowait);
    put(&cpu("user"), 5000.0 + 0.1 * k as f64);
    put(&cpu("idle"), 90000.0 + 0.9 * k as f64 - iowait);
    out
}
