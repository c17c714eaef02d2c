//! Prometheus' XOR chunk encoding (`tsdb/chunkenc/xor.go`), the chunks that
//! remote read's streamed responses carry. Layout: the sample count (u16
//! big-endian); the first timestamp as a zigzag varint and its value's 64
//! bits; the second timestamp's delta as a uvarint and its value XORed with
//! the first; then each timestamp's delta of deltas in a bucket of 1, 16,
//! 20, 24 or 68 bits and each value XORed with the one before, the XOR's
//! meaningful bits inside the previous window of leading and trailing zeros
//! when they fit, else with a new window (5 bits leading, 6 bits length).

use crate::bits::BitWriter;
use crate::varint::{put_uvarint, zigzag_encode};

/// Most samples one chunk can hold: its count is 16 bits.
pub const XOR_CHUNK_MAX_SAMPLES: usize = u16::MAX as usize;

/// Encodes the samples `(ts[i], vs[i])`, timestamps ascending, as one XOR
/// chunk. Takes the first [`XOR_CHUNK_MAX_SAMPLES`] of them at most (and no
/// more than the shorter slice holds): callers cut longer series into
/// several chunks.
pub fn encode_xor_chunk(ts: &[i64], vs: &[f64]) -> Vec<u8> {
    let n = ts.len().min(vs.len()).min(XOR_CHUNK_MAX_SAMPLES);
    let mut out = Vec::with_capacity(2 + n * 2 + 16);
    out.extend_from_slice(&(n as u16).to_be_bytes());
    let (Some(&t0), Some(&v0)) = (ts.first(), vs.first()) else {
        return out;
    };
    // The varints of the first two samples start on byte boundaries, so
    // they go straight into the output before the bit writer takes over.
    put_uvarint(&mut out, zigzag_encode(t0));
    let mut bits = BitWriter::new(&mut out);
    bits.write(v0.to_bits(), 64);
    let mut values = XorState {
        prev: v0.to_bits(),
        leading: u32::MAX,
        trailing: 0,
    };
    let (mut prev_t, mut prev_delta) = (t0, 0u64);
    for (i, (&t, &v)) in ts.iter().zip(vs).enumerate().take(n).skip(1) {
        let delta = t.wrapping_sub(prev_t) as u64;
        if i == 1 {
            let mut varint = Vec::with_capacity(10);
            put_uvarint(&mut varint, delta);
            for byte in varint {
                bits.write(u64::from(byte), 8);
            }
        } else {
            write_delta_of_delta(&mut bits, delta.wrapping_sub(prev_delta) as i64);
        }
        values.write(&mut bits, v.to_bits());
        (prev_t, prev_delta) = (t, delta);
    }
    bits.finish();
    out
}

/// Whether `x` lies in the range Prometheus gives an `nbits` bucket:
/// `-(2^(nbits-1) - 1) ..= 2^(nbits-1)`.
fn fits(x: i64, nbits: u32) -> bool {
    let half = 1i64 << (nbits - 1);
    -(half - 1) <= x && x <= half
}

fn write_delta_of_delta(bits: &mut BitWriter<'_>, dod: i64) {
    // (prefix, prefix length, payload bits), the payload being the low bits
    // of the two's complement.
    let (prefix, prefix_len, width) = match dod {
        0 => (0b0, 1, 0),
        d if fits(d, 14) => (0b10, 2, 14),
        d if fits(d, 17) => (0b110, 3, 17),
        d if fits(d, 20) => (0b1110, 4, 20),
        _ => (0b1111, 4, 64),
    };
    bits.write(prefix, prefix_len);
    if width > 0 {
        bits.write(dod as u64, width);
    }
}

/// The previous value and the window of its XOR's meaningful bits
/// (`leading == u32::MAX`: no window yet).
struct XorState {
    prev: u64,
    leading: u32,
    trailing: u32,
}

impl XorState {
    fn write(&mut self, bits: &mut BitWriter<'_>, value: u64) {
        let xor = value ^ self.prev;
        self.prev = value;
        if xor == 0 {
            bits.write(0, 1);
            return;
        }
        // Five bits hold the leading zeros, so at most 31 are counted.
        let leading = xor.leading_zeros().min(31);
        let trailing = xor.trailing_zeros();
        if self.leading != u32::MAX && leading >= self.leading && trailing >= self.trailing {
            bits.write(0b10, 2);
            bits.write(xor >> self.trailing, 64 - self.leading - self.trailing);
            return;
        }
        (self.leading, self.trailing) = (leading, trailing);
        let significant = 64 - leading - trailing;
        bits.write(0b11, 2);
        bits.write(u64::from(leading), 5);
        // 64 significant bits are written as 0: no XOR has none.
        bits.write(u64::from(significant % 64), 6);
        bits.write(xor >> trailing, significant);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bits::BitReader;
    use crate::varint::{get_uvarint, zigzag_decode};

    /// Decodes a chunk as Prometheus' `xorIterator` does.
    fn decode(chunk: &[u8]) -> Vec<(i64, u64)> {
        let n = u16::from_be_bytes([chunk[0], chunk[1]]) as usize;
        let mut out = Vec::with_capacity(n);
        if n == 0 {
            return out;
        }
        let (zz, rest) = get_uvarint(&chunk[2..]).unwrap();
        let mut t = zigzag_decode(zz);
        let mut r = BitReader::new(rest, 0);
        let mut v = r.read(64).unwrap();
        out.push((t, v));
        let (mut delta, mut leading, mut trailing) = (0u64, 0u32, 0u32);
        for i in 1..n {
            if i == 1 {
                let mut varint = Vec::new();
                loop {
                    let byte = r.read(8).unwrap() as u8;
                    varint.push(byte);
                    if byte < 0x80 {
                        break;
                    }
                }
                delta = get_uvarint(&varint).unwrap().0;
            } else {
                let ones = r.read_ones(4).unwrap();
                let width = [0, 14, 17, 20, 64][ones as usize];
                let mut dod = r.read(width).unwrap() as i64;
                if (1..64).contains(&width) && dod > 1 << (width - 1) {
                    dod -= 1 << width;
                }
                delta = delta.wrapping_add(dod as u64);
            }
            t = t.wrapping_add(delta as i64);
            if r.read_bit().unwrap() {
                if r.read_bit().unwrap() {
                    leading = r.read(5).unwrap() as u32;
                    let significant = match r.read(6).unwrap() as u32 {
                        0 => 64,
                        s => s,
                    };
                    trailing = 64 - leading - significant;
                }
                v ^= r.read(64 - leading - trailing).unwrap() << trailing;
            }
            out.push((t, v));
        }
        out
    }

    fn round_trip(ts: &[i64], vs: &[f64]) {
        let want: Vec<(i64, u64)> = ts.iter().zip(vs).map(|(&t, v)| (t, v.to_bits())).collect();
        assert_eq!(decode(&encode_xor_chunk(ts, vs)), want);
    }

    /// The bytes Prometheus' appender writes for these samples (from
    /// `chunkenc.NewXORChunk` and `Append`, taken by hand from the format):
    /// count 3; t=1000 zigzag varint d0 0f; 1.0; delta 15000 as uvarint;
    /// the same value (one 0 bit); dod 0 (0), the same value (0).
    #[test]
    fn constant_series_at_a_regular_interval_takes_a_few_bits_per_sample() {
        let chunk = encode_xor_chunk(&[1000, 16_000, 31_000], &[1.0; 3]);
        let mut want = vec![0, 3, 0xd0, 0x0f];
        want.extend_from_slice(&1f64.to_bits().to_be_bytes());
        want.extend_from_slice(&[0x98, 0x75, 0b0000_0000]);
        assert_eq!(chunk, want);
        round_trip(&[1000, 16_000, 31_000], &[1.0; 3]);
    }

    #[test]
    fn every_delta_of_delta_bucket_and_its_edges_round_trip() {
        let mut ts = vec![0i64, 15_000];
        let mut t = 15_000i64;
        let mut delta = 15_000i64;
        for dod in [
            0,
            1,
            -1,
            8191,
            -8191,
            8192,
            -8192,
            8193,
            65_535,
            -65_535,
            65_536,
            -65_536,
            65_537,
            524_287,
            -524_287,
            524_288,
            -524_288,
            524_289,
            1 << 40,
            -(1 << 40),
        ] {
            delta += dod;
            t += delta;
            ts.push(t);
        }
        let vs: Vec<f64> = (0..ts.len()).map(|i| i as f64 * 0.25).collect();
        round_trip(&ts, &vs);
    }

    #[test]
    fn special_values_keep_their_bits() {
        let stale = f64::from_bits(0x7ff0_0000_0000_0002);
        let vs = [
            0.0,
            -0.0,
            f64::NAN,
            stale,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            1e308,
            3.5,
        ];
        let ts: Vec<i64> = (0..vs.len() as i64).map(|i| -5000 + i * 7).collect();
        round_trip(&ts, &vs);
    }

    #[test]
    fn empty_and_single_sample_chunks() {
        assert_eq!(encode_xor_chunk(&[], &[]), vec![0, 0]);
        round_trip(&[-1], &[42.0]);
        round_trip(&[i64::MIN, i64::MAX], &[1.0, 2.0]);
    }

    #[test]
    fn at_most_a_chunks_worth_of_samples_is_taken() {
        let ts: Vec<i64> = (0..XOR_CHUNK_MAX_SAMPLES as i64 + 5).collect();
        let vs = vec![1.0; ts.len()];
        let chunk = encode_xor_chunk(&ts, &vs);
        assert_eq!(decode(&chunk).len(), XOR_CHUNK_MAX_SAMPLES);
    }

    proptest::proptest! {
        #[test]
        fn any_ascending_series_round_trips(
            start in proptest::num::i64::ANY,
            steps in proptest::collection::vec(1i64..1 << 42, 0..300),
            values in proptest::collection::vec(proptest::num::u64::ANY, 300),
            repeat in proptest::bool::ANY,
        ) {
            let mut ts = vec![start];
            for s in &steps {
                let next = ts.last().unwrap().wrapping_add(*s);
                ts.push(next);
            }
            let vs: Vec<f64> = ts
                .iter()
                .zip(&values)
                .map(|(_, &b)| if repeat { f64::from_bits(b & 0xffff_0000_0000_0000) } else { f64::from_bits(b) })
                .collect();
            let want: Vec<(i64, u64)> = ts.iter().zip(&vs).map(|(&t, v)| (t, v.to_bits())).collect();
            proptest::prop_assert_eq!(decode(&encode_xor_chunk(&ts, &vs)), want);
        }
    }
}
