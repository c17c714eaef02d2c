//! What every decoder does with a native histogram once it is read off the
//! wire: schemas finer than Cairn stores are reduced, then the histogram is
//! checked as Prometheus checks it before storing.

use cairn_model::Histogram;
use cairn_model::histogram::{InvalidHistogram, reduce_buckets};

/// The finest exponential schema stored; Prometheus reduces finer ones
/// (up to its reserved 52) on ingestion rather than refusing them.
pub(crate) const MAX_SCHEMA: i32 = 8;
const MAX_RESERVED_SCHEMA: i32 = 52;

/// Why one native histogram sample was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HistogramError {
    #[error(transparent)]
    Invalid(#[from] InvalidHistogram),
    #[error("histogram has {buckets} buckets, over the limit of {limit}")]
    TooManyBuckets { buckets: usize, limit: usize },
    /// Refused before decoding, so its arrays are never allocated.
    #[error("histogram message is {len} bytes, more than any histogram within the {limit}-bucket limit")]
    TooLarge { len: usize, limit: usize },
    /// An integer histogram whose count is not what its buckets add up to
    /// (or, when its sum is NaN, less than that).
    #[error("{buckets} observations found in buckets, but the histogram's count is {count}")]
    CountMismatch { buckets: u64, count: u64 },
    #[error("histogram bucket index is out of range")]
    IndexRange,
    /// An OpenTelemetry exponential histogram coarser than any schema.
    #[error("exponential histogram scale {0} is below -4, the coarsest schema")]
    Scale(i32),
}

/// The most bytes a histogram message within `limit` buckets may take: a
/// bucket costs at most a delta or count, a span and a custom bound, each
/// with its key, well under 64 bytes.
pub(crate) fn max_message_len(limit: usize) -> usize {
    limit.saturating_mul(64).saturating_add(1024)
}

/// Reduces a schema between 9 and 52 to 8, as Prometheus does on ingestion,
/// then validates.
pub(crate) fn finish(mut h: Histogram) -> Result<Histogram, HistogramError> {
    if h.schema > MAX_SCHEMA && h.schema <= MAX_RESERVED_SCHEMA {
        let by = (h.schema - MAX_SCHEMA).unsigned_abs();
        reduce_buckets(&mut h.positive, by);
        reduce_buckets(&mut h.negative, by);
        h.schema = MAX_SCHEMA;
    }
    h.validate()?;
    Ok(h)
}

/// Checks an integer histogram's counts as Prometheus does: no bucket below
/// zero, and `count` equal to the observations in the buckets (at least
/// them, when the sum is NaN). Buckets are given as deltas; the arithmetic
/// wraps, as Go's integers do.
pub(crate) fn check_integer_counts(
    positive_deltas: &[i64],
    negative_deltas: &[i64],
    zero_count: u64,
    count: u64,
    sum: f64,
) -> Result<(), HistogramError> {
    let in_buckets = integer_total(positive_deltas)?
        .wrapping_add(integer_total(negative_deltas)?)
        .wrapping_add(zero_count);
    let fits = if sum.is_nan() {
        in_buckets <= count
    } else {
        in_buckets == count
    };
    if fits {
        Ok(())
    } else {
        Err(HistogramError::CountMismatch {
            buckets: in_buckets,
            count,
        })
    }
}

/// The observations in integer buckets given as deltas.
fn integer_total(deltas: &[i64]) -> Result<u64, HistogramError> {
    let (mut level, mut total) = (0i64, 0u64);
    for &d in deltas {
        level = level.wrapping_add(d);
        if level < 0 {
            return Err(InvalidHistogram::NegativeCount.into());
        }
        total = total.wrapping_add(level as u64);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_up_to_52_are_reduced_to_8_and_others_refused() {
        let h = |schema| Histogram {
            schema,
            count: 2.0,
            positive: vec![(1, 1.0), (2, 1.0)],
            ..Histogram::default()
        };
        let fine = finish(h(10)).unwrap();
        assert_eq!((fine.schema, fine.positive), (8, vec![(1, 2.0)]));
        assert_eq!(finish(h(8)).unwrap().positive, [(1, 1.0), (2, 1.0)]);
        assert_eq!(finish(h(-4)).unwrap().schema, -4);
        assert_eq!(finish(h(52)).unwrap().positive, [(1, 2.0)]);
        for bad in [53, 9000, -5, -9, -52, -54] {
            assert_eq!(finish(h(bad)), Err(InvalidHistogram::Schema(bad).into()));
        }
    }
}
