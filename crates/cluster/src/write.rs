//! A write through the cluster: each series to its owners on the ring,
//! acknowledged once a quorum of every series' owners stored it.

use std::collections::HashMap;
use std::sync::Arc;

use cairn_model::{EncodedLabels, HistogramSample, Labels, Sample, encode_canonical};
use cairn_storage::{Appender, CommitReport, RejectReason, StorageError, TenantId};
use tokio::task::JoinSet;

use crate::node::{Cluster, PeerError, down, now_ms, wait};
use crate::ring::{Ring, series_hash, write_quorum};
use crate::wire::{FramesWriter, WriteAnswer};

pub(crate) struct ClusterAppender {
    cluster: Arc<Cluster>,
    tenant: TenantId,
    ring: Arc<Ring>,
    /// One batch per owner: the member (index into the ring), its series
    /// frames, and which of this write's series they are.
    batches: Vec<(usize, FramesWriter, Vec<u32>)>,
    batch_of: HashMap<usize, usize>,
    /// How many owners each series has (fewer than the replication factor
    /// only when the ring has fewer ingesters).
    owners: Vec<u8>,
    samples: u64,
    owners_scratch: Vec<usize>,
    labels_scratch: Vec<u8>,
    /// The HA tracker's decision per (cluster, replica) seen in this write.
    ha_decisions: HashMap<(String, String), bool>,
    /// Samples of replicas that are not elected, dropped.
    ha_dropped: u64,
}

impl ClusterAppender {
    pub(crate) fn new(cluster: Arc<Cluster>, tenant: TenantId) -> Self {
        let ring = cluster.ring_for(&tenant);
        Self {
            cluster,
            tenant,
            ring,
            batches: Vec::new(),
            batch_of: HashMap::new(),
            owners: Vec::new(),
            samples: 0,
            owners_scratch: Vec::new(),
            labels_scratch: Vec::new(),
            ha_decisions: HashMap::new(),
            ha_dropped: 0,
        }
    }

    /// Sends a series to its owners.
    fn route(
        &mut self,
        labels: EncodedLabels<'_>,
        samples: &[Sample],
        histograms: &[HistogramSample],
    ) -> Result<(), StorageError> {
        let series = u32::try_from(self.owners.len())
            .map_err(|_| StorageError::LimitExceeded("too many series in one write".into()))?;
        let hash = series_hash(self.tenant.as_str(), labels.as_bytes());
        self.ring
            .owners(hash, self.cluster.config.replication_factor, &mut self.owners_scratch);
        self.owners.push(self.owners_scratch.len() as u8);
        self.samples += (samples.len() + histograms.len()) as u64;
        let (ts, vs): (Vec<i64>, Vec<f64>) = samples.iter().map(|s| (s.t, s.v)).unzip();
        for &owner in &self.owners_scratch {
            let slot = *self.batch_of.entry(owner).or_insert_with(|| {
                // This node's own share stays in the process: no use compressing it.
                let member = self.ring.member(owner);
                let compressed = member.reads_compressed_frames && !self.cluster.is_me(member);
                self.batches.push((owner, FramesWriter::new(compressed), Vec::new()));
                self.batches.len() - 1
            });
            let (_, frames, members) = &mut self.batches[slot];
            frames.push_with_histograms(labels.as_bytes(), &ts, &vs, histograms);
            members.push(series);
        }
        Ok(())
    }

    /// For a series of an HA pair (both the cluster and the replica label
    /// set): `None` when its replica is not the elected one, else its
    /// labels without the replica label. `Some(None)`: not of an HA pair.
    fn deduplicated(&mut self, labels: EncodedLabels<'_>) -> Result<Option<Option<Vec<u8>>>, StorageError> {
        let Some(ha) = self.cluster.ha.clone() else {
            return Ok(Some(None));
        };
        let (mut cluster, mut replica) = (None, None);
        for (name, value) in labels.pairs() {
            if name == ha.config.cluster_label {
                cluster = Some(value);
            } else if name == ha.config.replica_label {
                replica = Some(value);
            }
        }
        let (Some(cluster), Some(replica)) = (cluster, replica) else {
            return Ok(Some(None));
        };
        let key = (cluster.to_string(), replica.to_string());
        let accepted = match self.ha_decisions.get(&key) {
            Some(&a) => a,
            None => {
                let a = ha.accept(&self.cluster, &self.tenant, cluster, replica, now_ms());
                self.ha_decisions.insert(key, a);
                a
            }
        };
        if !accepted {
            return Ok(None);
        }
        let mut pairs: Vec<(&str, &str)> = labels.pairs().filter(|(n, _)| *n != ha.config.replica_label).collect();
        let mut encoded = Vec::new();
        encode_canonical(&mut pairs, &mut encoded).map_err(|e| StorageError::InvalidSeries {
            labels: labels.decode().to_string(),
            reason: e.to_string(),
        })?;
        Ok(Some(Some(encoded)))
    }
}

impl Appender for ClusterAppender {
    fn append(&mut self, labels: &Labels, samples: &[Sample]) -> Result<(), StorageError> {
        let mut encoded = std::mem::take(&mut self.labels_scratch);
        encoded.clear();
        labels.encode(&mut encoded);
        let result = EncodedLabels::new(&encoded)
            .map_err(|e| StorageError::InvalidSeries {
                labels: labels.to_string(),
                reason: e.to_string(),
            })
            .and_then(|l| self.append_encoded(l, samples));
        self.labels_scratch = encoded;
        result
    }

    fn append_encoded(&mut self, labels: EncodedLabels<'_>, samples: &[Sample]) -> Result<(), StorageError> {
        self.append_both(labels, samples, &[])
    }

    fn append_histograms(&mut self, labels: &Labels, samples: &[HistogramSample]) -> Result<(), StorageError> {
        let mut encoded = Vec::new();
        labels.encode(&mut encoded);
        let encoded = EncodedLabels::new(&encoded).map_err(|e| StorageError::InvalidSeries {
            labels: labels.to_string(),
            reason: e.to_string(),
        })?;
        for s in samples {
            s.h.validate().map_err(|e| StorageError::InvalidSeries {
                labels: labels.to_string(),
                reason: e.to_string(),
            })?;
        }
        self.append_both(encoded, &[], samples)
    }

    fn commit(self: Box<Self>) -> Result<CommitReport, StorageError> {
        let ha_dropped = self.ha_dropped;
        let mut report = self.send_to_owners()?;
        if ha_dropped > 0 {
            report.samples_rejected.insert(RejectReason::HaReplica, ha_dropped);
        }
        Ok(report)
    }

    fn rollback(self: Box<Self>) {}
}

impl ClusterAppender {
    /// Routes a series' floats and histograms, once the HA tracker let them
    /// through.
    fn append_both(
        &mut self,
        labels: EncodedLabels<'_>,
        samples: &[Sample],
        histograms: &[HistogramSample],
    ) -> Result<(), StorageError> {
        if labels.is_empty() {
            return Err(StorageError::InvalidSeries {
                labels: "{}".into(),
                reason: "a series needs at least one label".into(),
            });
        }
        match self.deduplicated(labels)? {
            None => {
                self.ha_dropped += (samples.len() + histograms.len()) as u64;
                Ok(())
            }
            Some(None) => self.route(labels, samples, histograms),
            Some(Some(without_replica)) => {
                let labels = EncodedLabels::new(&without_replica).map_err(|e| StorageError::InvalidSeries {
                    labels: labels.decode().to_string(),
                    reason: e.to_string(),
                })?;
                self.route(labels, samples, histograms)
            }
        }
    }

    fn send_to_owners(self: Box<Self>) -> Result<CommitReport, StorageError> {
        if self.owners.is_empty() {
            return Ok(CommitReport::default());
        }
        let quorum = write_quorum(self.cluster.config.replication_factor);
        if let Some(&fewest) = self.owners.iter().min()
            && usize::from(fewest) < quorum
        {
            return Err(StorageError::Unavailable(format!(
                "the ring has {fewest} active ingester(s) for some series; a write needs {quorum}"
            )));
        }
        let cluster = self.cluster.clone();
        let total = self.samples;
        // This node's own share is stored on this thread while the others'
        // are on their way: no hand-off to another thread and back.
        let mut batches = self.batches;
        let here = batches
            .iter()
            .position(|(m, ..)| self.ring.is_alive(*m) && cluster.is_me(self.ring.member(*m)));
        let (local_tx, local_rx) = tokio::sync::oneshot::channel();
        let local_body = here.map(|slot| std::mem::take(&mut batches[slot].1).finish());
        let outgoing = Outgoing {
            tenant: self.tenant.clone(),
            ring: self.ring,
            batches,
            owners: self.owners,
            quorum,
            total_samples: total,
        };
        let started = cluster.begin(replicate(cluster.clone(), outgoing, here.map(|slot| (slot, local_rx))));
        if let Some(body) = local_body {
            let stored = match cluster.local() {
                Some(local) => cluster
                    .hold_blocking(&self.tenant)
                    .and_then(|_holding| crate::routes::store(local.as_ref(), &self.tenant, &body))
                    .map(|(answer, _)| answer),
                None => Err(StorageError::Unavailable("this node's engine is not open yet".into())),
            };
            let _ = local_tx.send(stored.map_err(|e| PeerError::here(&cluster, e)));
        }
        wait(started)
    }
}

/// A write on its way to the owners of its series.
struct Outgoing {
    tenant: TenantId,
    ring: Arc<Ring>,
    /// Per owner (a ring member): its series frames and which series they are.
    batches: Vec<(usize, FramesWriter, Vec<u32>)>,
    /// Per series: how many owners it has.
    owners: Vec<u8>,
    quorum: usize,
    total_samples: u64,
}

/// This node's own share, stored by the thread that commits.
type LocalWrite = tokio::sync::oneshot::Receiver<Result<WriteAnswer, PeerError>>;

/// Sends each owner its batch and waits until every series is stored by
/// `quorum` owners, or can no longer be. Batches still in flight then go on
/// (their owners store them), so replicas converge.
async fn replicate(
    cluster: Arc<Cluster>,
    outgoing: Outgoing,
    mut here: Option<(usize, LocalWrite)>,
) -> Result<CommitReport, StorageError> {
    let Outgoing {
        tenant,
        ring,
        batches,
        owners,
        quorum,
        total_samples,
    } = outgoing;
    // Kept by every copy still on its way after the acknowledgement.
    let in_flight_mark = Arc::new(cluster.writes_in_flight.begin());
    let mut in_flight = JoinSet::new();
    let mut members_of = Vec::with_capacity(batches.len());
    for (slot, (member_index, frames, series)) in batches.into_iter().enumerate() {
        let member = ring.member(member_index).clone();
        members_of.push(series);
        let body = frames.finish();
        if !ring.is_alive(member_index) {
            let node = member.id.clone();
            in_flight.spawn(async move { (slot, Err(down(node))) });
        } else if let Some(stored) = here.take_if(|(at, _)| *at == slot) {
            in_flight.spawn(async move {
                let stored = stored.1.await.unwrap_or_else(|_| {
                    Err(PeerError {
                        node: member.id.clone(),
                        reason: "the local write was dropped".into(),
                        permanent: false,
                    })
                });
                (slot, stored)
            });
        } else {
            let sent = cluster.post(&member, "write", &tenant, body);
            let mark = in_flight_mark.clone();
            in_flight.spawn(async move {
                let _in_flight = mark;
                let answer = sent.await.and_then(|bytes| {
                    serde_json::from_slice::<WriteAnswer>(&bytes).map_err(|e| PeerError {
                        node: member.id.clone(),
                        reason: format!("unreadable answer: {e}"),
                        permanent: false,
                    })
                });
                (slot, answer)
            });
        }
    }
    let mut acks = vec![0u8; owners.len()];
    let mut pending = owners;
    let mut done = 0usize;
    let mut stored = WriteAnswer::default();
    let mut copies_sent = 0u64;
    let mut errors: Vec<PeerError> = Vec::new();
    while let Some(joined) = in_flight.join_next().await {
        let Ok((slot, answer)) = joined else { continue };
        let series = &members_of[slot];
        match answer {
            Ok(answer) => {
                stored.add(&answer);
                copies_sent +=
                    answer.samples_accepted + answer.out_of_retention + answer.too_far_in_future + answer.series_limit;
                for &s in series {
                    let s = s as usize;
                    acks[s] += 1;
                    pending[s] -= 1;
                    if usize::from(acks[s]) == quorum {
                        done += 1;
                    }
                }
                if done == acks.len() {
                    in_flight.detach_all();
                    let copies = if total_samples == 0 {
                        1.0
                    } else {
                        (copies_sent as f64 / total_samples as f64).max(1.0)
                    };
                    return Ok(stored.per_copy(copies));
                }
            }
            Err(e) => {
                let lost = series.iter().any(|&s| {
                    let s = s as usize;
                    pending[s] -= 1;
                    usize::from(acks[s]) < quorum && usize::from(acks[s] + pending[s]) < quorum
                });
                let permanent = e.permanent;
                errors.push(e);
                if permanent {
                    in_flight.detach_all();
                    return Err(StorageError::InvalidArgument(describe(&errors)));
                }
                if lost {
                    in_flight.detach_all();
                    return Err(StorageError::Unavailable(format!(
                        "fewer than {quorum} owners stored some series: {}",
                        describe(&errors)
                    )));
                }
            }
        }
    }
    Err(StorageError::Unavailable(format!(
        "the write reached no quorum: {}",
        describe(&errors)
    )))
}

fn describe(errors: &[PeerError]) -> String {
    errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; ")
}
