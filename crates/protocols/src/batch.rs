use std::fmt;
use std::ops::Range;

use cairn_model::{EncodedLabels, HistogramSample, LabelError, Labels, LabelsBuf, Sample};

use crate::MetricMetadata;

/// One series' samples in owned form: what encoders, benches and tests
/// build and compare. Decoders write into a [`WriteBatch`] instead.
///
/// `labels` is canonical (sorted, no empty values, no duplicate names).
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesSamples {
    pub labels: Labels,
    pub samples: Vec<Sample>,
    /// Native histogram samples, beside the float ones.
    pub histograms: Vec<HistogramSample>,
}

impl SeriesSamples {
    pub fn new(labels: Labels, samples: Vec<Sample>) -> Self {
        Self {
            labels,
            samples,
            histograms: Vec::new(),
        }
    }

    pub fn with_histograms(labels: Labels, samples: Vec<Sample>, histograms: Vec<HistogramSample>) -> Self {
        Self {
            labels,
            samples,
            histograms,
        }
    }
}

/// Native histogram samples a decoder refused one by one (the rest of the
/// request is kept), with the first one's reason for the sender.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InvalidHistograms {
    pub count: usize,
    /// Where and why the first one was refused.
    pub first: Option<String>,
}

impl InvalidHistograms {
    /// Counts one refused histogram; `why` is asked only for the first.
    pub fn add(&mut self, why: impl FnOnce() -> String) {
        if self.count == 0 {
            self.first = Some(why());
        }
        self.count += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// Everything one write request carries that Cairn can use, in a
/// protocol-neutral form.
///
/// Series are kept in flat buffers (canonical label encodings, sample
/// ranges, samples) rather than one `Labels` and one `Vec` each: decoding a
/// remote write request into per-label `String`s was a fifth of ingest CPU,
/// and storage keys series by exactly this encoding ([`Labels::encode`]).
///
/// Native histograms sit in their own pair of buffers. `histogram_ranges`
/// stays empty until the first histogram arrives, so a float-only batch
/// neither allocates nor writes anything for them.
#[derive(Clone, Default, PartialEq)]
pub struct WriteBatch {
    /// Every series' label set, in request order. The same label set may
    /// appear more than once if the sender repeated it.
    labels: LabelsBuf,
    /// Each series' samples: `samples[ranges[i]]` go with `labels[i]`.
    ranges: Vec<Range<usize>>,
    samples: Vec<Sample>,
    /// Empty, or one range per series: `histograms[histogram_ranges[i]]` go
    /// with `labels[i]`.
    histogram_ranges: Vec<Range<usize>>,
    histograms: Vec<HistogramSample>,
    /// Histogram staleness markers, stored as float stale NaNs in `samples`.
    histogram_stale_markers: usize,
    /// Metric metadata, in request order.
    pub metadata: Vec<MetricMetadata>,
    /// Native histogram samples refused as invalid (not in the batch).
    pub histograms_invalid: InvalidHistograms,
    /// Exemplars present in the request, counted and dropped.
    pub exemplars_dropped: usize,
}

/// One series of a [`WriteBatch`], borrowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeriesRef<'a> {
    encoded_labels: EncodedLabels<'a>,
    samples: &'a [Sample],
    histograms: &'a [HistogramSample],
}

impl<'a> SeriesRef<'a> {
    /// The canonical [`Labels::encode`] form of the series' labels.
    pub fn encoded_labels(&self) -> EncodedLabels<'a> {
        self.encoded_labels
    }

    /// Float samples, histogram staleness markers among them.
    pub fn samples(&self) -> &'a [Sample] {
        self.samples
    }

    /// Native histogram samples, valid ([`cairn_model::Histogram::validate`]).
    pub fn histograms(&self) -> &'a [HistogramSample] {
        self.histograms
    }

    /// The labels, decoded (allocates).
    pub fn labels(&self) -> Labels {
        self.encoded_labels.decode()
    }
}

impl WriteBatch {
    /// Adds one series. Decoders never add a series without samples.
    pub fn push(&mut self, labels: &Labels, samples: &[Sample]) {
        self.labels.push(labels);
        self.push_samples(samples, &[]);
    }

    /// Adds one series with float and histogram samples.
    pub fn push_with_histograms(&mut self, labels: &Labels, samples: &[Sample], histograms: &[HistogramSample]) {
        self.labels.push(labels);
        self.push_samples(samples, histograms);
    }

    /// Adds one series from borrowed label pairs, canonicalising them
    /// ([`cairn_model::encode_canonical`]) without allocating per label. On
    /// error the batch is unchanged; on success `pairs` is left canonical.
    pub fn push_pairs(
        &mut self,
        pairs: &mut Vec<(&str, &str)>,
        samples: &[Sample],
        histograms: &[HistogramSample],
    ) -> Result<(), LabelError> {
        self.labels.push_pairs(pairs)?;
        self.push_samples(samples, histograms);
        Ok(())
    }

    /// Counts a histogram staleness marker that a decoder added as a float
    /// stale NaN: storage keeps staleness as floats, but the sender wrote a
    /// histogram.
    pub(crate) fn count_histogram_stale_marker(&mut self) {
        self.histogram_stale_markers += 1;
    }

    /// Adds one sample, to the last series if it has the same labels (the
    /// usual case for text formats, one line per sample), else as a new
    /// series. Returns whether it joined the last series.
    pub fn push_joining_last(&mut self, labels: &Labels, sample: Sample) -> bool {
        if self.join_last(labels) {
            self.samples.push(sample);
            if let Some(last) = self.ranges.last_mut() {
                last.end = self.samples.len();
            }
            return true;
        }
        self.push_samples(&[sample], &[]);
        false
    }

    /// [`WriteBatch::push_joining_last`] for one histogram sample.
    pub fn push_histogram_joining_last(&mut self, labels: &Labels, sample: HistogramSample) -> bool {
        if self.join_last(labels) {
            self.ensure_histogram_ranges();
            self.histograms.push(sample);
            if let Some(last) = self.histogram_ranges.last_mut() {
                last.end = self.histograms.len();
            }
            return true;
        }
        self.push_samples(&[], std::slice::from_ref(&sample));
        false
    }

    /// Whether `labels` are the last series' and its samples end both
    /// buffers (so one more can extend it); if not, `labels` are pushed as
    /// a new series' and its samples must follow.
    fn join_last(&mut self, labels: &Labels) -> bool {
        let at = self.labels.push(labels);
        let ends = |r: Option<&Range<usize>>, len: usize| r.is_none_or(|r| r.end == len);
        if at > 0
            && self.ranges.last().is_some_and(|r| r.end == self.samples.len())
            && ends(self.histogram_ranges.last(), self.histograms.len())
            && self.labels.get(at - 1) == self.labels.get(at)
        {
            self.labels.pop();
            return true;
        }
        false
    }

    /// Removes the last series added (a decoder that found it invalid
    /// after canonicalising it).
    pub(crate) fn pop(&mut self) {
        if let Some(range) = self.ranges.pop() {
            self.labels.pop();
            self.samples.truncate(range.start);
            if let Some(range) = self.histogram_ranges.pop() {
                self.histograms.truncate(range.start);
            }
        }
    }

    /// Gives every series so far an (empty) histogram range.
    fn ensure_histogram_ranges(&mut self) {
        if self.histogram_ranges.len() < self.ranges.len() {
            let end = self.histograms.len();
            self.histogram_ranges.resize(self.ranges.len(), end..end);
        }
    }

    fn push_samples(&mut self, samples: &[Sample], histograms: &[HistogramSample]) {
        let tracked = !histograms.is_empty() || !self.histogram_ranges.is_empty();
        if tracked {
            self.ensure_histogram_ranges();
        }
        let start = self.samples.len();
        self.samples.extend_from_slice(samples);
        self.ranges.push(start..self.samples.len());
        if tracked {
            let start = self.histograms.len();
            self.histograms.extend_from_slice(histograms);
            self.histogram_ranges.push(start..self.histograms.len());
        }
    }

    /// The series in request order.
    pub fn series(&self) -> impl ExactSizeIterator<Item = SeriesRef<'_>> + '_ {
        self.labels
            .iter()
            .zip(&self.ranges)
            .enumerate()
            .map(|(i, (encoded_labels, range))| SeriesRef {
                encoded_labels,
                samples: self.samples.get(range.clone()).unwrap_or_default(),
                histograms: self
                    .histogram_ranges
                    .get(i)
                    .and_then(|r| self.histograms.get(r.clone()))
                    .unwrap_or_default(),
            })
    }

    /// The series in owned form (decodes every label set).
    pub fn to_series(&self) -> Vec<SeriesSamples> {
        self.series()
            .map(|s| SeriesSamples::with_histograms(s.labels(), s.samples().to_vec(), s.histograms().to_vec()))
            .collect()
    }

    pub fn series_count(&self) -> usize {
        self.ranges.len()
    }

    /// Total float samples across all series, histogram staleness markers
    /// included.
    pub fn sample_count(&self) -> usize {
        self.samples.len()
    }

    /// Total native histogram samples to store.
    pub fn histogram_count(&self) -> usize {
        self.histograms.len()
    }

    /// Histogram staleness markers, counted in [`WriteBatch::sample_count`]
    /// as the float stale NaNs that stand for them.
    pub fn histogram_stale_markers(&self) -> usize {
        self.histogram_stale_markers
    }

    /// Native histogram samples the sender wrote and Cairn keeps: the
    /// histograms plus the staleness markers (what remote write's
    /// `X-Prometheus-Remote-Write-Histograms-Written` reports).
    pub fn histograms_written(&self) -> usize {
        self.histograms.len() + self.histogram_stale_markers
    }

    /// No series (metadata may still be present).
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

impl Extend<SeriesSamples> for WriteBatch {
    fn extend<I: IntoIterator<Item = SeriesSamples>>(&mut self, iter: I) {
        for s in iter {
            self.push_with_histograms(&s.labels, &s.samples, &s.histograms);
        }
    }
}

impl FromIterator<SeriesSamples> for WriteBatch {
    fn from_iter<I: IntoIterator<Item = SeriesSamples>>(iter: I) -> Self {
        let mut batch = Self::default();
        batch.extend(iter);
        batch
    }
}

impl fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteBatch")
            .field("series", &self.to_series())
            .field("metadata", &self.metadata)
            .field("histogram_stale_markers", &self.histogram_stale_markers)
            .field("histograms_invalid", &self.histograms_invalid)
            .field("exemplars_dropped", &self.exemplars_dropped)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        Labels::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn series_come_back_in_order_with_their_samples() {
        let a = labels(&[("__name__", "a"), ("job", "x")]);
        let b = labels(&[("__name__", "b")]);
        let mut batch = WriteBatch::default();
        batch.push(&a, &[Sample::new(1, 1.0), Sample::new(2, 2.0)]);
        let mut pairs = vec![("__name__", "b"), ("empty", "")];
        batch.push_pairs(&mut pairs, &[Sample::new(3, 3.0)], &[]).unwrap();
        assert_eq!(pairs, vec![("__name__", "b")]);
        assert_eq!(
            batch.to_series(),
            vec![
                SeriesSamples::new(a.clone(), vec![Sample::new(1, 1.0), Sample::new(2, 2.0)]),
                SeriesSamples::new(b.clone(), vec![Sample::new(3, 3.0)]),
            ]
        );
        assert_eq!((batch.series_count(), batch.sample_count()), (2, 3));
        let mut encoded = Vec::new();
        b.encode(&mut encoded);
        assert_eq!(batch.series().nth(1).unwrap().encoded_labels().as_bytes(), &encoded[..]);
    }

    #[test]
    fn a_refused_label_set_leaves_the_batch_unchanged() {
        let mut batch = WriteBatch::default();
        batch.push(&labels(&[("__name__", "a")]), &[Sample::new(1, 1.0)]);
        let before = batch.clone();
        let mut dup = vec![("b", "1"), ("a", "2"), ("b", "3")];
        assert_eq!(
            batch.push_pairs(&mut dup, &[Sample::new(2, 2.0)], &[]),
            Err(LabelError::DuplicateName("b".into()))
        );
        assert_eq!(batch, before);
    }

    #[test]
    fn push_joining_last_extends_only_an_identical_last_series() {
        let a = labels(&[("__name__", "a")]);
        let b = labels(&[("__name__", "b")]);
        let mut batch = WriteBatch::default();
        batch.push_joining_last(&a, Sample::new(1, 1.0));
        batch.push_joining_last(&a, Sample::new(2, 2.0));
        batch.push_joining_last(&b, Sample::new(3, 3.0));
        batch.push_joining_last(&a, Sample::new(4, 4.0));
        let got: Vec<(Labels, usize)> = batch.series().map(|s| (s.labels(), s.samples().len())).collect();
        assert_eq!(got, vec![(a.clone(), 2), (b, 1), (a, 1)]);
    }

    fn hist(t: i64) -> HistogramSample {
        HistogramSample::new(
            t,
            cairn_model::Histogram {
                count: 1.0,
                positive: vec![(1, 1.0)],
                ..Default::default()
            },
        )
    }

    #[test]
    fn histograms_go_with_their_series_and_cost_float_batches_nothing() {
        let a = labels(&[("__name__", "a")]);
        let b = labels(&[("__name__", "b")]);
        let mut batch = WriteBatch::default();
        batch.push(&a, &[Sample::new(1, 1.0)]);
        assert_eq!((batch.histogram_ranges.capacity(), batch.histograms.capacity()), (0, 0));
        let mut pairs = vec![("__name__", "b")];
        batch.push_pairs(&mut pairs, &[], &[hist(2), hist(3)]).unwrap();
        batch.push(&a, &[Sample::new(4, 4.0)]);
        let got: Vec<(usize, usize)> = batch
            .series()
            .map(|s| (s.samples().len(), s.histograms().len()))
            .collect();
        assert_eq!(got, [(1, 0), (0, 2), (1, 0)]);
        assert_eq!(batch.series().nth(1).unwrap().histograms()[1], hist(3));
        assert_eq!((batch.sample_count(), batch.histogram_count()), (2, 2));
        batch.pop();
        batch.pop();
        assert_eq!((batch.series_count(), batch.histogram_count()), (1, 0));
        batch.push_with_histograms(&b, &[], &[hist(5)]);
        assert_eq!(batch.to_series()[1].histograms, [hist(5)]);
    }

    #[test]
    fn histograms_and_stale_markers_join_the_last_series() {
        let a = labels(&[("__name__", "a")]);
        let b = labels(&[("__name__", "b")]);
        let mut batch = WriteBatch::default();
        assert!(!batch.push_histogram_joining_last(&a, hist(1)));
        assert!(batch.push_histogram_joining_last(&a, hist(2)));
        assert!(batch.push_joining_last(&a, Sample::new(3, cairn_model::stale_nan())));
        batch.count_histogram_stale_marker();
        assert!(!batch.push_joining_last(&b, Sample::new(3, 1.0)));
        assert!(!batch.push_histogram_joining_last(&a, hist(4)));
        let got: Vec<(Labels, usize, usize)> = batch
            .series()
            .map(|s| (s.labels(), s.samples().len(), s.histograms().len()))
            .collect();
        assert_eq!(got, [(a.clone(), 1, 2), (b, 1, 0), (a, 0, 1)]);
        assert_eq!((batch.histograms_written(), batch.histogram_stale_markers()), (4, 1));
    }

    #[test]
    fn invalid_histograms_keep_the_first_reason() {
        let mut invalid = InvalidHistograms::default();
        assert!(invalid.is_empty());
        invalid.add(|| "first".into());
        invalid.add(|| unreachable!());
        assert_eq!((invalid.count, invalid.first.as_deref()), (2, Some("first")));
    }
}
