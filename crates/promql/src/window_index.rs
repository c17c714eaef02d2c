//! Which samples each step's window holds, found once per timestamp column.
//!
//! Series scraped together have the same timestamps, and consecutive series
//! in label order mostly belong to one target (every `mode` of one `cpu` of
//! one `instance`). So each thread keeps what it worked out from the last
//! column it walked (the window bounds, and for `rate` and its kin the
//! window [`Geometry`]) and reuses it while the next series' timestamps are
//! the same: comparing two columns costs far less than walking one. The
//! windows are the same slices either way, so answers are unchanged.

use std::cell::RefCell;

use crate::rate::Geometry;
use crate::steps::{Ctx, RangeArg};

/// Columns longer than this are walked without being kept, which bounds
/// what each thread holds between queries (the column, and at the range
/// query limit of 11,000 steps its spans and geometry: ~1.2 MB) and keeps
/// the bounds within `u32`.
const MAX_KEPT_SAMPLES: usize = 1 << 16;

/// `(step index, first sample, end sample)` of a step whose window holds samples.
type Span = (u32, u32, u32);

/// The windows of one timestamp column for the steps of a query.
#[derive(Default)]
pub(crate) struct ColumnWindows {
    /// The steps and window the spans were found for (`None` until filled).
    key: Option<(Ctx, RangeArg)>,
    spans: Vec<Span>,
    /// Made on first use for these spans (`geometry_valid`); its memory is
    /// kept for the next column's.
    geometry: Geometry,
    geometry_valid: bool,
}

impl ColumnWindows {
    /// Calls `f(step index, lo, hi)` for every step whose window holds
    /// samples `lo..hi`, in step order.
    pub fn for_each(&self, mut f: impl FnMut(usize, usize, usize)) {
        for &(i, lo, hi) in &self.spans {
            f(i as usize, lo as usize, hi as usize);
        }
    }

    /// The windows' [`Geometry`]; `ts` is the column they were found in.
    pub fn geometry(&mut self, ts: &[i64]) -> &Geometry {
        if !self.geometry_valid {
            let Some((c, ra)) = self.key else {
                return &self.geometry;
            };
            self.geometry.refill(
                ts,
                self.spans.iter().map(|&(i, lo, hi)| {
                    let t = c.ts(i as usize);
                    let (ws, we) = ra.window(t);
                    (t, ws, we, lo as usize, hi as usize)
                }),
            );
            self.geometry_valid = true;
        }
        &self.geometry
    }

    fn fill(&mut self, ts: &[i64], c: Ctx, ra: RangeArg) {
        walk(ts, c, ra, &mut self.spans);
        (self.key, self.geometry_valid) = (Some((c, ra)), false);
    }
}

/// The last column a thread walked, and its windows.
#[derive(Default)]
struct Kept {
    ts: Vec<i64>,
    windows: ColumnWindows,
}

thread_local! {
    static KEPT: RefCell<Kept> = RefCell::new(Kept::default());
}

/// Runs `f` on the windows over `ts` (strictly increasing) of the steps of
/// `c`: the thread's kept ones when `ts` and the parameters are those it
/// kept them for, else found afresh (and kept, if the column is short).
pub(crate) fn with_windows<R>(ts: &[i64], c: Ctx, ra: RangeArg, f: impl FnOnce(&mut ColumnWindows) -> R) -> R {
    let mut f = Some(f);
    if ts.len() <= MAX_KEPT_SAMPLES {
        let kept = KEPT.with(|cell| {
            // Busy only if `f` itself looks at windows; then nothing is kept.
            let Ok(mut kept) = cell.try_borrow_mut() else {
                return None;
            };
            if kept.windows.key != Some((c, ra)) || kept.ts != ts {
                kept.ts.clear();
                kept.ts.extend_from_slice(ts);
                kept.windows.fill(ts, c, ra);
            }
            f.take().map(|f| f(&mut kept.windows))
        });
        if let Some(r) = kept {
            return r;
        }
    }
    let mut windows = ColumnWindows::default();
    windows.fill(ts, c, ra);
    (f.take().expect("not run yet"))(&mut windows)
}

/// Calls `f(step index, lo, hi)` for every step of `c` whose window over
/// `ts` holds samples `lo..hi`, in step order.
pub(crate) fn for_each_span(ts: &[i64], c: Ctx, ra: RangeArg, f: impl FnMut(usize, usize, usize)) {
    with_windows(ts, c, ra, |w| w.for_each(f));
}

/// The spans of `ts` for the steps of `c`, into `spans` (cleared first).
fn walk(ts: &[i64], c: Ctx, ra: RangeArg, spans: &mut Vec<Span>) {
    spans.clear();
    // Window bounds only move forward with the steps (unless `@` pins
    // them), so two cursors slide over the samples once.
    let count_until = |t: i64| ts.partition_point(|&x| x <= t);
    let (mut lo, mut hi) = (0usize, 0usize);
    for i in 0..c.n() {
        let (ws, we) = ra.window(c.ts(i));
        if ra.at.is_some() {
            lo = count_until(ws);
            hi = count_until(we);
        } else {
            while lo < ts.len() && ts[lo] <= ws {
                lo += 1;
            }
            hi = hi.max(lo);
            while hi < ts.len() && ts[hi] <= we {
                hi += 1;
            }
        }
        if lo < hi {
            // Both fit: kept columns are short, and a longer one is far
            // beyond any query's sample limit before reaching `u32::MAX`.
            spans.push((i as u32, lo as u32, hi as u32));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Steps of a range query and a plain `[range]` window.
    fn steps(start: i64, end: i64, step: i64) -> Ctx {
        Ctx { start, end, step }
    }

    fn plain(range: i64) -> RangeArg {
        RangeArg {
            range,
            offset: 0,
            at: None,
            extended: None,
        }
    }

    fn spans(ts: &[i64], c: Ctx, ra: RangeArg) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        for_each_span(ts, c, ra, |i, lo, hi| out.push((i, lo, hi)));
        out
    }

    /// Each window by binary search, as the oracle.
    fn searched(ts: &[i64], c: Ctx, ra: RangeArg) -> Vec<(usize, usize, usize)> {
        (0..c.n())
            .filter_map(|i| {
                let (ws, we) = ra.window(c.ts(i));
                let lo = ts.partition_point(|&x| x <= ws);
                let hi = ts.partition_point(|&x| x <= we);
                (lo < hi).then_some((i, lo, hi))
            })
            .collect()
    }

    fn column() -> impl Strategy<Value = Vec<i64>> {
        proptest::collection::vec(1i64..30_000, 0..400).prop_map(|gaps| {
            let mut t = -50_000;
            gaps.into_iter()
                .map(|g| {
                    t += g;
                    t
                })
                .collect()
        })
    }

    proptest! {
        /// Kept or walked afresh, the spans are the searched ones, also
        /// when the same thread alternates columns and parameters.
        #[test]
        fn spans_are_the_searched_windows(
            a in column(),
            b in column(),
            start in -60_000i64..60_000,
            step in 1i64..20_000,
            n in 1i64..300,
            range in 1i64..120_000,
            offset in -10_000i64..10_000,
            at in proptest::option::of(-60_000i64..60_000),
        ) {
            let c = Ctx { start, end: start + (n - 1) * step, step };
            let ra = RangeArg { range, offset, at, extended: None };
            let other = RangeArg { range: range + 1, offset, at, extended: None };
            for (ts, ra) in [(&a, ra), (&a, ra), (&b, ra), (&a, ra), (&a, other), (&a, ra)] {
                prop_assert_eq!(spans(ts, c, ra), searched(ts, c, ra));
            }
        }
    }

    /// `rate` over kept windows (the second call) is `rate` over windows
    /// found afresh, for the same column and for a column of other values
    /// on the same timestamps.
    #[test]
    fn kept_geometry_gives_the_fresh_results() {
        let ts: Vec<i64> = (0..500).map(|i| i * 15_000 + (i * 7919) % 5).collect();
        let a: Vec<f64> = (0..500).map(|i| (i * i) as f64 / 3.0).collect();
        let b: Vec<f64> = (0..500).map(|i| ((i * 37) % 101) as f64).collect();
        let (c, ra) = (steps(30_000, 7_000_000, 60_000), plain(75_000));
        let x = crate::rate::Extrapolation::RATE;
        let rate = |vs: &[f64], w: &mut ColumnWindows| {
            let mut out = Vec::new();
            let Ok(()) = crate::rate::evaluate(x, ra.range, w.geometry(&ts), vs, true, &mut out);
            out
        };
        let mut fresh = ColumnWindows::default();
        fresh.fill(&ts, c, ra);
        for vs in [&a, &a, &b] {
            let kept = with_windows(&ts, c, ra, |w| rate(vs, w));
            assert!(!kept.is_empty());
            assert_eq!(kept, rate(vs, &mut fresh));
        }
    }

    #[test]
    fn a_column_too_long_to_keep_is_walked() {
        let ts: Vec<i64> = (0..MAX_KEPT_SAMPLES as i64 + 10).map(|i| i * 1000).collect();
        let (c, ra) = (steps(0, 70_000_000, 60_000), plain(75_000));
        assert_eq!(spans(&ts, c, ra), searched(&ts, c, ra));
    }

    #[test]
    fn a_walk_inside_a_walk_is_not_kept_but_correct() {
        let ts: Vec<i64> = (0..100).map(|i| i * 15_000).collect();
        let (c, ra) = (steps(0, 1_500_000, 60_000), plain(75_000));
        let mut inner = Vec::new();
        for_each_span(&ts, c, ra, |i, _, _| {
            if i == 3 {
                inner = spans(&ts[..50], c, ra);
            }
        });
        assert_eq!(inner, searched(&ts[..50], c, ra));
        assert_eq!(spans(&ts, c, ra), searched(&ts, c, ra));
    }
}
