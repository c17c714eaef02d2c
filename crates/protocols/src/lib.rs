//! The wire protocols Cairn ingests, decoded into protocol-neutral batches.
//!
//! Each protocol is a sibling module that turns a request body into a
//! [`WriteBatch`] of canonical series (flat buffers; [`SeriesSamples`] is
//! their owned form) plus [`metadata`]:
//!
//! - [`remote_write`]: Prometheus remote write 1.0 (snappy or zstd protobuf).
//! - [`prom_text`], [`json_lines`], [`csv`]: VictoriaMetrics-compatible text
//!   imports (shared rules in [`text_import`]).
//! - [`influx`]: InfluxDB line protocol; [`opentsdb`]: OpenTSDB telnet `put`
//!   lines and `/api/put` JSON; [`graphite`]: Graphite plaintext.
//! - [`otlp`]: OpenTelemetry OTLP/HTTP metrics (protobuf), with Prometheus 3's
//!   name translation.
//!
//! Scrapes are read by [`exposition`]: the Prometheus text format,
//! OpenMetrics and the Prometheus protobuf format, as Prometheus' scrape
//! path reads them, into samples and metadata rather than a batch.
//!
//! Two protocols go both ways: [`remote_read`], Prometheus remote read's
//! request and its two answers (samples, streamed XOR chunks); and
//! [`vm_native`], VictoriaMetrics' native export and import format, read
//! block by block from any [`std::io::Read`] so that migrations stream.
//!
//! The crate is pure: no network, no async, no storage. The HTTP layer picks the
//! protocol by endpoint, hands the body to the protocol's decoder, answers a
//! failure with the status of its [`ErrorKind`], and appends the batch.

#![deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing))]

mod batch;
pub mod csv;
pub mod exposition;
pub mod graphite;
mod histogram;
pub mod histogram_json;
pub mod influx;
pub mod json_lines;
mod limits;
pub mod metadata;
pub mod opentsdb;
pub mod otlp;
pub mod prom_text;
pub mod remote_read;
pub mod remote_write;
pub mod text_import;
pub mod vm_native;

pub use batch::{InvalidHistograms, SeriesSamples, WriteBatch};
pub use histogram::HistogramError;
pub use limits::DecodeLimits;
pub use metadata::{MetricMetadata, MetricType};

/// How a protocol decode failure should be answered: one match for the HTTP
/// layer, whichever protocol failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The body's content encoding is not one the protocol accepts (HTTP 415).
    UnsupportedEncoding,
    /// The body is malformed, too large or names an invalid series (HTTP 400).
    /// Retrying the same body cannot succeed.
    BadData,
}

impl ErrorKind {
    /// The HTTP status code for this kind of failure.
    pub fn http_status(self) -> u16 {
        match self {
            Self::UnsupportedEncoding => 415,
            Self::BadData => 400,
        }
    }
}
