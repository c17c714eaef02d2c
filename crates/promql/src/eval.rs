//! The evaluator: every node is evaluated for all steps at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use cairn_model::histogram::ResetHint;
use cairn_model::{Histogram, HistogramSample, Labels, METRIC_NAME, MatchOp, Matcher, Sample, is_stale_nan};
use cairn_storage::{Queryable, SelectHints, ShardBy};
use promql_parser::label::MatchOp as PMatchOp;
use promql_parser::parser::{AtModifier, VectorSelector};

use crate::annotations::{Note, Notes};
use crate::extended::Extended;
use crate::plan::{AggStrategy, Aggregate, MatcherSet, Node, Plan, Selector, Subquery};
use crate::samples::{SampleColumns, Samples};
use crate::select::{Budget, ReadOpts, Reduce, read_sharded};
use crate::series::{Collision, Series, Val, cleanup, settle_names};
use crate::steps::{Ctx, RangeArg};
use crate::value::{InstantSample, RangeSeries, SampleValue, Value};
use crate::{EngineOptions, QueryError, QueryOptions, QueryResult};

pub(crate) type Result<T> = std::result::Result<T, QueryError>;

/// Default subquery step when none is given (Prometheus' evaluation interval).
pub(crate) const DEFAULT_SUBQUERY_STEP: i64 = 60_000;

pub(crate) struct Ev<'a> {
    q: &'a dyn Queryable,
    pub lookback: i64,
    pub qstart: i64,
    pub qend: i64,
    /// The first step of the query, or of the subquery being evaluated.
    pub frame_start: i64,
    max_samples: usize,
    samples: usize,
    max_series: usize,
    series: usize,
    /// Bytes of the output counted in `samples` (see [`crate::memory`]);
    /// `max_bytes` 0 is no limit.
    bytes: usize,
    max_bytes: usize,
    pub(crate) stats: crate::QueryStats,
    deadline: Instant,
    cancel: Option<Arc<AtomicBool>>,
    pub warnings: Vec<String>,
    pub infos: Vec<String>,
    range_query: bool,
    /// [`crate::EngineOptions::delayed_name_removal`].
    pub(crate) delayed_names: bool,
    /// [`crate::EngineOptions::type_and_unit_labels`].
    pub(crate) type_and_unit_labels: bool,
}

/// The query's lookback delta in ms: its own, else the engine's (5 m when
/// neither is positive).
pub(crate) fn lookback_ms(opts: &EngineOptions, qo: &QueryOptions) -> i64 {
    let lookback = qo.lookback_delta.unwrap_or(opts.lookback_delta).as_millis() as i64;
    if lookback <= 0 { 300_000 } else { lookback }
}

pub(crate) fn run(
    opts: &EngineOptions,
    qo: &QueryOptions,
    q: &dyn Queryable,
    plan: &Plan,
    started: Instant,
) -> Result<QueryResult> {
    // A range query has a positive step, even over one step.
    let instant = plan.ctx.step == 0;
    let timeout = qo.timeout.unwrap_or(opts.timeout);
    let ctx = plan.ctx;
    let mut ev = Ev {
        q,
        lookback: lookback_ms(opts, qo),
        qstart: ctx.start,
        qend: ctx.end,
        frame_start: ctx.start,
        max_samples: opts.max_samples,
        samples: 0,
        max_series: opts.max_series,
        series: 0,
        bytes: 0,
        max_bytes: opts.max_memory_bytes,
        stats: crate::QueryStats::default(),
        deadline: started + timeout,
        cancel: qo.cancel.clone(),
        warnings: Vec::new(),
        infos: Vec::new(),
        range_query: !instant,
        delayed_names: opts.delayed_name_removal,
        type_and_unit_labels: opts.type_and_unit_labels,
    };
    let v = match &plan.split {
        Some(split) => crate::step_split::eval(&mut ev, &plan.root, split)?,
        None => ev.eval(&plan.root, ctx)?,
    };
    let value = match v {
        Val::Scalar(vs) => {
            if instant {
                Value::Scalar {
                    t: ctx.start,
                    v: vs.first().copied().unwrap_or(f64::NAN),
                }
            } else {
                let floats = vs.iter().enumerate().map(|(i, &v)| Sample::new(ctx.ts(i), v)).collect();
                Value::Matrix(vec![RangeSeries {
                    metric: Labels::empty(),
                    floats,
                    histograms: Vec::new(),
                }])
            }
        }
        Val::Str(s) => Value::String { t: ctx.start, s },
        Val::Vector(ss) => {
            let ss = cleanup(ss)?;
            if instant {
                Value::Vector(
                    ss.into_iter()
                        .filter_map(|s| {
                            let float = s.pts.first().map(|&(t, v)| (t, SampleValue::Float(v)));
                            let hist = s.hs.first().map(|(t, h)| (*t, SampleValue::Histogram(h.clone())));
                            float.or(hist).map(|(t, value)| InstantSample {
                                metric: s.labels,
                                t,
                                value,
                            })
                        })
                        .collect(),
                )
            } else {
                let mut m: Vec<RangeSeries> = ss.into_iter().map(to_range_series).collect();
                m.sort_by(|a, b| a.metric.cmp(&b.metric));
                Value::Matrix(m)
            }
        }
        Val::Matrix(ss) => {
            // Sorted by labels, as Prometheus sorts every matrix it answers
            // (a subquery's or a range selector's in an instant query too).
            let ss = cleanup(ss)?;
            let mut m: Vec<RangeSeries> = ss.into_iter().map(to_range_series).collect();
            m.sort_by(|a, b| a.metric.cmp(&b.metric));
            Value::Matrix(m)
        }
    };
    ev.warnings.dedup();
    ev.infos.dedup();
    Ok(QueryResult {
        value,
        warnings: ev.warnings,
        infos: ev.infos,
        stats: ev.stats,
    })
}

fn to_range_series(s: Series) -> RangeSeries {
    RangeSeries {
        metric: s.labels,
        floats: s.pts.into_iter().map(|(t, v)| Sample::new(t, v)).collect(),
        histograms: s.hs.into_iter().map(|(t, h)| HistogramSample { t, h }).collect(),
    }
}

/// A subquery's histogram with a reset hint of a counter made unknown: its
/// steps may skip the sample of a reset or return it more than once, so
/// resets are found by comparing counts, as for floats (as Prometheus does).
fn unhinted_counter(h: &Arc<Histogram>) -> Arc<Histogram> {
    match h.reset_hint {
        ResetHint::Reset | ResetHint::NotReset => Arc::new(Histogram {
            reset_hint: ResetHint::Unknown,
            ..(**h).clone()
        }),
        ResetHint::Unknown | ResetHint::Gauge => h.clone(),
    }
}

/// The time (ms) an `@` fixes, in a query from `qstart` to `qend`.
pub(crate) fn at_ms(at: &Option<AtModifier>, qstart: i64, qend: i64) -> Option<i64> {
    match at {
        None => None,
        Some(AtModifier::Start) => Some(qstart),
        Some(AtModifier::End) => Some(qend),
        Some(AtModifier::At(t)) => Some(system_time_ms(t)),
    }
}

fn system_time_ms(t: &SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    }
}

pub(crate) fn convert_matchers(vs: &VectorSelector) -> Result<Vec<Vec<Matcher>>> {
    let conv = |ms: &[promql_parser::label::Matcher]| -> Result<Vec<Matcher>> {
        let mut out = Vec::with_capacity(ms.len() + 1);
        if let Some(name) = &vs.name {
            out.push(Matcher::equal(METRIC_NAME, name.clone()));
        }
        for m in ms {
            let op = match m.op {
                PMatchOp::Equal => MatchOp::Equal,
                PMatchOp::NotEqual => MatchOp::NotEqual,
                PMatchOp::Re(_) => MatchOp::RegexMatch,
                PMatchOp::NotRe(_) => MatchOp::RegexNoMatch,
            };
            out.push(
                Matcher::new(op, m.name.clone(), m.value.clone()).map_err(|e| QueryError::BadData(e.to_string()))?,
            );
        }
        Ok(out)
    };
    let mut sets = Vec::new();
    if vs.matchers.or_matchers.is_empty() {
        sets.push(conv(&vs.matchers.matchers)?);
    } else {
        for group in &vs.matchers.or_matchers {
            sets.push(conv(group)?);
        }
    }
    Ok(sets)
}

impl<'a> Ev<'a> {
    pub(crate) fn check(&self) -> Result<()> {
        if let Some(c) = &self.cancel
            && c.load(Ordering::Relaxed)
        {
            return Err(QueryError::Canceled("expression evaluation"));
        }
        if Instant::now() > self.deadline {
            return Err(QueryError::Timeout("expression evaluation"));
        }
        Ok(())
    }

    /// A fresh evaluator for one part of a query split by steps
    /// (`step_split.rs`): same query, limits and deadline, counting from
    /// zero (the split comes before anything is counted).
    pub(crate) fn part(&self) -> Ev<'a> {
        Ev {
            q: self.q,
            lookback: self.lookback,
            qstart: self.qstart,
            qend: self.qend,
            frame_start: self.frame_start,
            max_samples: self.max_samples,
            samples: 0,
            max_series: self.max_series,
            series: 0,
            bytes: 0,
            max_bytes: self.max_bytes,
            stats: crate::QueryStats::default(),
            deadline: self.deadline,
            cancel: self.cancel.clone(),
            warnings: Vec::new(),
            infos: Vec::new(),
            range_query: self.range_query,
            delayed_names: self.delayed_names,
            type_and_unit_labels: self.type_and_unit_labels,
        }
    }

    /// Takes in a finished part's annotations and counts. The parts select
    /// the same series (bar those that start or stop within the range), so
    /// the most any part selected counts; samples add up, and the sum must
    /// stay under the limit as the whole query's would.
    pub(crate) fn absorb(&mut self, part: Ev<'a>) -> Result<()> {
        for w in part.warnings {
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
        for i in part.infos {
            if !self.infos.contains(&i) {
                self.infos.push(i);
            }
        }
        self.series = self.series.max(part.series);
        self.stats.absorb(part.stats);
        self.add_bytes(part.bytes)?;
        self.add_samples(part.samples)
    }

    /// Adds a warning or an info to the result.
    pub(crate) fn note(&mut self, note: Note) {
        let (list, text) = match note {
            Note::Warning(w) => (&mut self.warnings, w),
            Note::Info(i) => (&mut self.infos, i),
        };
        if !list.contains(&text) {
            list.push(text);
        }
    }

    /// Adds the notes gathered by workers.
    pub(crate) fn take_notes(&mut self, notes: Notes) {
        for n in notes.into_inner() {
            self.note(n);
        }
    }

    pub(crate) fn sort_warning(&mut self) {
        if self.range_query {
            self.warnings.push(
                "PromQL warning: sort is ineffective for range queries since results are always ordered by labels"
                    .into(),
            );
        }
    }

    pub(crate) fn add_samples(&mut self, n: usize) -> Result<()> {
        self.samples += n;
        self.stats.peak_samples = self.stats.peak_samples.max(self.samples);
        if self.samples > self.max_samples {
            return Err(QueryError::Execution(
                "query processing would load too many samples into memory in query execution".into(),
            ));
        }
        Ok(())
    }

    fn add_bytes(&mut self, n: usize) -> Result<()> {
        self.bytes += n;
        if self.max_bytes > 0 && self.bytes > self.max_bytes {
            return Err(crate::memory::too_much_memory(self.max_bytes));
        }
        Ok(())
    }

    /// Counts the series a node produced: their points against
    /// `max_samples`, their bytes against `max_memory_bytes`.
    pub(crate) fn add_output(&mut self, out: &[Series]) -> Result<()> {
        self.add_bytes(out.iter().map(crate::memory::series_bytes).sum())?;
        self.add_samples(out.iter().map(|s| s.pts.len() + s.hs.len()).sum())
    }

    pub(crate) fn at_ms(&self, at: &Option<AtModifier>) -> Option<i64> {
        at_ms(at, self.qstart, self.qend)
    }

    /// Reads the series selected by `sel` with samples in `[mint, maxt]`,
    /// each reduced by `reduce` as soon as it is decoded (in the shards the
    /// plan gives, see `select.rs`); the results come back in label order.
    pub(crate) fn select(
        &mut self,
        sel: &Selector,
        mint: i64,
        maxt: i64,
        hints: SelectHints,
        opts: ReadOpts,
        reduce: &Reduce<'_>,
    ) -> Result<Vec<Series>> {
        let querier = self.q.querier(mint, maxt)?;
        self.counted(|budget| {
            if let [set] = sel.sets.as_slice() {
                return read_sharded(querier.as_ref(), &hints, set, budget, opts, reduce);
            }
            // `{a="1" or b="2"}`: union of the alternatives. A series matched
            // by several has the same samples in each, so its reductions are
            // equal and the first is kept.
            let mut all: std::collections::BTreeMap<Labels, Series> = Default::default();
            for set in &sel.sets {
                for s in read_sharded(querier.as_ref(), &hints, set, budget, opts, reduce)? {
                    all.entry(s.labels.clone()).or_insert(s);
                }
            }
            Ok(all.into_values().collect())
        })
    }

    /// Runs `f` with a budget of this evaluation's limits and keeps the
    /// series and samples it counted (also when `f` fails).
    fn counted<T>(&mut self, f: impl FnOnce(&Budget<'_>) -> T) -> T {
        let (out, series, samples, bytes, read) = {
            let budget = self.budget();
            let out = f(&budget);
            let read = crate::QueryStats {
                samples_read: budget.samples_read.load(Ordering::Relaxed),
                peak_samples: budget.peak_samples.load(Ordering::Relaxed),
            };
            (
                out,
                budget.series.load(Ordering::Relaxed),
                budget.samples.load(Ordering::Relaxed),
                budget.bytes.load(Ordering::Relaxed),
                read,
            )
        };
        (self.series, self.samples, self.bytes) = (series, samples, bytes);
        self.stats.absorb(read);
        out
    }

    /// Folds each series selected by `set` with samples in `[mint, maxt]`
    /// into a state per shard with `fold`, in the set's shards placed by
    /// `by` (see [`crate::select::fold_sharded`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fold_selected<T: Send>(
        &mut self,
        set: &MatcherSet,
        mint: i64,
        maxt: i64,
        hints: SelectHints,
        by: Option<Arc<ShardBy>>,
        init: &(dyn Fn() -> T + Sync),
        fold: &(dyn Fn(&mut T, Labels, Samples<'_>) -> Result<()> + Sync),
    ) -> Result<Vec<T>> {
        let querier = self.q.querier(mint, maxt)?;
        let opts = ReadOpts {
            drop_stale: true,
            count_output: false,
            detect_resets: false,
        };
        self.counted(|budget| {
            crate::select::fold_sharded(
                querier.as_ref(),
                &hints,
                &set.matchers,
                set.shards,
                budget,
                opts,
                by,
                init,
                fold,
            )
        })
    }

    /// A budget of this evaluation's limits, for work on several threads.
    pub(crate) fn budget(&self) -> Budget<'_> {
        Budget::new(
            self.series,
            self.max_series,
            self.samples,
            self.max_samples,
            self.deadline,
            self.cancel.as_deref(),
        )
        .with_memory(self.bytes, self.max_bytes)
    }

    pub(crate) fn eval(&mut self, node: &Node, c: Ctx) -> Result<Val> {
        self.check()?;
        match node {
            Node::Number(n) => Ok(Val::Scalar(vec![*n; c.n()])),
            Node::Str(s) => Ok(Val::Str(s.clone())),
            Node::Neg(inner) => match self.eval(inner, c)? {
                Val::Scalar(mut v) => {
                    v.iter_mut().for_each(|x| *x = -*x);
                    Ok(Val::Scalar(v))
                }
                Val::Vector(mut ss) => {
                    for s in &mut ss {
                        s.drop_name = true;
                        s.pts.iter_mut().for_each(|p| p.1 = -p.1);
                        for (_, h) in &mut s.hs {
                            *h = Arc::new(crate::operand::times(h, -1.0));
                        }
                    }
                    Ok(Val::Vector(settle_names(ss, Collision::AtOneStep, self.delayed_names)?))
                }
                v => Err(QueryError::BadData(format!(
                    "unary expression only allowed on expressions of type scalar or instant vector, got {}",
                    v.type_name()
                ))),
            },
            Node::Vector(sel) => self.eval_vector_selector(sel, c, false),
            Node::Matrix(..) | Node::Subquery(_) => {
                let ts = c.end;
                let (out, _) = self.range_series(node, c, None, true, &|labels, drop_name, samples, ra| {
                    let (ws, we) = ra.window(ts);
                    if let Some(ext) = ra.extended {
                        let pts = crate::extended::window_points(samples, ws, we, ext)?;
                        return Ok((!pts.is_empty()).then(|| Series::floats(labels, drop_name, pts)));
                    }
                    let w = samples.window(ws, we);
                    Ok((!w.is_void()).then(|| Series {
                        labels,
                        drop_name,
                        pts: w.pairs().collect(),
                        hs: w.hs.iter().map(|h| (h.t, h.h.clone())).collect(),
                    }))
                })?;
                Ok(Val::Matrix(out))
            }
            Node::Call(call) => match crate::functions::call(self, call, c)? {
                Val::Vector(ss) => {
                    let range_arg = matches!(call.func, crate::func::Func::Range(_));
                    let collision = if range_arg {
                        Collision::Anywhere
                    } else {
                        Collision::AtOneStep
                    };
                    Ok(Val::Vector(settle_names(ss, collision, self.delayed_names)?))
                }
                v => Ok(v),
            },
            Node::Aggregate(a) => self.eval_aggregate(a, c),
            Node::Info(info) => crate::info::eval(self, info, c),
            Node::Binary(b) => match self.eval_binary(b, c)? {
                Val::Vector(ss) => Ok(Val::Vector(settle_names(ss, Collision::AtOneStep, self.delayed_names)?)),
                v => Ok(v),
            },
        }
    }

    pub(crate) fn eval_scalar(&mut self, e: &Node, c: Ctx) -> Result<Vec<f64>> {
        match self.eval(e, c)? {
            Val::Scalar(v) => Ok(v),
            v => Err(QueryError::BadData(format!("expected scalar, got {}", v.type_name()))),
        }
    }

    pub(crate) fn eval_vector(&mut self, e: &Node, c: Ctx) -> Result<Vec<Series>> {
        match self.eval(e, c)? {
            Val::Vector(v) => Ok(v),
            v => Err(QueryError::BadData(format!(
                "expected instant vector, got {}",
                v.type_name()
            ))),
        }
    }

    /// Instant selector: the newest sample in `(t - lookback, t]` per step,
    /// unless it is a stale marker. With `sample_ts`, the value is the
    /// sample's timestamp in seconds (for `timestamp()`).
    pub(crate) fn eval_vector_selector(&mut self, sel: &Selector, c: Ctx, sample_ts: bool) -> Result<Val> {
        // `timestamp()` takes the samples as they are, as Prometheus' does.
        if sel.extended == Some(crate::extended::ExtendedRange::Smoothed) && !sample_ts {
            return self.eval_smoothed_selector(sel, c);
        }
        let off = sel.offset;
        let lookback = self.lookback;
        let (at, mint, maxt, hints) = self.instant_window(sel, c);
        let n = c.n();
        let opts = ReadOpts {
            drop_stale: false,
            count_output: true,
            detect_resets: sel.detect_resets,
        };
        let out = self.select(sel, mint, maxt, hints, opts, &|labels, samples| {
            if !samples.hs.is_empty() {
                return Ok(
                    crate::lookback::instant_points(samples, c, at, off, lookback, sample_ts).map(|(pts, hs)| Series {
                        labels,
                        drop_name: false,
                        pts,
                        hs,
                    }),
                );
            }
            let mut pts = Vec::new();
            let mut cursor = 0usize;
            for i in 0..n {
                let ts = c.ts(i);
                let rt = at.unwrap_or(ts) - off;
                if at.is_some() {
                    cursor = samples.count_until(rt);
                } else {
                    while cursor < samples.len() && samples.ts[cursor] <= rt {
                        cursor += 1;
                    }
                }
                if cursor > 0 {
                    let (st, sv) = samples.at(cursor - 1);
                    if st > rt - lookback && !is_stale_nan(sv) {
                        pts.push((ts, if sample_ts { st as f64 / 1000.0 } else { sv }));
                    }
                }
            }
            Ok((!pts.is_empty()).then_some(Series::floats(labels, false, pts)))
        })?;
        Ok(Val::Vector(out))
    }

    /// The time `@` fixes for instant selector `sel` at the steps of `c`, the
    /// sample range `[mint, maxt]` its lookback covers, and its select hints.
    pub(crate) fn instant_window(&self, sel: &Selector, c: Ctx) -> (Option<i64>, i64, i64, SelectHints) {
        let off = sel.offset;
        let at = self.at_ms(&sel.at);
        // Up to the last step, not `c.end`: a subquery's steps (or a range
        // query's) may end before it, and `newest_only` reads the newest
        // sample up to `maxt`.
        let (mint, maxt) = match at {
            Some(a) => (a - off - self.lookback + 1, a - off),
            None => (c.start - off - self.lookback + 1, c.last_step() - off),
        };
        let hints = SelectHints {
            step_ms: (c.step > 0).then_some(c.step),
            // Every step reads the sample at `maxt`: one step, or one `@`
            // time. Detecting resets compares it with those before it.
            newest_only: (c.n() == 1 || at.is_some()) && !sel.detect_resets,
            ..SelectHints::default()
        };
        (at, mint, maxt, hints)
    }

    /// Smoothed instant selector: at each step, the value interpolated at
    /// its time from the samples a lookback around it (`extended.rs`).
    fn eval_smoothed_selector(&mut self, sel: &Selector, c: Ctx) -> Result<Val> {
        use crate::extended::{SmoothedValue, smoothed_reach, smoothed_value};
        let off = sel.offset;
        let at = self.at_ms(&sel.at);
        let lookback = self.lookback;
        let (first, last) = match at {
            Some(a) => (a - off, a - off),
            None => (c.start - off, c.end - off),
        };
        let (mint, maxt) = (smoothed_reach(first, lookback).0 + 1, smoothed_reach(last, lookback).1);
        let hints = SelectHints {
            step_ms: (c.step > 0).then_some(c.step),
            ..SelectHints::default()
        };
        let opts = ReadOpts {
            drop_stale: true,
            count_output: true,
            detect_resets: sel.detect_resets,
        };
        let notes = Notes::default();
        let out = self.select(sel, mint, maxt, hints, opts, &|labels, samples| {
            let metric = labels.metric_name().unwrap_or("").to_string();
            let (mut pts, mut hs) = (Vec::new(), Vec::new());
            for ts in (0..c.n()).map(|i| c.ts(i)) {
                let t = at.unwrap_or(ts) - off;
                let (lo, hi) = smoothed_reach(t, lookback);
                match smoothed_value(samples.window(lo, hi), t, &metric, &notes) {
                    Some(SmoothedValue::Float(v)) => pts.push((ts, v)),
                    Some(SmoothedValue::Histogram(h)) => hs.push((ts, Arc::new(h))),
                    None => {}
                }
            }
            Ok((!pts.is_empty() || !hs.is_empty()).then_some(Series {
                labels,
                drop_name: false,
                pts,
                hs,
            }))
        })?;
        self.take_notes(notes);
        Ok(Val::Vector(out))
    }

    /// The window of matrix selector `sel[range]` at the steps of `c`, and
    /// the sample range `[mint, maxt]` its windows cover.
    pub(crate) fn matrix_window(&self, sel: &Selector, range: i64, c: Ctx) -> (RangeArg, i64, i64) {
        let ra = RangeArg {
            range,
            offset: sel.offset,
            at: self.at_ms(&sel.at),
            extended: sel.extended.map(|modifier| Extended {
                modifier,
                lookback: self.lookback,
            }),
        };
        let (mint, maxt) = match ra.at {
            Some(a) => (a - ra.offset - ra.range + 1, a - ra.offset),
            None => (c.start - ra.offset - ra.range + 1, c.end - ra.offset),
        };
        let (back, ahead) = sel.extra_reach(self.lookback);
        (ra, mint - back, maxt + ahead)
    }

    /// Reads the series of a range-vector expression (matrix selector or
    /// subquery), each with all its samples needed for the steps of `c`
    /// (stale markers removed), reduced at once by
    /// `reduce(labels, drop_name, samples, window)`; results in label order
    /// for selectors, in the subquery's order otherwise. `func` names the
    /// function fed (a storage hint); with `count_output`, reduced points
    /// count against `max_samples`.
    pub(crate) fn range_series(
        &mut self,
        e: &Node,
        c: Ctx,
        func: Option<&str>,
        count_output: bool,
        reduce: &(dyn Fn(Labels, bool, Samples<'_>, RangeArg) -> Result<Option<Series>> + Sync),
    ) -> Result<(Vec<Series>, RangeArg)> {
        match e {
            Node::Matrix(sel, range) => {
                let (ra, mint, maxt) = self.matrix_window(sel, *range, c);
                let hints = SelectHints {
                    step_ms: (c.step > 0).then_some(c.step),
                    func: func.map(str::to_string),
                    range_ms: Some(ra.range),
                    ..SelectHints::default()
                };
                let opts = ReadOpts {
                    drop_stale: true,
                    count_output,
                    detect_resets: sel.detect_resets,
                };
                let out = self.select(sel, mint, maxt, hints, opts, &|labels, samples| {
                    reduce(labels, false, samples, ra)
                })?;
                Ok((out, ra))
            }
            Node::Subquery(sq) => {
                let (series, ra) = self.eval_subquery(sq, c)?;
                let out = {
                    let budget = self.budget();
                    crate::select::reduce_all(series, sq.threads, &budget, &|s| {
                        let mut columns = SampleColumns::default();
                        columns.extend_pairs(&s.pts);
                        let hs: Vec<HistogramSample> =
                            s.hs.iter()
                                .map(|(t, h)| HistogramSample {
                                    t: *t,
                                    h: unhinted_counter(h),
                                })
                                .collect();
                        reduce(s.labels, s.drop_name, columns.view().with_histograms(&hs), ra)
                    })?
                };
                if count_output {
                    self.add_output(&out)?;
                }
                Ok((out, ra))
            }
            // The parser types every range-vector argument.
            _ => Err(QueryError::Internal("a range vector that is not one".into())),
        }
    }

    fn eval_subquery(&mut self, sq: &Subquery, c: Ctx) -> Result<(Vec<Series>, RangeArg)> {
        let ra = RangeArg {
            range: sq.range,
            offset: sq.offset,
            at: self.at_ms(&sq.at),
            extended: None,
        };
        let step = sq.step.unwrap_or(DEFAULT_SUBQUERY_STEP);
        let ref_start = ra.at.unwrap_or(c.start) - ra.offset;
        let ref_end = ra.at.unwrap_or(c.end) - ra.offset;
        let mut start = step * ((ref_start - ra.range) / step);
        if start <= ref_start - ra.range {
            start += step;
        }
        if start > ref_end {
            return Ok((Vec::new(), ra));
        }
        let inner = Ctx {
            start,
            end: ref_end,
            step,
        };
        let outer_start = std::mem::replace(&mut self.frame_start, inner.start);
        let inner_val = self.eval(&sq.inner, inner);
        self.frame_start = outer_start;
        let series = match inner_val? {
            Val::Vector(ss) => ss,
            Val::Scalar(vs) => vec![Series {
                labels: Labels::empty(),
                drop_name: false,
                pts: vs.iter().enumerate().map(|(i, &v)| (inner.ts(i), v)).collect(),
                hs: Vec::new(),
            }],
            v => {
                return Err(QueryError::BadData(format!(
                    "subquery is only allowed on instant vector, got {}",
                    v.type_name()
                )));
            }
        };
        Ok((series, ra))
    }

    // ----------------------------------------------------------- aggregation

    fn eval_aggregate(&mut self, a: &Aggregate, c: Ctx) -> Result<Val> {
        match a.strategy {
            AggStrategy::Folded => match crate::fused::aggregate(self, a, c)? {
                Some(v) => Ok(v),
                None => self.aggregate_node_by_node(a, 1, c),
            },
            AggStrategy::NodeByNode { threads } => self.aggregate_node_by_node(a, threads, c),
        }
    }

    fn aggregate_node_by_node(&mut self, a: &Aggregate, threads: usize, c: Ctx) -> Result<Val> {
        let param = match &a.param {
            Some(p) if a.param_read_once => {
                let first = Ctx {
                    start: self.frame_start,
                    end: self.frame_start,
                    step: 0,
                };
                Some(match self.eval(p, first)? {
                    Val::Scalar(v) => Val::Scalar(vec![v.first().copied().unwrap_or(f64::NAN); c.n()]),
                    other => other,
                })
            }
            Some(p) => Some(self.eval(p, c)?),
            None => None,
        };
        if a.op == crate::ops::AggOp::CountValues {
            crate::aggregate::value_label(&param)?;
        }
        let input = self.eval_vector(&a.input, c)?;
        crate::aggregate::aggregate(self, a.op, &a.grouping, param, input, threads, c)
    }
}

#[cfg(test)]
mod tests {
    use cairn_model::{Labels, Sample};
    use cairn_storage::{Appendable, MemStorage};

    use crate::Value;

    #[test]
    fn an_instant_selector_reads_up_to_its_last_step_not_past_it() {
        // Samples every 15 s at .250; x{i="2"} stops at 2000 s.
        let s = MemStorage::new();
        let mut app = s.appender();
        for (i, end) in [("1", 3_600_000), ("2", 2_000_000)] {
            let samples: Vec<Sample> = (0..)
                .map(|k| k * 15_000 + 250)
                .take_while(|&t| t <= end)
                .map(|t| Sample::new(t, 1.0))
                .collect();
            app.append(&Labels::from_pairs([("__name__", "x"), ("i", i)]), &samples)
                .unwrap();
        }
        app.commit().unwrap();
        let e = crate::Engine::new(crate::EngineOptions::default());
        let series = |v: Value| match v {
            Value::Matrix(m) => m
                .iter()
                .map(|s| (s.metric.get("i").unwrap().to_string(), s.floats.len()))
                .collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        let both = vec![("1".to_string(), 1), ("2".to_string(), 1)];
        // One subquery step (at 2400 s, 2700 s), the subquery's own range
        // ending half a second later.
        for (q, t, want) in [
            ("x[300s:5m]", 2_000_500, &both),
            ("x offset 10m [300s:5m]", 2_400_500, &both),
            ("x[300s:5m] offset 10m", 2_700_500, &both),
            ("(x offset 10m)[300s:5m]", 2_899_500, &both),
        ] {
            assert_eq!(&series(e.instant(&s, q, t).unwrap().value), want, "{q} at {t}");
        }
        // A range query whose one step lies before its end.
        let r = e.range(&s, "x", 1_900_000, 1_950_000, 60_000).unwrap();
        assert_eq!(&series(r.value), &both);
    }

    #[test]
    fn an_aggregation_of_a_step_invariant_input_reads_its_parameter_at_the_first_step() {
        // k is 1 up to 1 minute, 2 after; x{i="1"} and x{i="2"} constant.
        let s = MemStorage::new();
        let mut app = s.appender();
        let k: Vec<Sample> = (0..=10)
            .map(|m| Sample::new(m * 60_000, if m <= 1 { 1.0 } else { 2.0 }))
            .collect();
        app.append(&Labels::from_pairs([("__name__", "k")]), &k).unwrap();
        for i in ["1", "2"] {
            let x: Vec<Sample> = (0..=10).map(|m| Sample::new(m * 60_000, 1.0)).collect();
            app.append(&Labels::from_pairs([("__name__", "x"), ("i", i)]), &x)
                .unwrap();
        }
        app.commit().unwrap();
        let e = crate::Engine::new(crate::EngineOptions::default());
        let points = |q: &str, start: i64| match e.range(&s, q, start, 600_000, 60_000).unwrap().value {
            Value::Matrix(m) => m.iter().map(|s| s.floats.len()).sum::<usize>(),
            other => panic!("{other:?}"),
        };
        // From 0 s, k is 1 at the first step: one series at all 11 steps.
        assert_eq!(points("topk(scalar(k), x @ 300)", 0), 11);
        assert_eq!(points("topk(scalar(k), x @ 300) * 2", 0), 11);
        // From 2 minutes it is 2 at the first step.
        assert_eq!(points("topk(scalar(k), x @ 300)", 120_000), 18);
        // In a parameter `@ start()` and `@ end()` are ignored, a numeric `@`
        // is not, and an aggregation reads its own parameter at every step.
        for q in [
            "topk(scalar(k @ start()), x)",
            "topk(scalar(k @ end()), x)",
            "topk(scalar(max_over_time(k[1s] @ end())), x)",
            "topk(scalar(max_over_time(k[1m:1m] @ start())), x)",
            "topk(scalar(count(topk(scalar(k), x @ 300))), x)",
        ] {
            assert_eq!(points(q, 0), 2 + 2 * 9, "{q}");
        }
        assert_eq!(points("topk(scalar(k @ 300), x)", 0), 22);
        // Not step-invariant: k at each step.
        assert_eq!(points("topk(scalar(k), x)", 0), 2 + 2 * 9);
        // In a subquery, at the subquery's first step (1 minute: k is 1).
        let r = e
            .range(
                &s,
                "count_over_time(topk(scalar(k), x @ 300)[10m:1m])",
                600_000,
                600_000,
                60_000,
            )
            .unwrap();
        match r.value {
            Value::Matrix(m) => assert_eq!((m.len(), m[0].floats[0].v), (1, 10.0)),
            other => panic!("{other:?}"),
        }
        // The parameter's warning names its value at the first step.
        let r = e
            .range(&s, "quantile(time(), x @ 300)", 60_000, 600_000, 60_000)
            .unwrap();
        assert_eq!(r.warnings.len(), 1);
        assert!(
            r.warnings[0].starts_with("PromQL warning: quantile value should be between 0 and 1, got 60"),
            "{:?}",
            r.warnings
        );
    }
}
