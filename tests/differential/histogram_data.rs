//! The native-histogram data set of tests/histogram_differential.rs: an
//! hour at 15 s of
//! - `rpc_seconds`: counters of observations in exponential buckets of four
//!   schemas (3, 0, -2, 8), with a zero bucket and negative observations;
//!   svc="b" restarts (a counter reset) half way, svc="c" stops for ten
//!   minutes and ends with a staleness marker before it comes back;
//! - `rpc_size_bytes`: counters in custom buckets (NHCB) of two different
//!   bounds;
//! - `queue_depth`: a gauge histogram with float counts that go up and down;
//! - `mixed_kind`: floats for the first half, histograms after.
//!
//! Observations come from a fixed sequence, so every run writes the same
//! data relative to its end time.

use std::collections::BTreeMap;
use std::sync::Arc;

use cairn_model::histogram::{CUSTOM_BUCKETS_SCHEMA, Histogram, ResetHint};
use cairn_model::stale_nan;

pub const INTERVAL_MS: i64 = 15_000;
pub const SPAN_MS: i64 = 3_600_000;
/// Samples are at `.250` s, evaluations at `.500`.
const PHASE_MS: i64 = 250;

/// One value written.
#[derive(Debug, Clone)]
pub enum Value {
    Float(f64),
    Histogram(Histogram),
}

/// One series: labels and values by time.
pub struct Series {
    pub labels: Vec<(&'static str, String)>,
    pub samples: Vec<(i64, Value)>,
}

pub struct Dataset {
    pub start_ms: i64,
    pub end_ms: i64,
    pub series: Vec<Series>,
}

/// The next pseudo-random number of a fixed sequence, in `[0, 1)`.
fn unit(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

/// A histogram that observations are added to.
struct Observer {
    schema: i32,
    zero_threshold: f64,
    custom_bounds: Option<Arc<[f64]>>,
    count: f64,
    sum: f64,
    zero_count: f64,
    positive: BTreeMap<i32, f64>,
    negative: BTreeMap<i32, f64>,
}

impl Observer {
    fn exponential(schema: i32, zero_threshold: f64) -> Self {
        Self {
            schema,
            zero_threshold,
            custom_bounds: None,
            count: 0.0,
            sum: 0.0,
            zero_count: 0.0,
            positive: BTreeMap::new(),
            negative: BTreeMap::new(),
        }
    }

    fn custom(bounds: &[f64]) -> Self {
        Self {
            custom_bounds: Some(bounds.into()),
            ..Self::exponential(CUSTOM_BUCKETS_SCHEMA, 0.0)
        }
    }

    fn observe(&mut self, v: f64, weight: f64) {
        self.count += weight;
        self.sum += v * weight;
        if let Some(bounds) = &self.custom_bounds {
            let idx = bounds.partition_point(|&b| b < v) as i32;
            *self.positive.entry(idx).or_default() += weight;
            return;
        }
        if v.abs() <= self.zero_threshold {
            self.zero_count += weight;
            return;
        }
        // The bucket whose upper bound is the first at or above |v|.
        let idx = (v.abs().log2() * f64::from(self.schema).exp2()).ceil() as i32;
        let side = if v > 0.0 {
            &mut self.positive
        } else {
            &mut self.negative
        };
        *side.entry(idx).or_default() += weight;
    }

    fn snapshot(&self, reset_hint: ResetHint) -> Histogram {
        Histogram {
            schema: self.schema,
            reset_hint,
            count: self.count,
            sum: self.sum,
            zero_threshold: self.zero_threshold,
            zero_count: self.zero_count,
            positive: self.positive.iter().map(|(&i, &c)| (i, c)).collect(),
            negative: self.negative.iter().map(|(&i, &c)| (i, c)).collect(),
            custom_bounds: self.custom_bounds.clone(),
        }
    }
}

/// A histogram staleness marker, as Prometheus writes one.
fn stale_histogram() -> Histogram {
    Histogram {
        sum: stale_nan(),
        ..Histogram::default()
    }
}

/// Builds the data set ending a little before `now_ms`.
pub fn build(now_ms: i64) -> Dataset {
    let end_ms = (now_ms / 1000) * 1000 - 60_000;
    let start_ms = end_ms - SPAN_MS;
    let steps = SPAN_MS / INTERVAL_MS;
    let at = |k: i64| start_ms + k * INTERVAL_MS + PHASE_MS;
    let labels = |name: &'static str, svc: &str| vec![("__name__", name.to_string()), ("svc", svc.to_string())];
    let mut series = Vec::new();
    let mut rng = 42u64;

    // rpc_seconds: latencies in exponential buckets.
    for (svc, schema) in [("a", 3), ("b", 0), ("c", -2), ("d", 8)] {
        let mut h = Observer::exponential(schema, 1e-3);
        let mut samples = Vec::new();
        for k in 0..=steps {
            if svc == "b" && k == steps / 2 {
                h = Observer::exponential(schema, 1e-3);
            }
            let per_step = if svc == "d" { 2 } else { 7 };
            for _ in 0..per_step {
                let u = unit(&mut rng);
                // Mostly positive latencies, some zeros and a few negative
                // corrections, so every kind of bucket is populated.
                let v = match (u * 100.0) as u32 {
                    0..=4 => 0.0,
                    5..=9 => -0.01 - u,
                    _ => 0.002 + u * u * 3.0,
                };
                h.observe(v, 1.0);
            }
            match (svc, k) {
                // A gap, then a staleness marker, then it resumes.
                ("c", 100..=139) => continue,
                ("c", 180) => samples.push((at(k), Value::Histogram(stale_histogram()))),
                ("c", 181..=199) => continue,
                _ => samples.push((at(k), Value::Histogram(h.snapshot(ResetHint::Unknown)))),
            }
        }
        series.push(Series {
            labels: labels("rpc_seconds", svc),
            samples,
        });
    }

    // rpc_size_bytes: custom buckets of two different layouts.
    for (svc, bounds) in [
        ("a", &[100.0, 500.0, 1000.0, 5000.0][..]),
        ("b", &[100.0, 1000.0, 10000.0][..]),
    ] {
        let mut h = Observer::custom(bounds);
        let samples = (0..=steps)
            .map(|k| {
                for _ in 0..5 {
                    let u = unit(&mut rng);
                    h.observe(20.0 + u * u * 12000.0, 1.0);
                }
                (at(k), Value::Histogram(h.snapshot(ResetHint::Unknown)))
            })
            .collect();
        series.push(Series {
            labels: labels("rpc_size_bytes", svc),
            samples,
        });
    }

    // queue_depth: a gauge histogram whose float counts go up and down.
    let samples = (0..=steps)
        .map(|k| {
            let mut h = Observer::exponential(1, 0.5);
            let level = 1.0 + (k as f64 / 17.0).sin().abs() * 4.0;
            for j in 0..6 {
                let u = unit(&mut rng);
                h.observe((u - 0.2) * 40.0 * f64::from(j + 1), level * 0.5);
            }
            (at(k), Value::Histogram(h.snapshot(ResetHint::Gauge)))
        })
        .collect();
    series.push(Series {
        labels: labels("queue_depth", "a"),
        samples,
    });

    // mixed_kind: a float counter, then a histogram counter.
    let mut h = Observer::exponential(2, 1e-3);
    let samples = (0..=steps)
        .map(|k| {
            if k < steps / 2 {
                return (at(k), Value::Float(k as f64 * 3.0));
            }
            for _ in 0..4 {
                let u = unit(&mut rng);
                h.observe(0.01 + u, 1.0);
            }
            (at(k), Value::Histogram(h.snapshot(ResetHint::Unknown)))
        })
        .collect();
    series.push(Series {
        labels: labels("mixed_kind", "a"),
        samples,
    });

    Dataset {
        start_ms,
        end_ms,
        series,
    }
}
