//! Intermediate results: series of points at the evaluation steps, and
//! the helpers that build and check them.

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use std::sync::Arc;

use cairn_model::{Histogram, Label, Labels, METRIC_NAME};

use crate::QueryError;
use crate::eval::Result;
use crate::operand::Operand;
use crate::steps::Ctx;

/// One series of an intermediate result: points at evaluation steps (vectors)
/// or raw samples (range vectors).
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub labels: Labels,
    /// `__name__` (with `__type__` and `__unit__`) is to be dropped: by
    /// [`settle_names`] at the node that set it, or when the query ends with
    /// delayed name removal.
    pub drop_name: bool,
    pub pts: Vec<(i64, f64)>,
    /// Native histogram points, a column of their own beside the floats
    /// (empty for float series, so float kernels pay nothing for them); a
    /// step or sample time is in one column or the other, never both.
    pub hs: Vec<(i64, Arc<Histogram>)>,
}

impl Series {
    /// A series of float points only.
    pub fn floats(labels: Labels, drop_name: bool, pts: Vec<(i64, f64)>) -> Self {
        Self {
            labels,
            drop_name,
            pts,
            hs: Vec::new(),
        }
    }

    /// The time of its first point of either kind.
    pub fn first_t(&self) -> Option<i64> {
        match (self.pts.first(), self.hs.first()) {
            (Some(a), Some(b)) => Some(a.0.min(b.0)),
            (a, b) => a.map(|p| p.0).or(b.map(|p| p.0)),
        }
    }

    /// The time of its last point of either kind.
    pub fn last_t(&self) -> Option<i64> {
        match (self.pts.last(), self.hs.last()) {
            (Some(a), Some(b)) => Some(a.0.max(b.0)),
            (a, b) => a.map(|p| p.0).or(b.map(|p| p.0)),
        }
    }
}

pub(crate) enum Val {
    /// One value per step.
    Scalar(Vec<f64>),
    Str(String),
    Vector(Vec<Series>),
    Matrix(Vec<Series>),
}

impl Val {
    /// The value's type as error messages name it.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Val::Scalar(_) => "scalar",
            Val::Str(_) => "string",
            Val::Vector(_) => "instant vector",
            Val::Matrix(_) => "range vector",
        }
    }
}

/// Removes the names marked for dropping and rejects duplicate label sets
/// (series with equal labels are merged when their points do not collide).
pub(crate) fn cleanup(mut ss: Vec<Series>) -> Result<Vec<Series>> {
    for s in &mut ss {
        if s.drop_name {
            s.labels.remove_schema_labels();
            s.drop_name = false;
        }
    }
    merge_same_labelset(ss)
}

/// Merges series whose labels are equal when their points do not share a
/// time (the first one's `drop_name` stays), and is otherwise the error
/// `vector cannot contain metrics with the same labelset`: Prometheus'
/// `mergeSeriesWithSameLabelset`, which `label_replace` and `label_join`
/// apply to their results, and the end of every query.
pub(crate) fn merge_same_labelset(ss: Vec<Series>) -> Result<Vec<Series>> {
    let mut out: Vec<Series> = Vec::with_capacity(ss.len());
    let mut index: HashMap<Labels, usize> = HashMap::with_capacity(ss.len());
    for s in ss {
        match index.get(&s.labels) {
            // A later part of a query split by steps (`step_split.rs`).
            Some(&i) if out[i].last_t().zip(s.first_t()).is_some_and(|(a, b)| a < b) => {
                out[i].pts.extend(s.pts);
                out[i].hs.extend(s.hs);
            }
            Some(&i) => {
                let existing = &mut out[i];
                let ts: HashSet<i64> = existing
                    .pts
                    .iter()
                    .map(|p| p.0)
                    .chain(existing.hs.iter().map(|p| p.0))
                    .collect();
                if s.pts
                    .iter()
                    .map(|p| p.0)
                    .chain(s.hs.iter().map(|p| p.0))
                    .any(|t| ts.contains(&t))
                {
                    return Err(dup_labelset());
                }
                existing.pts.extend(s.pts);
                existing.pts.sort_by_key(|p| p.0);
                existing.hs.extend(s.hs);
                existing.hs.sort_by_key(|p| p.0);
            }
            None => {
                index.insert(s.labels.clone(), out.len());
                out.push(s);
            }
        }
    }
    Ok(out)
}

/// When two series collide once the names they drop are gone ([`settle_names`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Collision {
    /// At all: the result of a function of a range vector (Prometheus'
    /// check of the whole matrix).
    Anywhere,
    /// At a step both have a point (Prometheus' check of each step's vector).
    AtOneStep,
}

/// Removes the names a node's result drops, as Prometheus 3 does where
/// delayed name removal is off: series whose labels become equal are merged
/// when their points do not share a step, and are otherwise the error
/// `vector cannot contain metrics with the same labelset` (for a function
/// of a range vector, whenever they become equal: Prometheus checks its
/// whole result). With `delayed`, names stay until the query ends.
pub(crate) fn settle_names(ss: Vec<Series>, collision: Collision, delayed: bool) -> Result<Vec<Series>> {
    if delayed || !ss.iter().any(|s| s.drop_name) {
        return Ok(ss);
    }
    // All dropping one name (or none) and no type or unit: they stay
    // distinct without it, which is the usual case, told by comparing
    // names only.
    let first = ss.first().and_then(|s| s.labels.metric_name());
    if ss
        .iter()
        .all(|s| s.drop_name && s.labels.metric_name() == first && !s.labels.has_type_or_unit())
    {
        let mut ss = ss;
        for s in &mut ss {
            s.labels.remove(METRIC_NAME);
            s.drop_name = false;
        }
        return Ok(ss);
    }
    if collision == Collision::Anywhere {
        let mut seen: HashSet<Labels> = HashSet::with_capacity(ss.len());
        for s in &ss {
            let mut labels = s.labels.clone();
            if s.drop_name {
                labels.remove_schema_labels();
            }
            if !seen.insert(labels) {
                return Err(dup_labelset());
            }
        }
    }
    cleanup(ss)
}

pub(crate) fn dup_labelset() -> QueryError {
    QueryError::Execution("vector cannot contain metrics with the same labelset".into())
}

pub(crate) fn labels_from(v: Vec<Label>) -> Labels {
    Labels::new(v).unwrap_or_default()
}

/// Accumulates per-step outputs into series keyed by labels.
pub(crate) struct OutAcc {
    index: HashMap<Labels, usize>,
    pub series: Vec<Series>,
}

impl OutAcc {
    pub fn new() -> Self {
        Self {
            index: HashMap::new(),
            series: Vec::new(),
        }
    }
    /// The index of the output series with `labels`, if there is one.
    pub fn find(&self, labels: &Labels) -> Option<usize> {
        self.index.get(labels).copied()
    }

    /// The index of the output series with `labels`, created empty if new.
    pub fn slot(&mut self, labels: &Labels) -> usize {
        match self.index.get(labels) {
            Some(&i) => i,
            None => self.insert(labels.clone()),
        }
    }

    fn insert(&mut self, labels: Labels) -> usize {
        self.index.insert(labels.clone(), self.series.len());
        self.series.push(Series::floats(labels, false, Vec::new()));
        self.series.len() - 1
    }

    /// Appends a point to the output series at `slot` (from [`Self::slot`]).
    pub fn push_at(&mut self, slot: usize, drop_name: bool, t: i64, v: f64) -> Result<()> {
        let s = &mut self.series[slot];
        if s.pts.last().is_some_and(|p| p.0 == t) || s.hs.last().is_some_and(|p| p.0 == t) {
            return Err(dup_labelset());
        }
        s.drop_name |= drop_name;
        s.pts.push((t, v));
        Ok(())
    }

    /// Appends a histogram point to the output series at `slot`.
    pub fn push_histogram_at(&mut self, slot: usize, drop_name: bool, t: i64, h: Arc<Histogram>) -> Result<()> {
        let s = &mut self.series[slot];
        if s.hs.last().is_some_and(|p| p.0 == t) || s.pts.last().is_some_and(|p| p.0 == t) {
            return Err(dup_labelset());
        }
        s.drop_name |= drop_name;
        s.hs.push((t, h));
        Ok(())
    }

    pub fn push(&mut self, labels: Labels, drop_name: bool, t: i64, v: f64) -> Result<()> {
        let slot = match self.index.get(&labels) {
            Some(&i) => i,
            None => self.insert(labels),
        };
        self.push_at(slot, drop_name, t, v)
    }
}

/// A vector's points grouped by step (series order within a step), built
/// once by walking each series; replaces a scan of every series per step,
/// which jumped across all series' memory at every step. Floats by default;
/// [`crate::operand::Value`] takes histograms too.
pub(crate) struct StepIter<V = f64> {
    ctx: Ctx,
    /// Entries of step `i` are `entries[offsets[i]..offsets[i + 1]]`.
    offsets: Vec<usize>,
    entries: Vec<(usize, V)>,
}

impl<V: Operand> StepIter<V> {
    pub fn new(ss: &[Series], c: Ctx) -> Self {
        let n = c.n();
        let mut offsets = vec![0usize; n + 1];
        for s in ss {
            V::walk(s, c, |i, _| offsets[i + 1] += 1);
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut entries = vec![(0usize, V::default()); offsets[n]];
        let mut pos = offsets.clone();
        for (j, s) in ss.iter().enumerate() {
            V::walk(s, c, |i, v| {
                entries[pos[i]] = (j, v);
                pos[i] += 1;
            });
        }
        Self {
            ctx: c,
            offsets,
            entries,
        }
    }

    /// Calls `f(series index, value)` for every series with a point at `t`.
    pub fn at(&mut self, t: i64, mut f: impl FnMut(usize, &V)) {
        let c = self.ctx;
        if t < c.start || t > c.end {
            return;
        }
        let i = c.idx(t);
        if i + 1 >= self.offsets.len() || c.ts(i) != t {
            return;
        }
        for (j, v) in &self.entries[self.offsets[i]..self.offsets[i + 1]] {
            f(*j, v);
        }
    }
}
