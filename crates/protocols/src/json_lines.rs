//! VictoriaMetrics' JSON lines import format (`/api/v1/import`), one series
//! per line:
//!
//! ```text
//! {"metric":{"__name__":"up","job":"x"},"values":[1,null,"NaN","+Inf"],"timestamps":[1000,2000,3000,4000]}
//! ```
//!
//! - `metric` maps label names to string values (empty values are dropped,
//!   as everywhere in Cairn); `values` and `timestamps` (integer ms) have the
//!   same length.
//! - A value is a JSON number, `null` (a Prometheus staleness marker, as
//!   VictoriaMetrics writes and reads it), or one of the strings `"NaN"`,
//!   `"Inf"`, `"+Inf"`, `"-Inf"` (any case; `Infinity` spelled out too),
//!   which is what `/api/v1/export` writes, so export → import is exact to
//!   the bit; or the bare tokens `NaN`, `Inf`, `+Inf`, `-Inf` (not JSON, but
//!   what `vmctl` sends and VictoriaMetrics accepts). Numbers are parsed
//!   with correct rounding.
//! - A line with `histograms` in place of `values` holds native histogram
//!   samples in the form [`crate::histogram_json`] describes, which
//!   `/api/v1/export` writes; each must be valid.
//! - Blank lines are skipped; a bad line is counted and skipped (see
//!   [`crate::text_import`] for the partial acceptance rule).

use std::borrow::Cow;

use cairn_model::{HistogramSample, Label, Sample, stale_nan};
use serde_json::Value;

use crate::histogram_json::parse_histogram;
use crate::text_import::{ImportResult, finish_labels, lines};
use crate::{DecodeLimits, SeriesSamples};

/// Decodes a whole (decompressed) body; `extra` labels are added to every
/// series and replace sent labels of the same name.
pub fn decode_json_lines(body: &[u8], extra: &[Label], limits: &DecodeLimits) -> ImportResult {
    let mut out = ImportResult::default();
    for (n, line) in lines(body) {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match decode_line(line, extra, limits) {
            Ok(series) => out.batch.extend([series]),
            Err(reason) => out.reject(n, reason),
        }
    }
    out
}

fn decode_line(line: &[u8], extra: &[Label], limits: &DecodeLimits) -> Result<SeriesSamples, String> {
    let line = quote_bare_specials(line);
    let v: Value = serde_json::from_slice(&line).map_err(|e| format!("invalid JSON: {e}"))?;
    let Value::Object(mut obj) = v else {
        return Err("want a JSON object".into());
    };
    let Some(Value::Object(metric)) = obj.remove("metric") else {
        return Err("missing \"metric\" object".into());
    };
    let (values, histograms) = match (obj.remove("values"), obj.remove("histograms")) {
        (Some(Value::Array(values)), None) => (values, false),
        (None, Some(Value::Array(histograms))) => (histograms, true),
        _ => return Err("want a \"values\" or a \"histograms\" array".into()),
    };
    let Some(Value::Array(timestamps)) = obj.remove("timestamps") else {
        return Err("missing \"timestamps\" array".into());
    };
    if values.len() != timestamps.len() {
        return Err(format!("{} values but {} timestamps", values.len(), timestamps.len()));
    }
    if values.is_empty() {
        return Err("no values".into());
    }
    if metric.len() > limits.max_labels_per_series {
        return Err(format!(
            "{} labels exceed the limit of {}",
            metric.len(),
            limits.max_labels_per_series
        ));
    }
    let mut labels = Vec::with_capacity(metric.len() + extra.len());
    for (name, value) in metric {
        let Value::String(value) = value else {
            return Err(format!("label {name:?} has a non-string value"));
        };
        labels.push(Label::new(name, value));
    }
    let labels = finish_labels(labels, extra, limits)?;
    if histograms {
        let mut samples = Vec::with_capacity(values.len());
        for (i, (h, t)) in values.iter().zip(&timestamps).enumerate() {
            let t = t
                .as_i64()
                .ok_or_else(|| format!("timestamp {i} is not an integer number of milliseconds: {t}"))?;
            let h = parse_histogram(h).map_err(|e| format!("histogram {i}: {e}"))?;
            h.validate().map_err(|e| format!("histogram {i}: {e}"))?;
            samples.push(HistogramSample::new(t, h));
        }
        return Ok(SeriesSamples::with_histograms(labels, Vec::new(), samples));
    }
    let mut samples = Vec::with_capacity(values.len());
    for (i, (v, t)) in values.iter().zip(&timestamps).enumerate() {
        let t = t
            .as_i64()
            .ok_or_else(|| format!("timestamp {i} is not an integer number of milliseconds: {t}"))?;
        let v = parse_value(v).ok_or_else(|| format!("value {i} is not a number: {v}"))?;
        samples.push(Sample::new(t, v));
    }
    Ok(SeriesSamples::new(labels, samples))
}

/// Quotes the bare `NaN` / `Inf` / `+Inf` / `-Inf` / `Infinity` tokens
/// (any case) that `vmctl` writes outside strings, so a JSON parser reads
/// them as the strings [`special_float`] understands. Borrows when there
/// are none (the common case).
fn quote_bare_specials(line: &[u8]) -> Cow<'_, [u8]> {
    let mut out: Option<Vec<u8>> = None;
    let mut in_string = false;
    let mut escaped = false;
    let mut i = 0;
    while let Some(&b) = line.get(i) {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        } else if matches!(b, b'N' | b'n' | b'I' | b'i' | b'+' | b'-') {
            let len = line
                .get(i..)
                .unwrap_or_default()
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
                .count();
            let token = line.get(i..i + len).unwrap_or_default();
            let bare = token
                .strip_prefix(b"+")
                .or_else(|| token.strip_prefix(b"-"))
                .unwrap_or(token);
            if [&b"nan"[..], b"inf", b"infinity"]
                .iter()
                .any(|w| bare.eq_ignore_ascii_case(w))
            {
                let buf = out.get_or_insert_with(|| line.get(..i).unwrap_or_default().to_vec());
                buf.push(b'"');
                buf.extend_from_slice(token);
                buf.push(b'"');
                i += len;
                continue;
            }
        }
        if let Some(buf) = out.as_mut() {
            buf.push(b);
        }
        i += 1;
    }
    match out {
        Some(buf) => Cow::Owned(buf),
        None => Cow::Borrowed(line),
    }
}

fn parse_value(v: &Value) -> Option<f64> {
    match v {
        Value::Null => Some(stale_nan()),
        Value::Number(n) => n.as_f64(),
        Value::String(s) => special_float(s),
        _ => None,
    }
}

/// `NaN`, `Inf`, `+Inf`, `-Inf`, `Infinity`..., any case; a plain canonical
/// NaN, never the staleness bit pattern.
pub(crate) fn special_float(s: &str) -> Option<f64> {
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, s.get(1..)?),
        Some(b'+') => (false, s.get(1..)?),
        _ => (false, s),
    };
    if rest.eq_ignore_ascii_case("inf") || rest.eq_ignore_ascii_case("infinity") {
        Some(if negative { f64::NEG_INFINITY } else { f64::INFINITY })
    } else if rest.eq_ignore_ascii_case("nan") {
        Some(f64::NAN)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_model::{Labels, is_stale_nan};

    fn decode(body: &str) -> ImportResult {
        decode_json_lines(body.as_bytes(), &[], &DecodeLimits::default())
    }

    #[test]
    fn decodes_export_lines_with_special_values() {
        let r = decode(concat!(
            r#"{"metric":{"__name__":"up","job":"y"},"values":[null,"NaN","+Inf","-Inf",-0.125,3],"timestamps":[1000,2000,3000,4000,5000,-6000]}"#,
            "\r\n\n",
            r#"{"metric":{"__name__":"b","e":""},"values":[1e-7],"timestamps":[1]}"#,
        ));
        assert_eq!(r.bad_lines, 0, "{:?}", r.first_error);
        let s = &r.batch.to_series();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].labels, Labels::from_pairs([("__name__", "up"), ("job", "y")]));
        let v: Vec<f64> = s[0].samples.iter().map(|s| s.v).collect();
        assert!(is_stale_nan(v[0]));
        assert!(v[1].is_nan() && !is_stale_nan(v[1]));
        assert_eq!(&v[2..], &[f64::INFINITY, f64::NEG_INFINITY, -0.125, 3.0]);
        assert_eq!(s[0].samples[5].t, -6000);
        assert_eq!(s[1].labels, Labels::from_pairs([("__name__", "b")]));
        assert_eq!(s[1].samples, vec![Sample::new(1, 1e-7)]);
    }

    #[test]
    fn histogram_lines_as_export_writes_them() {
        let r = decode(concat!(
            r#"{"metric":{"__name__":"rpc"},"histograms":[{"schema":3,"count":6,"sum":4.5,"zero_threshold":0.001,"zero_count":2,"positive":[[0,4]]},{"schema":-53,"count":1,"sum":NaN,"positive":[[1,1]],"custom_values":[1,2],"reset_hint":"gauge"}],"timestamps":[1000,2000]}"#,
            "\n",
            r#"{"metric":{"__name__":"bad"},"histograms":[{"schema":99,"count":1,"sum":1}],"timestamps":[1]}"#,
            "\n",
            r#"{"metric":{"__name__":"both"},"values":[1],"histograms":[],"timestamps":[1]}"#,
        ));
        assert_eq!(r.bad_lines, 2, "{:?}", r.first_error);
        assert!(
            format!("{:?}", r.first_error).contains("schema 99"),
            "{:?}",
            r.first_error
        );
        let s = &r.batch.to_series();
        assert_eq!(s.len(), 1);
        assert!(s[0].samples.is_empty());
        let hs: Vec<(i64, i32, f64)> = s[0].histograms.iter().map(|h| (h.t, h.h.schema, h.h.count)).collect();
        assert_eq!(hs, [(1000, 3, 6.0), (2000, -53, 1.0)]);
        assert!(s[0].histograms[1].h.sum.is_nan());
        assert_eq!(s[0].histograms[0].h.positive, [(0, 4.0)]);
    }

    #[test]
    fn bad_lines_are_counted_and_the_first_is_named() {
        for (line, reason) in [
            ("{", "invalid JSON"),
            ("[1]", "want a JSON object"),
            (r#"{"values":[1],"timestamps":[1]}"#, "missing \"metric\""),
            (
                r#"{"metric":{"a":"b"},"timestamps":[1]}"#,
                "want a \"values\" or a \"histograms\" array",
            ),
            (r#"{"metric":{"a":"b"},"values":[1]}"#, "missing \"timestamps\""),
            (
                r#"{"metric":{"a":"b"},"values":[1,2],"timestamps":[1]}"#,
                "2 values but 1 timestamps",
            ),
            (r#"{"metric":{"a":"b"},"values":[],"timestamps":[]}"#, "no values"),
            (r#"{"metric":{"a":1},"values":[1],"timestamps":[1]}"#, "non-string"),
            (r#"{"metric":{},"values":[1],"timestamps":[1]}"#, "no labels"),
            (
                r#"{"metric":{"a":"b"},"values":["x"],"timestamps":[1]}"#,
                "value 0 is not a number",
            ),
            (
                r#"{"metric":{"a":"b"},"values":[true],"timestamps":[1]}"#,
                "value 0 is not a number",
            ),
            (r#"{"metric":{"a":"b"},"values":[1],"timestamps":[1.5]}"#, "timestamp 0"),
            (r#"{"metric":{"a":"b"},"values":[1],"timestamps":["1"]}"#, "timestamp 0"),
        ] {
            let body = format!("{{\"metric\":{{\"a\":\"ok\"}},\"values\":[1],\"timestamps\":[1]}}\n{line}\n{line}\n");
            let r = decode(&body);
            assert_eq!(r.bad_lines, 2, "{line}");
            assert_eq!(r.batch.series_count(), 1, "{line}");
            let first = r.first_error.unwrap();
            assert_eq!(first.line, 2);
            assert!(first.reason.contains(reason), "{line}: {}", first.reason);
        }
    }

    #[test]
    fn invalid_utf8_empty_and_limits() {
        let r = decode_json_lines(
            b"{\"metric\":{\"a\":\"\xff\"},\"values\":[1],\"timestamps\":[1]}",
            &[],
            &DecodeLimits::default(),
        );
        assert_eq!(r.bad_lines, 1);
        let r = decode("");
        assert_eq!((r.bad_lines, r.batch.series_count()), (0, 0));
        let limits = DecodeLimits {
            max_labels_per_series: 1,
            ..DecodeLimits::default()
        };
        let r = decode_json_lines(
            br#"{"metric":{"a":"1","b":"2"},"values":[1],"timestamps":[1]}"#,
            &[],
            &limits,
        );
        assert!(r.first_error.unwrap().reason.contains("exceed the limit"));
    }

    #[test]
    fn extra_labels_apply_to_every_line() {
        let r = decode_json_lines(
            br#"{"metric":{"__name__":"m","job":"a"},"values":[1],"timestamps":[1]}"#,
            &[Label::new("job", "b"), Label::new("env", "x")],
            &DecodeLimits::default(),
        );
        assert_eq!(
            r.batch.to_series()[0].labels,
            Labels::from_pairs([("__name__", "m"), ("env", "x"), ("job", "b")])
        );
    }

    #[test]
    fn bare_special_tokens_as_vmctl_writes_them() {
        let r = decode(
            r#"{"metric":{"__name__":"s","k":"NaN Inf"},"timestamps":[1,2,3,4,5,6],"values":[NaN,+Inf,-Inf,1e-300,-0.5,inf]}"#,
        );
        assert_eq!(r.first_error, None);
        let s = &r.batch.to_series()[0];
        assert_eq!(s.labels.get("k"), Some("NaN Inf"));
        let v: Vec<f64> = s.samples.iter().map(|x| x.v).collect();
        assert!(v[0].is_nan() && !is_stale_nan(v[0]));
        assert_eq!(
            &v[1..],
            &[f64::INFINITY, f64::NEG_INFINITY, 1e-300, -0.5, f64::INFINITY]
        );
        assert!(matches!(quote_bare_specials(br#"{"a":"\"NaN"}"#), Cow::Borrowed(_)));
        assert_eq!(
            quote_bare_specials(br#"[null,NaN,-1e5,"x\\",Infinity]"#).as_ref(),
            br#"[null,"NaN",-1e5,"x\\","Infinity"]"#
        );
    }

    #[test]
    fn special_floats() {
        for (s, want) in [
            ("Inf", f64::INFINITY),
            ("+inf", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
        ] {
            assert_eq!(special_float(s), Some(want));
        }
        assert!(special_float("nan").unwrap().is_nan());
        assert!(special_float("-NaN").unwrap().is_nan());
        for s in ["", "+", "1", "infinit"] {
            assert_eq!(special_float(s), None, "{s}");
        }
    }
}
