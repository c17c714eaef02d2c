//! Byte sizes in Prometheus' configuration syntax (`512MB`, `1GiB`).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A size in bytes. Units are powers of 1024 whether written `KB` or `KiB`,
/// as in Prometheus (which uses alecthomas/units' `Base2Bytes`); parts may be
/// fractional and chained (`1.5GB`, `1GB512MB`), and `0` needs no unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize(u64);

/// Why a size string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("invalid size {0:?}")]
    Invalid(String),
    #[error("unknown unit {unit:?} in size {text:?}")]
    UnknownUnit { unit: String, text: String },
    #[error("size out of range: {0:?}")]
    Overflow(String),
}

const KIB: u64 = 1024;

fn unit_bytes(unit: &str) -> Option<u64> {
    Some(match unit {
        "B" => 1,
        "KB" | "KiB" => KIB,
        "MB" | "MiB" => KIB.pow(2),
        "GB" | "GiB" => KIB.pow(3),
        "TB" | "TiB" => KIB.pow(4),
        "PB" | "PiB" => KIB.pow(5),
        "EB" | "EiB" => KIB.pow(6),
        _ => return None,
    })
}

impl ByteSize {
    pub const fn from_bytes(bytes: u64) -> Self {
        Self(bytes)
    }

    pub const fn as_bytes(self) -> u64 {
        self.0
    }

    pub fn is_zero(&self) -> bool {
        self.0 == 0
    }

    pub fn parse(text: &str) -> Result<Self, SizeError> {
        let invalid = || SizeError::Invalid(text.to_string());
        let rest = text.strip_prefix('+').unwrap_or(text);
        if rest == "0" {
            return Ok(Self(0));
        }
        if rest.is_empty() || rest.starts_with('-') {
            return Err(invalid());
        }
        let mut rest = rest;
        let mut total = 0f64;
        while !rest.is_empty() {
            let number_len = rest.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.').count();
            let (number, after) = rest.split_at(number_len);
            if number.is_empty() || number == "." || number.matches('.').count() > 1 {
                return Err(invalid());
            }
            let value: f64 = number.parse().map_err(|_| invalid())?;
            let unit_len = after
                .bytes()
                .take_while(|b| !(b.is_ascii_digit() || *b == b'.'))
                .count();
            let (unit, after) = after.split_at(unit_len);
            let bytes = unit_bytes(unit).ok_or_else(|| SizeError::UnknownUnit {
                unit: unit.to_string(),
                text: text.to_string(),
            })?;
            total += value * bytes as f64;
            rest = after;
        }
        if total >= i64::MAX as f64 {
            return Err(SizeError::Overflow(text.to_string()));
        }
        Ok(Self(total as u64))
    }
}

impl fmt::Display for ByteSize {
    /// The largest units first, in binary units, `0B` for zero: `10MiB`, `1GiB512MiB`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("0B");
        }
        let units = [
            ("EiB", 6),
            ("PiB", 5),
            ("TiB", 4),
            ("GiB", 3),
            ("MiB", 2),
            ("KiB", 1),
            ("B", 0),
        ];
        let mut rest = self.0;
        for (name, power) in units {
            let unit = KIB.pow(power);
            let count = rest / unit;
            if count > 0 {
                write!(f, "{count}{name}")?;
                rest -= count * unit;
            }
        }
        Ok(())
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Go reads any scalar here as its text, so `0` is a valid duration and `10` a size without unit.
        // `null` leaves the zero value, as in Go (an interval then comes from its default).
        let Some(text) = crate::serde_util::NullableScalar::deserialize(deserializer)?.0 else {
            return Ok(Self(0));
        };
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_units_are_binary_with_either_spelling() {
        assert_eq!(ByteSize::parse("0").unwrap().as_bytes(), 0);
        assert_eq!(ByteSize::parse("512B").unwrap().as_bytes(), 512);
        assert_eq!(ByteSize::parse("10MB").unwrap().as_bytes(), 10 * 1024 * 1024);
        assert_eq!(ByteSize::parse("10MiB").unwrap().as_bytes(), 10 * 1024 * 1024);
        assert_eq!(ByteSize::parse("1.5KB").unwrap().as_bytes(), 1536);
        assert_eq!(ByteSize::parse("1GB512MB").unwrap().as_bytes(), 1536 * 1024 * 1024);
        assert_eq!(ByteSize::parse("2EB").unwrap().as_bytes(), 2 << 60);
    }

    #[test]
    fn size_rejects_missing_or_unknown_units() {
        for bad in ["", "10", "10mb", "10 MB", "MB", "-1MB", "1.2.3MB", "10XB", ".MB", "8EB"] {
            assert!(ByteSize::parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn size_formats_in_parseable_binary_units() {
        for (bytes, text) in [
            (0, "0B"),
            (512, "512B"),
            (10 << 20, "10MiB"),
            (1536 << 20, "1GiB512MiB"),
        ] {
            assert_eq!(ByteSize::from_bytes(bytes).to_string(), text);
            assert_eq!(ByteSize::parse(text).unwrap().as_bytes(), bytes);
        }
    }
}
