//! The steps a node is evaluated at, and the windows range functions read.

/// The steps a node is evaluated at. `step == 0` means a single step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ctx {
    pub start: i64,
    pub end: i64,
    pub step: i64,
}

impl Ctx {
    pub fn n(&self) -> usize {
        if self.step == 0 || self.end < self.start {
            if self.end < self.start { 0 } else { 1 }
        } else {
            ((self.end - self.start) / self.step) as usize + 1
        }
    }
    pub fn ts(&self, i: usize) -> i64 {
        self.start + i as i64 * self.step
    }
    /// The time of the last step (at or before `end`).
    pub fn last_step(&self) -> i64 {
        self.ts(self.n().saturating_sub(1))
    }
    pub fn idx(&self, t: i64) -> usize {
        if self.step == 0 {
            0
        } else {
            ((t - self.start) / self.step) as usize
        }
    }

    /// Calls `f(step index, value)` for each of `pts` (in time order) that
    /// lies exactly on a step in `from..to`. Walks the steps alongside the
    /// points rather than dividing for each point's step index.
    #[inline]
    pub fn walk_steps<V>(&self, pts: &[(i64, V)], from: usize, to: usize, mut f: impl FnMut(usize, &V)) {
        let (mut i, mut ti) = (from, self.ts(from));
        for (t, v) in pts {
            let t = *t;
            if t < ti {
                continue;
            }
            while ti < t && self.step > 0 && i < to {
                i += 1;
                ti += self.step;
            }
            if i >= to || (self.step == 0 && t != ti) {
                break;
            }
            if ti == t {
                f(i, v);
            }
        }
    }
}

/// Window parameters of a range-vector argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RangeArg {
    pub range: i64,
    pub offset: i64,
    pub at: Option<i64>,
    /// `anchored` or `smoothed`, with how far around the window it reads.
    pub extended: Option<crate::extended::Extended>,
}

impl RangeArg {
    /// `(start, end]` of the window evaluated at step time `ts`.
    pub fn window(&self, ts: i64) -> (i64, i64) {
        let end = self.at.unwrap_or(ts) - self.offset;
        (end - self.range, end)
    }
}
