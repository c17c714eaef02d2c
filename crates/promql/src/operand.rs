//! The values binary operators combine: floats, or, where a vector has
//! native histograms, floats and histograms. The operator code is written
//! once over [`Operand`]; the float instance is the code floats always
//! ran, and only vectors with histograms take [`Value`].

use std::sync::Arc;

use cairn_model::Histogram;
use cairn_model::histogram::ResetHint;

use crate::annotations::{self, Note};
use crate::eval::Result;
use crate::ops::BinOp;
use crate::series::{OutAcc, Series};
use crate::steps::Ctx;
use crate::trim;

pub(crate) trait Operand: Clone + Default {
    /// Calls `f(step index, value)` for each point of `s` on a step of `c`.
    fn walk(s: &Series, c: Ctx, f: impl FnMut(usize, Self));

    fn from_float(v: f64) -> Self;

    /// `(value, keep)` of `l op r` as [`BinOp::apply`], or `None` when the
    /// two cannot be combined; what Prometheus notes about the pair goes
    /// to `notes`.
    fn apply(op: BinOp, l: &Self, r: &Self, notes: &mut Vec<Note>) -> Option<(Self, bool)>;

    /// Appends a point to the output series at `slot`.
    fn push(acc: &mut OutAcc, slot: usize, drop_name: bool, t: i64, v: Self) -> Result<()>;
}

impl Operand for f64 {
    #[inline]
    fn walk(s: &Series, c: Ctx, mut f: impl FnMut(usize, Self)) {
        c.walk_steps(&s.pts, 0, c.n(), |i, &v| f(i, v));
    }

    #[inline]
    fn from_float(v: f64) -> Self {
        v
    }

    #[inline]
    fn apply(op: BinOp, l: &Self, r: &Self, notes: &mut Vec<Note>) -> Option<(Self, bool)> {
        if op.is_trim() {
            annotations::add_once(
                notes,
                annotations::incompatible_types_in_binop(op.name(), "float", "float"),
            );
            return None;
        }
        Some(op.apply(*l, *r))
    }

    #[inline]
    fn push(acc: &mut OutAcc, slot: usize, drop_name: bool, t: i64, v: Self) -> Result<()> {
        acc.push_at(slot, drop_name, t, v)
    }
}

/// A float or a native histogram.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    Float(f64),
    Histogram(Arc<Histogram>),
}

impl Default for Value {
    fn default() -> Self {
        Self::Float(0.0)
    }
}

impl Value {
    fn type_name(&self) -> &'static str {
        match self {
            Self::Float(_) => "float",
            Self::Histogram(_) => "histogram",
        }
    }
}

impl Operand for Value {
    fn walk(s: &Series, c: Ctx, mut f: impl FnMut(usize, Self)) {
        c.walk_steps(&s.pts, 0, c.n(), |i, &v| f(i, Value::Float(v)));
        c.walk_steps(&s.hs, 0, c.n(), |i, h| f(i, Value::Histogram(h.clone())));
    }

    fn from_float(v: f64) -> Self {
        Self::Float(v)
    }

    fn apply(op: BinOp, l: &Self, r: &Self, notes: &mut Vec<Note>) -> Option<(Self, bool)> {
        match combine(op, l, r) {
            Ok((v, about)) => {
                for note in about {
                    annotations::add_once(notes, note);
                }
                Some(v)
            }
            Err(note) => {
                annotations::add_once(notes, note);
                None
            }
        }
    }

    fn push(acc: &mut OutAcc, slot: usize, drop_name: bool, t: i64, v: Self) -> Result<()> {
        match v {
            Self::Float(f) => acc.push_at(slot, drop_name, t, f),
            Self::Histogram(h) => acc.push_histogram_at(slot, drop_name, t, h),
        }
    }
}

/// `l op r` and the notes about it, or why there is no result.
#[allow(clippy::type_complexity)]
fn combine(op: BinOp, l: &Value, r: &Value) -> std::result::Result<((Value, bool), Vec<Note>), Note> {
    use Value as V;
    {
        let incompatible = || annotations::incompatible_types_in_binop(op.name(), l.type_name(), r.type_name());
        let scaled = |h: &Histogram, factor: f64| V::Histogram(Arc::new(times(h, factor)));
        let divided = |h: &Histogram, divisor: f64| V::Histogram(Arc::new(divided_by(h, divisor)));
        match (l, r) {
            (V::Float(_), V::Float(_)) if op.is_trim() => Err(incompatible()),
            (V::Histogram(h), V::Float(x)) if op.is_trim() => {
                let trimmed = trim::trim(h, *x, op == BinOp::TrimUpper);
                Ok(((V::Histogram(Arc::new(trimmed)), true), Vec::new()))
            }
            (V::Float(a), V::Float(b)) => {
                let (v, keep) = op.apply(*a, *b);
                Ok(((V::Float(v), keep), Vec::new()))
            }
            (V::Float(f), V::Histogram(h)) | (V::Histogram(h), V::Float(f)) if op == BinOp::Mul => {
                Ok(((scaled(h, *f), true), Vec::new()))
            }
            (V::Histogram(h), V::Float(f)) if op == BinOp::Div => Ok(((divided(h, *f), true), Vec::new())),
            (V::Histogram(a), V::Histogram(b)) => match op {
                BinOp::Add | BinOp::Sub => {
                    let mut r = (**a).clone();
                    let done = if op == BinOp::Add { r.add(b) } else { r.sub(b) };
                    if done.is_err() {
                        return Err(annotations::incompatible_bucket_layout_in_binop(op.name()));
                    }
                    if op == BinOp::Sub {
                        r.reset_hint = ResetHint::Gauge;
                    }
                    r.compact();
                    let operation = if op == BinOp::Add { "addition" } else { "subtraction" };
                    let mut about = Vec::new();
                    if a.reset_hint.conflicts_with(b.reset_hint) {
                        about.push(annotations::counter_reset_collision(operation));
                    }
                    if annotations::custom_bounds_differ(a, b) {
                        about.push(annotations::mismatched_custom_buckets(operation));
                    }
                    Ok(((V::Histogram(Arc::new(r)), true), about))
                }
                BinOp::Eq => Ok(((l.clone(), same(a, b)), Vec::new())),
                BinOp::Ne => Ok(((l.clone(), !same(a, b)), Vec::new())),
                _ => Err(incompatible()),
            },
            _ => Err(incompatible()),
        }
    }
}

/// `h * factor`: a negative factor makes a gauge.
pub(crate) fn times(h: &Histogram, factor: f64) -> Histogram {
    let mut h = h.clone();
    h.scale(factor);
    h.compact();
    if factor < 0.0 {
        h.reset_hint = ResetHint::Gauge;
    }
    h
}

/// `h / divisor`: dividing by zero leaves no buckets but the zero bucket,
/// as in Prometheus.
fn divided_by(h: &Histogram, divisor: f64) -> Histogram {
    let mut h = h.clone();
    if divisor == 0.0 {
        h.count /= divisor;
        h.sum /= divisor;
        h.zero_count /= divisor;
        h.positive.clear();
        h.negative.clear();
        return h;
    }
    for b in h.positive.iter_mut().chain(h.negative.iter_mut()) {
        b.1 /= divisor;
    }
    h.compact();
    h.count /= divisor;
    h.sum /= divisor;
    h.zero_count /= divisor;
    if divisor < 0.0 {
        h.reset_hint = ResetHint::Gauge;
    }
    h
}

/// Whether two histograms are equal as Prometheus compares them: the same
/// layout and counts, empty buckets aside.
pub(crate) fn same(a: &Histogram, b: &Histogram) -> bool {
    let filled = |side: &[(i32, f64)]| side.iter().filter(|x| x.1 != 0.0).copied().collect::<Vec<_>>();
    a.schema == b.schema
        && a.count == b.count
        && a.sum.to_bits() == b.sum.to_bits()
        && a.zero_threshold == b.zero_threshold
        && a.zero_count == b.zero_count
        && a.bounds() == b.bounds()
        && filled(&a.positive) == filled(&b.positive)
        && filled(&a.negative) == filled(&b.negative)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(count: f64) -> Value {
        Value::Histogram(Arc::new(Histogram {
            count,
            sum: count,
            positive: vec![(0, count), (1, 0.0)],
            ..Histogram::default()
        }))
    }

    fn count(v: &Value) -> f64 {
        match v {
            Value::Histogram(h) => h.count,
            Value::Float(_) => panic!("not a histogram"),
        }
    }

    #[test]
    fn histograms_scale_add_and_compare() {
        let n = &mut Vec::new();
        let (r, keep) = Value::apply(BinOp::Mul, &Value::Float(3.0), &h(2.0), n).unwrap();
        assert!(keep && count(&r) == 6.0);
        let (r, _) = Value::apply(BinOp::Div, &h(2.0), &Value::Float(4.0), n).unwrap();
        assert_eq!(count(&r), 0.5);
        let (r, _) = Value::apply(BinOp::Sub, &h(5.0), &h(2.0), n).unwrap();
        assert_eq!(count(&r), 3.0);
        assert!(Value::apply(BinOp::Eq, &h(2.0), &h(2.0), n).unwrap().1);
        assert!(!Value::apply(BinOp::Eq, &h(2.0), &h(3.0), n).unwrap().1);
        assert!(n.is_empty());
    }

    #[test]
    fn adding_a_reset_to_a_not_reset_warns_of_the_conflict() {
        let hinted = |count: f64, hint: ResetHint| match h(count) {
            Value::Histogram(x) => Value::Histogram(Arc::new(Histogram {
                reset_hint: hint,
                ..(*x).clone()
            })),
            Value::Float(_) => unreachable!(),
        };
        let n = &mut Vec::new();
        Value::apply(
            BinOp::Add,
            &hinted(1.0, ResetHint::Reset),
            &hinted(2.0, ResetHint::Unknown),
            n,
        )
        .unwrap();
        assert!(n.is_empty());
        for (op, what) in [(BinOp::Add, "addition"), (BinOp::Sub, "subtraction")] {
            let n = &mut Vec::new();
            Value::apply(op, &hinted(1.0, ResetHint::Reset), &hinted(2.0, ResetHint::NotReset), n).unwrap();
            assert_eq!(
                n[..],
                [Note::Warning(format!(
                    "PromQL warning: conflicting counter resets during histogram {what}"
                ))]
            );
        }
    }

    #[test]
    fn floats_and_histograms_mostly_do_not_combine() {
        let n = &mut Vec::new();
        assert!(Value::apply(BinOp::Add, &h(2.0), &Value::Float(1.0), n).is_none());
        assert_eq!(
            n[..],
            [Note::Info(
                "PromQL info: incompatible sample types encountered for binary operator \"+\": histogram + float"
                    .into()
            )]
        );
        assert!(Value::apply(BinOp::Div, &Value::Float(1.0), &h(2.0), n).is_none());
        assert!(Value::apply(BinOp::Lt, &h(1.0), &h(2.0), n).is_none());
    }

    #[test]
    fn only_a_histogram_and_a_float_on_its_right_trim() {
        let n = &mut Vec::new();
        let (r, keep) = Value::apply(BinOp::TrimUpper, &h(2.0), &Value::Float(0.5), n).unwrap();
        assert!(keep && count(&r) == 0.0, "(0.5, 1] and (1, 2] are above 0.5");
        let (r, _) = Value::apply(BinOp::TrimLower, &h(2.0), &Value::Float(0.5), n).unwrap();
        assert_eq!(count(&r), 2.0);
        assert!(n.is_empty());
        let f = Value::Float(1.0);
        assert!(Value::apply(BinOp::TrimUpper, &f, &h(2.0), n).is_none());
        assert!(Value::apply(BinOp::TrimLower, &f, &f, n).is_none());
        assert!(Value::apply(BinOp::TrimLower, &h(1.0), &h(2.0), n).is_none());
        assert!(f64::apply(BinOp::TrimUpper, &1.0, &2.0, n).is_none());
        assert!(f64::apply(BinOp::TrimUpper, &3.0, &4.0, n).is_none(), "noted once");
        let info = |types: &str| {
            Note::Info(format!(
                "PromQL info: incompatible sample types encountered for binary operator \"{}\": {types}",
                &types[types.find(' ').unwrap() + 1..types.rfind(' ').unwrap()]
            ))
        };
        assert_eq!(
            n[..],
            [
                info("float </ histogram"),
                info("float >/ float"),
                info("histogram >/ histogram"),
                info("float </ float"),
            ]
        );
    }
}
