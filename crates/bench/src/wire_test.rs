//! The bench's remote-write bodies decoded by an independent decoder: the
//! protobuf schema of Prometheus' `remote.proto` declared here with prost,
//! and snappy's block format from the `snap` crate (not Cairn's decoder).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::fleet::{Fleet, FleetConfig};
use crate::trace::Trace;
use crate::workload::{Workload, WorkloadConfig};

#[derive(Clone, PartialEq, prost::Message)]
struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    samples: Vec<Sample>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Label {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Sample {
    #[prost(double, tag = "1")]
    value: f64,
    #[prost(int64, tag = "2")]
    timestamp: i64,
}

#[test]
fn bodies_decode_with_prost_and_snap() {
    use prost::Message;
    let trace = Arc::new(Trace::embedded().unwrap());
    let fleet = Fleet::new(
        trace,
        FleetConfig {
            targets: 3,
            start_ms: 1_700_000_000_000,
            interval_ms: 15_000,
            jitter_ms: 10,
            job: "node_exporter".into(),
            seed: 3,
        },
    );
    let w = Workload::new(
        fleet,
        WorkloadConfig {
            churn_percent: 0.0,
            churn_interval_ms: 600_000,
            replicas: 2,
            reset_every_ms: 0,
            stages: Vec::new(),
        },
    );
    let labels = w.labels(2, 0, 1);
    let series = w.samples(2, 1, &labels, 0, 4);
    let body = crate::sender::encode(&series).unwrap();
    let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
    let req = WriteRequest::decode(raw.as_slice()).unwrap();
    assert_eq!(req.timeseries.len(), 507);
    let mut names = HashSet::new();
    for (ts, want) in req.timeseries.iter().zip(&series) {
        // Labels sorted by name, as the remote-write spec requires, no duplicates.
        assert!(ts.labels.windows(2).all(|p| p[0].name < p[1].name), "{:?}", ts.labels);
        let map: HashMap<&str, &str> = ts.labels.iter().map(|l| (l.name.as_str(), l.value.as_str())).collect();
        assert_eq!(map["instance"], "host-00002:9100");
        assert_eq!(map["job"], "node_exporter");
        assert_eq!(map["replica"], "r1");
        names.insert(map["__name__"].to_string());
        let got_labels: Vec<(&str, &str)> = ts.labels.iter().map(|l| (l.name.as_str(), l.value.as_str())).collect();
        let want_labels: Vec<(&str, &str)> = want
            .labels
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()))
            .collect();
        assert_eq!(got_labels, want_labels);
        assert_eq!(ts.samples.len(), 4);
        for (k, (s, ws)) in ts.samples.iter().zip(&want.samples).enumerate() {
            assert_eq!(s.timestamp, ws.t);
            assert_eq!(s.value.to_bits(), ws.v.to_bits());
            assert!((s.timestamp - w.fleet.grid_point(2, k as u64)).abs() <= 10);
        }
    }
    assert_eq!(names.len(), 285);
}
