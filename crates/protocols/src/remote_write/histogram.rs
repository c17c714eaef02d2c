//! `prometheus.Histogram` (both protocol versions) to and from the model's
//! [`Histogram`].

use std::sync::Arc;

use cairn_model::histogram::{CUSTOM_BUCKETS_SCHEMA, ResetHint, counts_from_deltas, expand_spans};
use cairn_model::{Histogram, HistogramSample, is_stale_nan};

use super::proto::histogram::{Count, ZeroCount};
use super::proto::{self, BucketSpan};
use crate::histogram::{HistogramError, check_integer_counts, finish};

/// One histogram message, decoded.
#[derive(Debug, PartialEq)]
pub(super) enum Decoded {
    Histogram(HistogramSample),
    /// A staleness marker at this timestamp: storage keeps it as a float.
    Stale(i64),
}

/// Decodes and validates one histogram sample. A staleness marker (sum is
/// the stale NaN) is not checked further: it carries no buckets to store.
pub(super) fn from_proto(p: &proto::Histogram, max_buckets: usize) -> Result<Decoded, HistogramError> {
    if is_stale_nan(p.sum) {
        return Ok(Decoded::Stale(p.timestamp));
    }
    // As Prometheus: a histogram is a float one only when it says so.
    let float = matches!(p.count, Some(Count::CountFloat(_)));
    let buckets = if float {
        p.positive_counts.len().saturating_add(p.negative_counts.len())
    } else {
        p.positive_deltas.len().saturating_add(p.negative_deltas.len())
    };
    if buckets > max_buckets {
        return Err(HistogramError::TooManyBuckets {
            buckets,
            limit: max_buckets,
        });
    }
    let spans = |s: &[BucketSpan]| s.iter().map(|s| (s.offset, s.length)).collect::<Vec<_>>();
    let (count, zero_count, positive, negative) = if float {
        let count = match p.count {
            Some(Count::CountFloat(c)) => c,
            _ => 0.0,
        };
        let zero = match p.zero_count {
            Some(ZeroCount::ZeroCountFloat(c)) => c,
            _ => 0.0,
        };
        let positive = expand_spans(spans(&p.positive_spans), p.positive_counts.iter().copied())?;
        let negative = expand_spans(spans(&p.negative_spans), p.negative_counts.iter().copied())?;
        (count, zero, positive, negative)
    } else {
        let count = match p.count {
            Some(Count::CountInt(c)) => c,
            _ => 0,
        };
        let zero = match p.zero_count {
            Some(ZeroCount::ZeroCountInt(c)) => c,
            _ => 0,
        };
        let positive = expand_spans(spans(&p.positive_spans), counts_from_deltas(&p.positive_deltas))?;
        let negative = expand_spans(spans(&p.negative_spans), counts_from_deltas(&p.negative_deltas))?;
        // Checked in integers, as Prometheus does (a float sum could round).
        check_integer_counts(&p.positive_deltas, &p.negative_deltas, zero, count, p.sum)?;
        (count as f64, zero as f64, positive, negative)
    };
    let custom_bounds =
        (p.schema == CUSTOM_BUCKETS_SCHEMA || !p.custom_values.is_empty()).then(|| Arc::from(&p.custom_values[..]));
    let h = finish(Histogram {
        schema: p.schema,
        reset_hint: match p.reset_hint {
            1 => ResetHint::Reset,
            2 => ResetHint::NotReset,
            3 => ResetHint::Gauge,
            _ => ResetHint::Unknown,
        },
        count,
        sum: p.sum,
        zero_threshold: p.zero_threshold,
        zero_count,
        positive,
        negative,
        custom_bounds,
    })?;
    Ok(Decoded::Histogram(HistogramSample::new(p.timestamp, h)))
}

/// The message for one histogram sample: an integer histogram when every
/// count is a whole number that an integer histogram can carry and the
/// counts add up as Prometheus checks, else a float one. Either decodes
/// back to the same [`Histogram`].
pub(super) fn to_proto(s: &HistogramSample) -> proto::Histogram {
    let h = &s.h;
    // 2^53: above it a float no longer holds every integer.
    let whole = |c: f64| (0.0..9_007_199_254_740_992.0).contains(&c) && c.fract() == 0.0;
    let counts = || h.positive.iter().chain(&h.negative).map(|b| b.1);
    let integer = whole(h.count) && whole(h.zero_count) && counts().all(whole) && {
        let in_buckets = counts().map(|c| c as u64).fold(h.zero_count as u64, u64::wrapping_add);
        let count = h.count as u64;
        if h.sum.is_nan() {
            in_buckets <= count
        } else {
            in_buckets == count
        }
    };
    let deltas = |b: &[(i32, f64)]| {
        let mut prev = 0i64;
        b.iter()
            .map(|&(_, c)| {
                let level = c as i64;
                let d = level.wrapping_sub(prev);
                prev = level;
                d
            })
            .collect()
    };
    let floats = |b: &[(i32, f64)]| b.iter().map(|b| b.1).collect();
    let mut p = proto::Histogram {
        sum: h.sum,
        schema: h.schema,
        zero_threshold: h.zero_threshold,
        negative_spans: spans(&h.negative),
        positive_spans: spans(&h.positive),
        reset_hint: match h.reset_hint {
            ResetHint::Unknown => proto::histogram::ResetHint::Unknown,
            ResetHint::Reset => proto::histogram::ResetHint::Yes,
            ResetHint::NotReset => proto::histogram::ResetHint::No,
            ResetHint::Gauge => proto::histogram::ResetHint::Gauge,
        } as i32,
        timestamp: s.t,
        custom_values: h.bounds().to_vec(),
        ..proto::Histogram::default()
    };
    if integer {
        p.count = Some(Count::CountInt(h.count as u64));
        p.zero_count = Some(ZeroCount::ZeroCountInt(h.zero_count as u64));
        p.positive_deltas = deltas(&h.positive);
        p.negative_deltas = deltas(&h.negative);
    } else {
        p.count = Some(Count::CountFloat(h.count));
        p.zero_count = Some(ZeroCount::ZeroCountFloat(h.zero_count));
        p.positive_counts = floats(&h.positive);
        p.negative_counts = floats(&h.negative);
    }
    p
}

/// The spans of sorted sparse buckets: one per run of consecutive indices.
/// A gap wider than a span offset can say is bridged by empty spans.
fn spans(buckets: &[(i32, f64)]) -> Vec<BucketSpan> {
    let mut out: Vec<BucketSpan> = Vec::new();
    // Index just past the last span.
    let mut next = 0i64;
    for &(idx, _) in buckets {
        let idx = i64::from(idx);
        match out.last_mut() {
            Some(span) if idx == next => span.length += 1,
            _ => {
                let mut gap = idx - next;
                while gap > i64::from(i32::MAX) || gap < i64::from(i32::MIN) {
                    let step = gap.clamp(i64::from(i32::MIN), i64::from(i32::MAX));
                    out.push(BucketSpan {
                        offset: step as i32,
                        length: 0,
                    });
                    gap -= step;
                }
                out.push(BucketSpan {
                    offset: gap as i32,
                    length: 1,
                });
            }
        }
        next = idx + 1;
    }
    out
}
