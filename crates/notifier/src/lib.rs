//! Alert notifications to Alertmanager, as Prometheus' notifier sends them.
//!
//! Alerts get the external labels they lack and go through
//! `alerting.alert_relabel_configs`; then each Alertmanager set (one entry of
//! `alerting.alertmanagers`) relabels them with its own
//! `alert_relabel_configs` and queues them for each of its Alertmanagers.
//! Every Alertmanager has its own queue and send loop ([`send_loop`]), which
//! posts batches to its API v2 (`/api/v2/alerts`). The sets' targets come
//! from service discovery ([`Notifier::sync`]) and are relabelled by the
//! set's `relabel_configs` into URLs, as scrape targets are.

mod alert;
mod metrics;
mod send_loop;
mod set;

use std::collections::BTreeMap;
use std::sync::Arc;

use cairn_config::relabel::{self, RelabelConfig};
use cairn_config::{AlertmanagerConfig, Config};
use cairn_model::Labels;
use parking_lot::Mutex;

pub use alert::Alert;
pub use metrics::AlertmanagerStats;
pub use set::{DiscoveredAlertmanager, alertmanager_set_names};

use crate::metrics::Metrics;
use crate::send_loop::LoopOptions;
use crate::set::AlertmanagerSet;

/// Tunables Prometheus has as flags.
#[derive(Debug, Clone)]
pub struct NotifierOptions {
    /// Alerts each Alertmanager's queue holds (`--alertmanager.notification-queue-capacity`).
    pub queue_capacity: usize,
    /// Most alerts in one request.
    pub max_batch_size: usize,
    /// Whether stopping sends what is still queued (`--alertmanager.drain-notification-queue-on-shutdown`).
    pub drain_on_shutdown: bool,
}

impl Default for NotifierOptions {
    fn default() -> Self {
        Self {
            queue_capacity: 10_000,
            max_batch_size: 256,
            drain_on_shutdown: true,
        }
    }
}

/// Builds the HTTP client of an Alertmanager set from its settings.
pub type ClientFactory<'a> = &'a dyn Fn(&cairn_config::HttpClientConfig) -> Result<reqwest::Client, String>;

/// Sends alerts to the configured Alertmanagers. Cheap to clone.
#[derive(Clone)]
pub struct Notifier {
    shared: Arc<Shared>,
}

struct Shared {
    options: NotifierOptions,
    runtime: tokio::runtime::Handle,
    metrics: Arc<Metrics>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    external_labels: Labels,
    alert_relabel_configs: Vec<RelabelConfig>,
    sets: BTreeMap<String, AlertmanagerSet>,
}

impl Notifier {
    /// A notifier with no Alertmanagers yet. Call from within a tokio
    /// runtime: send loops run on it.
    pub fn new(options: NotifierOptions) -> Self {
        Self {
            shared: Arc::new(Shared {
                options,
                runtime: tokio::runtime::Handle::current(),
                metrics: Arc::new(Metrics::default()),
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Takes the alerting section of `config`. A set whose configuration is
    /// unchanged keeps its Alertmanagers and their queues; the others start
    /// empty until [`Self::sync`] gives them targets.
    pub fn apply_config(&self, config: &Config, make_client: ClientFactory<'_>) -> Result<(), String> {
        let mut new_sets = BTreeMap::new();
        for (name, am) in alertmanager_set_names(&config.alerting.alertmanagers) {
            let client = make_client(&am.http_client).map_err(|e| format!("alertmanager set {name}: {e}"))?;
            new_sets.insert(name, (am.clone(), client));
        }
        let mut state = self.shared.state.lock();
        let mut old = std::mem::take(&mut state.sets);
        for (name, (am, client)) in new_sets {
            let kept = old
                .iter()
                .find(|(_, s)| s.config() == &am)
                .map(|(k, _)| k.clone())
                .and_then(|k| old.remove(&k));
            let set = match kept {
                Some(set) => set,
                None => AlertmanagerSet::new(am, client),
            };
            state.sets.insert(name, set);
        }
        for (_, set) in old {
            set.stop_all(&self.shared.runtime);
        }
        state.external_labels = config.global.external_labels.clone();
        state.alert_relabel_configs = config.alerting.alert_relabel_configs.clone();
        Ok(())
    }

    /// The discovered targets of the set `name` (`__address__` plus any
    /// labels of discovery); replaces what it had.
    pub fn sync(&self, name: &str, targets: Vec<Labels>) {
        let mut state = self.shared.state.lock();
        if let Some(set) = state.sets.get_mut(name) {
            let options = self.loop_options(set.config());
            set.sync(targets, options, &self.shared.metrics, &self.shared.runtime);
        }
    }

    fn loop_options(&self, am: &AlertmanagerConfig) -> LoopOptions {
        LoopOptions {
            queue_capacity: self.shared.options.queue_capacity,
            max_batch_size: self.shared.options.max_batch_size,
            timeout: am.timeout.as_std(),
            drain_on_shutdown: self.shared.options.drain_on_shutdown,
        }
    }

    /// Queues `alerts` for every Alertmanager.
    pub fn send(&self, alerts: Vec<Alert>) {
        let state = self.shared.state.lock();
        let alerts = relabel_alerts(&state.alert_relabel_configs, &state.external_labels, alerts);
        if alerts.is_empty() {
            return;
        }
        for set in state.sets.values() {
            set.send(&alerts);
        }
    }

    /// The URLs alerts go to, and those relabelling dropped, each sorted.
    pub fn alertmanagers(&self) -> (Vec<String>, Vec<String>) {
        let state = self.shared.state.lock();
        let mut active: Vec<String> = state.sets.values().flat_map(|s| s.active_urls()).collect();
        let mut dropped: Vec<String> = state.sets.values().flat_map(|s| s.dropped_urls()).collect();
        active.sort();
        active.dedup();
        dropped.sort();
        dropped.dedup();
        (active, dropped)
    }

    /// Per Alertmanager URL: its delivery counters and current queue length.
    pub fn stats(&self) -> BTreeMap<String, (AlertmanagerStats, usize)> {
        let queues: BTreeMap<String, usize> = {
            let state = self.shared.state.lock();
            state.sets.values().flat_map(|s| s.queue_lengths()).collect()
        };
        let mut stats = self.shared.metrics.snapshot();
        let mut out = BTreeMap::new();
        for (url, queued) in queues {
            out.insert(url.clone(), (stats.remove(&url).unwrap_or_default(), queued));
        }
        out
    }

    pub fn queue_capacity(&self) -> usize {
        self.shared.options.queue_capacity
    }

    /// Stops every send loop (draining their queues when configured to).
    pub async fn stop(&self) {
        let loops: Vec<_> = {
            let mut state = self.shared.state.lock();
            std::mem::take(&mut state.sets)
                .into_values()
                .flat_map(|s| s.into_loops())
                .collect()
        };
        for l in loops {
            l.stop().await;
        }
    }
}

/// External labels the alert lacks added, then `configs` applied; alerts
/// the relabelling drops are left out.
fn relabel_alerts(configs: &[RelabelConfig], external: &Labels, alerts: Vec<Alert>) -> Vec<Alert> {
    if configs.is_empty() && external.is_empty() {
        return alerts;
    }
    alerts
        .into_iter()
        .filter_map(|mut a| {
            let mut labels = a.labels.clone();
            for l in external {
                if labels.get(l.name.as_str()).is_none_or(str::is_empty) {
                    labels.set(l.name.as_str(), l.value.as_str());
                }
            }
            a.labels = relabel::process(&labels, configs)?;
            Some(a)
        })
        .collect()
}

#[cfg(test)]
mod tests;
