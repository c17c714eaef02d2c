//! Prometheus remote write 1.0: `POST /api/v1/write`.
//!
//! A body is a protobuf `prometheus.WriteRequest` ([`proto`]), compressed as
//! named by the `Content-Encoding` header ([`ContentEncoding`]): snappy's
//! *block* format (what every Prometheus sender uses, so a missing header
//! means snappy), zstd, or identity.
//!
//! # What a decoded request becomes
//!
//! [`decode_write_request`] returns a [`WriteBatch`]:
//!
//! - each series' labels are canonicalised with [`Labels::new`]: sorted by
//!   name, empty values dropped, duplicate names rejected. The order the
//!   sender used never changes a series' identity;
//! - float samples keep their order and their exact bits (stale markers,
//!   other NaN payloads, `-0.0` and infinities survive);
//! - native histogram samples are kept beside the float samples (each
//!   series of [`WriteBatch::series`] has its `histograms()`), integer and
//!   float ones alike, as float counts; schemas 9 to 52 are reduced to 8,
//!   as Prometheus does. A
//!   histogram Prometheus would refuse (spans not matching the counts, a
//!   negative count, an integer count that is not its buckets' total, a
//!   schema outside -4..=8 and -53, custom bounds that are not increasing,
//!   more buckets than [`DecodeLimits`] allow) is left out and counted in
//!   [`WriteBatch::histograms_invalid`] with the first one's reason; the
//!   rest of the request is kept. A histogram staleness marker (its sum the
//!   stale NaN) becomes a float stale NaN at its timestamp, the form
//!   storage keeps staleness in, and counts in
//!   [`WriteBatch::histograms_written`];
//! - a series with neither float samples nor histograms is skipped
//!   silently, as Prometheus does, before its labels are checked;
//!   exemplars are only counted ([`WriteBatch::exemplars_dropped`]): Cairn
//!   does not store them;
//! - metadata is passed on; unknown metric type numbers become `Unknown`;
//! - unknown protobuf fields are skipped, as protobuf requires.
//!
//! # Partial acceptance: none (but for native histograms)
//!
//! The whole request is rejected if any kept series is invalid: no labels
//! left after canonicalisation, no `__name__`, an empty or duplicate label
//! name, a name or value that is not UTF-8, or more or longer labels than
//! [`DecodeLimits`] allow. The error names the series' index in the request
//! and the offending label, so the sender's log points at the culprit.
//! Senders do not retry a 400, so an invalid series costs its whole batch.
//!
//! An invalid native histogram refuses only itself: the decoder keeps the
//! rest and reports it in [`WriteBatch::histograms_invalid`], so the HTTP
//! layer can store the rest and answer 400 with the reason, as Prometheus'
//! 2.0 receiver does, or refuse the whole request, as its 1.0 receiver does
//! (it rolls back and answers 400).
//!
//! Upstream Prometheus (2.x/3.x, `storage/remote/write_handler.go`) differs
//! here: its 1.0 receiver logs and skips a series with invalid labels and
//! accepts the rest with a 2xx (with a TODO saying the 1.0 spec wants a 400).
//! Cairn instead fails loudly; a caller wanting Prometheus' lenience can be
//! added as a decode option without changing the wire code.
//!
//! # Errors
//!
//! Every [`DecodeError`] is bad data (HTTP 400, never worth retrying) except
//! [`DecodeError::UnsupportedEncoding`] (HTTP 415); [`DecodeError::kind`]
//! gives the answer in one match.
//!
//! [`WriteBatch`]: crate::WriteBatch
//! [`WriteBatch::histograms_invalid`]: crate::WriteBatch::histograms_invalid
//! [`WriteBatch::histograms_written`]: crate::WriteBatch::histograms_written
//! [`WriteBatch::series`]: crate::WriteBatch::series
//! [`WriteBatch::exemplars_dropped`]: crate::WriteBatch::exemplars_dropped
//! [`DecodeLimits`]: crate::DecodeLimits
//! [`Labels::new`]: cairn_model::Labels::new

mod decode;
mod encode;
mod histogram;
mod pieces;
pub mod proto;
pub mod proto_v2;
mod v2;

use std::fmt;

pub use decode::decode_write_request;
pub use encode::{
    EncodeError, compress, encode_float_series, encode_label_pairs, encode_labels, encode_series, encode_wire_series,
    encode_write_request, encode_write_request_v2, encode_write_request_with,
};
pub use histogram::to_proto as histogram_to_proto;
pub use pieces::{SeriesField, SnappyBody, series_fields, snappy_block, unsnappy_block};
pub use v2::{PROTO_V2, decode_write_request_v2};

use crate::ErrorKind;

/// The `Content-Type` of a remote write 1.0 request.
pub const CONTENT_TYPE: &str = "application/x-protobuf";
/// The header a remote write sender uses to announce its protocol version.
pub const VERSION_HEADER: &str = "X-Prometheus-Remote-Write-Version";
/// The version remote write 1.0 senders announce.
pub const VERSION: &str = "0.1.0";

/// How a request body is compressed, from its `Content-Encoding` header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ContentEncoding {
    /// Snappy's block format (not the framed/stream format).
    #[default]
    Snappy,
    /// One or more zstd frames.
    Zstd,
    /// Uncompressed protobuf.
    Identity,
}

impl ContentEncoding {
    /// Parses a `Content-Encoding` header value. A missing or empty header
    /// means snappy, since Prometheus senders always compress with it.
    /// Case and surrounding whitespace are ignored.
    pub fn from_header(value: Option<&str>) -> Result<Self, DecodeError> {
        let v = value.map(str::trim).unwrap_or_default();
        if v.is_empty() || v.eq_ignore_ascii_case("snappy") {
            Ok(Self::Snappy)
        } else if v.eq_ignore_ascii_case("zstd") {
            Ok(Self::Zstd)
        } else if v.eq_ignore_ascii_case("identity") {
            Ok(Self::Identity)
        } else {
            Err(DecodeError::UnsupportedEncoding(v.chars().take(64).collect()))
        }
    }

    /// The header value for this encoding.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Snappy => "snappy",
            Self::Zstd => "zstd",
            Self::Identity => "identity",
        }
    }
}

impl fmt::Display for ContentEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a remote write body was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The `Content-Encoding` is none Cairn accepts (HTTP 415).
    #[error("unsupported content encoding {0:?}: want snappy, zstd or identity")]
    UnsupportedEncoding(String),
    /// The body is not valid data in its declared encoding.
    #[error("{encoding} decompression failed: {reason}")]
    Decompress { encoding: ContentEncoding, reason: String },
    /// The body decompresses to more than the limit allows. `size` is the
    /// size the body declares, when it declares one.
    #[error("{encoding} body decompresses to more than the {limit}-byte limit{}",
        size.map(|s| format!(" ({s} bytes)")).unwrap_or_default())]
    TooLarge {
        encoding: ContentEncoding,
        limit: usize,
        size: Option<u64>,
    },
    /// The decompressed body is not a well-formed `WriteRequest`. `at` says
    /// where: `write request`, `series 3`, `series 3 label 1`, `metadata 0`...
    #[error("malformed protobuf in {at}: {reason}")]
    BadProtobuf { at: String, reason: String },
    /// The series at `index` (0-based, counting every series in the request)
    /// cannot be stored.
    #[error("invalid series at index {index}: {reason}")]
    InvalidSeries { index: usize, reason: InvalidSeriesReason },
}

impl DecodeError {
    /// How the HTTP layer should answer this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::UnsupportedEncoding(_) => ErrorKind::UnsupportedEncoding,
            Self::Decompress { .. } | Self::TooLarge { .. } | Self::BadProtobuf { .. } | Self::InvalidSeries { .. } => {
                ErrorKind::BadData
            }
        }
    }

    /// True for an unsupported `Content-Encoding` (HTTP 415); every other
    /// error is bad data (HTTP 400).
    pub fn is_unsupported_encoding(&self) -> bool {
        self.kind() == ErrorKind::UnsupportedEncoding
    }
}

/// What is wrong with one series. Label names quoted here are cut to 64
/// characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidSeriesReason {
    #[error("no labels")]
    NoLabels,
    #[error("no metric name (__name__ label)")]
    NoMetricName,
    #[error("empty label name")]
    EmptyLabelName,
    #[error("duplicate label name {0:?}")]
    DuplicateLabelName(String),
    /// `position` is the label's index as sent.
    #[error("label {position} has a name that is not valid UTF-8")]
    NonUtf8LabelName { position: usize },
    #[error("label {name:?} has a value that is not valid UTF-8")]
    NonUtf8LabelValue { name: String },
    #[error("more than {limit} labels")]
    TooManyLabels { limit: usize },
    #[error("label name {name:?} is {len} bytes, over the {limit}-byte limit")]
    LabelNameTooLong { name: String, len: usize, limit: usize },
    #[error("value of label {name:?} is {len} bytes, over the {limit}-byte limit")]
    LabelValueTooLong { name: String, len: usize, limit: usize },
    /// Any other reason the label set is not canonicalisable.
    #[error("{0}")]
    Labels(cairn_model::LabelError),
}

#[cfg(test)]
mod tests;
