//! What a query's data costs in bytes, for the per-query memory budget
//! (`EngineOptions::max_memory_bytes`).
//!
//! Counted are the allocations that grow with the data: raw samples being
//! reduced (a timestamp and a value column, [`crate::samples`]), the points
//! of the series a node produces (`(i64, f64)` pairs, histograms with their
//! buckets) and the label sets those series carry. Each is counted at its
//! in-memory size: the vectors' element sizes, and label text only where
//! it does not fit inline in its `CompactString`.

use std::mem::size_of;

use cairn_model::{Histogram, HistogramSample, Label, Labels};

use crate::QueryError;
use crate::series::Series;

/// One raw float sample being reduced: a timestamp and a value column entry.
pub(crate) const RAW_FLOAT_BYTES: usize = size_of::<i64>() + size_of::<f64>();

/// One float point of a produced series.
const POINT_BYTES: usize = size_of::<(i64, f64)>();

/// The bytes of a label set: its label slots and the text stored out of line.
pub(crate) fn labels_bytes(labels: &Labels) -> usize {
    labels
        .iter()
        .map(|l| size_of::<Label>() + heap_text(&l.name) + heap_text(&l.value))
        .sum()
}

/// A label text (a `CompactString`, one of a label's two halves) keeps up
/// to its own size inline and longer text on the heap.
fn heap_text(s: &str) -> usize {
    if s.len() > size_of::<Label>() / 2 { s.len() } else { 0 }
}

/// The bytes of one histogram beyond its own struct: its bucket vectors
/// (custom bounds are shared by a series' samples and not counted again).
fn histogram_heap_bytes(h: &Histogram) -> usize {
    (h.positive.len() + h.negative.len()) * size_of::<(i32, f64)>()
}

/// The bytes of raw histogram samples being reduced.
pub(crate) fn raw_histograms_bytes(hs: &[HistogramSample]) -> usize {
    hs.iter()
        .map(|s| size_of::<HistogramSample>() + size_of::<Histogram>() + histogram_heap_bytes(&s.h))
        .sum()
}

/// The bytes a produced series holds: its struct, labels and points.
pub(crate) fn series_bytes(s: &Series) -> usize {
    let histograms: usize = s
        .hs
        .iter()
        .map(|(_, h)| size_of::<(i64, std::sync::Arc<Histogram>)>() + size_of::<Histogram>() + histogram_heap_bytes(h))
        .sum();
    size_of::<Series>() + labels_bytes(&s.labels) + s.pts.len() * POINT_BYTES + histograms
}

/// The error of a query over its memory budget, worded as Prometheus words
/// its sample limit.
pub(crate) fn too_much_memory(max_bytes: usize) -> QueryError {
    QueryError::Execution(format!(
        "query processing would use too much memory in query execution (more than {max_bytes} bytes, see --query.max-memory-bytes)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_label_text_counts_short_text_is_inline() {
        let short = Labels::from_pairs([("job", "node")]);
        assert_eq!(labels_bytes(&short), size_of::<Label>());
        let long_value = "x".repeat(100);
        let long = Labels::from_pairs([("job", long_value.as_str())]);
        assert_eq!(labels_bytes(&long), size_of::<Label>() + 100);
    }

    #[test]
    fn a_series_costs_its_points_and_labels() {
        let s = Series {
            labels: Labels::from_pairs([("a", "b")]),
            drop_name: false,
            pts: vec![(0, 1.0); 1000],
            hs: Vec::new(),
        };
        assert_eq!(series_bytes(&s), size_of::<Series>() + size_of::<Label>() + 16_000);
    }
}
