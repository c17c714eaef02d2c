//! Cluster mode: many `cairn` nodes as one database.
//!
//! - Membership lives in etcd ([`membership`]): each node keeps a key under
//!   a lease; the members make the token ring ([`ring`]) that says which
//!   ingesters own a series.
//! - A write on any node ([`write`]) goes to each series' owners and is
//!   acknowledged once a quorum of them stored it; HA pairs of Prometheus
//!   are deduplicated on the way in ([`ha`]).
//! - A read on any node ([`read`]) asks every ingester, joins the replicas
//!   of each series, and fails (or, when allowed, warns) when too few
//!   answered for the answer to be complete.
//! - [`ClusterTenants`] is all of this behind the storage seam, so the HTTP
//!   API and the PromQL engine run over the cluster unchanged; [`routes`]
//!   are what ingesters answer their peers ([`wire`] formats).

mod catch_up;
mod config;
mod ha;
mod handoff;
mod membership;
mod node;
mod read;
pub mod ring;
mod routes;
mod tenants;
pub mod wire;
mod write;

pub use config::{ClusterConfig, Role};
pub use ha::HaConfig;
pub use node::Cluster;
pub use routes::{SECRET_HEADER, routes};
pub use tenants::ClusterTenants;

/// Where a node of a cluster keeps its part of a shared bucket: under
/// `nodes/<id>/` of the bucket's URL, the id's characters that an object
/// key would escape replaced by `_`.
pub fn node_bucket_url(url: &str, node_id: &str) -> String {
    let id: String = node_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}/nodes/{id}", url.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_node_has_a_prefix_of_its_own() {
        assert_eq!(
            super::node_bucket_url("s3://b/cairn/", "10.0.0.1:9090"),
            "s3://b/cairn/nodes/10.0.0.1_9090"
        );
        assert_eq!(super::node_bucket_url("file:///x", "a"), "file:///x/nodes/a");
    }
}
