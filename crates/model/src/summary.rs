//! A summary as Prometheus reports its own latencies: a count and sum of
//! every observation since start, and quantiles over a sliding window of
//! the last minutes only.
//!
//! The window is a ring of age buckets (each a fifth of the window); an
//! observation goes into the newest, the oldest is cleared as time moves
//! on, and a snapshot merges them all. Each bucket is a log-bucketed sketch
//! (the idea of DDSketch): values fall into buckets whose bounds grow by a
//! constant ratio, so a quantile is known within [`RELATIVE_ACCURACY`] of
//! its true value, and the memory is bounded by the range of the values
//! ([`MIN_TRACKED`] to [`MAX_TRACKED`]), not by their number.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Quantiles Prometheus' rule and notification latency summaries report.
pub const QUANTILES_3: &[f64] = &[0.5, 0.9, 0.99];
/// Quantiles of Prometheus' interval, sync and group duration summaries.
pub const QUANTILES_5: &[f64] = &[0.01, 0.05, 0.5, 0.9, 0.99];

/// How far back quantiles look (Prometheus' default summary max age).
pub const WINDOW: Duration = Duration::from_secs(600);
const AGE_BUCKETS: usize = 5;

/// A quantile estimate is within this fraction of the true value.
pub const RELATIVE_ACCURACY: f64 = 0.005;
/// Magnitudes below this count as zero.
pub const MIN_TRACKED: f64 = 1e-9;
/// Magnitudes above this count as this (keeps the sketch bounded).
pub const MAX_TRACKED: f64 = 1e12;

/// What a summary reports at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct SummarySnapshot {
    /// Observations since start.
    pub count: u64,
    /// Their sum.
    pub sum: f64,
    /// `(quantile, value)`; the value is NaN when the window holds nothing.
    pub quantiles: Vec<(f64, f64)>,
}

/// A summary safe to share between threads: one short lock per observation.
#[derive(Debug)]
pub struct WindowedSummary {
    quantiles: &'static [f64],
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    count: u64,
    sum: f64,
    /// `buckets[newest]` receives observations; it started at `newest_start`.
    buckets: [Sketch; AGE_BUCKETS],
    newest: usize,
    newest_start: Instant,
}

impl WindowedSummary {
    pub fn new(quantiles: &'static [f64]) -> Self {
        Self::starting_at(quantiles, Instant::now())
    }

    /// A summary whose window starts at `now` (tests drive the clock).
    pub fn starting_at(quantiles: &'static [f64], now: Instant) -> Self {
        Self {
            quantiles,
            state: Mutex::new(State {
                count: 0,
                sum: 0.0,
                buckets: Default::default(),
                newest: 0,
                newest_start: now,
            }),
        }
    }

    pub fn observe(&self, v: f64) {
        self.observe_at(v, Instant::now());
    }

    pub fn observe_at(&self, v: f64, now: Instant) {
        let mut s = self.lock();
        s.rotate(now);
        s.count += 1;
        s.sum += v;
        let newest = s.newest;
        if let Some(b) = s.buckets.get_mut(newest) {
            b.insert(v);
        }
    }

    pub fn snapshot(&self) -> SummarySnapshot {
        self.snapshot_at(Instant::now())
    }

    pub fn snapshot_at(&self, now: Instant) -> SummarySnapshot {
        let mut s = self.lock();
        s.rotate(now);
        let mut merged = Sketch::default();
        for b in &s.buckets {
            merged.merge(b);
        }
        SummarySnapshot {
            count: s.count,
            sum: s.sum,
            quantiles: self.quantiles.iter().map(|&q| (q, merged.quantile(q))).collect(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves counts that are
        // still meaningful.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    /// Moves the newest bucket forward to `now`, clearing buckets that
    /// fell out of the window.
    fn rotate(&mut self, now: Instant) {
        let width = WINDOW / AGE_BUCKETS as u32;
        let mut steps = 0;
        while now.saturating_duration_since(self.newest_start) >= width {
            self.newest_start += width;
            steps += 1;
            if steps <= AGE_BUCKETS {
                self.newest = (self.newest + 1) % AGE_BUCKETS;
                if let Some(b) = self.buckets.get_mut(self.newest) {
                    *b = Sketch::default();
                }
            }
        }
    }
}

/// Counts of values by logarithmic bucket, separately for both signs.
#[derive(Debug, Default, Clone)]
struct Sketch {
    positive: BTreeMap<i32, u64>,
    negative: BTreeMap<i32, u64>,
    zero: u64,
    count: u64,
}

fn gamma() -> f64 {
    (1.0 + RELATIVE_ACCURACY) / (1.0 - RELATIVE_ACCURACY)
}

/// The bucket of magnitude `m`: `gamma^(key-1) < m <= gamma^key`.
fn key_of(m: f64) -> i32 {
    (m.min(MAX_TRACKED).ln() / gamma().ln()).ceil() as i32
}

/// The value that represents bucket `key`, within the relative accuracy of all of it.
fn value_of(key: i32) -> f64 {
    let g = gamma();
    2.0 * g.powi(key) / (g + 1.0)
}

impl Sketch {
    fn insert(&mut self, v: f64) {
        if v.is_nan() {
            return;
        }
        self.count += 1;
        if v.abs() < MIN_TRACKED {
            self.zero += 1;
        } else if v > 0.0 {
            *self.positive.entry(key_of(v)).or_default() += 1;
        } else {
            *self.negative.entry(key_of(-v)).or_default() += 1;
        }
    }

    fn merge(&mut self, other: &Sketch) {
        for (k, n) in &other.positive {
            *self.positive.entry(*k).or_default() += n;
        }
        for (k, n) in &other.negative {
            *self.negative.entry(*k).or_default() += n;
        }
        self.zero += other.zero;
        self.count += other.count;
    }

    /// The value of rank `q * (count - 1)` (0-based) in sorted order.
    fn quantile(&self, q: f64) -> f64 {
        if self.count == 0 {
            return f64::NAN;
        }
        let rank = (q.clamp(0.0, 1.0) * (self.count - 1) as f64).round() as u64;
        let mut seen = 0;
        for (k, n) in self.negative.iter().rev() {
            seen += n;
            if seen > rank {
                return -value_of(*k);
            }
        }
        seen += self.zero;
        if seen > rank {
            return 0.0;
        }
        for (k, n) in &self.positive {
            seen += n;
            if seen > rank {
                return value_of(*k);
            }
        }
        self.positive.keys().next_back().map_or(0.0, |k| value_of(*k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(sorted: &[f64], q: f64) -> f64 {
        sorted[(q * (sorted.len() - 1) as f64).round() as usize]
    }

    #[test]
    fn summary_quantiles_are_within_the_relative_accuracy() {
        let t0 = Instant::now();
        let s = WindowedSummary::starting_at(QUANTILES_5, t0);
        // A skewed spread of latencies from microseconds to seconds.
        let mut values: Vec<f64> = (1..=10_000).map(|i| 1e-6 * (i as f64).powf(2.3)).collect();
        for (i, v) in values.iter().enumerate() {
            s.observe_at(*v, t0 + Duration::from_millis(i as u64));
        }
        values.sort_by(f64::total_cmp);
        let snap = s.snapshot_at(t0 + Duration::from_secs(11));
        assert_eq!(snap.count, 10_000);
        assert!((snap.sum - values.iter().sum::<f64>()).abs() < 1e-6 * snap.sum);
        for (q, v) in snap.quantiles {
            let want = exact(&values, q);
            assert!(
                (v - want).abs() <= RELATIVE_ACCURACY * want * 1.0001,
                "q{q}: {v} vs {want}"
            );
        }
    }

    #[test]
    fn summary_forgets_observations_older_than_the_window() {
        let t0 = Instant::now();
        let s = WindowedSummary::starting_at(QUANTILES_3, t0);
        s.observe_at(100.0, t0);
        let soon = s.snapshot_at(t0 + Duration::from_secs(60));
        assert!((soon.quantiles[0].1 - 100.0).abs() <= 0.5);
        // Still inside the window after 8 minutes.
        s.observe_at(1.0, t0 + Duration::from_secs(500));
        let q = s.snapshot_at(t0 + Duration::from_secs(500)).quantiles;
        assert!((q[2].1 - 100.0).abs() <= 0.5, "{q:?}");
        // Ten minutes on, the first observation left the window; the second stays.
        let later = s.snapshot_at(t0 + Duration::from_secs(601));
        assert_eq!(later.count, 2, "count and sum are since start");
        assert_eq!(later.sum, 101.0);
        for (_, v) in &later.quantiles {
            assert!((v - 1.0).abs() <= 0.005, "{later:?}");
        }
        // Long idle: every bucket cleared, quantiles NaN.
        let idle = s.snapshot_at(t0 + Duration::from_secs(3600));
        assert!(idle.quantiles.iter().all(|(_, v)| v.is_nan()));
        assert_eq!(idle.count, 2);
    }

    #[test]
    fn summary_handles_zero_negative_and_huge_values() {
        let t0 = Instant::now();
        let s = WindowedSummary::starting_at(&[0.0, 0.5, 1.0], t0);
        for v in [-4.0, 0.0, 0.0, 2.0, 1e300, f64::NAN] {
            s.observe_at(v, t0);
        }
        let q = s.snapshot_at(t0).quantiles;
        assert!((q[0].1 + 4.0).abs() <= 0.02);
        assert_eq!(q[1].1, 0.0);
        assert!((q[2].1 - MAX_TRACKED).abs() <= RELATIVE_ACCURACY * MAX_TRACKED);
    }
}
