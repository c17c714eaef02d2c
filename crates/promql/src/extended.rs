//! Prometheus' extended range selectors: `rate(x[5m] anchored)`,
//! `increase(x[5m] smoothed)`, `x smoothed`.
//!
//! An anchored window `(start, end]` also takes the last sample at or
//! before its start, and its change is measured from that sample, so the
//! changes of consecutive windows add up with nothing lost between them and
//! nothing extrapolated. A smoothed window values its two boundaries on the
//! line between the samples around each, and a smoothed instant selector
//! values each step that way. To find those samples an extended selector
//! reads a lookback before its window, and a smoothed one a lookback after.

use std::borrow::Borrow;
use std::sync::Arc;

use cairn_model::histogram::{Incompatible, ResetHint};
use cairn_model::{Histogram, HistogramSample};
pub(crate) use promql_parser::parser::ExtendedRange;

use crate::QueryError;
use crate::annotations::{self, Notes};
use crate::eval::Result;
use crate::func::RangeFn;
use crate::functions::range_histogram::{Points, transitions};
use crate::samples::Samples;
use crate::steps::{Ctx, RangeArg};

/// An extended range selector's modifier, and the lookback it reads over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Extended {
    pub modifier: ExtendedRange,
    pub lookback: i64,
}

impl Extended {
    fn smoothed(self) -> bool {
        self.modifier == ExtendedRange::Smoothed
    }

    /// The samples `(lo, hi]` read for the window `(start, end]`.
    fn reach(self, start: i64, end: i64) -> (i64, i64) {
        let ahead = if self.smoothed() { self.lookback } else { 0 };
        (start - self.lookback, end + ahead)
    }
}

/// Prometheus' error for function `name` given a range selector with
/// `modifier`, unless the function takes one.
pub(crate) fn check_function(modifier: ExtendedRange, name: &str) -> Result<()> {
    let takes: &[&str] = match modifier {
        ExtendedRange::Anchored => &["changes", "delta", "increase", "rate", "resets"],
        ExtendedRange::Smoothed => &["delta", "increase", "rate"],
    };
    if takes.contains(&name) {
        return Ok(());
    }
    Err(QueryError::Execution(format!(
        "{modifier} modifier can only be used with: {} - not with {name}",
        takes.join(", ")
    )))
}

/// Range function `f` of an extended range selector at every step of one
/// series (floats, histograms or both).
pub(crate) fn points(
    f: RangeFn,
    samples: Samples<'_>,
    c: Ctx,
    ra: RangeArg,
    ext: Extended,
    metric: &str,
    notes: &Notes,
) -> Result<Points> {
    let (mut pts, mut hs) = (Vec::new(), Vec::new());
    let smoothed = ext.smoothed();
    let range_s = ra.range as f64 / 1000.0;
    for t in (0..c.n()).map(|i| c.ts(i)) {
        let (start, end) = ra.window(t);
        let (lo, hi) = ext.reach(start, end);
        let w = samples.window(lo, hi);
        match f {
            RangeFn::Rate | RangeFn::Increase | RangeFn::Delta => {
                let counter = f != RangeFn::Delta;
                if !w.ts.is_empty() && !w.hs.is_empty() {
                    notes.add(annotations::mixed_floats_histograms(metric));
                } else if !w.hs.is_empty() {
                    if let Some(mut h) = histogram_change(w.hs, start, end, smoothed, counter, metric, notes) {
                        if f == RangeFn::Rate {
                            h.scale(1.0 / range_s);
                        }
                        h.reset_hint = ResetHint::Gauge;
                        h.compact();
                        hs.push((t, Arc::new(h)));
                    }
                } else if let Some(v) = float_change(w.ts, w.vs, start, end, smoothed, counter) {
                    pts.push((t, if f == RangeFn::Rate { v / range_s } else { v }));
                }
            }
            RangeFn::Changes | RangeFn::Resets => {
                if let Some(n) = anchored_transitions(f == RangeFn::Resets, w, start) {
                    pts.push((t, n));
                }
            }
            // `check_function` let no other function through.
            _ => {
                return Err(QueryError::Internal(format!(
                    "{} of an extended range selector",
                    f.name()
                )));
            }
        }
    }
    Ok((pts, hs))
}

/// The samples of an extended range selector's window `(start, end]` as
/// the query's result: its boundary values at `start` and `end` (as
/// `rate` takes them) around the samples inside. Floats only, as in
/// Prometheus.
pub(crate) fn window_points(samples: Samples<'_>, start: i64, end: i64, ext: Extended) -> Result<Vec<(i64, f64)>> {
    let (lo, hi) = ext.reach(start, end);
    let w = samples.window(lo, hi);
    if !w.hs.is_empty() {
        return Err(QueryError::Execution(format!(
            "{} modifier is not supported with histograms",
            ext.modifier
        )));
    }
    let smoothed = ext.smoothed();
    let Some((first, last)) = boundaries(w.ts, start, end, smoothed) else {
        return Ok(Vec::new());
    };
    let Ok((left, right)) = boundary_values::<f64, _>(w.ts, w.vs, (first, last), (start, end), smoothed, false);
    let inside_from = if w.ts[first] <= start { first + 1 } else { first };
    let inside_to = if w.ts[last] >= end { last } else { last + 1 };
    let mut pts = Vec::with_capacity(inside_to.saturating_sub(inside_from) + 2);
    pts.push((start, left));
    pts.extend(w.slice(inside_from, inside_to.max(inside_from)).pairs());
    pts.push((end, right));
    Ok(pts)
}

/// The samples a window's change is measured between: `first`, the last at
/// or before the window start (else the first), and `last`, the last read
/// (smoothed: the first at or after the window end, else the last read).
/// `None` when the window has no result.
fn boundaries(ts: &[i64], start: i64, end: i64, smoothed: bool) -> Option<(usize, usize)> {
    let mut last = ts.len().checked_sub(1)?;
    let first = ts[..last].partition_point(|&t| t <= start).saturating_sub(1);
    if smoothed {
        last = ts[..last].partition_point(|&t| t < end);
    }
    if ts[last] <= start || (smoothed && ts[first] > end) {
        return None;
    }
    Some((first, last))
}

/// A value at `t` on the line between two samples around it; for a counter
/// reset between them, on the line from zero to the second.
trait Interpolate: Sized {
    /// Why two values cannot be combined (nothing, for floats).
    type Error;

    fn interpolate(p1: (i64, &Self), p2: (i64, &Self), t: i64, counter: bool)
    -> std::result::Result<Self, Self::Error>;
}

impl Interpolate for f64 {
    type Error = std::convert::Infallible;

    fn interpolate(p1: (i64, &f64), p2: (i64, &f64), t: i64, counter: bool) -> std::result::Result<f64, Self::Error> {
        let (y1, y2) = (*p1.1, *p2.1);
        let y1 = if counter && y2 < y1 { 0.0 } else { y1 };
        Ok(y1 + (y2 - y1) * (t - p1.0) as f64 / (p2.0 - p1.0) as f64)
    }
}

impl Interpolate for Histogram {
    type Error = Incompatible;

    fn interpolate(
        p1: (i64, &Histogram),
        p2: (i64, &Histogram),
        t: i64,
        counter: bool,
    ) -> std::result::Result<Histogram, Incompatible> {
        if t == p1.0 {
            return Ok(p1.1.clone());
        }
        if t == p2.0 {
            return Ok(p2.1.clone());
        }
        let fraction = (t - p1.0) as f64 / (p2.0 - p1.0) as f64;
        let mut h = p2.1.clone();
        if counter && Histogram::is_reset(p1.1, p2.1) {
            h.scale(fraction);
            return Ok(h);
        }
        h.sub(p1.1)?;
        h.scale(fraction);
        h.add(p1.1)?;
        Ok(h)
    }
}

/// The values at a window's two boundaries: the samples `first` and `last`,
/// or (smoothed) interpolated at `start` and `end` when they lie beyond.
fn boundary_values<V: Interpolate + Clone, T: Borrow<V>>(
    ts: &[i64],
    vs: &[T],
    (first, last): (usize, usize),
    (start, end): (i64, i64),
    smoothed: bool,
    counter: bool,
) -> std::result::Result<(V, V), V::Error> {
    let at = |i: usize| (ts[i], vs[i].borrow());
    let left = if smoothed && ts[first] < start {
        V::interpolate(at(first), at(first + 1), start, counter)?
    } else {
        vs[first].borrow().clone()
    };
    let right = if smoothed && last > 0 && ts[last] > end {
        V::interpolate(at(last - 1), at(last), end, counter)?
    } else {
        vs[last].borrow().clone()
    };
    Ok((left, right))
}

/// The change of a float window `(start, end]` over the samples read for
/// it, counter resets added back for a counter.
fn float_change(ts: &[i64], vs: &[f64], start: i64, end: i64, smoothed: bool, counter: bool) -> Option<f64> {
    let (first, last) = boundaries(ts, start, end, smoothed)?;
    let Ok((left, right)) = boundary_values::<f64, _>(ts, vs, (first, last), (start, end), smoothed, counter);
    let mut change = right - left;
    if counter {
        // The boundaries already allow for resets beyond the window.
        let lo = if ts[first] <= start { first + 1 } else { first };
        let hi = if ts[last] >= end { last } else { last + 1 };
        let mut prev = left;
        for &v in vs.get(lo..hi).unwrap_or(&[]) {
            if v < prev {
                change += prev;
            }
            prev = v;
        }
        if right < prev {
            change += prev;
        }
    }
    Some(change)
}

/// The change of a histogram window `(start, end]`, as [`float_change`],
/// with Prometheus' warnings; `None` when it has no result.
fn histogram_change(
    hs: &[HistogramSample],
    start: i64,
    end: i64,
    smoothed: bool,
    counter: bool,
    metric: &str,
    notes: &Notes,
) -> Option<Histogram> {
    let ts: Vec<i64> = hs.iter().map(|h| h.t).collect();
    let (first, last) = boundaries(&ts, start, end, smoothed)?;
    let used = &hs[first..=last];
    if used
        .iter()
        .any(|h| h.h.uses_custom_buckets() != used[0].h.uses_custom_buckets())
    {
        notes.add(annotations::mixed_exponential_custom(metric));
        return None;
    }
    let gauge = |h: &Histogram| h.reset_hint == ResetHint::Gauge;
    if counter && used.iter().any(|h| gauge(&h.h)) {
        notes.add(annotations::not_a_counter(metric));
    }
    let values: Vec<&Histogram> = hs.iter().map(|h| &*h.h).collect();
    let incompatible = || notes.add(annotations::mixed_exponential_custom(metric));
    let Ok((left, right)) =
        boundary_values::<Histogram, _>(&ts, &values, (first, last), (start, end), smoothed, counter)
    else {
        incompatible();
        return None;
    };
    if !counter && (!gauge(&left) || !gauge(&right)) {
        notes.add(annotations::not_a_gauge(metric));
    }
    let mut change = right.clone();
    if change.sub(&left).is_err() {
        incompatible();
        return None;
    }
    if counter {
        match histogram_correction(&values, (first, last), &left, &right, ts[first] < start && smoothed) {
            Ok(Some(correction)) => {
                if change.add(&correction).is_err() {
                    incompatible();
                    return None;
                }
            }
            Ok(None) => {}
            Err(Incompatible) => {
                incompatible();
                return None;
            }
        }
    }
    Some(change)
}

/// What a histogram counter's resets between its boundaries add back.
/// Samples `first` and `last` are the boundaries' own (`left` and `right`
/// stand for them); when the left boundary was interpolated across a reset
/// (`left_interpolated` and a reset after `first`), that reset is already
/// allowed for and the sample after it is where the search starts.
fn histogram_correction(
    hs: &[&Histogram],
    (first, last): (usize, usize),
    left: &Histogram,
    right: &Histogram,
    left_interpolated: bool,
) -> std::result::Result<Option<Histogram>, Incompatible> {
    let mut lo = first + 1;
    let mut prev = left;
    if left_interpolated && Histogram::is_reset(hs[first], hs[first + 1]) {
        prev = hs[first + 1];
        lo += 1;
    }
    if lo > last {
        return Ok(None);
    }
    let mut correction: Option<Histogram> = None;
    let mut add = |h: &Histogram| match &mut correction {
        None => {
            correction = Some(h.clone());
            Ok(())
        }
        Some(c) => c.add(h),
    };
    for &h in &hs[lo..last] {
        if Histogram::is_reset(prev, h) {
            add(prev)?;
        }
        prev = h;
    }
    if Histogram::is_reset(prev, right) {
        add(prev)?;
    }
    Ok(correction)
}

/// `changes` or `resets` (`resets`) of an anchored window starting at
/// `start` over the samples read for it: from the last sample at or
/// before the start, of either kind, on. `None` without a sample after
/// the start.
fn anchored_transitions(resets: bool, w: Samples<'_>, start: i64) -> Option<f64> {
    let floats_before = w.ts.partition_point(|&t| t <= start);
    let hists_before = w.hs.partition_point(|h| h.t <= start);
    if floats_before == w.ts.len() && hists_before == w.hs.len() {
        return None;
    }
    let anchor_is_float = match (floats_before.checked_sub(1), hists_before.checked_sub(1)) {
        (None, None) => None,
        (Some(f), Some(h)) => Some(w.ts[f] >= w.hs[h].t),
        (f, _) => Some(f.is_some()),
    };
    let (from_float, from_hist) = match anchor_is_float {
        None => (0, 0),
        Some(true) => (floats_before - 1, hists_before),
        Some(false) => (floats_before, hists_before - 1),
    };
    let from = Samples::new(&w.ts[from_float..], &w.vs[from_float..]).with_histograms(&w.hs[from_hist..]);
    Some(transitions(resets, from))
}

/// What a smoothed instant selector gives at one step.
pub(crate) enum SmoothedValue {
    Float(f64),
    Histogram(Histogram),
}

/// A smoothed instant selector's value at `t` from the samples read
/// around it (`(t - lookback, t + lookback]`): the sample at `t`, else the
/// line between the samples around `t`, else the last before it. `None`
/// (with a warning where Prometheus gives one) when there is none.
pub(crate) fn smoothed_value(w: Samples<'_>, t: i64, metric: &str, notes: &Notes) -> Option<SmoothedValue> {
    if !w.ts.is_empty() && !w.hs.is_empty() {
        notes.add(annotations::mixed_floats_histograms(metric));
        return None;
    }
    if w.hs.is_empty() {
        let i = w.ts.partition_point(|&x| x < t);
        return match (w.ts.get(i), i) {
            (Some(&x), _) if x == t => Some(SmoothedValue::Float(w.vs[i])),
            (Some(&x), 1..) => {
                let Ok(v) = f64::interpolate((w.ts[i - 1], &w.vs[i - 1]), (x, &w.vs[i]), t, false);
                Some(SmoothedValue::Float(v))
            }
            (None, 1..) => Some(SmoothedValue::Float(w.vs[i - 1])),
            _ => None,
        };
    }
    let i = w.hs.partition_point(|h| h.t < t);
    match (w.hs.get(i), i) {
        (Some(h), _) if h.t == t => Some(SmoothedValue::Histogram((*h.h).clone())),
        (Some(next), 1..) => {
            let prev = &w.hs[i - 1];
            if prev.h.uses_custom_buckets() != next.h.uses_custom_buckets() {
                notes.add(annotations::mixed_exponential_custom(metric));
                return None;
            }
            let counter = prev.h.reset_hint != ResetHint::Gauge || next.h.reset_hint != ResetHint::Gauge;
            match Histogram::interpolate((prev.t, &prev.h), (next.t, &next.h), t, counter) {
                Ok(h) => Some(SmoothedValue::Histogram(h)),
                Err(Incompatible) => {
                    notes.add(annotations::mixed_exponential_custom(metric));
                    None
                }
            }
        }
        (None, 1..) => {
            let mut h = (*w.hs[i - 1].h).clone();
            // The hint speaks of the sample before, not of this value.
            h.reset_hint = ResetHint::Unknown;
            Some(SmoothedValue::Histogram(h))
        }
        _ => None,
    }
}

/// The samples `(t - lookback, t + lookback]` a smoothed instant selector
/// reads for the data time `t`.
pub(crate) fn smoothed_reach(t: i64, lookback: i64) -> (i64, i64) {
    (t - lookback, t + lookback)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOKBACK: i64 = 300_000;

    fn ext(modifier: ExtendedRange) -> Extended {
        Extended {
            modifier,
            lookback: LOOKBACK,
        }
    }

    #[test]
    fn windows_read_a_lookback_around_them() {
        assert_eq!(ext(ExtendedRange::Anchored).reach(0, 60_000), (-LOOKBACK, 60_000));
        assert_eq!(
            ext(ExtendedRange::Smoothed).reach(0, 60_000),
            (-LOOKBACK, 60_000 + LOOKBACK)
        );
    }

    #[test]
    fn functions_are_checked_with_prometheus_words() {
        assert!(check_function(ExtendedRange::Anchored, "resets").is_ok());
        assert!(check_function(ExtendedRange::Smoothed, "rate").is_ok());
        assert_eq!(
            check_function(ExtendedRange::Smoothed, "changes")
                .unwrap_err()
                .to_string(),
            "smoothed modifier can only be used with: delta, increase, rate - not with changes"
        );
        assert_eq!(
            check_function(ExtendedRange::Anchored, "deriv")
                .unwrap_err()
                .to_string(),
            "anchored modifier can only be used with: changes, delta, increase, rate, resets - not with deriv"
        );
    }

    #[test]
    fn misplaced_modifiers_are_parse_errors() {
        for (query, words) in [
            ("rate(foo[1m]) anchored", "anchored modifier not implemented"),
            (
                "foo[5m:1m] smoothed",
                "smoothed modifier is not supported for subqueries",
            ),
            (
                "foo smoothed anchored",
                "anchored and smoothed modifiers cannot be used together",
            ),
        ] {
            let err = crate::parse(query).unwrap_err().to_string();
            assert!(err.contains(words), "{query}: {err}");
        }
    }

    #[test]
    fn anchored_change_starts_at_the_sample_before_the_window() {
        // 1 2 3 4 5 every 15 s; window (50 s, 110 s] holds 4 and 5 (at 60 s).
        let ts = [0, 15_000, 30_000, 45_000, 60_000];
        let vs = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(float_change(&ts, &vs, 50_000, 110_000, false, true), Some(1.0));
        // From the sample at 45 s, the last at or before the start.
        assert_eq!(float_change(&ts, &vs, 45_000, 105_000, false, true), Some(1.0));
        // Nothing after the start: no result.
        assert_eq!(float_change(&ts, &vs, 60_000, 120_000, false, true), None);
        // A lone sample after the start changes nothing.
        assert_eq!(float_change(&ts[..1], &vs[..1], -55_000, 5_000, false, true), Some(0.0));
    }

    #[test]
    fn smoothed_change_interpolates_both_boundaries() {
        let ts = [0, 15_000, 30_000];
        let vs = [0.0, 15.0, 30.0];
        // (5 s, 20 s]: from 5 to 20.
        assert_eq!(float_change(&ts, &vs, 5_000, 20_000, true, false), Some(15.0));
        // Data only after the window: none.
        assert_eq!(float_change(&ts[1..], &vs[1..], 0, 10_000, true, false), None);
    }

    #[test]
    fn counter_resets_are_added_back_and_interpolated_from_zero() {
        // 100 then 10 (a reset) 15 s later; at 2 s the counter interpolates
        // from 0: 10 * 2/15, and at 12 s 10 * 12/15.
        let ts = [0, 15_000];
        let vs = [100.0, 10.0];
        let change = float_change(&ts, &vs, 2_000, 12_000, true, true).unwrap();
        assert!((change - (8.0 - 4.0 / 3.0)).abs() < 1e-12, "{change}");
        // Anchored: 5, 10, reset to 3: 3 - 5 + 10.
        let ts = [0, 30_000, 60_000];
        let vs = [5.0, 10.0, 3.0];
        assert_eq!(float_change(&ts, &vs, 0, 60_000, false, true), Some(8.0));
        // A gauge has no resets.
        assert_eq!(float_change(&ts, &vs, 0, 60_000, false, false), Some(-2.0));
    }

    fn hist(t: i64, count: f64, hint: ResetHint) -> HistogramSample {
        HistogramSample::new(
            t,
            Histogram {
                count,
                sum: count,
                positive: vec![(0, count)],
                reset_hint: hint,
                ..Histogram::default()
            },
        )
    }

    #[test]
    fn histogram_resets_are_counted_once() {
        // 5, 10, 3 (reset): anchored increase 3 - 5 + 10.
        let hs = [
            hist(0, 5.0, ResetHint::Unknown),
            hist(30_000, 10.0, ResetHint::Unknown),
            hist(60_000, 3.0, ResetHint::Reset),
        ];
        let notes = Notes::default();
        let h = histogram_change(&hs, 0, 70_000, false, true, "m", &notes).unwrap();
        assert_eq!(h.count, 8.0);
        // Both boundaries interpolated within one reset interval: no correction.
        let hs = [hist(0, 10.0, ResetHint::Unknown), hist(20_000, 5.0, ResetHint::Reset)];
        let h = histogram_change(&hs, 5_000, 15_000, true, true, "m", &notes).unwrap();
        assert_eq!(h.count, 2.5);
        assert!(notes.into_inner().is_empty());
    }

    #[test]
    fn a_window_as_result_has_its_boundary_values_around_its_samples() {
        let ts = [0, 10_000, 20_000, 30_000];
        let vs = [0.0, 10.0, 20.0, 30.0];
        let s = Samples::new(&ts, &vs);
        assert_eq!(
            window_points(s, 5_000, 25_000, ext(ExtendedRange::Smoothed)).unwrap(),
            [(5_000, 5.0), (10_000, 10.0), (20_000, 20.0), (25_000, 25.0)]
        );
        assert_eq!(
            window_points(s, 5_000, 25_000, ext(ExtendedRange::Anchored)).unwrap(),
            [(5_000, 0.0), (10_000, 10.0), (20_000, 20.0), (25_000, 20.0)]
        );
        assert!(
            window_points(s, 30_000, 40_000, ext(ExtendedRange::Anchored))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn anchored_transitions_skip_what_precedes_the_anchor() {
        let ts = [60_000, 120_000, 180_000];
        let vs = [2.0, 1.0, 2.0];
        let w = Samples::new(&ts, &vs);
        assert_eq!(anchored_transitions(true, w, 120_000), Some(0.0));
        assert_eq!(anchored_transitions(false, w, 120_000), Some(1.0));
        assert_eq!(anchored_transitions(true, w, 60_000), Some(1.0));
        assert_eq!(anchored_transitions(false, w, 180_000), None);
    }

    #[test]
    fn smoothed_instants_interpolate_or_carry_the_last_value() {
        let ts = [0, 10_000, 20_000];
        let vs = [1.0, 2.0, 0.0];
        let w = Samples::new(&ts, &vs);
        let notes = Notes::default();
        let float = |t| match smoothed_value(w, t, "m", &notes) {
            Some(SmoothedValue::Float(v)) => Some(v),
            _ => None,
        };
        assert_eq!(float(10_000), Some(2.0));
        assert_eq!(float(5_000), Some(1.5));
        // Not a counter: the drop is interpolated as it is.
        assert_eq!(float(15_000), Some(1.0));
        assert_eq!(float(25_000), Some(0.0));
        assert_eq!(float(-1), None);
    }
}
