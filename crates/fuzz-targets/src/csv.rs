//! CSV import of arbitrary bytes: the first line is the `format` argument,
//! the rest the body. Parsing must return, never panic, and kept series
//! respect the limits.

use cairn_protocols::csv::{decode_csv, parse_format};

pub fn csv(data: &[u8]) {
    let (format, body) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let format = String::from_utf8_lossy(format);
    // Also try a fixed valid format on the whole input.
    let fixed = parse_format("1:label:a,2:metric:m,3:time:rfc3339,4:metric:n").expect("valid");
    let mut formats = vec![fixed];
    if let Ok(columns) = parse_format(&format) {
        formats.push(columns);
    }
    for columns in &formats {
        for limits in crate::limits_with_labels(2) {
            for input in [body, data] {
                let r = decode_csv(input, columns, &[], 0, &limits);
                assert_eq!(r.bad_lines == 0, r.first_error.is_none());
                for s in &r.batch.to_series() {
                    assert!(s.labels.metric_name().is_some());
                    assert_eq!(s.samples.len(), 1);
                    assert!(s.labels.len() <= limits.max_labels_per_series + 1);
                }
            }
        }
    }
}
