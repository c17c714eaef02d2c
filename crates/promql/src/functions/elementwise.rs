//! Functions applied to each value of a vector: `abs`, `ln`, ..., the
//! clamps and `round`, and the calendar fields.

use cairn_model::Labels;

use super::arg;
use crate::eval::{Ev, Result};
use crate::func::{CalendarFn, ClampFn, MathFn};
use crate::math::{go_max, go_min};
use crate::plan::Call;
use crate::series::{Series, Val};
use crate::steps::Ctx;

pub(super) fn clamp(ev: &mut Ev, call: &Call, clamp: ClampFn, c: Ctx) -> Result<Val> {
    let mut v = ev.eval_vector(arg(call, 0)?, c)?;
    let a1 = match call.args.get(1) {
        Some(e) => ev.eval_scalar(e, c)?,
        None => vec![1.0; c.n()],
    };
    let a2 = match call.args.get(2) {
        Some(e) => ev.eval_scalar(e, c)?,
        None => Vec::new(),
    };
    for s in &mut v {
        s.drop_name = true;
        s.hs.clear();
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

pub(super) fn calendar(ev: &mut Ev, call: &Call, field: CalendarFn, c: Ctx) -> Result<Val> {
    let mut v = match call.args.first() {
        Some(e) => ev.eval_vector(e, c)?,
        None => vec![Series {
            labels: Labels::empty(),
            drop_name: false,
            pts: (0..c.n()).map(|i| (c.ts(i), c.ts(i) as f64 / 1000.0)).collect(),
            hs: Vec::new(),
        }],
    };
    for s in &mut v {
        s.drop_name = true;
        s.hs.clear();
        for p in &mut s.pts {
            p.1 = field.of_time(p.1);
        }
    }
    v.retain(|s| !s.pts.is_empty());
    Ok(Val::Vector(v))
}

pub(super) fn math(ev: &mut Ev, call: &Call, m: MathFn, c: Ctx) -> Result<Val> {
    let mut v = ev.eval_vector(arg(call, 0)?, c)?;
    let f = m.kernel();
    for s in &mut v {
        s.drop_name = true;
        s.hs.clear();
        s.pts.iter_mut().for_each(|p| p.1 = f(p.1));
    }
    // Element-wise functions take floats only: histograms are left out.
    v.retain(|s| !s.pts.is_empty());
    Ok(Val::Vector(v))
}
