//! One series' raw samples as two parallel columns.
//!
//! Storage decodes blocks into a timestamp column and a value column, and
//! the engine keeps them that way: window bounds are found by scanning the
//! timestamps alone, and value-only loops (counter resets, sums) read one
//! dense array. Interleaving them into `(t, v)` pairs cost a copy of every
//! sample (~12 % of a fleet-wide `rate` panel's CPU).

use cairn_model::HistogramSample;

/// Samples sorted by strictly increasing timestamp; `ts` and `vs` are
/// equally long. A series' native histograms are a column of their own,
/// `hs`, empty for float series, so that float kernels never look at them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Samples<'a> {
    pub ts: &'a [i64],
    pub vs: &'a [f64],
    pub hs: &'a [HistogramSample],
}

impl<'a> Samples<'a> {
    pub fn new(ts: &'a [i64], vs: &'a [f64]) -> Self {
        debug_assert_eq!(ts.len(), vs.len());
        Self { ts, vs, hs: &[] }
    }

    /// These floats with the histogram column `hs`.
    pub fn with_histograms(self, hs: &'a [HistogramSample]) -> Self {
        Self { hs, ..self }
    }

    /// Whether neither column has a sample.
    pub fn is_void(&self) -> bool {
        self.ts.is_empty() && self.hs.is_empty()
    }

    pub fn len(&self) -> usize {
        self.ts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }

    /// Sample `i` as `(t, v)`.
    pub fn at(&self, i: usize) -> (i64, f64) {
        (self.ts[i], self.vs[i])
    }

    pub fn first(&self) -> (i64, f64) {
        self.at(0)
    }

    pub fn last(&self) -> (i64, f64) {
        self.at(self.len() - 1)
    }

    /// Float samples `lo..hi`, without histograms (a float window; both
    /// columns are windowed by time with [`Self::window`]).
    pub fn slice(&self, lo: usize, hi: usize) -> Samples<'a> {
        Samples {
            ts: &self.ts[lo..hi],
            vs: &self.vs[lo..hi],
            hs: &[],
        }
    }

    /// How many samples are at or before `t`.
    pub fn count_until(&self, t: i64) -> usize {
        self.ts.partition_point(|&x| x <= t)
    }

    /// Samples in `(start, end]`, of both columns.
    pub fn window(&self, start: i64, end: i64) -> Samples<'a> {
        let floats = self.slice(self.count_until(start), self.count_until(end));
        if self.hs.is_empty() {
            return floats;
        }
        let (lo, hi) = (
            self.hs.partition_point(|h| h.t <= start),
            self.hs.partition_point(|h| h.t <= end),
        );
        floats.with_histograms(&self.hs[lo..hi])
    }

    pub fn pairs(&self) -> impl ExactSizeIterator<Item = (i64, f64)> + 'a {
        self.ts.iter().copied().zip(self.vs.iter().copied())
    }
}

/// Owned columns a [`Samples`] view is taken of, reused across series.
#[derive(Debug, Default)]
pub(crate) struct SampleColumns {
    pub ts: Vec<i64>,
    pub vs: Vec<f64>,
}

impl SampleColumns {
    /// Keeps only the samples in `range`.
    pub fn keep_range(&mut self, range: std::ops::Range<usize>) {
        self.ts.truncate(range.end);
        self.vs.truncate(range.end);
        self.ts.drain(..range.start);
        self.vs.drain(..range.start);
    }

    pub fn extend_pairs(&mut self, pairs: &[(i64, f64)]) {
        self.ts.extend(pairs.iter().map(|p| p.0));
        self.vs.extend(pairs.iter().map(|p| p.1));
    }

    /// Keeps the samples whose value passes `keep`, in order.
    pub fn retain_values(&mut self, keep: impl Fn(f64) -> bool) {
        let mut n = 0;
        for i in 0..self.vs.len() {
            let v = self.vs[i];
            if keep(v) {
                self.ts[n] = self.ts[i];
                self.vs[n] = v;
                n += 1;
            }
        }
        self.ts.truncate(n);
        self.vs.truncate(n);
    }

    pub fn view(&self) -> Samples<'_> {
        Samples::new(&self.ts, &self.vs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_left_open_right_closed() {
        let ts = [10, 20, 30, 40];
        let vs = [1.0, 2.0, 3.0, 4.0];
        let s = Samples::new(&ts, &vs);
        let w = s.window(10, 30);
        assert_eq!(w.ts, [20, 30]);
        assert_eq!(w.vs, [2.0, 3.0]);
        assert!(s.window(40, 50).is_empty());
        assert_eq!(s.window(0, 100).len(), 4);
    }

    #[test]
    fn retain_keeps_columns_aligned() {
        let mut c = SampleColumns::default();
        c.extend_pairs(&[
            (0, 0.0),
            (1, 1.0),
            (2, f64::NAN),
            (3, 3.0),
            (4, f64::NAN),
            (5, 5.0),
            (6, 6.0),
        ]);
        c.keep_range(1..6);
        c.retain_values(|v| !v.is_nan());
        assert_eq!(c.ts, [1, 3, 5]);
        assert_eq!(c.vs, [1.0, 3.0, 5.0]);
    }
}
