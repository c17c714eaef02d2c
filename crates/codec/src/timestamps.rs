//! Timestamp blocks. Scrapes land on a regular grid with a few milliseconds of jitter,
//! so timestamps are stored as their distance from a grid (for steady jitter) or as
//! delta-of-deltas (for drift and gaps), whichever is smaller; a perfectly regular
//! block collapses to its first timestamp and its step.

use crate::cursor::Cursor;
use crate::intseq::{self, Model};
use crate::residuals::Coding;
use crate::varint::{put_uvarint, put_varint};
use crate::{Error, MAX_CONST_RUN, tag};

/// Tag high nibble: `first, delta`; sample `i` is `first + i * delta`.
const CONSTANT_DELTA: u8 = 0;
/// Tag high nibble: a delta-of-delta integer sequence, coded as the low nibble says.
const DELTA_OF_DELTA: u8 = 1;
/// Tag high nibble: a grid integer sequence, coded as the low nibble says.
const GRID: u8 = 2;

/// Appends an encoded block of timestamps (ms). Any i64 sequence round-trips, but
/// sorted, near-regular ones (a 15 s scrape grid with a few ms of jitter) cost close to
/// nothing.
pub fn encode_timestamps(dst: &mut Vec<u8>, ts: &[i64]) {
    if encode_constant_delta(dst, ts) {
        return;
    }
    let start = dst.len();
    encode_model(dst, ts, DELTA_OF_DELTA, Model::DeltaOfDelta);
    let candidate = dst.len();
    encode_model(dst, ts, GRID, Model::Grid);
    crate::values::keep_smaller(dst, start, candidate);
}

/// Like [`encode_timestamps`] but without trying the grid model: cheaper, for
/// short-lived in-memory parts that a merge will re-encode. Decoded by
/// [`decode_timestamps`] alike.
pub fn encode_timestamps_fast(dst: &mut Vec<u8>, ts: &[i64]) {
    if !encode_constant_delta(dst, ts) {
        encode_model(dst, ts, DELTA_OF_DELTA, Model::DeltaOfDelta);
    }
}

/// Writes the constant-delta coding if the timestamps are evenly spaced
/// (and the block short enough); returns whether it did.
fn encode_constant_delta(dst: &mut Vec<u8>, ts: &[i64]) -> bool {
    let Some(delta) = constant_delta(ts) else {
        return false;
    };
    dst.push(tag(CONSTANT_DELTA, 0));
    put_uvarint(dst, ts.len() as u64);
    if let Some(&first) = ts.first() {
        put_varint(dst, first);
    }
    if ts.len() > 1 {
        put_varint(dst, delta);
    }
    true
}

fn encode_model(dst: &mut Vec<u8>, ts: &[i64], transform: u8, model: Model) {
    let at = dst.len();
    dst.push(0);
    put_uvarint(dst, ts.len() as u64);
    let coding = intseq::encode(dst, ts, model);
    if let Some(t) = dst.get_mut(at) {
        *t = tag(transform, coding as u8);
    }
}

/// The step of a block whose timestamps are all equally spaced (0 for blocks of fewer
/// than two), if it is short enough for a constant encoding.
fn constant_delta(ts: &[i64]) -> Option<i64> {
    if ts.len() > MAX_CONST_RUN {
        return None;
    }
    let delta = match ts {
        [a, b, ..] => b.wrapping_sub(*a),
        _ => 0,
    };
    ts.iter()
        .zip(ts.iter().skip(1))
        .all(|(a, b)| b.wrapping_sub(*a) == delta)
        .then_some(delta)
}

/// Appends decoded timestamps to `out`; returns the rest of `src` after the block.
/// On error `out` is left as it was.
pub fn decode_timestamps<'a>(src: &'a [u8], out: &mut Vec<i64>) -> Result<&'a [u8], Error> {
    let start = out.len();
    let mut cur = Cursor::new(src);
    match decode_block(&mut cur, out) {
        Ok(()) => Ok(cur.rest()),
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}

fn decode_block(cur: &mut Cursor<'_>, out: &mut Vec<i64>) -> Result<(), Error> {
    let tag = cur.u8("timestamp block tag")?;
    match (tag >> 4, tag & 0x0f) {
        (CONSTANT_DELTA, 0) => {
            let count = cur.count("timestamp count", MAX_CONST_RUN)?;
            if count == 0 {
                return Ok(());
            }
            let first = cur.varint("first timestamp")?;
            let delta = if count > 1 { cur.varint("timestamp delta")? } else { 0 };
            out.reserve(count);
            out.extend(std::iter::successors(Some(first), |t| Some(t.wrapping_add(delta))).take(count));
            Ok(())
        }
        (transform @ (DELTA_OF_DELTA | GRID), coding) => {
            let coding = Coding::from_nibble(coding).ok_or(Error::UnknownTag {
                what: "timestamp block",
                tag,
            })?;
            let model = if transform == GRID {
                Model::Grid
            } else {
                Model::DeltaOfDelta
            };
            let count = cur.count("timestamp count", usize::MAX)?;
            intseq::decode(cur, count, model, coding, out)
        }
        _ => Err(Error::UnknownTag {
            what: "timestamp block",
            tag,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Round-trips `ts` after a prefix and before a suffix, returns the block's size.
    fn check(ts: &[i64]) -> usize {
        let mut fast = Vec::new();
        encode_timestamps_fast(&mut fast, ts);
        let mut back = Vec::new();
        assert!(decode_timestamps(&fast, &mut back).unwrap().is_empty());
        assert_eq!(back, ts, "fast coding");
        let mut buf = vec![0xaa];
        encode_timestamps(&mut buf, ts);
        let size = buf.len() - 1;
        buf.push(0xee);
        let mut out = vec![-7];
        let rest = decode_timestamps(&buf[1..], &mut out).unwrap();
        assert_eq!(out[1..], *ts);
        assert_eq!(rest, [0xee]);
        size
    }

    /// `n` timestamps on a 15 s grid, with ±`jitter` ms from a fixed pseudo-random walk.
    fn grid(n: usize, jitter: i64) -> Vec<i64> {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        (0..n as i64)
            .map(|i| {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let j = if jitter == 0 {
                    0
                } else {
                    (seed >> 33) as i64 % (2 * jitter + 1) - jitter
                };
                1_795_327_337_516 + i * 15_000 + j
            })
            .collect()
    }

    fn tag_of(ts: &[i64]) -> u8 {
        let mut buf = Vec::new();
        encode_timestamps(&mut buf, ts);
        buf[0]
    }

    #[test]
    fn regular_blocks_cost_a_few_bytes() {
        assert_eq!(check(&[]), 2);
        assert_eq!(check(&[1_795_327_337_516]), 8);
        assert_eq!(check(&grid(120, 0)), 1 + 1 + 6 + 3);
        assert_eq!(check(&grid(8192, 0)), 1 + 2 + 6 + 3);
        assert_eq!(tag_of(&grid(8192, 0)), tag(CONSTANT_DELTA, 0));
    }

    #[test]
    fn jittered_blocks_cost_under_a_byte_per_sample() {
        let size = check(&grid(120, 5));
        assert!(size <= 100, "{size}");
        assert_eq!(tag_of(&grid(120, 5)) >> 4, GRID);
        let size = check(&grid(8192, 5));
        assert!(size <= 8192 * 3 / 4, "{size}");
        // Exact timestamps with a rare late scrape: about a bit per sample.
        let mut ts = grid(200, 0);
        ts[100] += 1;
        assert!(check(&ts) < 40);
        assert_eq!(tag_of(&ts) & 0x0f, Coding::Bits as u8);
    }

    #[test]
    fn a_changed_scrape_interval_uses_delta_of_delta() {
        let mut ts = grid(120, 0);
        for (i, t) in ts.iter_mut().enumerate().skip(60) {
            *t += 15_000 * (i as i64 - 60);
        }
        assert!(check(&ts) < 30);
        assert_eq!(tag_of(&ts), tag(DELTA_OF_DELTA, Coding::Bits as u8));
    }

    #[test]
    fn constant_runs_longer_than_the_cap_use_zstd() {
        let ts = grid(MAX_CONST_RUN + 1, 0);
        assert_eq!(tag_of(&ts) & 0x0f, Coding::ZstdVarint as u8);
        check(&ts);
    }

    #[test]
    fn unsorted_and_extreme_timestamps_round_trip() {
        check(&[i64::MAX, i64::MIN, 0, -1, i64::MAX]);
        check(&[5, 3, 9, 9, 9, -100]);
        check(&[i64::MIN, i64::MAX]);
    }

    #[test]
    fn unknown_tags_and_huge_counts_are_rejected() {
        let mut out = vec![1];
        assert_eq!(
            decode_timestamps(&[0x14, 1, 0], &mut out),
            Err(Error::UnknownTag {
                what: "timestamp block",
                tag: 0x14
            })
        );
        // A constant block claiming 2^60 samples.
        let mut buf = vec![tag(CONSTANT_DELTA, 0)];
        put_uvarint(&mut buf, 1 << 60);
        buf.extend_from_slice(&[2, 2]);
        assert!(matches!(decode_timestamps(&buf, &mut out), Err(Error::Corrupt { .. })));
        assert_eq!(out, [1], "a failed decode leaves `out` as it was");
    }

    #[test]
    fn every_truncation_and_byte_flip_is_handled() {
        let mut irregular = grid(300, 5);
        irregular[10] = i64::MIN;
        let blocks = [
            grid(1, 0),
            grid(120, 0),
            grid(120, 5),
            grid(480, 0),
            grid(1000, 5),
            irregular,
        ];
        for ts in blocks {
            let mut buf = Vec::new();
            encode_timestamps(&mut buf, &ts);
            for len in 0..buf.len() {
                assert!(
                    decode_timestamps(&buf[..len], &mut Vec::new()).is_err(),
                    "prefix {len} of {:#04x} block",
                    buf[0]
                );
            }
            for i in 0..buf.len() {
                for flip in [0x01, 0x80, 0xff] {
                    let mut bad = buf.clone();
                    bad[i] ^= flip;
                    // Any result but a panic is fine; a success must be well-formed.
                    if let Ok(rest) = decode_timestamps(&bad, &mut Vec::new()) {
                        assert!(rest.len() <= bad.len());
                    }
                }
            }
        }
    }

    proptest! {
        #[test]
        fn arbitrary_timestamps_round_trip(ts in proptest::collection::vec(any::<i64>(), 0..200)) {
            check(&ts);
        }

        #[test]
        fn jittered_grids_round_trip(n in 0usize..3000, jitter in 0i64..50, gaps in proptest::collection::vec((0usize..3000, 1i64..1_000_000), 0..3)) {
            let mut ts = grid(n, jitter);
            for (at, gap) in gaps {
                for t in ts.iter_mut().skip(at) {
                    *t += gap;
                }
            }
            check(&ts);
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut out = Vec::new();
            match decode_timestamps(&bytes, &mut out) {
                Ok(rest) => prop_assert!(rest.len() <= bytes.len()),
                Err(_) => prop_assert!(out.is_empty()),
            }
        }
    }
}
