//! Sample kinds: what a kernel needs to know about a sample's value.
//!
//! A series of Prometheus 3 holds floats, native histograms, or both at
//! different times. Kernels that apply to both (the `rate` family, `sum`
//! and `avg`, the `*_over_time` that take histograms, selection and step
//! walks) are written once, generic over [`Kind`], and run once per column
//! of a series; kernels of one kind only (`histogram_quantile` on native
//! histograms, `min`, `quantile`) take that kind's type directly. The float
//! instance compiles to the same code as a kernel written for `f64`, so
//! the generic form costs floats nothing.

use std::convert::Infallible;

mod histogram;

#[cfg(test)]
pub(crate) use cairn_model::histogram::{CUSTOM_BUCKETS_SCHEMA, Histogram, Incompatible};

/// The arithmetic and counter semantics the kernels shared by every kind use.
pub(crate) trait Kind: Clone + Default + Send + Sync + 'static {
    /// Why two values cannot be combined: [`Incompatible`], or
    /// [`Infallible`] for floats, so that float callers have no error to
    /// handle.
    type Error: Copy + std::fmt::Debug;

    /// `self += other`.
    fn add(&mut self, other: &Self) -> Result<(), Self::Error>;

    /// `self -= other`.
    fn sub(&mut self, other: &Self) -> Result<(), Self::Error>;

    /// `self *= factor`.
    fn scale(&mut self, factor: f64);

    /// Whether `next` following `prev` in a counter means it was reset.
    fn is_reset(prev: &Self, next: &Self) -> bool;

    /// Whether any value of `vs` is a reset of the one before it.
    fn any_reset(vs: &[Self]) -> bool {
        vs.windows(2).any(|p| Self::is_reset(&p[0], &p[1]))
    }

    /// `last`, ready to have `first` subtracted and the values `between`
    /// them added back: a histogram at the coarsest schema of them all, as
    /// Prometheus reduces it before subtracting.
    fn aligned_to(last: &Self, first: &Self, between: &[Self]) -> Result<Self, Self::Error>;

    /// What a counter's increase over a window counts from when its second
    /// value `second` follows `first`, if not `first` itself (a histogram
    /// after a reset: an empty one of the second's layout).
    fn reset_base(_first: &Self, _second: &Self) -> Option<Self> {
        None
    }

    /// The level by which a counter's extrapolation stops at zero: the
    /// value of a float, the count of a histogram.
    fn counter_level(&self) -> f64;
}

impl Kind for f64 {
    type Error = Infallible;

    #[inline]
    fn add(&mut self, other: &Self) -> Result<(), Infallible> {
        *self += other;
        Ok(())
    }

    #[inline]
    fn sub(&mut self, other: &Self) -> Result<(), Infallible> {
        *self -= other;
        Ok(())
    }

    #[inline]
    fn scale(&mut self, factor: f64) {
        *self *= factor;
    }

    #[inline]
    fn is_reset(prev: &Self, next: &Self) -> bool {
        next < prev
    }

    /// Scans every pair without stopping early, so it vectorises.
    fn any_reset(vs: &[Self]) -> bool {
        vs.windows(2).fold(false, |any, p| any | (p[1] < p[0]))
    }

    #[inline]
    fn aligned_to(last: &Self, _first: &Self, _between: &[Self]) -> Result<Self, Infallible> {
        Ok(*last)
    }

    #[inline]
    fn counter_level(&self) -> f64 {
        *self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_resets_are_decreases_anywhere() {
        assert!(!f64::any_reset(&[1.0, 1.0, 2.0, 5.0]));
        assert!(f64::any_reset(&[1.0, 3.0, 2.0, 5.0]));
        assert!(f64::any_reset(&[1.0, 3.0, 4.0, 0.0]));
        // NaN compares false: Prometheus does not count it as a reset either.
        assert!(!f64::any_reset(&[1.0, f64::NAN, 2.0, 5.0]));
    }
}
