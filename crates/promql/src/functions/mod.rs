//! Functions: the call dispatch here, each family in its own file.

mod absent;
mod elementwise;
mod histogram;
mod labels;
mod range;
pub(crate) mod range_histogram;
mod timestamp;

pub(crate) use range::{counter_info, range_points};

use cairn_model::Labels;

use crate::QueryError;
use crate::eval::{Ev, Result};
use crate::func::Func;
use crate::plan::{Call, Node};
use crate::series::{Series, Val};
use crate::steps::Ctx;

fn arg_str(ev: &mut Ev, e: &Node, c: Ctx) -> Result<String> {
    match ev.eval(e, c)? {
        Val::Str(s) => Ok(s),
        v => Err(QueryError::BadData(format!("expected string, got {}", v.type_name()))),
    }
}

fn scalar_series(c: Ctx, f: impl Fn(i64) -> f64) -> Vec<f64> {
    (0..c.n()).map(|i| f(c.ts(i))).collect()
}

/// Go's `math.Max`/`math.Min`, as Prometheus' `max_of`/`min_of`: NaN
/// when either is NaN.
fn scalar_extremum(a: f64, b: f64, max: bool) -> f64 {
    match (a.is_nan() || b.is_nan(), max) {
        (true, _) => f64::NAN,
        (false, true) => a.max(b),
        (false, false) => a.min(b),
    }
}

/// Argument `i` of `call`.
fn arg(call: &Call, i: usize) -> Result<&Node> {
    call.args
        .get(i)
        .ok_or_else(|| QueryError::BadData(format!("missing argument {i} of {}", call.name)))
}

pub(crate) fn call(ev: &mut Ev, call: &Call, c: Ctx) -> Result<Val> {
    match call.func {
        Func::Time => Ok(Val::Scalar(scalar_series(c, |t| t as f64 / 1000.0))),
        Func::Start => Ok(Val::Scalar(vec![ev.qstart as f64 / 1000.0; c.n()])),
        Func::End => Ok(Val::Scalar(vec![ev.qend as f64 / 1000.0; c.n()])),
        Func::Pi => Ok(Val::Scalar(vec![std::f64::consts::PI; c.n()])),
        Func::ScalarExtremum { max } => {
            let a = ev.eval_scalar(arg(call, 0)?, c)?;
            let b = ev.eval_scalar(arg(call, 1)?, c)?;
            Ok(Val::Scalar(
                a.iter().zip(&b).map(|(&a, &b)| scalar_extremum(a, b, max)).collect(),
            ))
        }
        Func::Vector => {
            let s = ev.eval_scalar(arg(call, 0)?, c)?;
            let pts = s.iter().enumerate().map(|(i, &v)| (c.ts(i), v)).collect();
            Ok(Val::Vector(vec![Series {
                labels: Labels::empty(),
                drop_name: false,
                pts,
                hs: Vec::new(),
            }]))
        }
        Func::Scalar => {
            let v = ev.eval_vector(arg(call, 0)?, c)?;
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
        Func::Range(f) => range::call(ev, call, f, c),
        Func::AbsentOverTime => absent::absent_over_time(ev, call, c),
        Func::Absent => absent::absent(ev, call, c),
        Func::Timestamp => timestamp::timestamp(ev, call, c),
        Func::LabelReplace => labels::label_replace(ev, call, c),
        Func::LabelJoin => labels::label_join(ev, call, c),
        Func::Sort { desc } => labels::sort(ev, call, desc, c),
        Func::SortByLabel { desc } => labels::sort_by_label(ev, call, desc, c),
        Func::HistogramQuantile => histogram::histogram_quantile(ev, arg(call, 0)?, arg(call, 1)?, c),
        Func::HistogramQuantiles => histogram::histogram_quantiles(ev, call, c),
        Func::HistogramFraction => histogram::histogram_fraction(ev, arg(call, 0)?, arg(call, 1)?, arg(call, 2)?, c),
        Func::HistogramStat(stat) => histogram::histogram_stat(ev, arg(call, 0)?, stat, c),
        Func::Clamp(clamp) => elementwise::clamp(ev, call, clamp, c),
        Func::Calendar(field) => elementwise::calendar(ev, call, field, c),
        Func::Math(m) => elementwise::math(ev, call, m, c),
        Func::Info => Err(QueryError::Internal("info() is planned as a node of its own".into())),
    }
}

/// Prometheus' warning for each quantile outside [0, 1] among the steps'
/// (once per value written).
pub(crate) fn quantile_warning(ev: &mut Ev, q: &[f64]) {
    for bad in q.iter().filter(|q| !(0.0..=1.0).contains(*q)) {
        let w = format!(
            "PromQL warning: quantile value should be between 0 and 1, got {}",
            crate::annotations::go_g(*bad)
        );
        if !ev.warnings.contains(&w) {
            ev.warnings.push(w);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::scalar_extremum;

    #[test]
    fn min_of_and_max_of_are_nan_when_either_is() {
        assert_eq!(scalar_extremum(3.0, 5.0, false), 3.0);
        assert_eq!(scalar_extremum(-2.0, -5.0, true), -2.0);
        assert!(scalar_extremum(f64::NAN, 3.0, false).is_nan());
        assert!(scalar_extremum(3.0, f64::NAN, true).is_nan());
    }
}
