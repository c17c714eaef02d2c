//! A scrape pool: one job's targets from its discovered groups, one loop per
//! distinct target, the dropped targets, target_limit, and reloads.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use cairn_storage::Appendable;
use parking_lot::{Mutex, RwLock};

use crate::cache::ScrapeCache;
use crate::client::{ScrapeClient, scrape_client};
use crate::discovery::TargetGroup;
use crate::manager::ScrapeOptions;
use crate::metrics::{PoolCounters, ScrapeMetrics, inc};
use crate::scrape_loop::{LoopContext, LoopHandle};
use crate::settings::JobSettings;
use crate::target::{Target, discovered_labels, target_labels};

/// What the targets API shows of a pool.
#[derive(Default)]
pub(crate) struct PoolView {
    pub active: Vec<Arc<Target>>,
    /// Up to `keep_dropped_targets` of them.
    pub dropped: Vec<Arc<Target>>,
    pub dropped_count: usize,
}

struct RunningLoop {
    target: Arc<Target>,
    handle: LoopHandle,
}

pub(crate) struct ScrapePool {
    job: Arc<JobSettings>,
    client: ScrapeClient,
    storage: Arc<dyn Appendable>,
    options: ScrapeOptions,
    loops: HashMap<u64, RunningLoop>,
    /// Per set of target labels (what its series carry), the newest scrape
    /// time of the loops writing them (see `LoopContext`).
    last_scrape: HashMap<u64, Arc<AtomicI64>>,
    groups: Arc<Vec<TargetGroup>>,
    shutdown: tokio::sync::watch::Receiver<bool>,
    pub view: Arc<RwLock<PoolView>>,
    metrics: Arc<ScrapeMetrics>,
    counters: Arc<PoolCounters>,
}

impl ScrapePool {
    pub fn new(
        job: Arc<JobSettings>,
        storage: Arc<dyn Appendable>,
        options: ScrapeOptions,
        shutdown: tokio::sync::watch::Receiver<bool>,
        metrics: Arc<ScrapeMetrics>,
    ) -> Result<Self, String> {
        let client = scrape_client(&job.http)?;
        let counters = metrics.pool(&job.job_name);
        counters.target_limit.store(job.target_limit as u64, Ordering::Relaxed);
        Ok(Self {
            metrics,
            counters,
            job,
            client,
            storage,
            options,
            loops: HashMap::new(),
            last_scrape: HashMap::new(),
            groups: Arc::new(Vec::new()),
            shutdown,
            view: Arc::default(),
        })
    }

    /// Turns groups into targets: starts loops for new targets, stops those of
    /// targets gone (they write staleness markers), keeps the others running.
    pub fn sync(&mut self, groups: Arc<Vec<TargetGroup>>) {
        let started = std::time::Instant::now();
        let discovered: usize = groups.iter().map(|g| g.targets.len()).sum();
        self.counters.discovered.store(discovered as u64, Ordering::Relaxed);
        let failures = self.sync_targets(groups);
        self.counters.sync_failed.fetch_add(failures, Ordering::Relaxed);
        self.counters.sync_length.observe(started.elapsed().as_secs_f64());
        inc(&self.counters.syncs);
    }

    /// [`ScrapePool::sync`]'s work; returns the targets whose labels failed.
    fn sync_targets(&mut self, groups: Arc<Vec<TargetGroup>>) -> u64 {
        self.groups = groups.clone();
        let mut failures = 0;
        let job = self.job.clone();
        let keep_dropped = job.keep_dropped_targets;
        let mut dropped = Vec::new();
        let mut dropped_count = 0;
        let mut wanted: Vec<Arc<Target>> = Vec::new();
        for group in groups.iter() {
            for (i, t) in group.targets.iter().enumerate() {
                let discovered = discovered_labels(&job, t, &group.labels);
                match target_labels(&job, &discovered) {
                    Err(e) => {
                        failures += 1;
                        tracing::error!(
                            scrape_pool = %job.job_name, err = %format!("instance {i} in group {}: {e}", group.source),
                            "Creating target failed"
                        )
                    }
                    Ok(Some(labels)) => wanted.push(Arc::new(Target::new(&job, labels, discovered))),
                    Ok(None) => {
                        if keep_dropped == 0 || dropped.len() < keep_dropped {
                            dropped.push(Arc::new(Target::new(&job, Default::default(), discovered)));
                        }
                        dropped_count += 1;
                    }
                }
            }
        }
        let mut active: HashMap<u64, Arc<Target>> = HashMap::new();
        let mut order: Vec<u64> = Vec::new();
        let mut to_start: Vec<Arc<Target>> = Vec::new();
        // Targets another process of the cluster scrapes.
        let mut elsewhere: std::collections::HashSet<u64> = std::collections::HashSet::new();
        for t in wanted {
            let hash = t.hash();
            if self.options.share.as_ref().is_some_and(|s| !s.owns(hash)) {
                elsewhere.insert(hash);
                continue;
            }
            if let Some(running) = self.loops.get(&hash) {
                running.target.set_discovered_labels(t.discovered_labels());
                if let std::collections::hash_map::Entry::Vacant(e) = active.entry(hash) {
                    e.insert(running.target.clone());
                    order.push(hash);
                }
                continue;
            }
            if let std::collections::hash_map::Entry::Vacant(e) = active.entry(hash) {
                e.insert(t.clone());
                order.push(hash);
                to_start.push(t);
            }
        }
        let gone: Vec<u64> = self.loops.keys().filter(|h| !active.contains_key(h)).copied().collect();
        for hash in gone {
            if let Some(running) = self.loops.remove(&hash) {
                if elsewhere.contains(&hash) {
                    // Its series go on from the process taking it over.
                    running.handle.shutdown();
                } else {
                    running.handle.stop();
                }
            }
        }
        // The limit's verdict is set before new loops start, so that none
        // scrapes once when the pool is over it. It counts the targets the
        // processes sharing the work scrape together.
        let error = self.target_limit_error(active.len() + elsewhere.len());
        if error.is_some() {
            inc(&self.metrics.exceeded_target_limit);
        }
        self.counters.targets.store(active.len() as u64, Ordering::Relaxed);
        for running in self.loops.values() {
            *running.handle.forced_error.lock() = error.clone();
        }
        for t in to_start {
            // In a cluster a target new here may come from another node.
            let inherit_from = self.options.inherit_from.clone();
            let handle = self.start_loop(
                t.clone(),
                ScrapeCache::new(self.options.lean_caches),
                error.clone(),
                inherit_from,
            );
            self.loops.insert(t.hash(), RunningLoop { target: t, handle });
        }
        let live: std::collections::HashSet<u64> = active.values().map(|t| series_identity(t)).collect();
        self.last_scrape.retain(|h, last| {
            live.contains(h)
                || last.load(std::sync::atomic::Ordering::Relaxed)
                    > now_ms() - 3 * job.scrape_interval.as_millis() as i64 - 60_000
        });
        let mut active: Vec<Arc<Target>> = order.into_iter().filter_map(|h| active.remove(&h)).collect();
        active.sort_by(|a, b| a.url().cmp(b.url()).then_with(|| a.all_labels().cmp(b.all_labels())));
        *self.view.write() = PoolView {
            active,
            dropped,
            dropped_count,
        };
        failures
    }

    /// Derives the targets again from the last groups, for a changed work share.
    pub fn reassign(&mut self) {
        let groups = self.groups.clone();
        self.sync_targets(groups);
    }

    fn target_limit_error(&self, targets: usize) -> Option<String> {
        let limit = self.job.target_limit;
        (limit > 0 && targets > limit)
            .then(|| format!("target_limit exceeded (number of targets: {targets}, limit: {limit})"))
    }

    fn start_loop(
        &mut self,
        target: Arc<Target>,
        cache: ScrapeCache,
        forced_error: Option<String>,
        inherit_from: Option<Arc<dyn cairn_storage::Queryable>>,
    ) -> LoopHandle {
        let last_scrape = self.last_scrape.entry(series_identity(&target)).or_default().clone();
        let ctx = LoopContext {
            job: self.job.clone(),
            client: self.client.clone(),
            storage: self.storage.clone(),
            offset_seed: self.options.offset_seed,
            skip_offset: self.options.skip_offset,
            last_scrape_ms: last_scrape,
            forced_error: Arc::new(Mutex::new(forced_error)),
            shutdown: self.shutdown.clone(),
            metrics: self.metrics.clone(),
            inherit_from,
        };
        LoopHandle::start(target, ctx, cache)
    }

    /// A changed job: every loop restarts with the new settings (keeping its
    /// cache when only interval, timeout, sample limit or the HTTP client
    /// changed), then the targets are derived again from the last groups.
    pub async fn reload(&mut self, job: Arc<JobSettings>) -> Result<(), String> {
        inc(&self.metrics.pool_reloads);
        let started = std::time::Instant::now();
        let client = scrape_client(&job.http).inspect_err(|_| inc(&self.metrics.pool_reloads_failed))?;
        self.counters
            .target_limit
            .store(job.target_limit as u64, Ordering::Relaxed);
        let reuse = self.job.cache_reusable(&job);
        self.job = job;
        self.client = client;
        let lean = self.options.lean_caches;
        let old: Vec<(u64, RunningLoop)> = self.loops.drain().collect();
        let mut caches = Vec::with_capacity(old.len());
        if reuse {
            let mut pending = Vec::with_capacity(old.len());
            for (hash, running) in old {
                running.handle.begin_handover();
                pending.push((hash, running));
            }
            for (hash, running) in pending {
                let cache = running
                    .handle
                    .hand_over()
                    .await
                    .unwrap_or_else(|| ScrapeCache::new(lean));
                caches.push((running.target, cache, hash));
            }
        } else {
            for (hash, running) in old {
                running.handle.stop();
                caches.push((running.target, ScrapeCache::new(lean), hash));
            }
        }
        let error = self.target_limit_error(caches.len());
        for (target, cache, hash) in caches {
            let handle = self.start_loop(target.clone(), cache, error.clone(), None);
            self.loops.insert(hash, RunningLoop { target, handle });
        }
        let groups = self.groups.clone();
        self.sync_targets(groups);
        self.metrics.observe_reload(self.job.scrape_interval, started.elapsed());
        Ok(())
    }

    /// The job is gone: every loop stops and marks its series stale.
    pub fn stop(&mut self) {
        for (_, running) in self.loops.drain() {
            running.handle.stop();
        }
        self.metrics.remove_pool(&self.job.job_name);
        *self.view.write() = PoolView::default();
    }

    /// The process stops: loops end at once, without staleness markers.
    pub fn shutdown(&mut self) {
        for (_, running) in self.loops.drain() {
            running.handle.shutdown();
        }
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Loops of targets with equal public labels write the same series.
fn series_identity(target: &Target) -> u64 {
    crate::target::labels_hash(&target.labels())
}
