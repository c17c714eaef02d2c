//! A read through the cluster: asked of every ingester that may hold the
//! tenant's series (matchers do not say which series, hence which owners,
//! a select touches; shuffle sharding narrows it to the tenant's shard),
//! their answers merged, and the replicas of each series joined into one.
//!
//! Complete means: every series had enough owners answer that at least one
//! of them stored each acknowledged write (`ring::read_tolerance`). Fewer
//! fail the read, unless it allows a partial response, which then says
//! what was left out.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cairn_model::{HistogramSample, Labels, Matcher};
use cairn_storage::{
    Querier, ReadOptions, SelectHints, Series, SeriesSet, Storage, StorageError, TenantId, VecSampleBlocks,
};
use tokio::task::JoinSet;

use crate::node::{Cluster, PeerError, down, wait};
use crate::ring::{Member, read_tolerance};
use crate::wire::{SelectRequest, frames};

pub(crate) struct ClusterQuerier {
    pub(crate) cluster: Arc<Cluster>,
    pub(crate) tenant: TenantId,
    pub(crate) mint: i64,
    pub(crate) maxt: i64,
    pub(crate) options: ReadOptions,
}

impl ClusterQuerier {
    fn request(&self, hints: &SelectHints, matchers: &[Matcher]) -> SelectRequest {
        SelectRequest::new(self.mint, self.maxt, hints, matchers)
    }
}

impl Querier for ClusterQuerier {
    fn select(&self, hints: &SelectHints, matchers: &[Matcher]) -> Result<SeriesSet, StorageError> {
        let request = self.request(hints, matchers);
        let answers = fan_out(
            &self.cluster,
            &self.tenant,
            &self.options,
            Needed::Quorum,
            "select",
            &request,
            |local, t, r| crate::routes::select_here(local, t, r).map(bytes::Bytes::from),
        )?;
        let mut series = Vec::new();
        for body in &answers {
            for frame in frames(body)?.iter() {
                let frame = frame?;
                let (mut ts, mut vs) = (Vec::with_capacity(frame.len()), Vec::with_capacity(frame.len()));
                frame.read_into(&mut ts, &mut vs)?;
                series.push(ReplicaSeries {
                    labels: frame.labels.decode(),
                    ts,
                    vs,
                    histograms: frame.histograms,
                });
            }
        }
        let compacted = self.compacted(|storage| {
            let mut found = Vec::new();
            for s in storage.querier(self.mint, self.maxt)?.select(hints, matchers)? {
                let mut s = s?;
                let (mut ts, mut vs) = (Vec::new(), Vec::new());
                let range = s.samples.read_into(&mut ts, &mut vs)?;
                found.push(ReplicaSeries {
                    labels: s.labels,
                    ts: ts[range.clone()].to_vec(),
                    vs: vs[range].to_vec(),
                    histograms: s.histograms,
                });
            }
            Ok(found)
        })?;
        series.extend(compacted.into_iter().flatten());
        // Stable: replicas keep the order of the ingesters that sent them.
        series.sort_by(|a, b| a.labels.cmp(&b.labels));
        let mut merged: Vec<Series> = Vec::with_capacity(series.len());
        let mut last: Option<ReplicaSeries> = None;
        for replica in series {
            match &mut last {
                Some(l) if l.labels == replica.labels => l.join(&replica),
                _ => {
                    if let Some(l) = last.take() {
                        merged.push(l.into_series());
                    }
                    last = Some(replica);
                }
            }
        }
        if let Some(l) = last {
            merged.push(l.into_series());
        }
        if let Some(limit) = hints.limit {
            merged.truncate(limit);
        }
        Ok(Box::new(merged.into_iter().map(Ok)))
    }

    fn label_names(&self, matchers: &[Matcher], limit: Option<usize>) -> Result<Vec<String>, StorageError> {
        let request = SelectRequest {
            limit,
            ..self.request(&SelectHints::default(), matchers)
        };
        self.labels(request, limit)
    }

    fn label_values(
        &self,
        name: &str,
        matchers: &[Matcher],
        limit: Option<usize>,
    ) -> Result<Vec<String>, StorageError> {
        let request = SelectRequest {
            limit,
            label_name: Some(name.to_string()),
            ..self.request(&SelectHints::default(), matchers)
        };
        self.labels(request, limit)
    }
}

impl ClusterQuerier {
    /// `read` of each compactor's copy of old days that this node reads.
    /// A copy is the only one of the days it holds once the ingesters
    /// dropped theirs: failing to read it fails the read, unless a partial
    /// response is allowed.
    fn compacted<T>(&self, read: impl Fn(&dyn Storage) -> Result<T, StorageError>) -> Result<Vec<T>, StorageError> {
        let mut found = Vec::new();
        for tenants in self.cluster.compacted() {
            let answer = match tenants.get(&self.tenant) {
                Ok(Some(storage)) => read(storage.as_ref()).map(Some),
                Ok(None) => Ok(None),
                Err(e) => Err(e),
            };
            match answer {
                Ok(answer) => found.extend(answer),
                Err(e) if self.options.partial_response && e.kind() != cairn_storage::ErrorKind::BadData => {
                    let message = format!("partial response: the compacted days in the bucket did not answer: {e}");
                    self.options.warnings.push(message);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(found)
    }

    fn labels(&self, request: SelectRequest, limit: Option<usize>) -> Result<Vec<String>, StorageError> {
        let route = if request.label_name.is_some() {
            "label_values"
        } else {
            "label_names"
        };
        let answers = fan_out(
            &self.cluster,
            &self.tenant,
            &self.options,
            Needed::Quorum,
            route,
            &request,
            |local, t, r| {
                let names = crate::routes::labels_here(local, t, r)?;
                serde_json::to_vec(&names)
                    .map(bytes::Bytes::from)
                    .map_err(|e| StorageError::Unavailable(e.to_string()))
            },
        )?;
        let compacted = self.compacted(|storage| {
            let querier = storage.querier(self.mint, self.maxt)?;
            match &request.label_name {
                Some(name) => querier.label_values(name, &request.matchers()?, limit),
                None => querier.label_names(&request.matchers()?, limit),
            }
        })?;
        let mut all: BTreeSet<String> = compacted.into_iter().flatten().collect();
        for body in answers {
            let names: Vec<String> = serde_json::from_slice(&body)
                .map_err(|e| StorageError::Unavailable(format!("unreadable answer from a peer: {e}")))?;
            all.extend(names);
        }
        let mut out: Vec<String> = all.into_iter().collect();
        if let Some(limit) = limit {
            out.truncate(limit);
        }
        Ok(out)
    }
}

/// One replica of a series, or several already joined.
pub(crate) struct ReplicaSeries {
    pub labels: Labels,
    pub ts: Vec<i64>,
    pub vs: Vec<f64>,
    pub histograms: Vec<HistogramSample>,
}

impl ReplicaSeries {
    /// Adds what `other` holds and this one does not. Where both hold a
    /// timestamp, this one's sample stands whatever its kind, so the joined
    /// series never has a float and a histogram at one time.
    pub(crate) fn join(&mut self, other: &ReplicaSeries) {
        if self.histograms.is_empty() && other.histograms.is_empty() {
            (self.ts, self.vs) = join_replicas(&self.ts, &self.vs, &other.ts, &other.vs);
            return;
        }
        let has_histogram = |t: i64| self.histograms.binary_search_by_key(&t, |h| h.t).is_ok();
        let (ots, ovs): (Vec<i64>, Vec<f64>) = other
            .ts
            .iter()
            .zip(&other.vs)
            .filter(|(t, _)| !has_histogram(**t))
            .map(|(&t, &v)| (t, v))
            .unzip();
        let ohs: Vec<HistogramSample> = other
            .histograms
            .iter()
            .filter(|h| self.ts.binary_search(&h.t).is_err())
            .cloned()
            .collect();
        (self.ts, self.vs) = join_replicas(&self.ts, &self.vs, &ots, &ovs);
        self.histograms = join_histograms(&self.histograms, &ohs);
    }

    pub(crate) fn into_series(self) -> Series {
        Series {
            labels: self.labels,
            samples: Box::new(VecSampleBlocks::from_columns(self.ts, self.vs)),
            histograms: self.histograms,
        }
    }
}

/// [`join_replicas`] of histogram samples.
pub(crate) fn join_histograms(a: &[HistogramSample], b: &[HistogramSample]) -> Vec<HistogramSample> {
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x.t == y.t => {
                out.push(x.clone());
                (i, j) = (i + 1, j + 1);
            }
            (Some(x), Some(y)) if x.t < y.t => {
                out.push(x.clone());
                i += 1;
            }
            (Some(x), None) => {
                out.push(x.clone());
                i += 1;
            }
            (_, Some(y)) => {
                out.push(y.clone());
                j += 1;
            }
            (None, None) => break,
        }
    }
    out
}

/// Two replicas of a series as one: every timestamp either holds, once (a
/// replica that missed writes, being down, is completed by the other).
/// Where both hold a timestamp the first's value stands.
pub(crate) fn join_replicas(ats: &[i64], avs: &[f64], bts: &[i64], bvs: &[f64]) -> (Vec<i64>, Vec<f64>) {
    if ats == bts {
        return (ats.to_vec(), avs.to_vec());
    }
    let (mut ts, mut vs) = (Vec::with_capacity(ats.len().max(bts.len())), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < ats.len() || j < bts.len() {
        let take_a = j == bts.len() || (i < ats.len() && ats[i] <= bts[j]);
        if take_a {
            if j < bts.len() && ats[i] == bts[j] {
                j += 1;
            }
            ts.push(ats[i]);
            vs.push(avs[i]);
            i += 1;
        } else {
            ts.push(bts[j]);
            vs.push(bvs[j]);
            j += 1;
        }
    }
    (ts, vs)
}

/// Reads fanned out to the ingesters, and how many ingesters they asked in
/// all: what shuffle sharding keeps from growing with the cluster.
#[derive(Debug, Default)]
pub(crate) struct FanOuts {
    reads: AtomicU64,
    ingesters: AtomicU64,
}

impl FanOuts {
    fn observe(&self, ingesters: usize) {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.ingesters.fetch_add(ingesters as u64, Ordering::Relaxed);
    }

    /// `(reads, ingesters asked)`.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.reads.load(Ordering::Relaxed),
            self.ingesters.load(Ordering::Relaxed),
        )
    }
}

/// One peer's answer, on its way.
type PeerCall = std::pin::Pin<Box<dyn Future<Output = Result<bytes::Bytes, PeerError>> + Send>>;

/// How many failure domains may fail a fan-out.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Needed {
    /// As many as a complete read can do without (`ring::read_tolerance`).
    Quorum,
    /// None: every ingester must answer (a delete).
    All,
}

/// Asks every ingester that may hold the tenant's series (this node's
/// engine directly) and returns the answers, having checked that enough
/// answered.
pub(crate) fn fan_out(
    cluster: &Arc<Cluster>,
    tenant: &TenantId,
    options: &ReadOptions,
    needed: Needed,
    route: &'static str,
    request: &SelectRequest,
    here: fn(&dyn cairn_storage::Tenants, &TenantId, &SelectRequest) -> Result<bytes::Bytes, StorageError>,
) -> Result<Vec<bytes::Bytes>, StorageError> {
    let ring = cluster.ring();
    let targets: Vec<(Member, bool)> = ring
        .readers_of(tenant.as_str(), cluster.shard_size(tenant))
        .into_iter()
        .map(|i| (ring.member(i).clone(), ring.is_alive(i)))
        .collect();
    cluster.read_fan_out.observe(targets.len());
    if targets.is_empty() {
        return Err(StorageError::Unavailable(
            "the cluster's ring has no ingesters (is etcd reachable, has any ingester registered?)".into(),
        ));
    }
    let body = serde_json::to_vec(request).unwrap_or_default();
    let mut calls: Vec<(usize, PeerCall)> = Vec::new();
    let mut mine = None;
    for (i, (member, alive)) in targets.iter().enumerate() {
        if !alive {
            let node = member.id.clone();
            calls.push((i, Box::pin(async move { Err(down(node)) })));
        } else if cluster.is_me(member) {
            mine = Some(i);
        } else {
            calls.push((i, Box::pin(cluster.post(member, route, tenant, body.clone()))));
        }
    }
    let started = cluster.begin(async move {
        let mut set = JoinSet::new();
        for (i, call) in calls {
            set.spawn(async move { (i, call.await) });
        }
        let mut out = Vec::new();
        while let Some(joined) = set.join_next().await {
            // A task that failed leaves its target unanswered: counted below.
            if let Ok(r) = joined {
                out.push(r);
            }
        }
        out
    });
    // This node's own engine is read on this thread while the peers answer.
    let local = mine.map(|i| {
        let answer = match cluster.local() {
            Some(local) => here(local.as_ref(), tenant, request),
            None => Err(StorageError::Unavailable("this node's engine is not open yet".into())),
        };
        let answer = answer.map_err(|e| PeerError::here(cluster, e));
        (i, answer)
    });
    let mut results = wait(started);
    results.extend(local);
    for (i, (member, _)) in targets.iter().enumerate() {
        if !results.iter().any(|(at, _)| *at == i) {
            let reason = "its request task failed".to_string();
            results.push((
                i,
                Err(PeerError {
                    node: member.id.clone(),
                    reason,
                    permanent: false,
                }),
            ));
        }
    }
    let mut answers = Vec::with_capacity(results.len());
    let mut failed: Vec<PeerError> = Vec::new();
    for (i, result) in results {
        match result {
            Ok(body) => answers.push((i, body)),
            Err(e) if e.permanent => return Err(StorageError::InvalidArgument(e.reason)),
            Err(e) => failed.push(e),
        }
    }
    if !failed.is_empty() {
        failed.sort_by(|a, b| a.node.cmp(&b.node));
        let member_index = |id: &str| ring.members().iter().position(|m| m.id == id);
        let domains: BTreeSet<&str> = failed
            .iter()
            .filter_map(|e| member_index(&e.node).map(|m| ring.domain_of(m, cluster.config.replication_factor)))
            .collect();
        let tolerated = match needed {
            Needed::Quorum => read_tolerance(cluster.config.replication_factor),
            Needed::All => 0,
        };
        let what = failed.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; ");
        if domains.len() > tolerated {
            let message = format!(
                "{} of {} ingesters did not answer, more than the {tolerated} a complete answer can do without: {what}",
                failed.len(),
                targets.len()
            );
            if !options.partial_response {
                return Err(StorageError::Unavailable(message));
            }
            options.warnings.push(format!("partial response: {message}"));
        }
    }
    // In ring order, so replicas join the same way on every node.
    answers.sort_by_key(|(i, _)| *i);
    Ok(answers.into_iter().map(|(_, b)| b).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_join_into_every_timestamp_once() {
        let (ts, vs) = join_replicas(&[1, 3, 5], &[1.0, 3.0, 5.0], &[2, 3, 6], &[2.0, 30.0, 6.0]);
        assert_eq!(ts, [1, 2, 3, 5, 6]);
        assert_eq!(vs, [1.0, 2.0, 3.0, 5.0, 6.0]);
        let (ts, _) = join_replicas(&[], &[], &[4], &[4.0]);
        assert_eq!(ts, [4]);
        let (ts, _) = join_replicas(&[7, 8], &[7.0, 8.0], &[7, 8], &[7.0, 8.0]);
        assert_eq!(ts, [7, 8]);
    }

    #[test]
    fn a_timestamp_keeps_the_first_replicas_sample_whatever_its_kind() {
        let h = |t: i64| HistogramSample::new(t, cairn_model::Histogram::default());
        let mut a = ReplicaSeries {
            labels: Labels::default(),
            ts: vec![1, 3],
            vs: vec![1.0, 3.0],
            histograms: vec![h(2)],
        };
        a.join(&ReplicaSeries {
            labels: Labels::default(),
            ts: vec![2, 4],
            vs: vec![20.0, 4.0],
            histograms: vec![h(3), h(5)],
        });
        assert_eq!((a.ts, a.vs), (vec![1, 3, 4], vec![1.0, 3.0, 4.0]));
        assert_eq!(a.histograms.iter().map(|h| h.t).collect::<Vec<_>>(), [2, 5]);
    }

    #[test]
    fn histogram_replicas_join_the_same_way() {
        let h = |t: i64, count: f64| {
            HistogramSample::new(
                t,
                cairn_model::Histogram {
                    count,
                    ..cairn_model::Histogram::default()
                },
            )
        };
        let joined = join_histograms(&[h(1, 1.0), h(3, 3.0)], &[h(2, 2.0), h(3, 30.0), h(6, 6.0)]);
        let got: Vec<(i64, f64)> = joined.iter().map(|s| (s.t, s.h.count)).collect();
        assert_eq!(got, [(1, 1.0), (2, 2.0), (3, 3.0), (6, 6.0)]);
        assert_eq!(join_histograms(&[], &[h(4, 4.0)]).len(), 1);
    }
}
