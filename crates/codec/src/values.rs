//! Float value blocks. Every block is encoded as a constant when all values are
//! bit-identical, else both as Gorilla XOR and (when the values are short decimals) as
//! decimal mantissas in delta and delta-of-delta form; the smallest is kept.

use crate::cursor::Cursor;
use crate::decimal::{self, Decimal};
use crate::intseq::{self, Model};
use crate::residuals::Coding;
use crate::varint::put_uvarint;
use crate::{Error, MAX_CONST_RUN, gorilla, tag};

/// Tag high nibble: the one value's 8 bytes, LE (none for an empty block).
const CONSTANT: u8 = 0;
/// Tag high nibble: decimal header, then mantissas as deltas.
const DECIMAL_DELTA: u8 = 1;
/// Tag high nibble: decimal header, then mantissas as delta-of-deltas.
const DECIMAL_DELTA_OF_DELTA: u8 = 2;
/// Tag high nibble: a Gorilla XOR bit stream.
const GORILLA: u8 = 3;

/// Appends an encoded block of f64 values. Every bit pattern round-trips exactly: NaN
/// payloads, the Prometheus stale marker, ±Inf, -0.0, subnormals.
pub fn encode_values(dst: &mut Vec<u8>, vs: &[f64]) {
    if encode_constant(dst, vs) {
        return;
    }
    // Candidates are written straight into `dst` one after another and the
    // smaller one kept (moved down), so no block needs a scratch buffer.
    let start = dst.len();
    encode_gorilla(dst, vs);

    if let Some(dec) = Decimal::from_values(vs) {
        for (transform, model) in [
            (DECIMAL_DELTA, Model::Delta),
            (DECIMAL_DELTA_OF_DELTA, Model::DeltaOfDelta),
        ] {
            let candidate = dst.len();
            dst.push(0);
            put_uvarint(dst, vs.len() as u64);
            dec.write_header(dst);
            let coding = intseq::encode(dst, &dec.mantissas, model);
            if let Some(t) = dst.get_mut(candidate) {
                *t = tag(transform, coding as u8);
            }
            keep_smaller(dst, start, candidate);
        }
    }
}

/// Like [`encode_values`] but with only the constant and Gorilla codings:
/// several times cheaper, for short-lived in-memory parts that a merge will
/// re-encode with [`encode_values`]. Decoded by [`decode_values`] alike.
pub fn encode_values_fast(dst: &mut Vec<u8>, vs: &[f64]) {
    if !encode_constant(dst, vs) {
        encode_gorilla(dst, vs);
    }
}

/// Writes the constant coding if every value has the same bits (and the
/// block is short enough); returns whether it did.
fn encode_constant(dst: &mut Vec<u8>, vs: &[f64]) -> bool {
    let Some(bits) = constant_bits(vs) else {
        return false;
    };
    dst.push(tag(CONSTANT, 0));
    put_uvarint(dst, vs.len() as u64);
    if !vs.is_empty() {
        dst.extend_from_slice(&bits.to_le_bytes());
    }
    true
}

fn encode_gorilla(dst: &mut Vec<u8>, vs: &[f64]) {
    dst.push(tag(GORILLA, 0));
    put_uvarint(dst, vs.len() as u64);
    gorilla::encode(dst, vs);
}

/// `dst[start..mid]` and `dst[mid..]` are two encodings of one block: keeps the
/// shorter (the first on a tie) at `start`.
pub(crate) fn keep_smaller(dst: &mut Vec<u8>, start: usize, mid: usize) {
    let (first, second) = (mid - start, dst.len() - mid);
    if second < first {
        dst.copy_within(mid.., start);
        dst.truncate(start + second);
    } else {
        dst.truncate(mid);
    }
}

/// The bits shared by all values (0 for an empty block), if the block is short enough
/// for a constant encoding.
fn constant_bits(vs: &[f64]) -> Option<u64> {
    if vs.len() > MAX_CONST_RUN {
        return None;
    }
    let bits = vs.first().map_or(0, |v| v.to_bits());
    vs.iter().all(|v| v.to_bits() == bits).then_some(bits)
}

/// Appends decoded values to `out`; returns the rest of `src` after the block.
/// On error `out` is left as it was.
pub fn decode_values<'a>(src: &'a [u8], out: &mut Vec<f64>) -> Result<&'a [u8], Error> {
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

fn decode_block(cur: &mut Cursor<'_>, out: &mut Vec<f64>) -> Result<(), Error> {
    let tag = cur.u8("value block tag")?;
    let unknown = Error::UnknownTag {
        what: "value block",
        tag,
    };
    match (tag >> 4, tag & 0x0f) {
        (CONSTANT, 0) => {
            let count = cur.count("value count", MAX_CONST_RUN)?;
            if count > 0 {
                let v = f64::from_bits(cur.u64_le("constant value")?);
                out.resize(out.len() + count, v);
            }
            Ok(())
        }
        (GORILLA, 0) => {
            let count = cur.count("value count", usize::MAX)?;
            gorilla::decode(cur, count, out)
        }
        (transform @ (DECIMAL_DELTA | DECIMAL_DELTA_OF_DELTA), coding) => {
            let coding = Coding::from_nibble(coding).ok_or(unknown)?;
            let model = if transform == DECIMAL_DELTA {
                Model::Delta
            } else {
                Model::DeltaOfDelta
            };
            let count = cur.count("value count", usize::MAX)?;
            let (scale, exceptions) = decimal::read_header(cur, count)?;
            let mut mantissas = Vec::new();
            intseq::decode(cur, count, model, coding, &mut mantissas)?;
            let start = out.len();
            decimal::extend_f64(out, &mantissas, scale);
            for (pos, bits) in exceptions {
                if let Some(v) = out.get_mut(start + pos) {
                    *v = f64::from_bits(bits);
                }
            }
            Ok(())
        }
        _ => Err(unknown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const STALE: f64 = f64::from_bits(0x7ff0_0000_0000_0002);

    fn bits(vs: &[f64]) -> Vec<u64> {
        vs.iter().map(|v| v.to_bits()).collect()
    }

    /// Round-trips `vs` after a prefix and before a suffix; returns the block's tag
    /// and size.
    fn check(vs: &[f64]) -> (u8, usize) {
        let mut fast = Vec::new();
        encode_values_fast(&mut fast, vs);
        let mut back = Vec::new();
        assert!(decode_values(&fast, &mut back).unwrap().is_empty());
        assert_eq!(bits(&back), bits(vs), "fast coding");
        let mut buf = vec![0xaa];
        encode_values(&mut buf, vs);
        let size = buf.len() - 1;
        buf.push(0xee);
        let mut out = vec![-7.5];
        let rest = decode_values(&buf[1..], &mut out).unwrap();
        assert_eq!(bits(&out[1..]), bits(vs));
        assert_eq!(rest, [0xee]);
        (buf[1], size)
    }

    /// A counter growing by a steady rate with some noise, like `node_network_receive_bytes_total`.
    fn counter(n: usize) -> Vec<f64> {
        let mut v = 3_365_296.0;
        (0..n)
            .map(|i| {
                v += 1500.0 + ((i * 7919) % 300) as f64;
                v
            })
            .collect()
    }

    #[test]
    fn constant_blocks_cost_their_value() {
        assert_eq!(check(&[]), (tag(CONSTANT, 0), 2));
        assert_eq!(check(&[STALE]), (tag(CONSTANT, 0), 10));
        assert_eq!(check(&[0.25; 8192]), (tag(CONSTANT, 0), 11));
    }

    #[test]
    fn counters_and_short_decimals_use_mantissa_deltas() {
        let (t, size) = check(&counter(120));
        assert!([DECIMAL_DELTA, DECIMAL_DELTA_OF_DELTA].contains(&(t >> 4)), "{t:#04x}");
        assert!(size < 2 * 120, "{size}");
        // A steadily growing counter: delta-of-delta zeros.
        let steady: Vec<f64> = (0..120).map(|i| (1000 + 64 * i) as f64).collect();
        assert_eq!(
            check(&steady),
            (
                tag(DECIMAL_DELTA_OF_DELTA, Coding::Bits as u8),
                // tag, count, scale, no exceptions, first, first delta, k, 118 zero bits
                1 + 1 + 1 + 1 + 2 + 2 + 1 + 15
            )
        );
        // CPU seconds with two decimals, ending in a stale marker.
        let mut cpu: Vec<f64> = (0..120).map(|i| (123_456 + 97 * i + i % 3) as f64 / 100.0).collect();
        let (_, live_size) = check(&cpu);
        cpu.push(STALE);
        let (t, size) = check(&cpu);
        assert_eq!(t >> 4, DECIMAL_DELTA_OF_DELTA);
        assert!(size <= live_size + 12, "{size} vs {live_size}");
    }

    #[test]
    fn noisy_floats_fall_back_to_gorilla() {
        let noise: Vec<f64> = (0..120).map(|i| (i as f64 * 0.37).sin()).collect();
        assert_eq!(check(&noise).0, tag(GORILLA, 0));
        let specials = [
            f64::NAN,
            -f64::NAN,
            STALE,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            0.0,
            f64::MIN_POSITIVE / 3.0,
            f64::MAX,
            f64::MIN,
        ];
        assert_eq!(check(&specials).0, tag(GORILLA, 0));
    }

    #[test]
    fn long_blocks_may_use_zstd() {
        let periodic: Vec<f64> = (0..4096).map(|i| (i * 7919 % 1000) as f64).collect();
        assert_eq!(check(&periodic).0 & 0x0f, Coding::ZstdVarint as u8);
        let run = vec![STALE; MAX_CONST_RUN + 1];
        assert_eq!(check(&run).0, tag(GORILLA, 0));
    }

    #[test]
    fn malformed_blocks_are_rejected() {
        let mut out = vec![1.0];
        assert!(matches!(
            decode_values(&[0x33, 1], &mut out),
            Err(Error::UnknownTag { tag: 0x33, .. })
        ));
        assert!(matches!(
            decode_values(&[0x01, 1], &mut out),
            Err(Error::UnknownTag { tag: 0x01, .. })
        ));
        // A Gorilla block claiming 2^40 values in 9 bytes.
        let mut buf = vec![tag(GORILLA, 0)];
        put_uvarint(&mut buf, 1 << 40);
        buf.extend_from_slice(&[0; 9]);
        assert!(matches!(decode_values(&buf, &mut out), Err(Error::Corrupt { .. })));
        assert_eq!(bits(&out), bits(&[1.0]), "a failed decode leaves `out` as it was");
    }

    #[test]
    fn every_truncation_and_byte_flip_is_handled() {
        let mut with_stale = counter(300);
        with_stale[150] = STALE;
        let blocks = [
            vec![STALE],
            vec![1.5; 100],
            counter(120),
            with_stale,
            (0..120).map(|i| (i as f64 * 0.37).sin()).collect(),
            (0..1000).map(|i| (i * 7919 % 1000) as f64 / 8.0).collect(),
        ];
        for vs in blocks {
            let mut buf = Vec::new();
            encode_values(&mut buf, &vs);
            for len in 0..buf.len() {
                assert!(
                    decode_values(&buf[..len], &mut Vec::new()).is_err(),
                    "prefix {len} of {:#04x} block",
                    buf[0]
                );
            }
            for i in 0..buf.len() {
                for flip in [0x01, 0x80, 0xff] {
                    let mut bad = buf.clone();
                    bad[i] ^= flip;
                    // Any result but a panic is fine; a success must be well-formed.
                    if let Ok(rest) = decode_values(&bad, &mut Vec::new()) {
                        assert!(rest.len() <= bad.len());
                    }
                }
            }
        }
    }

    fn special() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(STALE),
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(-0.0),
            Just(0.0),
            Just(f64::MIN_POSITIVE / 7.0),
            Just(f64::MAX),
        ]
    }

    /// Values shaped like metrics: short decimals, integers, with the odd special.
    fn metric_like() -> impl Strategy<Value = f64> {
        prop_oneof![
            8 => (-1_000_000i64..1_000_000, 0i32..5).prop_map(|(m, s)| m as f64 / 10f64.powi(s)),
            1 => special(),
            1 => any::<u64>().prop_map(f64::from_bits),
        ]
    }

    proptest! {
        #[test]
        fn arbitrary_bit_patterns_round_trip(vs in proptest::collection::vec(any::<u64>().prop_map(f64::from_bits), 0..200)) {
            check(&vs);
        }

        #[test]
        fn metric_like_values_round_trip(vs in proptest::collection::vec(metric_like(), 0..300)) {
            check(&vs);
        }

        #[test]
        fn long_counters_with_specials_round_trip(n in 1usize..9000, specials in proptest::collection::vec((0usize..9000, special()), 0..4)) {
            let mut vs = counter(n);
            for (at, v) in specials {
                if let Some(slot) = vs.get_mut(at) {
                    *slot = v;
                }
            }
            check(&vs);
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut out = Vec::new();
            match decode_values(&bytes, &mut out) {
                Ok(rest) => prop_assert!(rest.len() <= bytes.len()),
                Err(_) => prop_assert!(out.is_empty()),
            }
        }
    }
}
