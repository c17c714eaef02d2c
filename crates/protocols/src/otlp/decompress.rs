//! Request bodies as OTLP/HTTP senders compress them, read with a hard bound
//! on the decompressed size.

use std::borrow::Cow;
use std::fmt;
use std::io::Read;

use super::DecodeError;

/// How an OTLP request body is compressed, from its `Content-Encoding`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ContentEncoding {
    /// Uncompressed (no header, or `identity`).
    #[default]
    Identity,
    /// gzip (what the OTLP spec names; the Collector's default), multi-member
    /// bodies included.
    Gzip,
    /// zlib-wrapped deflate, as HTTP's `deflate` means it.
    Deflate,
    /// One or more zstd frames (the Collector's `compression: zstd`).
    Zstd,
}

impl ContentEncoding {
    /// Parses a `Content-Encoding` header value; missing or empty means
    /// identity. Case and surrounding whitespace are ignored.
    pub fn from_header(value: Option<&str>) -> Result<Self, DecodeError> {
        let v = value.map(str::trim).unwrap_or_default();
        if v.is_empty() || v.eq_ignore_ascii_case("identity") {
            Ok(Self::Identity)
        } else if v.eq_ignore_ascii_case("gzip") || v.eq_ignore_ascii_case("x-gzip") {
            Ok(Self::Gzip)
        } else if v.eq_ignore_ascii_case("deflate") {
            Ok(Self::Deflate)
        } else if v.eq_ignore_ascii_case("zstd") {
            Ok(Self::Zstd)
        } else {
            Err(DecodeError::UnsupportedEncoding(v.chars().take(64).collect()))
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Identity => "identity",
            Self::Gzip => "gzip",
            Self::Deflate => "deflate",
            Self::Zstd => "zstd",
        }
    }
}

impl fmt::Display for ContentEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Decompresses `body`, refusing more than `limit` bytes of output.
pub fn decompress(body: &[u8], encoding: ContentEncoding, limit: usize) -> Result<Cow<'_, [u8]>, DecodeError> {
    let too_large = || DecodeError::TooLarge { encoding, limit };
    let failed = |e: std::io::Error| DecodeError::Decompress {
        encoding,
        reason: e.to_string(),
    };
    let bounded = |reader: &mut dyn Read| -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        reader.take(limit as u64 + 1).read_to_end(&mut out).map_err(failed)?;
        if out.len() > limit {
            return Err(too_large());
        }
        Ok(out)
    };
    match encoding {
        ContentEncoding::Identity => {
            if body.len() > limit {
                return Err(too_large());
            }
            Ok(Cow::Borrowed(body))
        }
        ContentEncoding::Gzip => Ok(Cow::Owned(bounded(&mut flate2::read::MultiGzDecoder::new(body))?)),
        ContentEncoding::Deflate => Ok(Cow::Owned(bounded(&mut flate2::read::ZlibDecoder::new(body))?)),
        ContentEncoding::Zstd => {
            let mut decoder = zstd::stream::read::Decoder::with_buffer(body).map_err(failed)?;
            // No window needs to exceed the output limit; without this a
            // tiny frame can make the decoder allocate its maximum window.
            let log = (usize::BITS - limit.saturating_sub(1).leading_zeros()).clamp(23, 31);
            decoder.window_log_max(log).map_err(failed)?;
            Ok(Cow::Owned(bounded(&mut decoder)?))
        }
    }
}
