//! Attribute values as label values, the way the OpenTelemetry Collector's
//! `pcommon.Value.AsString` (used by Prometheus' translator) renders them:
//! strings as they are, booleans `true`/`false`, integers in decimal, doubles
//! in JavaScript's shortest form, bytes as padded base64, arrays and maps as
//! JSON (map keys sorted, later duplicates winning), an empty value as "".
//!
//! One deliberate difference: Go renders a NaN or infinite double as the text
//! of a JSON encoding error; Cairn writes Prometheus' `NaN`, `+Inf`, `-Inf`.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::proto::{AnyValue, any_value::Value};

/// The label value of an attribute value.
pub fn any_value_string(v: Option<&AnyValue>) -> String {
    match v.and_then(|v| v.value.as_ref()) {
        None => String::new(),
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::DoubleValue(f)) => double_string(*f),
        Some(Value::BytesValue(b)) => base64(b),
        Some(other @ (Value::ArrayValue(_) | Value::KvlistValue(_))) => {
            let mut out = String::new();
            // Go's json.Marshal fails on NaN/Inf anywhere inside, and
            // AsString then yields "".
            if write_json(&mut out, Some(other)) {
                out
            } else {
                String::new()
            }
        }
    }
}

/// A double as Go's `AsString` renders it (ES6 number-to-string):
/// `strconv.FormatFloat(f, 'f', -1, 64)` unless `|f| < 1e-6` or `|f| >=
/// 1e21`, then exponent form with a signed exponent (`1e+21`, `1e-7`).
pub fn double_string(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
            _ => s,
        }
    } else {
        format!("{f}")
    }
}

/// A float as Go's `strconv.FormatFloat(f, 'f', -1, 64)` renders it, with
/// Prometheus' spellings of the non-finite values: the `le` and `quantile`
/// label values.
pub fn float_label(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "+Inf".into() } else { "-Inf".into() }
    } else {
        format!("{f}")
    }
}

/// Standard base64 with padding (Go's `base64.StdEncoding`).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let sym = |i: u32| char::from(ALPHABET.get((i & 63) as usize).copied().unwrap_or(b'='));
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (b(0) << 16) | (b(1) << 8) | b(2);
        out.push(sym(n >> 18));
        out.push(sym(n >> 12));
        out.push(if chunk.len() > 1 { sym(n >> 6) } else { '=' });
        out.push(if chunk.len() > 2 { sym(n) } else { '=' });
    }
    out
}

/// Appends the JSON of `v` as Go's `json.Marshal(v.AsRaw())` writes it.
/// Returns false when Go would fail (a NaN or infinite double).
fn write_json(out: &mut String, v: Option<&Value>) -> bool {
    match v {
        None => out.push_str("null"),
        Some(Value::StringValue(s)) => write_json_string(out, s),
        Some(Value::BoolValue(b)) => out.push_str(if *b { "true" } else { "false" }),
        Some(Value::IntValue(i)) => {
            let _ = write!(out, "{i}");
        }
        Some(Value::DoubleValue(f)) => {
            if !f.is_finite() {
                return false;
            }
            out.push_str(&double_string(*f));
        }
        Some(Value::BytesValue(b)) => {
            out.push('"');
            out.push_str(&base64(b));
            out.push('"');
        }
        Some(Value::ArrayValue(a)) => {
            out.push('[');
            for (i, item) in a.values.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !write_json(out, item.value.as_ref()) {
                    return false;
                }
            }
            out.push(']');
        }
        Some(Value::KvlistValue(kv)) => {
            // Go map semantics: sorted keys, the last duplicate wins.
            let map: BTreeMap<&str, Option<&Value>> = kv
                .values
                .iter()
                .map(|e| (e.key.as_str(), e.value.as_ref().and_then(|v| v.value.as_ref())))
                .collect();
            out.push('{');
            for (i, (k, v)) in map.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k);
                out.push(':');
                if !write_json(out, v) {
                    return false;
                }
            }
            out.push('}');
        }
    }
    true
}

/// A JSON string as Go's encoder writes it, HTML-safe escapes included.
fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::otlp::proto::{ArrayValue, KeyValue, KeyValueList};

    fn av(v: Value) -> AnyValue {
        AnyValue { value: Some(v) }
    }

    #[test]
    fn every_any_value_kind_renders_as_go_does() {
        let check = |v: Option<AnyValue>, want: &str| assert_eq!(any_value_string(v.as_ref()), want, "{v:?}");
        check(None, "");
        check(Some(AnyValue { value: None }), "");
        check(Some(av(Value::StringValue("a b".into()))), "a b");
        check(Some(av(Value::BoolValue(true))), "true");
        check(Some(av(Value::BoolValue(false))), "false");
        check(Some(av(Value::IntValue(-42))), "-42");
        check(Some(av(Value::DoubleValue(1.5))), "1.5");
        check(Some(av(Value::DoubleValue(100.0))), "100");
        check(Some(av(Value::DoubleValue(1e21))), "1e+21");
        check(Some(av(Value::DoubleValue(1.5e-7))), "1.5e-7");
        check(Some(av(Value::DoubleValue(0.000001))), "0.000001");
        check(Some(av(Value::DoubleValue(-0.0))), "-0");
        check(Some(av(Value::DoubleValue(f64::NAN))), "NaN");
        check(Some(av(Value::DoubleValue(f64::NEG_INFINITY))), "-Inf");
        check(Some(av(Value::BytesValue(b"hello".to_vec()))), "aGVsbG8=");
        check(Some(av(Value::BytesValue(b"hi!".to_vec()))), "aGkh");
        check(Some(av(Value::BytesValue(vec![0xff]))), "/w==");
        check(Some(av(Value::BytesValue(vec![]))), "");
        check(
            Some(av(Value::ArrayValue(ArrayValue {
                values: vec![
                    av(Value::StringValue("x\"<".into())),
                    av(Value::IntValue(1)),
                    av(Value::DoubleValue(2.5)),
                    av(Value::BoolValue(false)),
                    AnyValue { value: None },
                    av(Value::BytesValue(vec![1])),
                ],
            }))),
            r#"["x\"\u003c",1,2.5,false,null,"AQ=="]"#,
        );
        check(
            Some(av(Value::KvlistValue(KeyValueList {
                values: vec![
                    KeyValue::string("b", "2"),
                    KeyValue::string("a", "1\n"),
                    KeyValue::string("b", "3"),
                    KeyValue {
                        key: "c".into(),
                        value: Some(av(Value::ArrayValue(ArrayValue { values: vec![] }))),
                    },
                ],
            }))),
            r#"{"a":"1\n","b":"3","c":[]}"#,
        );
        check(
            Some(av(Value::ArrayValue(ArrayValue {
                values: vec![av(Value::DoubleValue(f64::NAN))],
            }))),
            "",
        );
    }

    #[test]
    fn float_labels_use_shortest_fixed_form() {
        assert_eq!(float_label(0.005), "0.005");
        assert_eq!(float_label(1.0), "1");
        assert_eq!(float_label(1e21), "1000000000000000000000");
        assert_eq!(float_label(f64::INFINITY), "+Inf");
        assert_eq!(float_label(0.99), "0.99");
    }
}
