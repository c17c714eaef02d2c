//! Native histograms in Cairn's JSON lines (`/api/v1/export` writes them,
//! `/api/v1/import` reads them back). VictoriaMetrics' format has no
//! histograms, so a series' histogram samples get lines of their own, beside
//! its float line:
//!
//! ```text
//! {"metric":{"__name__":"rpc_seconds"},"histograms":[{"schema":3,"count":12,"sum":4.5,"zero_threshold":0.001,"zero_count":2,"positive":[[0,4],[3,6]]}],"timestamps":[1700000000000]}
//! ```
//!
//! One object per sample, in the order of `timestamps`:
//! - `schema` (-4 to 8, or -53 for custom buckets), `count`, `sum`;
//! - `zero_threshold` and `zero_count`, left out when 0;
//! - `positive` and `negative`: the populated buckets as `[index, count]`
//!   pairs by increasing index (Prometheus' bucket indexes), left out when
//!   empty;
//! - `custom_values`: the upper bounds of custom buckets (schema -53);
//! - `reset_hint`: `"reset"`, `"not_reset"` or `"gauge"`, left out when
//!   unknown.
//!
//! Numbers are written as the shortest decimal that reads back to the same
//! float, non-finite ones as the strings `"NaN"`, `"+Inf"`, `"-Inf"`: the
//! round trip is exact.

use std::io::Write;
use std::sync::Arc;

use cairn_model::histogram::{Histogram, ResetHint};
use serde_json::Value;

/// Appends `h` as one JSON object.
pub fn write_histogram(buf: &mut Vec<u8>, h: &Histogram) {
    let _ = write!(buf, "{{\"schema\":{},\"count\":", h.schema);
    write_number(buf, h.count);
    buf.extend_from_slice(b",\"sum\":");
    write_number(buf, h.sum);
    if h.zero_threshold != 0.0 {
        buf.extend_from_slice(b",\"zero_threshold\":");
        write_number(buf, h.zero_threshold);
    }
    if h.zero_count != 0.0 {
        buf.extend_from_slice(b",\"zero_count\":");
        write_number(buf, h.zero_count);
    }
    for (name, side) in [("positive", &h.positive), ("negative", &h.negative)] {
        if side.is_empty() {
            continue;
        }
        let _ = write!(buf, ",\"{name}\":[");
        for (i, &(idx, count)) in side.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            let _ = write!(buf, "[{idx},");
            write_number(buf, count);
            buf.push(b']');
        }
        buf.push(b']');
    }
    if let Some(bounds) = &h.custom_bounds {
        buf.extend_from_slice(b",\"custom_values\":[");
        for (i, &b) in bounds.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            write_number(buf, b);
        }
        buf.push(b']');
    }
    let hint = match h.reset_hint {
        ResetHint::Unknown => None,
        ResetHint::Reset => Some("reset"),
        ResetHint::NotReset => Some("not_reset"),
        ResetHint::Gauge => Some("gauge"),
    };
    if let Some(hint) = hint {
        let _ = write!(buf, ",\"reset_hint\":\"{hint}\"");
    }
    buf.push(b'}');
}

/// A float as export lines write it: the shortest decimal that reads back
/// the same, `"NaN"`, `"+Inf"` or `"-Inf"` as strings.
pub fn write_number(buf: &mut Vec<u8>, v: f64) {
    if v.is_nan() {
        buf.extend_from_slice(b"\"NaN\"");
    } else if v == f64::INFINITY {
        buf.extend_from_slice(b"\"+Inf\"");
    } else if v == f64::NEG_INFINITY {
        buf.extend_from_slice(b"\"-Inf\"");
    } else {
        let _ = write!(buf, "{v}");
    }
}

/// Reads one histogram object as [`write_histogram`] writes it. The result
/// is not yet validated ([`Histogram::validate`]).
pub fn parse_histogram(v: &Value) -> Result<Histogram, String> {
    let obj = v.as_object().ok_or("a histogram must be a JSON object")?;
    for key in obj.keys() {
        if !matches!(
            key.as_str(),
            "schema"
                | "count"
                | "sum"
                | "zero_threshold"
                | "zero_count"
                | "positive"
                | "negative"
                | "custom_values"
                | "reset_hint"
        ) {
            return Err(format!("unknown histogram field {key:?}"));
        }
    }
    let schema = obj
        .get("schema")
        .and_then(Value::as_i64)
        .and_then(|s| i32::try_from(s).ok())
        .ok_or("a histogram needs an integer \"schema\"")?;
    let number = |key: &str, default: Option<f64>| match obj.get(key) {
        Some(v) => parse_number(v).ok_or_else(|| format!("histogram field {key:?} must be a number")),
        None => default.ok_or_else(|| format!("a histogram needs {key:?}")),
    };
    let buckets = |key: &str| -> Result<Vec<(i32, f64)>, String> {
        let Some(list) = obj.get(key) else {
            return Ok(Vec::new());
        };
        let bad = || format!("histogram field {key:?} must be a list of [index, count] by increasing index");
        let list = list.as_array().ok_or_else(bad)?;
        let mut out: Vec<(i32, f64)> = Vec::with_capacity(list.len());
        for pair in list {
            let (idx, count) = match pair.as_array().map(Vec::as_slice) {
                Some([idx, count]) => (idx, count),
                _ => return Err(bad()),
            };
            let idx = idx.as_i64().and_then(|i| i32::try_from(i).ok()).ok_or_else(bad)?;
            let count = parse_number(count).ok_or_else(bad)?;
            if out.last().is_some_and(|last| last.0 >= idx) {
                return Err(bad());
            }
            out.push((idx, count));
        }
        Ok(out)
    };
    let custom_bounds = match obj.get("custom_values") {
        None => None,
        Some(list) => {
            let bad = || "histogram field \"custom_values\" must be a list of numbers".to_string();
            let bounds = list
                .as_array()
                .ok_or_else(bad)?
                .iter()
                .map(|b| parse_number(b).ok_or_else(bad))
                .collect::<Result<Vec<f64>, String>>()?;
            Some(Arc::from(bounds))
        }
    };
    let reset_hint = match obj.get("reset_hint").map(|h| h.as_str()) {
        None => ResetHint::Unknown,
        Some(Some("reset")) => ResetHint::Reset,
        Some(Some("not_reset")) => ResetHint::NotReset,
        Some(Some("gauge")) => ResetHint::Gauge,
        Some(_) => return Err("histogram field \"reset_hint\" must be \"reset\", \"not_reset\" or \"gauge\"".into()),
    };
    Ok(Histogram {
        schema,
        reset_hint,
        count: number("count", None)?,
        sum: number("sum", None)?,
        zero_threshold: number("zero_threshold", Some(0.0))?,
        zero_count: number("zero_count", Some(0.0))?,
        positive: buckets("positive")?,
        negative: buckets("negative")?,
        custom_bounds,
    })
}

fn parse_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "+Inf" | "Inf" => Some(f64::INFINITY),
            "-Inf" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use cairn_model::histogram::CUSTOM_BUCKETS_SCHEMA;
    use proptest::prelude::*;

    use super::*;

    fn round_trip(h: &Histogram) -> Histogram {
        let mut buf = Vec::new();
        write_histogram(&mut buf, h);
        let v: Value = serde_json::from_slice(&buf).unwrap();
        parse_histogram(&v).unwrap()
    }

    #[test]
    fn writes_the_documented_form() {
        let h = Histogram {
            schema: 3,
            count: 12.0,
            sum: 4.5,
            zero_threshold: 0.001,
            zero_count: 2.0,
            positive: vec![(0, 4.0), (3, 6.0)],
            ..Histogram::default()
        };
        let mut buf = Vec::new();
        write_histogram(&mut buf, &h);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            r#"{"schema":3,"count":12,"sum":4.5,"zero_threshold":0.001,"zero_count":2,"positive":[[0,4],[3,6]]}"#
        );
    }

    #[test]
    fn custom_buckets_hints_and_non_finite_numbers_come_back() {
        let h = Histogram {
            schema: CUSTOM_BUCKETS_SCHEMA,
            reset_hint: ResetHint::Gauge,
            count: f64::INFINITY,
            sum: f64::NAN,
            positive: vec![(0, 1.0), (2, 0.5)],
            custom_bounds: Some([0.1, 2.5].into()),
            ..Histogram::default()
        };
        let back = round_trip(&h);
        assert!(back.sum.is_nan());
        assert_eq!(Histogram { sum: 0.0, ..back }, Histogram { sum: 0.0, ..h });
    }

    #[test]
    fn malformed_objects_are_refused_with_a_reason() {
        let cases = [
            (r#"[]"#, "JSON object"),
            (r#"{"count":1,"sum":1}"#, "schema"),
            (r#"{"schema":0,"sum":1}"#, "count"),
            (
                r#"{"schema":0,"count":1,"sum":1,"positive":[[1,1],[1,2]]}"#,
                "increasing",
            ),
            (r#"{"schema":0,"count":1,"sum":1,"positive":[[1]]}"#, "[index, count]"),
            (r#"{"schema":0,"count":"x","sum":1}"#, "number"),
            (r#"{"schema":0,"count":1,"sum":1,"reset_hint":"maybe"}"#, "reset_hint"),
            (r#"{"schema":0,"count":1,"sum":1,"extra":1}"#, "unknown"),
            (r#"{"schema":99999999999,"count":1,"sum":1}"#, "schema"),
        ];
        for (json, why) in cases {
            let v: Value = serde_json::from_str(json).unwrap();
            let err = parse_histogram(&v).unwrap_err();
            assert!(err.contains(why), "{json}: {err}");
        }
    }

    fn buckets() -> impl Strategy<Value = Vec<(i32, f64)>> {
        prop::collection::btree_map(
            any::<i32>(),
            any::<f64>().prop_filter("finite", |c| c.is_finite()),
            0..8,
        )
        .prop_map(|m| m.into_iter().collect())
    }

    proptest! {
        #[test]
        fn every_exponential_histogram_round_trips_exactly(
            schema in -4i32..=8,
            count in any::<f64>().prop_filter("finite", |c| c.is_finite()),
            sum in any::<f64>().prop_filter("finite", |c| c.is_finite()),
            zero_threshold in 0.0f64..1.0,
            zero_count in 0.0f64..1e9,
            positive in buckets(),
            negative in buckets(),
        ) {
            let h = Histogram { schema, count, sum, zero_threshold, zero_count, positive, negative, ..Histogram::default() };
            prop_assert_eq!(round_trip(&h), h);
        }
    }
}
