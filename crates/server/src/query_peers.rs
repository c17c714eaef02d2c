//! A cluster's query nodes as the peers that evaluate parts of a long range
//! query another node received (`cairn_query_api::QueryPeers`).

use std::sync::Arc;

use axum::http::HeaderMap;
use cairn_cluster::Cluster;
use cairn_query_api::{PeerAnswer, QueryPeers};

pub struct ClusterQueryPeers(pub Arc<Cluster>);

impl QueryPeers for ClusterQueryPeers {
    fn count(&self) -> usize {
        self.0.query_peers().len()
    }

    fn query_range(&self, i: usize, params: Vec<(String, String)>, headers: HeaderMap) -> PeerAnswer {
        let peers = self.0.query_peers();
        if peers.is_empty() {
            return Box::pin(async { Err("no other node answers queries now".to_string()) });
        }
        let headers: Vec<(String, String)> = headers
            .iter()
            .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_string())))
            .collect();
        Box::pin(
            self.0
                .get(&peers[i % peers.len()], "/api/v1/query_range", &params, &headers),
        )
    }
}
