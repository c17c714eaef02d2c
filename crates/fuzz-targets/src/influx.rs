//! InfluxDB line protocol of arbitrary bytes, in every precision and with
//! and without a `db`: it must return, never panic; every kept series
//! respects the limits, holds one sample and carries the `db` label when one
//! was given; and the count of bad lines matches the first error.

use cairn_protocols::influx::{InfluxOptions, Precision, decode_influx};

pub fn influx(data: &[u8]) {
    let precision = match data.first().map(|b| b % 6) {
        Some(0) => Precision::Seconds,
        Some(1) => Precision::Hours,
        Some(2) => Precision::Microseconds,
        Some(3) => Precision::Milliseconds,
        Some(4) => Precision::Minutes,
        _ => Precision::Nanoseconds,
    };
    for limits in crate::limits_with_labels(3) {
        for db in [None, Some("d".to_string())] {
            let opts = InfluxOptions {
                precision,
                db: db.clone(),
                extra_labels: Vec::new(),
                now_ms: 1_700_000_000_000,
            };
            let r = decode_influx(data, &opts, &limits);
            assert_eq!(r.bad_lines == 0, r.first_error.is_none());
            for s in &r.batch.to_series() {
                assert_eq!(s.samples.len(), 1);
                assert!(s.labels.len() <= limits.max_labels_per_series);
                assert!(s.labels.metric_name().is_some_and(|n| n.contains('_')));
                if db.is_some() {
                    assert!(s.labels.get("db").is_some());
                }
            }
        }
    }
}
