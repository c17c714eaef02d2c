//! Native histograms as a [`Kind`]: the arithmetic is the model's.

use cairn_model::histogram::{Histogram, Incompatible};

use super::Kind;

impl Kind for Histogram {
    type Error = Incompatible;

    fn add(&mut self, other: &Self) -> Result<(), Incompatible> {
        Histogram::add(self, other)
    }

    fn sub(&mut self, other: &Self) -> Result<(), Incompatible> {
        Histogram::sub(self, other)
    }

    fn scale(&mut self, factor: f64) {
        Histogram::scale(self, factor);
    }

    fn is_reset(prev: &Self, next: &Self) -> bool {
        Histogram::is_reset(prev, next)
    }

    fn aligned_to(last: &Self, first: &Self, between: &[Self]) -> Result<Self, Incompatible> {
        Histogram::aligned_to(last, first, between)
    }

    fn reset_base(first: &Self, second: &Self) -> Option<Self> {
        Histogram::reset_base(first, second)
    }

    fn counter_level(&self) -> f64 {
        self.count
    }
}
