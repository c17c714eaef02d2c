//! The scrape manager: one pool per job, each fed by its own discovery, and
//! reloads that leave unchanged jobs alone.

use std::collections::BTreeMap;
use std::sync::Arc;

use cairn_storage::Appendable;
use parking_lot::RwLock;
use tokio::sync::{Mutex, watch};
use tokio::task::JoinHandle;

use crate::discovery::{DiscoveryManager, DiscoveryOptions, SdConfig};
use crate::metrics::{ScrapeMetrics, ScrapeMetricsSnapshot, inc};
use crate::pool::{PoolView, ScrapePool};
use crate::settings::JobSettings;
use crate::target::Target;

/// Tunables of scraping that are not in Prometheus' configuration file.
#[derive(Clone, Default)]
pub struct ScrapeOptions {
    /// Mixed into every target's start offset, so that several servers
    /// scraping the same targets do so at different times (Prometheus derives
    /// it from the host name and external labels).
    pub offset_seed: u64,
    /// Scrape new targets at once instead of at their offset (tests).
    pub skip_offset: bool,
    pub discovery: DiscoveryOptions,
    /// The targets this process scrapes when several share the work (a
    /// cluster): a target whose hash it does not own is left to another.
    pub share: Option<Arc<dyn cairn_storage::WorkShare>>,
    /// In a cluster, where a loop started for a target another process may
    /// have scraped until now reads that process's last scrape (see
    /// `inherit.rs`).
    pub inherit_from: Option<Arc<dyn cairn_storage::Queryable>>,
    /// Targets' caches hold no series, only what staleness needs (agent
    /// mode): memory per series falls to a few bytes, and every scrape's
    /// labels are built again.
    pub lean_caches: bool,
}

impl std::fmt::Debug for ScrapeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScrapeOptions")
            .field("offset_seed", &self.offset_seed)
            .field("skip_offset", &self.skip_offset)
            .field("discovery", &self.discovery)
            .field("share", &self.share)
            .field("inherit_from", &self.inherit_from.is_some())
            .field("lean_caches", &self.lean_caches)
            .finish()
    }
}

/// Prometheus' offset seed: FNV-64a of the host's name followed by the
/// external labels as Go prints a label set (`{a="b", c="d"}`).
pub fn offset_seed(hostname: &str, external_labels: &cairn_model::Labels) -> u64 {
    let pairs: Vec<String> = external_labels
        .iter()
        .map(|l| format!("{}={:?}", l.name, l.value.as_str()))
        .collect();
    crate::target::fnv64a(format!("{hostname}{{{}}}", pairs.join(", ")).as_bytes())
}

struct PoolEntry {
    pool: Arc<Mutex<ScrapePool>>,
    view: Arc<RwLock<PoolView>>,
    job: Arc<JobSettings>,
    discovery: DiscoveryManager,
    sync_task: JoinHandle<()>,
}

/// Scrapes every configured job into one storage.
pub struct ScrapeManager {
    storage: Arc<dyn Appendable>,
    options: ScrapeOptions,
    pools: Mutex<BTreeMap<String, PoolEntry>>,
    views: RwLock<BTreeMap<String, Arc<RwLock<PoolView>>>>,
    shutdown: watch::Sender<bool>,
    metrics: Arc<ScrapeMetrics>,
}

impl ScrapeManager {
    pub fn new(storage: Arc<dyn Appendable>, options: ScrapeOptions) -> Self {
        let metrics = Arc::new(ScrapeMetrics {
            discovery: options.discovery.counters.clone(),
            ..ScrapeMetrics::default()
        });
        Self {
            storage,
            options,
            pools: Mutex::new(BTreeMap::new()),
            views: RwLock::new(BTreeMap::new()),
            shutdown: watch::channel(false).0,
            metrics,
        }
    }

    /// Prometheus' `prometheus_target_*` figures (and the scrape side's
    /// `prometheus_sd_*`): counters since start, the running pools'.
    pub fn metrics(&self) -> ScrapeMetricsSnapshot {
        self.metrics.snapshot()
    }

    /// Makes `jobs` the scraped set: new jobs start, removed ones stop (their
    /// series marked stale), changed ones reload, unchanged ones (equal
    /// fingerprints) keep running untouched. Jobs whose HTTP client cannot be
    /// built are reported in the error; the others are applied regardless.
    pub async fn apply(&self, jobs: Vec<JobSettings>) -> Result<(), String> {
        let mut pools = self.pools.lock().await;
        let wanted: BTreeMap<String, Arc<JobSettings>> =
            jobs.into_iter().map(|j| (j.job_name.clone(), Arc::new(j))).collect();
        let removed: Vec<String> = pools.keys().filter(|n| !wanted.contains_key(*n)).cloned().collect();
        for name in removed {
            if let Some(entry) = pools.remove(&name) {
                entry.sync_task.abort();
                entry.pool.lock().await.stop();
            }
        }
        let mut errors = Vec::new();
        for (name, job) in wanted {
            let result = match pools.get_mut(&name) {
                Some(entry) => self.reload_pool(entry, job).await,
                None => match self.start_pool(job) {
                    Ok(entry) => {
                        pools.insert(name.clone(), entry);
                        Ok(())
                    }
                    Err(e) => Err(e),
                },
            };
            if let Err(e) = result {
                tracing::error!(scrape_pool = %name, err = %e, "error reloading scrape pool");
                errors.push(format!("{name}: {e}"));
            }
        }
        *self.views.write() = pools.iter().map(|(n, e)| (n.clone(), e.view.clone())).collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }

    fn start_pool(&self, job: Arc<JobSettings>) -> Result<PoolEntry, String> {
        inc(&self.metrics.scrape_pools);
        let mut pool = ScrapePool::new(
            job.clone(),
            self.storage.clone(),
            self.options.clone(),
            self.shutdown.subscribe(),
            self.metrics.clone(),
        )
        .inspect_err(|_| inc(&self.metrics.scrape_pools_failed))?;
        let discovery = DiscoveryManager::start(&job.discovery, &self.options.discovery);
        let mut updates = discovery.subscribe();
        pool.sync(updates.borrow_and_update().clone());
        let view = pool.view.clone();
        let pool = Arc::new(Mutex::new(pool));
        let sync_task = tokio::spawn(sync_on_updates(pool.clone(), updates));
        Ok(PoolEntry {
            pool,
            view,
            job,
            discovery,
            sync_task,
        })
    }

    async fn reload_pool(&self, entry: &mut PoolEntry, job: Arc<JobSettings>) -> Result<(), String> {
        if job.same_config(&entry.job) {
            return Ok(());
        }
        if job.discovery != entry.job.discovery {
            entry.sync_task.abort();
            entry.discovery = DiscoveryManager::start(&job.discovery, &self.options.discovery);
            let mut updates = entry.discovery.subscribe();
            let mut pool = entry.pool.lock().await;
            pool.reload(job.clone()).await?;
            // Static groups are final now; other mechanisms' targets replace
            // the old ones when they first report, so that targets found
            // again keep their loops.
            let groups = updates.borrow_and_update().clone();
            if entry.discovery.has_reported() || job.discovery.iter().all(|d| matches!(d, SdConfig::Static(_))) {
                pool.sync(groups);
            }
            drop(pool);
            entry.sync_task = tokio::spawn(sync_on_updates(entry.pool.clone(), updates));
        } else {
            entry.pool.lock().await.reload(job.clone()).await?;
        }
        entry.job = job;
        Ok(())
    }

    /// [`ScrapeManager::apply`] with the scrape jobs of a loaded configuration.
    pub async fn apply_config(&self, config: &cairn_config::Config) -> Result<(), String> {
        self.apply(crate::from_config::jobs_of(config)?).await
    }

    /// Active targets by pool.
    pub fn active_targets(&self) -> BTreeMap<String, Vec<Arc<Target>>> {
        self.views
            .read()
            .iter()
            .map(|(n, v)| (n.clone(), v.read().active.clone()))
            .collect()
    }

    /// Dropped targets kept for display, by pool.
    pub fn dropped_targets(&self) -> BTreeMap<String, Vec<Arc<Target>>> {
        self.views
            .read()
            .iter()
            .map(|(n, v)| (n.clone(), v.read().dropped.clone()))
            .collect()
    }

    /// How many targets relabelling dropped, by pool (all of them, kept or not).
    pub fn dropped_target_counts(&self) -> BTreeMap<String, usize> {
        self.views
            .read()
            .iter()
            .map(|(n, v)| (n.clone(), v.read().dropped_count))
            .collect()
    }

    /// Takes up the targets the work share gives this process now and
    /// leaves those it gives to others, without staleness markers: their
    /// series go on from the process that takes them.
    pub async fn reassign(&self) {
        let pools: Vec<Arc<Mutex<ScrapePool>>> = self.pools.lock().await.values().map(|e| e.pool.clone()).collect();
        for pool in pools {
            pool.lock().await.reassign();
        }
    }

    /// Stops everything without staleness markers (the process is stopping).
    pub async fn shutdown(&self) {
        let _ = self.shutdown.send(true);
        let mut pools = self.pools.lock().await;
        for (_, entry) in std::mem::take(&mut *pools) {
            entry.sync_task.abort();
            entry.pool.lock().await.shutdown();
        }
        self.views.write().clear();
    }
}

async fn sync_on_updates(
    pool: Arc<Mutex<ScrapePool>>,
    mut updates: watch::Receiver<Arc<Vec<crate::discovery::TargetGroup>>>,
) {
    while updates.changed().await.is_ok() {
        let groups = updates.borrow_and_update().clone();
        pool.lock().await.sync(groups);
    }
}
