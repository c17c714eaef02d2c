//! LEB128 varints, as in Go's `encoding/binary` and protobuf: unsigned ones, and signed
//! ones zigzag-mapped first so small magnitudes of either sign stay short.

use crate::Error;

/// The longest encoding of a `u64`.
pub const MAX_UVARINT_LEN: usize = 10;

/// Bytes [`put_uvarint`] writes for `v`.
pub fn uvarint_len(v: u64) -> usize {
    (64 - v.leading_zeros() as usize).div_ceil(7).max(1)
}

/// Appends `v` as an unsigned LEB128 varint (1 to 10 bytes).
pub fn put_uvarint(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Reads an unsigned varint; returns it and the rest of `src`.
///
/// Inlined into callers in other crates: block and index decoders call it
/// per field.
#[inline]
pub fn get_uvarint(src: &[u8]) -> Result<(u64, &[u8]), Error> {
    // Most varints in blocks (residuals, small counts) are one byte.
    if let Some((&byte, rest)) = src.split_first()
        && byte < 0x80
    {
        return Ok((u64::from(byte), rest));
    }
    let mut v = 0u64;
    for (i, &byte) in src.iter().enumerate().take(MAX_UVARINT_LEN) {
        // The tenth byte holds bit 63 only.
        if i == MAX_UVARINT_LEN - 1 && byte > 1 {
            return Err(Error::Corrupt {
                what: "uvarint overflowing u64",
                offset: i,
            });
        }
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Ok((v, src.get(i + 1..).unwrap_or_default()));
        }
    }
    Err(Error::Truncated {
        what: "uvarint",
        offset: src.len(),
    })
}

/// Appends `v` zigzag-mapped as an unsigned varint.
pub fn put_varint(dst: &mut Vec<u8>, v: i64) {
    put_uvarint(dst, zigzag_encode(v));
}

/// Reads a zigzag varint; returns it and the rest of `src`.
pub fn get_varint(src: &[u8]) -> Result<(i64, &[u8]), Error> {
    let (u, rest) = get_uvarint(src)?;
    Ok((zigzag_decode(u), rest))
}

/// Maps 0, -1, 1, -2, … to 0, 1, 2, 3, … so small magnitudes get small codes.
#[inline]
pub fn zigzag_encode(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag_encode`].
#[inline]
pub fn zigzag_decode(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check(v: u64, encoded: &[u8]) {
        let mut buf = Vec::new();
        put_uvarint(&mut buf, v);
        assert_eq!(buf, encoded, "encoding {v}");
        assert_eq!(get_uvarint(encoded), Ok((v, &[][..])), "decoding {v}");
    }

    #[test]
    fn uvarints_match_leb128() {
        check(0, &[0x00]);
        check(1, &[0x01]);
        check(127, &[0x7f]);
        check(128, &[0x80, 0x01]);
        check(300, &[0xac, 0x02]);
        check(u64::MAX, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    }

    #[test]
    fn zigzag_interleaves_signs() {
        let mapped: Vec<u64> = [0, -1, 1, -2, 2].into_iter().map(zigzag_encode).collect();
        assert_eq!(mapped, [0, 1, 2, 3, 4]);
        assert_eq!(zigzag_encode(i64::MIN), u64::MAX);
        assert_eq!(zigzag_decode(u64::MAX), i64::MIN);
    }

    #[test]
    fn uvarint_rejects_truncation_and_overflow() {
        assert_eq!(
            get_uvarint(&[]),
            Err(Error::Truncated {
                what: "uvarint",
                offset: 0
            })
        );
        assert_eq!(
            get_uvarint(&[0x80, 0x80]),
            Err(Error::Truncated {
                what: "uvarint",
                offset: 2
            })
        );
        let too_big = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert_eq!(
            get_uvarint(&too_big),
            Err(Error::Corrupt {
                what: "uvarint overflowing u64",
                offset: 9
            })
        );
    }

    proptest! {
        #[test]
        fn varints_round_trip_and_leave_the_rest(v in any::<i64>(), tail in proptest::collection::vec(any::<u8>(), 0..12)) {
            let mut buf = Vec::new();
            put_varint(&mut buf, v);
            prop_assert!(buf.len() <= MAX_UVARINT_LEN);
            buf.extend_from_slice(&tail);
            prop_assert_eq!(get_varint(&buf), Ok((v, &tail[..])));
        }

        /// Streams of every length of varint read back in order.
        #[test]
        fn varint_streams_read_back(vs in proptest::collection::vec(
            prop_oneof![any::<u64>(), 0u64..300, 0u64..(1 << 56), (1u64 << 55)..(1 << 57)],
            0..50,
        )) {
            let mut buf = Vec::new();
            for &v in &vs {
                put_uvarint(&mut buf, v);
            }
            let mut rest = &buf[..];
            for &v in &vs {
                let (got, r) = get_uvarint(rest).unwrap();
                prop_assert_eq!(got, v);
                rest = r;
            }
            prop_assert!(rest.is_empty());
        }
    }
}
