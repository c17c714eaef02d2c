//! `count_values`: per group and step, how many series have each value.

use foldhash::{HashMap, HashMapExt};

use cairn_model::Labels;
use cairn_model::go_float::format_f;

use crate::QueryError;
use crate::eval::Result;
use crate::series::{OutAcc, Series, StepIter, Val};
use crate::steps::Ctx;

pub(super) fn count_values(
    param: &Option<Val>,
    input: &[Series],
    groups: &[Labels],
    sgroup: &[usize],
    c: Ctx,
) -> Result<Val> {
    let n = c.n();
    let mut cur: Vec<(usize, f64)> = Vec::new();
    let label = match param {
        Some(Val::Str(s)) => s.clone(),
        _ => return Err(QueryError::BadData("count_values needs a string parameter".into())),
    };
    if label.is_empty() {
        return Err(QueryError::Execution(format!("invalid label name {label:?}")));
    }
    let mut acc = OutAcc::new();
    let mut it = StepIter::new(input, c);
    for i in 0..n {
        let t = c.ts(i);
        cur.clear();
        it.at(t, |j, &v| cur.push((j, v)));
        let mut counts: Vec<(Labels, f64)> = Vec::new();
        let mut idx: HashMap<Labels, usize> = HashMap::new();
        for &(j, v) in &cur {
            let mut l = groups[sgroup[j]].clone();
            l.set(&label, &format_f(v));
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
