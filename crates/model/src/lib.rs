//! Cairn's data model: label sets, matchers, samples and native histograms.
//!
//! Pure types, shared by every other crate. No I/O, no async, no logging.

pub mod civil;
mod encoded_labels;
pub mod go_float;
pub mod histogram;
mod labels;
mod matcher;
mod sample;
pub mod summary;
pub mod text_cache;
mod wire_labels;

pub use encoded_labels::{EncodedLabels, LabelText, LabelsBuf, SharedEncodedLabels, SortedLabelsWriter};
pub use histogram::{Histogram, HistogramSample};
pub use labels::{Label, LabelError, Labels, METRIC_NAME, METRIC_TYPE, METRIC_UNIT, SCHEMA_LABELS, encode_canonical};
pub use matcher::{MatchOp, Matcher, MatcherError, may_repeat_count};
pub use sample::{STALE_NAN_BITS, Sample, is_stale_nan, stale_nan};
pub use wire_labels::{WireLabel, WireLabels, WireLabelsBuf, WireLabelsWriter, put_wire_label};

/// Milliseconds since the Unix epoch, the unit of every timestamp in Cairn.
pub type Timestamp = i64;
