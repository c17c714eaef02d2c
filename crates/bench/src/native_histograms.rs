//! A workload of request latencies recorded twice: as native histograms
//! (exponential buckets of schema 3, as Prometheus' Go client makes them
//! with its default bucket factor of 1.1) and as classic histograms
//! (`_bucket{le}`, `_sum`, `_count` with the client's default bounds),
//! holding the same observations, so storage and queries of the two forms
//! can be compared.
//!
//! Observations are drawn from a fixed pseudo-random sequence per series:
//! every run and every server gets the same data.

use std::collections::BTreeMap;

use cairn_model::histogram::{Histogram, ResetHint};

/// Schema 3: bucket bounds grow by 2^(1/8), the finest schema not above a
/// factor of 1.1.
pub const SCHEMA: i32 = 3;
/// Observations at or below this are counted in the zero bucket (the Go
/// client's default threshold, 2^-128).
pub const ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;
/// The Go client's default classic bucket bounds, in seconds.
pub const CLASSIC_BOUNDS: [f64; 11] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// The cumulative state of one series' latencies in both forms.
#[derive(Debug, Clone)]
pub struct Latencies {
    rng: u64,
    count: u64,
    sum: f64,
    zero_count: u64,
    buckets: BTreeMap<i32, u64>,
    /// Per classic bound, then +Inf: observations at or below it.
    classic: [u64; CLASSIC_BOUNDS.len() + 1],
}

impl Latencies {
    /// A series whose observations follow from `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            count: 0,
            sum: 0.0,
            zero_count: 0,
            buckets: BTreeMap::new(),
            classic: [0; CLASSIC_BOUNDS.len() + 1],
        }
    }

    fn unit(&mut self) -> f64 {
        self.rng = self
            .rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Records `n` latencies: mostly a few milliseconds to a second, with
    /// a long tail, the shape of a service's request durations.
    pub fn observe(&mut self, n: usize) {
        for _ in 0..n {
            let (a, b) = (self.unit(), self.unit());
            // A log-normal-like draw around 50 ms.
            let v = 0.05 * (4.0 * (a - 0.5) + 2.0 * (b - 0.5)).exp2().powi(2);
            self.count += 1;
            self.sum += v;
            if v <= ZERO_THRESHOLD {
                self.zero_count += 1;
            } else {
                let idx = (v.log2() * f64::from(SCHEMA).exp2()).ceil() as i32;
                *self.buckets.entry(idx).or_default() += 1;
            }
            let first = CLASSIC_BOUNDS.partition_point(|&b| b < v);
            for c in &mut self.classic[first..] {
                *c += 1;
            }
        }
    }

    /// The native histogram of everything observed so far.
    pub fn native(&self) -> Histogram {
        Histogram {
            schema: SCHEMA,
            reset_hint: ResetHint::Unknown,
            count: self.count as f64,
            sum: self.sum,
            zero_threshold: ZERO_THRESHOLD,
            zero_count: self.zero_count as f64,
            positive: self.buckets.iter().map(|(&i, &c)| (i, c as f64)).collect(),
            negative: Vec::new(),
            custom_bounds: None,
        }
    }

    /// The classic series' values: `(le, cumulative count)` for every bound
    /// and `+Inf`, then the sum and the count.
    pub fn classic(&self) -> (Vec<(String, f64)>, f64, f64) {
        let les = CLASSIC_BOUNDS
            .iter()
            .map(|b| b.to_string())
            .chain(["+Inf".to_string()])
            .zip(self.classic.iter().map(|&c| c as f64))
            .collect();
        (les, self.sum, self.count as f64)
    }

    /// Populated native buckets.
    pub fn populated_buckets(&self) -> usize {
        self.buckets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_hold_the_same_observations() {
        let mut l = Latencies::new(7);
        for _ in 0..40 {
            l.observe(50);
        }
        let native = l.native();
        assert_eq!(native.count, 2000.0);
        let in_buckets: f64 = native.positive.iter().map(|b| b.1).sum::<f64>() + native.zero_count;
        assert_eq!(in_buckets, native.count);
        native.validate().unwrap();
        let (les, sum, count) = l.classic();
        assert_eq!(count, native.count);
        assert_eq!(sum, native.sum);
        assert_eq!(les.last().unwrap(), &("+Inf".to_string(), 2000.0));
        assert!(les.windows(2).all(|w| w[0].1 <= w[1].1));
        // A realistic spread: tens of populated buckets.
        assert!((20..=120).contains(&l.populated_buckets()), "{}", l.populated_buckets());
    }

    #[test]
    fn every_seed_gives_its_own_sequence_every_time() {
        let run = |seed| {
            let mut l = Latencies::new(seed);
            l.observe(100);
            l.native()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }
}
