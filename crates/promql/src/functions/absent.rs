//! `absent` and `absent_over_time`: one series, with the labels the plan
//! took from the argument's matchers, at the steps with no input.

use cairn_model::Labels;

use super::arg;
use crate::eval::{Ev, Result};
use crate::plan::Call;
use crate::series::{Series, Val};
use crate::steps::Ctx;

pub(super) fn absent_over_time(ev: &mut Ev, call: &Call, c: Ctx) -> Result<Val> {
    let n = c.n();
    // Each series reports the steps it has a sample for, as points.
    let (present_by_series, _) = ev.range_series(arg(call, 0)?, c, None, false, &|labels, _, samples, ra| {
        let mut pts = Vec::new();
        for i in 0..n {
            let (ws, we) = ra.window(c.ts(i));
            if !samples.window(ws, we).is_void() {
                pts.push((c.ts(i), 1.0));
            }
        }
        Ok((!pts.is_empty()).then_some(Series {
            labels,
            drop_name: false,
            pts,
            hs: Vec::new(),
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

pub(super) fn absent(ev: &mut Ev, call: &Call, c: Ctx) -> Result<Val> {
    let v = ev.eval_vector(arg(call, 0)?, c)?;
    let mut present = vec![false; c.n()];
    for s in &v {
        for t in s.pts.iter().map(|p| p.0).chain(s.hs.iter().map(|p| p.0)) {
            present[c.idx(t)] = true;
        }
    }
    Ok(absent_result(&call.absent_labels, &present, c))
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
        hs: Vec::new(),
    }])
}

#[cfg(test)]
mod tests {
    use cairn_model::Labels;
    use cairn_storage::MemStorage;

    fn absent_labels(q: &str) -> Labels {
        let e = crate::Engine::new(crate::EngineOptions::default());
        match e.instant(&MemStorage::new(), q, 60_000).unwrap().value {
            crate::Value::Vector(v) => v[0].metric.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn labels_come_from_the_selector_through_parentheses() {
        let want = Labels::from_pairs([("job", "a")]);
        for q in [
            r#"absent(x{job="a"})"#,
            r#"absent((x{job="a"}))"#,
            r#"absent(((x{job="a"})))"#,
            r#"absent_over_time((x{job="a"}[1m]))"#,
            r#"absent(x{job="a", k="1", k="2"})"#,
        ] {
            assert_eq!(absent_labels(q), want, "{q}");
        }
        // Anything else than a selector gives no labels.
        assert_eq!(absent_labels(r#"absent(-x{job="a"})"#), Labels::empty());
        assert_eq!(absent_labels(r#"absent(+x{job="a"})"#), Labels::empty());
    }

    #[test]
    fn an_equality_is_left_out_when_a_matcher_of_its_label_comes_after_it_in_selection_order() {
        // Matchers that narrow the selection come before those subtracted
        // (`!=`/`!~` matching the empty value, or any of a label whose
        // matchers all match it), each kind in the written order.
        let empty = Labels::empty();
        let job_c = Labels::from_pairs([("job", "c")]);
        for (q, want) in [
            (r#"absent(x{job!~"a|b", job="c"})"#, &empty),
            (r#"absent(x{job!="node", job="node"})"#, &empty),
            (r#"absent_over_time(x{job!~"a", job="c"}[1m])"#, &empty),
            (r#"absent(x{job="c", job!="d"})"#, &empty),
            (r#"absent(x{job!="", job="c"})"#, &job_c),
            (r#"absent(x{job=~"c|", job="c"})"#, &job_c),
            (r#"absent(x{job=~".*", job="c"})"#, &job_c),
            (r#"absent(x{job="", job="c"})"#, &empty),
            (r#"absent(x{job="c", job=""})"#, &empty),
            (r#"absent(x{job=""})"#, &empty),
        ] {
            assert_eq!(&absent_labels(q), want, "{q}");
        }
        assert_eq!(
            absent_labels(r#"absent(x{a!="z", b="1", a="c"})"#),
            Labels::from_pairs([("b", "1")])
        );
    }
}
