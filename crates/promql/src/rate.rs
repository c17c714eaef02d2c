//! `rate`, `increase` and `delta` over all the steps of one series at once.
//!
//! Each window's result is a chain of dependent divisions (Prometheus'
//! `extrapolatedRate`), and evaluated one window at a time the CPU waits on
//! that chain: it was ~40 % of a 24 h `rate` query's evaluation. Here the
//! windows are first reduced to a few numbers each, and then finished 64 at
//! a time in one branch-free loop over columns, which the compiler
//! vectorises and the CPU runs side by side. The numbers that depend on
//! timestamps only ([`Geometry`]) are found once per timestamp column and
//! shared by the series scraped together. Every window still goes
//! through the same operations in the same order as Prometheus', so the
//! results are bit-identical. The kernel is generic over the sample
//! [`Kind`]: histograms take the same path.

use crate::kind::Kind;

/// Which of the three functions, and so which parts of the extrapolation apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Extrapolation {
    /// Counter resets are added back, and extrapolation stops at zero.
    counter: bool,
    /// Divided by the range in seconds.
    per_second: bool,
}

impl Extrapolation {
    pub const RATE: Self = Self {
        counter: true,
        per_second: true,
    };
    pub const INCREASE: Self = Self {
        counter: true,
        per_second: false,
    };
    pub const DELTA: Self = Self {
        counter: false,
        per_second: false,
    };
}

/// Windows finished together.
const BATCH: usize = 64;

/// What up to [`BATCH`] windows holding two samples or more are, apart from
/// their values: it depends on the timestamps only, so series scraped
/// together share it (see `window_index.rs`).
#[derive(Debug, Clone)]
struct GeometryBatch {
    len: usize,
    t: [i64; BATCH],
    /// Indices of each window's first and last sample.
    first: [u32; BATCH],
    last: [u32; BATCH],
    /// Milliseconds as floats (exact: every difference of timestamps within
    /// a query fits in 53 bits); divided by 1000 when finished, as
    /// Prometheus does.
    to_start_ms: [f64; BATCH],
    to_end_ms: [f64; BATCH],
    sampled_ms: [f64; BATCH],
    /// Samples in the window minus one.
    intervals: [f64; BATCH],
}

impl GeometryBatch {
    const EMPTY: Self = Self {
        len: 0,
        t: [0; BATCH],
        first: [0; BATCH],
        last: [0; BATCH],
        to_start_ms: [0.0; BATCH],
        to_end_ms: [0.0; BATCH],
        sampled_ms: [0.0; BATCH],
        intervals: [0.0; BATCH],
    };
}

/// The windows of one timestamp column that `rate`, `increase` and `delta`
/// have a result for, in step order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Geometry {
    /// Batches in use are `batches[..used]`; those after are kept from an
    /// earlier column, so refilling for the next one allocates nothing.
    batches: Vec<GeometryBatch>,
    used: usize,
}

impl Geometry {
    /// From `(step time, window start, window end, lo, hi)` of every window
    /// `(start, end]` holding samples `lo..hi` of `ts`, in step order;
    /// windows with fewer than two samples have no result and are left out.
    /// Sample indices must fit in `u32`, as any series a query may load does.
    #[cfg(test)]
    pub fn new(ts: &[i64], windows: impl Iterator<Item = (i64, i64, i64, usize, usize)>) -> Self {
        let mut g = Self::default();
        g.refill(ts, windows);
        g
    }

    /// As [`Self::new`], in place of what this held.
    pub fn refill(&mut self, ts: &[i64], windows: impl Iterator<Item = (i64, i64, i64, usize, usize)>) {
        self.used = 0;
        for (t, start, end, lo, hi) in windows.filter(|w| w.4 - w.3 >= 2) {
            let full = self.used == 0 || self.batches[self.used - 1].len == BATCH;
            if full {
                if self.used == self.batches.len() {
                    self.batches.push(GeometryBatch::EMPTY);
                }
                self.batches[self.used].len = 0;
                self.used += 1;
            }
            let b = &mut self.batches[self.used - 1];
            let (first_t, last_t) = (ts[lo], ts[hi - 1]);
            let i = b.len;
            b.t[i] = t;
            b.first[i] = lo as u32;
            b.last[i] = (hi - 1) as u32;
            b.to_start_ms[i] = (first_t - start) as f64;
            b.to_end_ms[i] = (end - last_t) as f64;
            b.sampled_ms[i] = (last_t - first_t) as f64;
            b.intervals[i] = (hi - lo - 1) as f64;
            b.len += 1;
        }
    }

    fn batches(&self) -> &[GeometryBatch] {
        &self.batches[..self.used]
    }
}

/// Appends `(step time, result)` of every window of `g` over the values
/// `vs` (of the column `g` was made from) to `out`. `may_reset` is false
/// when no value is a reset of the one before it ([`Kind::any_reset`]),
/// which spares looking for counter resets. A window whose values cannot be
/// combined has no result, and the error says there was one.
pub(crate) fn evaluate<V: Kind>(
    x: Extrapolation,
    range_ms: i64,
    g: &Geometry,
    vs: &[V],
    may_reset: bool,
    out: &mut Vec<(i64, V)>,
) -> Result<(), V::Error> {
    let find_resets = x.counter && may_reset;
    let mut incompatible = Ok(());
    for b in g.batches() {
        let n = b.len;
        let mut result: [V; BATCH] = std::array::from_fn(|_| V::default());
        let mut dropped = [false; BATCH];
        let (mut result_level, mut first_level) = ([0.0; BATCH], [0.0; BATCH]);
        for i in 0..n {
            let (lo, hi) = (b.first[i] as usize, b.last[i] as usize);
            match window_change(&vs[lo..=hi], x.counter, find_resets) {
                Ok(r) => {
                    result_level[i] = r.counter_level();
                    first_level[i] = vs[lo].counter_level();
                    result[i] = r;
                }
                Err(e) => (dropped[i], incompatible) = (true, Err(e)),
            }
        }
        let mut factor = [0.0; BATCH];
        extrapolate(x, range_ms, b, &result_level, &first_level, &mut factor);
        for (i, mut r) in result.into_iter().take(n).enumerate() {
            if !dropped[i] {
                r.scale(factor[i]);
                out.push((b.t[i], r));
            }
        }
    }
    incompatible
}

/// Last minus first value of a window, as Prometheus' `extrapolatedRate`
/// and `histogramRate` take it: for a counter, from the
/// [reset base](Kind::reset_base) if there is one, with every value before
/// a reset added back when `find_resets`.
#[inline]
fn window_change<V: Kind>(w: &[V], counter: bool, find_resets: bool) -> Result<V, V::Error> {
    let n = w.len();
    let base = if find_resets { V::reset_base(&w[0], &w[1]) } else { None };
    let first = base.as_ref().unwrap_or(&w[0]);
    let between = if counter { &w[1..n - 1] } else { &[] };
    let mut r = V::aligned_to(&w[n - 1], first, between)?;
    r.sub(first)?;
    if find_resets {
        let mut prev = first;
        for v in &w[1..] {
            if V::is_reset(prev, v) {
                r.add(prev)?;
            }
            prev = v;
        }
    }
    Ok(r)
}

cairn_codec::v3_kernel! {
    /// Each window's extrapolation factor into `factor`, from its
    /// [`counter_level`](Kind::counter_level) change and first value. Seven
    /// divisions per window bound this loop, hence the AVX2 build (see
    /// `cairn_codec::simd`).
    fn extrapolate(
        x: Extrapolation,
        range_ms: i64,
        b: &GeometryBatch,
        result: &[f64; BATCH],
        first_value: &[f64; BATCH],
        factor: &mut [f64; BATCH],
    ) {
        let range_s = range_ms as f64 / 1000.0;
        for (i, f) in factor[..b.len].iter_mut().enumerate() {
            let result = result[i];
            let first_value = first_value[i];
            let mut to_start = b.to_start_ms[i] / 1000.0;
            let mut to_end = b.to_end_ms[i] / 1000.0;
            let sampled = b.sampled_ms[i] / 1000.0;
            let avg = sampled / b.intervals[i];
            let threshold = avg * 1.1;
            // Selects, not branches, so the loop vectorises.
            to_start = if to_start >= threshold { avg / 2.0 } else { to_start };
            if x.counter {
                // Do not extrapolate below zero.
                let to_zero = sampled * (first_value / result);
                let stop = result > 0.0 && first_value >= 0.0 && to_zero < to_start;
                to_start = if stop { to_zero } else { to_start };
            }
            let mut interval = sampled;
            interval += to_start;
            to_end = if to_end >= threshold { avg / 2.0 } else { to_end };
            interval += to_end;
            let mut factor = interval / sampled;
            if x.per_second {
                factor /= range_s;
            }
            *f = factor;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::Samples;
    use proptest::prelude::*;

    /// Prometheus' `extrapolatedRate` one window at a time, as the engine
    /// computed it before: the oracle for the column form.
    fn one_window(w: &[(i64, f64)], start: i64, end: i64, range: i64, counter: bool, rate: bool) -> Option<f64> {
        if w.len() < 2 {
            return None;
        }
        let n1 = w.len() - 1;
        let (first_t, last_t) = (w[0].0, w[n1].0);
        let mut result = w[n1].1 - w[0].1;
        if counter {
            let mut prev = w[0].1;
            for p in &w[1..] {
                if p.1 < prev {
                    result += prev;
                }
                prev = p.1;
            }
        }
        let mut to_start = (first_t - start) as f64 / 1000.0;
        let mut to_end = (end - last_t) as f64 / 1000.0;
        let sampled = (last_t - first_t) as f64 / 1000.0;
        let avg = sampled / n1 as f64;
        let threshold = avg * 1.1;
        let mut interval = sampled;
        if to_start >= threshold {
            to_start = avg / 2.0;
        }
        if counter && result > 0.0 && w[0].1 >= 0.0 {
            let to_zero = sampled * (w[0].1 / result);
            if to_zero < to_start {
                to_start = to_zero;
            }
        }
        interval += to_start;
        if to_end >= threshold {
            to_end = avg / 2.0;
        }
        interval += to_end;
        let mut factor = interval / sampled;
        if rate {
            factor /= range as f64 / 1000.0;
        }
        Some(result * factor)
    }

    fn series() -> impl Strategy<Value = Vec<(i64, f64)>> {
        prop::collection::vec(
            (1i64..40_000, prop_oneof![-5.0f64..1e6, Just(0.0), Just(f64::NAN)]),
            0..300,
        )
        .prop_map(|steps| {
            let mut t = 0;
            steps
                .into_iter()
                .map(|(dt, v)| {
                    t += dt;
                    (t, v)
                })
                .collect()
        })
    }

    /// Counters that never reset, so whole series skip the reset search.
    fn monotone_series() -> impl Strategy<Value = Vec<(i64, f64)>> {
        series().prop_map(|s| {
            let mut total = 0.0;
            s.into_iter()
                .map(|(t, v)| {
                    total += if v.is_nan() { 0.0 } else { v.abs() };
                    (t, total)
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn columns_equal_one_window_at_a_time(
            samples in prop_oneof![series(), monotone_series()],
            range in 1i64..200_000,
            step in 1i64..20_000,
            x in prop_oneof![Just(Extrapolation::RATE), Just(Extrapolation::INCREASE), Just(Extrapolation::DELTA)],
        ) {
            let end_t = samples.last().map_or(0, |p| p.0) + range;
            let (ts, vs): (Vec<i64>, Vec<f64>) = samples.iter().copied().unzip();
            let columns = Samples::new(&ts, &vs);
            let mut windows = Vec::new();
            let mut want = Vec::new();
            let mut t = 0;
            while t <= end_t {
                let (ws, we) = (t - range, t);
                let lo = samples.partition_point(|p| p.0 <= ws);
                let hi = samples.partition_point(|p| p.0 <= we);
                windows.push((t, ws, we, lo, hi));
                if let Some(v) = one_window(&samples[lo..hi], ws, we, range, x.counter, x.per_second) {
                    want.push((t, v));
                }
                t += step;
            }
            let geometry = Geometry::new(&ts, windows.into_iter());
            let mut got = Vec::new();
            let Ok(()) = evaluate(x, range, &geometry, &vs, f64::any_reset(columns.vs), &mut got);
            prop_assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                prop_assert_eq!(g.0, w.0);
                prop_assert_eq!(g.1.to_bits(), w.1.to_bits(), "at {}: {} vs {}", g.0, g.1, w.1);
            }
        }
    }

    /// A histogram series goes through the same kernel as a float one: each
    /// bucket of its `rate` is, to the bit, the `rate` of that bucket taken
    /// as a float series, when the counter resets of every bucket coincide
    /// and the float clamp at zero is not reached.
    #[test]
    fn histograms_take_the_float_path_bucket_by_bucket() {
        use crate::kind::Histogram;
        let ts: Vec<i64> = (0..40).map(|i| i * 15_000 + (i * 7) % 3).collect();
        // Three buckets counting from 1,000 at different speeds, restarted
        // (every bucket lower) at sample 25.
        let bucket = |b: usize, i: usize| {
            let speed = [1.0, 7.0, 0.5][b];
            if i < 25 {
                1000.0 + speed * i as f64
            } else {
                900.0 + speed * (i - 25) as f64
            }
        };
        let hists: Vec<Histogram> = (0..ts.len())
            .map(|i| {
                let positive: Vec<(i32, f64)> = (0..3).map(|b| (b as i32 - 1, bucket(b, i))).collect();
                Histogram {
                    count: positive.iter().map(|b| b.1).sum(),
                    sum: i as f64,
                    positive,
                    ..Histogram::default()
                }
            })
            .collect();
        let windows: Vec<_> = (1..60)
            .map(|k| {
                let t = k * 10_000;
                let (ws, we) = (t - 60_000, t);
                (
                    t,
                    ws,
                    we,
                    ts.partition_point(|&x| x <= ws),
                    ts.partition_point(|&x| x <= we),
                )
            })
            .collect();
        let geometry = Geometry::new(&ts, windows.into_iter());
        for x in [Extrapolation::RATE, Extrapolation::INCREASE, Extrapolation::DELTA] {
            let mut got = Vec::new();
            evaluate(x, 60_000, &geometry, &hists, Histogram::any_reset(&hists), &mut got).unwrap();
            assert!(got.len() > 20);
            for b in 0..3 {
                let floats: Vec<f64> = (0..ts.len()).map(|i| bucket(b, i)).collect();
                let mut want = Vec::new();
                let Ok(()) = evaluate(x, 60_000, &geometry, &floats, true, &mut want);
                let got_bucket: Vec<(i64, f64)> = got.iter().map(|(t, h)| (*t, h.positive[b].1)).collect();
                assert_eq!(got_bucket, want, "bucket {b} of {x:?}");
            }
        }
    }

    /// A window mixing custom and exponential buckets has no result, and
    /// the caller learns of it; the other windows are computed.
    #[test]
    fn incompatible_histograms_drop_their_window_only() {
        use crate::kind::{CUSTOM_BUCKETS_SCHEMA, Histogram, Incompatible};
        let ts: Vec<i64> = (0..8).map(|i| i * 15_000).collect();
        let hists: Vec<Histogram> = (0..8)
            .map(|i| Histogram {
                schema: if i == 7 { CUSTOM_BUCKETS_SCHEMA } else { 0 },
                count: i as f64,
                positive: vec![(1, i as f64)],
                ..Histogram::default()
            })
            .collect();
        let windows = [(45_000, 0, 45_000, 1, 4), (105_000, 60_000, 105_000, 5, 8)];
        let geometry = Geometry::new(&ts, windows.into_iter());
        let mut got = Vec::new();
        let res = evaluate(Extrapolation::INCREASE, 45_000, &geometry, &hists, true, &mut got);
        assert_eq!(res, Err(Incompatible));
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, 45_000);
        assert!(got[0].1.count > 0.0);
    }

    /// A histogram counter's extrapolation stops at zero by its count, as
    /// Prometheus' does: its count comes out as the `rate` of the count
    /// taken as a float series, clamp included.
    #[test]
    fn histograms_stop_at_zero_by_their_count() {
        use crate::kind::Histogram;
        let ts: Vec<i64> = (0..20).map(|i| 5_000 + i * 15_000).collect();
        let hists: Vec<Histogram> = (0..20)
            .map(|i| Histogram {
                count: 3.0 * i as f64,
                positive: vec![(0, i as f64), (1, 2.0 * i as f64)],
                ..Histogram::default()
            })
            .collect();
        let counts: Vec<f64> = hists.iter().map(|h| h.count).collect();
        let windows = (1..30).map(|k| {
            let t = k * 10_000;
            (
                t,
                t - 60_000,
                t,
                ts.partition_point(|&x| x <= t - 60_000),
                ts.partition_point(|&x| x <= t),
            )
        });
        let geometry = Geometry::new(&ts, windows);
        let (mut got, mut want) = (Vec::new(), Vec::new());
        evaluate(Extrapolation::RATE, 60_000, &geometry, &hists, false, &mut got).unwrap();
        let Ok(()) = evaluate(Extrapolation::RATE, 60_000, &geometry, &counts, false, &mut want);
        let got: Vec<(i64, f64)> = got.iter().map(|(t, h)| (*t, h.count)).collect();
        assert_eq!(got, want);
    }

    /// The layouts Prometheus looks at: `delta` only the first and last
    /// histogram's, a counter also those between; and a counter reset right
    /// after the first sets the first aside.
    #[test]
    fn only_the_histograms_prometheus_compares_must_fit() {
        use crate::kind::{CUSTOM_BUCKETS_SCHEMA, Histogram};
        let exponential = |count: f64| Histogram {
            count,
            positive: vec![(1, count)],
            ..Histogram::default()
        };
        let custom = |count: f64| Histogram {
            schema: CUSTOM_BUCKETS_SCHEMA,
            count,
            positive: vec![(0, count)],
            ..Histogram::default()
        };
        let ts = [0, 15_000, 30_000];
        let geometry = Geometry::new(&ts, [(30_000, -1, 30_000, 0, 3)].into_iter());
        let run = |x, hists: &[Histogram]| {
            let mut out = Vec::new();
            let res = evaluate(x, 30_001, &geometry, hists, true, &mut out);
            (res.is_ok(), out.len())
        };
        let custom_between = [exponential(1.0), custom(2.0), exponential(3.0)];
        assert_eq!(run(Extrapolation::DELTA, &custom_between), (true, 1));
        assert!(!run(Extrapolation::INCREASE, &custom_between).0);
        // The custom first sample is set aside: the counter restarted after it.
        let custom_first = [custom(10.0), exponential(1.0), exponential(3.0)];
        assert_eq!(run(Extrapolation::INCREASE, &custom_first), (true, 1));
        assert!(!run(Extrapolation::DELTA, &custom_first).0);
    }
}
