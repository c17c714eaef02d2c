//! OpenTelemetry exponential histograms → native histograms, as Prometheus
//! 3's OTLP receiver converts them (`otlptranslator/prometheusremotewrite/
//! histograms.go`): the scale is the schema, a scale above 8 is reduced to 8
//! by merging buckets, bucket `i` of OTLP is bucket `i + 1` of Prometheus
//! (OTLP's buckets are `(base^i, base^(i+1)]`, Prometheus' end at
//! `base^i`), counts are integers, and the zero bucket's threshold is
//! Prometheus' fixed 1e-128 (OTLP's `zero_threshold` is not read, as in
//! Prometheus); `min` and `max` are dropped. Explicit-bucket histograms
//! convert to custom buckets ([`custom_buckets`]) when asked to.

use std::sync::Arc;

use cairn_model::Histogram;
use cairn_model::histogram::{CUSTOM_BUCKETS_SCHEMA, ResetHint, counts_from_deltas, expand_spans};

use super::proto::{Buckets, ExponentialHistogramDataPoint, HistogramDataPoint};
use crate::histogram::{HistogramError, MAX_SCHEMA, check_integer_counts, finish};

/// The zero bucket's width Prometheus gives every converted histogram.
const ZERO_THRESHOLD: f64 = 1e-128;
const MIN_SCALE: i32 = -4;

/// The native histogram of one cumulative point, validated. A point flagged
/// `NO_RECORDED_VALUE` is the caller's to turn into a staleness marker.
pub(super) fn exponential(p: &ExponentialHistogramDataPoint, max_buckets: usize) -> Result<Histogram, HistogramError> {
    if p.scale < MIN_SCALE {
        return Err(HistogramError::Scale(p.scale));
    }
    let scale_down = (p.scale - MAX_SCHEMA).max(0).unsigned_abs();
    let len = |b: &Option<Buckets>| b.as_ref().map_or(0, |b| b.bucket_counts.len());
    let buckets = len(&p.positive).saturating_add(len(&p.negative));
    if buckets > max_buckets {
        return Err(HistogramError::TooManyBuckets {
            buckets,
            limit: max_buckets,
        });
    }
    let side = |b: &Option<Buckets>| match b {
        Some(b) => layout(&b.bucket_counts, b.offset, scale_down, true),
        None => Ok((Vec::new(), Vec::new())),
    };
    let (positive_spans, positive_deltas) = side(&p.positive)?;
    let (negative_spans, negative_deltas) = side(&p.negative)?;
    let sum = p.sum.unwrap_or(0.0);
    check_integer_counts(&positive_deltas, &negative_deltas, p.zero_count, p.count, sum)?;
    finish(Histogram {
        schema: p.scale.min(MAX_SCHEMA),
        reset_hint: ResetHint::Unknown,
        count: p.count as f64,
        sum,
        zero_threshold: ZERO_THRESHOLD,
        zero_count: p.zero_count as f64,
        positive: expand_spans(positive_spans, counts_from_deltas(&positive_deltas))?,
        negative: expand_spans(negative_spans, counts_from_deltas(&negative_deltas))?,
        custom_bounds: None,
    })
}

/// `(offset, length)` of each span.
type Spans = Vec<(i32, u32)>;

/// The native histogram with custom buckets (NHCB) of one explicit-bucket
/// point, validated: bucket `i` of `bucket_counts` is custom bucket `i`,
/// the bounds are `explicit_bounds`, leading empty buckets are left out and
/// the rest laid out as for exponential histograms (Prometheus'
/// `explicitHistogramToCustomBucketsHistogram`).
pub(super) fn custom_buckets(p: &HistogramDataPoint, max_buckets: usize) -> Result<Histogram, HistogramError> {
    let counts = &p.bucket_counts;
    if counts.len() > max_buckets {
        return Err(HistogramError::TooManyBuckets {
            buckets: counts.len(),
            limit: max_buckets,
        });
    }
    let first = counts.iter().take_while(|&&c| c == 0).count();
    let offset = i32::try_from(first).map_err(|_| HistogramError::IndexRange)?;
    let (spans, deltas) = layout(counts.get(first..).unwrap_or_default(), offset, 0, false)?;
    let sum = p.sum.unwrap_or(0.0);
    check_integer_counts(&deltas, &[], 0, p.count, sum)?;
    finish(Histogram {
        schema: CUSTOM_BUCKETS_SCHEMA,
        reset_hint: ResetHint::Unknown,
        count: p.count as f64,
        sum,
        positive: expand_spans(spans, counts_from_deltas(&deltas))?,
        custom_bounds: Some(Arc::from(&p.explicit_bounds[..])),
        ..Histogram::default()
    })
}

/// Spans and integer deltas of one side, as Prometheus writes them.
#[derive(Default)]
struct Layout {
    /// `(offset, length)`, offsets in 64 bits until checked.
    spans: Vec<(i64, u32)>,
    deltas: Vec<i64>,
    prev: i64,
}

impl Layout {
    /// Appends a bucket to the last span.
    fn append(&mut self, count: i64) {
        if let Some(last) = self.spans.last_mut() {
            last.1 += 1;
        }
        self.deltas.push(count.wrapping_sub(self.prev));
        self.prev = count;
    }

    /// Skips `gap` buckets: up to two are written empty, more start a span.
    fn skip(&mut self, gap: i64) {
        if gap > 2 {
            self.spans.push((gap, 0));
        } else {
            for _ in 0..gap {
                self.append(0);
            }
        }
    }
}

/// Prometheus' spans and integer deltas for one side's dense OTLP counts
/// starting at OTLP index `offset`, merged `scale_down` schemas coarser.
/// Runs of up to two empty buckets stay inside a span, longer ones start a
/// new span, and the last bucket is always written, as Prometheus lays
/// them out. Indices are computed in 64 bits; ones outside 32 bits are an
/// error where Go's would wrap. `shift_index` moves OTLP's exponential
/// indices up by one; custom buckets keep theirs.
fn layout(
    counts: &[u64],
    offset: i32,
    scale_down: u32,
    shift_index: bool,
) -> Result<(Spans, Vec<i64>), HistogramError> {
    if counts.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let shift = scale_down.min(63);
    let target = |otlp: i64| (otlp >> shift) + 1;
    let offset = i64::from(offset);
    let mut out = Layout {
        spans: vec![(if shift_index { target(offset) } else { offset }, 0)],
        deltas: Vec::with_capacity(counts.len()),
        prev: 0,
    };
    let mut bucket = target(offset);
    // Go converts each uint64 count to int64, wrapping.
    let mut count = 0i64;
    for (i, &c) in (0i64..).zip(counts) {
        let next = target(offset + i);
        if next == bucket {
            count = count.wrapping_add(c as i64);
            continue;
        }
        if count == 0 {
            // An empty bucket is not written: the gap before the next one
            // still starts at `bucket`.
            count = c as i64;
            continue;
        }
        out.skip(next - bucket - 1);
        out.append(count);
        count = c as i64;
        bucket = next;
    }
    out.skip(target(offset + counts.len() as i64 - 1) - bucket);
    out.append(count);
    let spans = out
        .spans
        .into_iter()
        .map(|(o, l)| i32::try_from(o).map(|o| (o, l)).map_err(|_| HistogramError::IndexRange))
        .collect::<Result<_, _>>()?;
    Ok((spans, out.deltas))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(scale: i32, offset: i32, counts: &[u64]) -> ExponentialHistogramDataPoint {
        let count = counts.iter().fold(2u64, |a, &c| a.wrapping_add(c));
        ExponentialHistogramDataPoint {
            count,
            sum: Some(10.0),
            scale,
            zero_count: 2,
            positive: Some(Buckets {
                offset,
                bucket_counts: counts.to_vec(),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn buckets_move_up_one_index_and_keep_their_counts() {
        let h = exponential(&point(0, 0, &[1, 2, 3]), 100).unwrap();
        // OTLP bucket 0 is (1, 2]: Prometheus' bucket 1.
        assert_eq!(h.positive, [(1, 1.0), (2, 2.0), (3, 3.0)]);
        assert_eq!((h.schema, h.count, h.sum, h.zero_count), (0, 8.0, 10.0, 2.0));
        assert_eq!(h.zero_threshold, 1e-128);
        assert_eq!(h.reset_hint, ResetHint::Unknown);
        let h = exponential(&point(3, -5, &[4]), 100).unwrap();
        assert_eq!((h.schema, h.positive.clone()), (3, vec![(-4, 4.0)]));
    }

    #[test]
    fn a_scale_above_8_is_merged_down_to_8() {
        // Scale 9, OTLP indices -1..=4 → Prometheus' at 8: ((i >> 1) + 1):
        // -1 → 0, 0 and 1 → 1, 2 and 3 → 2, 4 → 3.
        let h = exponential(&point(9, -1, &[1, 2, 3, 4, 5, 6]), 100).unwrap();
        assert_eq!(h.schema, 8);
        assert_eq!(h.positive, [(0, 1.0), (1, 5.0), (2, 9.0), (3, 6.0)]);
        // Scale 10 by 2: indices 0..=3 all → 1, 4 → 2.
        let h = exponential(&point(10, 0, &[1, 1, 1, 1, 1]), 100).unwrap();
        assert_eq!(h.positive, [(1, 4.0), (2, 1.0)]);
        // A scale far above any schema merges everything left of 0 and
        // right of it into one bucket each.
        let h = exponential(&point(200, -2, &[1, 1, 1, 1]), 100).unwrap();
        assert_eq!(h.positive, [(0, 2.0), (1, 2.0)]);
    }

    #[test]
    fn empty_runs_longer_than_two_start_a_new_span() {
        let h = exponential(&point(0, 0, &[3, 0, 5]), 100).unwrap();
        assert_eq!(h.positive, [(1, 3.0), (2, 0.0), (3, 5.0)]);
        let h = exponential(&point(0, 0, &[3, 0, 0, 0, 0, 7]), 100).unwrap();
        assert_eq!(h.positive, [(1, 3.0), (6, 7.0)]);
        let h = exponential(&point(0, 0, &[0, 0, 5]), 100).unwrap();
        assert_eq!(h.positive, [(1, 0.0), (2, 0.0), (3, 5.0)]);
        let h = exponential(&point(0, 0, &[5, 0, 0, 0]), 100).unwrap();
        assert_eq!(h.positive, [(1, 5.0), (2, 0.0), (3, 0.0), (4, 0.0)]);
    }

    #[test]
    fn negative_buckets_and_the_zero_bucket() {
        let mut p = point(1, 0, &[1]);
        p.negative = Some(Buckets {
            offset: -2,
            bucket_counts: vec![4, 0, 6],
        });
        p.count += 10;
        let h = exponential(&p, 100).unwrap();
        assert_eq!(h.negative, [(-1, 4.0), (0, 0.0), (1, 6.0)]);
        assert_eq!(h.zero_count, 2.0);
    }

    #[test]
    fn explicit_buckets_become_custom_buckets() {
        let p = HistogramDataPoint {
            count: 9,
            sum: Some(3.0),
            bucket_counts: vec![0, 0, 4, 0, 5, 0, 0, 0, 0],
            explicit_bounds: vec![0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0],
            ..Default::default()
        };
        let h = custom_buckets(&p, 100).unwrap();
        assert_eq!(h.schema, CUSTOM_BUCKETS_SCHEMA);
        // Leading empty buckets left out, the gap of one kept, the trailing
        // run of four empty ones reduced to its last bucket.
        assert_eq!(h.positive, [(2, 4.0), (3, 0.0), (4, 5.0), (8, 0.0)]);
        assert_eq!(h.bounds(), &p.explicit_bounds[..]);
        assert_eq!((h.count, h.sum, h.zero_count, h.zero_threshold), (9.0, 3.0, 0.0, 0.0));
        let empty = HistogramDataPoint::default();
        assert_eq!(custom_buckets(&empty, 100).unwrap().positive, []);
        let miscounted = HistogramDataPoint { count: 8, ..p.clone() };
        assert_eq!(
            custom_buckets(&miscounted, 100),
            Err(HistogramError::CountMismatch { buckets: 9, count: 8 })
        );
        assert_eq!(
            custom_buckets(&p, 8),
            Err(HistogramError::TooManyBuckets { buckets: 9, limit: 8 })
        );
        let unsorted = HistogramDataPoint {
            explicit_bounds: vec![1.0, 0.5],
            bucket_counts: vec![1, 0, 0],
            count: 1,
            ..Default::default()
        };
        assert!(custom_buckets(&unsorted, 100).is_err());
    }

    #[test]
    fn points_prometheus_refuses_are_refused() {
        assert_eq!(exponential(&point(-5, 0, &[1]), 100), Err(HistogramError::Scale(-5)));
        let mut wrong_count = point(0, 0, &[1, 2]);
        wrong_count.count = 4;
        assert_eq!(
            exponential(&wrong_count, 100),
            Err(HistogramError::CountMismatch { buckets: 5, count: 4 })
        );
        // With no sum recorded (NaN) the count may exceed the buckets.
        wrong_count.count = 6;
        wrong_count.sum = Some(f64::NAN);
        assert!(exponential(&wrong_count, 100).is_ok());
        assert_eq!(
            exponential(&point(0, 0, &[1; 11]), 10),
            Err(HistogramError::TooManyBuckets { buckets: 11, limit: 10 })
        );
        assert_eq!(
            exponential(&point(0, i32::MAX, &[1, 1]), 100),
            Err(HistogramError::IndexRange)
        );
        // A count past i64::MAX wraps negative, as in Go, and is refused.
        let mut huge = point(0, 0, &[u64::MAX]);
        huge.count = 1;
        assert!(exponential(&huge, 100).is_err());
    }
}
