use std::ops::Range;
use std::sync::Arc;

use cairn_model::{HistogramSample, Labels, METRIC_NAME, Matcher, Sample};

use crate::StorageError;

/// A source of data for queries.
pub trait Queryable: Send + Sync {
    /// A consistent view of samples in `[mint, maxt]` (ms, both ends inclusive).
    ///
    /// The view sees every sample committed before the call and none committed
    /// after, for as long as it lives. Deleted series are invisible at once.
    fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier>, StorageError>;

    /// A count that moves whenever settled data ([`crate::SETTLED_AFTER_MS`])
    /// changes: a write with a settled sample, a delete, retention. It
    /// moves once the change is visible to queriers, so an answer computed
    /// after reading it equals the count's data or is outdated by a move.
    /// `None` (the default) where the storage cannot tell: nothing it
    /// answers is then cached.
    fn settled_changes(&self) -> Option<u64> {
        None
    }
}

/// What the caller will do with selected series, so storage can skip work.
#[derive(Debug, Clone, Default)]
pub struct SelectHints {
    /// Only label sets are needed (e.g. `/api/v1/series`); samples may be empty.
    pub labels_only: bool,
    /// Stop after this many series (applied as early as storage can).
    pub limit: Option<usize>,
    /// Evaluation step of a range query in ms, if any (pushdown information).
    pub step_ms: Option<i64>,
    /// The function the selector feeds, e.g. `rate` (pushdown information).
    pub func: Option<String>,
    /// Range of the range selector in ms, if any (pushdown information).
    pub range_ms: Option<i64>,
    /// Only the series of this shard (Prometheus' `ShardIndex`/`ShardCount`).
    /// Implementations must honour it: callers read the shards of one select
    /// in parallel and rely on them being disjoint and complete.
    pub shard: Option<Shard>,
    /// Only each series' newest sample in the querier's range is used (an
    /// instant selector evaluated at one time, the querier's end): storage
    /// may return fewer of the older samples, never a different newest one.
    pub newest_only: bool,
}

/// Slice `index` of `count` disjoint slices of a select's series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
    /// Labels that place a series, when not all of them: the series of one
    /// group of an aggregation then lie in one shard, so a worker can fold
    /// whole groups in label order.
    pub by: Option<Arc<ShardBy>>,
}

/// Which of a series' labels place it in a shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardBy {
    /// Only these (an aggregation's `by`).
    Labels(Vec<String>),
    /// All but these and the metric name (an aggregation's `without`).
    AllBut(Vec<String>),
}

impl Shard {
    /// Slice `index` of `count`, placing series by all their labels.
    pub fn new(index: usize, count: usize) -> Self {
        Self { index, count, by: None }
    }

    /// Whether the series `labels` belongs to this shard. Every implementation
    /// decides with this function or [`Self::contains_encoded`], so the
    /// shards of a select partition it.
    pub fn contains(&self, labels: &Labels) -> bool {
        if self.count <= 1 {
            return true;
        }
        let mut encoded = Vec::new();
        labels.encode(&mut encoded);
        self.contains_encoded(&encoded)
    }

    /// [`Self::contains`] for a series given by its [`Labels::encode`] form.
    pub fn contains_encoded(&self, encoded: &[u8]) -> bool {
        if self.count <= 1 {
            return true;
        }
        let hash = match &self.by {
            None => Self::hash_encoded(encoded),
            Some(by) => by.hash_encoded(encoded),
        };
        self.holds(hash)
    }

    /// [`Self::contains`] for a series whose [`Self::hash_encoded`] is `hash`
    /// (an implementation may keep it); only for a shard without [`Self::by`].
    pub fn contains_hash(&self, hash: u64) -> bool {
        debug_assert!(self.by.is_none(), "a shard by some labels hashes those");
        self.holds(hash)
    }

    /// Whether a series placed by `hash` is in this slice: the `count`
    /// slices are ranges of hash values, so storage that orders series by
    /// this hash (as the TSDB orders a metric's series ids) finds a shard's
    /// series in one run instead of every `count`-th one.
    fn holds(&self, hash: u64) -> bool {
        self.count <= 1 || ((u128::from(hash) * self.count as u128) >> 64) as usize == self.index
    }

    /// The hash that places a series in a shard, of its [`Labels::encode`] form.
    pub fn hash_encoded(encoded: &[u8]) -> u64 {
        // Any fixed hash gives the same answer for the same labels in every
        // call (shards are never persisted); every shard hashes every series
        // a select matches, so a fast one.
        xxhash_rust::xxh3::xxh3_64(encoded)
    }
}

impl ShardBy {
    /// The hash of the labels that place the series of this [`Labels::encode`] form.
    fn hash_encoded(&self, encoded: &[u8]) -> u64 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for (name, value) in Labels::raw_pairs(encoded) {
            let placing = match self {
                Self::Labels(names) => names.iter().any(|n| n.as_bytes() == name),
                Self::AllBut(names) => name != METRIC_NAME.as_bytes() && !names.iter().any(|n| n.as_bytes() == name),
            };
            if placing {
                // Label text is UTF-8, which never holds 0xFF: no two
                // different sequences of pairs feed the same bytes.
                h.update(name);
                h.update(&[0xFF]);
                h.update(value);
                h.update(&[0xFF]);
            }
        }
        h.digest()
    }
}

/// A read view over a fixed time range, created by [`Queryable::querier`].
pub trait Querier: Send + Sync {
    /// Series matching all `matchers`, in ascending label order, each series
    /// once. At least one matcher should not match the empty string;
    /// storage may reject selecting everything.
    fn select(&self, hints: &SelectHints, matchers: &[Matcher]) -> Result<SeriesSet, StorageError>;

    /// An upper bound of how many series `select` would return for
    /// `matchers`, found without reading samples; `usize::MAX` when unknown.
    /// Callers use it to decide whether reading shards in parallel pays for
    /// the thread hand-offs, and whether a query is small enough to run on
    /// an async worker.
    fn series_upper_bound(&self, matchers: &[Matcher]) -> Result<usize, StorageError> {
        let _ = matchers;
        Ok(usize::MAX)
    }

    /// Sorted label names of series matching `matchers` (all series if empty).
    ///
    /// Like Prometheus (block granularity), an implementation may consider
    /// series with samples near but outside the range; the embedded TSDB's
    /// granularity is the UTC day.
    fn label_names(&self, matchers: &[Matcher], limit: Option<usize>) -> Result<Vec<String>, StorageError>;

    /// Sorted values of label `name` among series matching `matchers`.
    fn label_values(&self, name: &str, matchers: &[Matcher], limit: Option<usize>)
    -> Result<Vec<String>, StorageError>;
}

/// Series from a select, sorted by labels.
pub type SeriesSet = Box<dyn Iterator<Item = Result<Series, StorageError>> + Send>;

/// One selected series: its labels and its samples in the querier's range.
///
/// A series holds floats, native histograms, or both at different times
/// (never both at one timestamp), in two columns.
pub struct Series {
    pub labels: Labels,
    pub samples: Box<dyn SampleBlocks>,
    /// Histogram samples by strictly increasing timestamp, in the range.
    pub histograms: Vec<HistogramSample>,
}

impl Series {
    /// A series of floats only.
    pub fn floats(labels: Labels, samples: Box<dyn SampleBlocks>) -> Self {
        Self {
            labels,
            samples,
            histograms: Vec::new(),
        }
    }

    /// The newest sample's time, and whether it is a value rather than a
    /// staleness marker. Reads the float samples.
    pub fn newest(&mut self) -> Result<Option<(i64, bool)>, StorageError> {
        let floats = crate::collect_samples(self.samples.as_mut())?;
        let newest_float = floats.last().map(|f| (f.t, !cairn_model::is_stale_nan(f.v)));
        let newest_histogram = self.histograms.last().map(|h| (h.t, !h.h.is_stale_marker()));
        Ok(newest_float.max(newest_histogram))
    }
}

/// Decoded samples of one series, block by block.
///
/// Contract: timestamps are strictly increasing within and across blocks, and
/// lie inside the querier's range. A block is never empty.
pub trait SampleBlocks: Send {
    /// The next block, or `None` at the end. The slices are valid until the next call.
    fn next_block(&mut self) -> Result<Option<SampleBlock<'_>>, StorageError>;

    /// Clears `ts` and `vs`, fills them with every remaining sample, and
    /// returns the range of both that holds the samples (anything outside it
    /// is scratch). Implementations that decode into buffers of their own
    /// override it to decode straight into the caller's, which spares a copy
    /// of every sample.
    fn read_into(&mut self, ts: &mut Vec<i64>, vs: &mut Vec<f64>) -> Result<Range<usize>, StorageError> {
        ts.clear();
        vs.clear();
        while let Some(b) = self.next_block()? {
            ts.extend_from_slice(b.ts);
            vs.extend_from_slice(b.vs);
        }
        Ok(0..ts.len())
    }
}

/// Parallel slices of timestamps and values, equally long.
#[derive(Debug, Clone, Copy)]
pub struct SampleBlock<'a> {
    pub ts: &'a [i64],
    pub vs: &'a [f64],
}

/// Drains `blocks` into a vector, for callers that need all samples at once.
pub fn collect_samples(blocks: &mut dyn SampleBlocks) -> Result<Vec<Sample>, StorageError> {
    let mut out = Vec::new();
    while let Some(b) = blocks.next_block()? {
        out.extend(b.ts.iter().zip(b.vs).map(|(&t, &v)| Sample::new(t, v)));
    }
    Ok(out)
}

/// [`SampleBlocks`] over samples already in memory, as one block.
pub struct VecSampleBlocks {
    ts: Vec<i64>,
    vs: Vec<f64>,
    done: bool,
}

impl VecSampleBlocks {
    /// `samples` must be sorted by strictly increasing timestamp.
    pub fn new(samples: impl IntoIterator<Item = Sample>) -> Self {
        let (ts, vs) = samples.into_iter().map(|s| (s.t, s.v)).unzip();
        Self::from_columns(ts, vs)
    }

    /// Two equally long columns; `ts` strictly increasing.
    pub fn from_columns(ts: Vec<i64>, vs: Vec<f64>) -> Self {
        debug_assert_eq!(ts.len(), vs.len());
        Self { ts, vs, done: false }
    }
}

impl SampleBlocks for VecSampleBlocks {
    fn next_block(&mut self) -> Result<Option<SampleBlock<'_>>, StorageError> {
        if self.done || self.ts.is_empty() {
            return Ok(None);
        }
        self.done = true;
        Ok(Some(SampleBlock {
            ts: &self.ts,
            vs: &self.vs,
        }))
    }

    /// Hands its columns over instead of copying them.
    fn read_into(&mut self, ts: &mut Vec<i64>, vs: &mut Vec<f64>) -> Result<Range<usize>, StorageError> {
        ts.clear();
        vs.clear();
        if !self.done {
            std::mem::swap(ts, &mut self.ts);
            std::mem::swap(vs, &mut self.vs);
            self.done = true;
        }
        Ok(0..ts.len())
    }
}
