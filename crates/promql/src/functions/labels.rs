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

fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (ab, bb) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < ab.len() && j < bb.len() {
        if ab[i].is_ascii_digit() && bb[j].is_ascii_digit() {
            let si = i;
            while i < ab.len() && ab[i].is_ascii_digit() {
                i += 1;
            }
            let sj = j;
            while j < bb.len() && bb[j].is_ascii_digit() {
                j += 1;
            }
            let na = a[si..i].trim_start_matches('0');
            let nb = b[sj..j].trim_start_matches('0');
            let o = na.len().cmp(&nb.len()).then_with(|| na.cmp(nb));
            if o != std::cmp::Ordering::Equal {
                return o;
            }
        } else {
            if ab[i] != bb[j] {
                return ab[i].cmp(&bb[j]);
            }
            i += 1;
            j += 1;
        }
    }
    (ab.len() - i).cmp(&(bb.len() - j))
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
