//! The other nodes of a cluster as the HTTP API asks them, on a client's
//! behalf: for parts of a long range query (cairn-query-api's split.rs),
//! and for what each node keeps in memory only (metric metadata, and the
//! share of the scrape targets and rule groups each node runs).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

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

    /// The cluster's own figures on this node, for `/metrics`.
    fn render_metrics(&self, e: &mut crate::Exposition);
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

/// Asks every peer of `kind` for `path` with `params`, on behalf of a
/// client whose request had `headers`: each peer's `data`, or why there is
/// none. Empty unless the request came from a client and there are peers.
pub async fn ask_every_peer(
    peers: Option<&Arc<dyn Peers>>,
    headers: &HeaderMap,
    kind: PeerKind,
    path: &'static str,
    params: Vec<(String, String)>,
) -> Vec<Result<serde_json::Value, String>> {
    let Some(peers) = peers.filter(|_| !is_peer_request(headers)) else {
        return Vec::new();
    };
    let asked: Vec<_> = (0..peers.count(kind))
        .map(|i| {
            let timeout = std::time::Duration::from_secs(10);
            tokio::spawn(peers.get(kind, i, path, params.clone(), peer_headers(headers), timeout))
        })
        .collect();
    let mut answers = Vec::with_capacity(asked.len());
    for call in asked {
        answers.push(match call.await {
            Ok(Ok((200, body))) => serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .map(|mut v| v["data"].take())
                .filter(|data| !data.is_null())
                .ok_or_else(|| "an unreadable answer".to_string()),
            Ok(Ok((status, _))) => Err(format!("status {status}")),
            Ok(Err(e)) => Err(e),
            Err(e) => Err(e.to_string()),
        });
    }
    answers
}
