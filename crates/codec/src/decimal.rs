//! Decimal conversion in the style of VictoriaMetrics: most metric values are short
//! decimals (`0.25`, `1234.56`, counters), so a block is stored as integer mantissas
//! sharing one scale, `v = m / 10^scale`, and the mantissas go through the integer
//! sequence codec. A few values that do not fit (stale markers, other NaNs, ±Inf,
//! -0.0, outliers needing more digits) are kept aside bit-exactly as exceptions.

use crate::Error;
use crate::cursor::Cursor;
use crate::varint::put_uvarint;

/// Exactly representable powers of ten: 10^22 is the largest one in an f64.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
    1e21, 1e22,
];
pub(crate) const MAX_SCALE: u8 = 22;
/// Magnitude above which a scaled value no longer fits an i64.
const I64_LIMIT: f64 = 9.223_372_036_854_775e18;
/// Bytes per exception: at least one for its position, eight for its bits.
const EXCEPTION_MIN_BYTES: usize = 9;
/// What an exception typically costs, against roughly 10/3 bits per value for each
/// extra decimal digit of scale.
const EXCEPTION_COST_BITS: usize = 8 * EXCEPTION_MIN_BYTES;

/// A block of values as mantissas at a common scale, plus the values that did not fit.
#[derive(Debug, PartialEq)]
pub(crate) struct Decimal {
    pub(crate) scale: u8,
    /// One per value; an exception's slot repeats the previous mantissa so it costs a
    /// zero residual.
    pub(crate) mantissas: Vec<i64>,
    /// Positions and bit patterns of the values the mantissas do not describe.
    pub(crate) exceptions: Vec<(usize, u64)>,
}

/// The value a mantissa stands for at `scale`. Decoding is defined by exactly this
/// computation, and the encoder checks every value against it, so round trips are
/// bit-exact by construction.
pub(crate) fn to_f64(mantissa: i64, scale: u8) -> f64 {
    let pow = POW10.get(usize::from(scale)).copied().unwrap_or(1.0);
    mantissa as f64 / pow
}

/// [`to_f64`] of every mantissa, appended to `out`: the same computation in a
/// loop the compiler vectorises. SSE2 has no packed i64 → f64 conversion, so
/// mantissas under 2^51 in magnitude (all that real data has) convert by
/// adding them to the bits of 1.5 · 2^52 and subtracting that number again,
/// which is exact, as `as f64` is for them.
pub(crate) fn extend_f64(out: &mut Vec<f64>, mantissas: &[i64], scale: u8) {
    const LIMIT: i64 = 1 << 51;
    let pow = POW10.get(usize::from(scale)).copied().unwrap_or(1.0);
    let start = out.len();
    out.resize(start + mantissas.len(), 0.0);
    let dst = out.get_mut(start..).unwrap_or_default();
    let small = mantissas.iter().fold(true, |ok, &m| ok & (-LIMIT..LIMIT).contains(&m));
    if !small {
        for (o, &m) in dst.iter_mut().zip(mantissas) {
            *o = to_f64(m, scale);
        }
        return;
    }
    convert_small(dst, mantissas, pow);
}

crate::v3_kernel! {
    /// The vectorised loop of [`extend_f64`], for mantissas under 2^51 in
    /// magnitude. Its divisions bound it, hence the AVX2 build (see `cairn_codec::simd`).
    fn convert_small(dst: &mut [f64], mantissas: &[i64], pow: f64) {
        const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52
        let magic_bits = MAGIC.to_bits() as i64;
        for (o, &m) in dst.iter_mut().zip(mantissas) {
            *o = (f64::from_bits(magic_bits.wrapping_add(m) as u64) - MAGIC) / pow;
        }
    }
}

/// The mantissa standing for `v` at `scale`, if there is one.
fn mantissa_at(v: f64, scale: u8) -> Option<i64> {
    let scaled = v * POW10.get(usize::from(scale))?;
    // Also rejects NaN and ±Inf.
    if scaled.is_nan() || scaled.abs() >= I64_LIMIT {
        return None;
    }
    let m = scaled.round() as i64;
    (to_f64(m, scale).to_bits() == v.to_bits()).then_some(m)
}

/// The smallest scale at which `v` has a mantissa, searched from `hint`
/// (the previous value's: neighbours mostly need the same scale, and each
/// try costs a division). Below `hint` the search goes down while the
/// scales fit: a value with a mantissa at some scale has one at every
/// greater scale as long as the mantissa stays below 2^53. Above it, a
/// large value can fail by overflow where a smaller scale fits, so when no
/// greater scale fits, the smaller ones are tried too. A scale found
/// slightly too great only costs compactness, never exactness:
/// [`Decimal::from_values`] checks every value at the scale it settles on.
fn smallest_scale(v: f64, hint: u8) -> Option<u8> {
    if mantissa_at(v, hint).is_some() {
        let mut s = hint;
        while s > 0 && mantissa_at(v, s - 1).is_some() {
            s -= 1;
        }
        return Some(s);
    }
    (hint + 1..=MAX_SCALE)
        .find(|&s| mantissa_at(v, s).is_some())
        .or_else(|| (0..hint).find(|&s| mantissa_at(v, s).is_some()))
}

impl Decimal {
    /// Converts `vs`, or returns `None` when more than a sixteenth of them (plus one)
    /// would be exceptions, where Gorilla does better anyway.
    pub(crate) fn from_values(vs: &[f64]) -> Option<Self> {
        let budget = vs.len() / 16 + 1;

        // The smallest scale each value needs, as a histogram.
        let mut needing = [0usize; MAX_SCALE as usize + 1];
        let mut unrepresentable = 0;
        let mut previous = 0;
        for &v in vs {
            match smallest_scale(v, previous) {
                Some(s) => {
                    previous = s;
                    if let Some(n) = needing.get_mut(usize::from(s)) {
                        *n += 1;
                    }
                }
                None => {
                    unrepresentable += 1;
                    if unrepresentable > budget {
                        return None;
                    }
                }
            }
        }
        // Trade exceptions against digits: one value needing many digits should not
        // inflate every mantissa, nor should many values become exceptions.
        let mut best: Option<(usize, u8)> = None;
        let mut above = vs.len() - unrepresentable;
        for (s, n) in (0..=MAX_SCALE).zip(needing) {
            above -= n;
            let exceptions = above + unrepresentable;
            if exceptions <= budget {
                let cost = exceptions * EXCEPTION_COST_BITS + vs.len() * usize::from(s) * 10 / 3;
                if best.is_none_or(|(best_cost, _)| cost < best_cost) {
                    best = Some((cost, s));
                }
            }
        }
        let (_, scale) = best?;

        let mut mantissas = Vec::with_capacity(vs.len());
        let mut exceptions = Vec::new();
        let mut prev = 0;
        for (i, &v) in vs.iter().enumerate() {
            match mantissa_at(v, scale) {
                Some(m) => prev = m,
                None => {
                    exceptions.push((i, v.to_bits()));
                    if exceptions.len() > budget {
                        return None;
                    }
                }
            }
            mantissas.push(prev);
        }
        Some(Self {
            scale,
            mantissas,
            exceptions,
        })
    }

    /// Appends the scale byte and the exception list: `uvarint n`, then per exception
    /// `uvarint gap` (positions after the previous exception) and its 8 bytes, LE.
    pub(crate) fn write_header(&self, dst: &mut Vec<u8>) {
        dst.push(self.scale);
        put_uvarint(dst, self.exceptions.len() as u64);
        let mut next = 0;
        for &(pos, bits) in &self.exceptions {
            put_uvarint(dst, (pos - next) as u64);
            dst.extend_from_slice(&bits.to_le_bytes());
            next = pos + 1;
        }
    }
}

/// Reads what [`Decimal::write_header`] wrote for a block of `count` values.
pub(crate) fn read_header(cur: &mut Cursor<'_>, count: usize) -> Result<(u8, Vec<(usize, u64)>), Error> {
    let scale_offset = cur.offset();
    let scale = cur.u8("decimal scale")?;
    if scale > MAX_SCALE {
        return Err(Error::Corrupt {
            what: "decimal scale",
            offset: scale_offset,
        });
    }
    let max = count.min(cur.remaining() / EXCEPTION_MIN_BYTES);
    let n = cur.count("exception count", max)?;
    let mut exceptions = Vec::with_capacity(n);
    let mut next = 0usize;
    for _ in 0..n {
        let offset = cur.offset();
        let gap = cur.count("exception position", count)?;
        let pos = next.checked_add(gap).filter(|&p| p < count).ok_or(Error::Corrupt {
            what: "exception position",
            offset,
        })?;
        exceptions.push((pos, cur.u64_le("exception value")?));
        next = pos + 1;
    }
    Ok((scale, exceptions))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(vs: &[f64], scale: u8, exceptions: &[usize]) {
        let d = Decimal::from_values(vs).unwrap();
        assert_eq!(d.scale, scale, "{vs:?}");
        let positions: Vec<usize> = d.exceptions.iter().map(|&(p, _)| p).collect();
        assert_eq!(positions, exceptions, "{vs:?}");
        for (i, (&v, &m)) in vs.iter().zip(&d.mantissas).enumerate() {
            if !exceptions.contains(&i) {
                assert_eq!(to_f64(m, d.scale).to_bits(), v.to_bits());
            }
        }
        let mut header = Vec::new();
        d.write_header(&mut header);
        let mut cur = Cursor::new(&header);
        assert_eq!(read_header(&mut cur, vs.len()).unwrap(), (d.scale, d.exceptions));
    }

    proptest::proptest! {
        #[test]
        fn block_conversion_is_to_f64(
            mantissas in proptest::collection::vec(
                proptest::prop_oneof![-1000i64..1000, -(1i64 << 51)..(1i64 << 51), proptest::num::i64::ANY],
                0..40,
            ),
            scale in 0u8..=24,
        ) {
            let mut out = vec![7.0];
            extend_f64(&mut out, &mantissas, scale);
            proptest::prop_assert_eq!(out.len(), mantissas.len() + 1);
            for (o, &m) in out[1..].iter().zip(&mantissas) {
                proptest::prop_assert_eq!(o.to_bits(), to_f64(m, scale).to_bits());
            }
        }
    }

    #[test]
    fn common_scales_are_the_fewest_digits_that_fit() {
        check(&[], 0, &[]);
        check(&[0.0, 1.0, 3.0e6, -42.0], 0, &[]);
        check(&[0.5, 1.25, 100.0], 2, &[]);
        check(&[1.8177e-05, 2.1e-05], 9, &[]);
        check(&[1234.56, 1234.57, 1235.0], 2, &[]);
    }

    #[test]
    fn a_value_needing_many_digits_does_not_raise_the_scale_of_large_ones() {
        // 100/3 needs 15 decimals; at that scale 100000 would overflow an
        // i64, while at scale 0 it fits, as do all the others.
        let mut vs = vec![100.0 / 3.0];
        vs.extend((0..119).map(|i| 100_000.0 + f64::from(i)));
        check(&vs, 0, &[0]);
    }

    #[test]
    fn odd_values_become_exceptions() {
        let stale = f64::from_bits(0x7ff0_0000_0000_0002);
        check(&[1.0, 2.0, stale], 0, &[2]);
        check(&[-0.0, 1.0], 0, &[0]);
        // 0.1 + 0.2 needs 17 digits; one outlier doesn't set the scale for all.
        check(&[0.5, 0.1 + 0.2, 0.25], 2, &[1]);
    }

    #[test]
    fn mostly_undecimal_blocks_are_refused() {
        // Any double has a 17-digit decimal form, so only values needing more than
        // 22 decimals (or a mantissa beyond i64) are undecimal.
        let noise: Vec<f64> = (1..40).map(|i| (i as f64).sqrt() * 1e-30).collect();
        assert_eq!(Decimal::from_values(&noise), None);
        assert_eq!(Decimal::from_values(&[f64::NAN, f64::INFINITY]), None);
    }

    #[test]
    fn exception_headers_are_validated() {
        // Scale beyond 10^22.
        let mut cur = Cursor::new(&[23, 0]);
        assert!(read_header(&mut cur, 1).is_err());
        // An exception at position 1 of a one-value block.
        let mut bad = vec![0, 1, 1];
        bad.extend_from_slice(&[0; 8]);
        let mut cur = Cursor::new(&bad);
        assert_eq!(
            read_header(&mut cur, 1),
            Err(Error::Corrupt {
                what: "exception position",
                offset: 2
            })
        );
    }
}
