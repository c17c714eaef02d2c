//! Functions of labels: `label_replace`, `label_join`, and the sorts.

use cairn_model::METRIC_NAME;

use super::{arg, arg_str};
use crate::QueryError;
use crate::eval::{Ev, Result};
use crate::plan::Call;
use crate::series::{Series, Val, merge_same_labelset};
use crate::steps::Ctx;

/// Whether Prometheus takes `name` for a label name: not empty, valid UTF-8
/// (a byte escape that is not reaches here as U+FFFD, `escapes.rs`).
fn valid_label_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('\u{fffd}')
}

// The string arguments are checked before the input is evaluated, as in
// Prometheus, so their errors come before any of the input's.
pub(super) fn label_replace(ev: &mut Ev, call: &Call, c: Ctx) -> Result<Val> {
    let dst = arg_str(ev, arg(call, 1)?, c)?;
    let repl = arg_str(ev, arg(call, 2)?, c)?;
    let src = arg_str(ev, arg(call, 3)?, c)?;
    let re = arg_str(ev, arg(call, 4)?, c)?;
    let re = regex::Regex::new(&format!("^(?s:{re})$"))
        .map_err(|_| QueryError::Execution(format!("invalid regular expression in label_replace(): {re}")))?;
    if !valid_label_name(&dst) {
        return Err(QueryError::Execution(format!(
            "invalid destination label name in label_replace(): {dst}"
        )));
    }
    let mut v = ev.eval_vector(arg(call, 0)?, c)?;
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
    // Series made equal are merged, or fail where they meet, as in Prometheus.
    Ok(Val::Vector(merge_same_labelset(v)?))
}

pub(super) fn label_join(ev: &mut Ev, call: &Call, c: Ctx) -> Result<Val> {
    let dst = arg_str(ev, arg(call, 1)?, c)?;
    let sep = arg_str(ev, arg(call, 2)?, c)?;
    let mut srcs = Vec::new();
    for a in &call.args[3..] {
        let src = arg_str(ev, a, c)?;
        if !valid_label_name(&src) {
            return Err(QueryError::Execution(format!(
                "invalid source label name in label_join(): {src}"
            )));
        }
        srcs.push(src);
    }
    if !valid_label_name(&dst) {
        return Err(QueryError::Execution(format!(
            "invalid destination label name in label_join(): {dst}"
        )));
    }
    let mut v = ev.eval_vector(arg(call, 0)?, c)?;
    for s in &mut v {
        let joined: Vec<&str> = srcs.iter().map(|n| s.labels.get(n).unwrap_or("")).collect();
        let joined = joined.join(&sep);
        s.labels.set(&dst, &joined);
        if dst == METRIC_NAME {
            s.drop_name = false;
        }
    }
    Ok(Val::Vector(merge_same_labelset(v)?))
}

pub(super) fn sort(ev: &mut Ev, call: &Call, desc: bool, c: Ctx) -> Result<Val> {
    let mut v = ev.eval_vector(arg(call, 0)?, c)?;
    ev.sort_warning();
    // Sorting orders floats: histograms are left out.
    if v.iter().any(|s| !s.hs.is_empty()) {
        v.iter_mut().for_each(|s| s.hs.clear());
        v.retain(|s| !s.pts.is_empty());
    }
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

pub(super) fn sort_by_label(ev: &mut Ev, call: &Call, desc: bool, c: Ctx) -> Result<Val> {
    let mut v = ev.eval_vector(arg(call, 0)?, c)?;
    ev.sort_warning();
    let mut names = Vec::new();
    for a in &call.args[1..] {
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

/// The order of label values in `sort_by_label`, as the natural sort
/// Prometheus uses (github.com/facette/natsort) has it: values are split
/// into runs of ASCII digits and runs of other characters and compared run
/// by run, two runs of digits that fit an int64 by their numbers, anything
/// else by bytes; a value whose runs all equal the first runs of the other
/// comes first. Where that sort says neither of two different values comes
/// first (an empty value against any other; numbers written with other
/// leading zeros as the last runs), Prometheus' order follows the order its
/// storage returns the series in: here the empty value comes first and the
/// others by their bytes, so that the order is total.
fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (mut x, mut y) = (digit_runs(a), digit_runs(b));
    loop {
        match (x.next(), y.next()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) => {
                let o = match (p.parse::<i64>(), q.parse::<i64>()) {
                    (Ok(m), Ok(n)) => m.cmp(&n),
                    _ => p.cmp(q),
                };
                if o != Ordering::Equal {
                    return o;
                }
            }
        }
    }
}

/// `s` as runs of ASCII digits and runs of anything else.
fn digit_runs(s: &str) -> impl Iterator<Item = &str> {
    let mut rest = s;
    std::iter::from_fn(move || {
        let digits = rest.as_bytes().first()?.is_ascii_digit();
        let end = rest
            .bytes()
            .position(|b| b.is_ascii_digit() != digits)
            .unwrap_or(rest.len());
        let (run, tail) = rest.split_at(end);
        rest = tail;
        Some(run)
    })
}

#[cfg(test)]
mod tests {
    use cairn_model::{Labels, Sample};
    use cairn_storage::{Appendable, MemStorage};

    fn storage() -> MemStorage {
        let s = MemStorage::new();
        let mut app = s.appender();
        // x{i="1"} up to minute 2 (seen until 6:59 by the lookback),
        // x{i="2"} from minute 8.
        for (i, range) in [("1", 0..=2), ("2", 8..=10)] {
            let samples: Vec<Sample> = range.map(|m| Sample::new(m * 60_000, 1.0)).collect();
            app.append(&Labels::from_pairs([("__name__", "x"), ("i", i)]), &samples)
                .unwrap();
        }
        app.append(
            &Labels::from_pairs([("__name__", "y"), ("i", "1")]),
            &[Sample::new(0, 1.0)],
        )
        .unwrap();
        app.append(
            &Labels::from_pairs([("__name__", "y"), ("i", "2")]),
            &[Sample::new(0, 2.0)],
        )
        .unwrap();
        app.commit().unwrap();
        s
    }

    #[test]
    fn label_values_sort_as_prometheus_natural_sort_has_them() {
        use std::cmp::Ordering::{Greater, Less};
        for (a, b, want) in [
            ("a2", "a10", Less),
            ("a10", "a2", Greater),
            // A run that ends sooner comes first, whatever follows it.
            ("a1", "a-", Less),
            ("host1", "host-a", Less),
            ("x", "x1", Less),
            ("1", "1b", Less),
            ("01a", "1b", Less),
            ("9", "10", Less),
            ("10", ":", Less),
            ("/", "0", Less),
            ("B", "a", Less),
            // Numbers past int64 compare by their bytes.
            ("99999999999999999999", "10", Greater),
            // Neither comes first for natsort: empty first, then bytes.
            ("", "0", Less),
            ("", "a", Less),
            ("01", "1", Less),
            ("a01", "a1", Less),
        ] {
            assert_eq!(super::natural_cmp(a, b), want, "{a} {b}");
            assert_eq!(super::natural_cmp(b, a), want.reverse(), "{b} {a}");
        }
    }

    #[test]
    fn string_arguments_fail_before_the_input_does() {
        let s = storage();
        let e = crate::Engine::new(crate::EngineOptions::default());
        // `-{i="1"}` is x's and y's series without their names: as the
        // input, it fails with the duplicate label set.
        for (q, want) in [
            (
                r#"label_replace(-{i="1"}, "i", "", "", "(")"#,
                "invalid regular expression in label_replace(): (",
            ),
            (
                r#"label_replace(-{i="1"}, "", "", "", "")"#,
                "invalid destination label name in label_replace(): ",
            ),
            (
                r#"label_join(-{i="1"}, "", "", "i")"#,
                "invalid destination label name in label_join(): ",
            ),
            (
                r#"label_join(-{i="1"}, "i", "", "")"#,
                "invalid source label name in label_join(): ",
            ),
            (
                r#"label_join(y, "i", "", "i", "")"#,
                "invalid source label name in label_join(): ",
            ),
            (r#"count_values("", -{i="1"})"#, r#"invalid label name """#),
        ] {
            assert_eq!(e.instant(&s, q, 60_000).unwrap_err().to_string(), want, "{q}");
        }
    }

    #[test]
    fn series_made_equal_fail_where_they_meet_even_inside_an_aggregation() {
        let s = storage();
        let e = crate::Engine::new(crate::EngineOptions::default());
        let dup = "vector cannot contain metrics with the same labelset";
        for q in [
            r#"sum(label_join(y, "i", "", "missing"))"#,
            r#"sum(label_replace(y, "i", "", "", ""))"#,
            r#"label_replace(y, "i", "z", "", "") * 2"#,
        ] {
            assert_eq!(e.instant(&s, q, 60_000).unwrap_err().to_string(), dup, "{q}");
            assert_eq!(e.range(&s, q, 0, 60_000, 60_000).unwrap_err().to_string(), dup, "{q}");
        }
        // Over a range, series that never share a step merge into one.
        let r = e
            .range(&s, r#"sum(label_replace(x, "i", "", "", ""))"#, 0, 600_000, 60_000)
            .unwrap();
        match r.value {
            crate::Value::Matrix(m) => assert_eq!((m.len(), m[0].floats.len()), (1, 10)),
            other => panic!("{other:?}"),
        }
    }
}
