//! The compactors' jobs, in etcd: a lease on each tenant's day being
//! compacted, so that one compactor at a time compacts it, and the record
//! of each job in progress, so that the next holder of the day's lease can
//! finish it or undo it (compactor.rs says how).
//!
//! A lease key lives under its compactor's own etcd lease, so it goes when
//! the compactor dies or is cut off from etcd for longer than
//! `--cluster.lease-ttl`. Holding is checked by the key's creation revision,
//! which etcd never gives twice: a compactor that lost the lease and took it
//! again holds it under another revision.
//!
//! A job's record outlives its compactor, and every change to it is fenced
//! by the writer's lease: a compactor paused past its lease cannot change
//! what the one that took the day over has read.

use cairn_storage::{StorageError, TenantId};
use cairn_tsdb::Day;
use etcd_client::{Compare, CompareOp, GetOptions, PutOptions, Txn, TxnOp};
use serde::{Deserialize, Serialize};

use crate::layout::NotedPart;
use crate::membership::connect;
use crate::node::Cluster;

/// A lease taken: its key and the revision etcd created it at.
#[derive(Debug)]
pub(crate) struct JobLease {
    key: String,
    revision: i64,
}

impl JobLease {
    /// The condition that this lease is still the one held.
    fn held(&self) -> Compare {
        Compare::create_revision(self.key.clone(), CompareOp::Equal, self.revision)
    }
}

/// A compactor's job on one tenant's day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Job {
    pub stage: Stage,
    /// The parts of the day the compactor's bucket held when the job began.
    pub before: Vec<NotedPart>,
    /// Every row the job writes has a sequence number at or above this one.
    pub min_seq: u64,
    /// The nodes' parts the job copies.
    pub sources: Vec<JobSource>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Stage {
    /// Copying and uploading: what the job made so far is not yet the day's.
    Copying,
    /// The copy is all in the bucket: it is the day's, and the nodes may
    /// be told so.
    Uploaded,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JobSource {
    pub node: String,
    pub parts: Vec<NotedPart>,
}

impl Job {
    /// Whether `part`, of the compactor's day, was made by this job: after
    /// it began, of its rows only. A part that also holds earlier rows (a
    /// merge that applied a delete) is not.
    pub fn made(&self, part: &cairn_bucket::ObjectInfo) -> bool {
        !self.before.iter().any(|b| b.is(part))
            && cairn_tsdb::part_seq_range(&part.key).is_some_and(|(min, _)| min >= self.min_seq)
    }
}

fn unavailable(what: &'static str) -> impl FnOnce(etcd_client::Error) -> StorageError {
    move |e| StorageError::Unavailable(format!("etcd: cannot {what}: {e}"))
}

fn lease_key(cluster: &Cluster, tenant: &TenantId, day: Day) -> String {
    format!("{}leases/{}/{day}", cluster.config.compaction_prefix(), tenant.as_str())
}

fn jobs_prefix(cluster: &Cluster) -> String {
    format!("{}jobs/", cluster.config.compaction_prefix())
}

fn job_key(cluster: &Cluster, compactor: &str, tenant: &TenantId, day: Day) -> String {
    format!("{}{compactor}/{}/{day}", jobs_prefix(cluster), tenant.as_str())
}

/// Takes the lease on `tenant`'s `day` for this node, unless another
/// holds it (`None`); needs this node's own etcd lease (registered).
pub(crate) fn take(cluster: &Cluster, tenant: &TenantId, day: Day) -> Result<Option<JobLease>, StorageError> {
    let Some(own) = *cluster.lease.lock() else {
        return Ok(None);
    };
    let key = lease_key(cluster, tenant, day);
    let endpoints = cluster.config.etcd_endpoints.clone();
    let value = cluster.config.node_id.clone().into_bytes();
    let txn_key = key.clone();
    let answer = cluster
        .block_on(async move {
            let mut client = connect(&endpoints).await?;
            let txn = Txn::new()
                .when([Compare::create_revision(txn_key.clone(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(txn_key, value, Some(PutOptions::new().with_lease(own)))]);
            client.txn(txn).await
        })
        .map_err(unavailable("take a compaction lease"))?;
    if !answer.succeeded() {
        return Ok(None);
    }
    let revision = answer.header().map_or(0, |h| h.revision());
    Ok(Some(JobLease { key, revision }))
}

/// Gives the lease back (a lease lost meanwhile, now another's, is kept).
pub(crate) fn release(cluster: &Cluster, lease: JobLease) {
    let endpoints = cluster.config.etcd_endpoints.clone();
    let released = cluster.block_on(async move {
        let mut client = connect(&endpoints).await?;
        let txn = Txn::new()
            .when([lease.held()])
            .and_then([TxnOp::delete(lease.key, None)]);
        client.txn(txn).await
    });
    if let Err(e) = released {
        // It goes with this node's etcd lease at the latest.
        tracing::warn!(error = %e, "etcd: cannot release a compaction lease");
    }
}

/// Every job recorded: `(compactor, tenant, day)`.
pub(crate) fn recorded(cluster: &Cluster) -> Result<Vec<(String, TenantId, Day)>, StorageError> {
    let (endpoints, prefix) = (cluster.config.etcd_endpoints.clone(), jobs_prefix(cluster));
    let listed = prefix.clone();
    let answer = cluster
        .block_on(async move {
            let mut client = connect(&endpoints).await?;
            client
                .get(listed, Some(GetOptions::new().with_prefix().with_keys_only()))
                .await
        })
        .map_err(unavailable("list the compaction jobs"))?;
    Ok(answer
        .kvs()
        .iter()
        .filter_map(|kv| {
            let rest = kv.key_str().ok()?.strip_prefix(&prefix)?;
            let mut parts = rest.split('/');
            let (Some(compactor), Some(tenant), Some(day), None) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return None;
            };
            Some((compactor.to_string(), TenantId::new(tenant).ok()?, Day::parse(day)?))
        })
        .collect())
}

/// `compactor`'s job on `tenant`'s `day`, if it recorded one.
pub(crate) fn read(
    cluster: &Cluster,
    compactor: &str,
    tenant: &TenantId,
    day: Day,
) -> Result<Option<Job>, StorageError> {
    let (endpoints, key) = (
        cluster.config.etcd_endpoints.clone(),
        job_key(cluster, compactor, tenant, day),
    );
    let answer = cluster
        .block_on(async move {
            let mut client = connect(&endpoints).await?;
            client.get(key, None).await
        })
        .map_err(unavailable("read a compaction job"))?;
    let Some(kv) = answer.kvs().first() else {
        return Ok(None);
    };
    serde_json::from_slice(kv.value())
        .map(Some)
        .map_err(|e| StorageError::Corrupt {
            path: format!("etcd {}", kv.key_str().unwrap_or_default()).into(),
            reason: format!("not a compaction job: {e}"),
        })
}

/// Records this compactor's `job` on `tenant`'s `day` (`Some`), or deletes
/// `compactor`'s record (`None`), while `lease` is held; false when it is
/// not held any more, and nothing changed.
pub(crate) fn write(
    cluster: &Cluster,
    lease: &JobLease,
    compactor: &str,
    tenant: &TenantId,
    day: Day,
    job: Option<&Job>,
) -> Result<bool, StorageError> {
    let key = job_key(cluster, compactor, tenant, day);
    let change = match job {
        Some(job) => {
            let value = serde_json::to_vec(job).map_err(|e| StorageError::InvalidArgument(e.to_string()))?;
            TxnOp::put(key, value, None)
        }
        None => TxnOp::delete(key, None),
    };
    let (endpoints, held) = (cluster.config.etcd_endpoints.clone(), lease.held());
    let answer = cluster
        .block_on(async move {
            let mut client = connect(&endpoints).await?;
            client.txn(Txn::new().when([held]).and_then([change])).await
        })
        .map_err(unavailable("record a compaction job"))?;
    Ok(answer.succeeded())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_bucket::ObjectInfo;

    fn part(min: u64, max: u64, version: &str) -> ObjectInfo {
        ObjectInfo {
            key: format!("tenants/a/partitions/2026-11-20/part-{min:020}-{max:020}.cpart"),
            size: 1,
            version: version.into(),
        }
    }

    #[test]
    fn a_job_made_the_parts_of_its_rows_only() {
        let earlier = part(1, 40, "v1");
        let job = Job {
            stage: Stage::Copying,
            before: vec![NotedPart::from(&earlier)],
            min_seq: 41,
            sources: Vec::new(),
        };
        assert!(!job.made(&earlier), "there before it began");
        assert!(job.made(&part(41, 90, "v1")));
        assert!(job.made(&part(60, 61, "v7")));
        // A merge of earlier rows with the job's (a delete applied) holds
        // rows no one else has: it is not the job's to retire.
        assert!(!job.made(&part(1, 90, "v2")));
        assert!(!job.made(&ObjectInfo {
            key: "tenants/a/partitions/2026-11-20/index-3.cidx".into(),
            ..part(41, 41, "v1")
        }));
    }

    #[test]
    fn a_job_reads_back_as_written() {
        let job = Job {
            stage: Stage::Uploaded,
            before: vec![NotedPart::from(&part(1, 2, "e1"))],
            min_seq: 3,
            sources: vec![JobSource {
                node: "node-1".into(),
                parts: vec![NotedPart::from(&part(5, 9, "e2"))],
            }],
        };
        let json = serde_json::to_string(&job).unwrap();
        assert!(json.contains(r#""stage":"uploaded""#), "{json}");
        assert_eq!(serde_json::from_str::<Job>(&json).unwrap(), job);
    }
}
