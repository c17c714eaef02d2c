//! Rule evaluation's own counters, as Prometheus' `prometheus_rule_*`
//! metrics report them. Each group's live in atomics shared by its
//! evaluations and the readers; a group replaced by a reload hands them to
//! its successor, and a removed group's go with it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use cairn_model::summary::{QUANTILES_3, QUANTILES_5, SummarySnapshot, WindowedSummary};

/// One group's counters.
#[derive(Debug, Default)]
pub(crate) struct GroupCounters {
    iterations: AtomicU64,
    iterations_missed: AtomicU64,
    evaluations: AtomicU64,
    evaluation_failures: AtomicU64,
    /// `f64` bits.
    last_duration_secs: AtomicU64,
    last_evaluation_secs: AtomicU64,
    last_samples: AtomicU64,
    last_rule_duration_sum_secs: AtomicU64,
    /// `f64` bits; NaN until the group restored alert state once.
    last_restore_duration_secs: AtomicU64,
}

fn store_f64(a: &AtomicU64, v: f64) {
    a.store(v.to_bits(), Ordering::Relaxed);
}

fn load_f64(a: &AtomicU64) -> f64 {
    f64::from_bits(a.load(Ordering::Relaxed))
}

impl GroupCounters {
    pub fn new() -> Self {
        let c = Self::default();
        store_f64(&c.last_restore_duration_secs, f64::NAN);
        c
    }

    /// A rule about to be evaluated.
    pub fn evaluation(&self) {
        self.evaluations.fetch_add(1, Ordering::Relaxed);
    }

    /// A rule whose query or whose write failed.
    pub fn evaluation_failed(&self) {
        self.evaluation_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// One finished iteration of the group.
    pub fn iteration(&self, started: SystemTime, duration: Duration, samples: u64, rule_duration_sum: Duration) {
        self.iterations.fetch_add(1, Ordering::Relaxed);
        store_f64(&self.last_duration_secs, duration.as_secs_f64());
        let started = started.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        store_f64(&self.last_evaluation_secs, started.as_secs_f64());
        self.last_samples.store(samples, Ordering::Relaxed);
        store_f64(&self.last_rule_duration_sum_secs, rule_duration_sum.as_secs_f64());
    }

    /// Scheduled iterations that did not run because the previous one overran:
    /// counted as missed and as scheduled, as Prometheus does.
    pub fn missed(&self, n: u64) {
        self.iterations_missed.fetch_add(n, Ordering::Relaxed);
        self.iterations.fetch_add(n, Ordering::Relaxed);
    }

    pub fn restored(&self, duration: Duration) {
        store_f64(&self.last_restore_duration_secs, duration.as_secs_f64());
    }

    pub fn snapshot(&self, file: &str, name: &str, interval: Duration, rules: usize) -> GroupMetrics {
        let restore = load_f64(&self.last_restore_duration_secs);
        GroupMetrics {
            file: file.to_string(),
            name: name.to_string(),
            interval_seconds: interval.as_secs_f64(),
            rules: rules as u64,
            iterations_total: self.iterations.load(Ordering::Relaxed),
            iterations_missed_total: self.iterations_missed.load(Ordering::Relaxed),
            evaluations_total: self.evaluations.load(Ordering::Relaxed),
            evaluation_failures_total: self.evaluation_failures.load(Ordering::Relaxed),
            last_duration_seconds: load_f64(&self.last_duration_secs),
            last_evaluation_timestamp_seconds: load_f64(&self.last_evaluation_secs),
            last_evaluation_samples: self.last_samples.load(Ordering::Relaxed),
            last_rule_duration_sum_seconds: load_f64(&self.last_rule_duration_sum_secs),
            last_restore_duration_seconds: (!restore.is_nan()).then_some(restore),
        }
    }
}

/// The latency summaries every group feeds.
#[derive(Debug)]
pub(crate) struct Durations {
    pub rule: WindowedSummary,
    pub group: WindowedSummary,
}

impl Default for Durations {
    fn default() -> Self {
        Self {
            rule: WindowedSummary::new(QUANTILES_3),
            group: WindowedSummary::new(QUANTILES_5),
        }
    }
}

/// One group's figures at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupMetrics {
    pub file: String,
    pub name: String,
    pub interval_seconds: f64,
    pub rules: u64,
    pub iterations_total: u64,
    pub iterations_missed_total: u64,
    pub evaluations_total: u64,
    pub evaluation_failures_total: u64,
    pub last_duration_seconds: f64,
    /// When the last iteration started (wall clock); 0 before the first.
    pub last_evaluation_timestamp_seconds: f64,
    pub last_evaluation_samples: u64,
    pub last_rule_duration_sum_seconds: f64,
    /// Set once the group restored alert state.
    pub last_restore_duration_seconds: Option<f64>,
}

impl GroupMetrics {
    /// Prometheus' `rule_group` label: `<file>;<group>`.
    pub fn key(&self) -> String {
        format!("{};{}", self.file, self.name)
    }
}

/// Rule evaluation's figures at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleMetrics {
    /// Loaded groups, by file then name.
    pub groups: Vec<GroupMetrics>,
    /// Every rule evaluation's duration.
    pub evaluation_duration: SummarySnapshot,
    /// Every group iteration's duration.
    pub group_duration: SummarySnapshot,
}
