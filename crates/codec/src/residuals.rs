//! Codings for a stream of residuals (small signed integers: the misses of an
//! [`crate::intseq`] model). The coding goes in the low nibble of the block's tag.

use crate::Error;
use crate::bits::{BitReader, BitWriter};
use crate::cursor::Cursor;
use crate::varint::{get_uvarint, put_uvarint, put_varint, zigzag_decode, zigzag_encode};

/// Residual streams shorter than this skip the zstd attempt: its frame overhead
/// (~12 bytes) rarely pays off, and compressing every small block costs encode time.
const ZSTD_MIN_RESIDUALS: usize = 256;
const ZSTD_LEVEL: i32 = 3;

thread_local! {
    /// One zstd context per thread: creating one costs more than compressing
    /// a typical block (it showed as 2% of ingestion CPU when made per call).
    static ZSTD: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
    /// Likewise for decoding (a context per call was 16% of query CPU),
    /// with the buffer the varints are decompressed into.
    static UNZSTD: std::cell::RefCell<Option<(zstd::bulk::Decompressor<'static>, Vec<u8>)>> =
        const { std::cell::RefCell::new(None) };
}
/// The decoder refuses zstd payloads claiming to expand past both of these, which
/// bounds what garbage can make it allocate; the encoder never writes such payloads.
const MAX_ZSTD_EXPANSION: usize = 256;
const ZSTD_RAW_LEN_ALWAYS_ALLOWED: usize = 1 << 20;

/// The bit coding has six buckets. Bucket `i` is written as `i` one bits, a zero bit
/// (left out for the last bucket), then the zigzagged residual in `bucket_widths(k)[i]`
/// bits: bucket 0 is a zero residual in one bit, bucket 1 fits the block's typical
/// residual in `k` bits, and wider buckets catch outliers.
const BUCKETS: usize = 6;
const MAX_K: u8 = 24;

fn bucket_widths(k: u8) -> [u32; BUCKETS] {
    let k = u32::from(k);
    [0, k, k + 3, k + 7, k + 14, 64]
}

/// The Rice coding: a residual's zigzag code `z` is `z >> k` one bits, a
/// zero bit and the low `k` bits of `z`; from `z >> k == RICE_ESCAPE` on, it
/// is `RICE_ESCAPE` one bits and `z` in 64 bits. Slowly moving counters and
/// gauges have residuals spread around zero like a geometric distribution,
/// for which this is close to the entropy: on node_exporter data it is
/// smaller than both the bucketed bit coding and zstd of the varints, and
/// decodes faster than zstd.
const RICE_ESCAPE: u32 = 32;
const RICE_MAX_K: u8 = 56;

/// How the residual stream is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coding {
    /// One zigzag varint per residual.
    Varint = 0,
    /// `k: u8`, then the bucketed bit code above: one bit for a zero residual.
    Bits = 1,
    /// `uvarint raw_len, uvarint frame_len, zstd frame` of the varint stream.
    ZstdVarint = 2,
    /// `k: u8, uvarint first_len`, then two bit streams of Rice codes with
    /// parameter `k` (escaped past [`RICE_ESCAPE`]): the first half of the
    /// zigzagged residuals in `first_len` bytes, then the rest.
    Rice = 3,
}

impl Coding {
    pub(crate) fn from_nibble(nibble: u8) -> Option<Self> {
        match nibble {
            0 => Some(Coding::Varint),
            1 => Some(Coding::Bits),
            2 => Some(Coding::ZstdVarint),
            3 => Some(Coding::Rice),
            _ => None,
        }
    }
}

/// Appends `residuals` in the smallest of the codings tried and returns which.
///
/// The sizes of the varint and bit codings are computed, not written, so only
/// the winner is materialised: blocks are often a handful of samples, where
/// trial encodings into scratch buffers would cost more than the encoding itself.
pub(crate) fn encode(dst: &mut Vec<u8>, residuals: &[i64]) -> Coding {
    let lengths = LengthHistogram::of(residuals);
    let varint_len: usize = lengths
        .iter()
        .map(|(len, n)| n * (len as usize).div_ceil(7).max(1))
        .sum();
    let (k, bit_count) = best_k(&lengths);
    let bucketed_len = 1 + bit_count.div_ceil(8);
    let (rice_k, rice_len) = best_rice_k(residuals, &lengths);
    // The shorter of the two bit codings stands for both below; a tie goes
    // to the older one.
    let use_rice = rice_len < bucketed_len;
    let bits_len = bucketed_len.min(rice_len);

    if residuals.len() >= ZSTD_MIN_RESIDUALS {
        let mut varints = Vec::with_capacity(varint_len);
        for &r in residuals {
            put_varint(&mut varints, r);
        }
        if let Some(z) = zstd_body(&varints).filter(|z| z.len() < varint_len.min(bits_len)) {
            dst.extend_from_slice(&z);
            return Coding::ZstdVarint;
        }
        if bits_len >= varint_len {
            dst.extend_from_slice(&varints);
            return Coding::Varint;
        }
    }
    let start = dst.len();
    if bits_len < varint_len && use_rice {
        write_rice(dst, residuals, rice_k);
        debug_assert_eq!(dst.len() - start, rice_len, "predicted Rice coding length");
        Coding::Rice
    } else if bits_len < varint_len {
        write_bits(dst, residuals, k);
        debug_assert_eq!(dst.len() - start, bucketed_len, "predicted bit coding length");
        Coding::Bits
    } else {
        for &r in residuals {
            put_varint(dst, r);
        }
        debug_assert_eq!(dst.len() - start, varint_len, "predicted varint coding length");
        Coding::Varint
    }
}

/// How many residuals have a zigzag code of each significant-bit length:
/// all that the sizes of both codings depend on. Blocks are often a few
/// samples, so the lengths present are walked through a bit mask rather than
/// by scanning all 65.
struct LengthHistogram {
    counts: [u32; 65],
    present: u128,
}

impl LengthHistogram {
    fn of(residuals: &[i64]) -> Self {
        let mut h = Self {
            counts: [0; 65],
            present: 0,
        };
        for &r in residuals {
            let len = 64 - zigzag_encode(r).leading_zeros();
            if let Some(n) = h.counts.get_mut(len as usize) {
                *n += 1;
            }
            h.present |= 1 << len;
        }
        h
    }

    /// `(length, count)` for each length present, shortest first.
    fn iter(&self) -> impl Iterator<Item = (u32, usize)> + '_ {
        let mut rest = self.present;
        std::iter::from_fn(move || {
            if rest == 0 {
                return None;
            }
            let len = rest.trailing_zeros();
            rest &= rest - 1;
            Some((len, self.counts.get(len as usize).copied().unwrap_or(0) as usize))
        })
    }
}

/// The `k` that makes the bit coding shortest, and that coding's length in bits
/// (without the `k` byte).
fn best_k(lengths: &LengthHistogram) -> (u8, usize) {
    let cost = |k: u8| -> usize {
        let widths = bucket_widths(k);
        lengths
            .iter()
            .map(|(len, n)| {
                let bucket = bucket_for(&widths, len);
                let width = widths.get(bucket).copied().unwrap_or(64);
                let prefix = if bucket + 1 == BUCKETS { bucket } else { bucket + 1 };
                n * (prefix + width as usize)
            })
            .sum()
    };
    (1..=MAX_K)
        .map(|k| (k, cost(k)))
        .min_by_key(|&(_, c)| c)
        .unwrap_or((MAX_K, cost(MAX_K)))
}

/// The Rice parameter that makes the coding shortest, and its length in
/// bytes. The best `k` is near the bit length of the typical zigzag code
/// (the median's: outliers are escaped, so they must not pull it up), so
/// only a few around that are costed.
fn best_rice_k(residuals: &[i64], lengths: &LengthHistogram) -> (u8, usize) {
    let half = residuals.len().div_ceil(2);
    let mut seen = 0;
    let centre = lengths
        .iter()
        .find(|&(_, n)| {
            seen += n;
            seen >= half
        })
        .map_or(0, |(len, _)| len as u8);
    (centre.saturating_sub(3)..=centre.saturating_add(1).min(RICE_MAX_K))
        .map(|k| (k, rice_len(residuals, k)))
        .min_by_key(|&(_, len)| len)
        .unwrap_or((0, rice_len(residuals, 0)))
}

/// Bits of the Rice codes of `residuals` with parameter `k`.
fn rice_bits(residuals: &[i64], k: u8) -> usize {
    let k = u32::from(k);
    residuals
        .iter()
        .map(|&r| {
            let q = zigzag_encode(r) >> k;
            if q < u64::from(RICE_ESCAPE) {
                q as usize + 1 + k as usize
            } else {
                RICE_ESCAPE as usize + 64
            }
        })
        .sum()
}

/// The residuals of the Rice coding's first stream, and of its second.
fn rice_halves(residuals: &[i64]) -> (&[i64], &[i64]) {
    residuals.split_at(residuals.len().div_ceil(2))
}

/// Bytes of the Rice coding of `residuals` with parameter `k`.
fn rice_len(residuals: &[i64], k: u8) -> usize {
    let (first, second) = rice_halves(residuals);
    let first_len = rice_bits(first, k).div_ceil(8);
    1 + crate::varint::uvarint_len(first_len as u64) + first_len + rice_bits(second, k).div_ceil(8)
}

/// Writes the Rice coding: two independent bit streams, so the decoder
/// can follow two chains of dependent shifts at once (each code's position
/// depends on the length of the one before).
fn write_rice(dst: &mut Vec<u8>, residuals: &[i64], k: u8) {
    let (first, second) = rice_halves(residuals);
    dst.push(k);
    put_uvarint(dst, rice_bits(first, k).div_ceil(8) as u64);
    for half in [first, second] {
        let mut w = BitWriter::new(dst);
        for &r in half {
            w.write_rice(zigzag_encode(r), u32::from(k), RICE_ESCAPE);
        }
        w.finish();
    }
}

/// Writes `k` and the bit stream.
fn write_bits(dst: &mut Vec<u8>, residuals: &[i64], k: u8) {
    let widths = bucket_widths(k);
    dst.push(k);
    let mut w = BitWriter::new(dst);
    for &r in residuals {
        let z = zigzag_encode(r);
        let bucket = bucket_for(&widths, 64 - z.leading_zeros());
        w.write(u64::MAX, bucket as u32);
        if bucket + 1 < BUCKETS {
            w.write_bit(false);
        }
        w.write(z, widths.get(bucket).copied().unwrap_or(64));
    }
    w.finish();
}

/// The narrowest bucket holding a zigzag code of `len` significant bits.
fn bucket_for(widths: &[u32; BUCKETS], len: u32) -> usize {
    widths.iter().position(|&w| w >= len).unwrap_or(BUCKETS - 1)
}

/// The zstd coding's body, or `None` when zstd fails or would expand past what the
/// decoder accepts.
fn zstd_body(varints: &[u8]) -> Option<Vec<u8>> {
    let frame = ZSTD.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = zstd::bulk::Compressor::new(ZSTD_LEVEL).ok();
        }
        slot.as_mut()?.compress(varints).ok()
    })?;
    if !zstd_raw_len_allowed(varints.len(), frame.len()) {
        return None;
    }
    let mut body = Vec::with_capacity(frame.len() + 2 * crate::varint::MAX_UVARINT_LEN);
    put_uvarint(&mut body, varints.len() as u64);
    put_uvarint(&mut body, frame.len() as u64);
    body.extend_from_slice(&frame);
    Some(body)
}

fn zstd_raw_len_allowed(raw_len: usize, frame_len: usize) -> bool {
    raw_len <= ZSTD_RAW_LEN_ALWAYS_ALLOWED || raw_len <= frame_len.saturating_mul(MAX_ZSTD_EXPANSION)
}

pub(crate) fn decode(cur: &mut Cursor<'_>, n: usize, coding: Coding, out: &mut Vec<i64>) -> Result<(), Error> {
    match coding {
        Coding::Varint => {
            // Every varint takes at least a byte.
            if n > cur.remaining() {
                return Err(Error::Corrupt {
                    what: "residual count beyond input",
                    offset: cur.offset(),
                });
            }
            let used = decode_varints(cur.rest(), n, out).map_err(|e| e.relocated("residual", cur.offset()))?;
            cur.advance(used);
        }
        Coding::Bits => {
            let k_offset = cur.offset();
            let k = cur.u8("bit coding parameter")?;
            if !(1..=MAX_K).contains(&k) {
                return Err(Error::Corrupt {
                    what: "bit coding parameter",
                    offset: k_offset,
                });
            }
            let widths = bucket_widths(k);
            // Every residual takes at least a bit.
            if n > cur.remaining().saturating_mul(8) {
                return Err(Error::Corrupt {
                    what: "residual count beyond input",
                    offset: cur.offset(),
                });
            }
            out.reserve(n);
            let mut r = BitReader::new(cur.rest(), cur.offset());
            r.read_prefixed_n(n, &widths, BUCKETS as u32 - 1, |z| out.push(zigzag_decode(z)))?;
            cur.advance(r.bytes_consumed());
        }
        Coding::Rice => {
            let k_offset = cur.offset();
            let k = cur.u8("Rice parameter")?;
            if k > RICE_MAX_K {
                return Err(Error::Corrupt {
                    what: "Rice parameter",
                    offset: k_offset,
                });
            }
            let first_len = cur.count("Rice first stream length", cur.remaining())?;
            // Every residual takes at least a bit.
            if n > cur.remaining().saturating_mul(8) {
                return Err(Error::Corrupt {
                    what: "residual count beyond input",
                    offset: cur.offset(),
                });
            }
            let first_at = cur.offset();
            let first = cur.take(first_len, "Rice first stream")?;
            let mut first = BitReader::new(first, first_at);
            let mut second = BitReader::new(cur.rest(), cur.offset());
            decode_rice(&mut first, &mut second, n, u32::from(k), out)?;
            cur.advance(second.bytes_consumed());
        }
        Coding::ZstdVarint => {
            let raw_len = cur.count("zstd raw length", usize::MAX)?;
            let frame_offset = cur.offset();
            let frame_len = cur.count("zstd frame length", cur.remaining())?;
            let frame = cur.take(frame_len, "zstd frame")?;
            if !zstd_raw_len_allowed(raw_len, frame_len) || n > raw_len {
                return Err(Error::Corrupt {
                    what: "zstd raw length",
                    offset: frame_offset,
                });
            }
            let corrupt = |what| Error::Corrupt {
                what,
                offset: frame_offset,
            };
            UNZSTD.with(|cell| {
                let mut slot = cell.borrow_mut();
                if slot.is_none() {
                    let decompressor = zstd::bulk::Decompressor::new().map_err(|_| corrupt("zstd context"))?;
                    *slot = Some((decompressor, Vec::new()));
                }
                let Some((decompressor, raw)) = slot.as_mut() else {
                    return Err(corrupt("zstd context"));
                };
                raw.clear();
                raw.reserve(raw_len);
                decompressor
                    .decompress_to_buffer(frame, raw)
                    .map_err(|_| corrupt("zstd frame"))?;
                if raw.len() != raw_len {
                    return Err(corrupt("zstd raw length"));
                }
                let used =
                    decode_varints(raw, n, out).map_err(|e| e.relocated("zstd-compressed residual", frame_offset))?;
                if used != raw.len() {
                    return Err(corrupt("trailing bytes in zstd stream"));
                }
                // A rare huge block should not pin its buffer for the thread's life.
                if raw.capacity() > ZSTD_RAW_LEN_ALWAYS_ALLOWED {
                    *raw = Vec::new();
                }
                Ok(())
            })?;
        }
    }
    Ok(())
}

crate::v3_kernel! {
    /// Appends `n` Rice-coded residuals read from the coding's two streams
    /// to `out` (which is left as it was on error).
    fn decode_rice(
        first: &mut BitReader<'_>,
        second: &mut BitReader<'_>,
        n: usize,
        k: u32,
        out: &mut Vec<i64>,
    ) -> Result<(), Error> {
        let start = out.len();
        out.resize(start + n, 0);
        let dst = out.get_mut(start..).unwrap_or_default();
        let (a, b) = dst.split_at_mut(n.div_ceil(2));
        let filled = BitReader::read_rice_pair(first, a, second, b, k, RICE_ESCAPE, &zigzag_decode);
        if filled.is_err() {
            out.truncate(start);
        }
        filled
    }
}

/// Appends `n` zigzag varints read from `src` to `out`; returns the bytes
/// they took. One- and two-byte varints, nearly all residuals, are read
/// inline; only longer ones go through [`get_uvarint`] (a call and a
/// `Result` per value had been a third of decoding a varint stream).
fn decode_varints(src: &[u8], n: usize, out: &mut Vec<i64>) -> Result<usize, Error> {
    let start = out.len();
    out.resize(start + n, 0);
    let mut pos = 0;
    for slot in out.get_mut(start..).unwrap_or_default() {
        let u = match src.get(pos..pos + 2) {
            Some(&[b0, _]) if b0 < 0x80 => {
                pos += 1;
                u64::from(b0)
            }
            Some(&[b0, b1]) if b1 < 0x80 => {
                pos += 2;
                u64::from(b0 & 0x7f) | u64::from(b1) << 7
            }
            _ => {
                let rest = src.get(pos..).unwrap_or_default();
                let (u, after) = match get_uvarint(rest) {
                    Ok(read) => read,
                    Err(e) => {
                        out.truncate(start);
                        return Err(e.relocated("residual", pos));
                    }
                };
                pos = src.len() - after.len();
                u
            }
        };
        *slot = zigzag_decode(u);
    }
    Ok(pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round-trips `residuals` and returns the coding chosen and the encoded size.
    fn check(residuals: &[i64]) -> (Coding, usize) {
        let mut buf = Vec::new();
        let coding = encode(&mut buf, residuals);
        let size = buf.len();
        buf.push(0xee);
        let mut cur = Cursor::new(&buf);
        let mut out = Vec::new();
        decode(&mut cur, residuals.len(), coding, &mut out).unwrap();
        assert_eq!(out, residuals);
        assert_eq!(cur.rest(), [0xee]);
        (coding, size)
    }

    #[test]
    fn bit_coding_picks_k_for_the_typical_residual() {
        // Mostly zeros (one bit each) and zigzag codes of 14: k = 4, so 6 bits
        // per non-zero residual. Rice would spend 15 bits (k = 0) or more.
        let sparse: Vec<i64> = (0..80).map(|i| [0, 0, 0, 0, 7][i % 5]).collect();
        assert_eq!(check(&sparse), (Coding::Bits, 1 + (64 + 16 * 6) / 8));
        // One outlier goes to a wide bucket instead of widening the others.
        let mut outlier = sparse.clone();
        outlier[40] = 1 << 40;
        assert_eq!(
            check(&outlier),
            (Coding::Bits, 1 + (63usize + 16 * 6 + 5 + 64).div_ceil(8))
        );
    }

    #[test]
    fn rice_coding_suits_residuals_spread_around_zero() {
        // Zigzag codes 0, 6, 7, 14, 15: with k = 3 that is 4, 4, 4, 5, 5 bits.
        let jitter: Vec<i64> = (0..80).map(|i| [0, 3, -4, 7, -8][i % 5]).collect();
        let mut buf = Vec::new();
        assert_eq!(encode(&mut buf, &jitter), Coding::Rice);
        assert_eq!(buf[0], 3, "k");
        // `k`, the first stream's length, then two streams of 40 codes.
        assert_eq!(buf[1], 8 * 22 / 8, "first stream length");
        assert_eq!(check(&jitter), (Coding::Rice, 1 + 1 + 2 * (8 * 22 / 8)));
        // An outlier is escaped: 32 one bits and 64 bits of value.
        let mut outlier = jitter.clone();
        outlier[40] = 1 << 40;
        assert_eq!(
            check(&outlier),
            (
                Coding::Rice,
                1 + 1 + 8 * 22 / 8 + (8usize * 22 - 4 + 32 + 64).div_ceil(8)
            )
        );
        // A Rice parameter past the maximum is refused.
        let mut cur = Cursor::new(&[RICE_MAX_K + 1, 0]);
        assert!(decode(&mut cur, 1, Coding::Rice, &mut Vec::new()).is_err());
    }

    proptest::proptest! {
        /// Whatever coding wins (Rice for most of these, with escapes for
        /// the outliers), the residuals read back.
        #[test]
        fn residual_streams_round_trip(
            residuals in proptest::collection::vec(
                proptest::prop_oneof![
                    8 => -40i64..40,
                    2 => -5000i64..5000,
                    1 => proptest::num::i64::ANY,
                ],
                0..700,
            ),
        ) {
            check(&residuals);
        }
    }

    proptest::proptest! {
        #[test]
        fn varint_streams_read_back(
            residuals in proptest::collection::vec(
                proptest::prop_oneof![-64i64..64, -8192i64..8192, proptest::num::i64::ANY],
                0..100,
            ),
        ) {
            let mut buf = Vec::new();
            for &r in &residuals {
                put_varint(&mut buf, r);
            }
            buf.push(0x80);
            let mut out = vec![5];
            let used = decode_varints(&buf, residuals.len(), &mut out).unwrap();
            proptest::prop_assert_eq!(used, buf.len() - 1);
            proptest::prop_assert_eq!(&out[1..], &residuals[..]);
            // One more is truncated: an error, and `out` is as it was.
            proptest::prop_assert!(decode_varints(&buf, residuals.len() + 1, &mut out).is_err());
            proptest::prop_assert_eq!(out.len(), residuals.len() + 1);
        }
    }

    #[test]
    fn zstd_expansion_is_bounded() {
        let mut body = Vec::new();
        put_uvarint(&mut body, 1 << 40);
        put_uvarint(&mut body, 1);
        body.push(0);
        let mut cur = Cursor::new(&body);
        let err = decode(&mut cur, 5, Coding::ZstdVarint, &mut Vec::new()).unwrap_err();
        assert_eq!(
            err,
            Error::Corrupt {
                what: "zstd raw length",
                offset: 6
            }
        );
    }
}
