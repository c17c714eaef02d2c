//! What a scrape body holds, in the shape the scrape loop appends: samples in
//! exposition order (labels as exposed, optional own timestamp) and metadata.
//! The media type is chosen from `Content-Type` as Prometheus does.

use std::sync::Arc;

use cairn_model::{Histogram, Labels};
use cairn_protocols::MetricMetadata;

use crate::settings::ScrapeProtocol;

#[derive(Debug, Clone)]
pub(crate) enum Value {
    Float(f64),
    Histogram(Arc<Histogram>),
}

#[derive(Debug, Clone)]
pub(crate) struct ScrapedSample {
    /// As exposed, `__name__` included.
    pub labels: Labels,
    pub t: Option<i64>,
    pub value: Value,
}

#[derive(Debug, Default)]
pub(crate) struct Scraped {
    pub samples: Vec<ScrapedSample>,
    pub metadata: Vec<MetricMetadata>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MediaKind {
    PrometheusText,
    OpenMetrics,
    Protobuf,
}

fn kind_of_protocol(p: ScrapeProtocol) -> MediaKind {
    match p {
        ScrapeProtocol::PrometheusProto => MediaKind::Protobuf,
        ScrapeProtocol::OpenMetricsText0_0_1 | ScrapeProtocol::OpenMetricsText1_0_0 => MediaKind::OpenMetrics,
        ScrapeProtocol::PrometheusText0_0_4 | ScrapeProtocol::PrometheusText1_0_0 => MediaKind::PrometheusText,
    }
}

/// The format of a response: its `Content-Type` when Prometheus knows it,
/// else the fallback protocol, else an error (the scrape fails).
pub(crate) fn media_kind(content_type: &str, fallback: Option<ScrapeProtocol>) -> Result<MediaKind, String> {
    let fallback_name = fallback.map(|f| f.media_type());
    if content_type.is_empty() {
        return fallback.map(kind_of_protocol).ok_or_else(|| {
            "non-compliant scrape target sending blank Content-Type and no fallback_scrape_protocol specified for target"
                .to_string()
        });
    }
    let media = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let parsed = !media.is_empty() && media.contains('/') && !media.contains(char::is_whitespace);
    match media.as_str() {
        "application/openmetrics-text" => Ok(MediaKind::OpenMetrics),
        "application/vnd.google.protobuf" => Ok(MediaKind::Protobuf),
        "text/plain" => Ok(MediaKind::PrometheusText),
        _ => match (fallback, parsed) {
            (Some(f), _) => Ok(kind_of_protocol(f)),
            (None, false) => Err(format!(
                "cannot parse Content-Type {content_type:?} and no fallback_scrape_protocol for target"
            )),
            (None, true) => Err(format!(
                "received unsupported Content-Type {content_type:?} and no fallback_scrape_protocol specified for target{}",
                fallback_name.unwrap_or("")
            )),
        },
    }
}

/// Parses a whole body; any malformed line fails the scrape, as in Prometheus.
pub(crate) fn parse(body: &[u8], kind: MediaKind) -> Result<Scraped, String> {
    use cairn_protocols::prom_text::{PromTextOptions, decode_prom_text};
    if kind == MediaKind::Protobuf {
        return Err("the protobuf exposition format is not supported yet".into());
    }
    // No sample can carry this timestamp, so it marks "none given".
    const NO_TIMESTAMP: i64 = i64::MIN;
    let options = PromTextOptions {
        default_t: NO_TIMESTAMP,
        extra_labels: Vec::new(),
        openmetrics: kind == MediaKind::OpenMetrics,
    };
    let limits = cairn_protocols::DecodeLimits::default();
    let result = decode_prom_text(body, &options, &limits);
    if let Some(e) = result.first_error {
        return Err(e.to_string());
    }
    let mut out = Scraped {
        samples: Vec::new(),
        metadata: result.batch.metadata.clone(),
    };
    for series in result.batch.series() {
        let labels = series.labels();
        for s in series.samples() {
            out.samples.push(ScrapedSample {
                labels: labels.clone(),
                t: (s.t != NO_TIMESTAMP).then_some(s.t),
                value: Value::Float(s.v),
            });
        }
        for h in series.histograms() {
            out.samples.push(ScrapedSample {
                labels: labels.clone(),
                t: (h.t != NO_TIMESTAMP).then_some(h.t),
                value: Value::Histogram(h.h.clone()),
            });
        }
    }
    Ok(out)
}
