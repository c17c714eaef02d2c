//! Prometheus text / OpenMetrics parsing of arbitrary bytes: it must return,
//! never panic, and every series it keeps must respect the limits; and what
//! it keeps, written back as text, must parse to the same series.

use cairn_protocols::DecodeLimits;
use cairn_protocols::prom_text::{PromTextOptions, decode_prom_text};

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

pub fn prom_text(data: &[u8]) {
    for limits in crate::limits() {
        for openmetrics in [false, true] {
            let opts = PromTextOptions {
                default_t: 1_700_000_000_000,
                extra_labels: Vec::new(),
                openmetrics,
            };
            let r = decode_prom_text(data, &opts, &limits);
            assert_eq!(r.bad_lines == 0, r.first_error.is_none());
            let mut text = String::new();
            for s in &r.batch.to_series() {
                assert!(!s.labels.is_empty() && !s.samples.is_empty());
                assert!(s.labels.len() <= limits.max_labels_per_series);
                for sample in &s.samples {
                    let pairs: Vec<String> = s
                        .labels
                        .iter()
                        .map(|l| format!("\"{}\"=\"{}\"", escape(&l.name), escape(&l.value)))
                        .collect();
                    text.push_str(&format!("{{{}}} {:?} {}\n", pairs.join(","), sample.v, sample.t));
                }
            }
            let again = decode_prom_text(text.as_bytes(), &PromTextOptions::default(), &DecodeLimits::default());
            assert_eq!(again.bad_lines, 0, "{text:?}: {:?}", again.first_error);
            let flat = |b: &cairn_protocols::WriteBatch| -> Vec<(String, i64, u64)> {
                b.to_series()
                    .iter()
                    .flat_map(|s| {
                        s.samples
                            .iter()
                            .map(move |x| (s.labels.to_string(), x.t, if x.v.is_nan() { 0 } else { x.v.to_bits() }))
                    })
                    .collect()
            };
            assert_eq!(flat(&again.batch), flat(&r.batch));
        }
    }
}
