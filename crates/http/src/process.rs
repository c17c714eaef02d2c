//! Standard `process_*` metrics read from `/proc/self` (Linux only; elsewhere
//! the families are simply absent).

use crate::exposition::Exposition;

/// Kernel clock ticks per second for `/proc` CPU and start times. USER_HZ is
/// 100 on every mainstream Linux architecture; reading it needs `sysconf`.
const CLOCK_TICKS: f64 = 100.0;

/// Appends whatever process metrics this platform provides.
pub fn render(e: &mut Exposition) {
    let stat = std::fs::read_to_string("/proc/self/stat").ok();
    // Fields after the `(comm)`, which may itself contain spaces or parens.
    let fields: Vec<&str> = stat
        .as_deref()
        .and_then(|s| s.rsplit_once(')'))
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // `fields[0]` is field 3 (state) of proc(5); field N is `fields[N - 3]`.
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok());
    if let (Some(utime), Some(stime)) = (field(14), field(15)) {
        e.single(
            "process_cpu_seconds_total",
            "Total user and system CPU time spent in seconds.",
            "counter",
            (utime + stime) / CLOCK_TICKS,
        );
    }
    if let Some(rss) = status_kb("VmRSS") {
        e.single(
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            "gauge",
            rss * 1024.0,
        );
    }
    if let Some(vsize) = field(23) {
        e.single(
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes.",
            "gauge",
            vsize,
        );
    }
    if let (Some(start_ticks), Some(boot)) = (field(22), boot_time()) {
        e.single(
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            "gauge",
            boot + start_ticks / CLOCK_TICKS,
        );
    }
    if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
        e.single(
            "process_open_fds",
            "Number of open file descriptors.",
            "gauge",
            dir.count() as f64,
        );
    }
    if let Some(max) = max_open_files() {
        e.single(
            "process_max_fds",
            "Maximum number of open file descriptors.",
            "gauge",
            max,
        );
    }
}

/// A `kB` figure from `/proc/self/status`.
fn status_kb(key: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// System boot time in Unix seconds (`btime` in `/proc/stat`).
fn boot_time() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines().find_map(|l| l.strip_prefix("btime ")?.trim().parse().ok())
}

fn max_open_files() -> Option<f64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..].split_whitespace().next()?.parse().ok()
}
