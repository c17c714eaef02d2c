//! Byte codecs for time series blocks: millisecond timestamps and float values.
//!
//! Pure functions over byte slices: no I/O, no async, no logging. Every block is
//! self-describing (a tag byte, a varint sample count, then the payload), the encoder
//! picks the smallest of several encodings per block, and the decoders return an
//! [`Error`] rather than panic on any input, never allocating more than a small
//! multiple of the input they were given. Byte layouts are in the crate's README.md.
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing))]

mod bits;
mod cursor;
mod decimal;
mod gorilla;
mod histogram;
mod intseq;
mod prom_xor;
mod residuals;
pub mod simd;
mod timestamps;
mod values;
pub mod varint;

pub use histogram::{HistogramValue, decode_histograms, encode_histograms};
pub use prom_xor::{XOR_CHUNK_MAX_SAMPLES, encode_xor_chunk};
pub use timestamps::{decode_timestamps, encode_timestamps, encode_timestamps_fast};
pub use values::{decode_values, encode_values, encode_values_fast};

/// Everything that can go wrong decoding a block. Offsets count bytes from the start
/// of the slice handed to the decoder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("unexpected end of input reading {what} at offset {offset}")]
    Truncated { what: &'static str, offset: usize },
    #[error("corrupt {what} at offset {offset}")]
    Corrupt { what: &'static str, offset: usize },
    #[error("unknown {what} tag {tag:#04x}")]
    UnknownTag { what: &'static str, tag: u8 },
    #[error("checksum mismatch: got {got:#010x}, expected {expected:#010x}")]
    ChecksumMismatch { got: u32, expected: u32 },
}

impl Error {
    /// Re-labels an error from a nested reader and shifts its offset by `base`, so it
    /// points into the caller's input.
    pub(crate) fn relocated(self, what: &'static str, base: usize) -> Self {
        match self {
            Error::Truncated { offset, .. } => Error::Truncated {
                what,
                offset: base + offset,
            },
            Error::Corrupt { offset, .. } => Error::Corrupt {
                what,
                offset: base + offset,
            },
            other => other,
        }
    }
}

/// CRC-32C (Castagnoli), hardware-accelerated where the CPU supports it.
pub fn crc32c(data: &[u8]) -> u32 {
    ::crc32c::crc32c(data)
}

/// The CRC-32C of the bytes `crc` covers followed by `data`.
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    ::crc32c::crc32c_append(crc, data)
}

/// Checks `data` against a stored CRC-32C.
pub fn check_crc32c(data: &[u8], expected: u32) -> Result<(), Error> {
    let got = crc32c(data);
    if got == expected {
        Ok(())
    } else {
        Err(Error::ChecksumMismatch { got, expected })
    }
}

/// Longest block a constant encoding may describe. Constant blocks cost a few bytes
/// whatever their length, so this cap is what keeps a garbage count in a tiny block
/// from making the decoder allocate without bound; longer constant runs fall back to
/// encodings that spend at least a bit per sample.
pub(crate) const MAX_CONST_RUN: usize = 1 << 16;

/// A block's tag byte: what transform the samples went through (high nibble) and how
/// the resulting stream is coded (low nibble).
pub(crate) fn tag(transform: u8, coding: u8) -> u8 {
    (transform << 4) | coding
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_the_standard_check_value() {
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(check_crc32c(b"123456789", 0xe306_9283), Ok(()));
        assert_eq!(
            check_crc32c(b"123456789", 1),
            Err(Error::ChecksumMismatch {
                got: 0xe306_9283,
                expected: 1
            })
        );
    }

    #[test]
    fn error_messages_are_lowercase_and_carry_evidence() {
        let e = Error::Corrupt {
            what: "gorilla window",
            offset: 7,
        };
        assert_eq!(e.to_string(), "corrupt gorilla window at offset 7");
        let e = Error::UnknownTag {
            what: "value block",
            tag: 0xf0,
        };
        assert_eq!(e.to_string(), "unknown value block tag 0xf0");
    }
}
