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
    pub(crate) fn read(&mut self, nbits: u32) -> Result<u64, Error> {
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

    pub(crate) fn read_bit(&mut self) -> Result<bool, Error> {
        Ok(self.read(1)? == 1)
    }

    /// Bytes consumed so far, counting the padded last byte.
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
