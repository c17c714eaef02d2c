//! `timestamp`: of a selector, each sample's own time (not the step's).

use super::arg;
use crate::eval::{Ev, Result};
use crate::plan::{Call, Node};
use crate::series::Val;
use crate::steps::Ctx;

pub(super) fn timestamp(ev: &mut Ev, call: &Call, c: Ctx) -> Result<Val> {
    let mut v = match arg(call, 0)? {
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
