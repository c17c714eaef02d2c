//! Cairn's PromQL engine.
//!
//! Parses with `promql-parser`, evaluates with Prometheus 3 semantics over the
//! storage seam ([`cairn_storage::Queryable`]); never sees the TSDB.
//!
//! Evaluation works like Prometheus' range evaluation: every node is evaluated
//! for all steps of the query at once (an instant query is a range query with
//! one step). Selectors stream series one at a time from storage and keep only
//! the points at the evaluation steps (or, for range functions, only the
//! function's result per step), so raw samples of all series are never
//! materialised together.

// Step loops index several parallel per-step arrays; callbacks take the evaluator.
#![allow(clippy::needless_range_loop, clippy::type_complexity)]

mod aggregate;
mod annotations;
mod binary;
mod calendar;
mod escapes;
mod eval;
mod extended;
mod func;
mod functions;
mod fused;
mod histogram_stats;
mod info;
mod kind;
mod lookback;
mod math;
mod memory;
mod operand;
mod ops;
mod plan;
mod positions;
mod rate;
mod samples;
mod select;
mod series;
mod shard_split;
mod step_split;
mod steps;
pub mod syntax;
mod trim;
#[cfg(test)]
mod type_and_unit;
mod value;
mod window_index;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use cairn_storage::{Queryable, StorageError};

pub use ops::supports_operator;
pub use step_split::StepSplit;

/// Whether the engine evaluates the PromQL function `name`.
pub fn supports_function(name: &str) -> bool {
    func::Func::of(name).is_some()
}
pub use value::{InstantSample, RangeSeries, SampleValue, Value};

/// Engine-wide settings.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// How far back an instant selector looks for a sample. Default 5m.
    pub lookback_delta: Duration,
    /// Most samples a query may load or produce. Default 50 million.
    pub max_samples: usize,
    /// Most series a query may select from storage, counted over all its
    /// selectors (a series selected twice counts twice). `0` disables the
    /// limit. Default 1 million.
    pub max_series: usize,
    /// Per-query timeout. Default 2m.
    pub timeout: Duration,
    /// Most points per series a range query may return. Default 11,000.
    pub max_points_per_series: usize,
    /// Which range queries are split by steps over the cores.
    pub step_split: StepSplit,
    /// Points (series × steps) from which an aggregation of a range function
    /// is folded into its select on several threads, the select sharded by
    /// the grouping labels; below, it is evaluated node by node (on one
    /// thread it is always folded). Default 2 M (2^21); 0 folds every one.
    pub fold_sharded_min_points: usize,
    /// Remove `__name__` when the query ends rather than where a function or
    /// operator drops it (Prometheus' `promql-delayed-name-removal` feature,
    /// on in its own PromQL tests). Off, as in a Prometheus 3.14 server:
    /// series whose labels become equal once their names go are merged, or
    /// are the error `vector cannot contain metrics with the same labelset`
    /// where they meet.
    pub delayed_name_removal: bool,
    /// Prometheus' `type-and-unit-labels` feature: `rate` and `increase`
    /// judge whether a series is a counter by its `__type__` label rather
    /// than its name's suffix. Off, as in a Prometheus 3.14 server. Results
    /// drop `__type__` and `__unit__` with `__name__` either way, as
    /// Prometheus does.
    pub type_and_unit_labels: bool,
    /// Most bytes a query may hold (raw samples being reduced, the series
    /// its nodes produce and their labels, see `memory.rs`); past it the
    /// query fails with an `execution` error. 0 disables the limit (the
    /// default; the server derives one from the machine's memory).
    pub max_memory_bytes: usize,
    /// The threads a query's evaluation runs on (its parallel parts too);
    /// `None`: the calling thread and rayon's global pool. A pool of its own
    /// lets the server run queries at a lower priority than ingestion.
    pub pool: Option<Arc<rayon::ThreadPool>>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            lookback_delta: Duration::from_secs(300),
            max_samples: 50_000_000,
            max_series: 1_000_000,
            timeout: Duration::from_secs(120),
            max_points_per_series: 11_000,
            step_split: StepSplit::default(),
            fold_sharded_min_points: 1 << 21,
            delayed_name_removal: false,
            type_and_unit_labels: false,
            max_memory_bytes: 0,
            pool: None,
        }
    }
}

/// Per-query overrides.
#[derive(Debug, Clone, Default)]
pub struct QueryOptions {
    pub lookback_delta: Option<Duration>,
    pub timeout: Option<Duration>,
    /// Lower limits than the engine's for this query (a tenant's own);
    /// the engine's hold where they are lower or these are `None`.
    pub max_samples: Option<usize>,
    pub max_series: Option<usize>,
    /// Set to true to cancel the query (e.g. the client went away).
    pub cancel: Option<Arc<AtomicBool>>,
}

/// The result of a query, with Prometheus' annotations.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryResult {
    pub value: Value,
    pub warnings: Vec<String>,
    pub infos: Vec<String>,
    /// What the evaluation read and held.
    pub stats: QueryStats,
}

/// What a query cost: counted as it runs, reported on request (`stats=all`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryStats {
    /// Raw samples read from storage (each once per selector that read it).
    pub samples_read: usize,
    /// The most samples the query held at once: results so far plus raw
    /// samples being reduced (what `max_samples` limits).
    pub peak_samples: usize,
}

impl QueryStats {
    /// Adds the figures of another part of the same query.
    pub fn absorb(&mut self, other: QueryStats) {
        self.samples_read += other.samples_read;
        self.peak_samples = self.peak_samples.max(other.peak_samples);
    }
}

/// How an error should be reported (maps to Prometheus' `errorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    BadData,
    Execution,
    Timeout,
    Canceled,
    Unavailable,
    Internal,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The query does not parse or is invalid for this kind of query.
    #[error("{0}")]
    BadData(String),
    /// Evaluation failed (duplicate label sets, too many samples, ...).
    #[error("{0}")]
    Execution(String),
    #[error("query timed out in {0}")]
    Timeout(&'static str),
    #[error("query was canceled in {0}")]
    Canceled(&'static str),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("internal error: {0}")]
    Internal(String),
}

impl QueryError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::BadData(_) => ErrorKind::BadData,
            Self::Execution(_) => ErrorKind::Execution,
            Self::Timeout(_) => ErrorKind::Timeout,
            Self::Canceled(_) => ErrorKind::Canceled,
            Self::Internal(_) => ErrorKind::Internal,
            Self::Storage(e) => match e.kind() {
                cairn_storage::ErrorKind::BadData => ErrorKind::BadData,
                cairn_storage::ErrorKind::Execution => ErrorKind::Execution,
                cairn_storage::ErrorKind::Unavailable => ErrorKind::Unavailable,
                cairn_storage::ErrorKind::Internal => ErrorKind::Internal,
            },
        }
    }
}

/// Parses a query, with Prometheus-style error text. Queries parsed before
/// come from a cache: Grafana and rule evaluation send the same texts again
/// and again, and parsing (with its regex compilation) costs as much as
/// evaluating a small query.
pub fn parse(expr: &str) -> Result<promql_parser::parser::Expr, QueryError> {
    // Regexes with counted repetitions can compile to far more than their
    // text: such queries are not kept.
    let cacheable = expr.len() <= MAX_CACHED_QUERY_LEN && !cairn_model::may_repeat_count(expr);
    if cacheable && let Some(ast) = PARSED.get(expr) {
        return Ok(Expr::clone(&ast));
    }
    if syntax::depth_bound(expr) > MAX_QUERY_DEPTH {
        return Err(QueryError::BadData(format!(
            "invalid parameter \"query\": parse error: more than {MAX_QUERY_DEPTH} operators, parentheses and brackets"
        )));
    }
    let ast = promql_parser::parser::parse(&escapes::normalize_byte_escapes(expr)).map_err(|e| {
        QueryError::BadData(format!(
            "invalid parameter \"query\": {}",
            positions::parse_error(expr, &e)
        ))
    })?;
    if let Some(e) = syntax::duration_colon_error(expr) {
        return Err(QueryError::BadData(format!(
            "invalid parameter \"query\": {}",
            positions::located(expr, e.pos, &e.message)
        )));
    }
    if cacheable {
        PARSED.insert(expr, ast.clone());
    }
    Ok(ast)
}

type Expr = promql_parser::parser::Expr;

/// The parse error Prometheus gives for a series selector (`match[]`) of
/// bad syntax (`1:3: parse error: unexpected "["`), or `None`.
pub fn selector_syntax_error(selector: &str) -> Option<String> {
    positions::selector_error(selector)
}

/// Parsed queries by text ([`parse`]). A dashboard's panels times its hosts
/// are hundreds of distinct texts.
static PARSED: cairn_model::text_cache::TextCache<Expr> = cairn_model::text_cache::TextCache::new(1024);
const MAX_CACHED_QUERY_LEN: usize = 4096;
/// Parsing, planning and evaluating recurse through the expression tree;
/// deeper queries than this could overflow a thread's stack.
pub const MAX_QUERY_DEPTH: usize = 1000;

/// The PromQL engine. Cheap to share; holds only settings.
#[derive(Debug, Clone, Default)]
pub struct Engine {
    opts: EngineOptions,
}

impl Engine {
    pub fn new(opts: EngineOptions) -> Self {
        Self { opts }
    }

    pub fn options(&self) -> &EngineOptions {
        &self.opts
    }

    /// Parses `expr` to evaluate at `t` (ms): see [`Parsed`].
    /// The engine's options with `qo`'s lower limits. A limit of 0 is no
    /// limit for series (the engine's convention), so a lower one replaces it.
    fn limited_for(&self, qo: &QueryOptions) -> EngineOptions {
        let mut opts = self.opts.clone();
        if let Some(max) = qo.max_samples {
            opts.max_samples = opts.max_samples.min(max);
        }
        if let Some(max) = qo.max_series.filter(|&m| m > 0) {
            opts.max_series = if opts.max_series == 0 {
                max
            } else {
                opts.max_series.min(max)
            };
        }
        opts
    }

    pub fn parse_instant(&self, expr: &str, t: i64, qo: &QueryOptions) -> Result<Parsed, QueryError> {
        let started = Instant::now();
        let ast = parse(expr)?;
        let ctx = steps::Ctx {
            start: t,
            end: t,
            step: 0,
        };
        self.parsed(expr, &ast, ctx, qo, started)
    }

    /// Parses `expr` to evaluate at every `step` (ms) from `start` to `end`
    /// (ms, inclusive): see [`Parsed`].
    pub fn parse_range(
        &self,
        expr: &str,
        start: i64,
        end: i64,
        step: i64,
        qo: &QueryOptions,
    ) -> Result<Parsed, QueryError> {
        let started = Instant::now();
        if step <= 0 {
            return Err(QueryError::BadData(
                "zero or negative query resolution step widths are not accepted. Try a positive integer".into(),
            ));
        }
        if end < start {
            return Err(QueryError::BadData(
                "end timestamp must not be before start time".into(),
            ));
        }
        let ast = parse(expr)?;
        use promql_parser::parser::value::ValueType;
        let vt = ast.value_type();
        if !matches!(vt, ValueType::Scalar | ValueType::Vector) {
            return Err(QueryError::BadData(format!(
                "invalid parameter \"query\": invalid expression type \"{}\" for range query, must be Scalar or instant Vector",
                value::type_name(vt)
            )));
        }
        let ctx = steps::Ctx { start, end, step };
        if ctx.n() > self.opts.max_points_per_series {
            return Err(QueryError::BadData(
                "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)"
                    .into(),
            ));
        }
        self.parsed(expr, &ast, ctx, qo, started)
    }

    fn parsed(
        &self,
        text: &str,
        ast: &Expr,
        ctx: steps::Ctx,
        qo: &QueryOptions,
        started: Instant,
    ) -> Result<Parsed, QueryError> {
        let limits = plan::Limits {
            threads: self
                .opts
                .pool
                .as_ref()
                .map_or_else(rayon::current_num_threads, |p| p.current_num_threads())
                .max(1),
            lookback: eval::lookback_ms(&self.opts, qo),
            step_split: self.opts.step_split,
            fold_sharded_min_points: self.opts.fold_sharded_min_points,
        };
        aggregate::check_label_names(ast, text)?;
        Ok(Parsed {
            root: plan::lower(ast, plan::QueryTimes::of(&ctx))?,
            ctx,
            limits,
            run: Run {
                text: text.into(),
                started,
                opts: self.limited_for(qo),
                qo: qo.clone(),
            },
        })
    }

    /// Evaluates `expr` at `t` (ms).
    pub fn instant(&self, q: &dyn Queryable, expr: &str, t: i64) -> Result<QueryResult, QueryError> {
        self.instant_with(q, expr, t, &QueryOptions::default())
    }

    pub fn instant_with(
        &self,
        q: &dyn Queryable,
        expr: &str,
        t: i64,
        qo: &QueryOptions,
    ) -> Result<QueryResult, QueryError> {
        self.parse_instant(expr, t, qo)?.plan(q)?.run(q)
    }

    /// Evaluates `expr` at every `step` (ms) from `start` to `end` (ms, inclusive).
    pub fn range(
        &self,
        q: &dyn Queryable,
        expr: &str,
        start: i64,
        end: i64,
        step: i64,
    ) -> Result<QueryResult, QueryError> {
        self.range_with(q, expr, start, end, step, &QueryOptions::default())
    }

    pub fn range_with(
        &self,
        q: &dyn Queryable,
        expr: &str,
        start: i64,
        end: i64,
        step: i64,
        qo: &QueryOptions,
    ) -> Result<QueryResult, QueryError> {
        self.parse_range(expr, start, end, step, qo)?.plan(q)?.run(q)
    }
}

/// A query parsed, lowered to typed nodes and checked, not planned yet:
/// the storage has not been asked anything.
#[derive(Debug, Clone)]
pub struct Parsed {
    root: plan::Node,
    ctx: steps::Ctx,
    limits: plan::Limits,
    run: Run,
}

/// What evaluating a query needs besides its plan.
#[derive(Debug, Clone)]
struct Run {
    /// The query's text, which annotations point into.
    text: Arc<str>,
    /// When parsing began: the query's timeout counts from there.
    started: Instant,
    opts: EngineOptions,
    qo: QueryOptions,
}

impl Parsed {
    /// Whether the plan may come out inline ([`Prepared::is_inline`]): the
    /// query's shape allows it. When not, it is best planned where it will
    /// run, as planning does the index work its selects start with.
    pub fn may_be_inline(&self) -> bool {
        plan::may_be_inline(&self.root, self.ctx, &self.limits)
    }

    /// The step ranges `(start, end)` a range query may be cut into, at
    /// most `parts` of them, each evaluated apart (on another node, say)
    /// with the same step and the results joined in order: the answer is
    /// then the whole evaluation's. `None` when it must run whole: too
    /// short, an `@` modifier, `start()` or `end()` (a part's own query has
    /// other bounds), or an aggregation whose order a part could change (see
    /// `step_split.rs`, which splits over threads by the same rule).
    pub fn split_over(&self, parts: usize) -> Option<Vec<(i64, i64)>> {
        if step_split::uses_query_bounds(&self.root) {
            return None;
        }
        let lookback = self.limits.lookback;
        let split = step_split::parts(self.limits.step_split, &self.root, self.ctx, parts, lookback)?;
        Some(split.parts.iter().map(|c| (c.start, c.end)).collect())
    }

    /// The query's first and last step and its step (ms); an instant
    /// query's are its time, its time and 0.
    pub fn bounds(&self) -> (i64, i64, i64) {
        (self.ctx.start, self.ctx.end, self.ctx.step)
    }

    /// Whether each step of this range query is answered from the data
    /// around it alone, by the rule [`Self::split_over`] cuts by, so that
    /// the answers of its past steps may be kept and reused by a later query
    /// over other bounds: how far after a step that data reaches (ms), or
    /// `None`.
    pub fn steps_reach_ahead(&self) -> Option<i64> {
        if self.ctx.step <= 0 || step_split::uses_query_bounds(&self.root) {
            return None;
        }
        step_split::lookbehind(&self.root, self.limits.lookback)?;
        Some(step_split::lookahead(&self.root, self.limits.lookback))
    }

    /// How a range query may be cut by series into shards evaluated apart
    /// (each over a [`cairn_storage::ShardView`] with the same placement)
    /// and joined by labels, the answer then the whole evaluation's; `None`
    /// when it must run whole (see `shard_split.rs`). Under
    /// [`StepSplit::Auto`] only a query spanning at least half the least
    /// part a split by time makes is cut: below, the hand-offs cost more.
    pub fn shard_by(&self) -> Option<Arc<cairn_storage::ShardBy>> {
        let span = self.ctx.end - self.ctx.start;
        let long_enough = match self.limits.step_split {
            StepSplit::Never => false,
            StepSplit::Always => true,
            StepSplit::Auto { min_part_span, .. } => span >= min_part_span.as_millis() as i64 / 2,
        };
        if self.ctx.step <= 0 || !long_enough {
            return None;
        }
        shard_split::shard_by(&self.root)
    }

    /// Decides the plan over the series `q` holds now.
    pub fn plan(self, q: &dyn Queryable) -> Result<Prepared, QueryError> {
        Ok(Prepared {
            plan: plan::decide(q, self.root, self.ctx, &self.limits)?,
            run: self.run,
        })
    }
}

/// A query parsed and planned (`plan/`): where and how each part of it runs
/// is decided, and `Display` prints that. Run it against the storage it was
/// planned over.
#[derive(Debug, Clone)]
pub struct Prepared {
    plan: plan::Plan,
    run: Run,
}

impl Prepared {
    /// Whether the query is small enough to evaluate on the caller's
    /// thread, e.g. an async worker (few series over a short span, no
    /// subquery: `plan/decide.rs`).
    pub fn is_inline(&self) -> bool {
        self.plan.inline
    }

    pub fn run(&self, q: &dyn Queryable) -> Result<QueryResult, QueryError> {
        let r = &self.run;
        let evaluate = || eval::run(&r.opts, &r.qo, q, &self.plan, r.started);
        let mut result = match &r.opts.pool {
            Some(pool) => pool.install(evaluate)?,
            None => evaluate()?,
        };
        for a in result.warnings.iter_mut().chain(&mut result.infos) {
            *a = positions::annotation(&r.text, a);
        }
        Ok(result)
    }
}

impl std::fmt::Display for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.plan.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_model::{Labels, Sample};
    use cairn_storage::{Appendable, MemStorage};

    #[test]
    fn queries_deeper_than_the_limit_are_refused_before_parsing() {
        let at_limit = vec!["1"; MAX_QUERY_DEPTH + 1].join("+");
        assert!(parse(&at_limit).is_ok());
        let past = format!("{at_limit}+1");
        let err = parse(&past).unwrap_err().to_string();
        assert!(err.contains("more than 1000 operators"), "{err}");
        assert!(parse(&"(".repeat(100_000)).is_err());
    }

    fn storage(series: usize) -> MemStorage {
        let s = MemStorage::new();
        let mut app = s.appender();
        for i in 0..series {
            let labels = Labels::from_pairs([("__name__", "m"), ("i", &i.to_string())]);
            app.append(&labels, &[Sample::new(1000, 1.0), Sample::new(2000, 2.0)])
                .unwrap();
        }
        app.commit().unwrap();
        s
    }

    fn engine(f: impl FnOnce(&mut EngineOptions)) -> Engine {
        let mut opts = EngineOptions::default();
        f(&mut opts);
        Engine::new(opts)
    }

    #[test]
    fn queries_reading_their_own_bounds_are_not_cut_into_queries_of_their_own() {
        let e = engine(|o| o.step_split = StepSplit::Always);
        let parts = |q: &str| {
            let parsed = e
                .parse_range(q, 0, 48 * 3_600_000, 60_000, &QueryOptions::default())
                .unwrap();
            parsed.split_over(2).map(|p| p.len())
        };
        assert_eq!(parts("m * 2"), Some(2));
        assert_eq!(parts("m - start()"), None);
        assert_eq!(parts("sum(rate(m[5m])) > bool end()"), None);
    }

    #[test]
    fn steps_stand_on_their_own_data_unless_pinned_and_say_how_far_ahead_it_reaches() {
        let e = engine(|_| {});
        let reach = |q: &str| {
            let parsed = e
                .parse_range(q, 0, 3_600_000, 60_000, &QueryOptions::default())
                .unwrap();
            parsed.steps_reach_ahead()
        };
        assert_eq!(reach("sum by (i) (rate(m[5m]))"), Some(0));
        assert_eq!(reach("m offset 10m"), Some(0));
        assert_eq!(reach("m offset -10m"), Some(600_000));
        assert_eq!(reach("max_over_time((m offset -2m)[10m:1m] offset -3m)"), Some(300_000));
        assert_eq!(reach("m + (m offset -1m) * (m offset -4m)"), Some(240_000));
        assert_eq!(reach("m @ 100"), None);
        assert_eq!(reach("m - start()"), None);
        assert_eq!(reach("topk(1, m)"), None);
        assert_eq!(reach("time() - timestamp(m)"), Some(0));
    }

    #[test]
    fn series_limit_counts_every_selected_series() {
        let s = storage(3);
        let ok = engine(|o| o.max_series = 3);
        assert!(ok.instant(&s, "m", 2000).is_ok());
        let err = ok.instant(&s, "m + ignoring(i) group_left m", 2000).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Execution);
        assert_eq!(err.to_string(), "query processing would load too many series");
        let err = engine(|o| o.max_series = 2).instant(&s, "m", 2000).unwrap_err();
        assert_eq!(err.to_string(), "query processing would load too many series");
        let err = engine(|o| o.max_series = 2)
            .instant(&s, r#"{__name__="m" or i="0"}"#, 2000)
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Execution);
        assert!(engine(|o| o.max_series = 0).instant(&s, "m", 2000).is_ok());
    }

    #[test]
    fn memory_budget_counts_the_bytes_a_query_holds() {
        let s = storage(100);
        // 100 series of 2 raw samples, and a range query's points (61 steps
        // each) kept per series: several KB of points plus their labels.
        let q = "m + 0";
        let range = |max: usize| engine(|o| o.max_memory_bytes = max).range(&s, q, 0, 60_000, 1000);
        assert!(range(0).is_ok());
        let err = range(64 << 10).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Execution);
        assert!(err.to_string().contains("too much memory"), "{err}");
        assert!(range(16 << 20).is_ok());
        // An instant query of the same selector holds far less.
        assert!(engine(|o| o.max_memory_bytes = 64 << 10).instant(&s, q, 2000).is_ok());
    }

    #[test]
    fn sample_limit_and_timeout() {
        let s = storage(3);
        let err = engine(|o| o.max_samples = 1).instant(&s, "sum_over_time(m[5s])", 2000);
        assert_eq!(err.unwrap_err().kind(), ErrorKind::Execution);
        // Enough whatever the order the series are read in: MemStorage
        // gives no series bound, so the select is sharded over the cores,
        // and the samples in flight at once depend on how they interleave
        // (3 series: 6 raw samples and 3 results at most).
        assert!(
            engine(|o| o.max_samples = 9)
                .instant(&s, "sum_over_time(m[5s])", 2000)
                .is_ok()
        );
        let err = engine(|o| o.timeout = Duration::ZERO)
            .instant(&s, "m", 2000)
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout);
    }

    #[test]
    fn stats_count_the_samples_read_and_held() {
        let s = storage(3);
        let e = engine(|_| {});
        // 3 series of 2 samples each, all in the window; 3 results held.
        let stats = e.instant(&s, "sum_over_time(m[5s])", 2000).unwrap().stats;
        assert_eq!(stats.samples_read, 6);
        assert!((3..=9).contains(&stats.peak_samples), "{stats:?}");
        // Each selector reads its series again.
        let twice = e.instant(&s, "sum_over_time(m[5s]) + sum_over_time(m[5s])", 2000);
        assert_eq!(twice.unwrap().stats.samples_read, 12);
        assert_eq!(e.instant(&s, "1 + 1", 2000).unwrap().stats, QueryStats::default());
    }

    /// Planning counts towards the timeout: a query parsed long enough ago
    /// has run out of time before its evaluation starts.
    #[test]
    fn the_timeout_counts_from_parsing() {
        let s = storage(3);
        let qo = QueryOptions {
            timeout: Some(Duration::from_millis(300)),
            ..QueryOptions::default()
        };
        let e = Engine::default();
        assert!(
            e.parse_instant("m", 2000, &qo)
                .unwrap()
                .plan(&s)
                .unwrap()
                .run(&s)
                .is_ok()
        );
        let parsed = e.parse_instant("m", 2000, &qo).unwrap();
        std::thread::sleep(Duration::from_millis(350));
        let err = parsed.plan(&s).unwrap().run(&s).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout);
    }

    #[test]
    fn parse_cache_returns_the_same_tree_and_never_caches_errors() {
        let q = r#"rate(node_disk_read_bytes_total{device=~"(/dev/)?(sd.+|nvme.+)"}[5m])"#;
        let first = parse(q).unwrap();
        let again = parse(q).unwrap();
        assert_eq!(format!("{first:?}"), format!("{again:?}"));
        assert_eq!(first.to_string(), again.to_string());
        for _ in 0..2 {
            assert_eq!(parse("rate(").unwrap_err().kind(), ErrorKind::BadData);
        }
    }
}
