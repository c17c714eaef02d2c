//! Binary operators: between scalars, a vector and a scalar, and two
//! vectors matched by labels (one-to-one, many-to-one, set operations).

use foldhash::{HashMap, HashMapExt};

use cairn_model::{Label, Labels, METRIC_NAME, SCHEMA_LABELS};
use promql_parser::parser::{LabelModifier, VectorMatchCardinality};

use crate::QueryError;
use crate::annotations::{self, Note};
use crate::eval::{Ev, Result};
use crate::operand::{Operand, Value};
use crate::ops::BinOp;
use crate::plan::Binary;
use crate::series::{OutAcc, Series, StepIter, Val, dup_labelset, labels_from};
use crate::steps::Ctx;

impl Ev<'_> {
    pub(crate) fn eval_binary(&mut self, b: &Binary, c: Ctx) -> Result<Val> {
        let (op, return_bool) = (b.op, b.return_bool);
        let lhs = self.eval(&b.lhs, c)?;
        let rhs = self.eval(&b.rhs, c)?;
        match (lhs, rhs) {
            (Val::Scalar(l), Val::Scalar(r)) => {
                let op = op.element_wise()?;
                if op.is_trim() {
                    return Err(QueryError::Execution(format!(
                        "operator {:?} not allowed for Scalar operations",
                        op.name()
                    )));
                }
                let mut out = Vec::with_capacity(l.len());
                for (a, b) in l.iter().zip(&r) {
                    let (v, keep) = op.apply(*a, *b);
                    out.push(if op.is_comparison() {
                        if keep { 1.0 } else { 0.0 }
                    } else {
                        v
                    });
                }
                Ok(Val::Scalar(out))
            }
            (Val::Vector(v), Val::Scalar(s)) => {
                let mut notes = Vec::new();
                let out = vector_scalar(op.element_wise()?, v, &s, false, return_bool, c, &mut notes);
                notes.into_iter().for_each(|n| self.note(n));
                Ok(Val::Vector(out))
            }
            (Val::Scalar(s), Val::Vector(v)) => {
                let mut notes = Vec::new();
                let out = vector_scalar(op.element_wise()?, v, &s, true, return_bool, c, &mut notes);
                notes.into_iter().for_each(|n| self.note(n));
                Ok(Val::Vector(out))
            }
            (Val::Vector(l), Val::Vector(r)) => self.vector_vector(b, op, return_bool, l, r, c),
            (l, r) => Err(QueryError::BadData(format!(
                "binary expression must contain only scalar and instant vector types, got {} and {}",
                l.type_name(),
                r.type_name()
            ))),
        }
    }

    fn vector_vector(
        &mut self,
        b: &Binary,
        op: BinOp,
        return_bool: bool,
        lhs: Vec<Series>,
        rhs: Vec<Series>,
        c: Ctx,
    ) -> Result<Val> {
        if lhs.iter().chain(&rhs).all(|s| s.hs.is_empty()) {
            return self.match_vectors::<f64>(b, op, return_bool, lhs, rhs, c);
        }
        self.match_vectors::<Value>(b, op, return_bool, lhs, rhs, c)
    }

    /// `lhs op rhs` matched by labels, over values of kind `V`.
    #[allow(clippy::too_many_arguments)]
    fn match_vectors<V: Operand>(
        &mut self,
        b: &Binary,
        op: BinOp,
        return_bool: bool,
        lhs: Vec<Series>,
        rhs: Vec<Series>,
        c: Ctx,
    ) -> Result<Val> {
        let mut notes: Vec<Note> = Vec::new();
        let modifier = b.modifier.as_ref();
        let (on, names): (bool, Vec<String>) = match modifier.and_then(|m| m.matching.as_ref()) {
            Some(LabelModifier::Include(l)) => (true, l.labels.clone()),
            Some(LabelModifier::Exclude(l)) => (false, l.labels.clone()),
            None => (false, Vec::new()),
        };
        let card = modifier
            .map(|m| m.card.clone())
            .unwrap_or(VectorMatchCardinality::OneToOne);
        let (mut fill_l, mut fill_r) = modifier
            .map(|m| (m.fill_values.lhs, m.fill_values.rhs))
            .unwrap_or((None, None));
        if matches!(card, VectorMatchCardinality::OneToMany(_)) {
            std::mem::swap(&mut fill_l, &mut fill_r);
        }
        // Signatures are interned once; per step, membership is a stamp
        // (the step number + 1) in a vector indexed by signature id.
        let mut sig_ids: HashMap<String, usize> = HashMap::new();
        let mut intern = |l: &Labels| -> usize {
            let next = sig_ids.len();
            *sig_ids.entry(signature(l, on, &names)).or_insert(next)
        };
        let lsig: Vec<usize> = lhs.iter().map(|s| intern(&s.labels)).collect();
        let rsig: Vec<usize> = rhs.iter().map(|s| intern(&s.labels)).collect();
        let nsig = sig_ids.len();
        let n = c.n();
        let mut acc = OutAcc::new();
        let mut li = StepIter::<V>::new(&lhs, c);
        let mut ri = StepIter::<V>::new(&rhs, c);
        let mut lcur: Vec<(usize, V)> = Vec::new();
        let mut rcur: Vec<(usize, V)> = Vec::new();
        let set_op = op.is_set();
        let include: Vec<String> = match &card {
            VectorMatchCardinality::ManyToOne(l) | VectorMatchCardinality::OneToMany(l) => l.labels.clone(),
            _ => Vec::new(),
        };
        // `bool` drops the name before `group_x(__name__)` copies the one
        // side's in (Prometheus without delayed name removal): the copied
        // name stays.
        let bool_names_now =
            return_bool && !self.delayed_names && include.iter().any(|n| SCHEMA_LABELS.contains(&n.as_str()));
        // Output slot of each input series copied through by a set operator,
        // and of each result metric of a (many, one) pair: labels are built
        // and hashed once per series, not once per step.
        let mut lslot: Vec<Option<usize>> = vec![None; lhs.len()];
        let mut rslot: Vec<Option<usize>> = vec![None; rhs.len()];
        let mut pair_slot: HashMap<(usize, usize), usize> = HashMap::new();
        let mut fill_slot: HashMap<usize, usize> = HashMap::new();
        let mut stamp_a = vec![0usize; nsig];
        let mut one_at: Vec<(usize, V)> = vec![(0, V::default()); nsig];
        let mut one_matched = vec![0usize; nsig];
        let mut one_seen = vec![0usize; nsig];
        let mut sig_used = vec![0usize; nsig];
        // Per output slot: (stamp, signature) of its last insertion.
        let mut slot_used: Vec<(usize, usize)> = Vec::new();
        // Many-to-one: the result labels of pairs a comparison filtered out,
        // with the step and match group they were met at.
        let mut dropped_at: HashMap<Labels, (usize, usize)> = HashMap::new();
        let swapped = matches!(card, VectorMatchCardinality::OneToMany(_));
        // Per "many" series: the "one" index and output slot of its last pair.
        let mut last_pair: Vec<Option<(usize, usize)>> = vec![None; if swapped { rhs.len() } else { lhs.len() }];
        let one_to_one = matches!(card, VectorMatchCardinality::OneToOne);
        // Prometheus (without delayed name removal) checks a `bool` pair's
        // result labels for uniqueness in its match group once `bool` has
        // dropped the name: two series of one group that differ only in
        // their names clash there.
        let nameless_check = return_bool && !self.delayed_names && !bool_names_now && !one_to_one;
        let mut pair_nameless: HashMap<(usize, usize), Labels> = HashMap::new();
        let mut nameless_used: HashMap<Labels, (usize, usize)> = HashMap::new();
        for i in 0..n {
            if i % 256 == 0 {
                self.check()?;
            }
            let stamp = i + 1;
            let t = c.ts(i);
            lcur.clear();
            rcur.clear();
            li.at(t, |j, v| lcur.push((j, v.clone())));
            ri.at(t, |j, v| rcur.push((j, v.clone())));
            if set_op {
                let copy = |acc: &mut OutAcc, side: &[Series], slots: &mut [Option<usize>], j: usize, v: &V| {
                    let slot = *slots[j].get_or_insert_with(|| acc.slot(&side[j].labels));
                    V::push(acc, slot, side[j].drop_name, t, v.clone())
                };
                match op {
                    BinOp::And | BinOp::Unless => {
                        for (j, _) in &rcur {
                            stamp_a[rsig[*j]] = stamp;
                        }
                        let want = op == BinOp::And;
                        for (j, v) in &lcur {
                            let j = *j;
                            if (stamp_a[lsig[j]] == stamp) == want {
                                copy(&mut acc, &lhs, &mut lslot, j, v)?;
                            }
                        }
                    }
                    _ => {
                        for (j, v) in &lcur {
                            let j = *j;
                            stamp_a[lsig[j]] = stamp;
                            copy(&mut acc, &lhs, &mut lslot, j, v)?;
                        }
                        for (j, v) in &rcur {
                            let j = *j;
                            if stamp_a[rsig[j]] != stamp {
                                copy(&mut acc, &rhs, &mut rslot, j, v)?;
                            }
                        }
                    }
                }
                continue;
            }
            if (lcur.is_empty() || rcur.is_empty()) && fill_l.is_none() && fill_r.is_none() {
                continue;
            }
            let (many, many_s, many_sig, one, one_s, one_sig) = if swapped {
                (&rcur, &rhs, &rsig, &lcur, &lhs, &lsig)
            } else {
                (&lcur, &lhs, &lsig, &rcur, &rhs, &rsig)
            };
            for (j, v) in one.iter() {
                let j = *j;
                let sg = one_sig[j];
                if stamp_a[sg] == stamp {
                    let dj = one_at[sg].0;
                    let side = if swapped { "left" } else { "right" };
                    let matched = match_labels(&one_s[j].labels, on, &names);
                    // In string order, as Prometheus orders them.
                    let (a, b) = (go_labels(&one_s[j].labels), go_labels(&one_s[dj].labels));
                    let dupl = if a > b { (b, a) } else { (a, b) };
                    return Err(QueryError::Execution(format!(
                        "found duplicate series for the match group {} on the {side} hand-side of the operation: [{}, {}];many-to-many matching not allowed: matching labels must be unique on one side",
                        go_labels(&matched),
                        dupl.0,
                        dupl.1
                    )));
                }
                stamp_a[sg] = stamp;
                one_at[sg] = (j, v.clone());
            }
            for (j, mv) in many.iter() {
                let j = *j;
                let sg = many_sig[j];
                let (oj, ov) = if stamp_a[sg] == stamp {
                    let (oj, ov) = &one_at[sg];
                    (Some(*oj), ov.clone())
                } else {
                    let fill = if swapped { fill_l } else { fill_r };
                    match fill {
                        Some(fv) => (None, V::from_float(fv)),
                        None => continue,
                    }
                };
                if oj.is_some() {
                    one_matched[sg] = stamp;
                }
                let (fl, fr) = if swapped { (&ov, mv) } else { (mv, &ov) };
                let Some((mut v, keep)) = V::apply(op, fl, fr, &mut notes) else {
                    continue;
                };
                if one_to_one && oj.is_some() {
                    if one_seen[sg] == stamp {
                        return Err(QueryError::Execution(
                            "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)"
                                .into(),
                        ));
                    }
                    one_seen[sg] = stamp;
                }
                if return_bool {
                    v = V::from_float(if keep { 1.0 } else { 0.0 });
                } else if !keep {
                    // Prometheus checks a filtered pair's labels for
                    // uniqueness in its match group before it filters.
                    if !one_to_one {
                        let one_labels = oj.map_or(&many_s[j].labels, |oj| &one_s[oj].labels);
                        let m = result_metric(
                            &many_s[j].labels,
                            one_labels,
                            op,
                            on,
                            &names,
                            &card,
                            &include,
                            bool_names_now,
                        );
                        let kept_clash = acc.find(&m).is_some_and(|s| slot_used.get(s) == Some(&(stamp, sg)));
                        if kept_clash || dropped_at.get(&m) == Some(&(stamp, sg)) {
                            return Err(QueryError::Execution(
                                "multiple matches for labels: grouping labels must ensure unique matches".into(),
                            ));
                        }
                        dropped_at.insert(m, (stamp, sg));
                    }
                    continue;
                }
                let key = (j, oj.unwrap_or(usize::MAX));
                // A "many" series usually meets the same "one" series at
                // every step: its last pair's slot is checked before the map.
                let slot = match last_pair[j] {
                    Some((k, slot)) if k == key.1 => slot,
                    _ => {
                        let slot = *pair_slot.entry(key).or_insert_with(|| {
                            let one_labels = oj.map_or(&many_s[j].labels, |oj| &one_s[oj].labels);
                            acc.slot(&result_metric(
                                &many_s[j].labels,
                                one_labels,
                                op,
                                on,
                                &names,
                                &card,
                                &include,
                                bool_names_now,
                            ))
                        });
                        last_pair[j] = Some((key.1, slot));
                        slot
                    }
                };
                if one_to_one {
                    if sig_used[sg] == stamp && oj.is_none() {
                        return Err(dup_labelset());
                    }
                } else {
                    if nameless_check {
                        let nameless = pair_nameless.entry(key).or_insert_with(|| {
                            let l = &acc.series[slot].labels;
                            labels_from(
                                l.iter()
                                    .filter(|l| !SCHEMA_LABELS.contains(&l.name.as_str()))
                                    .cloned()
                                    .collect(),
                            )
                        });
                        if nameless_used.insert(nameless.clone(), (stamp, sg)) == Some((stamp, sg)) {
                            return Err(QueryError::Execution(
                                "multiple matches for labels: grouping labels must ensure unique matches".into(),
                            ));
                        }
                    }
                    slot_used.resize(acc.series.len(), (0, 0));
                    if slot_used[slot] == (stamp, sg)
                        || (!dropped_at.is_empty() && dropped_at.get(&acc.series[slot].labels) == Some(&(stamp, sg)))
                    {
                        return Err(QueryError::Execution(
                            "multiple matches for labels: grouping labels must ensure unique matches".into(),
                        ));
                    }
                    slot_used[slot] = (stamp, sg);
                }
                sig_used[sg] = stamp;
                let drop = (return_bool && !bool_names_now) || (!op.changes_metric_schema() && many_s[j].drop_name);
                V::push(&mut acc, slot, drop, t, v)?;
            }
            // Fill in for unmatched series of the "one" side.
            let fill_many = if swapped { fill_r } else { fill_l };
            if let Some(fv) = fill_many {
                let fv = V::from_float(fv);
                for (j, ov) in one.iter() {
                    let j = *j;
                    if one_matched[one_sig[j]] == stamp {
                        continue;
                    }
                    let (fl, fr) = if swapped { (ov, &fv) } else { (&fv, ov) };
                    let Some((mut v, keep)) = V::apply(op, fl, fr, &mut notes) else {
                        continue;
                    };
                    if return_bool {
                        v = V::from_float(if keep { 1.0 } else { 0.0 });
                    } else if !keep {
                        continue;
                    }
                    // With no "many" series to copy labels from, the result
                    // carries the one side's match labels (as one-to-one).
                    let slot = *fill_slot.entry(j).or_insert_with(|| {
                        acc.slot(&result_metric(
                            &one_s[j].labels,
                            &one_s[j].labels,
                            op,
                            on,
                            &names,
                            &VectorMatchCardinality::OneToOne,
                            &include,
                            false,
                        ))
                    });
                    V::push(&mut acc, slot, true, t, v)?;
                }
            }
        }
        for note in notes {
            self.note(note);
        }
        Ok(Val::Vector(acc.series))
    }
}

fn vector_scalar(
    op: BinOp,
    v: Vec<Series>,
    s: &[f64],
    swap: bool,
    return_bool: bool,
    c: Ctx,
    notes: &mut Vec<Note>,
) -> Vec<Series> {
    let cmp = op.is_comparison();
    let mut out = Vec::with_capacity(v.len());
    for mut series in v {
        if !series.hs.is_empty() {
            histograms_by_scalar(op, &mut series, s, swap, return_bool, c, notes);
        }
        if op.is_trim() && !series.pts.is_empty() {
            // Floats do not trim; histograms' results are all histograms.
            annotations::add_once(
                notes,
                annotations::incompatible_types_in_binop(op.name(), "float", "float"),
            );
            series.pts.clear();
        }
        let mut pts = Vec::with_capacity(series.pts.len());
        for &(t, x) in &series.pts {
            let sv = s[c.idx(t)];
            let (l, r) = if swap { (sv, x) } else { (x, sv) };
            let (mut val, keep) = op.apply(l, r);
            if cmp && swap {
                val = r;
            }
            if return_bool {
                pts.push((t, if keep { 1.0 } else { 0.0 }));
            } else if keep {
                pts.push((t, val));
            }
        }
        if pts.is_empty() && series.hs.is_empty() {
            continue;
        }
        series.pts = pts;
        if op.changes_metric_schema() || return_bool {
            series.drop_name = true;
        }
        out.push(series);
    }
    out
}

/// `h op s` (or `s op h` when `swap`) for the histogram points of
/// `series`, in place; float results (of `bool`) join its floats.
fn histograms_by_scalar(
    op: BinOp,
    series: &mut Series,
    s: &[f64],
    swap: bool,
    return_bool: bool,
    c: Ctx,
    notes: &mut Vec<Note>,
) {
    let mut hs = Vec::with_capacity(series.hs.len());
    let mut floats = false;
    for (t, h) in std::mem::take(&mut series.hs) {
        let sv = Value::Float(s[c.idx(t)]);
        let hv = Value::Histogram(h);
        let (l, r) = if swap { (&sv, &hv) } else { (&hv, &sv) };
        let Some((mut val, keep)) = Value::apply(op, l, r, notes) else {
            continue;
        };
        if op.is_comparison() && swap {
            val = hv.clone();
        }
        if return_bool {
            val = Value::Float(if keep { 1.0 } else { 0.0 });
        } else if !keep {
            continue;
        }
        match val {
            Value::Float(f) => {
                series.pts.push((t, f));
                floats = true;
            }
            Value::Histogram(h) => hs.push((t, h)),
        }
    }
    if floats {
        series.pts.sort_by_key(|p| p.0);
    }
    series.hs = hs;
}

/// The matching signature of a label set.
pub(crate) fn signature(l: &Labels, on: bool, names: &[String]) -> String {
    let used = || {
        l.iter().filter(|lab| {
            let listed = names.iter().any(|n| *n == lab.name);
            if on { listed } else { !listed && lab.name != METRIC_NAME }
        })
    };
    // Sized once: growing it label by label reallocated several times per series.
    let len = used().map(|lab| lab.name.len() + lab.value.len() + 4).sum();
    let mut s = String::with_capacity(len);
    for lab in used() {
        s.push_str(&lab.name);
        s.push('\u{ff}');
        s.push_str(&lab.value);
        s.push('\u{ff}');
    }
    s
}

fn match_labels(l: &Labels, on: bool, names: &[String]) -> Labels {
    labels_from(
        l.iter()
            .filter(|lab| {
                let listed = names.iter().any(|n| *n == lab.name);
                if on { listed } else { !listed && lab.name != METRIC_NAME }
            })
            .cloned()
            .collect(),
    )
}

/// A label set as Prometheus' `Labels.String()` writes it in messages:
/// `{__name__="up", job="a"}`, names quoted when not legacy names.
fn go_labels(l: &Labels) -> String {
    let legacy = |n: &str| {
        let mut cs = n.chars();
        cs.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let parts: Vec<String> = l
        .iter()
        .map(|lab| {
            let name = if legacy(&lab.name) {
                lab.name.to_string()
            } else {
                crate::syntax::go_quote_str(&lab.name)
            };
            format!("{name}={}", crate::syntax::go_quote_str(&lab.value))
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

#[allow(clippy::too_many_arguments)]
fn result_metric(
    lhs: &Labels,
    rhs: &Labels,
    op: BinOp,
    on: bool,
    names: &[String],
    card: &VectorMatchCardinality,
    include: &[String],
    drop_schema: bool,
) -> Labels {
    let arithmetic = op.changes_metric_schema() || drop_schema;
    let mut v: Vec<Label> = lhs
        .iter()
        .filter(|l| {
            if arithmetic && SCHEMA_LABELS.contains(&l.name.as_str()) {
                return false;
            }
            if matches!(card, VectorMatchCardinality::OneToOne) {
                let listed = names.iter().any(|n| *n == l.name);
                if on { listed } else { !listed }
            } else {
                true
            }
        })
        .cloned()
        .collect();
    if !include.is_empty() {
        v.retain(|l| !include.iter().any(|n| *n == l.name));
        // A name listed twice is copied once, as Prometheus sets it twice.
        for (k, name) in include.iter().enumerate() {
            if include[..k].contains(name) {
                continue;
            }
            if let Some(val) = rhs.get(name) {
                v.push(Label::new(name.clone(), val));
            }
        }
    }
    labels_from(v)
}

#[cfg(test)]
mod tests {
    use cairn_model::{HistogramSample, Labels, Sample};
    use cairn_storage::{Appendable, MemStorage};

    use crate::{Engine, SampleValue, Value};

    fn storage(series: &[(&[(&str, &str)], f64)]) -> MemStorage {
        let s = MemStorage::new();
        let mut app = s.appender();
        for (labels, v) in series {
            app.append(&Labels::from_pairs(labels.iter().copied()), &[Sample::new(0, *v)])
                .unwrap();
        }
        app.commit().unwrap();
        s
    }

    fn labels_of(v: &Value) -> Vec<String> {
        let Value::Vector(v) = v else {
            panic!("not a vector: {v:?}")
        };
        let mut out: Vec<String> = v.iter().map(|s| s.metric.to_string()).collect();
        out.sort();
        out
    }

    /// Many-to-one: two "many" series meeting one "one" series with the same
    /// result labels fail in Prometheus whether or not a comparison keeps
    /// them, as it checks before it filters.
    #[test]
    fn clashing_result_labels_fail_even_where_a_comparison_drops_them() {
        let s = storage(&[
            (&[("__name__", "a"), ("instance", "x")], 1.0),
            (&[("__name__", "b"), ("instance", "x")], 2.0),
            (&[("__name__", "c"), ("instance", "x")], 100.0),
        ]);
        let e = Engine::default();
        let err = "multiple matches for labels: grouping labels must ensure unique matches";
        for q in [
            // All dropped, one dropped and one kept, both kept.
            r#"{__name__=~"a|b"} > on(instance) group_left(__name__) c"#,
            r#"{__name__=~"a|b"} > on(instance) group_left(__name__) (c - 98.5)"#,
            r#"{__name__=~"a|b"} < on(instance) group_left(__name__) c"#,
            r#"c < on(instance) group_right(__name__) {__name__=~"a|b"}"#,
        ] {
            assert_eq!(e.instant(&s, q, 0).unwrap_err().to_string(), err, "{q}");
        }
        // Distinct result labels: the comparison filters as usual.
        let r = e
            .instant(&s, r#"{__name__=~"a|b"} > on(instance) group_left c"#, 0)
            .unwrap();
        assert!(labels_of(&r.value).is_empty());
    }

    #[test]
    fn many_to_many_names_the_series_as_prometheus_writes_labels() {
        let s = storage(&[
            (&[("__name__", "a"), ("instance", "x")], 1.0),
            (&[("__name__", "b"), ("instance", "x")], 2.0),
            (&[("__name__", "c"), ("instance", "x")], 3.0),
        ]);
        let err = Engine::default()
            .instant(&s, r#"c + on(instance) {__name__=~"a|b"}"#, 0)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            r#"found duplicate series for the match group {instance="x"} on the right hand-side of the operation: [{__name__="a", instance="x"}, {__name__="b", instance="x"}];many-to-many matching not allowed: matching labels must be unique on one side"#
        );
        assert_eq!(
            super::go_labels(&Labels::from_pairs([("a.b", "x\"y"), ("k", "é\n")])),
            r#"{"a.b"="x\"y", k="é\n"}"#
        );
    }

    /// A comparison with `bool` drops the name before `group_left(__name__)`
    /// copies the one side's in, so the result carries the one side's name.
    #[test]
    fn bool_keeps_a_name_copied_by_group_modifiers() {
        let s = storage(&[
            (&[("__name__", "a"), ("instance", "x")], 1.0),
            (&[("__name__", "c"), ("instance", "x")], 100.0),
        ]);
        let e = Engine::default();
        let r = e
            .instant(&s, "a < bool on(instance) group_left(__name__) c", 0)
            .unwrap();
        assert_eq!(labels_of(&r.value), vec![r#"c{instance="x"}"#]);
        let r = e
            .instant(&s, "c > bool on(instance) group_right(__name__) a", 0)
            .unwrap();
        assert_eq!(labels_of(&r.value), vec![r#"c{instance="x"}"#]);
        // Without the name among the copied labels, bool drops it.
        let r = e.instant(&s, "a < bool on(instance) group_left c", 0).unwrap();
        assert_eq!(labels_of(&r.value), vec![r#"{instance="x"}"#]);
    }

    /// Upstream fill-modifier.test:131: a filled-in "many" side takes the one
    /// side's match labels, not all of its labels.
    #[test]
    fn fill_group_left_missing_many_side_keeps_match_labels() {
        let s = storage(&[
            (&[("__name__", "l"), ("job", "foo"), ("instance", "a")], 10.0),
            (&[("__name__", "r"), ("job", "foo"), ("instance", "a")], 100.0),
            (&[("__name__", "r"), ("job", "foo"), ("instance", "c")], 300.0),
        ]);
        let r = Engine::default()
            .instant(&s, "l + ignoring(job) group_left fill(0) r", 0)
            .unwrap();
        assert_eq!(
            labels_of(&r.value),
            vec![r#"{instance="a", job="foo"}"#, r#"{instance="c"}"#]
        );
    }

    #[test]
    fn a_label_listed_twice_in_group_left_or_right_is_copied_once() {
        let s = storage(&[
            (&[("__name__", "a"), ("i", "1"), ("v", "x")], 2.0),
            (&[("__name__", "b"), ("i", "1"), ("v", "x")], 3.0),
            (&[("__name__", "c"), ("i", "1")], 5.0),
        ]);
        let e = Engine::default();
        for q in [
            "a % ignoring() group_right(i, i) b",
            r#"a % ignoring() group_right("i", i) b"#,
            "b * ignoring(v) group_left(v, v) c",
        ] {
            let r = e.instant(&s, q, 0).unwrap();
            assert_eq!(labels_of(&r.value).len(), 1, "{q}");
        }
        let r = e.instant(&s, "a * on(i) group_right(v, v) b", 0).unwrap();
        assert_eq!(labels_of(&r.value), vec![r#"{i="1", v="x"}"#]);
    }

    #[test]
    fn a_bool_match_group_clashes_on_labels_without_the_name() {
        let s = storage(&[
            (&[("__name__", "a"), ("i", "1")], 1.0),
            (&[("__name__", "b"), ("i", "1")], 2.0),
            (&[("__name__", "a"), ("i", "2")], 1.0),
            (&[("__name__", "c"), ("i", "1")], 1.0),
            (&[("__name__", "c"), ("i", "2")], 1.0),
        ]);
        let clash = "multiple matches for labels: grouping labels must ensure unique matches";
        let e = Engine::default();
        for q in [
            r#"{__name__=~"a|b"} >= bool ignoring() group_left() c"#,
            r#"c <= bool ignoring() group_right() {__name__=~"a|b"}"#,
            r#"{__name__=~"a|b"} + ignoring() group_left() c"#,
        ] {
            assert_eq!(e.instant(&s, q, 0).unwrap_err().to_string(), clash, "{q}");
        }
        // Without bool the names stay; in another match group nothing clashes.
        let r = e
            .instant(&s, r#"{__name__=~"a|b"} >= ignoring() group_left() c"#, 0)
            .unwrap();
        assert_eq!(labels_of(&r.value), vec![r#"a{i="1"}"#, r#"a{i="2"}"#, r#"b{i="1"}"#]);
        let r = e.instant(&s, r#"a >= bool ignoring() group_left() c"#, 0).unwrap();
        assert_eq!(labels_of(&r.value), vec![r#"{i="1"}"#, r#"{i="2"}"#]);
        // With delayed name removal the names are there when it checks: the
        // clash is found at the end.
        let delayed = Engine::new(crate::EngineOptions {
            delayed_name_removal: true,
            ..Default::default()
        });
        let q = r#"{__name__=~"a|b"} >= bool ignoring() group_left() c"#;
        assert_eq!(
            delayed.instant(&s, q, 0).unwrap_err().to_string(),
            "vector cannot contain metrics with the same labelset"
        );
    }

    /// A histogram series `h{k="v"}` with buckets (0.5, 1] and (1, 2] of 1
    /// and 3, and a float series `f{k="v"}` of 2.
    fn histogram_and_float() -> MemStorage {
        let s = storage(&[(&[("__name__", "f"), ("k", "v")], 2.0)]);
        let h = cairn_model::Histogram {
            count: 4.0,
            sum: 5.0,
            positive: vec![(0, 1.0), (1, 3.0)],
            ..cairn_model::Histogram::default()
        };
        let mut app = s.appender();
        app.append_histograms(
            &Labels::from_pairs([("__name__", "h"), ("k", "v")]),
            &[HistogramSample::new(0, h)],
        )
        .unwrap();
        app.commit().unwrap();
        s
    }

    fn counts(v: &Value) -> Vec<(String, f64)> {
        let Value::Vector(v) = v else {
            panic!("not a vector: {v:?}")
        };
        v.iter()
            .map(|s| match &s.value {
                SampleValue::Histogram(h) => (s.metric.to_string(), h.count),
                SampleValue::Float(f) => panic!("a float {f}"),
            })
            .collect()
    }

    #[test]
    fn trims_keep_the_name_and_drop_floats_with_an_info() {
        let s = histogram_and_float();
        let e = Engine::default();
        let r = e.instant(&s, "h </ 1", 0).unwrap();
        assert_eq!(counts(&r.value), [(r#"h{k="v"}"#.to_string(), 1.0)]);
        assert!(r.infos.is_empty());
        let r = e.instant(&s, "h >/ on (k) f", 0).unwrap();
        assert_eq!(counts(&r.value), [(r#"{k="v"}"#.to_string(), 0.0)]);
        let r = e.instant(&s, "f >/ 1", 0).unwrap();
        assert!(counts(&r.value).is_empty());
        assert_eq!(
            r.infos,
            [r#"PromQL info: incompatible sample types encountered for binary operator ">/": float >/ float (1:1)"#]
        );
        let r = e.instant(&s, "1 </ h", 0).unwrap();
        assert!(counts(&r.value).is_empty());
        assert_eq!(
            r.infos,
            [
                r#"PromQL info: incompatible sample types encountered for binary operator "</": float </ histogram (1:1)"#
            ]
        );
        let r = e.instant(&s, "{__name__=~\"f|h\"} </ ignoring (__name__) group_left f", 0);
        assert_eq!(counts(&r.unwrap().value), [(r#"h{k="v"}"#.to_string(), 4.0)]);
        let err = e.instant(&s, "1 </ 2", 0).unwrap_err();
        assert_eq!(err.to_string(), r#"operator "</" not allowed for Scalar operations"#);
    }
}
