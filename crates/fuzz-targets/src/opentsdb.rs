//! OpenTSDB telnet lines and `/api/put` bodies of arbitrary bytes: decoding
//! must return, never panic; kept series respect the limits and hold one
//! finite sample each; every refused JSON point is reported; and the telnet
//! decoder owes a reply for every refused line.

use cairn_protocols::opentsdb::{TelnetReply, decode_put, decode_telnet};

pub fn opentsdb(data: &[u8]) {
    for limits in crate::limits_with_labels(2) {
        let t = decode_telnet(data, &limits);
        let errors = t.replies.iter().filter(|r| matches!(r, TelnetReply::Error(_))).count();
        assert_eq!(errors, t.import.bad_lines);
        let p = decode_put(data, &limits);
        assert_eq!(p.success, p.import.batch.series_count());
        assert!(p.errors.len() <= p.import.bad_lines);
        for s in t.import.batch.to_series().iter().chain(&p.import.batch.to_series()) {
            assert_eq!(s.samples.len(), 1);
            assert!(s.samples[0].v.is_finite());
            assert!(s.labels.len() <= limits.max_labels_per_series);
        }
    }
}
