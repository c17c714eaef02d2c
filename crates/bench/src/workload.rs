//! The series `cairn bench` writes: a [`Fleet`] replaying the trace, plus
//! what production fleets add on top of it.
//!
//! - **Churn**: every `churn_interval`, `churn_percent` of the targets get a
//!   new identity (their `instance` label gains a new generation), as pods
//!   do when they are rescheduled. The churned targets are a window that
//!   rotates through the fleet, so each generation churns exactly
//!   `round(targets * percent / 100)` targets and every target in turn.
//! - **Counter resets**: each target restarts about once per `reset_every`
//!   (at its own moment): its counters start again from 0.
//! - **Replicas**: each of `replicas` writers (an HA pair of scrapers) sends
//!   the same series with its own `replica` label and its own jitter.
//! - **Stages**: the number of active targets changes over time (a ramp).

use std::time::Duration;

use cairn_model::{Label, Labels, Sample};
use cairn_protocols::SeriesSamples;

use crate::fleet::{Fleet, mix};

/// One ramp stage: `targets` active for `duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stage {
    pub targets: usize,
    pub duration: Duration,
}

/// Parses `400:5m,500:10m,400:5m`.
pub fn parse_stages(s: &str) -> Result<Vec<Stage>, String> {
    s.split(',')
        .map(|part| {
            let (n, d) = part
                .trim()
                .split_once(':')
                .ok_or_else(|| format!("stage {part:?}: expected <targets>:<duration>"))?;
            let targets = n
                .trim()
                .parse::<usize>()
                .map_err(|e| format!("stage {part:?}: targets: {e}"))?;
            let duration = parse_duration(d.trim())?;
            if duration.is_zero() {
                return Err(format!("stage {part:?}: duration must be positive"));
            }
            Ok(Stage { targets, duration })
        })
        .collect()
}

/// `1500ms`, `30s`, `5m`, `2h`, `1d`, or combinations such as `1h30m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    if s.is_empty() {
        return Err("empty duration".into());
    }
    let mut total_ms: u64 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 {
            return Err(format!("duration {s:?}: expected a number"));
        }
        let n: u64 = rest[..digits].parse().map_err(|e| format!("duration {s:?}: {e}"))?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let ms = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "w" => 7 * 86_400_000,
            u => return Err(format!("duration {s:?}: unknown unit {u:?} (ms s m h d w)")),
        };
        total_ms = total_ms.saturating_add(n.saturating_mul(ms));
        rest = &rest[unit_len..];
    }
    Ok(Duration::from_millis(total_ms))
}

/// Workload parameters beyond the fleet's layout.
#[derive(Debug, Clone)]
pub struct WorkloadConfig {
    pub churn_percent: f64,
    pub churn_interval_ms: i64,
    pub replicas: usize,
    /// Mean time between restarts of one target (0: never).
    pub reset_every_ms: i64,
    /// Stages of active targets over the run's data time.
    pub stages: Vec<Stage>,
}

/// Labels of one target identity, cached by the producer.
#[derive(Debug, Clone)]
pub struct TargetSeries {
    pub generation: u64,
    pub labels: Vec<Labels>,
}

#[derive(Debug, Clone)]
pub struct Workload {
    pub fleet: Fleet,
    pub cfg: WorkloadConfig,
}

impl Workload {
    pub fn new(fleet: Fleet, cfg: WorkloadConfig) -> Self {
        Self { fleet, cfg }
    }

    fn start_ms(&self) -> i64 {
        self.fleet.config().start_ms
    }

    fn interval_ms(&self) -> i64 {
        self.fleet.config().interval_ms
    }

    /// Targets churned per generation.
    pub fn churn_per_generation(&self) -> usize {
        let n = self.fleet.targets();
        ((n as f64 * self.cfg.churn_percent / 100.0).round() as usize).min(n)
    }

    /// Churn generation (number of identity changes) of target `t` for a
    /// scrape at data time `ts` (ms).
    pub fn generation(&self, t: usize, ts: i64) -> u64 {
        let c = self.churn_per_generation();
        if c == 0 || self.cfg.churn_interval_ms <= 0 {
            return 0;
        }
        let n = self.fleet.targets();
        let g_now = ((ts - self.start_ms()).max(0) / self.cfg.churn_interval_ms) as u64;
        // Generation g (from 1) churns targets [(g-1)*c, g*c) modulo n.
        let full_rounds = (g_now * c as u64) / n as u64;
        let covered = (g_now * c as u64) % n as u64;
        full_rounds + u64::from((t as u64) < covered)
    }

    /// Number of targets active at data time `ts`, from the stages (the last
    /// stage holds past its end).
    pub fn active_targets(&self, ts: i64) -> usize {
        let mut at = self.start_ms();
        for st in &self.cfg.stages {
            at += st.duration.as_millis() as i64;
            if ts < at {
                return st.targets.min(self.fleet.targets());
            }
        }
        self.cfg
            .stages
            .last()
            .map_or(self.fleet.targets(), |s| s.targets.min(self.fleet.targets()))
    }

    /// Labels of target `t` in `generation` for `replica`.
    pub fn labels(&self, t: usize, generation: u64, replica: usize) -> Vec<Labels> {
        let base = Fleet::instance(t);
        let instance = if generation == 0 {
            base
        } else {
            let (host, port) = base.split_once(':').unwrap_or((&base, "9100"));
            format!("{host}-g{generation}:{port}")
        };
        let job = self.fleet.config().job.clone();
        self.fleet
            .trace()
            .series
            .iter()
            .map(|s| {
                let mut v: Vec<Label> = s.labels.iter().cloned().collect();
                v.push(Label::new("instance", instance.clone()));
                v.push(Label::new("job", job.clone()));
                if self.cfg.replicas > 1 {
                    v.push(Label::new("replica", format!("r{replica}")));
                }
                Labels::new(v).unwrap_or_else(|_| s.labels.clone())
            })
            .collect()
    }

    /// Timestamp of scrape `k` of target `t` by `replica`: the grid point
    /// plus the fleet's jitter, different for each replica.
    pub fn timestamp(&self, t: usize, k: u64, replica: usize) -> i64 {
        if replica == 0 {
            return self.fleet.timestamp(t, k);
        }
        let j = self.fleet.config().jitter_ms;
        let jitter = if j > 0 {
            let h = mix(self.fleet.config().seed ^ ((t as u64) << 32) ^ k ^ ((replica as u64) << 56));
            (h % (2 * j as u64 + 1)) as i64 - j
        } else {
            0
        };
        self.fleet.grid_point(t, k) + jitter
    }

    /// The scrape at which target `t` last restarted at or before scrape
    /// `k`, if it has restarted.
    pub fn last_reset(&self, t: usize, k: u64) -> Option<u64> {
        let period = self.cfg.reset_every_ms;
        if period <= 0 {
            return None;
        }
        let interval = self.interval_ms();
        // Each target restarts once per period at its own offset in it.
        let offset = (mix(self.fleet.config().seed ^ 0x7E5E7 ^ t as u64) % period as u64) as i64;
        let since_start = self.fleet.grid_point(t, k) - self.start_ms();
        let epoch = (since_start - offset).div_euclid(period);
        if epoch < 0 {
            return None;
        }
        let reset_at = epoch * period + offset; // ms since start
        let phase = self.fleet.grid_point(t, 0) - self.start_ms();
        let k_reset = (reset_at - phase + interval - 1).div_euclid(interval).max(0) as u64;
        (k_reset <= k && k_reset > 0).then_some(k_reset)
    }

    /// Value of series `s` of target `t` at scrape `k`.
    pub fn value(&self, t: usize, s: usize, k: u64) -> f64 {
        match self.last_reset(t, k) {
            Some(k_reset) if self.fleet.is_counter(s) => self.fleet.counter_since(t, s, k_reset, k),
            _ => self.fleet.value(t, s, k),
        }
    }

    /// Samples of target `t`, `replica`, for scrapes `k0..k1`, all of which
    /// must be in one generation (the caller splits at generation changes).
    pub fn samples(&self, t: usize, replica: usize, labels: &[Labels], k0: u64, k1: u64) -> Vec<SeriesSamples> {
        let ts: Vec<i64> = (k0..k1).map(|k| self.timestamp(t, k, replica)).collect();
        labels
            .iter()
            .enumerate()
            .map(|(s, l)| {
                let samples = (k0..k1)
                    .zip(&ts)
                    .map(|(k, &t_ms)| Sample::new(t_ms, self.value(t, s, k)))
                    .collect();
                SeriesSamples::new(l.clone(), samples)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::FleetConfig;
    use crate::trace::Trace;
    use std::collections::{HashMap, HashSet};
    use std::sync::Arc;

    fn workload(targets: usize, churn: f64, replicas: usize, reset_every_ms: i64) -> Workload {
        let trace = Arc::new(Trace::embedded().unwrap());
        let fleet = Fleet::new(
            trace,
            FleetConfig {
                targets,
                start_ms: 1_700_000_000_000,
                interval_ms: 15_000,
                jitter_ms: 5,
                job: "node".into(),
                seed: 7,
            },
        );
        Workload::new(
            fleet,
            WorkloadConfig {
                churn_percent: churn,
                churn_interval_ms: 600_000,
                replicas,
                reset_every_ms,
                stages: Vec::new(),
            },
        )
    }

    #[test]
    fn stages_and_durations_parse() {
        let st = parse_stages("400:5m, 500:10m,400:1h30m").unwrap();
        assert_eq!(st.len(), 3);
        assert_eq!(
            st[1],
            Stage {
                targets: 500,
                duration: Duration::from_secs(600)
            }
        );
        assert_eq!(st[2].duration, Duration::from_secs(5400));
        assert!(parse_stages("400").is_err());
        assert!(parse_stages("x:5m").is_err());
        assert!(parse_stages("4:0s").is_err());
        assert!(parse_duration("5q").is_err());
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
    }

    #[test]
    fn series_per_target_and_label_sets() {
        let w = workload(4, 0.0, 2, 0);
        for t in 0..4 {
            for r in 0..2 {
                let l = w.labels(t, 0, r);
                assert_eq!(l.len(), 507);
                let names: HashSet<&str> = l.iter().filter_map(|x| x.metric_name()).collect();
                assert_eq!(names.len(), 285);
                for x in &l {
                    assert_eq!(x.get("job"), Some("node"));
                    assert_eq!(x.get("instance"), Some(Fleet::instance(t).as_str()));
                    assert_eq!(x.get("replica"), Some(format!("r{r}").as_str()));
                }
            }
        }
        let w = &w;
        let all: HashSet<Labels> = (0..4)
            .flat_map(|t| (0..2).flat_map(move |r| w.labels(t, 0, r)))
            .collect();
        assert_eq!(all.len(), 4 * 2 * 507);
        // One replica: no replica label at all.
        assert!(
            workload(1, 0.0, 1, 0)
                .labels(0, 0, 0)
                .iter()
                .all(|l| l.get("replica").is_none())
        );
    }

    #[test]
    fn churn_renames_the_stated_share_each_interval() {
        let w = workload(40, 10.0, 1, 0);
        assert_eq!(w.churn_per_generation(), 4);
        let start = 1_700_000_000_000;
        let mut prev: Vec<u64> = (0..40).map(|t| w.generation(t, start)).collect();
        assert!(prev.iter().all(|&g| g == 0));
        for g in 1..=25 {
            let ts = start + g * 600_000 + 1;
            let now: Vec<u64> = (0..40).map(|t| w.generation(t, ts)).collect();
            let changed = now.iter().zip(&prev).filter(|(a, b)| a != b).count();
            assert_eq!(changed, 4, "generation {g}");
            assert!(now.iter().zip(&prev).all(|(a, b)| a >= b));
            prev = now;
        }
        // After 25 generations of 4 out of 40 every target was renamed 2 or 3 times.
        assert!(prev.iter().all(|&g| g == 2 || g == 3));
        // A new generation is a new instance label.
        assert_ne!(w.labels(3, 1, 0)[0], w.labels(3, 0, 0)[0]);
        assert_eq!(w.labels(3, 1, 0)[0].get("instance"), Some("host-00003-g1:9100"));
    }

    #[test]
    fn counters_monotonic_except_at_resets() {
        // Reset about every 2 h; walk 12 h of 15 s scrapes.
        let w = workload(3, 0.0, 1, 2 * 3_600_000);
        let counters: Vec<usize> = (0..507).filter(|&s| w.fleet.is_counter(s)).collect();
        assert!(counters.len() >= 145);
        for t in 0..3 {
            let mut resets = HashMap::new();
            for k in 0..2880u64 {
                if let Some(r) = w.last_reset(t, k) {
                    resets.insert(r, ());
                }
            }
            assert!((5..=7).contains(&resets.len()), "target {t}: {} resets", resets.len());
            for &s in &counters {
                let mut prev = f64::MIN;
                for k in 0..2880u64 {
                    let v = w.value(t, s, k);
                    assert!(v.is_finite() || v.is_nan());
                    if resets.contains_key(&k) {
                        assert!(
                            v <= prev || prev == f64::MIN || v == 0.0,
                            "reset at {k} must restart low"
                        );
                        assert_eq!(v, 0.0, "counter restarts from 0");
                    } else {
                        assert!(v >= prev, "target {t} series {s} step {k}: {v} < {prev}");
                    }
                    prev = v;
                }
            }
        }
    }

    #[test]
    fn replica_timestamps_on_grid_with_jitter() {
        let w = workload(5, 0.0, 3, 0);
        let mut differ = 0;
        for t in 0..5 {
            for k in 0..200 {
                let g = w.fleet.grid_point(t, k);
                for r in 0..3 {
                    assert!((w.timestamp(t, k, r) - g).abs() <= 5);
                }
                differ += usize::from(w.timestamp(t, k, 1) != w.timestamp(t, k, 2));
            }
        }
        assert!(differ > 500, "replicas jitter independently");
    }

    #[test]
    fn active_targets_follow_stages() {
        let mut w = workload(10, 0.0, 1, 0);
        w.cfg.stages = parse_stages("4:1m,10:2m,6:1m").unwrap();
        let s = 1_700_000_000_000;
        assert_eq!(w.active_targets(s), 4);
        assert_eq!(w.active_targets(s + 59_999), 4);
        assert_eq!(w.active_targets(s + 60_000), 10);
        assert_eq!(w.active_targets(s + 180_000), 6);
        assert_eq!(w.active_targets(s + 999_000), 6);
    }
}
