use std::fmt;
use std::ops::Range;

use cairn_model::{EncodedLabels, LabelError, Labels, LabelsBuf, Sample};

use crate::MetricMetadata;

/// One series' float samples in owned form: what encoders, benches and
/// tests build and compare. Decoders write into a [`WriteBatch`] instead.
///
/// `labels` is canonical (sorted, no empty values, no duplicate names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesSamples {
    pub labels: Labels,
    pub samples: Vec<Sample>,
}

impl SeriesSamples {
    pub fn new(labels: Labels, samples: Vec<Sample>) -> Self {
        Self { labels, samples }
    }
}

/// Everything one write request carries that Cairn can use, in a
/// protocol-neutral form.
///
/// Series are kept in flat buffers (canonical label encodings, sample
/// ranges, samples) rather than one `Labels` and one `Vec` each: decoding a
/// remote write request into per-label `String`s was a fifth of ingest CPU,
/// and storage keys series by exactly this encoding ([`Labels::encode`]).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct WriteBatch {
    /// Every series' label set, in request order. The same label set may
    /// appear more than once if the sender repeated it.
    labels: LabelsBuf,
    /// Each series' samples: `samples[ranges[i]]` go with `labels[i]`.
    ranges: Vec<Range<usize>>,
    samples: Vec<Sample>,
    /// Metric metadata, in request order.
    pub metadata: Vec<MetricMetadata>,
    /// Native histogram samples present in the request. Cairn does not store
    /// them yet, so they are counted and dropped.
    pub histograms_rejected: usize,
    /// Exemplars present in the request, counted and dropped.
    pub exemplars_dropped: usize,
}

/// One series of a [`WriteBatch`], borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesRef<'a> {
    encoded_labels: EncodedLabels<'a>,
    samples: &'a [Sample],
}

impl<'a> SeriesRef<'a> {
    /// The canonical [`Labels::encode`] form of the series' labels.
    pub fn encoded_labels(&self) -> EncodedLabels<'a> {
        self.encoded_labels
    }

    pub fn samples(&self) -> &'a [Sample] {
        self.samples
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
        self.push_samples(samples);
    }

    /// Adds one series from borrowed label pairs, canonicalising them
    /// ([`cairn_model::encode_canonical`]) without allocating per label. On
    /// error the batch is unchanged; on success `pairs` is left canonical.
    pub fn push_pairs(&mut self, pairs: &mut Vec<(&str, &str)>, samples: &[Sample]) -> Result<(), LabelError> {
        self.labels.push_pairs(pairs)?;
        self.push_samples(samples);
        Ok(())
    }

    /// Adds one sample, to the last series if it has the same labels (the
    /// usual case for text formats, one line per sample), else as a new
    /// series. Returns whether it joined the last series.
    pub fn push_joining_last(&mut self, labels: &Labels, sample: Sample) -> bool {
        let at = self.labels.push(labels);
        if let Some(last) = self.ranges.last_mut()
            && last.end == self.samples.len()
            && at > 0
            && self.labels.get(at - 1) == self.labels.get(at)
        {
            self.labels.pop();
            self.samples.push(sample);
            last.end = self.samples.len();
            return true;
        }
        self.push_samples(&[sample]);
        false
    }

    /// Removes the last series added (a decoder that found it invalid
    /// after canonicalising it).
    pub(crate) fn pop(&mut self) {
        if let Some(range) = self.ranges.pop() {
            self.labels.pop();
            self.samples.truncate(range.start);
        }
    }

    fn push_samples(&mut self, samples: &[Sample]) {
        let start = self.samples.len();
        self.samples.extend_from_slice(samples);
        self.ranges.push(start..self.samples.len());
    }

    /// The series in request order.
    pub fn series(&self) -> impl ExactSizeIterator<Item = SeriesRef<'_>> + '_ {
        self.labels
            .iter()
            .zip(&self.ranges)
            .map(|(encoded_labels, range)| SeriesRef {
                encoded_labels,
                samples: self.samples.get(range.clone()).unwrap_or_default(),
            })
    }

    /// The series in owned form (decodes every label set).
    pub fn to_series(&self) -> Vec<SeriesSamples> {
        self.series()
            .map(|s| SeriesSamples::new(s.labels(), s.samples().to_vec()))
            .collect()
    }

    pub fn series_count(&self) -> usize {
        self.ranges.len()
    }

    /// Total float samples across all series.
    pub fn sample_count(&self) -> usize {
        self.samples.len()
    }

    /// No series (metadata may still be present).
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

impl Extend<SeriesSamples> for WriteBatch {
    fn extend<I: IntoIterator<Item = SeriesSamples>>(&mut self, iter: I) {
        for s in iter {
            self.push(&s.labels, &s.samples);
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
            .field("histograms_rejected", &self.histograms_rejected)
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
        batch.push_pairs(&mut pairs, &[Sample::new(3, 3.0)]).unwrap();
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
            batch.push_pairs(&mut dup, &[Sample::new(2, 2.0)]),
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
}
