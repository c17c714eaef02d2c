//! Scraping's own counters, as Prometheus' `prometheus_target_*` and
//! `prometheus_sd_*` metrics report them. Loops and pools hold `Arc`s to
//! what they update (atomics, and a summary per interval taken once per
//! loop), so a scrape takes no shared lock but the summary's own.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use cairn_model::summary::{QUANTILES_5, SummarySnapshot, WindowedSummary};
use parking_lot::Mutex;

/// Counters shared by every pool and loop of one scrape manager.
#[derive(Debug, Default)]
pub struct ScrapeMetrics {
    pub(crate) scrape_pools: AtomicU64,
    pub(crate) scrape_pools_failed: AtomicU64,
    pub(crate) pool_reloads: AtomicU64,
    pub(crate) pool_reloads_failed: AtomicU64,
    pub(crate) exceeded_target_limit: AtomicU64,
    pub(crate) exceeded_label_limits: AtomicU64,
    pub(crate) exceeded_body_size_limit: AtomicU64,
    pub(crate) exceeded_sample_limit: AtomicU64,
    pub(crate) exceeded_bucket_limit: AtomicU64,
    pub(crate) sample_duplicate: AtomicU64,
    pub(crate) sample_out_of_bounds: AtomicU64,
    pub(crate) cache_flush_forced: AtomicU64,
    /// By the job's interval in Go's notation (`15s`, `1m0s`).
    pub(crate) interval_length: Mutex<BTreeMap<String, Arc<WindowedSummary>>>,
    pub(crate) reload_length: Mutex<BTreeMap<String, Arc<WindowedSummary>>>,
    /// By job; a pool's entry goes with the pool.
    pub(crate) pools: Mutex<BTreeMap<String, Arc<PoolCounters>>>,
    /// File, HTTP and DNS service discovery figures, every job's together.
    pub(crate) discovery: Arc<DiscoveryCounters>,
}

/// One scrape pool's figures.
#[derive(Debug)]
pub(crate) struct PoolCounters {
    pub syncs: AtomicU64,
    pub sync_failed: AtomicU64,
    pub sync_length: WindowedSummary,
    pub targets: AtomicU64,
    pub target_limit: AtomicU64,
    /// Targets in the groups discovery gave last, before relabelling.
    pub discovered: AtomicU64,
}

/// Failures of file and HTTP service discovery; DNS lookups and their failures.
#[derive(Debug, Default)]
pub struct DiscoveryCounters {
    pub(crate) file_read_errors: AtomicU64,
    pub(crate) http_failures: AtomicU64,
    pub(crate) dns_lookups: AtomicU64,
    pub(crate) dns_lookup_failures: AtomicU64,
    /// Failed LIST and WATCH requests of Kubernetes discovery.
    pub(crate) kubernetes_failures: AtomicU64,
    /// Kubernetes watch events handled, by role (as in [`KUBERNETES_ROLES`]) and event.
    kubernetes_events: [[AtomicU64; 3]; 6],
}

/// The roles of `prometheus_sd_kubernetes_events_total`, in exposition order.
pub const KUBERNETES_ROLES: [&str; 6] = ["endpointslice", "endpoints", "node", "pod", "service", "ingress"];

/// The events of `prometheus_sd_kubernetes_events_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KubernetesEvent {
    Add,
    Delete,
    Update,
}

impl KubernetesEvent {
    pub const ALL: [KubernetesEvent; 3] = [KubernetesEvent::Add, KubernetesEvent::Delete, KubernetesEvent::Update];

    pub fn as_str(self) -> &'static str {
        match self {
            KubernetesEvent::Add => "add",
            KubernetesEvent::Delete => "delete",
            KubernetesEvent::Update => "update",
        }
    }
}

impl DiscoveryCounters {
    pub fn file_read_errors(&self) -> u64 {
        self.file_read_errors.load(Ordering::Relaxed)
    }

    pub fn http_failures(&self) -> u64 {
        self.http_failures.load(Ordering::Relaxed)
    }

    pub fn dns_lookups(&self) -> u64 {
        self.dns_lookups.load(Ordering::Relaxed)
    }

    pub fn dns_lookup_failures(&self) -> u64 {
        self.dns_lookup_failures.load(Ordering::Relaxed)
    }

    pub fn kubernetes_failures(&self) -> u64 {
        self.kubernetes_failures.load(Ordering::Relaxed)
    }

    pub(crate) fn kubernetes_event(&self, role: &str, event: KubernetesEvent) {
        if let Some(r) = KUBERNETES_ROLES.iter().position(|n| *n == role) {
            inc(&self.kubernetes_events[r][event as usize]);
        }
    }

    /// `(role, event, count)` for every role and event, zeros included.
    pub fn kubernetes_events(&self) -> Vec<(&'static str, &'static str, u64)> {
        let mut out = Vec::new();
        for (r, role) in KUBERNETES_ROLES.iter().enumerate() {
            for e in KubernetesEvent::ALL {
                out.push((
                    *role,
                    e.as_str(),
                    self.kubernetes_events[r][e as usize].load(Ordering::Relaxed),
                ));
            }
        }
        out
    }
}

pub(crate) fn inc(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl ScrapeMetrics {
    /// The summary of actual intervals between scrapes of jobs scraped every `interval`.
    pub(crate) fn interval_length(&self, interval: Duration) -> Arc<WindowedSummary> {
        summary_for(&self.interval_length, interval)
    }

    pub(crate) fn observe_reload(&self, interval: Duration, took: Duration) {
        summary_for(&self.reload_length, interval).observe(took.as_secs_f64());
    }

    /// The counters of the pool of `job`, created with it.
    pub(crate) fn pool(&self, job: &str) -> Arc<PoolCounters> {
        self.pools
            .lock()
            .entry(job.to_string())
            .or_insert_with(|| {
                Arc::new(PoolCounters {
                    syncs: AtomicU64::new(0),
                    sync_failed: AtomicU64::new(0),
                    sync_length: WindowedSummary::new(QUANTILES_5),
                    targets: AtomicU64::new(0),
                    target_limit: AtomicU64::new(0),
                    discovered: AtomicU64::new(0),
                })
            })
            .clone()
    }

    pub(crate) fn remove_pool(&self, job: &str) {
        self.pools.lock().remove(job);
    }

    pub fn snapshot(&self) -> ScrapeMetricsSnapshot {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let summaries = |m: &Mutex<BTreeMap<String, Arc<WindowedSummary>>>| {
            m.lock()
                .iter()
                .map(|(k, s)| (k.clone(), s.snapshot()))
                .collect::<Vec<_>>()
        };
        ScrapeMetricsSnapshot {
            scrape_pools_total: load(&self.scrape_pools),
            scrape_pools_failed_total: load(&self.scrape_pools_failed),
            scrape_pool_reloads_total: load(&self.pool_reloads),
            scrape_pool_reloads_failed_total: load(&self.pool_reloads_failed),
            scrape_pool_exceeded_target_limit_total: load(&self.exceeded_target_limit),
            scrape_pool_exceeded_label_limits_total: load(&self.exceeded_label_limits),
            scrapes_exceeded_body_size_limit_total: load(&self.exceeded_body_size_limit),
            scrapes_exceeded_sample_limit_total: load(&self.exceeded_sample_limit),
            scrapes_exceeded_native_histogram_bucket_limit_total: load(&self.exceeded_bucket_limit),
            scrapes_sample_duplicate_timestamp_total: load(&self.sample_duplicate),
            scrapes_sample_out_of_bounds_total: load(&self.sample_out_of_bounds),
            scrapes_cache_flush_forced_total: load(&self.cache_flush_forced),
            interval_length: summaries(&self.interval_length),
            reload_length: summaries(&self.reload_length),
            pools: self
                .pools
                .lock()
                .iter()
                .map(|(job, p)| PoolMetrics {
                    job: job.clone(),
                    syncs_total: load(&p.syncs),
                    sync_failed_total: load(&p.sync_failed),
                    sync_length: p.sync_length.snapshot(),
                    targets: load(&p.targets),
                    target_limit: load(&p.target_limit),
                    discovered_targets: load(&p.discovered),
                })
                .collect(),
            sd_file_read_errors_total: self.discovery.file_read_errors(),
            sd_http_failures_total: self.discovery.http_failures(),
            sd_dns_lookups_total: self.discovery.dns_lookups(),
            sd_dns_lookup_failures_total: self.discovery.dns_lookup_failures(),
            sd_kubernetes_failures_total: self.discovery.kubernetes_failures(),
            sd_kubernetes_events_total: self.discovery.kubernetes_events(),
        }
    }
}

fn summary_for(m: &Mutex<BTreeMap<String, Arc<WindowedSummary>>>, interval: Duration) -> Arc<WindowedSummary> {
    m.lock()
        .entry(go_duration(interval))
        .or_insert_with(|| Arc::new(WindowedSummary::new(QUANTILES_5)))
        .clone()
}

/// A duration as Go's `time.Duration.String` writes it (`15s`, `1m0s`,
/// `1h30m0s`, `500ms`, `1.5s`), the `interval` label's values in Prometheus.
pub fn go_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    if nanos < 1_000_000_000 {
        let (unit, div) = match nanos {
            n if n < 1_000 => ("ns", 1u128),
            n if n < 1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{}{unit}", fraction(nanos, div));
    }
    let secs = nanos / 1_000_000_000;
    let (h, m) = (secs / 3600, secs / 60 % 60);
    let s = fraction(nanos % 60_000_000_000, 1_000_000_000);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m{s}s"),
        (h, m) => format!("{h}h{m}m{s}s"),
    }
}

/// `n / div` with the fraction's trailing zeros left out.
fn fraction(n: u128, div: u128) -> String {
    let (whole, rest) = (n / div, n % div);
    if rest == 0 {
        return whole.to_string();
    }
    let width = div.to_string().len() - 1;
    let digits = format!("{rest:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Scraping's figures at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrapeMetricsSnapshot {
    pub scrape_pools_total: u64,
    pub scrape_pools_failed_total: u64,
    pub scrape_pool_reloads_total: u64,
    pub scrape_pool_reloads_failed_total: u64,
    pub scrape_pool_exceeded_target_limit_total: u64,
    pub scrape_pool_exceeded_label_limits_total: u64,
    pub scrapes_exceeded_body_size_limit_total: u64,
    pub scrapes_exceeded_sample_limit_total: u64,
    pub scrapes_exceeded_native_histogram_bucket_limit_total: u64,
    pub scrapes_sample_duplicate_timestamp_total: u64,
    pub scrapes_sample_out_of_bounds_total: u64,
    pub scrapes_cache_flush_forced_total: u64,
    /// `(interval, summary)` of actual intervals between scrapes.
    pub interval_length: Vec<(String, SummarySnapshot)>,
    /// `(interval, summary)` of pool reload durations.
    pub reload_length: Vec<(String, SummarySnapshot)>,
    /// Running pools, by job.
    pub pools: Vec<PoolMetrics>,
    pub sd_file_read_errors_total: u64,
    pub sd_http_failures_total: u64,
    pub sd_dns_lookups_total: u64,
    pub sd_dns_lookup_failures_total: u64,
    pub sd_kubernetes_failures_total: u64,
    /// `(role, event, count)`.
    pub sd_kubernetes_events_total: Vec<(&'static str, &'static str, u64)>,
}

/// One scrape pool's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolMetrics {
    pub job: String,
    pub syncs_total: u64,
    pub sync_failed_total: u64,
    pub sync_length: SummarySnapshot,
    pub targets: u64,
    pub target_limit: u64,
    pub discovered_targets: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_written_as_go_does() {
        let check = |ms: u64, want: &str| assert_eq!(go_duration(Duration::from_millis(ms)), want);
        check(15_000, "15s");
        check(60_000, "1m0s");
        check(90_000, "1m30s");
        check(5_400_000, "1h30m0s");
        check(500, "500ms");
        check(1_500, "1.5s");
        check(0, "0s");
        assert_eq!(go_duration(Duration::from_micros(1_500)), "1.5ms");
    }
}
