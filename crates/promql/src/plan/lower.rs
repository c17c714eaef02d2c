//! The parsed query lowered to plan nodes: parentheses gone, names resolved
//! to enums, selectors' matchers converted. Decisions come later
//! ([`super::decide`]); every node starts on the evaluating thread.

use cairn_model::{Label, Labels, METRIC_NAME};
use promql_parser::label::MatchOp;
use promql_parser::parser::{AtModifier, Expr, LabelModifier};

use super::durations::QueryTimes;
use super::{AggStrategy, Aggregate, Binary, Call, Grouping, MatcherSet, Node, Selector, Subquery};
use crate::QueryError;
use crate::eval::{Result, convert_matchers};
use crate::func::Func;
use crate::ops::{AggOp, BinOp};
use crate::series::labels_from;

/// `e` lowered for a query of `times` (which duration expressions need).
pub(crate) fn lower(e: &Expr, times: QueryTimes) -> Result<Node> {
    let lower = |e: &Expr| lower(e, times);
    Ok(match e {
        Expr::NumberLiteral(n) => Node::Number(n.val),
        Expr::StringLiteral(s) => Node::Str(s.val.clone()),
        Expr::Paren(p) => lower(&p.expr)?,
        Expr::Unary(u) if u.plus => lower(&u.expr)?,
        Expr::Unary(u) => Node::Neg(Box::new(lower(&u.expr)?)),
        Expr::VectorSelector(vs) => Node::Vector(selector(vs, times)?),
        Expr::MatrixSelector(ms) => Node::Matrix(selector(&ms.vs, times)?, times.range(&ms.range, &ms.range_expr)?),
        Expr::Subquery(sq) => Node::Subquery(Box::new(Subquery {
            inner: lower(&sq.expr)?,
            range: times.range(&sq.range, &sq.range_expr)?,
            step: times.step(&sq.step, &sq.step_expr)?.filter(|&s| s > 0),
            offset: times.offset(&sq.offset)?,
            at: sq.at.clone(),
            threads: 1,
        })),
        // The query's step and range, as Prometheus folds them.
        Expr::Call(call) if call.func.name == "step" => Node::Number(times.step_secs()),
        Expr::Call(call) if call.func.name == "range" => Node::Number(times.range_secs()),
        Expr::Call(call) => {
            let name = call.func.name;
            let func =
                Func::of(name).ok_or_else(|| QueryError::BadData(format!("function \"{name}\" is not supported")))?;
            if func == Func::Info {
                return Ok(Node::Info(Box::new(super::info::lower_info(call, times, lower)?)));
            }
            let absent_labels = match (func, call.args.args.first()) {
                (Func::Absent | Func::AbsentOverTime, Some(arg)) => absent_labels(arg),
                _ => Labels::empty(),
            };
            let args: Vec<Node> = call.args.args.iter().map(|a| lower(a)).collect::<Result<_>>()?;
            for arg in &args {
                if let Node::Matrix(
                    Selector {
                        extended: Some(modifier),
                        ..
                    },
                    _,
                ) = arg
                {
                    crate::extended::check_function(*modifier, name)?;
                }
            }
            Node::Call(Call {
                func,
                name,
                args,
                absent_labels,
                of_selector: call.args.args.first().is_some_and(|a| is_selector(a)),
            })
        }
        Expr::Aggregate(a) => {
            let grouping = match &a.modifier {
                Some(LabelModifier::Include(l)) => Grouping {
                    without: false,
                    names: l.labels.clone(),
                },
                Some(LabelModifier::Exclude(l)) => Grouping {
                    without: true,
                    names: l.labels.clone(),
                },
                None => Grouping {
                    without: false,
                    names: Vec::new(),
                },
            };
            let input = lower(&a.expr)?;
            let mut param = a.param.as_deref().map(lower).transpose()?;
            if let Some(param) = &mut param {
                as_unprepared(param);
            }
            Node::Aggregate(Box::new(Aggregate {
                op: AggOp::of(a.op)?,
                grouping,
                param,
                param_read_once: input.step_invariant(),
                input,
                strategy: AggStrategy::NodeByNode { threads: 1 },
            }))
        }
        Expr::Binary(b) => Node::Binary(Box::new(Binary {
            op: BinOp::of(b.op)?,
            return_bool: b.return_bool(),
            modifier: b.modifier.clone(),
            lhs: lower(&b.lhs)?,
            rhs: lower(&b.rhs)?,
        })),
        Expr::Extension(_) => return Err(QueryError::Internal("extension expressions are not supported".into())),
    })
}

/// An aggregation's parameter as Prometheus evaluates it: its engine never
/// prepares a parameter's nodes before evaluation, so an `@ start()` or
/// `@ end()` in it is ignored (the selector or subquery follows the steps) and
/// no aggregation in it reads its own parameter once.
fn as_unprepared(node: &mut Node) {
    match node {
        Node::Vector(sel) | Node::Matrix(sel, _) => drop_start_or_end(&mut sel.at),
        Node::Subquery(sq) => drop_start_or_end(&mut sq.at),
        Node::Aggregate(a) => a.param_read_once = false,
        Node::Info(info) => drop_start_or_end(&mut info.select.at),
        _ => {}
    }
    for child in node.children_mut() {
        as_unprepared(child);
    }
}

fn drop_start_or_end(at: &mut Option<AtModifier>) {
    if matches!(at, Some(AtModifier::Start | AtModifier::End)) {
        *at = None;
    }
}

fn selector(vs: &promql_parser::parser::VectorSelector, times: QueryTimes) -> Result<Selector> {
    let sets = convert_matchers(vs)?
        .into_iter()
        .map(|matchers| MatcherSet {
            matchers,
            bound: usize::MAX,
            shards: 1,
        })
        .collect();
    Ok(Selector {
        text: vs.to_string(),
        offset: times.offset(&vs.offset)?,
        at: vs.at.clone(),
        extended: vs.extended,
        sets,
        detect_resets: false,
    })
}

/// Whether `e` is an instant selector, in parentheses or not (Prometheus
/// removes those around a function's arguments before it evaluates).
fn is_selector(e: &Expr) -> bool {
    match e {
        Expr::Paren(p) => is_selector(&p.expr),
        e => matches!(e, Expr::VectorSelector(_)),
    }
}

/// The labels of `absent(arg)`'s result: those of `arg`'s equality matchers
/// when it is a selector, also in parentheses (Prometheus 3 removes those
/// around a function's arguments before it evaluates), other than
/// `__name__`; an equality matcher followed by another matcher of the same
/// label is left out. "Followed" is in the order Prometheus' TSDB leaves the
/// matchers after selecting with them: it sorts them in place, those that
/// narrow the selection before those it subtracts (a label whose matchers
/// all match the empty value is only subtracted, as is a `!=` or `!~` that
/// matches it), keeping the written order within each kind.
fn absent_labels(arg: &Expr) -> Labels {
    let mut arg = arg;
    while let Expr::Paren(p) = arg {
        arg = &p.expr;
    }
    let vs = match arg {
        Expr::VectorSelector(vs) => vs,
        Expr::MatrixSelector(ms) => &ms.vs,
        _ => return Labels::empty(),
    };
    let matchers = &vs.matchers.matchers;
    let must_be_set = |name: &str| matchers.iter().any(|m| m.name == name && !m.is_match(""));
    let subtracts = |m: &promql_parser::label::Matcher| {
        !must_be_set(&m.name) || (matches!(m.op, MatchOp::NotEqual | MatchOp::NotRe(_)) && m.is_match(""))
    };
    let in_selection_order = matchers
        .iter()
        .filter(|m| !subtracts(m))
        .chain(matchers.iter().filter(|m| subtracts(m)));
    let mut labels: Vec<Label> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for m in in_selection_order {
        if m.name == METRIC_NAME {
            continue;
        }
        labels.retain(|l| l.name != m.name);
        if matches!(m.op, MatchOp::Equal) && !seen.contains(&m.name.as_str()) {
            labels.push(Label::new(m.name.clone(), m.value.clone()));
            seen.push(&m.name);
        }
    }
    labels_from(labels)
}

impl Grouping {
    /// Whether the groups are keyed by `__name__` (`by (__name__)`), which
    /// a function's result may have dropped only when the query ends.
    pub fn by_metric_name(&self) -> bool {
        !self.without && self.names.iter().any(|n| n == METRIC_NAME)
    }
}
