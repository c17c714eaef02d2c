use cairn_model::{Labels, Sample};

use crate::MetricMetadata;

/// One series' float samples, as decoded from any protocol.
///
/// `labels` is canonical (sorted, no empty values, no duplicate names) and
/// never empty when produced by a decoder; `samples` keep the sender's order
/// and are never empty when produced by a decoder.
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBatch {
    /// Series with at least one float sample, in request order. The same
    /// label set may appear more than once if the sender repeated it.
    pub series: Vec<SeriesSamples>,
    /// Metric metadata, in request order.
    pub metadata: Vec<MetricMetadata>,
    /// Native histogram samples present in the request. Cairn does not store
    /// them yet, so they are counted and dropped.
    pub histograms_rejected: usize,
    /// Exemplars present in the request, counted and dropped.
    pub exemplars_dropped: usize,
}

impl WriteBatch {
    /// Total float samples across all series.
    pub fn sample_count(&self) -> usize {
        self.series.iter().map(|s| s.samples.len()).sum()
    }
}
