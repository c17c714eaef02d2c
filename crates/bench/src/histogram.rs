//! Latency histogram with logarithmic buckets (2% wide): constant memory,
//! percentiles within 2% of the exact value.

use std::time::Duration;

const GROWTH: f64 = 1.02;
/// Buckets cover 1 µs .. ~1000 s.
const BUCKETS: usize = 1400;

#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max_us: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: vec![0; BUCKETS],
            total: 0,
            max_us: 0,
        }
    }
}

impl Histogram {
    pub fn record(&mut self, d: Duration) {
        let us = d.as_micros().max(1) as u64;
        let i = ((us as f64).ln() / GROWTH.ln()) as usize;
        self.counts[i.min(BUCKETS - 1)] += 1;
        self.total += 1;
        self.max_us = self.max_us.max(us);
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.max_us = self.max_us.max(other.max_us);
    }

    /// The `q` quantile (0..=1) in milliseconds; 0 when empty.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                // Upper edge of the bucket, but never above the largest seen.
                let upper = GROWTH.powi(i as i32 + 1);
                return upper.min(self.max_us as f64) / 1000.0;
            }
        }
        self.max_us as f64 / 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_within_two_percent() {
        let mut h = Histogram::default();
        for ms in 1..=1000u64 {
            h.record(Duration::from_millis(ms));
        }
        for (q, exact) in [(0.5, 500.0), (0.9, 900.0), (0.99, 990.0), (1.0, 1000.0)] {
            let got = h.quantile_ms(q);
            assert!((got - exact).abs() / exact <= 0.021, "q{q}: {got} vs {exact}");
        }
        let mut other = Histogram::default();
        other.record(Duration::from_secs(5));
        h.merge(&other);
        assert_eq!(h.count(), 1001);
        assert_eq!(h.quantile_ms(1.0), 5000.0);
        assert_eq!(Histogram::default().quantile_ms(0.5), 0.0);
    }
}
