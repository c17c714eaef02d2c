//! Functions of a range vector (`rate`, `*_over_time`, `deriv`, ...),
//! evaluated window by window over each series' samples as it is read.

use cairn_model::{Labels, METRIC_TYPE};

use super::{arg, quantile_warning};
use crate::QueryError;
use crate::annotations::Notes;
use crate::eval::{Ev, Result};
use crate::func::RangeFn;
use crate::kind::Kind;
use crate::math::{kahan_inc, quantile};
use crate::plan::{Call, Node};
use crate::samples::Samples;
use crate::series::{Series, Val};
use crate::steps::{Ctx, RangeArg};

pub(super) fn call(ev: &mut Ev, call: &Call, f: RangeFn, c: Ctx) -> Result<Val> {
    let mut scalars = Vec::with_capacity(f.scalar_args());
    let scalar_args = call.args.iter().enumerate().filter(|&(i, _)| i != f.range_arg());
    for (_, a) in scalar_args {
        scalars.push(ev.eval_scalar(a, c)?);
    }
    // φ, its only scalar argument, is judged only at steps where a window
    // holds floats (as Prometheus, which warns from each window's
    // evaluation): a bad φ over nothing is no warning.
    let phi = (f == RangeFn::QuantileOverTime)
        .then(|| scalars.first().cloned())
        .flatten();
    let v = range_fn(ev, f, arg(call, f.range_arg())?, scalars, c)?;
    if let (Some(phi), Val::Vector(out)) = (phi, &v) {
        let used: std::collections::HashSet<i64> = out.iter().flat_map(|s| s.pts.iter().map(|p| p.0)).collect();
        let at_used: Vec<f64> = (0..c.n())
            .filter(|&i| used.contains(&c.ts(i)))
            .filter_map(|i| phi.get(i).copied())
            .collect();
        quantile_warning(ev, &at_used);
    }
    Ok(v)
}

fn range_fn(ev: &mut Ev, f: RangeFn, m: &Node, scalars: Vec<Vec<f64>>, c: Ctx) -> Result<Val> {
    let n = c.n();
    let notes = Notes::default();
    let (out, _) = ev.range_series(m, c, Some(f.name()), true, &|labels, drop_name, samples, ra| {
        let drop_name = if f.keeps_name() { drop_name } else { true };
        if let Some(ext) = ra.extended {
            let metric = labels.metric_name().unwrap_or("");
            let (pts, hs) = crate::extended::points(f, samples, c, ra, ext, metric, &notes)?;
            return Ok((!pts.is_empty() || !hs.is_empty()).then_some(Series {
                labels,
                drop_name,
                pts,
                hs,
            }));
        }
        if !samples.hs.is_empty() {
            let metric = labels.metric_name().unwrap_or("");
            let (pts, hs) = super::range_histogram::points(f, &scalars, samples, c, ra, metric, &notes)?;
            return Ok((!pts.is_empty() || !hs.is_empty()).then_some(Series {
                labels,
                drop_name,
                pts,
                hs,
            }));
        }
        // At most one point per step, and dense series fill most steps.
        let mut pts = Vec::with_capacity(n.min(samples.len()));
        range_points(f, &scalars, samples, c, ra, &mut pts)?;
        Ok((!pts.is_empty()).then_some(Series::floats(labels, drop_name, pts)))
    })?;
    ev.take_notes(notes);
    for s in out.iter().filter(|s| !s.pts.is_empty()) {
        if let Some(info) = counter_info(f, &s.labels, ev.type_and_unit_labels) {
            ev.infos.push(info);
        }
    }
    Ok(Val::Vector(out))
}

/// Appends range function `f`'s `(step time, value)` points over one
/// series' samples to `pts`; `scalars` are its scalar arguments per step.
pub(crate) fn range_points(
    f: RangeFn,
    scalars: &[Vec<f64>],
    samples: Samples<'_>,
    c: Ctx,
    ra: RangeArg,
    pts: &mut Vec<(i64, f64)>,
) -> Result<()> {
    if let Some(ext) = ra.extended {
        // Floats only: there is nothing to warn about.
        let (floats, _) = crate::extended::points(f, samples, c, ra, ext, "", &Default::default())?;
        pts.extend(floats);
        return Ok(());
    }
    if let Some(x) = f.extrapolation() {
        // Counter resets are rare: a series without any skips looking
        // for them window by window.
        let may_reset = f64::any_reset(samples.vs);
        crate::window_index::with_windows(samples.ts, c, ra, |w| {
            let Ok(()) = crate::rate::evaluate(x, ra.range, w.geometry(samples.ts), samples.vs, may_reset, pts);
        });
        return Ok(());
    }
    let mut step_args = vec![0.0; scalars.len()];
    let mut failed = None;
    for_each_window(samples, c, ra, |i, ts, _, _, w| {
        if failed.is_some() {
            return;
        }
        for (a, s) in step_args.iter_mut().zip(scalars) {
            *a = s[i];
        }
        match range_value(f, w, ts, &step_args) {
            Ok(Some(v)) => pts.push((ts, v)),
            Ok(None) => {}
            Err(e) => failed = Some(e),
        }
    });
    failed.map_or(Ok(()), Err)
}

/// Prometheus' info that `rate`/`increase` was given a named series which
/// does not look like a counter's (for a series with a result), if `f`
/// needs one: by its `__type__` label under type-and-unit labels
/// (`by_type`), else by its name's suffix.
pub(crate) fn counter_info(f: RangeFn, labels: &Labels, by_type: bool) -> Option<String> {
    let metric = labels.metric_name()?;
    if !f.expects_counter() {
        return None;
    }
    if by_type {
        let typ = labels.get(METRIC_TYPE).unwrap_or("");
        return (typ != "counter" && typ != "histogram").then(|| {
            format!(
                "PromQL info: metric might not be a counter, __type__ label is not set to \"counter\" or \"histogram\", got {typ:?}: {metric:?}"
            )
        });
    }
    (!["_total", "_sum", "_count", "_bucket"]
        .iter()
        .any(|x| metric.ends_with(x)))
    .then(|| {
        format!(
            "PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: {metric:?}"
        )
    })
}

/// Calls `f(step index, step time, window start, window end, samples)` for
/// every step whose window `(start, end]` holds at least one sample.
fn for_each_window(samples: Samples<'_>, c: Ctx, ra: RangeArg, mut f: impl FnMut(usize, i64, i64, i64, Samples<'_>)) {
    crate::window_index::for_each_span(samples.ts, c, ra, |i, lo, hi| {
        let ts = c.ts(i);
        let (ws, we) = ra.window(ts);
        f(i, ts, ws, we, samples.slice(lo, hi));
    });
}

fn range_value(f: RangeFn, w: Samples<'_>, ts: i64, args: &[f64]) -> Result<Option<f64>> {
    let n = w.len();
    let last = w.last();
    Ok(match f {
        RangeFn::Irate | RangeFn::Idelta => {
            if n < 2 {
                return Ok(None);
            }
            let prev = w.at(n - 2);
            let irate = f == RangeFn::Irate;
            let mut r = if irate && last.1 < prev.1 {
                last.1
            } else {
                last.1 - prev.1
            };
            if irate {
                let dt = last.0 - prev.0;
                if dt == 0 {
                    return Ok(None);
                }
                r /= dt as f64 / 1000.0;
            }
            Some(r)
        }
        RangeFn::Deriv => {
            if n < 2 {
                return Ok(None);
            }
            Some(linear_regression(w, w.ts[0]).0)
        }
        RangeFn::PredictLinear => {
            if n < 2 {
                return Ok(None);
            }
            let (slope, icpt) = linear_regression(w, ts);
            Some(icpt + slope * args[0])
        }
        RangeFn::Changes => {
            let mut c = 0.0;
            for p in w.vs.windows(2) {
                let (a, b) = (p[0], p[1]);
                if !(a == b || (a.is_nan() && b.is_nan())) {
                    c += 1.0;
                }
            }
            Some(c)
        }
        RangeFn::Resets => Some(w.vs.windows(2).filter(|p| p[1] < p[0]).count() as f64),
        RangeFn::AvgOverTime => {
            let (mut sum, mut count, mut mean, mut kc, mut incremental) = (w.vs[0], 1.0f64, 0.0f64, 0.0f64, false);
            for (i, &v) in w.vs[1..].iter().enumerate() {
                count = (i + 2) as f64;
                if !incremental {
                    let (ns, nc) = kahan_inc(v, sum, kc);
                    if !ns.is_infinite() {
                        sum = ns;
                        kc = nc;
                        continue;
                    }
                    incremental = true;
                    mean = sum / (count - 1.0);
                    kc /= count - 1.0;
                }
                let q = (count - 1.0) / count;
                let (m, c2) = kahan_inc(v / count, q * mean, q * kc);
                mean = m;
                kc = c2;
            }
            Some(if incremental {
                mean + kc
            } else {
                sum / count + kc / count
            })
        }
        RangeFn::SumOverTime => {
            let (mut s, mut c) = (0.0, 0.0);
            for &v in w.vs {
                (s, c) = kahan_inc(v, s, c);
            }
            Some(if s.is_infinite() { s } else { s + c })
        }
        RangeFn::CountOverTime => Some(n as f64),
        RangeFn::MinOverTime | RangeFn::MaxOverTime => {
            let max = f == RangeFn::MaxOverTime;
            let mut v = w.vs[0];
            for &x in &w.vs[1..] {
                let better = if max { x > v } else { x < v };
                if better || v.is_nan() {
                    v = x;
                }
            }
            Some(v)
        }
        RangeFn::TsOfMinOverTime | RangeFn::TsOfMaxOverTime => {
            let max = f == RangeFn::TsOfMaxOverTime;
            let (mut t, mut v) = w.first();
            for p in w.pairs().skip(1) {
                let better = if max { p.1 >= v } else { p.1 <= v };
                if better || v.is_nan() {
                    v = p.1;
                    t = p.0;
                }
            }
            Some(t as f64 / 1000.0)
        }
        RangeFn::LastOverTime => Some(last.1),
        RangeFn::FirstOverTime => Some(w.vs[0]),
        RangeFn::TsOfLastOverTime => Some(last.0 as f64 / 1000.0),
        RangeFn::TsOfFirstOverTime => Some(w.ts[0] as f64 / 1000.0),
        RangeFn::PresentOverTime => Some(1.0),
        RangeFn::StddevOverTime | RangeFn::StdvarOverTime => {
            let (mut count, mut mean, mut cmean, mut aux, mut caux) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for &v in w.vs {
                count += 1.0;
                let delta = v - (mean + cmean);
                (mean, cmean) = kahan_inc(delta / count, mean, cmean);
                (aux, caux) = kahan_inc(delta * (v - (mean + cmean)), aux, caux);
            }
            let var = (aux + caux) / count;
            Some(if f == RangeFn::StddevOverTime { var.sqrt() } else { var })
        }
        RangeFn::MadOverTime => {
            if w.vs.iter().any(|v| v.is_nan()) {
                return Ok(Some(f64::NAN));
            }
            let mut vals = w.vs.to_vec();
            let median = quantile(0.5, &mut vals);
            let mut dev: Vec<f64> = w.vs.iter().map(|v| (v - median).abs()).collect();
            Some(quantile(0.5, &mut dev))
        }
        RangeFn::QuantileOverTime => {
            let mut vals = w.vs.to_vec();
            Some(quantile(args[0], &mut vals))
        }
        RangeFn::DoubleExponentialSmoothing => {
            let (sf, tf) = (args[0], args[1]);
            if sf <= 0.0 || sf >= 1.0 {
                return Err(QueryError::Execution(format!(
                    "invalid smoothing factor. Expected: 0 < sf < 1, got: {sf:.6}"
                )));
            }
            if tf <= 0.0 || tf >= 1.0 {
                return Err(QueryError::Execution(format!(
                    "invalid trend factor. Expected: 0 < tf < 1, got: {tf:.6}"
                )));
            }
            if n < 2 {
                return Ok(None);
            }
            let (mut s0, mut s1) = (0.0, w.vs[0]);
            let mut b = w.vs[1] - w.vs[0];
            for (i, &v) in w.vs.iter().enumerate().skip(1) {
                let x = sf * v;
                if i > 1 {
                    b = tf * (s1 - s0) + (1.0 - tf) * b;
                }
                let y = (1.0 - sf) * (s1 + b);
                s0 = s1;
                s1 = x + y;
            }
            Some(s1)
        }
        // Evaluated for all windows at once (`rate.rs`).
        RangeFn::Rate | RangeFn::Increase | RangeFn::Delta => {
            return Err(QueryError::Internal(format!("{} evaluated window by window", f.name())));
        }
    })
}

fn linear_regression(w: Samples<'_>, intercept_t: i64) -> (f64, f64) {
    let (mut n, mut sx, mut cx, mut sy, mut cy, mut sxy, mut cxy, mut sx2, mut cx2) =
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    let init_y = w.vs[0];
    let mut const_y = true;
    for (i, p) in w.pairs().enumerate() {
        if const_y && i > 0 && p.1 != init_y {
            const_y = false;
        }
        n += 1.0;
        let x = (p.0 - intercept_t) as f64 / 1e3;
        (sx, cx) = kahan_inc(x, sx, cx);
        (sy, cy) = kahan_inc(p.1, sy, cy);
        (sxy, cxy) = kahan_inc(x * p.1, sxy, cxy);
        (sx2, cx2) = kahan_inc(x * x, sx2, cx2);
    }
    if const_y {
        if init_y.is_infinite() {
            return (f64::NAN, f64::NAN);
        }
        return (0.0, init_y);
    }
    sx += cx;
    sy += cy;
    sxy += cxy;
    sx2 += cx2;
    let cov = sxy - sx * sy / n;
    let var = sx2 - sx * sx / n;
    let slope = cov / var;
    (slope, sy / n - slope * sx / n)
}

#[cfg(test)]
mod tests {
    use cairn_model::{Labels, Sample};
    use cairn_storage::{Appendable, MemStorage};

    #[test]
    fn a_bad_quantile_warns_only_where_a_window_has_floats() {
        let s = MemStorage::new();
        let mut app = s.appender();
        // Samples every minute up to minute 10.
        let samples: Vec<Sample> = (0..=10).map(|i| Sample::new(i * 60_000, i as f64)).collect();
        app.append(&Labels::from_pairs([("__name__", "m")]), &samples).unwrap();
        app.commit().unwrap();
        let e = crate::Engine::new(crate::EngineOptions::default());
        let warned = |q: &str, t: i64| !e.instant(&s, q, t).unwrap().warnings.is_empty();
        for q in [
            "quantile_over_time(2, m[1m])",
            "quantile_over_time(NaN, m[1m])",
            "quantile_over_time(-1, m[1m])",
        ] {
            assert!(warned(q, 300_000), "{q}");
            // After the data: no window holds a sample, no warning.
            assert!(!warned(q, 3_600_000), "{q}");
            assert!(!warned(&q.replace("m[", "nothing["), 300_000), "{q}");
        }
        assert!(!warned("quantile_over_time(0.5, m[1m])", 300_000));
        // Over a range, only steps with data count: φ is bad only after the data.
        let r = e
            .range(
                &s,
                "quantile_over_time((time() > bool 1000) * 5, m[1m])",
                0,
                1_200_000,
                60_000,
            )
            .unwrap();
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    }
}
