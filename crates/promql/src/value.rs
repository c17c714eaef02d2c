//! Result value types.

use std::sync::Arc;

use cairn_model::{Histogram, HistogramSample, Labels, Sample};
use promql_parser::parser::value::ValueType;

/// The value of one sample.
#[derive(Debug, Clone, PartialEq)]
pub enum SampleValue {
    Float(f64),
    Histogram(Arc<Histogram>),
}

impl SampleValue {
    pub fn as_float(&self) -> Option<f64> {
        match self {
            Self::Float(f) => Some(*f),
            Self::Histogram(_) => None,
        }
    }
}

/// One element of an instant vector.
#[derive(Debug, Clone, PartialEq)]
pub struct InstantSample {
    pub metric: Labels,
    /// Evaluation time in ms.
    pub t: i64,
    pub value: SampleValue,
}

/// One series of a matrix (range query result or range vector).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RangeSeries {
    pub metric: Labels,
    pub floats: Vec<Sample>,
    pub histograms: Vec<HistogramSample>,
}

/// A query result.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Scalar { t: i64, v: f64 },
    String { t: i64, s: String },
    Vector(Vec<InstantSample>),
    Matrix(Vec<RangeSeries>),
}

impl Value {
    /// Prometheus' `resultType`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Scalar { .. } => "scalar",
            Self::String { .. } => "string",
            Self::Vector(_) => "vector",
            Self::Matrix(_) => "matrix",
        }
    }
}

pub(crate) fn type_name(vt: ValueType) -> &'static str {
    match vt {
        ValueType::Scalar => "scalar",
        ValueType::String => "string",
        ValueType::Vector => "vector",
        ValueType::Matrix => "range vector",
    }
}
