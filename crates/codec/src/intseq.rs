//! Integer sequences stored as a few head values plus a stream of residuals: each
//! value minus what a model predicts from the ones before. Shared by the timestamp
//! codec and the decimal value codec.
//!
//! Layout: the model's head values as zigzag varints, then the residuals in one of
//! the codings of [`crate::residuals`].

use crate::Error;
use crate::cursor::Cursor;
use crate::residuals::{self, Coding};
use crate::varint::put_varint;

/// How each value is predicted from the ones before it; residuals are the misses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Model {
    /// The previous value. Head: the first value.
    Delta,
    /// The previous value plus the previous delta. Head: the first value and delta.
    DeltaOfDelta,
    /// `origin + i * step`, a regular grid. Head: the origin and the step (none for a
    /// single value). Unlike the others, every value has a residual: the origin is
    /// centred among the values so residuals straddle zero.
    Grid,
}

/// Appends `xs` under `model` and returns the residual coding it chose, the smallest
/// of those tried.
pub(crate) fn encode(dst: &mut Vec<u8>, xs: &[i64], model: Model) -> Coding {
    let mut head = HeadValues::default();
    let residuals: Vec<i64> = match (model, xs) {
        (_, []) => Vec::new(),
        (Model::Delta, [first, ..]) => {
            head.push(*first);
            deltas(xs).collect()
        }
        (Model::DeltaOfDelta, [first, ..]) => {
            head.push(*first);
            let mut ds = deltas(xs);
            head.extend(ds.next());
            let mut prev_delta = head.second();
            ds.map(|d| {
                let dod = d.wrapping_sub(prev_delta);
                prev_delta = d;
                dod
            })
            .collect()
        }
        (Model::Grid, [first, .., last]) => {
            // The mean step, rounded; any step round-trips, this one keeps residuals
            // small.
            let span = i128::from(*last) - i128::from(*first);
            let intervals = xs.len() as i128 - 1;
            let rounding = i128::from(2 * span.rem_euclid(intervals) >= intervals);
            let step = (span.div_euclid(intervals) + rounding) as i64;
            let mut offsets: Vec<i64> = grid(*first, step)
                .zip(xs)
                .map(|(on_grid, x)| x.wrapping_sub(on_grid))
                .collect();
            let (lo, hi) = offsets
                .iter()
                .fold((i64::MAX, i64::MIN), |(lo, hi), &o| (lo.min(o), hi.max(o)));
            let centre = ((i128::from(lo) + i128::from(hi)) / 2) as i64;
            head.extend([first.wrapping_add(centre), step]);
            for o in &mut offsets {
                *o = o.wrapping_sub(centre);
            }
            offsets
        }
        (Model::Grid, [only]) => {
            head.push(*only);
            vec![0]
        }
    };
    for &h in head.as_slice() {
        put_varint(dst, h);
    }
    residuals::encode(dst, &residuals)
}

/// Up to two head values, without a heap allocation per block.
#[derive(Default)]
struct HeadValues {
    values: [i64; 2],
    len: usize,
}

impl HeadValues {
    fn push(&mut self, v: i64) {
        if let Some(slot) = self.values.get_mut(self.len) {
            *slot = v;
            self.len += 1;
        }
    }

    fn extend(&mut self, vs: impl IntoIterator<Item = i64>) {
        for v in vs {
            self.push(v);
        }
    }

    /// The second value (the first delta), 0 if there is none.
    fn second(&self) -> i64 {
        self.as_slice().get(1).copied().unwrap_or(0)
    }

    fn as_slice(&self) -> &[i64] {
        self.values.get(..self.len).unwrap_or_default()
    }
}

/// Appends `count` integers decoded from `cur` under `model` to `out`.
pub(crate) fn decode(
    cur: &mut Cursor<'_>,
    count: usize,
    model: Model,
    coding: Coding,
    out: &mut Vec<i64>,
) -> Result<(), Error> {
    if count == 0 {
        return Ok(());
    }
    let first = cur.varint(if model == Model::Grid {
        "grid origin"
    } else {
        "first value"
    })?;
    let second = match model {
        _ if count < 2 => 0,
        Model::Delta => 0,
        Model::DeltaOfDelta => cur.varint("first delta")?,
        Model::Grid => cur.varint("grid step")?,
    };
    let start = out.len();
    match model {
        Model::Delta => out.push(first),
        Model::DeltaOfDelta => {
            out.push(first);
            if count > 1 {
                out.push(first.wrapping_add(second));
            }
        }
        Model::Grid => {}
    }
    let in_head = out.len() - start;
    residuals::decode(cur, count - in_head, coding, out)?;
    let decoded = out.get_mut(start + in_head..).unwrap_or_default();
    match model {
        Model::Delta => {
            let mut prev = first;
            for x in decoded {
                prev = prev.wrapping_add(*x);
                *x = prev;
            }
        }
        Model::DeltaOfDelta => {
            let (mut prev, mut delta) = (first.wrapping_add(second), second);
            for x in decoded {
                delta = delta.wrapping_add(*x);
                prev = prev.wrapping_add(delta);
                *x = prev;
            }
        }
        Model::Grid => {
            for (x, on_grid) in decoded.iter_mut().zip(grid(first, second)) {
                *x = on_grid.wrapping_add(*x);
            }
        }
    }
    Ok(())
}

/// Successive differences of `xs`, wrapping.
fn deltas(xs: &[i64]) -> impl Iterator<Item = i64> + '_ {
    xs.iter().zip(xs.iter().skip(1)).map(|(a, b)| b.wrapping_sub(*a))
}

/// `first, first + step, first + 2 * step, …`, wrapping.
fn grid(first: i64, step: i64) -> impl Iterator<Item = i64> {
    std::iter::successors(Some(first), move |x| Some(x.wrapping_add(step)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MODELS: [Model; 3] = [Model::Delta, Model::DeltaOfDelta, Model::Grid];

    /// Round-trips `xs` and returns the coding chosen and the encoded size.
    fn check(xs: &[i64], model: Model) -> (Coding, usize) {
        let mut buf = Vec::new();
        let coding = encode(&mut buf, xs, model);
        buf.push(0xee);
        let mut cur = Cursor::new(&buf);
        let mut out = vec![42];
        decode(&mut cur, xs.len(), model, coding, &mut out).unwrap();
        assert_eq!(out[1..], *xs, "{model:?}");
        assert_eq!(cur.rest(), [0xee]);
        (coding, buf.len() - 1)
    }

    #[test]
    fn each_coding_wins_where_it_should() {
        assert_eq!(check(&[], Model::DeltaOfDelta), (Coding::Varint, 0));
        assert_eq!(check(&[5], Model::Delta), (Coding::Varint, 1));
        assert_eq!(check(&[5], Model::Grid), (Coding::Varint, 2));
        // Mostly-zero residuals: a bit each, plus `k`.
        let steps: Vec<i64> = (0..64).map(|i| i / 16).collect();
        assert_eq!(check(&steps, Model::Delta), (Coding::Bits, 1 + 1 + 9));
        // Residuals filling a varint byte: 7 bits there, 9 in the bit code.
        let byte_sized: Vec<i64> = (0..64).map(|i| i * 40).collect();
        assert_eq!(check(&byte_sized, Model::Delta), (Coding::Varint, 64));
        // A long, repetitive stream: zstd.
        let periodic: Vec<i64> = (0..4096).map(|i| i * 7919 % 1000).collect();
        assert_eq!(check(&periodic, Model::Delta).0, Coding::ZstdVarint);
    }

    #[test]
    fn models_predict_their_own_shapes_exactly() {
        let line: Vec<i64> = (0..100).map(|i| 7 + 15_000 * i).collect();
        // A zero residual costs one bit: 98 to 100 of them fit 13 bytes.
        assert_eq!(check(&line, Model::Grid), (Coding::Bits, 1 + 3 + 1 + 13));
        assert_eq!(check(&line, Model::DeltaOfDelta), (Coding::Bits, 1 + 3 + 1 + 13));
        assert_eq!(check(&[3; 100], Model::Delta), (Coding::Bits, 1 + 1 + 13));
    }

    #[test]
    fn extreme_values_wrap_through_the_models() {
        let xs = [i64::MIN, i64::MAX, 0, i64::MIN, -1, i64::MAX];
        for model in MODELS {
            check(&xs, model);
            check(&[i64::MAX, i64::MIN], model);
        }
    }

    #[test]
    fn residual_counts_beyond_the_input_are_rejected_before_allocating() {
        for coding in [Coding::Varint, Coding::Bits] {
            let mut cur = Cursor::new(&[0, 1, 0]);
            let mut out = Vec::new();
            let err = decode(&mut cur, usize::MAX, Model::Delta, coding, &mut out).unwrap_err();
            assert!(matches!(err, Error::Corrupt { .. }), "{coding:?}: {err}");
        }
    }

    proptest! {
        #[test]
        fn arbitrary_sequences_round_trip(xs in proptest::collection::vec(any::<i64>(), 0..300)) {
            for model in MODELS {
                check(&xs, model);
            }
        }

        #[test]
        fn small_residual_sequences_round_trip(xs in proptest::collection::vec(-3000i64..3000, 0..1000)) {
            for model in MODELS {
                check(&xs, model);
            }
        }
    }
}
