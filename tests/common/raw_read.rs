//! Every stored sample of the series whose name matches a regex, staleness
//! markers included, through remote read's samples answer (served by both
//! Prometheus and Cairn): the only API that shows the raw samples a scrape or
//! a rule evaluation wrote, with their exact timestamps.

use std::collections::BTreeMap;

use cairn_protocols::remote_read::{LabelMatcher, MatcherType, Query, ReadRequest, ReadResponse, ResponseType};
use prost::Message;

/// Labels → `(timestamp ms, value)` in time order.
pub type RawSeries = BTreeMap<BTreeMap<String, String>, Vec<(i64, f64)>>;

/// The samples in `[start_ms, end_ms]` of every series whose name matches
/// (`matches`) or does not match the regex `name`.
pub fn read(base_url: &str, name: &str, matches: bool, start_ms: i64, end_ms: i64) -> RawSeries {
    let kind = if matches { MatcherType::Re } else { MatcherType::Nre };
    let request = ReadRequest {
        queries: vec![Query {
            start_timestamp_ms: start_ms,
            end_timestamp_ms: end_ms,
            matchers: vec![LabelMatcher {
                r#type: kind as i32,
                name: "__name__".into(),
                value: name.into(),
            }],
            hints: None,
        }],
        accepted_response_types: vec![ResponseType::Samples as i32],
    };
    let body = snap::raw::Encoder::new()
        .compress_vec(&request.encode_to_vec())
        .expect("snappy");
    let resp = super::http_client(std::time::Duration::from_secs(30))
        .post(format!("{base_url}/api/v1/read"))
        .header("Content-Encoding", "snappy")
        .header("Content-Type", "application/x-protobuf")
        .header("X-Prometheus-Remote-Read-Version", "0.1.0")
        .body(body)
        .send()
        .expect("remote read");
    assert!(
        resp.status().is_success(),
        "remote read of {base_url}: {}",
        resp.status()
    );
    let bytes = resp.bytes().expect("body");
    let decoded = snap::raw::Decoder::new().decompress_vec(&bytes).expect("snappy answer");
    let answer = ReadResponse::decode(decoded.as_slice()).expect("ReadResponse");
    let mut out = RawSeries::new();
    for result in answer.results {
        for ts in result.timeseries {
            let labels = ts.labels.into_iter().map(|l| (l.name, l.value)).collect();
            let samples = ts.samples.into_iter().map(|s| (s.timestamp, s.value)).collect();
            out.insert(labels, samples);
        }
    }
    out
}
