//! Reading a selector's series from storage on every core.
//!
//! One select is split into shards ([`cairn_storage::Shard`]); each shard is
//! read by its own worker, which decodes one series at a time into a reused
//! buffer and reduces it at once to what the query needs (its points at the
//! steps, or a range function's result per step). Raw samples of many series
//! are never held together. Each shard comes back sorted by labels, and the
//! shards are merged by labels, so the result is the same series in the same
//! order as a single sequential read: parallelism never changes an answer.
//!
//! Limits are shared by the workers: series and samples are counted in
//! atomics against `max_series`/`max_samples` (and their bytes against
//! `max_memory_bytes`, [`crate::memory`]), every series checks the
//! deadline and the cancel flag, and the first failing shard stops the others.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use cairn_model::{Labels, Matcher, is_stale_nan};
use cairn_storage::{Querier, SelectHints, Shard, ShardBy};
use rayon::prelude::*;

use crate::QueryError;
use crate::eval::Result;
use crate::plan::MatcherSet;
use crate::samples::{SampleColumns, Samples};
use crate::series::Series;

/// Turns one series' samples (sorted by time) into the node's output for it.
/// Runs on worker threads.
pub(crate) type Reduce<'f> = dyn Fn(Labels, Samples<'_>) -> Result<Option<Series>> + Sync + 'f;

/// Query-wide budget shared by the workers of a select.
pub(crate) struct Budget<'a> {
    pub series: AtomicUsize,
    pub max_series: usize,
    /// Samples held by the query: finished output plus raw samples in flight.
    pub samples: AtomicUsize,
    pub max_samples: usize,
    pub deadline: Instant,
    pub cancel: Option<&'a AtomicBool>,
    /// Set when a worker failed, so the others stop early.
    failed: AtomicBool,
    /// For the query's stats: what was read, and the most `samples` reached.
    pub samples_read: AtomicUsize,
    pub peak_samples: AtomicUsize,
    /// Bytes held by the query (see [`crate::memory`]): finished output
    /// plus raw samples in flight.
    pub bytes: AtomicUsize,
    /// 0: no limit.
    pub max_bytes: usize,
}

impl<'a> Budget<'a> {
    pub fn new(
        series: usize,
        max_series: usize,
        samples: usize,
        max_samples: usize,
        deadline: Instant,
        cancel: Option<&'a AtomicBool>,
    ) -> Self {
        Self {
            series: AtomicUsize::new(series),
            max_series,
            samples: AtomicUsize::new(samples),
            max_samples,
            deadline,
            cancel,
            failed: AtomicBool::new(false),
            samples_read: AtomicUsize::new(0),
            peak_samples: AtomicUsize::new(samples),
            bytes: AtomicUsize::new(0),
            max_bytes: 0,
        }
    }

    /// The same budget, holding `bytes` already, of at most `max_bytes`.
    pub fn with_memory(self, bytes: usize, max_bytes: usize) -> Self {
        Self {
            bytes: AtomicUsize::new(bytes),
            max_bytes,
            ..self
        }
    }

    pub fn add_bytes(&self, n: usize) -> Result<()> {
        let total = self.bytes.fetch_add(n, Ordering::Relaxed) + n;
        if self.max_bytes > 0 && total > self.max_bytes {
            return Err(crate::memory::too_much_memory(self.max_bytes));
        }
        Ok(())
    }

    fn release_bytes(&self, n: usize) {
        self.bytes.fetch_sub(n, Ordering::Relaxed);
    }

    pub fn check(&self) -> Result<()> {
        if self.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(QueryError::Canceled("expression evaluation"));
        }
        if Instant::now() > self.deadline {
            return Err(QueryError::Timeout("expression evaluation"));
        }
        Ok(())
    }

    fn add_series(&self) -> Result<()> {
        let n = self.series.fetch_add(1, Ordering::Relaxed) + 1;
        if self.max_series > 0 && n > self.max_series {
            return Err(QueryError::Execution(
                "query processing would load too many series".into(),
            ));
        }
        Ok(())
    }

    pub fn add_samples(&self, n: usize) -> Result<()> {
        let total = self.samples.fetch_add(n, Ordering::Relaxed) + n;
        self.peak_samples.fetch_max(total, Ordering::Relaxed);
        if total > self.max_samples {
            return Err(too_many_samples());
        }
        Ok(())
    }

    fn release_samples(&self, n: usize) {
        self.samples.fetch_sub(n, Ordering::Relaxed);
    }
}

pub(crate) fn too_many_samples() -> QueryError {
    QueryError::Execution("query processing would load too many samples into memory in query execution".into())
}

/// How a select's samples are prepared before [`Reduce`] sees them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadOpts {
    /// Drop stale markers (range selectors never see them).
    pub drop_stale: bool,
    /// Count the reduced points against `max_samples`.
    pub count_output: bool,
    /// Hint counter resets as a reader for histogram statistics does
    /// ([`cairn_model::Histogram::detect_reset_hints`]).
    pub detect_resets: bool,
}

/// Reads every series of `set` through `reduce`, in the shards the plan
/// gives (on the rayon pool when more than one); returns the reduced series
/// in label order.
pub(crate) fn read_sharded(
    querier: &dyn Querier,
    hints: &SelectHints,
    set: &MatcherSet,
    budget: &Budget<'_>,
    opts: ReadOpts,
    reduce: &Reduce<'_>,
) -> Result<Vec<Series>> {
    let shards = fold_sharded(
        querier,
        hints,
        &set.matchers,
        set.shards,
        budget,
        opts,
        None,
        &Vec::new,
        &|out, labels, samples| {
            if let Some(series) = reduce(labels, samples)? {
                if opts.count_output {
                    budget.add_samples(series.pts.len() + series.hs.len())?;
                    budget.add_bytes(crate::memory::series_bytes(&series))?;
                }
                out.push(series);
            }
            Ok(())
        },
    )?;
    Ok(merge_by_labels(shards))
}

/// Folds every series of `matchers` with `fold` into a state per shard
/// (each starting as `init()`), `count` shards on the rayon pool (one on
/// the calling thread); each shard's series come in label order. `by`
/// places series in shards by those labels only (see
/// [`cairn_storage::Shard::by`]). Returns the states in shard order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn fold_sharded<T: Send>(
    querier: &dyn Querier,
    hints: &SelectHints,
    matchers: &[Matcher],
    count: usize,
    budget: &Budget<'_>,
    opts: ReadOpts,
    by: Option<Arc<ShardBy>>,
    init: &(dyn Fn() -> T + Sync),
    fold: &(dyn Fn(&mut T, Labels, Samples<'_>) -> Result<()> + Sync),
) -> Result<Vec<T>> {
    let one = |hints: &SelectHints| {
        let mut state = init();
        for_each_series(querier, hints, matchers, budget, opts, |labels, samples| {
            fold(&mut state, labels, samples)
        })?;
        Ok(state)
    };
    if count <= 1 {
        return Ok(vec![one(hints)?]);
    }
    (0..count)
        .into_par_iter()
        .map(|index| {
            let hints = SelectHints {
                shard: Some(Shard {
                    index,
                    count,
                    by: by.clone(),
                }),
                ..hints.clone()
            };
            let r = one(&hints);
            if r.is_err() {
                budget.failed.store(true, Ordering::Relaxed);
            }
            r
        })
        .collect()
}

/// Calls `f` with every selected series in label order, its samples decoded
/// into a reused buffer (and counted against the budget while `f` runs).
pub(crate) fn for_each_series(
    querier: &dyn Querier,
    hints: &SelectHints,
    matchers: &[Matcher],
    budget: &Budget<'_>,
    opts: ReadOpts,
    mut f: impl FnMut(Labels, Samples<'_>) -> Result<()>,
) -> Result<()> {
    let mut buf = SampleColumns::default();
    for (i, s) in querier.select(hints, matchers)?.enumerate() {
        if budget.failed.load(Ordering::Relaxed) {
            // Another shard failed; its error is the query's.
            break;
        }
        // Reading a series takes microseconds: the clock is read for every
        // few of them, not each.
        if i % 16 == 0 {
            budget.check()?;
        }
        budget.add_series()?;
        let mut s = s?;
        let mut range = s.samples.read_into(&mut buf.ts, &mut buf.vs)?;
        // Stale markers are rare: look for them in one pass that vectorises
        // before moving anything.
        if opts.drop_stale
            && buf.vs[range.clone()]
                .iter()
                .fold(false, |any, &v| any | is_stale_nan(v))
        {
            buf.keep_range(range);
            buf.retain_values(|v| !is_stale_nan(v));
            range = 0..buf.ts.len();
        }
        let mut histograms = std::mem::take(&mut s.histograms);
        if opts.drop_stale {
            histograms.retain(|h| !h.h.is_stale_marker());
        }
        if opts.detect_resets {
            cairn_model::Histogram::detect_reset_hints(&mut histograms);
        }
        let n = range.len() + histograms.len();
        budget.samples_read.fetch_add(n, Ordering::Relaxed);
        budget.add_samples(n)?;
        let bytes = range.len() * crate::memory::RAW_FLOAT_BYTES
            + crate::memory::raw_histograms_bytes(&histograms)
            + crate::memory::labels_bytes(&s.labels);
        if let Err(e) = budget.add_bytes(bytes) {
            budget.release_samples(n);
            budget.release_bytes(bytes);
            return Err(e);
        }
        let done = f(
            s.labels,
            buf.view().slice(range.start, range.end).with_histograms(&histograms),
        );
        budget.release_samples(n);
        budget.release_bytes(bytes);
        done?;
    }
    Ok(())
}

/// Merges lists each sorted by labels into one sorted list.
fn merge_by_labels(parts: Vec<Vec<Series>>) -> Vec<Series> {
    let total = parts.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(total);
    let mut queues: Vec<std::collections::VecDeque<Series>> = parts.into_iter().map(Into::into).collect();
    loop {
        let mut best: Option<usize> = None;
        for (i, q) in queues.iter().enumerate() {
            if let Some(s) = q.front()
                && best.is_none_or(|b| queues[b].front().is_some_and(|x| s.labels < x.labels))
            {
                best = Some(i);
            }
        }
        match best.and_then(|b| queues[b].pop_front()) {
            Some(s) => out.push(s),
            None => return out,
        }
    }
}

/// Applies `reduce` to in-memory series (a subquery's result), on the pool
/// when `threads` is more than one, keeping their order.
pub(crate) fn reduce_all(
    series: Vec<Series>,
    threads: usize,
    budget: &Budget<'_>,
    reduce: &(dyn Fn(Series) -> Result<Option<Series>> + Sync),
) -> Result<Vec<Series>> {
    let one = |s| {
        budget.check()?;
        reduce(s)
    };
    let reduced: Vec<Result<Option<Series>>> = if threads > 1 {
        series.into_par_iter().map(one).collect()
    } else {
        series.into_iter().map(one).collect()
    };
    let mut out = Vec::with_capacity(reduced.len());
    for r in reduced {
        if let Some(s) = r? {
            out.push(s);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str) -> Series {
        Series {
            labels: Labels::from_pairs([("a", name)]),
            drop_name: false,
            pts: Vec::new(),
            hs: Vec::new(),
        }
    }

    #[test]
    fn merge_keeps_label_order() {
        let merged = merge_by_labels(vec![vec![s("a"), s("d"), s("e")], vec![s("b"), s("c"), s("f")], vec![]]);
        let got: Vec<&str> = merged.iter().map(|x| x.labels.get("a").unwrap_or("")).collect();
        assert_eq!(got, ["a", "b", "c", "d", "e", "f"]);
    }
}
