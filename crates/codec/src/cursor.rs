//! A read position over a block being decoded, so errors can say where they happened.

use crate::Error;
use crate::varint::{get_uvarint, get_varint};

pub(crate) struct Cursor<'a> {
    src: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(src: &'a [u8]) -> Self {
        Self { src, pos: 0 }
    }

    pub(crate) fn offset(&self) -> usize {
        self.pos
    }

    pub(crate) fn rest(&self) -> &'a [u8] {
        self.src.get(self.pos..).unwrap_or_default()
    }

    pub(crate) fn remaining(&self) -> usize {
        self.src.len().saturating_sub(self.pos)
    }

    /// Skips bytes consumed by a nested reader working on [`Cursor::rest`].
    pub(crate) fn advance(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.src.len());
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Error> {
        let bytes = self.rest().get(..n).ok_or(Error::Truncated {
            what,
            offset: self.src.len(),
        })?;
        self.pos += n;
        Ok(bytes)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, Error> {
        let byte = *self.rest().first().ok_or(Error::Truncated { what, offset: self.pos })?;
        self.pos += 1;
        Ok(byte)
    }

    pub(crate) fn u64_le(&mut self, what: &'static str) -> Result<u64, Error> {
        let offset = self.pos;
        let bytes: [u8; 8] = self
            .take(8, what)?
            .try_into()
            .map_err(|_| Error::Truncated { what, offset })?;
        Ok(u64::from_le_bytes(bytes))
    }

    pub(crate) fn uvarint(&mut self, what: &'static str) -> Result<u64, Error> {
        let (v, rest) = get_uvarint(self.rest()).map_err(|e| e.relocated(what, self.pos))?;
        self.pos = self.src.len() - rest.len();
        Ok(v)
    }

    pub(crate) fn varint(&mut self, what: &'static str) -> Result<i64, Error> {
        let (v, rest) = get_varint(self.rest()).map_err(|e| e.relocated(what, self.pos))?;
        self.pos = self.src.len() - rest.len();
        Ok(v)
    }

    /// Reads a length or count and rejects it above `max`, the most the remaining
    /// input could plausibly describe, before anyone allocates for it.
    pub(crate) fn count(&mut self, what: &'static str, max: usize) -> Result<usize, Error> {
        let offset = self.pos;
        let n = self.uvarint(what)?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= max)
            .ok_or(Error::Corrupt { what, offset })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_reports_offsets_into_the_block() {
        let mut cur = Cursor::new(&[7, 0x80, 0x80]);
        assert_eq!(cur.u8("tag"), Ok(7));
        assert_eq!(
            cur.uvarint("count"),
            Err(Error::Truncated {
                what: "count",
                offset: 3
            })
        );
        let mut cur = Cursor::new(&[5, 1]);
        assert_eq!(
            cur.count("count", 4),
            Err(Error::Corrupt {
                what: "count",
                offset: 0
            })
        );
        assert_eq!(cur.count("count", 1), Ok(1));
        assert_eq!(cur.remaining(), 0);
        assert_eq!(
            cur.u64_le("bits"),
            Err(Error::Truncated {
                what: "bits",
                offset: 2
            })
        );
    }
}
