//! The other nodes of a cluster as the HTTP API asks them, on a client's
//! behalf: for parts of a long range query (cairn-query-api's split.rs),
//! and for what each node keeps in memory only (metric metadata).

use std::future::Future;
use std::pin::Pin;

use axum::http::{HeaderMap, HeaderValue};

/// Marks a request one node makes of another for a client: it is answered
/// from this node alone (never asked of its peers in turn).
pub const PEER_HEADER: &str = "x-cairn-peer-request";
/// The client's request headers a peer request carries: who asks, for
/// which tenant.
const FORWARDED: &[&str] = &["authorization", "x-scope-orgid"];

/// A peer's answer: its HTTP status and body, or why there is none.
pub type PeerAnswer = Pin<Box<dyn Future<Output = Result<(u16, Vec<u8>), String>> + Send>>;

/// Which peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerKind {
    /// Those there to answer queries.
    Query,
    /// Every node (any takes writes).
    Any,
}

/// A cluster's other nodes, given to the routes as an extension.
pub trait Peers: Send + Sync {
    /// How many of `kind` are up now.
    fn count(&self, kind: PeerKind) -> usize;
    /// A GET of `path` on the `i`-th of `kind` (modulo [`Self::count`]),
    /// with `params` and `headers`, given up after `timeout`.
    fn get(
        &self,
        kind: PeerKind,
        i: usize,
        path: &'static str,
        params: Vec<(String, String)>,
        headers: HeaderMap,
        timeout: std::time::Duration,
    ) -> PeerAnswer;
}

/// The headers of a peer request made for a client's request with `client` headers.
pub fn peer_headers(client: &HeaderMap) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for name in FORWARDED {
        if let Some(v) = client.get(*name) {
            headers.insert(*name, v.clone());
        }
    }
    headers.insert(PEER_HEADER, HeaderValue::from_static("1"));
    headers
}

/// Whether a request is a peer's.
pub fn is_peer_request(headers: &HeaderMap) -> bool {
    headers.contains_key(PEER_HEADER)
}
