//! MSB-first bit streams, padded with zero bits to a whole byte at the end.

use crate::Error;

pub(crate) struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    /// Pending bits, right-aligned; flushed to `out` whenever 64 accumulate.
    acc: u64,
    pending: u32,
}

impl<'a> BitWriter<'a> {
    pub(crate) fn new(out: &'a mut Vec<u8>) -> Self {
        Self {
            out,
            acc: 0,
            pending: 0,
        }
    }

    /// Appends the low `nbits` (at most 64) bits of `value`, most significant first.
    pub(crate) fn write(&mut self, value: u64, nbits: u32) {
        let mut left = nbits;
        while left > 0 {
            let take = left.min(64 - self.pending);
            let chunk = (value >> (left - take)) & low_mask(take);
            self.acc = if take == 64 { chunk } else { (self.acc << take) | chunk };
            self.pending += take;
            left -= take;
            if self.pending == 64 {
                self.out.extend_from_slice(&self.acc.to_be_bytes());
                self.acc = 0;
                self.pending = 0;
            }
        }
    }

    pub(crate) fn write_bit(&mut self, bit: bool) {
        self.write(u64::from(bit), 1);
    }

    /// Appends `z` as a Rice code with parameter `k` (see
    /// [`BitReader::read_rice_into`]): `z >> k` one bits and a zero bit, then
    /// the low `k` bits of `z`; or, when `z >> k` reaches `escape`, that
    /// many one bits and `z` in 64 bits.
    pub(crate) fn write_rice(&mut self, z: u64, k: u32, escape: u32) {
        let q = z >> k;
        if q < u64::from(escape) {
            self.write(u64::MAX, q as u32);
            self.write_bit(false);
            self.write(z, k);
        } else {
            self.write(u64::MAX, escape);
            self.write(z, 64);
        }
    }

    /// Flushes the pending bits, zero-padded to a byte boundary.
    pub(crate) fn finish(self) {
        if self.pending == 0 {
            return;
        }
        let bytes = self.pending.div_ceil(8);
        let aligned = self.acc << (64 - self.pending);
        let be = aligned.to_be_bytes();
        self.out.extend_from_slice(be.get(..bytes as usize).unwrap_or_default());
    }
}

/// The value of the Rice code at the top of `word`, whose unary part is
/// `q` (< 63) one bits: `q` above the `k` bits after the zero. Two shifts,
/// so `k == 0` never shifts by 64.
#[inline(always)]
fn rice_value(word: u64, q: u32, k: u32) -> u64 {
    (u64::from(q) << k) | (((word << (q + 1)) >> 1) >> (63 - k))
}

fn low_mask(nbits: u32) -> u64 {
    if nbits >= 64 { u64::MAX } else { (1u64 << nbits) - 1 }
}

pub(crate) struct BitReader<'a> {
    src: &'a [u8],
    bit_pos: usize,
    /// Offset of `src` in the block, for error messages.
    base: usize,
}

impl<'a> BitReader<'a> {
    pub(crate) fn new(src: &'a [u8], base: usize) -> Self {
        Self { src, bit_pos: 0, base }
    }

    /// Reads `nbits` (at most 64) bits as the low bits of the result.
    #[inline]
    pub(crate) fn read(&mut self, nbits: u32) -> Result<u64, Error> {
        // Fast path: the 8 bytes from the current byte hold at least 57 bits.
        if (1..=56).contains(&nbits)
            && let Some(word) = self.word()
        {
            self.bit_pos += nbits as usize;
            return Ok(word >> (64 - nbits));
        }
        self.read_slow(nbits)
    }

    /// The next 57 to 64 bits, left-aligned (low bits zero), when the input
    /// holds 8 bytes from the current byte on.
    #[inline(always)]
    fn word(&self) -> Option<u64> {
        let at = self.bit_pos / 8;
        let bytes = self.src.get(at..)?.first_chunk::<8>()?;
        Some(u64::from_be_bytes(*bytes) << (self.bit_pos % 8))
    }

    /// The next bits, left-aligned and zero-filled past the end of the
    /// input, and how many of them are input (1 to 64); `None` at the end.
    /// Unlike [`Self::word`] this also serves the last 7 bytes, so a bit
    /// stream's tail stays on a decoder's fast path.
    #[inline(always)]
    fn word_or_tail(&self) -> Option<(u64, u32)> {
        let at = self.bit_pos / 8;
        let shift = (self.bit_pos % 8) as u32;
        if let Some(bytes) = self.src.get(at..).and_then(|s| s.first_chunk::<8>()) {
            return Some((u64::from_be_bytes(*bytes) << shift, 64 - shift));
        }
        let tail = self.src.get(at..).filter(|t| !t.is_empty())?;
        let mut bytes = [0u8; 8];
        bytes.get_mut(..tail.len())?.copy_from_slice(tail);
        Some((u64::from_be_bytes(bytes) << shift, 8 * tail.len() as u32 - shift))
    }

    fn read_slow(&mut self, nbits: u32) -> Result<u64, Error> {
        let mut v = 0u64;
        let mut left = nbits;
        while left > 0 {
            let byte_index = self.bit_pos / 8;
            let byte = *self.src.get(byte_index).ok_or(Error::Truncated {
                what: "bit stream",
                offset: self.base + byte_index,
            })?;
            let available = 8 - (self.bit_pos % 8) as u32;
            let take = available.min(left);
            let bits = (u64::from(byte) >> (available - take)) & low_mask(take);
            // `take` is at most 8, so this never shifts by 64.
            v = (v << take) | bits;
            self.bit_pos += take as usize;
            left -= take;
        }
        Ok(v)
    }

    #[inline]
    pub(crate) fn read_bit(&mut self) -> Result<bool, Error> {
        Ok(self.read(1)? == 1)
    }

    /// Reads one bits up to a zero bit or until `max` (at most 56) were read,
    /// and returns how many ones: the zero, if read, is consumed too.
    #[inline]
    pub(crate) fn read_ones(&mut self, max: u32) -> Result<u32, Error> {
        if let Some(word) = self.word() {
            let ones = word.leading_ones().min(max);
            self.bit_pos += (ones + u32::from(ones < max)) as usize;
            return Ok(ones);
        }
        let mut ones = 0;
        while ones < max && self.read_slow(1)? == 1 {
            ones += 1;
        }
        Ok(ones)
    }

    /// A unary prefix as [`Self::read_ones`] reads it, then the
    /// `width_of(ones)` bits it announces. Both come from one 8-byte load
    /// when they fit in it, which is what nearly every residual does: the
    /// decoder's hottest loop then has one load and no dependent second
    /// read per value.
    #[inline]
    pub(crate) fn read_prefixed(&mut self, max: u32, width_of: impl Fn(u32) -> u32) -> Result<u64, Error> {
        if let Some(word) = self.word() {
            let ones = word.leading_ones().min(max);
            let prefix = ones + u32::from(ones < max);
            let width = width_of(ones);
            if prefix + width <= 57 {
                self.bit_pos += (prefix + width) as usize;
                // Two shifts, so a zero width never shifts by 64.
                return Ok(((word << prefix) >> 1) >> (63 - width));
            }
        }
        let ones = self.read_ones(max)?;
        self.read(width_of(ones))
    }

    /// Reads `n` fields as [`Self::read_prefixed`] with `widths[ones]`, and
    /// passes each to `emit`. Fields are taken from a register refilled
    /// with 8 bytes at a time, so decoding one depends only on the register
    /// and the one before, not on a memory load: this is the residual
    /// decoder's hot loop. A field too wide for one refill (the residual
    /// coding's 64-bit bucket) is read on its own.
    #[inline]
    pub(crate) fn read_prefixed_n(
        &mut self,
        n: usize,
        widths: &[u32],
        max: u32,
        mut emit: impl FnMut(u64),
    ) -> Result<(), Error> {
        let width_of = |ones: u32| widths.get(ones as usize).copied().unwrap_or(64);
        // The widths of the prefixed buckets, one per byte: a shift, not a
        // load, finds one.
        let packed = (0..max.min(8)).fold(0u64, |p, ones| p | (u64::from(width_of(ones).min(255)) << (8 * ones)));
        let mut left = n;
        while left > 0 {
            let Some(mut buf) = self.word() else {
                // The last few bytes, one field at a time.
                emit(self.read_prefixed(max, width_of)?);
                left -= 1;
                continue;
            };
            let mut avail = 64 - (self.bit_pos % 8) as u32;
            let before = left;
            while left > 0 {
                let ones = buf.leading_ones();
                if ones >= max {
                    break;
                }
                let width = ((packed >> (8 * ones)) & 0xff) as u32;
                let used = ones + 1 + width;
                if used > avail {
                    break;
                }
                // `width` < 64 here; two shifts so a zero width never shifts by 64.
                emit(((buf << (ones + 1)) >> 1) >> (63 - width));
                buf = buf.checked_shl(used).unwrap_or(0);
                avail -= used;
                self.bit_pos += used as usize;
                left -= 1;
            }
            if left == before {
                // A field wider than a refill holds: the last bucket.
                emit(self.read_prefixed(max, width_of)?);
                left -= 1;
            }
        }
        Ok(())
    }

    /// Fills `dst` with Rice codes written by [`BitWriter::write_rice`] with
    /// `k` (at most 56) and `escape` (at most 56), each passed through
    /// `map`. Like [`Self::read_prefixed_n`], codes are taken from a register
    /// refilled 8 bytes at a time, and the loop keeps its position in locals:
    /// each code's length depends on the one before, so this chain of
    /// dependent shifts is the decoder's speed. An escaped value, or a code
    /// running to the end of the register, is read on its own.
    #[inline(always)]
    pub(crate) fn read_rice_into<T>(
        &mut self,
        dst: &mut [T],
        k: u32,
        escape: u32,
        map: &impl Fn(u64) -> T,
    ) -> Result<(), Error> {
        let mut i = 0;
        while i < dst.len() {
            let before = i;
            if let Some((mut buf, mut avail)) = self.word_or_tail() {
                let mut taken = 0;
                while let Some(slot) = dst.get_mut(i) {
                    let q = buf.leading_ones();
                    let used = q + 1 + k;
                    // `used < avail` keeps every shift below 64.
                    if q >= escape || used >= avail {
                        break;
                    }
                    *slot = map(rice_value(buf, q, k));
                    buf <<= used;
                    avail -= used;
                    taken += used as usize;
                    i += 1;
                }
                self.bit_pos += taken;
            }
            if i == before {
                let v = map(self.read_rice(k, escape)?);
                if let Some(slot) = dst.get_mut(i) {
                    *slot = v;
                }
                i += 1;
            }
        }
        Ok(())
    }

    /// Fills `da` from stream `a` and `db` from stream `b` as
    /// [`Self::read_rice_into`] does, one code of each per step: the two
    /// chains of dependent shifts are independent, so the CPU runs them
    /// side by side.
    #[inline(always)]
    pub(crate) fn read_rice_pair<T>(
        a: &mut Self,
        da: &mut [T],
        b: &mut BitReader<'_>,
        db: &mut [T],
        k: u32,
        escape: u32,
        map: &impl Fn(u64) -> T,
    ) -> Result<(), Error> {
        // `i` indexes both: the streams advance together, and `da` is as
        // long as `db` or one longer (its last code is read after the loop).
        let mut i = 0;
        while i < da.len().min(db.len()) {
            let (Some((mut wa, mut avail_a)), Some((mut wb, mut avail_b))) = (a.word_or_tail(), b.word_or_tail())
            else {
                break;
            };
            let (start_a, start_b) = (avail_a, avail_b);
            let before = i;
            while let (Some(slot_a), Some(slot_b)) = (da.get_mut(i), db.get_mut(i)) {
                let (qa, qb) = (wa.leading_ones(), wb.leading_ones());
                let (used_a, used_b) = (qa + 1 + k, qb + 1 + k);
                // `used < avail` keeps every shift below 64.
                if qa >= escape || qb >= escape || used_a >= avail_a || used_b >= avail_b {
                    break;
                }
                *slot_a = map(rice_value(wa, qa, k));
                *slot_b = map(rice_value(wb, qb, k));
                wa <<= used_a;
                wb <<= used_b;
                avail_a -= used_a;
                avail_b -= used_b;
                i += 1;
            }
            a.bit_pos += (start_a - avail_a) as usize;
            b.bit_pos += (start_b - avail_b) as usize;
            if i == before {
                // An escape, or a code wider than what was left of a register.
                let (va, vb) = (map(a.read_rice(k, escape)?), map(b.read_rice(k, escape)?));
                if let (Some(slot_a), Some(slot_b)) = (da.get_mut(i), db.get_mut(i)) {
                    (*slot_a, *slot_b) = (va, vb);
                }
                i += 1;
            }
        }
        a.read_rice_into(da.get_mut(i..).unwrap_or_default(), k, escape, map)?;
        b.read_rice_into(db.get_mut(i..).unwrap_or_default(), k, escape, map)
    }

    /// One Rice code, as [`Self::read_rice_into`] reads them.
    fn read_rice(&mut self, k: u32, escape: u32) -> Result<u64, Error> {
        let q = self.read_ones(escape)?;
        if q >= escape {
            return self.read(64);
        }
        Ok((u64::from(q) << k) | self.read(k)?)
    }

    /// Bytes consumed so far, counting the padded last byte.
    /// Bits of input not read yet.
    pub(crate) fn bits_left(&self) -> usize {
        (self.src.len() * 8).saturating_sub(self.bit_pos)
    }

    pub(crate) fn bytes_consumed(&self) -> usize {
        self.bit_pos.div_ceil(8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(fields: &[(u64, u32)], expected: &[u8]) {
        let mut buf = Vec::new();
        let mut w = BitWriter::new(&mut buf);
        for &(v, n) in fields {
            w.write(v, n);
        }
        w.finish();
        assert_eq!(buf, expected);
        let mut r = BitReader::new(&buf, 0);
        for &(v, n) in fields {
            assert_eq!(r.read(n).unwrap(), v & low_mask(n));
        }
        assert_eq!(r.bytes_consumed(), expected.len());
    }

    #[test]
    fn bits_are_msb_first_and_zero_padded() {
        check(&[], &[]);
        check(&[(1, 1)], &[0x80]);
        check(&[(0b101, 3), (0xff, 4)], &[0b1011_1110]);
        check(
            &[(1, 1), (u64::MAX, 64)],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80],
        );
        check(
            &[(0x0123_4567_89ab_cdef, 64), (0, 0), (0x3, 2)],
            &[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xc0],
        );
    }

    proptest::proptest! {
        /// Reads near the end of the input take the byte-wise path, the others
        /// the word-wise one: both must agree with what was written.
        #[test]
        fn every_mix_of_widths_and_unary_prefixes_reads_back(
            fields in proptest::collection::vec((proptest::num::u64::ANY, 0u32..=64, 0u32..=7), 0..60),
        ) {
            let mut buf = Vec::new();
            let mut w = BitWriter::new(&mut buf);
            for &(v, n, ones) in &fields {
                for _ in 0..ones.min(5) {
                    w.write_bit(true);
                }
                if ones < 5 {
                    w.write_bit(false);
                }
                w.write(v, n);
            }
            w.finish();
            let mut r = BitReader::new(&buf, 0);
            for &(v, n, ones) in &fields {
                proptest::prop_assert_eq!(r.read_ones(5).unwrap(), ones.min(5));
                proptest::prop_assert_eq!(r.read(n).unwrap(), v & low_mask(n));
            }
            proptest::prop_assert_eq!(r.bytes_consumed(), buf.len());
            proptest::prop_assert!(r.read_slow(8).is_err());
        }
    }

    proptest::proptest! {
        /// The one-load path and the two-read fallback (wide fields, the
        /// end of the input) agree with what was written.
        #[test]
        fn prefixed_fields_read_back(
            widths in proptest::array::uniform6(0u32..=64),
            fields in proptest::collection::vec((proptest::num::u64::ANY, 0u32..=7), 0..60),
        ) {
            let width_of = |ones: u32| widths[ones.min(5) as usize];
            let mut buf = Vec::new();
            let mut w = BitWriter::new(&mut buf);
            for &(v, ones) in &fields {
                for _ in 0..ones.min(5) {
                    w.write_bit(true);
                }
                if ones < 5 {
                    w.write_bit(false);
                }
                w.write(v, width_of(ones));
            }
            w.finish();
            let mut r = BitReader::new(&buf, 0);
            for &(v, ones) in &fields {
                proptest::prop_assert_eq!(r.read_prefixed(5, width_of).unwrap(), v & low_mask(width_of(ones)));
            }
            proptest::prop_assert_eq!(r.bytes_consumed(), buf.len());
            // The same fields as one run.
            let mut r = BitReader::new(&buf, 0);
            let mut got = Vec::new();
            r.read_prefixed_n(fields.len(), &widths, 5, |v| got.push(v)).unwrap();
            let want: Vec<u64> = fields.iter().map(|&(v, ones)| v & low_mask(width_of(ones))).collect();
            proptest::prop_assert_eq!(got, want);
            proptest::prop_assert_eq!(r.bytes_consumed(), buf.len());
        }
    }

    proptest::proptest! {
        /// Rice codes read back whole and one by one, escapes included.
        #[test]
        fn rice_codes_read_back(
            k in 0u32..=56,
            escape in 1u32..=56,
            values in proptest::collection::vec(
                proptest::prop_oneof![0u64..64, 0u64..100_000, proptest::num::u64::ANY],
                0..80,
            ),
        ) {
            let mut buf = Vec::new();
            let mut w = BitWriter::new(&mut buf);
            for &z in &values {
                w.write_rice(z, k, escape);
            }
            w.finish();
            let mut r = BitReader::new(&buf, 0);
            let mut got = vec![0; values.len()];
            r.read_rice_into(&mut got, k, escape, &|v| v).unwrap();
            proptest::prop_assert_eq!(&got, &values);
            proptest::prop_assert_eq!(r.bytes_consumed(), buf.len());
            let mut r = BitReader::new(&buf, 0);
            for &z in &values {
                proptest::prop_assert_eq!(r.read_rice(k, escape).unwrap(), z);
            }
            // Two streams read side by side: this one, and it reversed.
            let reversed: Vec<u64> = values.iter().rev().copied().collect();
            let mut buf2 = Vec::new();
            let mut w = BitWriter::new(&mut buf2);
            for &z in &reversed {
                w.write_rice(z, k, escape);
            }
            w.finish();
            let (mut ra, mut rb) = (BitReader::new(&buf, 0), BitReader::new(&buf2, 0));
            let extra = usize::from(!values.is_empty());
            let (mut ga, mut gb) = (vec![0; values.len()], vec![0; values.len() - extra]);
            BitReader::read_rice_pair(&mut ra, &mut ga, &mut rb, &mut gb, k, escape, &|v| v).unwrap();
            proptest::prop_assert_eq!(&ga, &values);
            proptest::prop_assert_eq!(&gb[..], &reversed[..gb.len()]);
        }
    }

    #[test]
    fn reading_past_the_end_is_an_error() {
        let mut r = BitReader::new(&[0xff], 10);
        assert_eq!(r.read(8), Ok(0xff));
        assert_eq!(
            r.read_bit(),
            Err(Error::Truncated {
                what: "bit stream",
                offset: 11
            })
        );
    }
}
