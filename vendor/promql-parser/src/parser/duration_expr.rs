//! Duration expressions (Prometheus' `promql-duration-expr`): arithmetic in
//! a range `foo[5m + 1m]`, a subquery's range and step, and an offset, with
//! `step()` and `range()` standing for the query's step and range. They are
//! kept as written (to print them back) and evaluated per query.

use std::fmt;
use std::time::Duration;

use crate::util::display_duration;

/// A duration expression's value is in seconds, like a number in PromQL.
#[derive(Debug, Clone, PartialEq)]
pub enum DurationExpr {
    /// A number of seconds; `duration` when written with units (`5m`), so
    /// that it prints back that way.
    Literal {
        secs: f64,
        duration: bool,
    },
    /// `step()`: the query's step, 0 for an instant query.
    Step,
    /// `range()`: the query's end minus its start, 0 for an instant query.
    Range,
    Neg(Box<DurationExpr>),
    Paren(Box<DurationExpr>),
    Binary {
        op: DurationOp,
        lhs: Box<DurationExpr>,
        rhs: Box<DurationExpr>,
    },
    MinOf(Box<DurationExpr>, Box<DurationExpr>),
    MaxOf(Box<DurationExpr>, Box<DurationExpr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
}

impl DurationOp {
    fn symbol(self) -> &'static str {
        match self {
            Self::Add => "+",
            Self::Sub => "-",
            Self::Mul => "*",
            Self::Div => "/",
            Self::Mod => "%",
            Self::Pow => "^",
        }
    }
}

impl DurationExpr {
    /// The value in seconds for a query of `step` and `range` (seconds).
    /// Errors are worded as Prometheus words them.
    pub fn eval(&self, step: f64, range: f64) -> Result<f64, String> {
        let two =
            |a: &Self, b: &Self| Ok::<_, String>((a.eval(step, range)?, b.eval(step, range)?));
        Ok(match self {
            Self::Literal { secs, .. } => *secs,
            Self::Step => step,
            Self::Range => range,
            Self::Neg(e) => -e.eval(step, range)?,
            Self::Paren(e) => e.eval(step, range)?,
            Self::MinOf(a, b) => {
                let (a, b) = two(a, b)?;
                go_min(a, b)
            }
            Self::MaxOf(a, b) => {
                let (a, b) = two(a, b)?;
                go_max(a, b)
            }
            Self::Binary { op, lhs, rhs } => {
                let (a, b) = two(lhs, rhs)?;
                match op {
                    DurationOp::Add => a + b,
                    DurationOp::Sub => a - b,
                    DurationOp::Mul => a * b,
                    DurationOp::Div if b == 0.0 => return Err("division by zero".into()),
                    DurationOp::Div => a / b,
                    DurationOp::Mod if b == 0.0 => return Err("modulo by zero".into()),
                    DurationOp::Mod => a % b,
                    DurationOp::Pow => a.powf(b),
                }
            }
        })
    }

    /// The value in whole milliseconds (truncated, as Prometheus does) for
    /// a query of `step_ms` and `range_ms`. A range or step must come out
    /// positive; an offset (`allow_negative`) may be anything finite.
    pub fn eval_ms(
        &self,
        step_ms: i64,
        range_ms: i64,
        allow_negative: bool,
    ) -> Result<i64, String> {
        let secs = self.eval(step_ms as f64 / 1000.0, range_ms as f64 / 1000.0)?;
        if !secs.is_finite() {
            return Err("duration is NaN or infinite".into());
        }
        if secs <= 0.0 && !allow_negative {
            return Err("duration must be greater than 0".into());
        }
        // Durations are nanoseconds in an i64 in Prometheus.
        let bound = i64::MAX as f64 / 1e9;
        if secs > bound || secs < -bound {
            return Err("duration is out of range".into());
        }
        Ok((secs * 1000.0) as i64)
    }

    /// Whether it needs the query (`step()` or `range()`) to be evaluated.
    pub fn uses_query(&self) -> bool {
        match self {
            Self::Literal { .. } => false,
            Self::Step | Self::Range => true,
            Self::Neg(e) | Self::Paren(e) => e.uses_query(),
            Self::Binary { lhs: a, rhs: b, .. } | Self::MinOf(a, b) | Self::MaxOf(a, b) => {
                a.uses_query() || b.uses_query()
            }
        }
    }
}

/// Go's `math.Min`/`math.Max`: NaN wins, where Rust's `f64::min` drops it.
fn go_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

fn go_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

impl fmt::Display for DurationExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Literal {
                secs,
                duration: true,
            } => {
                let d = Duration::from_secs_f64(secs.abs());
                let sign = if *secs < 0.0 { "-" } else { "" };
                write!(f, "{sign}{}", display_duration(&d))
            }
            Self::Literal {
                secs,
                duration: false,
            } => write!(f, "{secs}"),
            Self::Step => write!(f, "step()"),
            Self::Range => write!(f, "range()"),
            Self::Neg(e) => write!(f, "-{e}"),
            Self::Paren(e) => write!(f, "({e})"),
            Self::Binary { op, lhs, rhs } => write!(f, "{lhs} {} {rhs}", op.symbol()),
            Self::MinOf(a, b) => write!(f, "min_of({a}, {b})"),
            Self::MaxOf(a, b) => write!(f, "max_of({a}, {b})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(secs: f64) -> Box<DurationExpr> {
        Box::new(DurationExpr::Literal {
            secs,
            duration: false,
        })
    }

    #[test]
    fn evaluates_with_the_query_step_and_range() {
        let e = DurationExpr::Binary {
            op: DurationOp::Add,
            lhs: Box::new(DurationExpr::Step),
            rhs: Box::new(DurationExpr::MinOf(Box::new(DurationExpr::Range), lit(8.0))),
        };
        assert_eq!(e.eval(5.0, 10.0), Ok(13.0));
        assert_eq!(e.eval_ms(5000, 3000, false), Ok(8000));
        assert!(e.uses_query());
        assert_eq!(e.to_string(), "step() + min_of(range(), 8)");
    }

    #[test]
    fn errors_are_worded_as_prometheus() {
        let div = DurationExpr::Binary {
            op: DurationOp::Div,
            lhs: lit(1.0),
            rhs: Box::new(DurationExpr::Step),
        };
        assert_eq!(div.eval(0.0, 0.0), Err("division by zero".into()));
        let modulo = DurationExpr::Binary {
            op: DurationOp::Mod,
            lhs: lit(1.0),
            rhs: Box::new(DurationExpr::Step),
        };
        assert_eq!(modulo.eval(0.0, 0.0), Err("modulo by zero".into()));
        let neg = DurationExpr::Neg(Box::new(DurationExpr::Step));
        assert_eq!(
            neg.eval_ms(1000, 0, false),
            Err("duration must be greater than 0".into())
        );
        assert_eq!(neg.eval_ms(1000, 0, true), Ok(-1000));
        let nan = DurationExpr::MaxOf(lit(f64::NAN), lit(1.0));
        assert_eq!(
            nan.eval_ms(0, 0, true),
            Err("duration is NaN or infinite".into())
        );
    }

    #[test]
    fn milliseconds_are_truncated() {
        let e = DurationExpr::Binary {
            op: DurationOp::Div,
            lhs: lit(1.0),
            rhs: lit(3.0),
        };
        assert_eq!(e.eval_ms(0, 0, false), Ok(333));
    }
}
