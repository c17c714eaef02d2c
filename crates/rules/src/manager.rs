//! The rule manager: loads rule files, runs each group on its own schedule,
//! reloads atomically keeping state, and reports groups and alerts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use cairn_model::{Sample, stale_nan};
use cairn_promql::Engine;
use cairn_storage::{Appendable, Queryable, WorkShare};
use parking_lot::Mutex;

use crate::alert::{AlertNotifier, system_time_to_ns};
use crate::file::{GroupSpec, load_rule_file};
use crate::group::{EvalEnv, Group};
use crate::metrics::{Durations, GroupCounters, GroupMetrics, RuleMetrics};
use crate::status::{GroupStatus, group_status};

/// What the manager is built with (fixed for its life).
pub struct RuleManagerOptions {
    pub engine: Arc<Engine>,
    pub queryable: Arc<dyn Queryable>,
    pub appendable: Arc<dyn Appendable>,
    pub notifier: Option<Arc<dyn AlertNotifier>>,
    /// `--rules.alert.resend-delay` (1m).
    pub resend_delay: Duration,
    /// `--rules.alert.for-outage-tolerance` (1h).
    pub outage_tolerance: Duration,
    /// `--rules.alert.for-grace-period` (10m).
    pub for_grace_period: Duration,
    /// Run each group on its schedule (false: only [`RuleManager::eval_group_at`] evaluates, for tests).
    pub schedule: bool,
    /// The groups this process evaluates when several share the work (a
    /// cluster); every group when `None`.
    pub share: Option<Arc<dyn WorkShare>>,
}

impl RuleManagerOptions {
    pub fn new(engine: Arc<Engine>, queryable: Arc<dyn Queryable>, appendable: Arc<dyn Appendable>) -> Self {
        Self {
            engine,
            queryable,
            appendable,
            notifier: None,
            resend_delay: Duration::from_secs(60),
            outage_tolerance: Duration::from_secs(3600),
            for_grace_period: Duration::from_secs(600),
            schedule: true,
            share: None,
        }
    }
}

/// What each reload gives (from prometheus.yml's `global` and `rule_files`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RulesConfig {
    /// Rule files, globs already expanded.
    pub files: Vec<PathBuf>,
    /// `global.evaluation_interval` (Prometheus' default 1m).
    pub evaluation_interval: Duration,
    /// `global.rule_query_offset`.
    pub query_offset: Duration,
    pub external_labels: BTreeMap<String, String>,
    /// `--web.external-url`.
    pub external_url: String,
}

/// A group and the status snapshot taken after each of its evaluations, so
/// the API never waits for an evaluation in progress.
struct RunningGroup {
    group: Mutex<Group>,
    status: Mutex<GroupStatus>,
    /// The group's counters, read without waiting for an evaluation.
    counters: Arc<GroupCounters>,
    interval: Duration,
    rules: usize,
}

impl RunningGroup {
    fn new(group: Group) -> Self {
        let status = Mutex::new(group_status(&group));
        Self {
            counters: group.counters.clone(),
            interval: group.interval,
            rules: group.rules.len(),
            group: Mutex::new(group),
            status,
        }
    }

    fn eval(&self, ts: i64, env: &EvalEnv, restore: bool) {
        let mut g = self.group.lock();
        g.eval(ts, env);
        if restore && g.should_restore {
            g.restore_for_state(system_time_to_ns(SystemTime::now()), env);
        }
        *self.status.lock() = group_status(&g);
    }

    fn restore(&self, ts: i64, env: &EvalEnv) {
        let mut g = self.group.lock();
        g.restore_for_state(ts, env);
        *self.status.lock() = group_status(&g);
    }
}

struct GroupHandle {
    group: Arc<RunningGroup>,
    stop: Arc<AtomicBool>,
    wake: Arc<tokio::sync::Notify>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl GroupHandle {
    fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.wake.notify_one();
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

struct State {
    groups: BTreeMap<(String, String), GroupHandle>,
    env: Arc<EvalEnv>,
    config: RulesConfig,
    /// Every group of the files loaded last, this process's or not.
    specs: Vec<GroupSpec>,
    /// Groups loaded after the first load do not restore alert state.
    restored: bool,
}

/// Runs rule groups; see [`RuleManager::update`].
pub struct RuleManager {
    opts: RuleManagerOptions,
    state: Mutex<State>,
    durations: Arc<Durations>,
}

impl RuleManager {
    pub fn new(opts: RuleManagerOptions) -> Self {
        let durations = Arc::new(Durations::default());
        let env = Arc::new(env_for(&opts, &RulesConfig::default(), &durations));
        Self {
            opts,
            durations,
            state: Mutex::new(State {
                groups: BTreeMap::new(),
                env,
                config: RulesConfig::default(),
                specs: Vec::new(),
                restored: false,
            }),
        }
    }

    /// Loads `config.files` and swaps them in atomically: on any error nothing
    /// changes and every error is returned. Unchanged groups keep running;
    /// changed ones take over their predecessor's alert state; removed ones
    /// stop and their series are marked stale two intervals later.
    /// With `schedule`, must be called inside a Tokio runtime.
    pub fn update(&self, config: RulesConfig) -> Result<(), Vec<String>> {
        let mut specs = Vec::new();
        let mut errors = Vec::new();
        for f in &config.files {
            match load_rule_file(f) {
                Ok(file) => specs.extend(file.groups),
                Err(e) => errors.extend(e),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut state = self.state.lock();
        self.apply(&mut state, specs, config);
        Ok(())
    }

    /// Takes up the groups the work share gives this process now and stops
    /// those it gives to others, without staleness markers: their series go
    /// on from the process that takes them, which takes their alerts' state
    /// over at its first evaluation there (see `Group::take_over`).
    pub fn reassign(&self) {
        let mut state = self.state.lock();
        let (specs, config) = (state.specs.clone(), state.config.clone());
        self.apply(&mut state, specs, config);
    }

    fn owns(&self, spec: &GroupSpec) -> bool {
        self.opts
            .share
            .as_ref()
            .is_none_or(|s| s.owns(cairn_storage::rule_group_key(&spec.file, &spec.name)))
    }

    /// Makes the groups of `specs` this process owns the running ones.
    fn apply(&self, state: &mut State, specs: Vec<GroupSpec>, config: RulesConfig) {
        let env_changed =
            state.config.external_labels != config.external_labels || state.config.external_url != config.external_url;
        let env = if env_changed || state.groups.is_empty() {
            Arc::new(env_for(&self.opts, &config, &self.durations))
        } else {
            state.env.clone()
        };
        // A group may come from another process of the cluster at any time.
        let should_restore = !state.restored || self.opts.share.is_some();
        let mut old_groups = std::mem::take(&mut state.groups);
        let mut new_groups = BTreeMap::new();
        for spec in &specs {
            let key = (spec.file.clone(), spec.name.clone());
            if !self.owns(spec) {
                if let Some(mut old) = old_groups.remove(&key) {
                    old.stop();
                }
                continue;
            }
            let mut new = Group::new(
                spec.clone(),
                config.evaluation_interval,
                config.query_offset,
                should_restore,
            );
            if let Some(mut old) = old_groups.remove(&key) {
                let unchanged = {
                    let g = old.group.group.lock();
                    g.spec == new.spec
                        && g.interval == new.interval
                        && g.query_offset == new.query_offset
                        && !env_changed
                };
                if unchanged {
                    new_groups.insert(key, old);
                    continue;
                }
                old.stop();
                new.copy_state(&mut old.group.group.lock());
            }
            new_groups.insert(key, self.start(new, &env));
        }
        for (_, mut old) in old_groups {
            old.stop();
            self.mark_removed_stale(&old, &env);
        }
        state.groups = new_groups;
        state.env = env;
        state.config = config;
        state.specs = specs;
        state.restored = true;
    }

    fn start(&self, group: Group, env: &Arc<EvalEnv>) -> GroupHandle {
        let group = Arc::new(RunningGroup::new(group));
        let stop = Arc::new(AtomicBool::new(false));
        let wake = Arc::new(tokio::sync::Notify::new());
        let task = if self.opts.schedule {
            Some(tokio::spawn(run_group(
                group.clone(),
                env.clone(),
                stop.clone(),
                wake.clone(),
            )))
        } else {
            None
        };
        GroupHandle {
            group,
            stop,
            wake,
            task,
        }
    }

    /// A removed group's series become stale after two of its intervals
    /// (time for a group elsewhere to take them over), as in Prometheus.
    fn mark_removed_stale(&self, old: &GroupHandle, env: &Arc<EvalEnv>) {
        let (series, interval, offset) = {
            let mut g = old.group.group.lock();
            (g.take_all_series(), g.interval, g.query_offset)
        };
        if series.is_empty() {
            return;
        }
        let stopped = system_time_to_ns(SystemTime::now());
        let t_ms = (stopped - offset.as_nanos() as i64).div_euclid(1_000_000);
        let appendable = env.appendable.clone();
        let queryable = env.queryable.clone();
        let write = move || {
            let mut app = appendable.appender();
            for s in &series {
                // Storage here accepts writes into the past: a series another
                // group took over must not get a marker behind its newer samples.
                if written_since(queryable.as_ref(), s, t_ms) {
                    continue;
                }
                let _ = app.append(s, &[Sample::new(t_ms, stale_nan())]);
            }
            if let Err(e) = app.commit() {
                tracing::warn!(err = %e, "writing stale samples for a removed group failed");
            }
        };
        if self.opts.schedule {
            tokio::spawn(async move {
                tokio::time::sleep(interval * 2).await;
                let _ = tokio::task::spawn_blocking(write).await;
            });
        } else {
            write();
        }
    }

    /// Evaluates one group at `ts` now (what its schedule does at each tick).
    /// Returns false when no such group is loaded.
    pub fn eval_group_at(&self, file: &str, name: &str, ts: SystemTime) -> bool {
        let (group, env) = {
            let state = self.state.lock();
            match state.groups.get(&(file.to_string(), name.to_string())) {
                Some(h) => (h.group.clone(), state.env.clone()),
                None => return false,
            }
        };
        group.eval(system_time_to_ns(ts), &env, false);
        true
    }

    /// Restores one group's alert state from `ALERTS_FOR_STATE` at `now`, as
    /// its schedule does after its second evaluation following startup.
    pub fn restore_group_at(&self, file: &str, name: &str, now: SystemTime) -> bool {
        let (group, env) = {
            let state = self.state.lock();
            match state.groups.get(&(file.to_string(), name.to_string())) {
                Some(h) => (h.group.clone(), state.env.clone()),
                None => return false,
            }
        };
        group.restore(system_time_to_ns(now), &env);
        true
    }

    /// Every group's status, ordered by file then name (as `/api/v1/rules` lists them).
    pub fn groups(&self) -> Vec<GroupStatus> {
        let handles: Vec<Arc<RunningGroup>> = self.state.lock().groups.values().map(|h| h.group.clone()).collect();
        handles.iter().map(|g| g.status.lock().clone()).collect()
    }

    /// Prometheus' `prometheus_rule_*` figures: every loaded group's (a
    /// removed group's are gone) and the evaluation latency summaries.
    pub fn metrics(&self) -> RuleMetrics {
        let groups = self
            .state
            .lock()
            .groups
            .iter()
            .map(|((file, name), h)| {
                let g = &h.group;
                g.counters.snapshot(file, name, g.interval, g.rules)
            })
            .collect::<Vec<GroupMetrics>>();
        RuleMetrics {
            groups,
            evaluation_duration: self.durations.rule.snapshot(),
            group_duration: self.durations.group.snapshot(),
        }
    }

    /// The active (pending and firing) alerts of every alerting rule.
    pub fn alerts(&self) -> Vec<crate::status::AlertStatus> {
        self.groups()
            .into_iter()
            .flat_map(|g| g.rules.into_iter().flat_map(|r| r.alerts))
            .collect()
    }

    /// Stops every group.
    pub fn stop(&self) {
        let mut state = self.state.lock();
        for h in state.groups.values_mut() {
            h.stop();
        }
    }
}

impl Drop for RuleManager {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether `series` has a sample after `t_ms`.
fn written_since(queryable: &dyn Queryable, series: &cairn_model::Labels, t_ms: i64) -> bool {
    let matchers: Vec<cairn_model::Matcher> = series
        .iter()
        .map(|l| cairn_model::Matcher::equal(l.name.as_str(), l.value.as_str()))
        .collect();
    let Ok(q) = queryable.querier(t_ms + 1, i64::MAX / 2) else {
        return false;
    };
    let Ok(set) = q.select(&cairn_storage::SelectHints::default(), &matchers) else {
        return false;
    };
    set.flatten().any(|mut s| {
        s.labels == *series
            && (!s.histograms.is_empty()
                || cairn_storage::collect_samples(s.samples.as_mut()).is_ok_and(|v| !v.is_empty()))
    })
}

fn env_for(opts: &RuleManagerOptions, config: &RulesConfig, durations: &Arc<Durations>) -> EvalEnv {
    EvalEnv {
        engine: opts.engine.clone(),
        queryable: opts.queryable.clone(),
        appendable: opts.appendable.clone(),
        notifier: opts.notifier.clone(),
        external_labels: config.external_labels.clone(),
        external_url: config.external_url.clone(),
        resend_delay: opts.resend_delay,
        outage_tolerance: opts.outage_tolerance,
        for_grace_period: opts.for_grace_period,
        groups_move: opts.share.is_some(),
        durations: durations.clone(),
    }
}

/// Prometheus' group loop: the first evaluation at the group's next aligned
/// slot, then one per interval (skipping missed slots); after the second
/// evaluation following startup, alert state is restored.
async fn run_group(group: Arc<RunningGroup>, env: Arc<EvalEnv>, stop: Arc<AtomicBool>, wake: Arc<tokio::sync::Notify>) {
    let (interval, mut next) = {
        let g = group.group.lock();
        let now = system_time_to_ns(SystemTime::now());
        (
            g.interval.as_nanos().max(1) as i64,
            g.eval_timestamp(now) + g.interval.as_nanos() as i64,
        )
    };
    let mut iterations = 0u64;
    loop {
        let now = system_time_to_ns(SystemTime::now());
        if next > now {
            let wait = Duration::from_nanos((next - now) as u64);
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = wake.notified() => {}
            }
        }
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let (g, e, ts) = (group.clone(), env.clone(), next);
        let restore_after = iterations == 1;
        let _ = tokio::task::spawn_blocking(move || g.eval(ts, &e, restore_after)).await;
        iterations += 1;
        next = next_slot(&group.counters, next, interval, system_time_to_ns(SystemTime::now()));
    }
}

/// The slot after an iteration scheduled at `slot` (ns) that ended at `now`:
/// slots that passed meanwhile are skipped and counted as missed.
fn next_slot(counters: &GroupCounters, slot: i64, interval: i64, now: i64) -> i64 {
    let missed = ((now - slot) / interval - 1).max(0);
    if missed > 0 {
        tracing::warn!(missed, "rule group missed evaluations");
        counters.missed(missed as u64);
    }
    slot + (missed + 1) * interval
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrunning_iteration_counts_missed_slots() {
        let c = GroupCounters::new();
        let s = 1_000_000_000;
        // On time: the next slot follows, nothing missed.
        assert_eq!(next_slot(&c, 10 * s, s, 10 * s + s / 2), 11 * s);
        // Ran 3.5 intervals: slots 11 and 12 are skipped, 13 runs late at once.
        assert_eq!(next_slot(&c, 10 * s, s, 13 * s + s / 2), 13 * s);
        let m = c.snapshot("f", "g", Duration::from_secs(1), 0);
        assert_eq!(m.iterations_missed_total, 2);
        assert_eq!(m.iterations_total, 2, "missed slots count as scheduled iterations");
    }
}
