//! `info(v, {label selector})` lowered: the input, and the select of the
//! info series whose data labels are added to the input's series.
//!
//! Which info series are read depends on the input's values of the
//! identifying labels, known only once it is evaluated: the plan holds the
//! select without them (so [`super::decide`] bounds and places it as any
//! other), and evaluation (`info.rs`) adds them.

use cairn_model::{METRIC_NAME, MatchOp, Matcher};
use promql_parser::parser::{AtModifier, Call as ParsedCall, Expr};

use super::QueryTimes;
use super::{MatcherSet, Node, Selector};
use crate::QueryError;
use crate::eval::{Result, convert_matchers};

/// The info metric read when the label selector names none.
const DEFAULT_INFO_METRIC: &str = "target_info";

/// What a name matcher of only negative `__name__` matchers stands beside:
/// info metrics by naming convention.
const ANY_INFO_METRIC: &str = ".+_info";

#[derive(Debug, Clone)]
pub(crate) struct Info {
    /// The series to enrich.
    pub input: Node,
    /// The info series' select, without the identifying labels' matchers:
    /// the info metrics' names and the data label matchers, read at the
    /// times the input's first selector reads (its `@` and offset, or those
    /// of the subqueries around it).
    pub select: Selector,
    /// The `__name__` matchers of the info metrics: an input series they
    /// all match is an info series itself, passed on unchanged.
    pub names: Vec<Matcher>,
    /// The label selector's other matchers: the data labels added are those
    /// they name (all when there are none), and a series no info series
    /// matches is dropped unless they all match an empty value.
    pub data: Vec<Matcher>,
}

/// `info(...)` as parsed, lowered with `lower` for its input.
pub(super) fn lower_info(call: &ParsedCall, times: QueryTimes, lower: impl Fn(&Expr) -> Result<Node>) -> Result<Info> {
    let args = &call.args.args;
    let input = args
        .first()
        .ok_or_else(|| QueryError::BadData("info() needs an instant vector".into()))?;
    let given = match args.get(1).map(|a| a.as_ref()) {
        None => Vec::new(),
        Some(Expr::VectorSelector(vs)) => match convert_matchers(vs)?.as_slice() {
            [set] => set.clone(),
            _ => return Err(QueryError::BadData("info()'s label selector cannot hold \"or\"".into())),
        },
        Some(_) => return Err(QueryError::BadData("expected label selectors only".into())),
    };
    let (given_names, data): (Vec<Matcher>, Vec<Matcher>) = given.into_iter().partition(|m| m.name == METRIC_NAME);
    let names = info_names(given_names)?;
    let (at, offset) = first_selector_time(input, &times)?.unwrap_or((None, 0));
    let matchers = names.iter().chain(&data).cloned().collect();
    let select = Selector {
        text: match args.get(1) {
            Some(sel) => format!("info series {sel}"),
            None => format!("info series {DEFAULT_INFO_METRIC}"),
        },
        offset,
        at,
        sets: vec![MatcherSet {
            matchers,
            bound: usize::MAX,
            shards: 1,
        }],
        // Info series are floats, read as they are.
        detect_resets: false,
        extended: None,
    };
    Ok(Info {
        input: lower(input)?,
        select,
        names,
        data,
    })
}

/// The `__name__` matchers that pick info metrics from those given: as
/// given when one is positive; beside any name ending in `_info` when all
/// are negative; `target_info` when there are none.
fn info_names(given: Vec<Matcher>) -> Result<Vec<Matcher>> {
    if given
        .iter()
        .any(|m| matches!(m.op, MatchOp::Equal | MatchOp::RegexMatch))
    {
        return Ok(given);
    }
    if given.is_empty() {
        return Ok(vec![Matcher::equal(METRIC_NAME, DEFAULT_INFO_METRIC)]);
    }
    let any_info = Matcher::new(MatchOp::RegexMatch, METRIC_NAME, ANY_INFO_METRIC)
        .map_err(|e| QueryError::Internal(e.to_string()))?;
    Ok(std::iter::once(any_info).chain(given).collect())
}

/// The `@` and offset (ms) the info series are read with: those of the
/// first selector in `e` (written order), each subquery around it adding
/// its offset until one with an `@` fixes the time. `None` without a selector.
fn first_selector_time(e: &Expr, times: &QueryTimes) -> Result<Option<(Option<AtModifier>, i64)>> {
    let first = |e: &Expr| first_selector_time(e, times);
    Ok(match e {
        Expr::VectorSelector(vs) => Some((vs.at.clone(), times.offset(&vs.offset)?)),
        Expr::MatrixSelector(ms) => Some((ms.vs.at.clone(), times.offset(&ms.vs.offset)?)),
        Expr::Subquery(sq) => match first(&sq.expr)? {
            None => None,
            Some((Some(at), offset)) => Some((Some(at), offset)),
            Some((None, offset)) => Some((sq.at.clone(), offset + times.offset(&sq.offset)?)),
        },
        Expr::Paren(p) => first(&p.expr)?,
        Expr::Unary(u) => first(&u.expr)?,
        Expr::Call(call) => first_of(call.args.args.iter().map(|a| &**a), first)?,
        Expr::Aggregate(a) => first_of([&*a.expr].into_iter().chain(a.param.as_deref()), first)?,
        Expr::Binary(b) => first_of([&*b.lhs, &*b.rhs], first)?,
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => None,
    })
}

/// The first of `es` that has a selector time.
fn first_of<'e, T>(
    es: impl IntoIterator<Item = &'e Expr>,
    first: impl Fn(&Expr) -> Result<Option<T>>,
) -> Result<Option<T>> {
    for e in es {
        if let Some(t) = first(e)? {
            return Ok(Some(t));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lowered(q: &str) -> Info {
        let Ok(Expr::Call(call)) = promql_parser::parser::parse(q) else {
            panic!("{q} is not a call");
        };
        let times = QueryTimes::of(&crate::steps::Ctx {
            start: 0,
            end: 0,
            step: 0,
        });
        lower_info(&call, times, |e| super::super::lower(e, times)).unwrap()
    }

    fn text(ms: &[Matcher]) -> Vec<String> {
        ms.iter().map(|m| format!("{}{:?}{}", m.name, m.op, m.value)).collect()
    }

    #[test]
    fn target_info_is_read_when_no_info_metric_is_named() {
        let info = lowered("info(up)");
        assert_eq!(text(&info.names), ["__name__Equaltarget_info"]);
        assert!(info.data.is_empty());
        assert_eq!(text(&info.select.sets[0].matchers), ["__name__Equaltarget_info"]);
    }

    #[test]
    fn negative_name_matchers_stand_beside_any_info_metric() {
        let info = lowered(r#"info(up, {__name__!="build_info", data=~".+"})"#);
        assert_eq!(
            text(&info.names),
            ["__name__RegexMatch.+_info", "__name__NotEqualbuild_info"]
        );
        assert_eq!(text(&info.data), ["dataRegexMatch.+"]);
        let positive = lowered(r#"info(up, {__name__=~"a_.+", __name__!~"b_.+"})"#);
        assert_eq!(
            text(&positive.names),
            ["__name__RegexMatcha_.+", "__name__RegexNoMatchb_.+"]
        );
    }

    #[test]
    fn the_info_series_are_read_when_the_first_selector_reads() {
        let info = lowered("info(rate(up[5m] offset 1m) + other @ 60)");
        assert_eq!((info.select.at.is_none(), info.select.offset), (true, 60_000));
        let info = lowered("info(up @ 60)");
        assert!(info.select.at.is_some());
        // Subqueries add their offsets until one fixes the time.
        let info = lowered("info(last_over_time(max_over_time(up[1m:] offset 2m)[5m:] offset 3m @ 100))");
        assert_eq!((info.select.at.is_some(), info.select.offset), (true, 300_000));
        let info = lowered("info(last_over_time(max_over_time(up[1m:] offset 2m)[5m:] offset 3m))");
        assert_eq!((info.select.at.is_none(), info.select.offset), (true, 300_000));
    }
}
