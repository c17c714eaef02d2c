//! A fleet of simulated node_exporter targets replaying one [`Trace`].
//!
//! Each target gets its own `instance` label, its own offset into the trace
//! and its own phase within the scrape interval. Scrape `k` of a target is
//! stamped `start + phase + k * interval + jitter`, with a few milliseconds
//! of deterministic jitter as real scrapes have.
//!
//! The trace is never looped naively: a target walks it forward to the end,
//! then backward to the start, then forward again (a ping-pong of period
//! `2 * (scrapes - 1)`). Gauges take the recorded value at the current
//! position. Counters replay the recorded *increments* of every step walked,
//! in either direction, so they keep rising across the turns. Their sums are
//! rounded back to the exporter's printed precision so replay adds no float
//! noise that real data would not have.

use std::sync::Arc;

use cairn_model::{Label, Labels, Sample};
use cairn_protocols::SeriesSamples;

use crate::trace::Trace;

/// How the fleet is laid out in time.
#[derive(Debug, Clone)]
pub struct FleetConfig {
    pub targets: usize,
    /// Timestamp (ms) of the first grid point.
    pub start_ms: i64,
    pub interval_ms: i64,
    /// Largest absolute jitter (ms) added to a scrape timestamp.
    pub jitter_ms: i64,
    pub job: String,
    pub seed: u64,
}

/// Per-series data precomputed from the trace for O(1) replay.
#[derive(Debug)]
struct Replay {
    /// `cum[s][j]`: sum of counter increments from position 0 to position `j`
    /// (forward direction); empty for gauges.
    cum: Vec<Vec<f64>>,
    scale: Vec<Option<f64>>,
}

#[derive(Debug, Clone)]
pub struct Fleet {
    trace: Arc<Trace>,
    replay: Arc<Replay>,
    cfg: FleetConfig,
    /// Per target: offset into the ping-pong walk, phase in the interval.
    offsets: Vec<u64>,
    phases: Vec<i64>,
}

/// SplitMix64: a tiny deterministic hash, enough for offsets and jitter.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl Fleet {
    pub fn new(trace: Arc<Trace>, cfg: FleetConfig) -> Self {
        let n = trace.scrapes();
        let period = Self::period_of(n);
        let mut cum = Vec::with_capacity(trace.series_count());
        let mut scale = Vec::with_capacity(trace.series_count());
        for (s, meta) in trace.series.iter().enumerate() {
            if !meta.monotonic {
                cum.push(Vec::new());
                scale.push(None);
                continue;
            }
            let mut c = Vec::with_capacity(n);
            let mut acc = 0.0;
            c.push(0.0);
            for j in 1..n {
                let (a, b) = (trace.values[j - 1][s], trace.values[j][s]);
                // A drop is a counter reset: the increment is the new value.
                let inc = if b >= a { b - a } else { b };
                if inc.is_finite() {
                    acc += inc;
                }
                c.push(acc);
            }
            cum.push(c);
            scale.push(meta.decimals.map(|d| 10f64.powi(d as i32)));
        }
        let offsets = (0..cfg.targets)
            .map(|t| mix(cfg.seed ^ (t as u64).wrapping_mul(0xA24B_AED4_963E_E407)) % period)
            .collect();
        let phases = (0..cfg.targets)
            .map(|t| (mix(cfg.seed.wrapping_add(0x5EED) ^ t as u64) % cfg.interval_ms.max(1) as u64) as i64)
            .collect();
        Self {
            trace,
            replay: Arc::new(Replay { cum, scale }),
            cfg,
            offsets,
            phases,
        }
    }

    fn period_of(n: usize) -> u64 {
        (2 * (n.max(2) - 1)) as u64
    }

    pub fn config(&self) -> &FleetConfig {
        &self.cfg
    }

    pub fn targets(&self) -> usize {
        self.cfg.targets
    }

    pub fn series_per_target(&self) -> usize {
        self.trace.series_count()
    }

    pub fn total_series(&self) -> usize {
        self.targets() * self.series_per_target()
    }

    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    pub fn instance(t: usize) -> String {
        format!("host-{t:05}:9100")
    }

    /// The labels of every series of target `t`.
    pub fn target_labels(&self, t: usize) -> Vec<Labels> {
        let instance = Self::instance(t);
        self.trace
            .series
            .iter()
            .map(|s| {
                let mut v: Vec<Label> = s.labels.iter().cloned().collect();
                v.push(Label::new("instance", instance.clone()));
                v.push(Label::new("job", self.cfg.job.clone()));
                Labels::new(v).unwrap_or_else(|_| s.labels.clone())
            })
            .collect()
    }

    /// Position in the trace of walk step `u` (ping-pong).
    fn position(&self, u: u64) -> usize {
        let n = self.trace.scrapes() as u64;
        let p = u % Self::period_of(n as usize);
        (if p < n { p } else { 2 * (n - 1) - p }) as usize
    }

    /// Counter increments accumulated walking from step 0 to step `u`.
    fn walked(&self, cum: &[f64], u: u64) -> f64 {
        let n = cum.len() as u64;
        let period = Self::period_of(n as usize);
        let total = *cum.last().unwrap_or(&0.0);
        let cycles = (u / period) as f64;
        let p = u % period;
        let partial = if p < n {
            cum[p as usize]
        } else {
            2.0 * total - cum[(2 * (n - 1) - p) as usize]
        };
        cycles * 2.0 * total + partial
    }

    /// Timestamp of scrape `k` of target `t`.
    pub fn timestamp(&self, t: usize, k: u64) -> i64 {
        let j = self.cfg.jitter_ms;
        let jitter = if j > 0 {
            (mix(self.cfg.seed ^ ((t as u64) << 32) ^ k) % (2 * j as u64 + 1)) as i64 - j
        } else {
            0
        };
        self.cfg.start_ms + self.phases[t] + k as i64 * self.cfg.interval_ms + jitter
    }

    /// The grid point (without jitter) of scrape `k` of target `t`.
    pub fn grid_point(&self, t: usize, k: u64) -> i64 {
        self.cfg.start_ms + self.phases[t] + k as i64 * self.cfg.interval_ms
    }

    /// Value of series `s` of target `t` at scrape `k`.
    pub fn value(&self, t: usize, s: usize, k: u64) -> f64 {
        let o = self.offsets[t];
        let cum = &self.replay.cum[s];
        if cum.is_empty() {
            return self.trace.values[self.position(o + k)][s];
        }
        let start = self.trace.values[self.position(o)][s];
        let v = start + self.walked(cum, o + k) - self.walked(cum, o);
        match self.replay.scale[s] {
            Some(m) if (v * m).abs() < 1e15 => (v * m).round() / m,
            _ => v,
        }
    }

    /// Whether series `s` is cumulative (a counter or a summary/histogram part).
    pub fn is_counter(&self, s: usize) -> bool {
        !self.replay.cum[s].is_empty()
    }

    /// Counter series `s` of target `t` at scrape `k` as if the target had
    /// restarted at scrape `k_reset` (its counters start again from 0 and
    /// replay the same increments), rounded to the exporter's precision.
    pub fn counter_since(&self, t: usize, s: usize, k_reset: u64, k: u64) -> f64 {
        let v = self.value(t, s, k) - self.value(t, s, k_reset);
        match self.replay.scale[s] {
            Some(m) if (v * m).abs() < 1e15 => (v * m).round() / m,
            _ => v,
        }
    }

    /// Series samples of target `t` for scrapes `k0..k1`, labels from
    /// [`Self::target_labels`].
    pub fn samples(&self, t: usize, labels: &[Labels], k0: u64, k1: u64) -> Vec<SeriesSamples> {
        let ts: Vec<i64> = (k0..k1).map(|k| self.timestamp(t, k)).collect();
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
    use crate::trace::TraceSeries;

    fn toy_trace() -> Arc<Trace> {
        // 5 scrapes, a counter with a reset in the middle and a gauge.
        let series = vec![
            TraceSeries {
                labels: Labels::from_pairs([("__name__", "c_total")]),
                monotonic: true,
                decimals: Some(1),
            },
            TraceSeries {
                labels: Labels::from_pairs([("__name__", "g")]),
                monotonic: false,
                decimals: Some(0),
            },
        ];
        let values = vec![
            vec![1.0, 5.0],
            vec![1.5, 6.0],
            vec![2.5, 7.0],
            vec![0.5, 6.0],
            vec![1.1, 4.0],
        ];
        Arc::new(Trace {
            series,
            values,
            recorded_ts: vec![0, 1, 2, 3, 4],
        })
    }

    fn cfg(targets: usize) -> FleetConfig {
        FleetConfig {
            targets,
            start_ms: 1_700_000_000_000,
            interval_ms: 15_000,
            jitter_ms: 3,
            job: "node".into(),
            seed: 42,
        }
    }

    #[test]
    fn counters_stay_monotonic_across_turns() {
        let f = Fleet::new(toy_trace(), cfg(7));
        for t in 0..7 {
            let mut prev = f64::MIN;
            for k in 0..40 {
                let v = f.value(t, 0, k);
                assert!(v >= prev, "target {t} step {k}: {v} < {prev}");
                prev = v;
            }
        }
    }

    #[test]
    fn counter_replays_increments_backward() {
        let mut c = cfg(1);
        c.seed = 0;
        let mut f = Fleet::new(toy_trace(), c);
        f.offsets[0] = 0;
        // Forward increments: 0.5, 1.0, 0.5 (reset), 0.6; then backward the same in reverse.
        let got: Vec<f64> = (0..10).map(|k| f.value(0, 0, k)).collect();
        assert_eq!(got, [1.0, 1.5, 2.5, 3.0, 3.6, 4.2, 4.7, 5.7, 6.2, 6.7]);
        // Gauge ping-pongs: positions 0 1 2 3 4 3 2 1 0 1.
        let g: Vec<f64> = (0..10).map(|k| f.value(0, 1, k)).collect();
        assert_eq!(g, [5.0, 6.0, 7.0, 6.0, 4.0, 6.0, 7.0, 6.0, 5.0, 6.0]);
    }

    #[test]
    fn timestamps_on_grid_with_small_jitter() {
        let f = Fleet::new(toy_trace(), cfg(20));
        for t in 0..20 {
            let mut prev = i64::MIN;
            for k in 0..100 {
                let ts = f.timestamp(t, k);
                let g = f.grid_point(t, k);
                assert!((ts - g).abs() <= 3);
                assert_eq!((g - f.config().start_ms - f.phases[t]) % 15_000, 0);
                assert!(f.phases[t] >= 0 && f.phases[t] < 15_000);
                assert!(ts > prev);
                prev = ts;
            }
        }
    }

    #[test]
    fn distinct_instances_and_offsets() {
        let f = Fleet::new(toy_trace(), cfg(50));
        let mut all = std::collections::HashSet::new();
        for t in 0..50 {
            for l in f.target_labels(t) {
                assert_eq!(l.get("instance"), Some(Fleet::instance(t).as_str()));
                assert!(all.insert(l));
            }
        }
        assert_eq!(all.len(), f.total_series());
        let distinct: std::collections::HashSet<u64> = f.offsets.iter().copied().collect();
        assert!(distinct.len() > 1);
    }

    #[test]
    fn real_trace_fleet() {
        let path = std::path::Path::new(crate::DEFAULT_TRACE);
        if !path.exists() {
            return;
        }
        let trace = Arc::new(Trace::load(path).unwrap());
        let f = Fleet::new(trace.clone(), cfg(3));
        for t in 0..3 {
            assert_eq!(f.target_labels(t).len(), 507);
        }
        // Walk well past two turns (1198-step period) for every counter.
        for s in (0..trace.series_count()).filter(|&s| trace.series[s].monotonic) {
            let mut prev = f64::MIN;
            for k in 0..2500 {
                let v = f.value(1, s, k);
                assert!(v >= prev, "series {} step {k}", trace.series[s].labels);
                prev = v;
            }
        }
    }
}
