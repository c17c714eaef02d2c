//! Functions and aggregations.

use foldhash::{HashMap, HashMapExt};

use cairn_model::{Labels, METRIC_NAME};

use crate::QueryError;
use crate::eval::{
    Ctx, Ev, OutAcc, RangeArg, Result, Series, StepIter, Val, go_max, go_min, kahan_inc, labels_from, quantile,
};
use crate::func::{ClampFn, Func, RangeFn};
use crate::ops::AggOp;
use crate::plan::{Call, Grouping, Node};
use crate::samples::Samples;

fn arg_str(ev: &mut Ev, e: &Node, c: Ctx) -> Result<String> {
    match ev.eval(e, c)? {
        Val::Str(s) => Ok(s),
        v => Err(QueryError::BadData(format!("expected string, got {}", v.kind()))),
    }
}

fn scalar_series(c: Ctx, f: impl Fn(i64) -> f64) -> Vec<f64> {
    (0..c.n()).map(|i| f(c.ts(i))).collect()
}

pub(crate) fn call(ev: &mut Ev, call: &Call, c: Ctx) -> Result<Val> {
    let args = &call.args;
    let arg = |i: usize| -> Result<&Node> {
        args.get(i)
            .ok_or_else(|| QueryError::BadData(format!("missing argument {i} of {}", call.name)))
    };
    match call.func {
        Func::Time => Ok(Val::Scalar(scalar_series(c, |t| t as f64 / 1000.0))),
        Func::Start => Ok(Val::Scalar(vec![ev.qstart as f64 / 1000.0; c.n()])),
        Func::End => Ok(Val::Scalar(vec![ev.qend as f64 / 1000.0; c.n()])),
        Func::Pi => Ok(Val::Scalar(vec![std::f64::consts::PI; c.n()])),
        Func::Vector => {
            let s = ev.eval_scalar(arg(0)?, c)?;
            let pts = s.iter().enumerate().map(|(i, &v)| (c.ts(i), v)).collect();
            Ok(Val::Vector(vec![Series {
                labels: Labels::empty(),
                drop_name: false,
                pts,
            }]))
        }
        Func::Scalar => {
            let v = ev.eval_vector(arg(0)?, c)?;
            let mut count = vec![0usize; c.n()];
            let mut val = vec![f64::NAN; c.n()];
            for s in &v {
                for &(t, x) in &s.pts {
                    let i = c.idx(t);
                    count[i] += 1;
                    val[i] = x;
                }
            }
            Ok(Val::Scalar(
                count
                    .iter()
                    .zip(val)
                    .map(|(&n, v)| if n == 1 { v } else { f64::NAN })
                    .collect(),
            ))
        }
        Func::Range(f) => {
            let mut scalars = Vec::with_capacity(f.scalar_args());
            for (i, a) in args.iter().enumerate().filter(|&(i, _)| i != f.range_arg()) {
                let s = ev.eval_scalar(a, c)?;
                if f == RangeFn::QuantileOverTime && i == 0 {
                    quantile_warning(ev, &s);
                }
                scalars.push(s);
            }
            range_fn(ev, f, arg(f.range_arg())?, scalars, c)
        }
        Func::AbsentOverTime => {
            let n = c.n();
            // Each series reports the steps it has a sample for, as points.
            let (present_by_series, _) = ev.range_series(arg(0)?, c, None, false, &|labels, _, samples, ra| {
                let mut pts = Vec::new();
                for i in 0..n {
                    let (ws, we) = ra.window(c.ts(i));
                    if !samples.window(ws, we).is_empty() {
                        pts.push((c.ts(i), 1.0));
                    }
                }
                Ok((!pts.is_empty()).then_some(Series {
                    labels,
                    drop_name: false,
                    pts,
                }))
            })?;
            let mut present = vec![false; n];
            for s in &present_by_series {
                for &(t, _) in &s.pts {
                    present[c.idx(t)] = true;
                }
            }
            Ok(absent_result(&call.absent_labels, &present, c))
        }
        Func::Absent => {
            let v = ev.eval_vector(arg(0)?, c)?;
            let mut present = vec![false; c.n()];
            for s in &v {
                for &(t, _) in &s.pts {
                    present[c.idx(t)] = true;
                }
            }
            Ok(absent_result(&call.absent_labels, &present, c))
        }
        Func::Timestamp => {
            let mut v = match arg(0)? {
                Node::Vector(sel) => match ev.eval_vector_selector(sel, c, true)? {
                    Val::Vector(v) => v,
                    _ => Vec::new(),
                },
                e => {
                    let mut v = ev.eval_vector(e, c)?;
                    for s in &mut v {
                        s.pts.iter_mut().for_each(|p| p.1 = p.0 as f64 / 1000.0);
                    }
                    v
                }
            };
            v.iter_mut().for_each(|s| s.drop_name = true);
            Ok(Val::Vector(v))
        }
        Func::LabelReplace => {
            let mut v = ev.eval_vector(arg(0)?, c)?;
            let dst = arg_str(ev, arg(1)?, c)?;
            let repl = arg_str(ev, arg(2)?, c)?;
            let src = arg_str(ev, arg(3)?, c)?;
            let re = arg_str(ev, arg(4)?, c)?;
            let re = regex::Regex::new(&format!("^(?s:{re})$")).map_err(|e| {
                QueryError::Execution(format!("invalid regular expression in label_replace(): {re}: {e}"))
            })?;
            if dst.is_empty() || dst.contains('\u{fffd}') {
                return Err(QueryError::Execution(format!(
                    "invalid destination label name in label_replace(): {dst}"
                )));
            }
            for s in &mut v {
                let sv = s.labels.get(&src).unwrap_or("").to_string();
                if let Some(caps) = re.captures(&sv) {
                    let mut out = String::new();
                    caps.expand(&repl, &mut out);
                    s.labels.set(&dst, &out);
                    if dst == METRIC_NAME {
                        s.drop_name = false;
                    }
                }
            }
            Ok(Val::Vector(v))
        }
        Func::LabelJoin => {
            let mut v = ev.eval_vector(arg(0)?, c)?;
            let dst = arg_str(ev, arg(1)?, c)?;
            let sep = arg_str(ev, arg(2)?, c)?;
            let mut srcs = Vec::new();
            for a in &args[3..] {
                srcs.push(arg_str(ev, a, c)?);
            }
            if dst.is_empty() || dst.contains('\u{fffd}') {
                return Err(QueryError::Execution(format!(
                    "invalid destination label name in label_join(): {dst}"
                )));
            }
            for s in &mut v {
                let joined: Vec<&str> = srcs.iter().map(|n| s.labels.get(n).unwrap_or("")).collect();
                let joined = joined.join(&sep);
                s.labels.set(&dst, &joined);
                if dst == METRIC_NAME {
                    s.drop_name = false;
                }
            }
            Ok(Val::Vector(v))
        }
        Func::Sort { desc } => {
            let mut v = ev.eval_vector(arg(0)?, c)?;
            ev.sort_warning();
            if c.n() == 1 {
                let key = |s: &Series| s.pts.first().map(|p| p.1).unwrap_or(f64::NAN);
                v.sort_by(|a, b| {
                    let (x, y) = (key(a), key(b));
                    match (x.is_nan(), y.is_nan()) {
                        (true, true) => std::cmp::Ordering::Equal,
                        (true, false) => std::cmp::Ordering::Greater,
                        (false, true) => std::cmp::Ordering::Less,
                        _ if desc => y.partial_cmp(&x).unwrap_or(std::cmp::Ordering::Equal),
                        _ => x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal),
                    }
                });
            }
            Ok(Val::Vector(v))
        }
        Func::SortByLabel { desc } => {
            let mut v = ev.eval_vector(arg(0)?, c)?;
            ev.sort_warning();
            let mut names = Vec::new();
            for a in &args[1..] {
                names.push(arg_str(ev, a, c)?);
            }
            v.sort_by(|a, b| {
                for n in &names {
                    let (x, y) = (a.labels.get(n).unwrap_or(""), b.labels.get(n).unwrap_or(""));
                    if x != y {
                        let o = natural_cmp(x, y);
                        return if desc { o.reverse() } else { o };
                    }
                }
                let o = a.labels.cmp(&b.labels);
                if desc { o.reverse() } else { o }
            });
            Ok(Val::Vector(v))
        }
        Func::HistogramQuantile => histogram_quantile(ev, arg(0)?, arg(1)?, c),
        Func::Clamp(clamp) => {
            let mut v = ev.eval_vector(arg(0)?, c)?;
            let a1 = match args.get(1) {
                Some(e) => ev.eval_scalar(e, c)?,
                None => vec![1.0; c.n()],
            };
            let a2 = match args.get(2) {
                Some(e) => ev.eval_scalar(e, c)?,
                None => Vec::new(),
            };
            for s in &mut v {
                s.drop_name = true;
                s.pts.retain_mut(|p| {
                    let i = c.idx(p.0);
                    match clamp {
                        ClampFn::Clamp => {
                            let (lo, hi) = (a1[i], a2[i]);
                            if hi < lo {
                                return false;
                            }
                            p.1 = go_max(lo, go_min(hi, p.1));
                        }
                        ClampFn::Min => p.1 = go_max(a1[i], p.1),
                        ClampFn::Max => p.1 = go_min(a1[i], p.1),
                        ClampFn::Round => {
                            let inv = 1.0 / a1[i];
                            p.1 = (p.1 * inv + 0.5).floor() / inv;
                        }
                    }
                    true
                });
            }
            v.retain(|s| !s.pts.is_empty());
            Ok(Val::Vector(v))
        }
        Func::Calendar(field) => {
            let mut v = match args.first() {
                Some(e) => ev.eval_vector(e, c)?,
                None => vec![Series {
                    labels: Labels::empty(),
                    drop_name: false,
                    pts: (0..c.n()).map(|i| (c.ts(i), c.ts(i) as f64 / 1000.0)).collect(),
                }],
            };
            for s in &mut v {
                s.drop_name = true;
                for p in &mut s.pts {
                    p.1 = field.of_time(p.1);
                }
            }
            Ok(Val::Vector(v))
        }
        Func::Math(m) => {
            let mut v = ev.eval_vector(arg(0)?, c)?;
            let f = m.kernel();
            for s in &mut v {
                s.drop_name = true;
                s.pts.iter_mut().for_each(|p| p.1 = f(p.1));
            }
            Ok(Val::Vector(v))
        }
    }
}

/// Prometheus' warning for a quantile outside [0, 1] at some step.
fn quantile_warning(ev: &mut Ev, q: &[f64]) {
    if let Some(bad) = q.iter().find(|q| !(0.0..=1.0).contains(*q)) {
        ev.warnings.push(format!(
            "PromQL warning: quantile value should be between 0 and 1, got {}",
            fmt_go(*bad)
        ));
    }
}

fn absent_result(labels: &Labels, present: &[bool], c: Ctx) -> Val {
    let pts: Vec<(i64, f64)> = present
        .iter()
        .enumerate()
        .filter(|(_, p)| !**p)
        .map(|(i, _)| (c.ts(i), 1.0))
        .collect();
    if pts.is_empty() {
        return Val::Vector(Vec::new());
    }
    Val::Vector(vec![Series {
        labels: labels.clone(),
        drop_name: false,
        pts,
    }])
}

/// Go's `strconv.FormatFloat(v, 'f', -1, 64)`.
pub(crate) fn fmt_go(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        cairn_model::go_float::shortest_plain(v)
    }
}

fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (ab, bb) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < ab.len() && j < bb.len() {
        if ab[i].is_ascii_digit() && bb[j].is_ascii_digit() {
            let si = i;
            while i < ab.len() && ab[i].is_ascii_digit() {
                i += 1;
            }
            let sj = j;
            while j < bb.len() && bb[j].is_ascii_digit() {
                j += 1;
            }
            let na = a[si..i].trim_start_matches('0');
            let nb = b[sj..j].trim_start_matches('0');
            let o = na.len().cmp(&nb.len()).then_with(|| na.cmp(nb));
            if o != std::cmp::Ordering::Equal {
                return o;
            }
        } else {
            if ab[i] != bb[j] {
                return ab[i].cmp(&bb[j]);
            }
            i += 1;
            j += 1;
        }
    }
    (ab.len() - i).cmp(&(bb.len() - j))
}

fn range_fn(ev: &mut Ev, f: RangeFn, m: &Node, scalars: Vec<Vec<f64>>, c: Ctx) -> Result<Val> {
    let n = c.n();
    let (out, _) = ev.range_series(m, c, Some(f.name()), true, &|labels, drop_name, samples, ra| {
        // At most one point per step, and dense series fill most steps.
        let mut pts = Vec::with_capacity(n.min(samples.len()));
        range_points(f, &scalars, samples, c, ra, &mut pts)?;
        Ok((!pts.is_empty()).then_some(Series {
            labels,
            drop_name: if f.keeps_name() { drop_name } else { true },
            pts,
        }))
    })?;
    for s in &out {
        if let Some(info) = s.labels.metric_name().and_then(|mn| counter_info(f, mn)) {
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
    if let Some(x) = f.extrapolation() {
        // Counter resets are rare: a series without any skips looking
        // for them window by window.
        let may_reset = samples.has_decrease();
        crate::window_index::with_windows(samples.ts, c, ra, |w| {
            crate::rate::evaluate(x, ra.range, w.geometry(samples.ts), samples.vs, may_reset, pts);
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

/// Prometheus' info that `rate`/`increase` was given a series named
/// `metric`, which does not look like a counter's (for a series with a
/// result), if `f` needs one.
pub(crate) fn counter_info(f: RangeFn, metric: &str) -> Option<String> {
    (f.expects_counter()
        && !["_total", "_sum", "_count", "_bucket"]
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

fn histogram_quantile(ev: &mut Ev, qe: &Node, ve: &Node, c: Ctx) -> Result<Val> {
    let q = ev.eval_scalar(qe, c)?;
    let v = ev.eval_vector(ve, c)?;
    // Group series by labels without `le`.
    let mut gidx: HashMap<Labels, usize> = HashMap::new();
    let mut groups: Vec<Labels> = Vec::new();
    let mut info: Vec<Option<(usize, f64)>> = Vec::with_capacity(v.len());
    for s in &v {
        let le = s.labels.get("le").and_then(|x| x.trim().parse::<f64>().ok());
        match le {
            Some(le) => {
                let mut key = s.labels.clone();
                key.remove("le");
                let g = *gidx.entry(key.clone()).or_insert_with(|| {
                    groups.push(key);
                    groups.len() - 1
                });
                info.push(Some((g, le)));
            }
            None => {
                let name = s.labels.metric_name().unwrap_or("");
                ev.warnings.push(format!(
                    "PromQL warning: bucket label \"le\" is missing or has a malformed value of \"{}\" for metric name \"{name}\"",
                    s.labels.get("le").unwrap_or("")
                ));
                info.push(None);
            }
        }
    }
    let mut buckets: Vec<Vec<(f64, f64)>> = vec![Vec::new(); groups.len()];
    let mut acc = OutAcc::new();
    let mut it = StepIter::new(&v, c);
    for i in 0..c.n() {
        let t = c.ts(i);
        buckets.iter_mut().for_each(Vec::clear);
        it.at(&v, t, |j, x| {
            if let Some((g, le)) = info[j] {
                buckets[g].push((le, x));
            }
        });
        let qv = q[i];
        if !(0.0..=1.0).contains(&qv) {
            ev.warnings.push(format!(
                "PromQL warning: quantile value should be between 0 and 1, got {}",
                fmt_go(qv)
            ));
        }
        for (g, b) in buckets.iter_mut().enumerate() {
            if b.is_empty() {
                continue;
            }
            let (r, forced) = bucket_quantile(qv, b);
            if forced {
                ev.infos.push(format!(
                    "PromQL info: input to histogram_quantile needed to be fixed for monotonicity (see https://prometheus.io/docs/prometheus/latest/querying/functions/#histogram_quantile) for metric name \"{}\"",
                    groups[g].metric_name().unwrap_or("")
                ));
            }
            acc.push(groups[g].clone(), true, t, r)?;
        }
    }
    Ok(Val::Vector(acc.series))
}

fn almost_equal(a: f64, b: f64, eps: f64) -> bool {
    const MIN_NORMAL: f64 = f64::MIN_POSITIVE;
    if a == b {
        return true;
    }
    let abs_sum = a.abs() + b.abs();
    let diff = (a - b).abs();
    if a == 0.0 || b == 0.0 || abs_sum < MIN_NORMAL {
        return diff < eps * MIN_NORMAL;
    }
    diff / abs_sum.min(f64::MAX) < eps
}

fn bucket_quantile(q: f64, b: &mut [(f64, f64)]) -> (f64, bool) {
    if q.is_nan() {
        return (f64::NAN, false);
    }
    if q < 0.0 {
        return (f64::NEG_INFINITY, false);
    }
    if q > 1.0 {
        return (f64::INFINITY, false);
    }
    b.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
    if b.last().is_none_or(|l| l.0 != f64::INFINITY) {
        return (f64::NAN, false);
    }
    // Coalesce equal upper bounds.
    let mut merged: Vec<(f64, f64)> = Vec::with_capacity(b.len());
    for &(le, c) in b.iter() {
        match merged.last_mut() {
            Some(last) if last.0 == le => last.1 += c,
            _ => merged.push((le, c)),
        }
    }
    let b = &mut merged;
    let mut forced = false;
    let mut prev = b[0].1;
    for i in 1..b.len() {
        let curr = b[i].1;
        if curr == prev {
            continue;
        }
        if almost_equal(prev, curr, 1e-12) {
            b[i].1 = prev;
            continue;
        }
        if curr < prev {
            b[i].1 = prev;
            forced = true;
            continue;
        }
        prev = curr;
    }
    if b.len() < 2 {
        return (f64::NAN, forced);
    }
    let obs = b[b.len() - 1].1;
    if obs == 0.0 {
        return (f64::NAN, forced);
    }
    let mut rank = q * obs;
    let idx = b[..b.len() - 1].partition_point(|x| x.1 < rank);
    if idx == b.len() - 1 {
        return (b[b.len() - 2].0, forced);
    }
    if idx == 0 && b[0].0 <= 0.0 {
        return (b[0].0, forced);
    }
    let mut start = 0.0;
    let end = b[idx].0;
    let mut count = b[idx].1;
    if idx > 0 {
        start = b[idx - 1].0;
        count -= b[idx - 1].1;
        rank -= b[idx - 1].1;
    }
    (start + (end - start) * (rank / count), forced)
}

// ------------------------------------------------------------ aggregation

fn labels_hash(l: &Labels) -> u64 {
    let mut b = Vec::with_capacity(256);
    for lab in l.iter() {
        b.extend_from_slice(lab.name.as_bytes());
        b.push(0xff);
        b.extend_from_slice(lab.value.as_bytes());
        b.push(0xff);
    }
    xxhash_rust::xxh64::xxh64(&b, 0)
}

/// Go's container/heap over indices with a `less` function.
fn heap_up(h: &mut [(usize, f64)], mut j: usize, less: &dyn Fn(f64, f64) -> bool) {
    while j > 0 {
        let i = (j - 1) / 2;
        if !less(h[j].1, h[i].1) {
            break;
        }
        h.swap(i, j);
        j = i;
    }
}

fn heap_down(h: &mut [(usize, f64)], i0: usize, less: &dyn Fn(f64, f64) -> bool) -> bool {
    let n = h.len();
    let mut i = i0;
    loop {
        let j1 = 2 * i + 1;
        if j1 >= n {
            break;
        }
        let mut j = j1;
        if j1 + 1 < n && less(h[j1 + 1].1, h[j1].1) {
            j = j1 + 1;
        }
        if !less(h[j].1, h[i].1) {
            break;
        }
        h.swap(i, j);
        i = j;
    }
    i > i0
}

/// The labels of `l`'s group: `names` only, or all but `names` and
/// `__name__` when `without`.
pub(crate) fn group_labels(l: &Labels, without: bool, names: &[String]) -> Labels {
    labels_from(
        l.iter()
            .filter(|lab| {
                let listed = names.iter().any(|n| *n == lab.name);
                if without {
                    !listed && lab.name != METRIC_NAME
                } else {
                    listed
                }
            })
            .cloned()
            .collect(),
    )
}

pub(crate) fn aggregate(
    ev: &mut Ev,
    op: AggOp,
    grouping: &Grouping,
    param: Option<Val>,
    input: Vec<Series>,
    threads: usize,
    c: Ctx,
) -> Result<Val> {
    let group_labels = |l: &Labels| group_labels(l, grouping.without, &grouping.names);
    let mut gidx: HashMap<Labels, usize> = HashMap::new();
    let mut groups: Vec<Labels> = Vec::new();
    let mut gdrop: Vec<bool> = Vec::new();
    let mut sgroup: Vec<usize> = Vec::with_capacity(input.len());
    for s in &input {
        let gl = group_labels(&s.labels);
        let g = match gidx.get(&gl) {
            Some(&g) => g,
            None => {
                gidx.insert(gl.clone(), groups.len());
                groups.push(gl);
                gdrop.push(false);
                groups.len() - 1
            }
        };
        gdrop[g] |= s.drop_name;
        sgroup.push(g);
    }
    let n = c.n();
    let mut cur: Vec<(usize, f64)> = Vec::new();

    let scalar_param = match &param {
        Some(Val::Scalar(s)) => Some(s.clone()),
        _ => None,
    };

    match op {
        AggOp::CountValues => {
            let label = match &param {
                Some(Val::Str(s)) => s.clone(),
                _ => return Err(QueryError::BadData("count_values needs a string parameter".into())),
            };
            if label.is_empty() {
                return Err(QueryError::Execution(format!("invalid label name {label:?}")));
            }
            let mut acc = OutAcc::new();
            let mut it = StepIter::new(&input, c);
            for i in 0..n {
                let t = c.ts(i);
                cur.clear();
                it.at(&input, t, |j, v| cur.push((j, v)));
                let mut counts: Vec<(Labels, f64)> = Vec::new();
                let mut idx: HashMap<Labels, usize> = HashMap::new();
                for &(j, v) in &cur {
                    let mut l = groups[sgroup[j]].clone();
                    l.set(&label, &fmt_go(v));
                    match idx.get(&l) {
                        Some(&k) => counts[k].1 += 1.0,
                        None => {
                            idx.insert(l.clone(), counts.len());
                            counts.push((l, 1.0));
                        }
                    }
                }
                for (l, cnt) in counts {
                    acc.push(l, false, t, cnt)?;
                }
            }
            Ok(Val::Vector(acc.series))
        }
        AggOp::Topk | AggOp::Bottomk | AggOp::Limitk | AggOp::LimitRatio => {
            let p =
                scalar_param.ok_or_else(|| QueryError::BadData(format!("{} needs a scalar parameter", op.name())))?;
            let mut out: Vec<Series> = Vec::new();
            let mut out_idx: Vec<Option<usize>> = vec![None; input.len()];
            let mut heaps: Vec<Vec<(usize, f64)>> = vec![Vec::new(); groups.len()];
            let top_less = |a: f64, b: f64| a.is_nan() || a < b;
            let bottom_less = |a: f64, b: f64| a.is_nan() || a > b;
            let mut it = StepIter::new(&input, c);
            for i in 0..n {
                let t = c.ts(i);
                let pv = p[i];
                let mut k = 0usize;
                let mut ratio = 0.0;
                if op == AggOp::LimitRatio {
                    if pv.is_nan() {
                        return Err(QueryError::Execution("Ratio value is NaN".into()));
                    }
                    ratio = pv;
                    if !(-1.0..=1.0).contains(&pv) {
                        ratio = pv.clamp(-1.0, 1.0);
                        ev.warnings.push(format!(
                            "PromQL warning: ratio value should be between -1 and 1, got {}, capping to {}",
                            fmt_go(pv),
                            fmt_go(ratio)
                        ));
                    }
                    if ratio == 0.0 {
                        continue;
                    }
                } else {
                    if pv.is_nan() {
                        return Err(QueryError::Execution("Parameter value is NaN".to_string()));
                    }
                    if !(-9.223372036854776e18..9.223372036854776e18).contains(&pv) {
                        return Err(QueryError::Execution(format!(
                            "Scalar value {} overflows int64",
                            fmt_go(pv)
                        )));
                    }
                    let kk = pv as i64;
                    if kk < 1 {
                        continue;
                    }
                    k = (kk as usize).min(input.len());
                }
                cur.clear();
                it.at(&input, t, |j, v| cur.push((j, v)));
                heaps.iter_mut().for_each(Vec::clear);
                let mut order: Vec<usize> = Vec::new();
                for &(j, v) in &cur {
                    let g = sgroup[j];
                    let h = &mut heaps[g];
                    if h.is_empty() {
                        order.push(g);
                    }
                    match op {
                        AggOp::Topk | AggOp::Bottomk => {
                            let less: &dyn Fn(f64, f64) -> bool =
                                if op == AggOp::Topk { &top_less } else { &bottom_less };
                            if h.len() < k {
                                h.push((j, v));
                                let last = h.len() - 1;
                                heap_up(h, last, less);
                            } else {
                                let replace = if op == AggOp::Topk {
                                    h[0].1 < v || (h[0].1.is_nan() && !v.is_nan())
                                } else {
                                    h[0].1 > v || (h[0].1.is_nan() && !v.is_nan())
                                };
                                if replace {
                                    h[0] = (j, v);
                                    if k > 1 && !heap_down(h, 0, less) {
                                        heap_up(h, 0, less);
                                    }
                                }
                            }
                        }
                        AggOp::Limitk => {
                            if h.len() < k {
                                h.push((j, v));
                            }
                        }
                        _ => {
                            let off = labels_hash(&input[j].labels) as f64 / u64::MAX as f64;
                            if (ratio >= 0.0 && off < ratio) || (ratio < 0.0 && off >= 1.0 + ratio) {
                                h.push((j, v));
                            }
                        }
                    }
                }
                // Groups in order of first appearance, like Prometheus.
                let mut gorder: Vec<usize> = order;
                gorder.sort_unstable();
                gorder.dedup();
                for g in gorder {
                    let h = &mut heaps[g];
                    if matches!(op, AggOp::Topk | AggOp::Bottomk) {
                        let less: &dyn Fn(f64, f64) -> bool = if op == AggOp::Topk { &top_less } else { &bottom_less };
                        // sort.Sort(sort.Reverse(heap)) as insertion sort.
                        for a in 1..h.len() {
                            let mut b = a;
                            while b > 0 && less(h[b - 1].1, h[b].1) {
                                h.swap(b, b - 1);
                                b -= 1;
                            }
                        }
                    }
                    for &(j, v) in h.iter() {
                        let oi = match out_idx[j] {
                            Some(oi) => oi,
                            None => {
                                out.push(Series {
                                    labels: input[j].labels.clone(),
                                    drop_name: input[j].drop_name,
                                    pts: Vec::new(),
                                });
                                out_idx[j] = Some(out.len() - 1);
                                out.len() - 1
                            }
                        };
                        out[oi].pts.push((t, v));
                    }
                }
            }
            Ok(Val::Vector(out))
        }
        _ => {
            debug_assert!(op.accumulates());
            if op == AggOp::Quantile
                && let Some(p) = &scalar_param
            {
                quantile_warning(ev, p);
            }
            let out: Vec<Series> = groups
                .iter()
                .zip(&gdrop)
                .map(|(l, &d)| Series {
                    labels: l.clone(),
                    drop_name: d,
                    pts: Vec::new(),
                })
                .collect();
            let out = {
                let budget = ev.budget();
                crate::aggregate::simple(&budget, threads, op, &input, &sgroup, out, scalar_param.as_deref(), c)?
            };
            ev.add_samples(out.iter().map(|s| s.pts.len()).sum())?;
            Ok(Val::Vector(out))
        }
    }
}
