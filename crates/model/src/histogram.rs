//! Native histograms: the sample type and its arithmetic.
//!
//! Buckets are kept sparse, as `(index, count)` by increasing index, rather
//! than as Prometheus' spans and deltas: arithmetic merges two sorted lists,
//! protocols expand spans into this form ([`expand_spans`]) and storage
//! decodes its own encoding into it. The semantics follow Prometheus 3.14's `FloatHistogram`: adding histograms of different
//! schemas reduces the finer one, differing zero thresholds are reconciled
//! by widening the narrower zero bucket, custom-bucket histograms of other
//! bounds are added on the bounds they share, and custom and exponential
//! buckets never combine.
//!
//! Bucket bounds of schemas above 0 are computed here, and can differ from
//! Prometheus' table of them in the last bits; they only decide which
//! buckets a zero bucket absorbs. Rendering bounds must use Prometheus'
//! values.

use std::sync::Arc;

use crate::is_stale_nan;

/// The schema of histograms with custom bucket bounds (NHCB).
pub const CUSTOM_BUCKETS_SCHEMA: i32 = -53;

/// Two histograms that cannot be combined: one of custom buckets and one of
/// exponential buckets. Prometheus drops the result of such an operation
/// with a warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Incompatible;

/// What the producer said about a counter reset before this sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResetHint {
    #[default]
    Unknown,
    Reset,
    NotReset,
    /// A gauge histogram: resets do not apply.
    Gauge,
}

impl ResetHint {
    /// The number Prometheus' protobuf gives the hint (`UNKNOWN` 0, `YES` 1,
    /// `NO` 2, `GAUGE` 3), which Cairn's own formats use too.
    pub fn code(self) -> u8 {
        match self {
            Self::Unknown => 0,
            Self::Reset => 1,
            Self::NotReset => 2,
            Self::Gauge => 3,
        }
    }

    /// Whether combining histograms of hints `self` and `other` meets a reset
    /// beside a histogram said not to follow one, which Prometheus warns of
    /// ("conflicting counter resets").
    pub fn conflicts_with(self, other: Self) -> bool {
        matches!(
            (self, other),
            (Self::Reset, Self::NotReset) | (Self::NotReset, Self::Reset)
        )
    }

    /// [`ResetHint::conflicts_with`] for any two of `hints` (an aggregation's).
    pub fn conflict_among(hints: impl IntoIterator<Item = Self>) -> bool {
        let (mut reset, mut not_reset) = (false, false);
        for h in hints {
            reset |= h == Self::Reset;
            not_reset |= h == Self::NotReset;
        }
        reset && not_reset
    }

    /// The hint numbered `code`; an unknown number is an unknown hint, as
    /// Prometheus reads it.
    pub fn from_code(code: i64) -> Self {
        match code {
            1 => Self::Reset,
            2 => Self::NotReset,
            3 => Self::Gauge,
            _ => Self::Unknown,
        }
    }
}

/// A native histogram with float counts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Histogram {
    /// Exponential schema (-4..=8: bucket bounds grow by `2^(2^-schema)`), or
    /// [`CUSTOM_BUCKETS_SCHEMA`].
    pub schema: i32,
    pub reset_hint: ResetHint,
    pub count: f64,
    pub sum: f64,
    /// Observations in `[-zero_threshold, zero_threshold]` (exponential only).
    pub zero_threshold: f64,
    pub zero_count: f64,
    /// Buckets of positive observations (for custom buckets, all of them),
    /// `(index, count)` by increasing index.
    pub positive: Vec<(i32, f64)>,
    /// Buckets of negative observations, indexed by absolute value.
    pub negative: Vec<(i32, f64)>,
    /// Upper bounds of custom buckets, shared by a series' samples; bucket
    /// `i` is `(custom_bounds[i - 1], custom_bounds[i]]`, the last one ends
    /// at +Inf.
    pub custom_bounds: Option<Arc<[f64]>>,
}

/// One histogram sample of a series.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSample {
    /// Milliseconds since the Unix epoch.
    pub t: i64,
    pub h: Arc<Histogram>,
}

impl HistogramSample {
    pub fn new(t: i64, h: Histogram) -> Self {
        Self { t, h: Arc::new(h) }
    }
}

/// Why a histogram cannot be stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidHistogram {
    #[error("histogram schema {0} is neither exponential (-4 to 8) nor custom buckets (-53)")]
    Schema(i32),
    #[error("histogram spans describe {spans} buckets but {counts} counts are given")]
    SpanCount { spans: usize, counts: usize },
    #[error("histogram span has a negative offset past its first")]
    SpanOffset,
    #[error("histogram has a negative count")]
    NegativeCount,
    #[error("histogram bucket indexes must increase strictly")]
    BucketOrder,
    #[error("histogram zero threshold is negative")]
    ZeroThreshold,
    #[error(
        "custom-bucket histogram must have strictly increasing, finite bounds for every bucket, no zero bucket and no negative buckets"
    )]
    CustomBuckets,
    #[error("exponential histogram must not carry custom bounds")]
    ExponentialBounds,
}

/// The sparse `(index, count)` buckets that Prometheus' spans describe:
/// each span `(offset, length)` starts `offset` indices after the end of
/// the previous one (the first one at `offset`), and covers `length`
/// consecutive buckets whose counts `counts` gives in order. Buckets of
/// count zero are kept, as the producer sent them.
pub fn expand_spans(
    spans: impl IntoIterator<Item = (i32, u32)>,
    counts: impl IntoIterator<Item = f64>,
) -> Result<Vec<(i32, f64)>, InvalidHistogram> {
    let spans: Vec<(i32, u32)> = spans.into_iter().collect();
    let counts: Vec<f64> = counts.into_iter().collect();
    let described: u64 = spans.iter().map(|s| u64::from(s.1)).sum();
    if described != counts.len() as u64 {
        return Err(InvalidHistogram::SpanCount {
            spans: described as usize,
            counts: counts.len(),
        });
    }
    let mut out = Vec::with_capacity(counts.len());
    let mut next = 0i64;
    let mut given = counts.iter();
    for (n, &(offset, length)) in spans.iter().enumerate() {
        if n > 0 && offset < 0 {
            return Err(InvalidHistogram::SpanOffset);
        }
        next += i64::from(offset);
        for &c in given.by_ref().take(length as usize) {
            let idx = i32::try_from(next).map_err(|_| InvalidHistogram::SpanOffset)?;
            out.push((idx, c));
            next += 1;
        }
    }
    Ok(out)
}

/// Integer counts given as deltas of each bucket from the one before, as
/// Prometheus sends the buckets of integer histograms.
pub fn counts_from_deltas(deltas: &[i64]) -> Vec<f64> {
    let mut level = 0i64;
    deltas
        .iter()
        .map(|&d| {
            level = level.wrapping_add(d);
            level as f64
        })
        .collect()
}

impl Histogram {
    /// Prometheus' staleness marker for a histogram series: the sum is the
    /// stale NaN.
    pub fn is_stale_marker(&self) -> bool {
        is_stale_nan(self.sum)
    }

    /// Checks what Prometheus checks before it stores a histogram.
    pub fn validate(&self) -> Result<(), InvalidHistogram> {
        // NaN counts pass, as in Prometheus: only a negative count is refused.
        let counts_ok = |side: &[(i32, f64)]| !side.iter().any(|b| b.1 < 0.0);
        // Spans give increasing indexes; every reader of the sparse form
        // (arithmetic, storage codecs) relies on it.
        let ordered = |side: &[(i32, f64)]| side.windows(2).all(|w| w[0].0 < w[1].0);
        if !ordered(&self.positive) || !ordered(&self.negative) {
            return Err(InvalidHistogram::BucketOrder);
        }
        if self.uses_custom_buckets() {
            let bounds = self.custom_bounds.as_deref().unwrap_or(&[]);
            let last = self.positive.last().map_or(0, |b| b.0);
            let increasing = bounds.windows(2).all(|w| w[0] < w[1]) && bounds.iter().all(|b| b.is_finite());
            if !increasing
                || self.zero_count != 0.0
                || self.zero_threshold != 0.0
                || !self.negative.is_empty()
                || self.positive.first().is_some_and(|b| b.0 < 0)
                || usize::try_from(last).map_or(true, |l| l > bounds.len())
            {
                return Err(InvalidHistogram::CustomBuckets);
            }
        } else if (-4..=8).contains(&self.schema) {
            if self.custom_bounds.is_some() {
                return Err(InvalidHistogram::ExponentialBounds);
            }
            if self.zero_threshold < 0.0 {
                return Err(InvalidHistogram::ZeroThreshold);
            }
        } else {
            return Err(InvalidHistogram::Schema(self.schema));
        }
        if !counts_ok(&self.positive) || !counts_ok(&self.negative) || self.zero_count < 0.0 || self.count < 0.0 {
            return Err(InvalidHistogram::NegativeCount);
        }
        Ok(())
    }

    /// Drops the buckets that count nothing, as Prometheus' `Compact(0)`
    /// does to the results of arithmetic, rates and aggregations (which
    /// decides, e.g., whether a quantile in the zero bucket may start at 0).
    pub fn compact(&mut self) {
        self.positive.retain(|b| b.1 != 0.0);
        self.negative.retain(|b| b.1 != 0.0);
    }

    pub fn uses_custom_buckets(&self) -> bool {
        self.schema == CUSTOM_BUCKETS_SCHEMA
    }

    /// Custom and exponential buckets never combine.
    pub fn compatible(&self, other: &Self) -> Result<(), Incompatible> {
        if self.uses_custom_buckets() == other.uses_custom_buckets() {
            Ok(())
        } else {
            Err(Incompatible)
        }
    }

    /// The custom bucket bounds (none for exponential buckets).
    pub fn bounds(&self) -> &[f64] {
        self.custom_bounds.as_deref().unwrap_or(&[])
    }

    /// Upper bound of custom bucket `idx`.
    pub fn custom_upper(&self, idx: i32) -> f64 {
        usize::try_from(idx)
            .ok()
            .and_then(|i| self.bounds().get(i).copied())
            .unwrap_or(f64::INFINITY)
    }

    /// Lowers the resolution to `target` (not above the current schema) by
    /// merging the buckets that fall into one.
    pub fn reduce_schema(&mut self, target: i32) {
        debug_assert!(!self.uses_custom_buckets() && target <= self.schema);
        if target < self.schema {
            let by = self.schema - target;
            reduce_buckets(&mut self.positive, by.unsigned_abs());
            reduce_buckets(&mut self.negative, by.unsigned_abs());
            self.schema = target;
        }
    }

    /// The zero count and threshold this histogram has once its zero bucket
    /// reaches at least `larger`: every bucket that starts inside it is merged
    /// into it, and if a populated one ends beyond it, the threshold grows to
    /// that bucket's end.
    fn zero_bucket_for(&self, mut larger: f64) -> (f64, f64) {
        if larger <= self.zero_threshold {
            return (self.zero_count, self.zero_threshold);
        }
        // A populated positive bucket moves the threshold to its end; a
        // negative one also makes the positive side be looked at again, as
        // Prometheus' `zeroCountForLargerThreshold` does.
        loop {
            let mut count = self.zero_count;
            if let Some(end) = absorb(self.schema, &self.positive, larger, &mut count) {
                larger = end;
            }
            match absorb(self.schema, &self.negative, larger, &mut count) {
                Some(end) => larger = end,
                None => return (count, larger),
            }
        }
    }

    /// Widens the zero bucket to at least `threshold`, absorbing the buckets
    /// that start inside it.
    fn widen_zero_bucket(&mut self, threshold: f64) {
        let (count, threshold) = self.zero_bucket_for(threshold);
        self.zero_count = count;
        self.zero_threshold = threshold;
        let schema = self.schema;
        let outside = |b: &(i32, f64)| exponential_bucket(schema, b.0).0 >= threshold;
        self.positive.retain(outside);
        self.negative.retain(outside);
    }

    /// `self += sign * other`, per Prometheus' `Add` and `Sub`.
    fn combine(&mut self, other: &Self, sign: f64) -> Result<(), Incompatible> {
        self.compatible(other)?;
        self.count += sign * other.count;
        self.sum += sign * other.sum;
        if self.uses_custom_buckets() {
            if self.bounds() == other.bounds() {
                self.positive = merge(&self.positive, &other.positive, sign, |_| true);
            } else {
                self.add_on_shared_bounds(other, sign);
            }
            return Ok(());
        }
        // The zero buckets widen to the same threshold; each widening can
        // end inside a populated bucket of the other, so it repeats.
        let (mut other_zero, mut other_threshold) = (other.zero_count, other.zero_threshold);
        loop {
            if self.zero_threshold > other_threshold {
                (other_zero, other_threshold) = other.zero_bucket_for(self.zero_threshold);
            }
            if other_threshold > self.zero_threshold {
                self.widen_zero_bucket(other_threshold);
            }
            // Also ends on a NaN threshold, which compares neither way.
            if !(self.zero_threshold > other_threshold || other_threshold > self.zero_threshold) {
                break;
            }
        }
        self.zero_count += sign * other_zero;
        let mut other = std::borrow::Cow::Borrowed(other);
        if other.schema < self.schema {
            self.reduce_schema(other.schema);
        } else if other.schema > self.schema {
            other.to_mut().reduce_schema(self.schema);
        }
        // The other's buckets inside the zero bucket are in `other_zero`.
        let (schema, threshold) = (self.schema, self.zero_threshold);
        let outside = |idx: i32| exponential_bucket(schema, idx).1 > threshold;
        self.positive = merge(&self.positive, &other.positive, sign, outside);
        self.negative = merge(&self.negative, &other.negative, sign, outside);
        Ok(())
    }

    /// `self += sign * other` of custom buckets of other bounds, on the
    /// bounds both have: each bucket goes into the first shared bucket that
    /// contains it (Prometheus 3.8 onwards, with an info annotation).
    fn add_on_shared_bounds(&mut self, other: &Self, sign: f64) {
        let shared = shared_bounds(self.bounds(), other.bounds());
        let mut counts = vec![0.0; shared.len() + 1];
        for (h, sign) in [(&*self, 1.0), (other, sign)] {
            for &(idx, c) in &h.positive {
                let upper = h.custom_upper(idx);
                counts[shared.partition_point(|&b| b < upper)] += sign * c;
            }
        }
        self.positive = (0..).zip(counts).filter(|&(_, c)| c != 0.0).collect();
        self.custom_bounds = Some(shared.into());
    }

    /// Prometheus' reset test of custom buckets of other bounds: the counts
    /// rolled up to each bound both have (and +Inf) must not go down.
    fn reset_on_shared_bounds(prev: &Self, next: &Self) -> bool {
        let shared = shared_bounds(prev.bounds(), next.bounds())
            .into_iter()
            .chain([f64::INFINITY]);
        let (mut i, mut j) = (0, 0);
        for bound in shared {
            let rolled_up = |h: &Self, k: &mut usize| {
                let mut sum = 0.0;
                while let Some(&(idx, c)) = h.positive.get(*k)
                    && h.custom_upper(idx) <= bound
                {
                    sum += c;
                    *k += 1;
                }
                sum
            };
            if rolled_up(next, &mut i) < rolled_up(prev, &mut j) {
                return true;
            }
        }
        false
    }

    fn combine_hint(&mut self, other: ResetHint) {
        use ResetHint::*;
        self.reset_hint = match (self.reset_hint, other) {
            (a, b) if a == b => a,
            (Gauge, _) | (_, Gauge) => Gauge,
            _ => Unknown,
        };
    }

    /// The count of bucket `idx` on one side, if it is there.
    fn bucket(side: &[(i32, f64)], idx: i32) -> Option<f64> {
        side.binary_search_by_key(&idx, |b| b.0).ok().map(|i| side[i].1)
    }
}

impl Histogram {
    /// `self += other`, per Prometheus' `Add`.
    pub fn add(&mut self, other: &Self) -> Result<(), Incompatible> {
        self.combine(other, 1.0)?;
        self.combine_hint(other.reset_hint);
        Ok(())
    }

    /// `self -= other`, per Prometheus' `Sub`.
    pub fn sub(&mut self, other: &Self) -> Result<(), Incompatible> {
        self.combine(other, -1.0)?;
        self.combine_hint(other.reset_hint);
        Ok(())
    }

    /// Multiplies every count and the sum by `factor`.
    pub fn scale(&mut self, factor: f64) {
        self.count *= factor;
        self.sum *= factor;
        self.zero_count *= factor;
        for b in self.positive.iter_mut().chain(self.negative.iter_mut()) {
            b.1 *= factor;
        }
    }

    /// The counter reset hints of `samples` (one series' histograms, in time
    /// order) as a reader that compares each with the one read before it
    /// hints them, as Prometheus' reader for `histogram_count`,
    /// `histogram_sum` and `histogram_avg` does: an unknown hint becomes
    /// `Reset` or `NotReset`; the first sample, definite hints, gauges and
    /// staleness markers (which are not compared with) keep theirs.
    pub fn detect_reset_hints(samples: &mut [HistogramSample]) {
        let mut prev: Option<Arc<Histogram>> = None;
        for s in samples {
            if s.h.is_stale_marker() {
                continue;
            }
            if let Some(p) = &prev
                && s.h.reset_hint == ResetHint::Unknown
            {
                let hint = if Self::is_reset(p, &s.h) {
                    ResetHint::Reset
                } else {
                    ResetHint::NotReset
                };
                Arc::make_mut(&mut s.h).reset_hint = hint;
            }
            prev = Some(s.h.clone());
        }
    }

    /// Prometheus' `DetectReset`: the hint if it is definite, else any count
    /// that went down, or a change of layout the counter cannot have made.
    pub fn is_reset(prev: &Self, next: &Self) -> bool {
        match next.reset_hint {
            ResetHint::Reset => return true,
            ResetHint::NotReset => return false,
            ResetHint::Unknown | ResetHint::Gauge => {}
        }
        if next.count < prev.count || (next.uses_custom_buckets() && !prev.uses_custom_buckets()) {
            return true;
        }
        if next.uses_custom_buckets() && prev.bounds() != next.bounds() {
            return Self::reset_on_shared_bounds(prev, next);
        }
        if next.schema > prev.schema || next.zero_threshold < prev.zero_threshold {
            return true;
        }
        let mut prev = std::borrow::Cow::Borrowed(prev);
        let threshold = next.zero_threshold;
        if !next.uses_custom_buckets() {
            let (zero_count, widened) = prev.zero_bucket_for(threshold);
            if widened != threshold || next.zero_count < zero_count {
                return true;
            }
            if prev.schema > next.schema {
                prev.to_mut().reduce_schema(next.schema);
            }
        }
        let schema = next.schema;
        let custom = next.uses_custom_buckets();
        let counted = move |idx: i32| custom || exponential_bucket(schema, idx).1 > threshold;
        let went_down = |prev: &[(i32, f64)], next: &[(i32, f64)]| {
            prev.iter()
                .filter(|b| counted(b.0))
                .any(|&(idx, c)| match Self::bucket(next, idx) {
                    Some(n) => n < c,
                    None => c != 0.0,
                })
        };
        went_down(&prev.positive, &next.positive) || went_down(&prev.negative, &next.negative)
    }

    /// `last`, reduced to the coarsest schema of it, `first` and `between`,
    /// as Prometheus reduces it before subtracting `first`.
    pub fn aligned_to(last: &Self, first: &Self, between: &[Self]) -> Result<Self, Incompatible> {
        let mut schema = last.schema.min(first.schema);
        for h in std::iter::once(last).chain(between) {
            h.compatible(first)?;
            schema = schema.min(h.schema);
        }
        let mut last = last.clone();
        if !last.uses_custom_buckets() {
            last.reduce_schema(schema);
        }
        Ok(last)
    }

    /// Prometheus sets the first histogram aside when the second resets
    /// the counter: its layout need not fit the others.
    pub fn reset_base(first: &Self, second: &Self) -> Option<Self> {
        Self::is_reset(first, second).then(|| Histogram {
            schema: second.schema,
            custom_bounds: second.custom_bounds.clone(),
            ..Histogram::default()
        })
    }
}

/// `(lower, upper)` absolute bounds of bucket `idx` of an exponential schema:
/// `(base^(idx-1), base^idx]` with `base = 2^(2^-schema)`.
fn exponential_bucket(schema: i32, idx: i32) -> (f64, f64) {
    (exponential_upper(schema, idx - 1), exponential_upper(schema, idx))
}

/// The upper bound of bucket `idx` of an exponential schema, as Prometheus
/// places it: `2^(idx * 2^-schema)`, except that the last bucket of finite
/// numbers ends at `f64::MAX` (the next one counts infinities). For schemas
/// above 0 the fraction `2^(r * 2^-schema - 1)` is computed, where
/// Prometheus keeps a table, and may differ from it in the last bit.
pub fn exponential_upper(schema: i32, idx: i32) -> f64 {
    if schema < 0 {
        let exp = i64::from(idx) << -schema;
        if exp == 1024 {
            return f64::MAX;
        }
        return ldexp(1.0, exp);
    }
    let r = idx & ((1 << schema) - 1);
    let frac = (f64::from(r) / f64::from(1 << schema) - 1.0).exp2();
    let exp = i64::from(idx >> schema) + 1;
    if frac == 0.5 && exp == 1025 {
        return f64::MAX;
    }
    ldexp(frac, exp)
}

/// `x * 2^exp`, in two steps so that `2^exp` alone may overflow.
fn ldexp(x: f64, exp: i64) -> f64 {
    let pow2 = |e: i64| 2f64.powi(e.clamp(-1100, 1100) as i32);
    let half = exp / 2;
    x * pow2(half) * pow2(exp - half)
}

/// One bucket as Prometheus' API shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    pub lower: f64,
    pub upper: f64,
    pub lower_inclusive: bool,
    pub upper_inclusive: bool,
    pub count: f64,
}

impl Bucket {
    /// Prometheus' `boundary_rule`: 0 open left, 1 open right, 2 open both,
    /// 3 closed both.
    pub fn boundary_rule(&self) -> u8 {
        match (self.lower_inclusive, self.upper_inclusive) {
            (false, true) => 0,
            (true, false) => 1,
            (false, false) => 2,
            (true, true) => 3,
        }
    }
}

impl Histogram {
    /// Every bucket from the lowest to the highest values: negative ones,
    /// the zero bucket when it counts anything, positive ones; buckets
    /// touching the zero bucket end at its threshold. Prometheus' order,
    /// bounds and inclusiveness (`AllBucketIterator`).
    pub fn buckets(&self) -> Vec<Bucket> {
        let mut out = Vec::with_capacity(self.positive.len() + self.negative.len() + 1);
        let zt = self.zero_threshold;
        let clamp = |mut b: Bucket| {
            if b.upper < 0.0 && b.upper > -zt {
                b.upper = -zt;
            } else if b.lower > 0.0 && b.lower < zt {
                b.lower = zt;
            }
            b
        };
        for &(idx, count) in self.negative.iter().rev() {
            let (lower, upper) = (-self.upper_bound(idx), -self.upper_bound(idx - 1));
            out.push(clamp(Bucket {
                lower,
                upper,
                lower_inclusive: lower < 0.0,
                upper_inclusive: upper > 0.0,
                count,
            }));
        }
        if self.zero_count > 0.0 {
            out.push(Bucket {
                lower: -zt,
                upper: zt,
                lower_inclusive: true,
                upper_inclusive: true,
                count: self.zero_count,
            });
        }
        for &(idx, count) in &self.positive {
            let (lower, upper) = (self.upper_bound(idx - 1), self.upper_bound(idx));
            let (lower_inclusive, upper_inclusive) = if self.uses_custom_buckets() {
                (idx == 0, true)
            } else {
                (lower < 0.0, upper > 0.0)
            };
            out.push(clamp(Bucket {
                lower,
                upper,
                lower_inclusive,
                upper_inclusive,
                count,
            }));
        }
        out
    }

    /// The upper bound of bucket `idx`, exponential or custom (`-1` is the
    /// lower bound of the first custom bucket, -Inf).
    pub fn upper_bound(&self, idx: i32) -> f64 {
        if self.uses_custom_buckets() {
            if idx < 0 {
                f64::NEG_INFINITY
            } else {
                self.custom_upper(idx)
            }
        } else {
            exponential_upper(self.schema, idx)
        }
    }
}

/// The bounds both sorted lists hold, in order.
fn shared_bounds(a: &[f64], b: &[f64]) -> Vec<f64> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out.push(a[i]);
            (i, j) = (i + 1, j + 1);
        } else if a[i] < b[j] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// Adds to `count` the buckets of one side that start below `threshold`;
/// returns the end of a populated one that reaches past it.
fn absorb(schema: i32, side: &[(i32, f64)], threshold: f64, count: &mut f64) -> Option<f64> {
    for &(idx, c) in side {
        let (lower, upper) = exponential_bucket(schema, idx);
        if lower >= threshold {
            break;
        }
        *count += c;
        if upper > threshold {
            return (c != 0.0).then_some(upper);
        }
    }
    None
}

/// Maps each bucket to the one containing it `by` schemas lower, merging
/// the ones that land together (neighbours, as the map keeps order). In
/// `i64`, so that no index overflows.
pub fn reduce_buckets(buckets: &mut Vec<(i32, f64)>, by: u32) {
    let mut out: Vec<(i32, f64)> = Vec::with_capacity(buckets.len());
    for &(idx, c) in buckets.iter() {
        // Shifting right never grows the magnitude of idx - 1: within i32.
        let idx = ((i64::from(idx) - 1) >> by.min(63)) + 1;
        let idx = i32::try_from(idx).unwrap_or(i32::MAX);
        match out.last_mut() {
            Some(last) if last.0 == idx => last.1 += c,
            _ => out.push((idx, c)),
        }
    }
    *buckets = out;
}

/// `a + sign * b` of two sorted bucket lists, leaving out the buckets of `b`
/// that `keep` rejects (they are already counted in the zero bucket).
fn merge(a: &[(i32, f64)], b: &[(i32, f64)], sign: f64, keep: impl Fn(i32) -> bool) -> Vec<(i32, f64)> {
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let mut a = a.iter().copied().peekable();
    let mut b = b.iter().copied().filter(|y| keep(y.0)).peekable();
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                let (x, y) = (a.next(), b.next());
                (x.unwrap().0, x.unwrap().1 + sign * y.unwrap().1)
            }
            (Some(x), Some(y)) if x.0 < y.0 => a.next().unwrap(),
            (Some(_), None) => a.next().unwrap(),
            (_, Some(_)) => {
                let y = b.next().unwrap();
                (y.0, sign * y.1)
            }
            (None, None) => return out,
        };
        out.push(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hist(schema: i32, positive: &[(i32, f64)]) -> Histogram {
        let count = positive.iter().map(|b| b.1).sum();
        Histogram {
            schema,
            count,
            sum: count * 1.5,
            positive: positive.to_vec(),
            ..Histogram::default()
        }
    }

    #[test]
    fn spans_expand_to_sparse_buckets() {
        // Two buckets from -1, a gap of two, then one.
        let b = expand_spans([(-1, 2), (2, 1)], counts_from_deltas(&[3, -1, 4])).unwrap();
        assert_eq!(b, [(-1, 3.0), (0, 2.0), (3, 6.0)]);
        assert_eq!(
            expand_spans([(0, 2)], [1.0]),
            Err(InvalidHistogram::SpanCount { spans: 2, counts: 1 })
        );
        assert_eq!(
            expand_spans([(0, 1)], [1.0, 2.0]),
            Err(InvalidHistogram::SpanCount { spans: 1, counts: 2 })
        );
        assert_eq!(
            expand_spans([(0, 1), (-1, 1)], [1.0, 2.0]),
            Err(InvalidHistogram::SpanOffset)
        );
    }

    #[test]
    fn validation_follows_what_prometheus_refuses() {
        assert_eq!(hist(0, &[(1, 2.0)]).validate(), Ok(()));
        assert_eq!(hist(9, &[]).validate(), Err(InvalidHistogram::Schema(9)));
        assert_eq!(hist(0, &[(1, -2.0)]).validate(), Err(InvalidHistogram::NegativeCount));
        assert_eq!(
            hist(0, &[(2, 1.0), (1, 1.0)]).validate(),
            Err(InvalidHistogram::BucketOrder)
        );
        assert_eq!(
            hist(0, &[(1, 1.0), (1, 1.0)]).validate(),
            Err(InvalidHistogram::BucketOrder)
        );
        let mut bounded = hist(0, &[]);
        bounded.custom_bounds = Some([1.0].into());
        assert_eq!(bounded.validate(), Err(InvalidHistogram::ExponentialBounds));
        assert_eq!(custom(&[(0, 1.0), (2, 1.0)], &[1.0, 5.0]).validate(), Ok(()));
        assert_eq!(
            custom(&[(3, 1.0)], &[1.0, 5.0]).validate(),
            Err(InvalidHistogram::CustomBuckets)
        );
        assert_eq!(
            custom(&[], &[5.0, 1.0]).validate(),
            Err(InvalidHistogram::CustomBuckets)
        );
        let mut stale = hist(0, &[]);
        stale.sum = crate::stale_nan();
        assert!(stale.is_stale_marker());
    }

    #[test]
    fn buckets_are_listed_as_prometheus_shows_them() {
        let mut h = hist(0, &[(0, 1.0), (1, 2.0)]);
        h.negative = vec![(1, 3.0), (2, 4.0)];
        h.zero_threshold = 0.75;
        h.zero_count = 5.0;
        let got: Vec<_> = h
            .buckets()
            .iter()
            .map(|b| (b.boundary_rule(), b.lower, b.upper, b.count))
            .collect();
        assert_eq!(
            got,
            [
                (1, -4.0, -2.0, 4.0),
                (1, -2.0, -1.0, 3.0),
                (3, -0.75, 0.75, 5.0),
                // (0.5, 1] starts inside the zero bucket.
                (0, 0.75, 1.0, 1.0),
                (0, 1.0, 2.0, 2.0),
            ]
        );
        let c = custom(&[(0, 1.0), (2, 2.0)], &[1.0, 5.0]);
        let got: Vec<_> = c
            .buckets()
            .iter()
            .map(|b| (b.boundary_rule(), b.lower, b.upper))
            .collect();
        assert_eq!(got, [(3, f64::NEG_INFINITY, 1.0), (0, 5.0, f64::INFINITY)]);
    }

    #[test]
    fn the_last_finite_bucket_ends_at_the_largest_float() {
        assert_eq!(exponential_upper(0, 1024), f64::MAX);
        assert_eq!(exponential_upper(0, 1025), f64::INFINITY);
        assert_eq!(exponential_upper(-2, 256), f64::MAX);
        assert_eq!(exponential_upper(3, 1024 * 8), f64::MAX);
        assert_eq!(exponential_upper(2, 8), 4.0);
        assert_eq!(exponential_upper(2, -4), 0.5);
        assert_eq!(exponential_upper(0, -1074), f64::from_bits(1));
    }

    #[test]
    fn bucket_bounds_grow_by_the_schema_base() {
        assert_eq!(exponential_bucket(0, 1), (1.0, 2.0));
        assert_eq!(exponential_bucket(0, 0), (0.5, 1.0));
        assert_eq!(exponential_bucket(-1, 1), (1.0, 4.0));
        let (lower, upper) = exponential_bucket(1, 1);
        assert_eq!(lower, 1.0);
        assert!((upper - std::f64::consts::SQRT_2).abs() < 1e-15);
    }

    #[test]
    fn reducing_merges_the_buckets_of_a_coarser_one() {
        // Schema 1 buckets 1..=4 are (1, √2], (√2, 2], (2, 2√2], (2√2, 4];
        // at schema 0 they are (1, 2] and (2, 4]; at -1, (1, 4].
        let mut h = hist(1, &[(-1, 1.0), (0, 2.0), (1, 3.0), (2, 4.0), (3, 5.0), (4, 6.0)]);
        h.reduce_schema(0);
        assert_eq!(h.positive, [(0, 3.0), (1, 7.0), (2, 11.0)]);
        h.reduce_schema(-1);
        assert_eq!(h.positive, [(0, 3.0), (1, 18.0)]);
        assert_eq!(h.schema, -1);
        // The extreme indexes do not overflow.
        let mut far = vec![(i32::MIN, 1.0), (-5, 1.0), (0, 1.0), (1, 1.0), (i32::MAX, 1.0)];
        reduce_buckets(&mut far, 100);
        assert_eq!(far, [(0, 3.0), (1, 2.0)]);
    }

    #[test]
    fn adding_reduces_to_the_coarser_schema() {
        let mut a = hist(1, &[(1, 1.0), (2, 2.0)]);
        let b = hist(0, &[(1, 10.0), (3, 1.0)]);
        a.add(&b).unwrap();
        assert_eq!(a.schema, 0);
        assert_eq!(a.positive, [(1, 13.0), (3, 1.0)]);
        assert_eq!(a.count, 14.0);
    }

    #[test]
    fn a_wider_zero_bucket_absorbs_the_buckets_inside_it() {
        let mut a = hist(0, &[(-1, 1.0), (0, 2.0), (1, 4.0)]);
        let mut b = hist(0, &[(1, 8.0)]);
        b.zero_threshold = 0.5;
        b.zero_count = 16.0;
        a.add(&b).unwrap();
        // Bucket -1 is (0.25, 0.5], inside b's zero bucket; bucket 0 is
        // (0.5, 1], outside.
        assert_eq!(a.zero_threshold, 0.5);
        assert_eq!(a.zero_count, 17.0);
        assert_eq!(a.positive, [(0, 2.0), (1, 12.0)]);
    }

    #[test]
    fn a_threshold_inside_a_populated_bucket_grows_to_its_end() {
        let a = hist(0, &[(1, 3.0), (2, 1.0)]);
        // 1.5 lies in bucket 1, (1, 2]: the zero bucket must take all of it.
        assert_eq!(a.zero_bucket_for(1.5), (3.0, 2.0));
    }

    fn custom(counts: &[(i32, f64)], bounds: &[f64]) -> Histogram {
        Histogram {
            custom_bounds: Some(bounds.into()),
            ..hist(CUSTOM_BUCKETS_SCHEMA, counts)
        }
    }

    #[test]
    fn custom_buckets_of_other_bounds_add_on_the_bounds_they_share() {
        let mut a = custom(&[(0, 1.0), (2, 1.0)], &[1.0, 5.0]);
        a.add(&custom(&[(1, 2.0)], &[1.0, 5.0])).unwrap();
        assert_eq!(a.positive, [(0, 1.0), (1, 2.0), (2, 1.0)]);
        // (1, 5] and (5, +Inf] fall into (1, +Inf], (1, 10] too.
        a.add(&custom(&[(0, 4.0), (1, 8.0)], &[1.0, 10.0])).unwrap();
        assert_eq!(a.bounds(), [1.0]);
        assert_eq!(a.positive, [(0, 5.0), (1, 11.0)]);
        assert_eq!(a.count, 16.0);
        assert_eq!(a.add(&hist(0, &[(1, 1.0)])), Err(Incompatible));
    }

    #[test]
    fn custom_buckets_of_other_bounds_reset_when_a_shared_bound_counts_less() {
        let prev = custom(&[(0, 1.0), (1, 2.0), (2, 3.0)], &[1.0, 5.0]);
        // Up to 1: 1 then 1; up to +Inf: 5 then 6.
        assert!(!Histogram::is_reset(
            &prev,
            &custom(&[(0, 1.0), (1, 2.0), (2, 4.0)], &[1.0, 10.0])
        ));
        // Up to 1: 1 then 0.
        assert!(Histogram::is_reset(&prev, &custom(&[(1, 7.0)], &[1.0, 10.0])));
    }

    #[test]
    fn only_a_reset_beside_a_not_reset_conflicts() {
        use ResetHint::*;
        assert!(Reset.conflicts_with(NotReset) && NotReset.conflicts_with(Reset));
        for (a, b) in [(Reset, Reset), (Reset, Unknown), (NotReset, Gauge), (Unknown, Gauge)] {
            assert!(!a.conflicts_with(b) && !b.conflicts_with(a), "{a:?} {b:?}");
        }
        assert!(ResetHint::conflict_among([NotReset, Gauge, Unknown, Reset]));
        assert!(!ResetHint::conflict_among([NotReset, Gauge, Unknown]));
    }

    #[test]
    fn a_detecting_reader_hints_unknown_resets_and_keeps_the_rest() {
        let at = |t: i64, count: f64, hint: ResetHint| HistogramSample {
            t,
            h: Arc::new(Histogram {
                reset_hint: hint,
                ..hist(0, &[(1, count)])
            }),
        };
        let mut stale = hist(0, &[]);
        stale.sum = f64::from_bits(crate::STALE_NAN_BITS);
        let mut samples = vec![
            at(0, 5.0, ResetHint::Unknown),
            at(1, 6.0, ResetHint::Unknown),
            at(2, 2.0, ResetHint::Unknown),
            HistogramSample {
                t: 3,
                h: Arc::new(stale),
            },
            // Compared with the sample before the marker.
            at(4, 3.0, ResetHint::Unknown),
            at(5, 1.0, ResetHint::Gauge),
            at(6, 9.0, ResetHint::Reset),
        ];
        Histogram::detect_reset_hints(&mut samples);
        let hints: Vec<ResetHint> = samples.iter().map(|s| s.h.reset_hint).collect();
        use ResetHint::*;
        assert_eq!(hints, [Unknown, NotReset, Reset, Unknown, NotReset, Gauge, Reset]);
    }

    #[test]
    fn resets_are_detected_as_prometheus_does() {
        let prev = hist(0, &[(1, 2.0), (2, 3.0)]);
        assert!(!Histogram::is_reset(&prev, &hist(0, &[(1, 2.0), (2, 4.0)])));
        // One bucket went down while the count went up.
        assert!(Histogram::is_reset(&prev, &hist(0, &[(1, 1.0), (2, 9.0)])));
        // A populated bucket disappeared.
        assert!(Histogram::is_reset(&prev, &hist(0, &[(2, 9.0)])));
        // A finer schema cannot follow a coarser one without a restart.
        assert!(Histogram::is_reset(&prev, &hist(1, &[(2, 2.0), (4, 3.0)])));
        // A coarser one can: the previous buckets are compared once reduced.
        assert!(!Histogram::is_reset(&prev, &hist(-1, &[(1, 5.0)])));
        let mut hinted = hist(0, &[(1, 1.0), (2, 1.0)]);
        hinted.reset_hint = ResetHint::NotReset;
        assert!(!Histogram::is_reset(&prev, &hinted));
        let mut restarted = hist(0, &[(1, 5.0), (2, 5.0)]);
        restarted.reset_hint = ResetHint::Reset;
        assert!(Histogram::is_reset(&prev, &restarted));
    }

    fn buckets() -> impl Strategy<Value = Vec<(i32, f64)>> {
        prop::collection::btree_map(-20i32..20, 0u32..1000, 0..12)
            .prop_map(|m| m.into_iter().map(|(i, c)| (i, f64::from(c))).collect())
    }

    proptest! {
        /// Integer counts add exactly, so the order of additions cannot matter.
        #[test]
        fn addition_commutes(a in buckets(), b in buckets(), sa in -2i32..4, sb in -2i32..4) {
            let (x, y) = (hist(sa, &a), hist(sb, &b));
            let mut xy = x.clone();
            xy.add(&y).unwrap();
            let mut yx = y.clone();
            yx.add(&x).unwrap();
            prop_assert_eq!(&xy, &yx);
            let total: f64 = xy.positive.iter().map(|b| b.1).sum();
            prop_assert_eq!(total, xy.count);
        }

        #[test]
        fn subtracting_what_was_added_leaves_the_buckets(a in buckets(), b in buckets(), s in -2i32..4) {
            let mut h = hist(s, &a);
            h.add(&hist(s, &b)).unwrap();
            h.sub(&hist(s, &b)).unwrap();
            let populated: Vec<_> = h.positive.iter().copied().filter(|b| b.1 != 0.0).collect();
            let want: Vec<_> = a.iter().copied().filter(|b| b.1 != 0.0).collect();
            prop_assert_eq!(populated, want);
        }

        #[test]
        fn a_counter_that_only_grows_never_resets(a in buckets(), b in buckets(), s in -2i32..4, coarser in 0i32..3) {
            let prev = hist(s, &a);
            let mut next = prev.clone();
            next.add(&hist(s - coarser, &b)).unwrap();
            prop_assert!(!Histogram::is_reset(&prev, &next));
        }
    }
}
