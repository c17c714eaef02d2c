/// Bit pattern of Prometheus' staleness marker: a NaN that queries treat as
/// "this series ended here". Stored and returned bit-exact.
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

/// The staleness marker as a float.
pub fn stale_nan() -> f64 {
    f64::from_bits(STALE_NAN_BITS)
}

/// True only for the exact staleness bit pattern, not for other NaNs.
pub fn is_stale_nan(v: f64) -> bool {
    v.to_bits() == STALE_NAN_BITS
}

/// One float sample: a timestamp in milliseconds and a value.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub t: i64,
    pub v: f64,
}

impl Sample {
    pub fn new(t: i64, v: f64) -> Self {
        Self { t, v }
    }
}

/// Samples are equal when timestamps match and values are bit-identical, so
/// NaN payloads (stale markers) compare as stored.
impl PartialEq for Sample {
    fn eq(&self, other: &Self) -> bool {
        self.t == other.t && self.v.to_bits() == other.v.to_bits()
    }
}
impl Eq for Sample {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_nan_is_distinguished_from_other_nans() {
        assert!(is_stale_nan(stale_nan()));
        assert!(!is_stale_nan(f64::NAN));
        assert!(stale_nan().is_nan());
    }

    #[test]
    fn sample_equality_is_bitwise() {
        assert_eq!(Sample::new(1, f64::NAN), Sample::new(1, f64::NAN));
        assert_ne!(Sample::new(1, f64::NAN), Sample::new(1, stale_nan()));
        assert_ne!(Sample::new(1, 0.0), Sample::new(1, -0.0));
    }
}
