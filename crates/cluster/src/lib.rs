//! Cluster mode: many `cairn` nodes as one database.
//!
//! - Membership lives in etcd ([`membership`]): each node keeps a key under
//!   a lease; the members make the token ring ([`ring`]) that says which
//!   ingesters own a series.
//! - A write on any node ([`write`]) goes to each series' owners and is
//!   acknowledged once a quorum of them stored it; HA pairs of Prometheus
//!   are deduplicated on the way in ([`ha`]).
//! - With shuffle sharding a tenant's series live on a shard of the
//!   ingesters ([`ring::Ring::for_tenant`]); each ingester registers in
//!   etcd which tenants' series it holds.
//! - A read on any node ([`read`]) asks every ingester that may hold the
//!   tenant's series, joins the replicas of each series, and fails (or,
//!   when allowed, warns) when too few answered for the answer to be
//!   complete.
//! - With a shared bucket, each ingester uploads the days that are over
//!   under a prefix of its own, and the compactor ([`compactor`]) merges
//!   those replicas into one copy, which every node reads; the ingesters
//!   then drop theirs ([`retire`]).
//! - [`ClusterTenants`] is all of this behind the storage seam, so the HTTP
//!   API and the PromQL engine run over the cluster unchanged; [`routes`]
//!   are what ingesters answer their peers ([`wire`] formats).

mod catch_up;
mod compacted;
mod compactor;
mod config;
mod fence;
mod ha;
mod handoff;
mod holders;
mod in_flight;
mod jobs;
pub mod layout;
mod membership;
mod node;
mod read;
mod restore;
mod retire;
pub mod ring;
mod routes;
mod tenants;
pub mod wire;
mod work;
mod write;

pub use compacted::CompactedDays;
pub use compactor::Compactor;
pub use config::{ClusterConfig, Role};
pub use ha::HaConfig;
pub use node::{Cluster, ShardSizes};
pub use routes::{SECRET_HEADER, routes};
pub use tenants::ClusterTenants;
pub use work::WorkOwners;

use cairn_model::{METRIC_NAME, MatchOp, Matcher, Sample};
use cairn_storage::{Series, StorageError};

/// Selects every series (all have a name): what copying all of a node's
/// series, or counting them, reads.
pub(crate) fn every_series() -> [Matcher; 1] {
    [Matcher::new(MatchOp::RegexMatch, METRIC_NAME, ".+").expect("a constant, valid regex")]
}

/// Reads `series`' samples into `samples` (`ts` and `vs`: scratch reused
/// from one series to the next).
pub(crate) fn read_samples(
    series: &mut Series,
    ts: &mut Vec<i64>,
    vs: &mut Vec<f64>,
    samples: &mut Vec<Sample>,
) -> Result<(), StorageError> {
    let range = series.samples.read_into(ts, vs)?;
    samples.clear();
    samples.extend(
        ts[range.clone()]
            .iter()
            .zip(&vs[range])
            .map(|(&t, &v)| Sample::new(t, v)),
    );
    Ok(())
}
