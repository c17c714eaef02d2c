//! Metric metadata (type, help, unit), in a protocol-neutral form.

use std::fmt;

/// The type of a metric family, as in OpenMetrics and Prometheus.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum MetricType {
    #[default]
    Unknown,
    Counter,
    Gauge,
    Histogram,
    GaugeHistogram,
    Summary,
    Info,
    StateSet,
}

impl MetricType {
    /// The lowercase name Prometheus' metadata API uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
            Self::GaugeHistogram => "gaugehistogram",
            Self::Summary => "summary",
            Self::Info => "info",
            Self::StateSet => "stateset",
        }
    }
}

impl MetricType {
    /// The type named `name` as [`Self::as_str`] writes it.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Self::Unknown,
            Self::Counter,
            Self::Gauge,
            Self::Histogram,
            Self::GaugeHistogram,
            Self::Summary,
            Self::Info,
            Self::StateSet,
        ]
        .into_iter()
        .find(|t| t.as_str() == name)
    }
}

impl fmt::Display for MetricType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a sender says about one metric family.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct MetricMetadata {
    /// The metric family name, as the sender reports it.
    pub metric_family_name: String,
    pub metric_type: MetricType,
    pub help: String,
    pub unit: String,
}
