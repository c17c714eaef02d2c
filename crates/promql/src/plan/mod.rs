//! The query plan: the parsed query lowered to typed nodes, with every
//! decision about where and how each part runs taken before evaluation
//! starts, in one place.
//!
//! [`lower`] resolves functions, operators and aggregations to their enums
//! and selectors to storage matchers. [`decide`] then asks the storage once
//! per selector how many series it may select, and from that, the query's
//! steps and the threads the evaluation may use, decides whether the query
//! is small enough for the caller's thread, whether a range query is split
//! by steps, which selects are read in shards on the pool, and which
//! aggregations are folded into their select. Evaluation (`eval.rs`)
//! follows the plan and takes none of these decisions itself; `Display`
//! prints it (`GET /api/v1/explain`, and tests).

mod decide;
mod display;
mod durations;
mod info;
mod lower;
mod stats_reads;
#[cfg(test)]
mod tests;

use cairn_model::{Labels, Matcher};
use promql_parser::parser::{AtModifier, BinModifier, ExtendedRange};

use crate::func::Func;
use crate::ops::{AggOp, BinOp};
use crate::steps::Ctx;

pub(crate) use decide::{Foldable, Limits, decide, foldable, may_be_inline};
pub(crate) use durations::QueryTimes;
pub(crate) use info::Info;

/// `e` lowered to plan nodes, its selectors read as their consumers need.
pub(crate) fn lower(e: &promql_parser::parser::Expr, times: QueryTimes) -> crate::eval::Result<Node> {
    let mut root = lower::lower(e, times)?;
    stats_reads::mark(&mut root);
    Ok(root)
}

/// A query ready to evaluate: its nodes and how it runs.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub root: Node,
    /// The steps the query is evaluated at (one for an instant query).
    pub ctx: Ctx,
    /// Parts of a range query split by steps (`step_split.rs`), each
    /// evaluated on its own pool thread(s); `None` evaluates it whole.
    pub split: Option<SplitParts>,
    /// Few series over a short span, no subquery: evaluated on the caller's
    /// thread, on that thread only (the query API runs it there).
    pub inline: bool,
}

/// How a range query is split by steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SplitParts {
    pub parts: Vec<Ctx>,
    /// Pool threads each part's evaluation may use in turn.
    pub threads_per_part: usize,
}

/// One node of a query, its children lowered too.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    Number(f64),
    Str(String),
    Neg(Box<Node>),
    /// An instant vector selector.
    Vector(Selector),
    /// A matrix selector: `selector[range]`, the range in ms.
    Matrix(Selector, i64),
    Subquery(Box<Subquery>),
    Call(Call),
    Aggregate(Box<Aggregate>),
    Binary(Box<Binary>),
    /// `info(...)`: its input enriched from the info series it selects.
    Info(Box<Info>),
}

impl Node {
    /// The nodes this one evaluates, in the order they are written.
    pub fn children(&self) -> Vec<&Node> {
        match self {
            Node::Number(_) | Node::Str(_) | Node::Vector(_) | Node::Matrix(..) => Vec::new(),
            Node::Neg(n) => vec![n],
            Node::Subquery(sq) => vec![&sq.inner],
            Node::Call(call) => call.args.iter().collect(),
            Node::Aggregate(a) => a.param.iter().chain([&a.input]).collect(),
            Node::Binary(b) => vec![&b.lhs, &b.rhs],
            Node::Info(info) => vec![&info.input],
        }
    }

    /// [`Node::children`], mutable.
    pub fn children_mut(&mut self) -> Vec<&mut Node> {
        match self {
            Node::Number(_) | Node::Str(_) | Node::Vector(_) | Node::Matrix(..) => Vec::new(),
            Node::Neg(n) => vec![n],
            Node::Subquery(sq) => vec![&mut sq.inner],
            Node::Call(call) => call.args.iter_mut().collect(),
            Node::Aggregate(a) => {
                let a = &mut **a;
                a.param.iter_mut().chain([&mut a.input]).collect()
            }
            Node::Binary(b) => {
                let b = &mut **b;
                vec![&mut b.lhs, &mut b.rhs]
            }
            Node::Info(info) => vec![&mut info.input],
        }
    }

    /// Whether Prometheus evaluates this node once, at the first step of its
    /// query or subquery, and repeats the answer at every step: a node of
    /// literals and `@`-fixed selectors and subqueries only, through functions
    /// that do not read the step's time (`timestamp` only of such selectors).
    /// An aggregation is judged by its input alone: a parameter that changes
    /// from step to step is read at the first step too.
    pub fn step_invariant(&self) -> bool {
        match self {
            Node::Number(_) | Node::Str(_) => true,
            Node::Neg(n) => n.step_invariant(),
            Node::Vector(sel) | Node::Matrix(sel, _) => sel.at.is_some(),
            Node::Subquery(sq) => sq.at.is_some(),
            Node::Call(call) => {
                let args = call.args.iter().all(Node::step_invariant);
                match call.func {
                    Func::Timestamp => args && call.of_selector,
                    Func::Time
                    | Func::Start
                    | Func::End
                    | Func::Calendar(_)
                    | Func::Range(crate::func::RangeFn::PredictLinear) => false,
                    _ => args,
                }
            }
            Node::Aggregate(a) => a.input.step_invariant(),
            Node::Binary(b) => b.lhs.step_invariant() && b.rhs.step_invariant(),
            // Not told apart from `info(x, {...})`, whose label selector
            // has no `@`.
            Node::Info(_) => false,
        }
    }

    /// Every selector under this node, in the order they are written.
    pub fn selectors_mut(&mut self) -> Vec<&mut Selector> {
        match self {
            Node::Vector(sel) | Node::Matrix(sel, _) => vec![sel],
            Node::Info(info) => {
                let info = &mut **info;
                std::iter::once(&mut info.select)
                    .chain(info.input.selectors_mut())
                    .collect()
            }
            _ => self.children_mut().into_iter().flat_map(Node::selectors_mut).collect(),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Selector {
    /// As written, for the printed plan.
    pub text: String,
    /// Its `offset` in ms (negative: ahead).
    pub offset: i64,
    pub at: Option<AtModifier>,
    /// `anchored` or `smoothed` (`extended.rs`).
    pub extended: Option<ExtendedRange>,
    /// One set of storage matchers per `or` alternative, each read on its own.
    pub sets: Vec<MatcherSet>,
    /// Read for a histogram's count and sum only: unknown counter reset
    /// hints are detected sample by sample (`stats_reads.rs`).
    pub detect_resets: bool,
}

impl Selector {
    /// How much farther back and ahead than its window or lookback the
    /// selector reads, for a query's `lookback`.
    pub fn extra_reach(&self, lookback: i64) -> (i64, i64) {
        match self.extended {
            None => (0, 0),
            Some(ExtendedRange::Anchored) => (lookback, 0),
            Some(ExtendedRange::Smoothed) => (lookback, lookback),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct MatcherSet {
    pub matchers: Vec<Matcher>,
    /// At most how many series these select over the whole query's reach
    /// (`usize::MAX` when the storage cannot tell without reading).
    pub bound: usize,
    /// Shards the select is read in, one pool task each; 1 reads it on the
    /// evaluating thread.
    pub shards: usize,
}

impl MatcherSet {
    /// Whether every series it selects has one and the same metric name.
    pub fn pins_metric_name(&self) -> bool {
        self.matchers
            .iter()
            .any(|m| m.name == cairn_model::METRIC_NAME && m.op == cairn_model::MatchOp::Equal)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Subquery {
    pub inner: Node,
    pub range: i64,
    /// `None`: the default step.
    pub step: Option<i64>,
    pub offset: i64,
    pub at: Option<AtModifier>,
    /// Pool threads that reduce its series (1: the evaluating thread).
    pub threads: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub func: Func,
    /// As called (error texts).
    pub name: &'static str,
    pub args: Vec<Node>,
    /// The labels `absent` and `absent_over_time` give their result: the
    /// equality matchers of a selector argument (empty for other functions).
    pub absent_labels: Labels,
    /// The first argument is written as an instant selector (in parentheses
    /// or not; `+x` is not one): `timestamp` gives its samples' times.
    pub of_selector: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Aggregate {
    pub op: AggOp,
    pub grouping: Grouping,
    pub param: Option<Node>,
    /// The parameter is read once, at the first step of the query or
    /// subquery, and repeated (see [`Node::step_invariant`]).
    pub param_read_once: bool,
    pub input: Node,
    pub strategy: AggStrategy,
}

/// `by (...)` or `without (...)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Grouping {
    pub without: bool,
    pub names: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AggStrategy {
    /// The input is evaluated first; its steps are then cut into one chunk
    /// per thread and added up (`aggregate/accumulate.rs` for the
    /// accumulating ones).
    NodeByNode { threads: usize },
    /// Each series of the range function's select goes into its group as
    /// it is read (`fused.rs`), the select read in its set's shards, placed
    /// by the grouping labels.
    Folded,
}

#[derive(Debug, Clone)]
pub(crate) struct Binary {
    pub op: BinOp,
    pub return_bool: bool,
    pub modifier: Option<BinModifier>,
    pub lhs: Node,
    pub rhs: Node,
}
