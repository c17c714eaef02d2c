//! A cluster's other nodes as the HTTP API asks them (`cairn_http::peers`).

use std::sync::Arc;

use axum::http::HeaderMap;
use cairn_cluster::Cluster;
use cairn_http::peers::{PeerAnswer, PeerKind, Peers};

pub struct ClusterPeers(pub Arc<Cluster>);

impl ClusterPeers {
    fn of(&self, kind: PeerKind) -> Vec<cairn_cluster::ring::Member> {
        self.0.peers(kind == PeerKind::Query)
    }
}

impl Peers for ClusterPeers {
    fn count(&self, kind: PeerKind) -> usize {
        self.of(kind).len()
    }

    fn get(
        &self,
        kind: PeerKind,
        i: usize,
        path: &'static str,
        params: Vec<(String, String)>,
        headers: HeaderMap,
        timeout: std::time::Duration,
    ) -> PeerAnswer {
        let peers = self.of(kind);
        if peers.is_empty() {
            return Box::pin(async { Err("no other node is up".to_string()) });
        }
        let headers: Vec<(String, String)> = headers
            .iter()
            .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_string())))
            .collect();
        Box::pin(self.0.get(&peers[i % peers.len()], path, &params, &headers, timeout))
    }

    fn render_metrics(&self, e: &mut cairn_http::Exposition) {
        const NAME: &str = "cairn_cluster_peer_requests_refused_total";
        e.family(
            NAME,
            "Requests to this node's internal routes refused, none applied: without the cluster's secret, \
             over the body limit, or unreadable.",
            "counter",
        );
        for (reason, n) in self.0.refused_peer_requests() {
            e.sample(NAME, &[("reason", reason)], n as f64);
        }
        const BYTES: &str = "cairn_cluster_frame_bytes_total";
        const SAMPLES: &str = "cairn_cluster_frame_samples_total";
        let traffic = self.0.frame_traffic();
        e.family(
            BYTES,
            "Bytes of series frames this node received in peers' writes (route=write) and sent in answer to their \
             selects (route=select).",
            "counter",
        );
        for (route, bytes, _) in traffic {
            e.sample(BYTES, &[("route", route)], bytes as f64);
        }
        e.family(
            SAMPLES,
            "Samples in the series frames of cairn_cluster_frame_bytes_total.",
            "counter",
        );
        for (route, _, samples) in traffic {
            e.sample(SAMPLES, &[("route", route)], samples as f64);
        }
        const STORE_CPU: &str = "cairn_cluster_peer_write_cpu_seconds_total";
        e.family(
            STORE_CPU,
            "CPU time this node spent storing the series frames of peers' writes (ingestion that \
             cairn_ingest_cpu_seconds_total, counting clients' writes, leaves out).",
            "counter",
        );
        e.sample(STORE_CPU, &[], self.0.peer_write_cpu_seconds());
        const READS: &str = "cairn_cluster_read_fan_outs_total";
        const ASKED: &str = "cairn_cluster_read_fan_out_ingesters_total";
        let (reads, asked) = self.0.read_fan_outs();
        e.family(
            READS,
            "Reads (selects, label queries, deletes, status) this node sent to the ingesters that may hold a \
             tenant's series.",
            "counter",
        );
        e.sample(READS, &[], reads as f64);
        e.family(
            ASKED,
            "Ingesters the reads of cairn_cluster_read_fan_outs_total asked, in all: with shuffle sharding, \
             about the shard size per read whatever the cluster's size.",
            "counter",
        );
        e.sample(ASKED, &[], asked as f64);
    }
}
