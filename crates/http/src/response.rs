//! The success envelope and JSON helpers shared by every JSON endpoint.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use cairn_model::Labels;
use serde::Serialize;
use serde::ser::SerializeMap;

/// `{"status":"success","data":...,"warnings":[...]}`; `warnings` is left out
/// when empty, as Prometheus does.
#[derive(Debug, Serialize)]
pub struct Success<T: Serialize> {
    status: &'static str,
    pub data: T,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl<T: Serialize> Success<T> {
    pub fn new(data: T) -> Self {
        Self {
            status: "success",
            data,
            warnings: Vec::new(),
        }
    }

    pub fn with_warnings(data: T, warnings: Vec<String>) -> Self {
        Self {
            status: "success",
            data,
            warnings,
        }
    }
}

impl<T: Serialize> IntoResponse for Success<T> {
    fn into_response(self) -> Response {
        json_response(StatusCode::OK, &self)
    }
}

/// Serialises `body` as the response with `Content-Type: application/json`.
/// A serialisation failure (not expected for our types) becomes a 500 envelope.
pub fn json_response<T: Serialize + ?Sized>(status: StatusCode, body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(e) => crate::ApiError::internal(format!("cannot encode response: {e}")).into_response(),
    }
}

/// Serialises a label set as a JSON object in label order:
/// `{"__name__":"up","job":"x"}`.
#[derive(Debug, Clone, Copy)]
pub struct LabelsJson<'a>(pub &'a Labels);

impl Serialize for LabelsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for l in self.0 {
            map.serialize_entry(&l.name, &l.value)?;
        }
        map.end()
    }
}

/// A sample value as Prometheus writes it (inside a JSON string): Go's
/// `strconv.FormatFloat(v, 'f', -1, 64)`, but `'e'` form when `|v| < 1e-6` or
/// `|v| >= 1e21` (`"1e-07"`, `"1e+21"`), and `NaN`, `+Inf`, `-Inf`.
pub fn format_value(v: f64) -> String {
    let mut out = String::with_capacity(24);
    push_value(&mut out, v);
    out
}

/// Appends [`format_value`]'s text for `v` to `out` (the hot path of query
/// responses: no allocation per value).
pub fn push_value(out: &mut String, v: f64) {
    if v.is_nan() {
        return out.push_str("NaN");
    }
    if v.is_infinite() {
        return out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    }
    // Integers below 2^53 (counters, byte counts, most gauges) are their own
    // shortest digits. -0.0 takes the general path ("-0").
    if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 && (v != 0.0 || v.is_sign_positive()) {
        return out.push_str(itoa::Buffer::new().format(v as i64));
    }
    let abs = v.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        return cairn_model::go_float::push_go_sci(out, v);
    }
    // Go's digits: an exact tie between two shortest candidates goes to the
    // even one, where Rust's `{}` rounds up.
    cairn_model::go_float::push_plain(out, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_omits_empty_warnings() {
        let s = serde_json::to_string(&Success::new(vec!["a"])).unwrap();
        assert_eq!(s, r#"{"status":"success","data":["a"]}"#);
        let s = serde_json::to_string(&Success::with_warnings(1, vec!["w".into()])).unwrap();
        assert_eq!(s, r#"{"status":"success","data":1,"warnings":["w"]}"#);
    }

    #[test]
    fn labels_serialise_in_order() {
        let l = Labels::from_pairs([("job", "x\"y"), ("__name__", "up")]);
        let s = serde_json::to_string(&LabelsJson(&l)).unwrap();
        assert_eq!(s, r#"{"__name__":"up","job":"x\"y"}"#);
    }

    #[test]
    fn values_format_like_prometheus() {
        let cases = [
            (1.0, "1"),
            (2.5, "2.5"),
            (-0.0, "-0"),
            (0.0, "0"),
            (0.1, "0.1"),
            (1.0 / 3.0, "0.3333333333333333"),
            (0.000001, "0.000001"),
            (0.00000099, "9.9e-07"),
            (1e-7, "1e-07"),
            (-1.5e-7, "-1.5e-07"),
            (5e-324, "5e-324"),
            (1e6, "1000000"),
            (123456789.125, "123456789.125"),
            (1e20, "100000000000000000000"),
            (999999999999999900000.0, "999999999999999900000"),
            (1e21, "1e+21"),
            (-1e21, "-1e+21"),
            (1.2345e100, "1.2345e+100"),
            (f64::MAX, "1.7976931348623157e+308"),
            // Exact ties between two shortest candidates take the even digit,
            // as Go does (found by tests/promql_differential.rs).
            (551.5171508789062, "551.5171508789062"),
            (1507691624084275.2, "1507691624084275.2"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
        ];
        for (v, want) in cases {
            assert_eq!(format_value(v), want, "{v:?}");
            let mut appended = String::from("x");
            push_value(&mut appended, v);
            assert_eq!(&appended[1..], want, "{v:?} appended");
        }
    }

    proptest::proptest! {
        /// The integer fast path and the exponent rewriting agree with the
        /// general formatting.
        #[test]
        fn fast_paths_match_the_general_formatting(bits in proptest::num::u64::ANY, int in proptest::num::i64::ANY) {
            for v in [f64::from_bits(bits), int as f64, (int >> 11) as f64] {
                let general = {
                    let abs = v.abs();
                    if v.is_nan() || v.is_infinite() {
                        format_value(v)
                    } else if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
                        let s = cairn_model::go_float::shortest_sci(v);
                        let (mant, exp) = s.split_once('e').unwrap();
                        let (sign, digits) = match exp.strip_prefix('-') {
                            Some(d) => ('-', d),
                            None => ('+', exp),
                        };
                        let pad = if digits.len() < 2 { "0" } else { "" };
                        format!("{mant}e{sign}{pad}{digits}")
                    } else {
                        cairn_model::go_float::shortest_plain(v)
                    }
                };
                proptest::prop_assert_eq!(format_value(v), general, "{:?}", v);
            }
        }
    }
}
