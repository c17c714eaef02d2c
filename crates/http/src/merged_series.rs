//! The series of several matcher sets (`match[]`) as one sorted sequence,
//! each series once however many sets select it.

use cairn_model::Matcher;
use cairn_storage::{Querier, SelectHints, Series, SeriesSet, Storage, StorageError};

/// A k-way merge of sorted series sets; equal label sets (the same series
/// selected by two `match[]`) are yielded once.
pub(crate) struct MergedSeries {
    sources: Vec<std::iter::Peekable<SeriesSet>>,
    /// The series sets stay valid after the querier is dropped only if the
    /// implementation says so; it lives as long as they do.
    _querier: Box<dyn Querier>,
}

impl MergedSeries {
    /// Selects every matcher set over `[start, end]`.
    pub fn select(
        storage: &dyn Storage,
        start: i64,
        end: i64,
        hints: &SelectHints,
        sets: &[Vec<Matcher>],
    ) -> Result<Self, StorageError> {
        let querier = storage.querier(start, end)?;
        let mut sources = Vec::with_capacity(sets.len());
        for set in sets {
            sources.push(querier.select(hints, set)?.peekable());
        }
        Ok(Self {
            sources,
            _querier: querier,
        })
    }
}

impl Iterator for MergedSeries {
    type Item = Result<Series, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        // Errors surface first, in source order.
        for src in &mut self.sources {
            if matches!(src.peek(), Some(Err(_))) {
                return src.next();
            }
        }
        let min = self
            .sources
            .iter_mut()
            .enumerate()
            .filter_map(|(i, s)| match s.peek() {
                Some(Ok(series)) => Some((i, series.labels.clone())),
                _ => None,
            })
            .min_by(|a, b| a.1.cmp(&b.1))?;
        let (idx, labels) = min;
        let out = self.sources[idx].next();
        for (i, src) in self.sources.iter_mut().enumerate() {
            if i != idx && matches!(src.peek(), Some(Ok(s)) if s.labels == labels) {
                src.next();
            }
        }
        out
    }
}
