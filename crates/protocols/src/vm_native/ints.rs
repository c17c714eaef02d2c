//! VictoriaMetrics' encodings of an integer sequence (a block's timestamps,
//! or its value mantissas): constant, constant delta, or zigzag varint
//! deltas of first or second order, zstd-compressed when that pays.

use cairn_codec::varint::{get_varint, put_varint};

use super::NativeError;

/// How a sequence is encoded, by its byte in a block header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    ZstdDelta2 = 1,
    DeltaConst = 2,
    Const = 3,
    ZstdDelta = 4,
    Delta2 = 5,
    Delta = 6,
}

impl Encoding {
    pub(crate) fn from_byte(b: u8) -> Result<Self, NativeError> {
        Ok(match b {
            1 => Self::ZstdDelta2,
            2 => Self::DeltaConst,
            3 => Self::Const,
            4 => Self::ZstdDelta,
            5 => Self::Delta2,
            6 => Self::Delta,
            _ => return Err(NativeError::corrupt(format!("unknown sequence encoding {b}"))),
        })
    }
}

/// Below this many bytes of varints, compression is not tried.
const MIN_COMPRESSIBLE: usize = 128;

/// Appends `a` (not empty) to `dst`; returns its encoding and first item,
/// which the block header carries.
pub(crate) fn encode(dst: &mut Vec<u8>, a: &[i64]) -> (Encoding, i64) {
    let (first, d1) = match a {
        [first, second, ..] => (*first, second.wrapping_sub(*first)),
        [first] => return (Encoding::Const, *first),
        [] => return (Encoding::Const, 0),
    };
    if a.iter().all(|&v| v == first) {
        return (Encoding::Const, first);
    }
    if a.windows(2)
        .all(|w| matches!(w, [prev, v] if v.wrapping_sub(*prev) == d1))
    {
        put_varint(dst, d1);
        return (Encoding::DeltaConst, first);
    }
    let mut varints = Vec::with_capacity(a.len() * 2);
    let gauge = is_gauge(a);
    if gauge {
        for pair in a.windows(2) {
            if let [prev, v] = pair {
                put_varint(&mut varints, v.wrapping_sub(*prev));
            }
        }
    } else {
        put_varint(&mut varints, d1);
        for triple in a.windows(3) {
            if let [a, b, c] = triple {
                put_varint(&mut varints, c.wrapping_sub(*b).wrapping_sub(b.wrapping_sub(*a)));
            }
        }
    }
    if varints.len() >= MIN_COMPRESSIBLE
        && let Ok(compressed) = zstd::bulk::compress(&varints, compression_level(a.len()))
        && (compressed.len() as f64) <= 0.9 * varints.len() as f64
    {
        dst.extend_from_slice(&compressed);
        return (
            if gauge {
                Encoding::ZstdDelta
            } else {
                Encoding::ZstdDelta2
            },
            first,
        );
    }
    dst.extend_from_slice(&varints);
    (if gauge { Encoding::Delta } else { Encoding::Delta2 }, first)
}

/// What decoding reuses from one sequence to the next.
#[derive(Default)]
pub(crate) struct Scratch {
    varints: Vec<u8>,
    zstd: Option<zstd::bulk::Decompressor<'static>>,
}

/// Decodes `n` items (at least one) into `dst`, which is cleared first.
pub(crate) fn decode(
    dst: &mut Vec<i64>,
    src: &[u8],
    encoding: Encoding,
    first: i64,
    n: usize,
    scratch: &mut Scratch,
) -> Result<(), NativeError> {
    dst.clear();
    match encoding {
        Encoding::Const => {
            if !src.is_empty() {
                return Err(NativeError::corrupt("bytes after a constant sequence"));
            }
            dst.resize(n, first);
        }
        Encoding::DeltaConst => {
            let (d, rest) = get_varint(src).map_err(|e| NativeError::corrupt(format!("constant delta: {e}")))?;
            if !rest.is_empty() {
                return Err(NativeError::corrupt("bytes after a constant delta"));
            }
            let mut v = first;
            for _ in 0..n {
                dst.push(v);
                v = v.wrapping_add(d);
            }
        }
        Encoding::Delta | Encoding::Delta2 => deltas(dst, src, encoding == Encoding::Delta2, first, n)?,
        Encoding::ZstdDelta | Encoding::ZstdDelta2 => {
            let zstd = match &mut scratch.zstd {
                Some(z) => z,
                empty => empty
                    .insert(zstd::bulk::Decompressor::new().map_err(|e| NativeError::corrupt(format!("zstd: {e}")))?),
            };
            // Each of the n - 1 varints takes at most ten bytes: the output
            // buffer bounds what a hostile frame can expand to.
            scratch.varints.clear();
            scratch.varints.reserve((n - 1) * 10 + 1);
            zstd.decompress_to_buffer(src, &mut scratch.varints)
                .map_err(|e| NativeError::corrupt(format!("cannot decompress a sequence: {e}")))?;
            deltas(dst, &scratch.varints, encoding == Encoding::ZstdDelta2, first, n)?;
        }
    }
    Ok(())
}

/// First-order deltas (`second` false) or a first delta then second-order
/// deltas: `n - 1` varints in all, and nothing after them.
fn deltas(dst: &mut Vec<i64>, mut src: &[u8], second: bool, first: i64, n: usize) -> Result<(), NativeError> {
    let mut next = || -> Result<i64, NativeError> {
        let (d, rest) = get_varint(src).map_err(|e| NativeError::corrupt(format!("delta: {e}")))?;
        src = rest;
        Ok(d)
    };
    dst.reserve(n);
    dst.push(first);
    let mut v = first;
    let mut d1 = 0i64;
    for i in 1..n {
        let d = next()?;
        if second && i > 1 {
            d1 = d1.wrapping_add(d);
        } else {
            d1 = d;
        }
        v = v.wrapping_add(d1);
        dst.push(v);
    }
    if !src.is_empty() {
        return Err(NativeError::corrupt(format!(
            "{} bytes after {} deltas",
            src.len(),
            n - 1
        )));
    }
    Ok(())
}

/// Whether first-order deltas suit `a` better than second-order ones: it
/// goes negative, or falls other than in a few counter resets.
fn is_gauge(a: &[i64]) -> bool {
    if a.first().is_some_and(|&v| v < 0) {
        return true;
    }
    let mut resets = 0usize;
    for pair in a.windows(2) {
        let &[prev, v] = pair else { continue };
        if v < prev {
            if v < 0 || v > prev >> 3 {
                return true;
            }
            resets += 1;
        }
    }
    resets > 2 && resets > a.len() >> 3
}

/// More effort for longer sequences, as VictoriaMetrics spends it.
fn compression_level(n: usize) -> i32 {
    match n {
        0..=64 => 1,
        65..=256 => 2,
        257..=1024 => 3,
        1025..=4096 => 4,
        _ => 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(a: &[i64]) -> (Encoding, Vec<i64>) {
        let mut buf = Vec::new();
        let (encoding, first) = encode(&mut buf, a);
        let mut out = Vec::new();
        decode(&mut out, &buf, encoding, first, a.len(), &mut Scratch::default()).unwrap();
        (encoding, out)
    }

    #[test]
    fn each_encoding_where_it_fits() {
        assert_eq!(round_trip(&[7, 7, 7]).0, Encoding::Const);
        assert_eq!(round_trip(&[7]).0, Encoding::Const);
        assert_eq!(round_trip(&[1000, 16000, 31000]).0, Encoding::DeltaConst);
        assert_eq!(round_trip(&[0, 15_001, 29_999, 45_002]).0, Encoding::Delta2);
        assert_eq!(round_trip(&[5, -3, 8, 1]).0, Encoding::Delta);
        let long: Vec<i64> = (0..2000).map(|i| i * 15_000 + (i * 7919) % 13).collect();
        assert_eq!(round_trip(&long), (Encoding::ZstdDelta2, long.clone()));
        let noisy: Vec<i64> = (0..2000).map(|i| ((i * 7919) % 1000) - 500).collect();
        assert_eq!(round_trip(&noisy), (Encoding::ZstdDelta, noisy.clone()));
    }

    #[test]
    fn corrupt_sequences_are_errors() {
        let mut scratch = Scratch::default();
        let mut out = Vec::new();
        assert!(decode(&mut out, &[1], Encoding::Const, 0, 3, &mut scratch).is_err());
        assert!(decode(&mut out, &[], Encoding::DeltaConst, 0, 3, &mut scratch).is_err());
        assert!(decode(&mut out, &[2, 2], Encoding::Delta, 0, 2, &mut scratch).is_err());
        assert!(decode(&mut out, &[2], Encoding::Delta, 0, 3, &mut scratch).is_err());
        assert!(decode(&mut out, &[0x80], Encoding::Delta2, 0, 2, &mut scratch).is_err());
        assert!(decode(&mut out, b"not zstd", Encoding::ZstdDelta, 0, 3, &mut scratch).is_err());
        // A frame that decompresses to more than n - 1 varints can hold.
        let bomb = zstd::bulk::compress(&[0u8; 4096], 1).unwrap();
        assert!(decode(&mut out, &bomb, Encoding::ZstdDelta, 0, 3, &mut scratch).is_err());
        assert!(Encoding::from_byte(0).is_err());
        assert!(Encoding::from_byte(7).is_err());
    }

    proptest! {
        #[test]
        fn any_sequence_round_trips(a in proptest::collection::vec(any::<i64>(), 1..300)) {
            prop_assert_eq!(round_trip(&a).1, a);
        }

        #[test]
        fn decode_never_panics(
            src in proptest::collection::vec(any::<u8>(), 0..64),
            encoding in 1u8..=6,
            first in any::<i64>(),
            n in 1usize..100,
        ) {
            let encoding = Encoding::from_byte(encoding).unwrap();
            let _ = decode(&mut Vec::new(), &src, encoding, first, n, &mut Scratch::default());
        }
    }
}
