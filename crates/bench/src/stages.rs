//! A ramp (`--stages`) stage by stage: what each load delivered, how late
//! the generator and the queries fell, and whether the system kept up, so
//! that one run finds the largest live load a system sustains.
//!
//! Everything is counted by the wall clock: a stage holds what was handed
//! over, delivered, failed or queried while its load was on (deliveries
//! after the last stage count to it).

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use crate::histogram::Histogram;
use crate::report::{LatencyReport, StageReport};
use crate::workload::Stage;

#[derive(Default)]
pub(crate) struct StageCounters {
    pub generated: AtomicU64,
    pub delivered: AtomicU64,
    pub failed: AtomicU64,
    /// The generator's largest lag behind the scrape schedule (ms).
    pub max_lag_ms: AtomicI64,
    pub query_rounds: AtomicU64,
    pub query_rounds_late: AtomicU64,
    pub queries: Mutex<Histogram>,
}

impl StageCounters {
    /// Whether the system kept up so far: nothing failed, no query round
    /// started late, and the generator never fell `interval` behind.
    pub fn kept_up(&self, interval: Duration) -> bool {
        self.failed.load(Ordering::Relaxed) == 0
            && self.query_rounds_late.load(Ordering::Relaxed) == 0
            && self.max_lag_ms.load(Ordering::Relaxed) <= interval.as_millis() as i64
    }

    pub fn record_query(&self, took: Duration) {
        if let Ok(mut h) = self.queries.lock() {
            h.record(took);
        }
    }
}

/// The stages of a real-time run, placed on the wall clock.
#[derive(Default)]
pub(crate) struct StageClock {
    /// When each stage ends (ms since the epoch).
    ends_ms: Vec<i64>,
    counters: Vec<StageCounters>,
}

impl StageClock {
    /// `stages` from `start_ms` on; none for a run without stages.
    pub fn new(stages: &[Stage], start_ms: i64) -> Self {
        let ends_ms = stages
            .iter()
            .scan(start_ms, |end, s| {
                *end += s.duration.as_millis() as i64;
                Some(*end)
            })
            .collect();
        Self {
            ends_ms,
            counters: stages.iter().map(|_| StageCounters::default()).collect(),
        }
    }

    /// The counters of the stage on at `at_ms` (the last one after the end).
    pub fn at(&self, at_ms: i64) -> Option<&StageCounters> {
        let i = self.ends_ms.partition_point(|&end| end <= at_ms);
        self.counters.get(i).or(self.counters.last())
    }

    /// The counters of the stage on now.
    pub fn now(&self) -> Option<&StageCounters> {
        self.at(crate::run::now_ms())
    }

    /// Each stage's figures; a stage kept up when it ran and
    /// [`StageCounters::kept_up`].
    pub fn report(&self, stages: &[Stage], interval: Duration) -> Vec<StageReport> {
        stages
            .iter()
            .zip(&self.counters)
            .map(|(stage, c)| {
                let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
                let (generated, delivered) = (load(&c.generated), load(&c.delivered));
                let ran = generated > 0;
                StageReport {
                    targets: stage.targets,
                    duration_s: stage.duration.as_secs_f64(),
                    ran,
                    samples_generated: generated,
                    samples_delivered: delivered,
                    samples_failed: load(&c.failed),
                    samples_per_second: delivered as f64 / stage.duration.as_secs_f64().max(1e-9),
                    max_lag_s: c.max_lag_ms.load(Ordering::Relaxed).max(0) as f64 / 1000.0,
                    query_rounds: load(&c.query_rounds),
                    query_rounds_late: load(&c.query_rounds_late),
                    query_latency_ms: c.queries.lock().map(|h| LatencyReport::of(&h)).unwrap_or_default(),
                    kept_up: ran && c.kept_up(interval),
                }
            })
            .collect()
    }
}

/// The largest load of a ramp that the system kept up with, every smaller
/// or equal load of the ramp included: `None` when it kept up with none.
pub fn capacity(stages: &[StageReport]) -> Option<usize> {
    stages
        .iter()
        .filter(|s| s.kept_up)
        .map(|s| s.targets)
        .filter(|&t| stages.iter().filter(|s| s.targets <= t).all(|s| s.kept_up))
        .max()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(targets: usize, kept_up: bool) -> StageReport {
        StageReport {
            targets,
            kept_up,
            ..StageReport::default()
        }
    }

    #[test]
    fn the_capacity_is_the_largest_load_kept_up_with_every_smaller_one_kept_up_too() {
        assert_eq!(capacity(&[]), None);
        assert_eq!(
            capacity(&[stage(100, true), stage(200, true), stage(300, false)]),
            Some(200)
        );
        // A load that failed once is not sustained, even if a larger one then passed.
        assert_eq!(
            capacity(&[stage(100, true), stage(200, false), stage(300, true)]),
            Some(100)
        );
        // A ramp down again counts the repeated load both times.
        assert_eq!(capacity(&[stage(100, true), stage(300, true), stage(100, false)]), None);
        assert_eq!(capacity(&[stage(100, false)]), None);
    }

    #[test]
    fn each_moment_belongs_to_the_stage_on_then_and_the_end_to_the_last() {
        let stages = [
            Stage {
                targets: 1,
                duration: Duration::from_secs(10),
            },
            Stage {
                targets: 2,
                duration: Duration::from_secs(5),
            },
        ];
        let clock = StageClock::new(&stages, 1_000_000);
        let index = |at| {
            let c = clock.at(at).unwrap();
            clock.counters.iter().position(|x| std::ptr::eq(x, c)).unwrap()
        };
        assert_eq!(index(999_000), 0, "before the start: the first");
        assert_eq!(index(1_009_999), 0);
        assert_eq!(index(1_010_000), 1);
        assert_eq!(index(1_020_000), 1, "after the end: the last");
        assert!(StageClock::new(&[], 0).now().is_none());
    }

    #[test]
    fn a_stage_kept_up_unless_it_never_ran_or_something_failed_came_late_or_fell_behind() {
        let stages = [Stage {
            targets: 7,
            duration: Duration::from_secs(60),
        }];
        let interval = Duration::from_secs(15);
        let verdict = |f: &dyn Fn(&StageCounters)| {
            let clock = StageClock::new(&stages, 0);
            clock.counters[0].generated.fetch_add(600, Ordering::Relaxed);
            clock.counters[0].delivered.fetch_add(600, Ordering::Relaxed);
            f(&clock.counters[0]);
            clock.report(&stages, interval)[0].clone()
        };
        let fine = verdict(&|c| c.max_lag_ms.store(15_000, Ordering::Relaxed));
        assert!(fine.kept_up);
        assert_eq!((fine.targets, fine.samples_per_second), (7, 10.0));
        assert!(
            !verdict(&|c| c.generated.store(0, Ordering::Relaxed)).kept_up,
            "a stage that never ran"
        );
        assert!(!verdict(&|c| c.max_lag_ms.store(15_001, Ordering::Relaxed)).kept_up);
        assert!(
            !verdict(&|c| {
                c.failed.fetch_add(1, Ordering::Relaxed);
            })
            .kept_up
        );
        assert!(
            !verdict(&|c| {
                c.query_rounds_late.fetch_add(1, Ordering::Relaxed);
            })
            .kept_up
        );
    }
}
