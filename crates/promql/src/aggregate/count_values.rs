//! `count_values`: per group and step, how many series have each value.

use foldhash::{HashMap, HashMapExt};

use cairn_model::go_float::{format_f, push_exposition};
use cairn_model::{Histogram, Labels, METRIC_NAME};

use promql_parser::parser::Expr;
use promql_parser::util::{ExprVisitor, walk_expr};

use crate::QueryError;
use crate::eval::Result;
use crate::operand::Value;
use crate::ops::AggOp;
use crate::series::{OutAcc, Series, StepIter, Val};
use crate::steps::Ctx;

/// Prometheus' check of the label each `count_values` of `ast` (the parse
/// of `query`) writes: a name of valid UTF-8. A literal of byte escapes
/// that are not reaches the parse with U+FFFD in their place
/// (`escapes.rs`), so it is read again as written, for the check and for
/// Prometheus' words, which show the bytes.
pub(crate) fn check_label_names(ast: &Expr, query: &str) -> Result<()> {
    struct Check<'q>(&'q str);
    impl ExprVisitor for Check<'_> {
        type Error = QueryError;
        fn pre_visit(&mut self, e: &Expr) -> Result<bool> {
            if let Expr::Aggregate(a) = e
                && matches!(AggOp::of(a.op), Ok(AggOp::CountValues))
                && let Some(Expr::StringLiteral(label)) = a.param.as_deref()
                && label.val.contains('\u{FFFD}')
            {
                let written = crate::syntax::string_literals(self.0)
                    .into_iter()
                    .map(crate::escapes::literal_bytes)
                    .find(|b| std::str::from_utf8(b).is_err() && String::from_utf8_lossy(b) == label.val);
                if let Some(bytes) = written {
                    return Err(QueryError::Execution(format!(
                        "invalid label name {}",
                        crate::syntax::go_quote_bytes(&bytes)
                    )));
                }
            }
            Ok(true)
        }
    }
    if !query.contains("count_values") {
        return Ok(());
    }
    walk_expr(&mut Check(query), ast).map(|_| ())
}

/// The label `count_values` writes its values into, checked as Prometheus
/// checks it before it evaluates the input (so its error comes first).
pub(crate) fn value_label(param: &Option<Val>) -> Result<String> {
    let label = match param {
        Some(Val::Str(s)) => s.clone(),
        _ => return Err(QueryError::BadData("count_values needs a string parameter".into())),
    };
    if label.is_empty() {
        return Err(QueryError::Execution(format!("invalid label name {label:?}")));
    }
    Ok(label)
}

pub(super) fn count_values(
    param: &Option<Val>,
    grouping: &crate::plan::Grouping,
    input: &[Series],
    groups: &[Labels],
    sgroup: &[usize],
    c: Ctx,
) -> Result<Val> {
    let n = c.n();
    let mut cur: Vec<(usize, String)> = Vec::new();
    let label = value_label(param)?;
    // Prometheus writes the value label before it removes what `without`
    // removes: a value label named in the list, or `__name__`, is gone again.
    let kept = !(grouping.without && (label == METRIC_NAME || grouping.names.contains(&label)));
    let mut acc = OutAcc::new();
    // Histograms count by their text, as Prometheus writes them.
    let mut it = StepIter::<Value>::new(input, c);
    for i in 0..n {
        let t = c.ts(i);
        cur.clear();
        it.at(t, |j, v| {
            cur.push((
                j,
                match v {
                    Value::Float(f) => format_f(*f),
                    Value::Histogram(h) => histogram_text(h),
                },
            ))
        });
        let mut counts: Vec<(Labels, f64)> = Vec::new();
        let mut idx: HashMap<Labels, usize> = HashMap::new();
        for (j, v) in &cur {
            let mut l = groups[sgroup[*j]].clone();
            if kept {
                l.set(&label, v);
            }
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

/// A histogram as Prometheus' `FloatHistogram.String` writes it: count,
/// sum, and the populated buckets from the lowest up with their bounds.
fn histogram_text(h: &Histogram) -> String {
    let mut out = String::from("{count:");
    push_exposition(&mut out, h.count);
    out.push_str(", sum:");
    push_exposition(&mut out, h.sum);
    for b in h.buckets().iter().filter(|b| b.count != 0.0) {
        out.push_str(if b.lower_inclusive { ", [" } else { ", (" });
        push_exposition(&mut out, b.lower);
        out.push(',');
        push_exposition(&mut out, b.upper);
        out.push_str(if b.upper_inclusive { "]:" } else { "):" });
        push_exposition(&mut out, b.count);
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_of_invalid_utf8_is_refused_in_prometheus_words() {
        let check = |q: &str| check_label_names(&crate::parse(q).unwrap(), q);
        let err = check(r#"sum(count_values("a\xc5z", m))"#).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Execution);
        assert_eq!(err.to_string(), r#"invalid label name "a\xc5z""#);
        // U+FFFD itself, and bytes that spell valid UTF-8, are valid names.
        for q in [
            r#"count_values("a\ufffdz", m)"#,
            "count_values(\"a\u{FFFD}z\", m)",
            r#"count_values("\xc3\xbf", m)"#,
        ] {
            assert!(check(q).is_ok(), "{q}");
        }
    }

    fn labels_at_minute_five(q: &str) -> Vec<Labels> {
        use cairn_model::Sample;
        use cairn_storage::{Appendable, MemStorage};
        let s = MemStorage::new();
        let mut app = s.appender();
        for (job, v) in [("a", 1.0), ("b", 2.0)] {
            let samples: Vec<Sample> = (0..=10).map(|i| Sample::new(i * 60_000, v)).collect();
            app.append(&Labels::from_pairs([("__name__", "m"), ("job", job)]), &samples)
                .unwrap();
        }
        app.commit().unwrap();
        match crate::Engine::new(crate::EngineOptions::default())
            .instant(&s, q, 300_000)
            .unwrap()
            .value
        {
            crate::Value::Vector(v) => {
                let mut l: Vec<Labels> = v.into_iter().map(|s| s.metric).collect();
                l.sort();
                l
            }
            other => panic!("not a vector: {other:?}"),
        }
    }

    #[test]
    fn without_removes_its_labels_after_the_value_label_is_written() {
        let l = |pairs: &[(&str, &str)]| Labels::from_pairs(pairs.iter().copied());
        // A value label `without` removes (listed, or `__name__`) is gone again:
        // series differing only in value then fall in one group.
        for q in [
            r#"count_values without () ("__name__", m)"#,
            r#"count_values without (v) ("v", m)"#,
            r#"count_values without (v, job) ("v", m)"#,
        ] {
            let want = if q.contains("job)") {
                vec![l(&[])]
            } else {
                vec![l(&[("job", "a")]), l(&[("job", "b")])]
            };
            assert_eq!(labels_at_minute_five(q), want, "{q}");
        }
        // Any other value label stays, and `by` always keeps it.
        assert_eq!(
            labels_at_minute_five(r#"count_values without (job) ("v", m)"#),
            [l(&[("v", "1")]), l(&[("v", "2")])]
        );
        assert_eq!(
            labels_at_minute_five(r#"count_values by (job) ("__name__", m)"#),
            [
                l(&[("__name__", "1"), ("job", "a")]),
                l(&[("__name__", "2"), ("job", "b")])
            ]
        );
    }

    #[test]
    fn histograms_are_written_as_prometheus_writes_them() {
        let h = Histogram {
            schema: 0,
            count: 20.0,
            sum: 10.0,
            zero_threshold: 0.001,
            zero_count: 2.0,
            positive: vec![(0, 1.0), (1, 2.0)],
            negative: vec![(0, 1.0), (1, 2.0)],
            ..Histogram::default()
        };
        assert_eq!(
            histogram_text(&h),
            "{count:20, sum:10, [-2,-1):2, [-1,-0.5):1, [-0.001,0.001]:2, (0.5,1]:1, (1,2]:2}"
        );
    }
}
