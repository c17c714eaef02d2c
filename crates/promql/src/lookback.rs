//! Instant selection over a series that has native histograms: at each
//! step the newest sample of either column within the lookback counts,
//! unless it is a stale marker. Float series take the loop in `eval.rs`,
//! which never looks at a histogram column.

use std::sync::Arc;

use cairn_model::{Histogram, is_stale_nan};

use crate::samples::Samples;
use crate::steps::Ctx;

/// Float and histogram points of a series with histograms at the steps of
/// `c` (read at `at` if set, `off` earlier); with `sample_ts`, every point
/// is the sample's timestamp in seconds, a float. `None` when there are none.
#[allow(clippy::type_complexity)]
pub(crate) fn instant_points(
    samples: Samples<'_>,
    c: Ctx,
    at: Option<i64>,
    off: i64,
    lookback: i64,
    sample_ts: bool,
) -> Option<(Vec<(i64, f64)>, Vec<(i64, Arc<Histogram>)>)> {
    let (mut pts, mut hs) = (Vec::new(), Vec::new());
    for i in 0..c.n() {
        let ts = c.ts(i);
        let rt = at.unwrap_or(ts) - off;
        let nf = samples.count_until(rt);
        let nh = samples.hs.partition_point(|h| h.t <= rt);
        let float = nf.checked_sub(1).map(|j| samples.at(j));
        let hist = nh.checked_sub(1).map(|j| &samples.hs[j]);
        let float_newer = match (float, hist) {
            (Some((ft, _)), Some(h)) => ft > h.t,
            (f, _) => f.is_some(),
        };
        if float_newer && let Some((ft, fv)) = float {
            if ft > rt - lookback && !is_stale_nan(fv) {
                pts.push((ts, if sample_ts { ft as f64 / 1000.0 } else { fv }));
            }
        } else if let Some(h) = hist.filter(|h| h.t > rt - lookback && !h.h.is_stale_marker()) {
            if sample_ts {
                pts.push((ts, h.t as f64 / 1000.0));
            } else {
                hs.push((ts, h.h.clone()));
            }
        }
    }
    (!pts.is_empty() || !hs.is_empty()).then_some((pts, hs))
}

#[cfg(test)]
mod tests {
    use cairn_model::{HistogramSample, stale_nan};

    use super::*;

    fn h(count: f64) -> Histogram {
        Histogram {
            count,
            ..Histogram::default()
        }
    }

    #[test]
    fn newest_of_either_column_wins_and_stale_markers_end_a_series() {
        let ts = [0, 20];
        let vs = [1.0, stale_nan()];
        let mut stale = h(0.0);
        stale.sum = stale_nan();
        let hs = [
            HistogramSample::new(10, h(2.0)),
            HistogramSample::new(30, h(3.0)),
            HistogramSample::new(40, stale),
        ];
        let s = Samples::new(&ts, &vs).with_histograms(&hs);
        let c = Ctx {
            start: 0,
            end: 40,
            step: 10,
        };
        let (pts, got) = instant_points(s, c, None, 0, 100, false).unwrap();
        assert_eq!(pts, [(0, 1.0)]);
        let counts: Vec<(i64, f64)> = got.iter().map(|p| (p.0, p.1.count)).collect();
        assert_eq!(counts, [(10, 2.0), (30, 3.0)]);
    }
}
