//! OTLP/JSON (`Content-Type: application/json`): the protobuf JSON mapping
//! with OTLP's rules — lowerCamelCase keys (the proto's snake_case names are
//! accepted too), enums as integers (or their names), 64-bit integers as
//! decimal strings or numbers, doubles as numbers or `"NaN"`/`"Infinity"`/
//! `"-Infinity"`, `bytesValue` as base64 — read into the [`proto`] structs,
//! then decoded exactly as a protobuf body, so both encodings store the same
//! series. Unknown keys are ignored, as the spec requires. Exemplars are only
//! counted (their ids and attributes are not read).
//!
//! The body is parsed into a JSON tree first, which costs several times its
//! size in memory; the decompressed-size limit bounds it.

use prost::Message;
use serde_json::{Map, Value};

use super::decompress::decompress;
use super::proto::*;
use super::{ContentEncoding, DecodeError, Decoded, Options, Rejections, decode_export_request_with};
use crate::DecodeLimits;

/// Decodes one OTLP/JSON `ExportMetricsServiceRequest` body.
pub fn decode_export_request_json(
    body: &[u8],
    encoding: ContentEncoding,
    limits: &DecodeLimits,
    now_ms: i64,
) -> Result<Decoded, DecodeError> {
    decode_export_request_json_with(body, encoding, limits, now_ms, &Options::default())
}

/// [`decode_export_request_json`] with translation [`Options`].
pub fn decode_export_request_json_with(
    body: &[u8],
    encoding: ContentEncoding,
    limits: &DecodeLimits,
    now_ms: i64,
    options: &Options,
) -> Result<Decoded, DecodeError> {
    let raw = decompress(body, encoding, limits.max_decompressed_bytes)?;
    let request = if raw.iter().all(u8::is_ascii_whitespace) {
        ExportMetricsServiceRequest::default()
    } else {
        let value: Value = serde_json::from_slice(&raw).map_err(|e| DecodeError::BadJson {
            at: "body".into(),
            reason: e.to_string(),
        })?;
        request(&value)?
    };
    drop(raw);
    // The protobuf form is never larger than its JSON.
    let pb = request.encode_to_vec();
    decode_export_request_with(&pb, ContentEncoding::Identity, limits, now_ms, options)
}

/// The JSON body of a successful export (`{}` when everything was stored).
pub fn encode_response_json(rejected: &Rejections) -> Vec<u8> {
    let body = if rejected.is_empty() {
        serde_json::json!({})
    } else {
        serde_json::json!({"partialSuccess": {
            // int64 is a string in the protobuf JSON mapping.
            "rejectedDataPoints": rejected.total().to_string(),
            "errorMessage": rejected.message(),
        }})
    };
    body.to_string().into_bytes()
}

/// The JSON form of a `google.rpc.Status` error body.
pub fn encode_status_json(code: i32, message: &str) -> Vec<u8> {
    serde_json::json!({"code": code, "message": message})
        .to_string()
        .into_bytes()
}

type JsonResult<T> = Result<T, DecodeError>;

fn bad(at: &str, reason: impl Into<String>) -> DecodeError {
    DecodeError::BadJson {
        at: at.to_string(),
        reason: reason.into(),
    }
}

fn object<'a>(v: &'a Value, at: &str) -> JsonResult<Option<&'a Map<String, Value>>> {
    match v {
        Value::Null => Ok(None),
        Value::Object(m) => Ok(Some(m)),
        _ => Err(bad(at, "want an object")),
    }
}

/// The value of `camel` (or its snake_case twin `snake`), `None` if absent or null.
fn field<'a>(m: &'a Map<String, Value>, camel: &str, snake: &str) -> Option<&'a Value> {
    m.get(camel).or_else(|| m.get(snake)).filter(|v| !v.is_null())
}

fn array<'a>(m: &'a Map<String, Value>, camel: &str, snake: &str, at: &str) -> JsonResult<&'a [Value]> {
    match field(m, camel, snake) {
        None => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(bad(at, format!("{camel} must be an array"))),
    }
}

fn messages<T>(
    m: &Map<String, Value>,
    camel: &str,
    snake: &str,
    at: &str,
    convert: impl Fn(&Map<String, Value>, &str) -> JsonResult<T>,
) -> JsonResult<Vec<T>> {
    let mut out = Vec::new();
    for (i, v) in array(m, camel, snake, at)?.iter().enumerate() {
        let at = format!("{at} {camel} {i}");
        let empty = Map::new();
        let obj = object(v, &at)?.unwrap_or(&empty);
        out.push(convert(obj, &at)?);
    }
    Ok(out)
}

fn message<T: Default>(
    m: &Map<String, Value>,
    camel: &str,
    snake: &str,
    at: &str,
    convert: impl Fn(&Map<String, Value>, &str) -> JsonResult<T>,
) -> JsonResult<Option<T>> {
    match field(m, camel, snake) {
        None => Ok(None),
        Some(v) => {
            let at = format!("{at} {camel}");
            match object(v, &at)? {
                Some(obj) => Ok(Some(convert(obj, &at)?)),
                None => Ok(None),
            }
        }
    }
}

fn string(m: &Map<String, Value>, camel: &str, snake: &str, at: &str) -> JsonResult<String> {
    match field(m, camel, snake) {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(bad(at, format!("{camel} must be a string"))),
    }
}

fn boolean(m: &Map<String, Value>, camel: &str, snake: &str, at: &str) -> JsonResult<bool> {
    match field(m, camel, snake) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(bad(at, format!("{camel} must be a boolean"))),
    }
}

/// An integer given as a JSON number or a decimal string.
fn integer<T: TryFrom<i128> + Default>(v: Option<&Value>, name: &str, at: &str) -> JsonResult<T> {
    let n: Option<i128> = match v {
        None => return Ok(T::default()),
        Some(Value::Number(n)) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 2e18)
                    .map(|f| f as i128)
            }),
        Some(Value::String(s)) => s.trim().parse::<i128>().ok(),
        Some(_) => None,
    };
    n.and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| bad(at, format!("{name} must be an integer in range")))
}

fn int<T: TryFrom<i128> + Default>(m: &Map<String, Value>, camel: &str, snake: &str, at: &str) -> JsonResult<T> {
    integer(field(m, camel, snake), camel, at)
}

/// A double as a JSON number or one of the protobuf JSON strings.
fn double(v: &Value, name: &str, at: &str) -> JsonResult<f64> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| bad(at, format!("{name} must be a number"))),
        Value::String(s) => match s.as_str() {
            "NaN" => Ok(f64::NAN),
            "Infinity" => Ok(f64::INFINITY),
            "-Infinity" => Ok(f64::NEG_INFINITY),
            other => other.parse().map_err(|_| bad(at, format!("{name} must be a number"))),
        },
        _ => Err(bad(at, format!("{name} must be a number"))),
    }
}

fn opt_double(m: &Map<String, Value>, camel: &str, snake: &str, at: &str) -> JsonResult<Option<f64>> {
    field(m, camel, snake).map(|v| double(v, camel, at)).transpose()
}

/// An enum as its number or its name.
fn temporality(m: &Map<String, Value>, at: &str) -> JsonResult<i32> {
    let v = field(m, "aggregationTemporality", "aggregation_temporality");
    match v {
        Some(Value::String(s)) if s.starts_with("AGGREGATION_TEMPORALITY_") => Ok(match s.as_str() {
            "AGGREGATION_TEMPORALITY_DELTA" => AggregationTemporality::Delta as i32,
            "AGGREGATION_TEMPORALITY_CUMULATIVE" => AggregationTemporality::Cumulative as i32,
            _ => AggregationTemporality::Unspecified as i32,
        }),
        other => integer(other, "aggregationTemporality", at),
    }
}

fn request(v: &Value) -> JsonResult<ExportMetricsServiceRequest> {
    let empty = Map::new();
    let m = object(v, "request")?.unwrap_or(&empty);
    Ok(ExportMetricsServiceRequest {
        resource_metrics: messages(m, "resourceMetrics", "resource_metrics", "request", resource_metrics)?,
    })
}

fn resource_metrics(m: &Map<String, Value>, at: &str) -> JsonResult<ResourceMetrics> {
    Ok(ResourceMetrics {
        resource: message(m, "resource", "resource", at, |r, at| {
            Ok(Resource {
                attributes: messages(r, "attributes", "attributes", at, key_value)?,
                dropped_attributes_count: int(r, "droppedAttributesCount", "dropped_attributes_count", at)?,
            })
        })?,
        scope_metrics: messages(m, "scopeMetrics", "scope_metrics", at, scope_metrics)?,
        schema_url: string(m, "schemaUrl", "schema_url", at)?,
    })
}

fn scope_metrics(m: &Map<String, Value>, at: &str) -> JsonResult<ScopeMetrics> {
    Ok(ScopeMetrics {
        scope: message(m, "scope", "scope", at, |s, at| {
            Ok(InstrumentationScope {
                name: string(s, "name", "name", at)?,
                version: string(s, "version", "version", at)?,
                attributes: messages(s, "attributes", "attributes", at, key_value)?,
                dropped_attributes_count: int(s, "droppedAttributesCount", "dropped_attributes_count", at)?,
            })
        })?,
        metrics: messages(m, "metrics", "metrics", at, metric)?,
        schema_url: string(m, "schemaUrl", "schema_url", at)?,
    })
}

fn metric(m: &Map<String, Value>, at: &str) -> JsonResult<Metric> {
    let name = string(m, "name", "name", at)?;
    let at = &format!("{at} ({name:?})");
    let mut data = None;
    if let Some(g) = message(m, "gauge", "gauge", at, |g, at| {
        Ok(Gauge {
            data_points: messages(g, "dataPoints", "data_points", at, number_point)?,
        })
    })? {
        data = Some(metric::Data::Gauge(g));
    }
    if let Some(s) = message(m, "sum", "sum", at, |s, at| {
        Ok(Sum {
            data_points: messages(s, "dataPoints", "data_points", at, number_point)?,
            aggregation_temporality: temporality(s, at)?,
            is_monotonic: boolean(s, "isMonotonic", "is_monotonic", at)?,
        })
    })? {
        data = Some(metric::Data::Sum(s));
    }
    if let Some(h) = message(m, "histogram", "histogram", at, |h, at| {
        Ok(Histogram {
            data_points: messages(h, "dataPoints", "data_points", at, histogram_point)?,
            aggregation_temporality: temporality(h, at)?,
        })
    })? {
        data = Some(metric::Data::Histogram(h));
    }
    if let Some(e) = message(m, "exponentialHistogram", "exponential_histogram", at, |e, at| {
        Ok(ExponentialHistogram {
            data_points: messages(e, "dataPoints", "data_points", at, exponential_point)?,
            aggregation_temporality: temporality(e, at)?,
        })
    })? {
        data = Some(metric::Data::ExponentialHistogram(e));
    }
    if let Some(s) = message(m, "summary", "summary", at, |s, at| {
        Ok(Summary {
            data_points: messages(s, "dataPoints", "data_points", at, summary_point)?,
        })
    })? {
        data = Some(metric::Data::Summary(s));
    }
    Ok(Metric {
        description: string(m, "description", "description", at)?,
        unit: string(m, "unit", "unit", at)?,
        data,
        metadata: messages(m, "metadata", "metadata", at, key_value)?,
        name,
    })
}

fn exemplars(m: &Map<String, Value>, at: &str) -> JsonResult<Vec<Exemplar>> {
    Ok(vec![Exemplar::default(); array(m, "exemplars", "exemplars", at)?.len()])
}

fn number_point(m: &Map<String, Value>, at: &str) -> JsonResult<NumberDataPoint> {
    let value = if let Some(d) = opt_double(m, "asDouble", "as_double", at)? {
        Some(number_data_point::Value::AsDouble(d))
    } else if let Some(i) = field(m, "asInt", "as_int") {
        Some(number_data_point::Value::AsInt(integer(Some(i), "asInt", at)?))
    } else {
        None
    };
    Ok(NumberDataPoint {
        attributes: messages(m, "attributes", "attributes", at, key_value)?,
        start_time_unix_nano: int(m, "startTimeUnixNano", "start_time_unix_nano", at)?,
        time_unix_nano: int(m, "timeUnixNano", "time_unix_nano", at)?,
        value,
        exemplars: exemplars(m, at)?,
        flags: int(m, "flags", "flags", at)?,
    })
}

fn histogram_point(m: &Map<String, Value>, at: &str) -> JsonResult<HistogramDataPoint> {
    let bucket_counts = array(m, "bucketCounts", "bucket_counts", at)?
        .iter()
        .map(|v| integer(Some(v), "bucketCounts", at))
        .collect::<JsonResult<_>>()?;
    let explicit_bounds = array(m, "explicitBounds", "explicit_bounds", at)?
        .iter()
        .map(|v| double(v, "explicitBounds", at))
        .collect::<JsonResult<_>>()?;
    Ok(HistogramDataPoint {
        attributes: messages(m, "attributes", "attributes", at, key_value)?,
        start_time_unix_nano: int(m, "startTimeUnixNano", "start_time_unix_nano", at)?,
        time_unix_nano: int(m, "timeUnixNano", "time_unix_nano", at)?,
        count: int(m, "count", "count", at)?,
        sum: opt_double(m, "sum", "sum", at)?,
        bucket_counts,
        explicit_bounds,
        exemplars: exemplars(m, at)?,
        flags: int(m, "flags", "flags", at)?,
        min: opt_double(m, "min", "min", at)?,
        max: opt_double(m, "max", "max", at)?,
    })
}

fn exponential_point(m: &Map<String, Value>, at: &str) -> JsonResult<ExponentialHistogramDataPoint> {
    let buckets = |camel, at: &str| {
        message(m, camel, camel, at, |b, at| {
            Ok(Buckets {
                offset: int(b, "offset", "offset", at)?,
                bucket_counts: array(b, "bucketCounts", "bucket_counts", at)?
                    .iter()
                    .map(|v| integer(Some(v), "bucketCounts", at))
                    .collect::<JsonResult<_>>()?,
            })
        })
    };
    Ok(ExponentialHistogramDataPoint {
        attributes: messages(m, "attributes", "attributes", at, key_value)?,
        start_time_unix_nano: int(m, "startTimeUnixNano", "start_time_unix_nano", at)?,
        time_unix_nano: int(m, "timeUnixNano", "time_unix_nano", at)?,
        count: int(m, "count", "count", at)?,
        sum: opt_double(m, "sum", "sum", at)?,
        scale: int(m, "scale", "scale", at)?,
        zero_count: int(m, "zeroCount", "zero_count", at)?,
        positive: buckets("positive", at)?,
        negative: buckets("negative", at)?,
        flags: int(m, "flags", "flags", at)?,
        exemplars: exemplars(m, at)?,
        min: opt_double(m, "min", "min", at)?,
        max: opt_double(m, "max", "max", at)?,
        zero_threshold: opt_double(m, "zeroThreshold", "zero_threshold", at)?.unwrap_or_default(),
    })
}

fn summary_point(m: &Map<String, Value>, at: &str) -> JsonResult<SummaryDataPoint> {
    Ok(SummaryDataPoint {
        attributes: messages(m, "attributes", "attributes", at, key_value)?,
        start_time_unix_nano: int(m, "startTimeUnixNano", "start_time_unix_nano", at)?,
        time_unix_nano: int(m, "timeUnixNano", "time_unix_nano", at)?,
        count: int(m, "count", "count", at)?,
        sum: opt_double(m, "sum", "sum", at)?.unwrap_or(0.0),
        quantile_values: messages(m, "quantileValues", "quantile_values", at, |q, at| {
            Ok(ValueAtQuantile {
                quantile: opt_double(q, "quantile", "quantile", at)?.unwrap_or(0.0),
                value: opt_double(q, "value", "value", at)?.unwrap_or(0.0),
            })
        })?,
        flags: int(m, "flags", "flags", at)?,
    })
}

fn key_value(m: &Map<String, Value>, at: &str) -> JsonResult<KeyValue> {
    Ok(KeyValue {
        key: string(m, "key", "key", at)?,
        value: message(m, "value", "value", at, any_value)?,
    })
}

fn any_value(m: &Map<String, Value>, at: &str) -> JsonResult<AnyValue> {
    use any_value::Value as V;
    let value = if let Some(v) = field(m, "stringValue", "string_value") {
        let Value::String(s) = v else {
            return Err(bad(at, "stringValue must be a string"));
        };
        Some(V::StringValue(s.clone()))
    } else if field(m, "boolValue", "bool_value").is_some() {
        Some(V::BoolValue(boolean(m, "boolValue", "bool_value", at)?))
    } else if field(m, "intValue", "int_value").is_some() {
        Some(V::IntValue(int(m, "intValue", "int_value", at)?))
    } else if let Some(d) = opt_double(m, "doubleValue", "double_value", at)? {
        Some(V::DoubleValue(d))
    } else if let Some(a) = message(m, "arrayValue", "array_value", at, |a, at| {
        Ok(ArrayValue {
            values: messages(a, "values", "values", at, any_value)?,
        })
    })? {
        Some(V::ArrayValue(a))
    } else if let Some(kv) = message(m, "kvlistValue", "kvlist_value", at, |l, at| {
        Ok(KeyValueList {
            values: messages(l, "values", "values", at, key_value)?,
        })
    })? {
        Some(V::KvlistValue(kv))
    } else if field(m, "bytesValue", "bytes_value").is_some() {
        let s = string(m, "bytesValue", "bytes_value", at)?;
        Some(V::BytesValue(
            base64_decode(&s).ok_or_else(|| bad(at, "bytesValue must be base64"))?,
        ))
    } else {
        None
    };
    Ok(AnyValue { value })
}

/// Standard or URL-safe base64, padded or not (what protobuf JSON accepts).
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_variants_decode() {
        assert_eq!(base64_decode("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(base64_decode("aGVsbG8"), Some(b"hello".to_vec()));
        assert_eq!(base64_decode("_w=="), Some(vec![0xff]));
        assert_eq!(base64_decode("/w"), Some(vec![0xff]));
        assert_eq!(base64_decode(""), Some(vec![]));
        assert_eq!(base64_decode("a b"), None);
    }
}
