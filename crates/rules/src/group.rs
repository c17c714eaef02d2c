//! A rule group: its rules evaluated in order at one timestamp, their output
//! written with stale markers, alert state, notification, restore and the
//! state a reload carries over.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use cairn_model::{HistogramSample, Labels, Matcher, Sample, stale_nan};
use cairn_promql::{Engine, SampleValue, Value as PromValue};
use cairn_storage::{Appendable, Queryable, SelectHints, collect_samples};

use crate::alert::{Alert, AlertNotifier, AlertState, NotifyAlert, ns_to_system_time};
use crate::file::{GroupSpec, RuleKind, RuleSpec};
use crate::metrics::{Durations, GroupCounters};
use crate::template::{self, AlertData, QuerySample};

/// How long resolved alerts are kept (and re-sent) after they resolve.
const RESOLVED_RETENTION_NS: i64 = 15 * 60 * 1_000_000_000;

/// What every evaluation needs from the manager.
pub struct EvalEnv {
    pub engine: Arc<Engine>,
    pub queryable: Arc<dyn Queryable>,
    pub appendable: Arc<dyn Appendable>,
    pub notifier: Option<Arc<dyn AlertNotifier>>,
    pub external_labels: BTreeMap<String, String>,
    pub external_url: String,
    pub resend_delay: Duration,
    pub outage_tolerance: Duration,
    pub for_grace_period: Duration,
    /// Groups move between the nodes of a cluster, so a group starting
    /// takes over from another node rather than coming back from an outage
    /// (see [`Group::take_over`]).
    pub groups_move: bool,
    /// The latency summaries every group feeds.
    pub(crate) durations: Arc<Durations>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleHealth {
    Unknown,
    Good,
    Bad,
}

impl RuleHealth {
    /// The API's words.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleHealth::Unknown => "unknown",
            RuleHealth::Good => "ok",
            RuleHealth::Bad => "err",
        }
    }
}

pub(crate) struct Rule {
    pub spec: RuleSpec,
    pub health: RuleHealth,
    pub last_error: Option<String>,
    pub evaluation_time: Duration,
    pub last_evaluation: Option<SystemTime>,
    /// Alerting rules: alerts by their label set.
    pub active: HashMap<Labels, Alert>,
    /// Alerting rules write ALERTS only once their state was restored (or needed none).
    pub restored: bool,
    /// The series this rule wrote at its last evaluation (for stale markers).
    pub previous_series: HashSet<Labels>,
}

pub(crate) struct Group {
    pub spec: GroupSpec,
    pub interval: Duration,
    pub query_offset: Duration,
    pub rules: Vec<Rule>,
    pub evaluation_time: Duration,
    pub last_evaluation: Option<SystemTime>,
    /// The scheduled timestamp of the last evaluation, in ns.
    pub last_eval_timestamp: Option<i64>,
    /// The scheduled timestamp of this group's first evaluation here, in ns.
    pub first_eval_timestamp: Option<i64>,
    pub should_restore: bool,
    /// Series of rules gone in a reload, to be marked stale at the next evaluation.
    pub stale_series: Vec<Labels>,
    /// A group taken over: what the node before wrote at its last
    /// evaluation of each rule, with the rules that may have written each
    /// series (see [`Group::take_over`]).
    pub inherited_output: HashMap<Labels, Vec<usize>>,
    /// A group taken over: the node before's last evaluation of it (ns).
    pub taken_over_at: Option<i64>,
    /// Kept by the group that replaces this one in a reload.
    pub counters: Arc<GroupCounters>,
}

type QueryOutput = Vec<(Labels, SampleValue)>;

impl Group {
    pub fn new(
        spec: GroupSpec,
        default_interval: Duration,
        default_query_offset: Duration,
        should_restore: bool,
    ) -> Self {
        let interval = spec.interval.unwrap_or(default_interval);
        let query_offset = spec.query_offset.unwrap_or(default_query_offset);
        let rules = spec
            .rules
            .iter()
            .map(|r| Rule {
                spec: r.clone(),
                health: RuleHealth::Unknown,
                last_error: None,
                evaluation_time: Duration::ZERO,
                last_evaluation: None,
                active: HashMap::new(),
                restored: !should_restore,
                previous_series: HashSet::new(),
            })
            .collect();
        Group {
            spec,
            interval,
            query_offset,
            rules,
            evaluation_time: Duration::ZERO,
            last_evaluation: None,
            last_eval_timestamp: None,
            first_eval_timestamp: None,
            should_restore,
            stale_series: Vec::new(),
            inherited_output: HashMap::new(),
            taken_over_at: None,
            counters: Arc::new(GroupCounters::new()),
        }
    }

    /// Prometheus' per-group phase: the group's hash of (name, file) modulo the interval.
    pub fn eval_timestamp(&self, now_ns: i64) -> i64 {
        let interval = self.interval.as_nanos().max(1) as i64;
        let offset = (group_hash(&self.spec.name, &self.spec.file) % interval as u64) as i64;
        let adjusted = now_ns - offset;
        let base = adjusted - adjusted.rem_euclid(interval);
        base + offset
    }

    /// Evaluates every rule in order at `ts` (ns), writing each rule's output before the next runs.
    pub fn eval(&mut self, ts: i64, env: &EvalEnv) {
        if env.groups_move && self.should_restore && self.first_eval_timestamp.is_none() {
            self.take_over(ts, env);
        }
        let started = Instant::now();
        let wall = SystemTime::now();
        let query_ms = (ts - self.query_offset.as_nanos() as i64).div_euclid(1_000_000);
        let limit = self.spec.limit;
        let interval = self.interval;
        let mut samples = 0;
        let mut rule_duration_sum = Duration::ZERO;
        for i in 0..self.rules.len() {
            let rule_started = Instant::now();
            let rule_wall = SystemTime::now();
            let rule = &mut self.rules[i];
            self.counters.evaluation();
            let result = match rule.spec.kind.clone() {
                RuleKind::Record(name) => eval_recording(rule, &name, query_ms, limit, env),
                RuleKind::Alert(name) => eval_alerting(rule, &name, ts, query_ms, limit, env),
            };
            match result {
                Err(e) => {
                    tracing::warn!(group = %self.spec.name, rule = rule.spec.name(), err = %e, "evaluating rule failed");
                    rule.health = RuleHealth::Bad;
                    rule.last_error = Some(e);
                    self.counters.evaluation_failed();
                }
                Ok(output) => {
                    rule.health = RuleHealth::Good;
                    rule.last_error = None;
                    samples += output.len() as u64;
                    if matches!(rule.spec.kind, RuleKind::Alert(_)) {
                        send_alerts(rule, ts, interval, env);
                    }
                    if let Err(failure) = write_output(rule, output, query_ms, env) {
                        rule.health = RuleHealth::Bad;
                        // As in Prometheus, a refused sample marks the rule
                        // bad but only a failed commit counts as a failure.
                        if let WriteFailure::Commit(_) = failure {
                            self.counters.evaluation_failed();
                        }
                        rule.last_error = Some(failure.into_message());
                    }
                }
            }
            rule.evaluation_time = rule_started.elapsed();
            rule.last_evaluation = Some(rule_wall);
            rule_duration_sum += rule.evaluation_time;
            env.durations.rule.observe(rule.evaluation_time.as_secs_f64());
        }
        self.cleanup_stale_series(query_ms, env);
        self.mark_inherited_output_stale(query_ms, env);
        self.evaluation_time = started.elapsed();
        self.last_evaluation = Some(wall);
        self.last_eval_timestamp = Some(ts);
        self.first_eval_timestamp.get_or_insert(ts);
        env.durations.group.observe(self.evaluation_time.as_secs_f64());
        self.counters
            .iteration(wall, self.evaluation_time, samples, rule_duration_sum);
    }

    fn cleanup_stale_series(&mut self, query_ms: i64, env: &EvalEnv) {
        if self.stale_series.is_empty() {
            return;
        }
        let mut app = env.appendable.appender();
        for s in &self.stale_series {
            if let Err(e) = app.append(s, &[Sample::new(query_ms, stale_nan())]) {
                tracing::warn!(err = %e, "adding stale sample for a removed rule failed");
            }
        }
        match app.commit() {
            Ok(_) => self.stale_series.clear(),
            Err(e) => tracing::warn!(err = %e, "writing stale samples for removed rules failed"),
        }
    }

    /// Restores the state of alerts from `ALERTS_FOR_STATE` (at `ts`, ns)
    /// after a restart, as Prometheus does: the outage (from the last state
    /// written to `ts`) does not count towards `for`, and alerts whose `for`
    /// is shorter than the grace period start over. In a cluster a group
    /// starts with [`Group::take_over`] instead.
    pub fn restore_for_state(&mut self, ts: i64, env: &EvalEnv) {
        let started = Instant::now();
        self.restore_rules(ts, self.last_eval_timestamp, env);
        self.counters.restored(started.elapsed());
    }

    /// A group taken over from another node of a cluster: before its first
    /// evaluation here (at `ts`) writes or sends anything, it takes over
    /// what the node before left, so that it goes on as if it had not moved.
    /// The node before evaluated it until it moved: only the slots nobody
    /// evaluated count as an outage towards `for`, no grace period applies,
    /// alerts kept firing by `keep_firing_for` keep firing until their time
    /// is up, and what the node before wrote and this evaluation does not
    /// is marked stale.
    fn take_over(&mut self, ts: i64, env: &EvalEnv) {
        let started = Instant::now();
        let query_ms = (ts - self.query_offset.as_nanos() as i64).div_euclid(1_000_000);
        for rule in &mut self.rules {
            let RuleKind::Alert(name) = rule.spec.kind.clone() else {
                continue;
            };
            match alerts_at(rule, &name, ts, query_ms, env) {
                Ok(fresh) => rule.active.extend(fresh),
                Err(e) => tracing::warn!(alert = %name, err = %e, "evaluating an alert to take its state over failed"),
            }
        }
        self.first_eval_timestamp = Some(ts);
        self.inherit_last_output(ts, env);
        self.restore_rules(ts, Some(ts), env);
        self.counters.restored(started.elapsed());
    }

    /// What the node before wrote at its last evaluation of each rule of
    /// this group, and when it last evaluated the group: the newest of the
    /// group's slots before `ts` at which any of the rule's series has a
    /// sample (other groups, even writing the same names, evaluate at other
    /// times). A rule whose evaluations failed there keeps the series it
    /// wrote last.
    fn inherit_last_output(&mut self, ts: i64, env: &EvalEnv) {
        let interval = self.interval.as_nanos().max(1) as i64;
        let offset = self.query_offset.as_nanos() as i64;
        let query_ms = |slot: i64| (slot - offset).div_euclid(1_000_000);
        let slot_of = |t: i64| {
            let back = (ts - offset - t * 1_000_000).div_euclid(interval);
            (back >= 1 && query_ms(ts - back * interval) == t).then_some(ts - back * interval)
        };
        let mint = query_ms(ts - env.outage_tolerance.as_nanos() as i64);
        let querier = match env.queryable.querier(mint, query_ms(ts) - 1) {
            Ok(q) => q,
            Err(e) => return tracing::warn!(err = %e, "failed to read the output of a group taken over"),
        };
        for (i, rule) in self.rules.iter().enumerate() {
            let metrics: Vec<(&str, Option<&str>)> = match &rule.spec.kind {
                RuleKind::Record(name) => vec![(name, None)],
                RuleKind::Alert(name) => vec![("ALERTS", Some(name)), ("ALERTS_FOR_STATE", Some(name))],
            };
            // The rule's series whose newest sample, on a slot, is a value.
            let mut live = Vec::new();
            for (metric, alertname) in metrics {
                let matchers = output_matchers(metric, alertname, &rule.spec);
                let Ok(set) = querier.select(&SelectHints::default(), &matchers) else {
                    continue;
                };
                for mut series in set.flatten() {
                    if let Ok(Some((t, true))) = series.newest()
                        && let Some(slot) = slot_of(t)
                    {
                        live.push((series.labels, slot));
                    }
                }
            }
            let last = live.iter().map(|&(_, slot)| slot).max();
            self.taken_over_at = self.taken_over_at.max(last);
            for (labels, _) in live.into_iter().filter(|&(_, slot)| Some(slot) == last) {
                self.inherited_output.entry(labels).or_default().push(i);
            }
        }
    }

    /// At the first evaluation of a group taken over, the series the node
    /// before wrote that no rule wrote now get a staleness marker, but for
    /// those of a rule that failed now (whose output is unknown).
    fn mark_inherited_output_stale(&mut self, query_ms: i64, env: &EvalEnv) {
        if self.inherited_output.is_empty() {
            return;
        }
        let inherited = std::mem::take(&mut self.inherited_output);
        let mut app = env.appendable.appender();
        for (labels, writers) in inherited {
            let written = self.rules.iter().any(|r| r.previous_series.contains(&labels));
            let unknown = writers.iter().any(|&i| self.rules[i].health == RuleHealth::Bad);
            if !written && !unknown {
                let _ = app.append(&labels, &[Sample::new(query_ms, stale_nan())]);
            }
        }
        if let Err(e) = app.commit() {
            tracing::warn!(err = %e, "writing stale samples for a group taken over failed");
        }
    }

    /// Restores at `ts` the state of alerts last evaluated here at `evaluated_at`.
    fn restore_rules(&mut self, ts: i64, evaluated_at: Option<i64>, env: &EvalEnv) {
        self.should_restore = false;
        let maxt = ts.div_euclid(1_000_000);
        let mint = (ts - env.outage_tolerance.as_nanos() as i64).div_euclid(1_000_000);
        let querier = match env.queryable.querier(mint, maxt) {
            Ok(q) => q,
            Err(e) => {
                tracing::error!(err = %e, "failed to get a querier to restore alert state");
                return;
            }
        };
        let slots = Slots {
            interval: self.interval.as_nanos().max(1) as i64,
            query_offset: self.query_offset.as_nanos() as i64,
            last: evaluated_at,
        };
        let moved = env.groups_move;
        let grace = if moved {
            0
        } else {
            env.for_grace_period.as_nanos() as i64
        };
        // After a move: the slot before this node's first evaluation, and
        // the node before's last; the slots between went unevaluated.
        let resumed_at = self.first_eval_timestamp.unwrap_or(ts) - slots.interval;
        let taken_over_at = self.taken_over_at;
        for rule in &mut self.rules {
            let RuleKind::Alert(name) = rule.spec.kind.clone() else {
                continue;
            };
            let hold = rule.spec.for_duration.as_nanos() as i64;
            if hold < grace {
                rule.restored = true;
                continue;
            }
            let matchers = output_matchers("ALERTS_FOR_STATE", Some(&name), &rule.spec);
            let series = match querier.select(&SelectHints::default(), &matchers) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(alert = %name, err = %e, "failed to restore 'for' state");
                    rule.restored = true;
                    continue;
                }
            };
            let mut last_by_labels: HashMap<Labels, Sample> = HashMap::new();
            for s in series {
                let Ok(mut s) = s else { continue };
                let Ok(samples) = collect_samples(s.samples.as_mut()) else {
                    continue;
                };
                let Some(last) = samples.last() else { continue };
                if cairn_model::is_stale_nan(last.v) {
                    continue;
                }
                let mut labels = s.labels.clone();
                labels.remove("__name__");
                last_by_labels.insert(labels, *last);
            }
            for a in rule.active.values_mut() {
                let Some(last) = last_by_labels.get(&a.labels) else {
                    continue;
                };
                let restored_active_at = if moved {
                    slots.taken_over_active_at(last, hold, taken_over_at, resumed_at)
                } else {
                    let down_at = last.t.div_euclid(1000) * 1_000_000_000;
                    let mut restored_active_at = (last.v as i64) * 1_000_000_000;
                    let remaining = hold - (down_at - restored_active_at);
                    if remaining <= 0 {
                    } else if remaining < grace {
                        restored_active_at = ts + grace - hold;
                    } else {
                        restored_active_at += ts - down_at;
                    }
                    restored_active_at
                };
                a.active_at = restored_active_at;
                // Due at the evaluation restored, as it would make it: firing
                // already, so that an evaluation not returning it keeps it
                // firing if it must.
                let due = |t: i64| moved && a.state == AlertState::Pending && t - restored_active_at >= hold;
                if let Some(last_eval) = slots.last.filter(|&t| due(t)) {
                    a.state = AlertState::Firing;
                    a.fired_at.get_or_insert(last_eval);
                }
            }
            if moved && !rule.spec.keep_firing_for.is_zero() {
                restore_kept_firing(rule, &name, &last_by_labels, slots, env);
            }
            rule.restored = true;
        }
    }

    /// Prometheus' `CopyState`: a reloaded group keeps the state of the rules it shares with the old one.
    pub fn copy_state(&mut self, from: &mut Group) {
        self.counters = from.counters.clone();
        self.evaluation_time = from.evaluation_time;
        self.last_evaluation = from.last_evaluation;
        self.last_eval_timestamp = from.last_eval_timestamp;
        self.first_eval_timestamp = from.first_eval_timestamp;
        // State taken over or restored already goes on in memory.
        if !from.should_restore {
            self.should_restore = false;
            for rule in &mut self.rules {
                rule.restored = true;
            }
        }
        let key = |r: &RuleSpec| (r.name().to_string(), r.labels.clone());
        let mut by_key: HashMap<(String, BTreeMap<String, String>), Vec<usize>> = HashMap::new();
        for (i, r) in from.rules.iter().enumerate() {
            by_key.entry(key(&r.spec)).or_default().push(i);
        }
        for v in by_key.values_mut() {
            v.reverse();
        }
        let mut used = vec![false; from.rules.len()];
        for rule in &mut self.rules {
            let Some(fi) = by_key.get_mut(&key(&rule.spec)).and_then(Vec::pop) else {
                continue;
            };
            used[fi] = true;
            let old = &mut from.rules[fi];
            rule.previous_series = std::mem::take(&mut old.previous_series);
            if matches!(rule.spec.kind, RuleKind::Alert(_)) && matches!(old.spec.kind, RuleKind::Alert(_)) {
                rule.active.extend(old.active.drain());
            }
        }
        self.stale_series = std::mem::take(&mut from.stale_series);
        for (fi, old) in from.rules.iter_mut().enumerate() {
            if !used[fi] {
                self.stale_series.extend(old.previous_series.drain());
            }
        }
    }

    /// Every series the group wrote last (for stale markers when it is removed).
    pub fn take_all_series(&mut self) -> Vec<Labels> {
        let mut out = std::mem::take(&mut self.stale_series);
        for r in &mut self.rules {
            out.extend(r.previous_series.drain());
        }
        out
    }
}

/// Prometheus' hash of the labels `{file, name}`: xxhash64 of its label encoding
/// (each name and value preceded by its length as a uvarint).
pub(crate) fn group_hash(name: &str, file: &str) -> u64 {
    let mut bytes = Vec::with_capacity(name.len() + file.len() + 24);
    for text in ["file", file, "name", name] {
        let mut len = text.len();
        while len >= 0x80 {
            bytes.push((len as u8 & 0x7f) | 0x80);
            len >>= 7;
        }
        bytes.push(len as u8);
        bytes.extend_from_slice(text.as_bytes());
    }
    xxhash_rust::xxh64::xxh64(&bytes, 0)
}

/// Prometheus' rule query: an instant query whose scalar becomes one sample without labels.
fn run_query(env: &EvalEnv, query: &str, t_ms: i64) -> Result<QueryOutput, String> {
    let result = env
        .engine
        .instant(env.queryable.as_ref(), query, t_ms)
        .map_err(|e| e.to_string())?;
    match result.value {
        PromValue::Vector(v) => Ok(v.into_iter().map(|s| (s.metric, s.value)).collect()),
        PromValue::Scalar { v, .. } => Ok(vec![(Labels::empty(), SampleValue::Float(v))]),
        _ => Err("rule result is not a vector or scalar".into()),
    }
}

/// Sets or (for an empty value) removes each label, as Prometheus' label builder does.
fn with_labels(mut labels: Labels, set: impl IntoIterator<Item = (String, String)>) -> Labels {
    for (k, v) in set {
        if v.is_empty() {
            labels.remove(&k);
        } else {
            labels.set(&k, &v);
        }
    }
    labels
}

fn eval_recording(rule: &Rule, name: &str, t_ms: i64, limit: usize, env: &EvalEnv) -> Result<QueryOutput, String> {
    let result = run_query(env, &rule.spec.query, t_ms)?;
    let mut out = Vec::with_capacity(result.len());
    let mut seen = HashSet::with_capacity(result.len());
    for (metric, value) in result {
        let mut labels = metric;
        labels.set("__name__", name);
        let labels = with_labels(labels, rule.spec.labels.clone());
        if !seen.insert(labels.clone()) {
            return Err("vector contains metrics with the same labelset after applying rule labels".into());
        }
        out.push((labels, value));
    }
    if limit > 0 && out.len() > limit {
        return Err(format!("exceeded limit of {limit} with {} series", out.len()));
    }
    Ok(out)
}

fn label_map(labels: &Labels) -> BTreeMap<String, String> {
    labels
        .iter()
        .map(|l| (l.name.to_string(), l.value.to_string()))
        .collect()
}

/// Matchers for the series named `metric` a rule writes: by its alert's
/// name if given, and by the labels it sets to fixed values.
fn output_matchers(metric: &str, alertname: Option<&str>, spec: &RuleSpec) -> Vec<Matcher> {
    let mut matchers = vec![Matcher::equal("__name__", metric)];
    if let Some(name) = alertname {
        matchers.push(Matcher::equal("alertname", name));
    }
    for (k, v) in &spec.labels {
        if !v.contains("{{") && !v.is_empty() && k != "alertname" {
            matchers.push(Matcher::equal(k.as_str(), v.as_str()));
        }
    }
    matchers
}

/// Where a group's evaluations fall, to evaluate its past slots again.
#[derive(Debug, Clone, Copy)]
struct Slots {
    interval: i64,
    query_offset: i64,
    /// The evaluation here whose alerts are restored (ns).
    last: Option<i64>,
}

impl Slots {
    /// The first slot at or after `t` (ns): where a time stored rounded
    /// down (to the second, to the millisecond) was evaluated.
    fn at_or_after(&self, t: i64) -> i64 {
        match self.last {
            Some(last) => last - (last - t).div_euclid(self.interval) * self.interval,
            None => t,
        }
    }

    /// The time an alert became active, taken over from `state` (its last
    /// `ALERTS_FOR_STATE` sample, written by the node before, whose last
    /// evaluation of the group was at `taken_over_at` if known): as it was,
    /// but for one not due to fire yet, later by the slots nobody evaluated
    /// from then to `resumed_at`. Failed evaluations count towards `for`,
    /// as where the group does not move.
    fn taken_over_active_at(&self, state: &Sample, hold: i64, taken_over_at: Option<i64>, resumed_at: i64) -> i64 {
        let active_at = self.at_or_after((state.v as i64).saturating_mul(1_000_000_000));
        let evaluated_at = taken_over_at.unwrap_or_else(|| self.at_or_after(state.t * 1_000_000 + self.query_offset));
        if evaluated_at - active_at >= hold {
            active_at
        } else {
            active_at + (resumed_at - evaluated_at).max(0)
        }
    }
}

/// After a move, the alerts of `rule` the node it came from kept firing by
/// `keep_firing_for`: firing in `states` (the last `ALERTS_FOR_STATE`), but
/// no longer returned by the expression. The slots before this node's last
/// are evaluated again back to the last that returned each: the slot after
/// that one is its `keep_firing_since`, and that evaluation gives its
/// annotations and value. One whose window closed before the move is left out.
fn restore_kept_firing(rule: &mut Rule, name: &str, states: &HashMap<Labels, Sample>, slots: Slots, env: &EvalEnv) {
    let Some(last) = slots.last else { return };
    let hold = rule.spec.for_duration.as_nanos() as i64;
    let keep_for = rule.spec.keep_firing_for.as_nanos() as i64;
    let mut wanted: HashMap<&Labels, i64> = states
        .iter()
        .filter(|(labels, _)| !rule.active.contains_key(*labels))
        .filter_map(|(labels, state)| {
            let active_at = slots.at_or_after((state.v as i64).saturating_mul(1_000_000_000));
            let evaluated_at = slots.at_or_after(state.t * 1_000_000 + slots.query_offset);
            (evaluated_at - active_at >= hold).then_some((labels, active_at))
        })
        .collect();
    let mut slot = last - slots.interval;
    while !wanted.is_empty() && last - slot - slots.interval < keep_for {
        let mut returned = match alerts_at(rule, name, slot, (slot - slots.query_offset).div_euclid(1_000_000), env) {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(alert = %name, err = %e, "evaluating an earlier slot to restore kept firing alerts failed");
                return;
            }
        };
        wanted.retain(|labels, active_at| {
            let Some(mut a) = returned.remove(*labels) else {
                return true;
            };
            a.state = AlertState::Firing;
            a.active_at = *active_at;
            a.fired_at = Some(last);
            a.keep_firing_since = Some(slot + slots.interval);
            rule.active.insert(a.labels.clone(), a);
            false
        });
        slot -= slots.interval;
    }
}

/// The alerts an alerting rule's expression gives at `ts` (queried at
/// `query_ms`), each pending from `ts`, their labels and annotations expanded.
fn alerts_at(rule: &Rule, name: &str, ts: i64, query_ms: i64, env: &EvalEnv) -> Result<HashMap<Labels, Alert>, String> {
    let result = run_query(env, &rule.spec.query, query_ms)?;
    let query_fn = |q: &str, t_ms: i64| -> Result<Vec<QuerySample>, String> {
        Ok(run_query(env, q, t_ms)?
            .into_iter()
            .map(|(labels, v)| QuerySample {
                labels: label_map(&labels),
                value: v.as_float().unwrap_or(f64::NAN),
            })
            .collect())
    };
    let ctx = template::Context {
        time_ms: ts.div_euclid(1_000_000),
        query: Some(&query_fn),
        external_url: Some(&env.external_url),
    };
    let mut fresh: HashMap<Labels, Alert> = HashMap::with_capacity(result.len());
    for (metric, value) in result {
        let value = value.as_float().unwrap_or(f64::NAN);
        let data = AlertData {
            labels: label_map(&metric),
            external_labels: env.external_labels.clone(),
            external_url: env.external_url.clone(),
            value,
        };
        let mut labels = metric;
        labels.remove("__name__");
        let expanded: Vec<(String, String)> = rule
            .spec
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), template::expand_alert(name, v, &data, &ctx)))
            .collect();
        let mut labels = with_labels(labels, expanded);
        labels.set("alertname", name);
        let annotations: BTreeMap<String, String> = rule
            .spec
            .annotations
            .iter()
            .map(|(k, v)| (k.clone(), template::expand_alert(name, v, &data, &ctx)))
            .collect();
        if fresh.contains_key(&labels) {
            return Err("vector contains metrics with the same labelset after applying alert labels".into());
        }
        fresh.insert(
            labels.clone(),
            Alert {
                labels,
                annotations,
                state: AlertState::Pending,
                value,
                active_at: ts,
                fired_at: None,
                resolved_at: None,
                last_sent_at: None,
                valid_until: None,
                keep_firing_since: None,
            },
        );
    }
    Ok(fresh)
}

fn eval_alerting(
    rule: &mut Rule,
    name: &str,
    ts: i64,
    query_ms: i64,
    limit: usize,
    env: &EvalEnv,
) -> Result<QueryOutput, String> {
    let fresh = alerts_at(rule, name, ts, query_ms, env)?;
    let result_keys: HashSet<Labels> = fresh.keys().cloned().collect();
    for (k, a) in fresh {
        match rule.active.get_mut(&k) {
            Some(old) if old.state != AlertState::Inactive => {
                old.value = a.value;
                old.annotations = a.annotations;
            }
            _ => {
                rule.active.insert(k, a);
            }
        }
    }
    let hold = rule.spec.for_duration.as_nanos() as i64;
    let keep_firing_for = rule.spec.keep_firing_for.as_nanos() as i64;
    let mut out = Vec::new();
    let mut active_pending = 0usize;
    let mut remove = Vec::new();
    for (k, a) in rule.active.iter_mut() {
        if !result_keys.contains(k) {
            let mut keep_firing = false;
            if a.state == AlertState::Firing && keep_firing_for > 0 {
                let since = *a.keep_firing_since.get_or_insert(ts);
                keep_firing = ts - since < keep_firing_for;
            }
            if a.state == AlertState::Pending || a.resolved_at.is_some_and(|r| ts - r > RESOLVED_RETENTION_NS) {
                remove.push(k.clone());
            }
            if a.state != AlertState::Inactive && !keep_firing {
                a.state = AlertState::Inactive;
                a.resolved_at = Some(ts);
            }
            if !keep_firing {
                continue;
            }
        } else {
            a.keep_firing_since = None;
        }
        active_pending += 1;
        if a.state == AlertState::Pending && ts - a.active_at >= hold {
            a.state = AlertState::Firing;
            a.fired_at = Some(ts);
        }
        if a.state == AlertState::Firing && ts - a.active_at < hold {
            a.state = AlertState::Pending;
            a.fired_at = None;
            a.last_sent_at = None;
            a.keep_firing_since = None;
        }
        if rule.restored {
            let base = with_labels(Labels::empty(), rule.spec.labels.clone());
            let mut series = base;
            for l in a.labels.iter() {
                series.set(&l.name, &l.value);
            }
            series.set("alertname", name);
            let mut alerts = series.clone();
            alerts.set("__name__", "ALERTS");
            alerts.set("alertstate", a.state.as_str());
            out.push((alerts, SampleValue::Float(1.0)));
            let mut for_state = series;
            for_state.set("__name__", "ALERTS_FOR_STATE");
            out.push((
                for_state,
                SampleValue::Float(a.active_at.div_euclid(1_000_000_000) as f64),
            ));
        }
    }
    for k in remove {
        rule.active.remove(&k);
    }
    if limit > 0 && active_pending > limit {
        rule.active.clear();
        return Err(format!("exceeded limit of {limit} with {active_pending} alerts"));
    }
    Ok(out)
}

/// Prometheus' `sendAlerts` and the notifier's `Send`: alerts due, with EndsAt and external labels.
fn send_alerts(rule: &mut Rule, ts: i64, interval: Duration, env: &EvalEnv) {
    let resend = env.resend_delay.as_nanos() as i64;
    let delta = (interval.as_nanos() as i64).max(resend);
    let generator_url = format!(
        "{}/graph?g0.expr={}&g0.tab=1",
        env.external_url,
        template::query_escape(&rule.spec.query)
    );
    let mut batch = Vec::new();
    for a in rule.active.values_mut() {
        if !a.needs_sending(ts, resend) {
            continue;
        }
        a.last_sent_at = Some(ts);
        a.valid_until = Some(ts + 4 * delta);
        let mut labels = a.labels.clone();
        for (k, v) in &env.external_labels {
            if labels.get(k).is_none_or(str::is_empty) && !v.is_empty() {
                labels.set(k, v);
            }
        }
        batch.push(NotifyAlert {
            labels,
            annotations: a.annotations.clone(),
            starts_at: ns_to_system_time(a.fired_at.unwrap_or(0)),
            ends_at: ns_to_system_time(a.resolved_at.or(a.valid_until).unwrap_or(0)),
            generator_url: generator_url.clone(),
        });
    }
    if let Some(n) = &env.notifier
        && !batch.is_empty()
    {
        n.send(batch);
    }
}

/// Writes a rule's output and stale markers for the series it no longer produces.
/// Why a rule's output was not all written.
enum WriteFailure {
    /// Storage refused a sample; the others were written.
    Sample(String),
    /// Nothing was written.
    Commit(String),
}

impl WriteFailure {
    fn into_message(self) -> String {
        match self {
            WriteFailure::Sample(m) | WriteFailure::Commit(m) => m,
        }
    }
}

fn write_output(rule: &mut Rule, output: QueryOutput, t_ms: i64, env: &EvalEnv) -> Result<(), WriteFailure> {
    let mut app = env.appendable.appender();
    let mut returned = HashSet::with_capacity(output.len());
    let mut first_error = None;
    for (labels, value) in output {
        let r = match value {
            SampleValue::Float(v) => app.append(&labels, &[Sample::new(t_ms, v)]),
            SampleValue::Histogram(h) => app.append_histograms(&labels, &[HistogramSample { t: t_ms, h }]),
        };
        match r {
            Ok(()) => {
                returned.insert(labels);
            }
            Err(e) => {
                tracing::warn!(err = %e, series = ?labels, "rule evaluation result discarded");
                first_error.get_or_insert(e.to_string());
            }
        }
    }
    for old in &rule.previous_series {
        if !returned.contains(old)
            && let Err(e) = app.append(old, &[Sample::new(t_ms, stale_nan())])
        {
            tracing::warn!(err = %e, "adding stale sample failed");
        }
    }
    app.commit().map_err(|e| WriteFailure::Commit(e.to_string()))?;
    rule.previous_series = returned;
    match first_error {
        Some(e) => Err(WriteFailure::Sample(e)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
