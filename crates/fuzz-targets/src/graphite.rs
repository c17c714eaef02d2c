//! Graphite plaintext of arbitrary bytes: decoding must return, never
//! panic; kept series respect the limits and hold one sample; and what is
//! kept, written back as Graphite lines with millisecond-exact timestamps,
//! decodes to the same series and samples.

use cairn_protocols::DecodeLimits;
use cairn_protocols::graphite::decode_graphite;

pub fn graphite(data: &[u8]) {
    for limits in crate::limits_with_labels(2) {
        let r = decode_graphite(data, 1_700_000_000_000, &limits);
        assert_eq!(r.bad_lines == 0, r.first_error.is_none());
        let mut text = String::new();
        let mut kept = Vec::new();
        for s in &r.batch.to_series() {
            assert_eq!(s.samples.len(), 1);
            assert!(s.labels.len() <= limits.max_labels_per_series);
            // Seconds with three decimals are exact in a float only this far;
            // and `-1.000`, as `-1`, means "now" (Carbon's rule), so a sample
            // at -1 s (from `-1.0000000000123`, say) has no line of its own.
            let t = s.samples[0].t;
            if t.abs() >= 1_000_000_000_000_000 || t == -1000 {
                continue;
            }
            kept.push(s.clone());
            let mut path = s.labels.metric_name().expect("a metric name").to_string();
            for l in s.labels.iter().filter(|l| l.name != "__name__") {
                path.push_str(&format!(";{}={}", l.name, l.value));
            }
            let x = s.samples[0];
            let sign = if x.t < 0 { "-" } else { "" };
            let secs = format!("{sign}{}.{:03}", x.t.unsigned_abs() / 1000, x.t.unsigned_abs() % 1000);
            text.push_str(&format!("{path} {:?} {secs}\n", x.v));
        }
        let again = decode_graphite(text.as_bytes(), 0, &DecodeLimits::default());
        assert_eq!(again.bad_lines, 0, "{text:?}: {:?}", again.first_error);
        let flat = |b: &cairn_protocols::WriteBatch| -> Vec<(String, i64, u64)> {
            b.to_series()
                .iter()
                .map(|s| {
                    let x = s.samples[0];
                    (s.labels.to_string(), x.t, if x.v.is_nan() { 0 } else { x.v.to_bits() })
                })
                .collect()
        };
        assert_eq!(flat(&again.batch), flat(&kept.into_iter().collect()));
    }
}
