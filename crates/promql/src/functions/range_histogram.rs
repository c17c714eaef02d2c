//! Functions of a range vector over series that have native histograms.
//! Float series never come here (`range.rs` evaluates them); a series
//! with histograms has its float windows evaluated by the float kernels
//! and its histogram windows here, and a window holding both kinds gets
//! what Prometheus gives it: no result and a warning for functions that
//! combine samples, the floats alone (with an info) for float-only
//! functions, both kinds for those that only count or pick samples.

use std::sync::Arc;

use cairn_model::histogram::ResetHint;
use cairn_model::{Histogram, HistogramSample};

use crate::annotations::{self, Notes};
use crate::eval::Result;
use crate::func::RangeFn;
use crate::kind::Kind;
use crate::rate::Geometry;
use crate::samples::Samples;
use crate::steps::{Ctx, RangeArg};

/// Float and histogram points of one series.
pub(crate) type Points = (Vec<(i64, f64)>, Vec<(i64, Arc<Histogram>)>);

/// Range function `f` at every step of one series with histograms.
pub(crate) fn points(
    f: RangeFn,
    scalars: &[Vec<f64>],
    samples: Samples<'_>,
    c: Ctx,
    ra: RangeArg,
    metric: &str,
    notes: &Notes,
) -> Result<Points> {
    let floats = Samples::new(samples.ts, samples.vs);
    let hs = samples.hs;
    let mut float_pts = Vec::new();
    if !floats.is_empty() && !matches!(f, RangeFn::Irate | RangeFn::Idelta) {
        super::range_points(f, scalars, floats, c, ra, &mut float_pts)?;
    }
    let windows = |t: i64| {
        let (ws, we) = ra.window(t);
        let w = samples.window(ws, we);
        (w, w.hs)
    };
    let (mut pts, mut out) = (Vec::new(), Vec::new());
    match f {
        RangeFn::Rate | RangeFn::Increase | RangeFn::Delta => {
            let hist = rate(f, hs, c, ra, metric, notes);
            for t in (0..c.n()).map(|i| c.ts(i)) {
                let (w, wh) = windows(t);
                if !w.ts.is_empty() && !wh.is_empty() {
                    notes.add(annotations::mixed_floats_histograms(metric));
                }
            }
            pts.extend(float_pts.into_iter().filter(|p| windows(p.0).1.is_empty()));
            out.extend(hist.into_iter().filter(|p| windows(p.0).0.ts.is_empty()));
        }
        RangeFn::Irate | RangeFn::Idelta => {
            for t in (0..c.n()).map(|i| c.ts(i)) {
                let (w, _) = windows(t);
                match instant_change(f == RangeFn::Irate, w, metric, notes) {
                    Some(Change::Float(v)) => pts.push((t, v)),
                    Some(Change::Histogram(mut h)) => {
                        h.compact();
                        out.push((t, Arc::new(h)));
                    }
                    None => {}
                }
            }
        }
        RangeFn::SumOverTime | RangeFn::AvgOverTime => {
            pts.extend(float_pts.into_iter().filter(|p| windows(p.0).1.is_empty()));
            for t in (0..c.n()).map(|i| c.ts(i)) {
                let (w, wh) = windows(t);
                if wh.is_empty() {
                    continue;
                }
                if !w.ts.is_empty() {
                    notes.add(annotations::mixed_floats_histograms(metric));
                    continue;
                }
                if let Some(h) = sum(wh, metric, notes) {
                    let h = if f == RangeFn::AvgOverTime {
                        crate::histogram_stats::mean(h, wh.iter().map(|s| &*s.h))
                    } else {
                        h
                    };
                    out.push((t, Arc::new(h)));
                }
            }
        }
        RangeFn::CountOverTime | RangeFn::PresentOverTime => {
            for t in (0..c.n()).map(|i| c.ts(i)) {
                let (w, wh) = windows(t);
                let n = w.ts.len() + wh.len();
                if n > 0 {
                    pts.push((t, if f == RangeFn::CountOverTime { n as f64 } else { 1.0 }));
                }
            }
        }
        RangeFn::LastOverTime | RangeFn::FirstOverTime | RangeFn::TsOfLastOverTime | RangeFn::TsOfFirstOverTime => {
            let last = matches!(f, RangeFn::LastOverTime | RangeFn::TsOfLastOverTime);
            let ts_only = matches!(f, RangeFn::TsOfLastOverTime | RangeFn::TsOfFirstOverTime);
            for t in (0..c.n()).map(|i| c.ts(i)) {
                let (w, wh) = windows(t);
                let float = if last { w.pairs().last() } else { w.pairs().next() };
                let hist = if last { wh.last() } else { wh.first() };
                let float_wins = match (float, hist) {
                    (Some(fp), Some(h)) => (fp.0 > h.t) == last,
                    (f, _) => f.is_some(),
                };
                match (float_wins, float, hist) {
                    (true, Some((st, v)), _) => pts.push((t, if ts_only { st as f64 / 1000.0 } else { v })),
                    (false, _, Some(h)) if ts_only => pts.push((t, h.t as f64 / 1000.0)),
                    (false, _, Some(h)) => out.push((t, h.h.clone())),
                    _ => {}
                }
            }
        }
        RangeFn::Changes | RangeFn::Resets => {
            for t in (0..c.n()).map(|i| c.ts(i)) {
                let (w, _) = windows(t);
                if !w.is_void() {
                    pts.push((t, transitions(f == RangeFn::Resets, w)));
                }
            }
        }
        _ => {
            for p in float_pts {
                if !windows(p.0).1.is_empty() {
                    notes.add(annotations::histograms_ignored_in_range(metric));
                }
                pts.push(p);
            }
        }
    }
    Ok((pts, out))
}

/// `rate`, `increase` or `delta` of the histogram windows at every step,
/// by the kernel floats take.
fn rate(
    f: RangeFn,
    hs: &[HistogramSample],
    c: Ctx,
    ra: RangeArg,
    metric: &str,
    notes: &Notes,
) -> Vec<(i64, Arc<Histogram>)> {
    let Some(x) = f.extrapolation() else {
        return Vec::new();
    };
    let counter = f != RangeFn::Delta;
    let ts: Vec<i64> = hs.iter().map(|h| h.t).collect();
    let vs: Vec<Histogram> = hs.iter().map(|h| (*h.h).clone()).collect();
    let mut windows = Vec::new();
    crate::window_index::for_each_span(&ts, c, ra, |i, lo, hi| {
        let t = c.ts(i);
        let (ws, we) = ra.window(t);
        windows.push((t, ws, we, lo, hi));
    });
    for &(_, _, _, lo, hi) in windows.iter().filter(|w| w.4 - w.3 >= 2) {
        let w = &vs[lo..hi];
        if annotations::custom_bounds_differ(&w[0], &w[w.len() - 1]) {
            notes.add(annotations::mismatched_custom_buckets("subtraction"));
        }
        let gauge = |h: &Histogram| h.reset_hint == ResetHint::Gauge;
        if counter && w.iter().any(gauge) {
            notes.add(annotations::not_a_counter(metric));
        }
        if !counter && (!gauge(&w[0]) || !gauge(&w[w.len() - 1])) {
            notes.add(annotations::not_a_gauge(metric));
        }
    }
    let mut g = Geometry::default();
    g.refill(&ts, windows.into_iter());
    let mut out = Vec::new();
    if crate::rate::evaluate(x, ra.range, &g, &vs, Histogram::any_reset(&vs), &mut out).is_err() {
        notes.add(annotations::mixed_exponential_custom(metric));
    }
    out.into_iter()
        .map(|(t, mut h)| {
            h.reset_hint = ResetHint::Gauge;
            h.compact();
            (t, Arc::new(h))
        })
        .collect()
}

/// How many samples of a window, in time order, are a reset (`resets`)
/// or differ from the one before; a change of kind is both.
pub(crate) fn transitions(resets: bool, w: Samples<'_>) -> f64 {
    let mut all: Vec<(i64, std::result::Result<&Histogram, f64>)> = w.pairs().map(|(t, v)| (t, Err(v))).collect();
    all.extend(w.hs.iter().map(|h| (h.t, Ok(&*h.h))));
    all.sort_by_key(|p| p.0);
    let counted = all.windows(2).filter(|p| match (&p[0].1, &p[1].1) {
        (Err(a), Err(b)) if resets => b < a,
        (Err(a), Err(b)) => a != b && !(a.is_nan() && b.is_nan()),
        (Ok(a), Ok(b)) if resets => Histogram::is_reset(a, b),
        (Ok(a), Ok(b)) => !crate::operand::same(a, b),
        _ => true,
    });
    counted.count() as f64
}

enum Change {
    Float(f64),
    Histogram(Histogram),
}

/// `irate` (`per_second`) or `idelta` of the last two samples of a window,
/// of either kind.
fn instant_change(per_second: bool, w: Samples<'_>, metric: &str, notes: &Notes) -> Option<Change> {
    // The last two samples, oldest first: `Err` a float, `Ok` a histogram.
    let mut last: Vec<(i64, std::result::Result<&Arc<Histogram>, f64>)> = Vec::with_capacity(4);
    let nf = w.ts.len();
    last.extend((nf.saturating_sub(2)..nf).map(|i| (w.ts[i], Err(w.vs[i]))));
    last.extend(w.hs[w.hs.len().saturating_sub(2)..].iter().map(|h| (h.t, Ok(&h.h))));
    if last.len() < 2 {
        return None;
    }
    last.sort_by_key(|p| p.0);
    let (prev, cur) = (&last[last.len() - 2], &last[last.len() - 1]);
    let dt = cur.0 - prev.0;
    if dt == 0 {
        return None;
    }
    let secs = dt as f64 / 1000.0;
    match (&prev.1, &cur.1) {
        (Err(a), Err(b)) => {
            let mut r = if per_second && b < a { *b } else { b - a };
            if per_second {
                r /= secs;
            }
            Some(Change::Float(r))
        }
        (Ok(a), Ok(b)) => {
            let gauge = |h: &Histogram| h.reset_hint == ResetHint::Gauge;
            if per_second && (gauge(a) || gauge(b)) {
                notes.add(annotations::not_a_counter(metric));
            }
            if !per_second && (!gauge(a) || !gauge(b)) {
                notes.add(annotations::not_a_gauge(metric));
            }
            let mut r = (***b).clone();
            let subtract = !per_second || !Histogram::is_reset(a, b);
            if subtract && annotations::custom_bounds_differ(a, b) {
                notes.add(annotations::mismatched_custom_buckets("subtraction"));
            }
            if subtract && r.sub(a).is_err() {
                notes.add(annotations::mixed_exponential_custom(metric));
                return None;
            }
            r.reset_hint = ResetHint::Gauge;
            if per_second {
                r.scale(1.0 / secs);
            }
            Some(Change::Histogram(r))
        }
        _ => {
            notes.add(annotations::mixed_floats_histograms(metric));
            None
        }
    }
}

/// The sum of a window's histograms, or `None` (with a warning) when
/// custom and exponential buckets meet.
fn sum(hs: &[HistogramSample], metric: &str, notes: &Notes) -> Option<Histogram> {
    let mut total = (*hs[0].h).clone();
    for h in &hs[1..] {
        if annotations::custom_bounds_differ(&total, &h.h) {
            notes.add(annotations::mismatched_custom_buckets("aggregation"));
        }
        if total.add(&h.h).is_err() {
            notes.add(annotations::mixed_exponential_custom(metric));
            return None;
        }
    }
    (total.sum, total.count) = crate::histogram_stats::compensated_totals(hs.iter().map(|h| &*h.h));
    if ResetHint::conflict_among(hs.iter().map(|h| h.h.reset_hint)) {
        notes.add(annotations::counter_reset_collision("aggregation"));
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations::Note;

    fn h(count: f64) -> HistogramSample {
        HistogramSample::new(
            0,
            Histogram {
                count,
                sum: count,
                positive: vec![(0, count)],
                ..Histogram::default()
            },
        )
    }

    fn at(t: i64, count: f64) -> HistogramSample {
        HistogramSample { t, ..h(count) }
    }

    const ONE_STEP: Ctx = Ctx {
        start: 20_000,
        end: 20_000,
        step: 0,
    };
    const WINDOW: RangeArg = RangeArg {
        range: 30_000,
        offset: 0,
        at: None,
        extended: None,
    };

    #[test]
    fn irate_of_histograms_takes_the_last_two() {
        let hs = [at(0, 1.0), at(10_000, 3.0), at(20_000, 6.0)];
        let notes = Notes::default();
        let (pts, out) = points(
            RangeFn::Irate,
            &[],
            Samples::default().with_histograms(&hs),
            ONE_STEP,
            WINDOW,
            "m",
            &notes,
        )
        .unwrap();
        assert!(pts.is_empty());
        assert_eq!(out.len(), 1);
        assert!((out[0].1.count - 0.3).abs() < 1e-12);
        assert_eq!(out[0].1.reset_hint, ResetHint::Gauge);
        assert!(notes.into_inner().is_empty());
    }

    #[test]
    fn a_window_of_both_kinds_has_no_sum_and_warns() {
        let hs = [at(10_000, 3.0)];
        let (ts, vs) = ([20_000], [1.0]);
        let notes = Notes::default();
        let s = Samples::new(&ts, &vs).with_histograms(&hs);
        let (pts, out) = points(RangeFn::SumOverTime, &[], s, ONE_STEP, WINDOW, "m", &notes).unwrap();
        assert!(pts.is_empty() && out.is_empty());
        assert_eq!(
            notes.into_inner(),
            [Note::Warning(
                "PromQL warning: encountered a mix of histograms and floats for metric name \"m\"".into()
            )]
        );
        // Counting takes both kinds.
        let (pts, _) = points(RangeFn::CountOverTime, &[], s, ONE_STEP, WINDOW, "m", &Notes::default()).unwrap();
        assert_eq!(pts, [(20_000, 2.0)]);
    }

    #[test]
    fn rate_of_a_gauge_histogram_warns() {
        let mut hs = vec![at(0, 1.0), at(10_000, 3.0), at(20_000, 6.0)];
        let mut g = (*hs[1].h).clone();
        g.reset_hint = ResetHint::Gauge;
        hs[1].h = Arc::new(g);
        let notes = Notes::default();
        let (_, out) = points(
            RangeFn::Increase,
            &[],
            Samples::default().with_histograms(&hs),
            ONE_STEP,
            WINDOW,
            "m",
            &notes,
        )
        .unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(
            notes.into_inner(),
            [Note::Warning(
                "PromQL warning: this native histogram metric is not a counter: \"m\"".into()
            )]
        );
    }
}
