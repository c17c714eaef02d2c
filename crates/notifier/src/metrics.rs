//! Per-Alertmanager delivery counters, as Prometheus'
//! `prometheus_notifications_*` metrics report them.

use std::collections::BTreeMap;
use std::time::Duration;

use cairn_model::summary::{QUANTILES_3, SummarySnapshot, WindowedSummary};
use parking_lot::Mutex;

/// What was delivered to one Alertmanager since start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AlertmanagerStats {
    /// Alerts sent successfully.
    pub sent: u64,
    /// Alerts whose request failed.
    pub errors: u64,
    /// Alerts dropped: failed sends, full queues, shutdown without draining.
    pub dropped: u64,
    /// Requests that succeeded and their total latency.
    pub requests: u64,
    pub latency_seconds_sum: f64,
    /// The latency of successful requests, once there was one.
    pub latency: Option<SummarySnapshot>,
}

#[derive(Debug, Default)]
pub(crate) struct Metrics {
    by_url: Mutex<BTreeMap<String, AlertmanagerStats>>,
    latency: Mutex<BTreeMap<String, WindowedSummary>>,
}

impl Metrics {
    pub fn sent(&self, url: &str, alerts: u64, latency: Duration) {
        let mut m = self.by_url.lock();
        let s = m.entry(url.to_string()).or_default();
        s.sent += alerts;
        s.requests += 1;
        s.latency_seconds_sum += latency.as_secs_f64();
        drop(m);
        self.latency
            .lock()
            .entry(url.to_string())
            .or_insert_with(|| WindowedSummary::new(QUANTILES_3))
            .observe(latency.as_secs_f64());
    }

    /// A failed request: its alerts count as errors and are dropped.
    pub fn failed(&self, url: &str, alerts: u64) {
        let mut m = self.by_url.lock();
        let s = m.entry(url.to_string()).or_default();
        s.errors += alerts;
        s.dropped += alerts;
    }

    pub fn dropped(&self, url: &str, alerts: u64) {
        self.by_url.lock().entry(url.to_string()).or_default().dropped += alerts;
    }

    /// An Alertmanager no longer sent to: its figures go, as in Prometheus.
    pub fn forget(&self, url: &str) {
        self.by_url.lock().remove(url);
        self.latency.lock().remove(url);
    }

    pub fn snapshot(&self) -> BTreeMap<String, AlertmanagerStats> {
        let mut out = self.by_url.lock().clone();
        for (url, summary) in self.latency.lock().iter() {
            out.entry(url.clone()).or_default().latency = Some(summary.snapshot());
        }
        out
    }
}
