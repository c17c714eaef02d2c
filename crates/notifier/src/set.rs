//! One entry of `alerting.alertmanagers`: its discovered Alertmanagers,
//! relabelled into URLs, each with its own send loop.

use std::collections::BTreeMap;
use std::sync::Arc;

use cairn_config::relabel;
use cairn_config::{AlertmanagerConfig, check_target_address};
use cairn_model::Labels;

use crate::alert::Alert;
use crate::metrics::Metrics;
use crate::relabel_alerts;
use crate::send_loop::{LoopOptions, SendLoop};

const ADDRESS: &str = "__address__";
const SCHEME: &str = "__scheme__";
const ALERTS_PATH: &str = "__alerts_path__";

/// The sets' names, as Prometheus names them (`config-<index>`).
pub fn alertmanager_set_names(configs: &[AlertmanagerConfig]) -> Vec<(String, &AlertmanagerConfig)> {
    configs
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("config-{i}"), c))
        .collect()
}

/// An Alertmanager found by discovery, kept or dropped by relabelling.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoveredAlertmanager {
    pub labels: Labels,
}

impl DiscoveredAlertmanager {
    pub fn url(&self) -> String {
        let get = |n: &str| self.labels.get(n).unwrap_or("");
        format!("{}://{}{}", get(SCHEME), get(ADDRESS), get(ALERTS_PATH))
    }
}

pub(crate) struct AlertmanagerSet {
    config: AlertmanagerConfig,
    client: reqwest::Client,
    active: Vec<DiscoveredAlertmanager>,
    dropped: Vec<DiscoveredAlertmanager>,
    loops: BTreeMap<String, Arc<SendLoop>>,
}

impl AlertmanagerSet {
    pub fn new(config: AlertmanagerConfig, client: reqwest::Client) -> Self {
        Self {
            config,
            client,
            active: Vec::new(),
            dropped: Vec::new(),
            loops: BTreeMap::new(),
        }
    }

    pub fn config(&self) -> &AlertmanagerConfig {
        &self.config
    }

    /// Takes the set's discovered targets: new URLs get a send loop, URLs
    /// no longer there lose theirs.
    pub fn sync(
        &mut self,
        targets: Vec<Labels>,
        options: LoopOptions,
        metrics: &Arc<Metrics>,
        rt: &tokio::runtime::Handle,
    ) {
        let (active, dropped) = resolve(&self.config, targets);
        let mut loops = BTreeMap::new();
        for am in &active {
            let url = am.url();
            if loops.contains_key(&url) {
                continue;
            }
            let l = match self.loops.remove(&url) {
                Some(l) => l,
                None => {
                    let _guard = rt.enter();
                    SendLoop::start(url.clone(), self.client.clone(), options.clone(), metrics.clone())
                }
            };
            loops.insert(url, l);
        }
        let gone = std::mem::replace(&mut self.loops, loops);
        for (_, l) in gone {
            rt.spawn(async move { l.stop().await });
        }
        self.active = active;
        self.dropped = dropped;
    }

    pub fn send(&self, alerts: &[Alert]) {
        if self.config.alert_relabel_configs.is_empty() {
            for l in self.loops.values() {
                l.add(alerts);
            }
            return;
        }
        let alerts = relabel_alerts(&self.config.alert_relabel_configs, &Labels::empty(), alerts.to_vec());
        if alerts.is_empty() {
            return;
        }
        for l in self.loops.values() {
            l.add(&alerts);
        }
    }

    pub fn active_urls(&self) -> impl Iterator<Item = String> + '_ {
        self.loops.keys().cloned()
    }

    pub fn dropped_urls(&self) -> impl Iterator<Item = String> + '_ {
        self.dropped.iter().map(DiscoveredAlertmanager::url)
    }

    #[cfg(test)]
    pub fn send_loop(&self, url: &str) -> Option<Arc<SendLoop>> {
        self.loops.get(url).cloned()
    }

    pub fn queue_lengths(&self) -> impl Iterator<Item = (String, usize)> + '_ {
        self.loops.iter().map(|(u, l)| (u.clone(), l.queue_len()))
    }

    pub fn stop_all(self, rt: &tokio::runtime::Handle) {
        for l in self.into_loops() {
            rt.spawn(async move { l.stop().await });
        }
    }

    pub fn into_loops(self) -> impl Iterator<Item = Arc<SendLoop>> {
        self.loops.into_values()
    }
}

/// Each target with the set's scheme and API path, then its
/// `relabel_configs`: kept (with a valid address) or dropped.
fn resolve(
    config: &AlertmanagerConfig,
    targets: Vec<Labels>,
) -> (Vec<DiscoveredAlertmanager>, Vec<DiscoveredAlertmanager>) {
    let path = config.alerts_path();
    let mut active = Vec::new();
    let mut dropped = Vec::new();
    for mut labels in targets {
        labels.set(SCHEME, &config.scheme);
        labels.set(ALERTS_PATH, &path);
        match relabel::process(&labels, &config.relabel_configs) {
            Some(kept) => match check_target_address(kept.get(ADDRESS).unwrap_or("")) {
                Ok(()) => active.push(DiscoveredAlertmanager { labels: kept }),
                Err(e) => tracing::error!(error = %e, "invalid Alertmanager address"),
            },
            None => dropped.push(DiscoveredAlertmanager { labels }),
        }
    }
    (active, dropped)
}
