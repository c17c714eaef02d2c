//! JSON lines import of arbitrary bytes: it must return, never panic; what
//! it keeps respects the limits, and written back the way `/api/v1/export`
//! writes it, decodes to the same series bit for bit.

use cairn_model::is_stale_nan;
use cairn_protocols::DecodeLimits;
use cairn_protocols::json_lines::decode_json_lines;

fn value(v: f64) -> String {
    if is_stale_nan(v) {
        "null".into()
    } else if v.is_nan() {
        "\"NaN\"".into()
    } else if v.is_infinite() {
        if v > 0.0 { "\"+Inf\"".into() } else { "\"-Inf\"".into() }
    } else {
        format!("{v}")
    }
}

pub fn json_lines(data: &[u8]) {
    for limits in crate::limits() {
        let r = decode_json_lines(data, &[], &limits);
        assert_eq!(r.bad_lines == 0, r.first_error.is_none());
        let mut out = String::new();
        for s in &r.batch.to_series() {
            assert!(!s.labels.is_empty() && !s.samples.is_empty());
            assert!(s.labels.len() <= limits.max_labels_per_series);
            let metric: serde_json::Map<String, serde_json::Value> = s
                .labels
                .iter()
                .map(|l| (l.name.to_string(), serde_json::Value::String(l.value.to_string())))
                .collect();
            let values: Vec<String> = s.samples.iter().map(|x| value(x.v)).collect();
            let ts: Vec<String> = s.samples.iter().map(|x| x.t.to_string()).collect();
            out.push_str(&format!(
                "{{\"metric\":{},\"values\":[{}],\"timestamps\":[{}]}}\n",
                serde_json::Value::Object(metric),
                values.join(","),
                ts.join(",")
            ));
        }
        let again = decode_json_lines(out.as_bytes(), &[], &DecodeLimits::default());
        assert_eq!(again.bad_lines, 0, "{out}: {:?}", again.first_error);
        assert_eq!(again.batch.to_series(), r.batch.to_series());
    }
}
