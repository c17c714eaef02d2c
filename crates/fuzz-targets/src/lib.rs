//! The fuzz targets' checks, one function per target taking the raw input.
//! `fuzz/fuzz_targets/*.rs` hand libFuzzer's inputs to them, and
//! `tests/replay.rs` replays every kept corpus and regression input through
//! them in the test suite, so each check is written once. A function panics
//! when an invariant breaks; bad input alone must never make it panic.

mod cluster_frames;
mod codec_histograms;
mod codec_timestamps;
mod codec_values;
mod csv;
mod dns_answer;
mod exposition_known;
mod exposition_openmetrics;
mod exposition_protobuf;
mod exposition_text;
mod graphite;
mod histograms;
mod influx;
mod json_lines;
mod kubernetes_events;
mod opentsdb;
mod otlp;
mod prom_text;
mod promql_syntax;
mod remote_read;
mod remote_write;
mod remote_write_v2;
mod scrape_http_response;
mod tsdb_histogram_file;
mod tsdb_index_segment;
mod tsdb_losses;
mod tsdb_part;
mod tsdb_tombstones;
mod tsdb_wal_record;
mod vm_native;

pub use cluster_frames::cluster_frames;
pub use codec_histograms::codec_histograms;
pub use codec_timestamps::codec_timestamps;
pub use codec_values::codec_values;
pub use csv::csv;
pub use dns_answer::dns_answer;
pub use exposition_openmetrics::exposition_openmetrics;
pub use exposition_protobuf::exposition_protobuf;
pub use exposition_text::exposition_text;
pub use graphite::graphite;
pub use histograms::histograms;
pub use influx::influx;
pub use json_lines::json_lines;
pub use kubernetes_events::kubernetes_events;
pub use opentsdb::opentsdb;
pub use otlp::otlp;
pub use prom_text::prom_text;
pub use promql_syntax::promql_syntax;
pub use remote_read::remote_read;
pub use remote_write::remote_write;
pub use remote_write_v2::remote_write_v2;
pub use scrape_http_response::scrape_http_response;
pub use tsdb_histogram_file::tsdb_histogram_file;
pub use tsdb_index_segment::tsdb_index_segment;
pub use tsdb_losses::tsdb_losses;
pub use tsdb_part::tsdb_part;
pub use tsdb_tombstones::tsdb_tombstones;
pub use tsdb_wal_record::tsdb_wal_record;
pub use vm_native::vm_native;

/// A target: takes one input, panics when an invariant breaks.
pub type Target = fn(&[u8]);

/// Every target by name, as `fuzz/` names its corpus and regression folders.
pub const TARGETS: &[(&str, Target)] = &[
    ("cluster_frames", cluster_frames),
    ("codec_histograms", codec_histograms),
    ("codec_timestamps", codec_timestamps),
    ("codec_values", codec_values),
    ("csv", csv),
    ("dns_answer", dns_answer),
    ("exposition_openmetrics", exposition_openmetrics),
    ("exposition_protobuf", exposition_protobuf),
    ("exposition_text", exposition_text),
    ("graphite", graphite),
    ("histograms", histograms),
    ("influx", influx),
    ("json_lines", json_lines),
    ("kubernetes_events", kubernetes_events),
    ("opentsdb", opentsdb),
    ("otlp", otlp),
    ("prom_text", prom_text),
    ("promql_syntax", promql_syntax),
    ("remote_read", remote_read),
    ("remote_write", remote_write),
    ("remote_write_v2", remote_write_v2),
    ("scrape_http_response", scrape_http_response),
    ("tsdb_histogram_file", tsdb_histogram_file),
    ("tsdb_index_segment", tsdb_index_segment),
    ("tsdb_losses", tsdb_losses),
    ("tsdb_part", tsdb_part),
    ("tsdb_tombstones", tsdb_tombstones),
    ("tsdb_wal_record", tsdb_wal_record),
    ("vm_native", vm_native),
];

/// The limits every decoder target tries: the defaults, and tiny ones that
/// most inputs run into.
fn limits() -> [cairn_protocols::DecodeLimits; 2] {
    limits_with_labels(4)
}

/// [`limits`] with at most `max_labels` labels per series in the tiny
/// ones: a line protocol's few labels reach a lower limit sooner.
fn limits_with_labels(max_labels: usize) -> [cairn_protocols::DecodeLimits; 2] {
    let tiny = cairn_protocols::DecodeLimits {
        max_decompressed_bytes: 4096,
        max_labels_per_series: max_labels,
        max_label_name_len: 8,
        max_label_value_len: 8,
        max_histogram_buckets: 4,
    };
    [cairn_protocols::DecodeLimits::default(), tiny]
}

/// Every remote-write content encoding, each with default and with tiny
/// limits (which most inputs run into), as both remote-write targets try them.
fn remote_write_settings() -> impl Iterator<
    Item = (
        cairn_protocols::remote_write::ContentEncoding,
        cairn_protocols::DecodeLimits,
    ),
> {
    use cairn_protocols::remote_write::ContentEncoding;
    [
        ContentEncoding::Snappy,
        ContentEncoding::Zstd,
        ContentEncoding::Identity,
    ]
    .into_iter()
    .flat_map(|encoding| limits().map(|l| (encoding, l)))
}

/// What every series a remote-write decoder keeps must be: labelled, with
/// samples, valid histograms and no more labels than `limits` allow.
fn check_remote_write_series(s: &cairn_protocols::SeriesSamples, limits: &cairn_protocols::DecodeLimits) {
    assert!(!s.labels.is_empty() && (!s.samples.is_empty() || !s.histograms.is_empty()));
    assert!(s.labels.len() <= limits.max_labels_per_series);
    for h in &s.histograms {
        assert_eq!(h.h.validate(), Ok(()));
    }
}
