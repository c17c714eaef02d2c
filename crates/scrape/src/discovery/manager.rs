//! One job's discovery: every mechanism's groups merged by source and
//! published whole on a watch channel at each change.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::{SdConfig, TargetGroup, dns, file, http, kubernetes};

/// Tunables of discovery (not part of Prometheus' configuration).
#[derive(Debug, Clone)]
pub struct DiscoveryOptions {
    /// How often file SD checks its files for a change.
    pub file_poll_interval: Duration,
    /// Where file, HTTP and DNS discovery count their failures.
    pub counters: Arc<crate::metrics::DiscoveryCounters>,
    /// Where DNS discovery finds its servers.
    pub resolver: dns::ResolverSource,
    /// Where in-cluster Kubernetes discovery finds the service account's files.
    pub kubernetes_service_account: std::path::PathBuf,
}

impl Default for DiscoveryOptions {
    fn default() -> Self {
        Self {
            file_poll_interval: Duration::from_secs(3),
            counters: Arc::default(),
            resolver: dns::ResolverSource::default(),
            kubernetes_service_account: kubernetes::SERVICE_ACCOUNT_DIR.into(),
        }
    }
}

/// The running discovery of one job (or one Alertmanager set). Dropping it stops it.
pub struct DiscoveryManager {
    rx: watch::Receiver<Arc<Vec<TargetGroup>>>,
    /// Publications since the start (the static groups at start excluded).
    reports: Arc<AtomicU64>,
    tasks: Vec<JoinHandle<()>>,
}

impl DiscoveryManager {
    /// Starts every mechanism of `configs` on the current tokio runtime. Static
    /// groups are published at once; the others as they arrive.
    pub fn start(configs: &[SdConfig], options: &DiscoveryOptions) -> Self {
        let mut groups: BTreeMap<(usize, String), TargetGroup> = BTreeMap::new();
        let (updates_tx, mut updates_rx) = mpsc::channel::<(usize, Vec<TargetGroup>)>(16);
        let mut tasks = Vec::new();
        for (provider, config) in configs.iter().enumerate() {
            match config {
                SdConfig::Static(static_groups) => {
                    for (i, g) in static_groups.iter().enumerate() {
                        let mut g = g.clone();
                        g.source = i.to_string();
                        groups.insert((provider, g.source.clone()), g);
                    }
                }
                SdConfig::File {
                    files,
                    refresh_interval,
                } => {
                    let (tx, rx) = mpsc::channel(4);
                    tasks.push(tokio::spawn(file::run(
                        files.clone(),
                        *refresh_interval,
                        options.file_poll_interval,
                        options.counters.clone(),
                        tx,
                    )));
                    tasks.push(tokio::spawn(forward(provider, rx, updates_tx.clone())));
                }
                SdConfig::Http {
                    url,
                    refresh_interval,
                    http: settings,
                } => {
                    let (tx, rx) = mpsc::channel(4);
                    tasks.push(tokio::spawn(http::run(
                        url.clone(),
                        *refresh_interval,
                        (**settings).clone(),
                        options.counters.clone(),
                        tx,
                    )));
                    tasks.push(tokio::spawn(forward(provider, rx, updates_tx.clone())));
                }
                SdConfig::Dns {
                    query,
                    refresh_interval,
                } => {
                    let (tx, rx) = mpsc::channel(4);
                    tasks.push(tokio::spawn(dns::run(
                        query.clone(),
                        *refresh_interval,
                        options.resolver.clone(),
                        options.counters.clone(),
                        tx,
                    )));
                    tasks.push(tokio::spawn(forward(provider, rx, updates_tx.clone())));
                }
                SdConfig::Kubernetes(sd) => {
                    let (tx, rx) = mpsc::channel(4);
                    tasks.push(tokio::spawn(kubernetes::run(
                        (**sd).clone(),
                        options.kubernetes_service_account.clone(),
                        options.counters.clone(),
                        tx,
                    )));
                    tasks.push(tokio::spawn(forward(provider, rx, updates_tx.clone())));
                }
            }
        }
        drop(updates_tx);
        let (tx, rx) = watch::channel(Arc::new(merged(&groups)));
        let reports = Arc::new(AtomicU64::new(0));
        let counter = reports.clone();
        tasks.push(tokio::spawn(async move {
            while let Some((provider, update)) = updates_rx.recv().await {
                for g in update {
                    groups.insert((provider, g.source.clone()), g);
                }
                // Coalesce what is already queued into one publication.
                while let Ok((provider, update)) = updates_rx.try_recv() {
                    for g in update {
                        groups.insert((provider, g.source.clone()), g);
                    }
                }
                counter.fetch_add(1, Ordering::Release);
                if tx.send(Arc::new(merged(&groups))).is_err() {
                    return;
                }
            }
        }));
        Self { rx, reports, tasks }
    }

    /// A receiver of every publication (the current one is marked seen only once read).
    pub fn subscribe(&self) -> watch::Receiver<Arc<Vec<TargetGroup>>> {
        self.rx.clone()
    }

    /// Whether a mechanism other than static lists has reported yet.
    pub fn has_reported(&self) -> bool {
        self.reports.load(Ordering::Acquire) > 0
    }

    /// The groups known now.
    pub fn groups(&self) -> Arc<Vec<TargetGroup>> {
        self.rx.borrow().clone()
    }
}

impl Drop for DiscoveryManager {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

async fn forward(
    provider: usize,
    mut rx: mpsc::Receiver<Vec<TargetGroup>>,
    tx: mpsc::Sender<(usize, Vec<TargetGroup>)>,
) {
    while let Some(groups) = rx.recv().await {
        if tx.send((provider, groups)).await.is_err() {
            return;
        }
    }
}

fn merged(groups: &BTreeMap<(usize, String), TargetGroup>) -> Vec<TargetGroup> {
    groups.values().filter(|g| !g.targets.is_empty()).cloned().collect()
}
