//! This node's view of the cluster: its settings, the ring it last read,
//! its own engine when it stores data, and the calls it makes to peers.
//!
//! Storage is synchronous (threads and locks); peers are reached with an
//! async HTTP client, so requests run on a small runtime of the cluster's
//! own and the calling thread waits for their outcome, as the bucket's
//! client does.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use cairn_storage::{StorageError, TenantId, Tenants};
use cairn_tsdb::TsdbTenants;
use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;

use crate::config::ClusterConfig;
use crate::holders::{HoldGuard, Holdings};
use crate::ring::{Member, NodeState, Ring};
use crate::routes::{SECRET_HEADER, path};

/// Under `ClusterConfig::state_dir`: when the node last renewed its lease.
const ALIVE_FILE: &str = "cluster-last-alive";
/// A failed catch-up is tried again this many times, 1 s later, then
/// twice as late each time.
const CATCH_UP_RETRIES: u32 = 5;

/// One node of the cluster.
pub struct Cluster {
    pub(crate) config: ClusterConfig,
    /// Taken only by `Drop`.
    runtime: Option<tokio::runtime::Runtime>,
    http: reqwest::Client,
    ring: RwLock<Arc<Ring>>,
    /// This node's engine, once opened (ingesters and the compactor).
    local: OnceLock<Arc<TsdbTenants>>,
    /// The compactor's copy of old days as this node reads it (with a
    /// shared bucket): a read-only view of it, or the compactor's engine.
    compacted: OnceLock<Arc<crate::CompactedDays>>,
    leaving: AtomicBool,
    handed_off: AtomicBool,
    /// Registrations so far, and the one the last catch-up followed.
    pub(crate) registrations: AtomicU64,
    /// When this node last renewed its lease (ms; 0: never), kept in
    /// `ALIVE_FILE` across restarts.
    pub(crate) last_alive_ms: AtomicI64,
    /// `last_alive_ms` as it was at the latest registration: where its catch-up starts.
    pub(crate) catch_up_since: AtomicI64,
    caught_up: AtomicU64,
    pub(crate) deregistered: AtomicBool,
    pub(crate) lease: Mutex<Option<i64>>,
    pub(crate) membership_changed: Notify,
    pub(crate) ha: Option<Arc<crate::ha::HaTracker>>,
    /// Who shares the monitoring work, as the ring says now.
    pub(crate) work: tokio::sync::watch::Sender<crate::work::WorkOwners>,
    /// From when this node takes its share of the monitoring work, set at
    /// each registration.
    pub(crate) monitors_from_ms: AtomicI64,
    /// Cut off from etcd while the others reach it: no share of the
    /// monitoring work (see `fence.rs`).
    pub(crate) fenced: Arc<AtomicBool>,
    pub(crate) refused_peer_requests: crate::routes::RefusedPeerRequests,
    /// Whole reads of the members from etcd: one per watch started.
    pub(crate) ring_reads: AtomicU64,
    pub(crate) frame_traffic: crate::routes::FrameTraffic,
    /// Writes on their way to their owners, also after their acknowledgement.
    pub(crate) writes_in_flight: Arc<crate::in_flight::WritesInFlight>,
    pub(crate) read_fan_out: crate::read::FanOuts,
    /// Tenants' own shard sizes (their limits; 0 where they set none).
    shard_sizes: RwLock<Option<ShardSizes>>,
    /// Tenants this node registered in etcd as holding some of their series.
    pub(crate) holdings: Arc<Holdings>,
}

/// Each tenant's own shard size; 0 where it has none.
pub type ShardSizes = Arc<dyn Fn(&TenantId) -> usize + Send + Sync>;

/// Why a request to a peer failed.
#[derive(Debug, Clone)]
pub struct PeerError {
    pub node: String,
    pub reason: String,
    /// This node's own engine refused the request as bad data: no other
    /// owner can take it either.
    pub permanent: bool,
}

impl PeerError {
    /// This node's own engine failing a request.
    pub(crate) fn here(cluster: &Cluster, e: StorageError) -> Self {
        Self {
            node: cluster.config.node_id.clone(),
            permanent: e.kind() == cairn_storage::ErrorKind::BadData,
            reason: e.to_string(),
        }
    }
}

impl std::fmt::Display for PeerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.node, self.reason)
    }
}

impl Cluster {
    /// Joins the cluster: starts following the ring in etcd and, once
    /// [`Self::set_local`] gives it its engine, registers as an ingester
    /// (a routing node registers at once).
    pub fn start(config: ClusterConfig) -> Result<Arc<Self>, StorageError> {
        if !(1..=u8::MAX as usize).contains(&config.replication_factor) {
            return Err(StorageError::InvalidArgument(
                "the replication factor must be between 1 and 255".into(),
            ));
        }
        if config
            .ha
            .as_ref()
            .is_some_and(|ha| ha.failover_timeout < std::time::Duration::from_secs(1))
        {
            return Err(StorageError::InvalidArgument(
                "the HA tracker's failover timeout must be at least 1s".into(),
            ));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("cairn-cluster")
            .enable_all()
            .build()
            .map_err(|e| StorageError::Unavailable(format!("cannot start the cluster's runtime: {e}")))?;
        // reqwest is built with rustls (the bucket's client) and wants a
        // provider before any client exists, even for plain HTTP.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut http = reqwest::Client::builder()
            .timeout(config.peer_timeout)
            .connect_timeout(config.peer_timeout.min(std::time::Duration::from_secs(2)))
            .pool_max_idle_per_host(64)
            .tcp_nodelay(true);
        if let Some(tls) = &config.peer_tls {
            http = http.https_only(true).tls_backend_preconfigured((**tls).clone());
        }
        let http = http
            .build()
            .map_err(|e| StorageError::Unavailable(format!("cannot build the peers' HTTP client: {e}")))?;
        let last_alive_ms = config
            .state_dir
            .as_ref()
            .and_then(|d| std::fs::read_to_string(d.join(ALIVE_FILE)).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        let config_ha = config.ha.clone();
        let cluster = Arc::new(Self {
            config,
            runtime: Some(runtime),
            http,
            ring: RwLock::default(),
            local: OnceLock::new(),
            compacted: OnceLock::new(),
            leaving: AtomicBool::new(false),
            handed_off: AtomicBool::new(false),
            registrations: AtomicU64::new(0),
            last_alive_ms: AtomicI64::new(last_alive_ms),
            catch_up_since: AtomicI64::new(0),
            caught_up: AtomicU64::new(0),
            deregistered: AtomicBool::new(false),
            lease: Mutex::new(None),
            membership_changed: Notify::new(),
            ha: config_ha.map(|c| Arc::new(crate::ha::HaTracker::new(c))),
            work: tokio::sync::watch::Sender::new(Default::default()),
            monitors_from_ms: AtomicI64::new(0),
            fenced: Arc::default(),
            refused_peer_requests: Default::default(),
            ring_reads: AtomicU64::new(0),
            frame_traffic: Default::default(),
            writes_in_flight: Default::default(),
            read_fan_out: Default::default(),
            shard_sizes: RwLock::default(),
            holdings: Arc::default(),
        });
        if let Some(ha) = &cluster.ha {
            cluster
                .runtime()
                .spawn(crate::ha::keep_elections_fresh(cluster.clone(), ha.clone()));
        }
        cluster.runtime().spawn(crate::membership::follow_ring(cluster.clone()));
        if !cluster.config.role.stores() {
            cluster
                .runtime()
                .spawn(crate::membership::keep_registered(cluster.clone()));
        }
        if cluster.config.monitors {
            cluster
                .runtime()
                .spawn(crate::fence::fence_while_cut_off(cluster.clone()));
        }
        Ok(cluster)
    }

    /// Gives a node its opened engine. An ingester then registers, takes
    /// its share of the ring, catches up on what it missed while down,
    /// drops its copies of the days the compactor holds, and restores
    /// damaged blocks from the other replicas.
    pub fn set_local(self: &Arc<Self>, local: Arc<TsdbTenants>) {
        if self.local.set(local.clone()).is_err() || !self.config.role.stores() {
            return;
        }
        self.runtime().spawn(crate::membership::keep_registered(self.clone()));
        self.runtime().spawn(crate::holders::drop_unneeded(self.clone()));
        let cluster = self.clone();
        std::thread::spawn(move || cluster.catch_up_after_registrations());
        let cluster = self.clone();
        let tenants = local.clone();
        std::thread::spawn(move || crate::retire::retire_compacted(cluster, tenants));
        let cluster = self.clone();
        std::thread::spawn(move || crate::restore::restore_damaged_blocks(cluster, local));
    }

    /// Gives the node the compactor's copy of old days, which its reads
    /// then take in.
    pub fn set_compacted(&self, compacted: Arc<crate::CompactedDays>) {
        let _ = self.compacted.set(compacted);
    }

    /// Every copy of compacted days this node reads (none without a bucket).
    pub(crate) fn compacted(&self) -> Vec<Arc<dyn Tenants>> {
        self.compacted.get().map(|c| c.all()).unwrap_or_default()
    }

    /// Catches up after every registration: the first after a start (a
    /// crash, a restart), and each after the lease was lost (a partition,
    /// an etcd outage), since writes may have gone to the others meanwhile.
    fn catch_up_after_registrations(self: Arc<Self>) {
        let mut done = 0;
        loop {
            let registrations = self.registrations.load(Ordering::Acquire);
            if registrations == done {
                std::thread::sleep(std::time::Duration::from_millis(100));
                continue;
            }
            // Registered first, so writes arrive while the past is fetched;
            // and the ring read since, so the peers are known.
            std::thread::sleep(self.config.ring_propagation * 2);
            let now = now_ms();
            let since = self.catch_up_since.load(Ordering::Acquire);
            let mut attempt = 0;
            loop {
                match crate::catch_up::catch_up(&self, since, now) {
                    Ok(samples) => tracing::info!(samples, "caught up from the peers"),
                    Err(e) if attempt < CATCH_UP_RETRIES => {
                        tracing::warn!(error = %e, attempt, "catch-up failed; trying again");
                        std::thread::sleep(std::time::Duration::from_secs(1 << attempt));
                        attempt += 1;
                        continue;
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "catch-up failed; reads stay complete through the other replicas")
                    }
                }
                break;
            }
            done = registrations;
            self.caught_up.store(done, Ordering::Release);
        }
    }

    /// Whether the catch-up after the latest registration is done.
    pub fn caught_up(&self) -> bool {
        let done = self.caught_up.load(Ordering::Acquire);
        done > 0 && done == self.registrations.load(Ordering::Acquire)
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        self.runtime.as_ref().expect("the runtime lives as long as the cluster")
    }

    pub fn config(&self) -> &ClusterConfig {
        &self.config
    }

    pub(crate) fn local(&self) -> Option<Arc<dyn Tenants>> {
        self.local.get().map(|l| l.clone() as Arc<dyn Tenants>)
    }

    pub fn ring(&self) -> Arc<Ring> {
        self.ring.read().clone()
    }

    /// How many ingesters hold `tenant`'s series; 0: all of them. Never
    /// fewer than the replication factor, which needs as many owners.
    pub(crate) fn shard_size(&self, tenant: &TenantId) -> usize {
        let own = self.shard_sizes.read().as_ref().map_or(0, |of| of(tenant));
        match if own > 0 { own } else { self.config.shard_size } {
            0 => 0,
            size => size.max(self.config.replication_factor),
        }
    }

    /// Sets the tenants' own shard sizes (from their limits); where they
    /// give 0, `--cluster.shard-size` holds.
    pub fn set_shard_sizes(&self, sizes: ShardSizes) {
        *self.shard_sizes.write() = Some(sizes);
    }

    /// The ring `tenant`'s series are written on: its shard's.
    pub(crate) fn ring_for(&self, tenant: &TenantId) -> Arc<Ring> {
        self.ring().for_tenant(tenant.as_str(), self.shard_size(tenant))
    }

    /// Registers this node in etcd as holding some of `tenant`'s series,
    /// unless it is: before it stores the first of them, so that reads find
    /// them after the tenant's shard changes. The guard keeps the
    /// registration while they are being stored.
    pub(crate) async fn hold(&self, tenant: &TenantId) -> Result<HoldGuard, StorageError> {
        let config = &self.config;
        let publish = || async move {
            crate::membership::publish_holder(config, std::slice::from_ref(tenant))
                .await
                .map_err(|e| {
                    StorageError::Unavailable(format!(
                        "cannot register in etcd as holding tenant {tenant}'s series: {e}"
                    ))
                })
        };
        self.holdings.hold(tenant, publish).await
    }

    /// [`Self::hold`], from a thread that may block.
    pub(crate) fn hold_blocking(self: &Arc<Self>, tenant: &TenantId) -> Result<HoldGuard, StorageError> {
        if let Some(guard) = self.holdings.try_hold(tenant) {
            return Ok(guard);
        }
        let (cluster, tenant) = (self.clone(), tenant.clone());
        self.block_on(async move { cluster.hold(&tenant).await })
    }

    /// Registers this node as holding the tenants its engine holds series
    /// of, all at once.
    pub(crate) async fn hold_local_tenants(&self) -> Result<(), etcd_client::Error> {
        let Some(local) = self.local() else { return Ok(()) };
        let every = local.list();
        let listed = every.clone();
        let held = tokio::task::spawn_blocking(move || {
            let tenants = listed.into_iter();
            tenants
                .filter(|t| crate::holders::holds_series(local.as_ref(), t))
                .collect()
        });
        // Every tenant when it cannot be told which hold series.
        let tenants: Vec<TenantId> = held.await.unwrap_or(every);
        crate::membership::publish_holder(&self.config, &tenants).await?;
        self.holdings.registered(&tenants);
        Ok(())
    }

    pub(crate) fn set_ring(&self, ring: Ring) {
        let (members_changed, holders_changed) = {
            let old = self.ring.read();
            (
                old.members() != ring.members()
                    || (0..ring.members().len()).any(|i| old.is_alive(i) != ring.is_alive(i)),
                old.holders() != ring.holders(),
            )
        };
        if members_changed {
            let ids: Vec<String> = ring
                .members()
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    format!(
                        "{}({}{})",
                        m.id,
                        m.state.name(),
                        if ring.is_alive(i) { "" } else { ", down" }
                    )
                })
                .collect();
            tracing::info!(members = ?ids, "cluster ring changed");
        }
        if members_changed || holders_changed {
            let owners = crate::work::WorkOwners::of(&ring);
            *self.ring.write() = Arc::new(ring);
            self.work.send_if_modified(|current| {
                let changed = *current != owners;
                *current = owners;
                changed
            });
        }
    }

    /// This node as it registers itself.
    pub(crate) fn me(&self) -> Member {
        Member {
            id: self.config.node_id.clone(),
            addr: self.config.advertise_addr.clone(),
            zone: self.config.zone.clone(),
            ingester: self.config.role.stores(),
            compactor: self.config.role == crate::Role::Compact,
            queries: self.config.role.queries(),
            monitors_from_ms: self
                .config
                .monitors
                .then(|| self.monitors_from_ms.load(Ordering::Acquire)),
            state: self.state(),
            reads_compressed_frames: true,
        }
    }

    pub(crate) fn state(&self) -> NodeState {
        if self.leaving.load(Ordering::Acquire) {
            NodeState::Leaving
        } else {
            NodeState::Active
        }
    }

    /// Notes that the lease was renewed now, in memory and on disk.
    pub(crate) fn renewed(&self) {
        let now = now_ms();
        self.last_alive_ms.store(now, Ordering::Release);
        // Only an ingester catches up, so only it needs to remember.
        if let Some(dir) = self.config.state_dir.as_ref().filter(|_| self.config.role.stores()) {
            let (tmp, path) = (dir.join(format!("{ALIVE_FILE}.tmp")), dir.join(ALIVE_FILE));
            let written = std::fs::write(&tmp, now.to_string()).and_then(|()| std::fs::rename(&tmp, &path));
            if let Err(e) = written {
                tracing::warn!(path = %path.display(), error = %e, "cannot note the lease renewal");
            }
        }
    }

    /// Whether this node has registered (holds a live lease).
    pub fn registered(&self) -> bool {
        self.lease.lock().is_some()
    }

    /// Whether this node registered since it started and renewed its lease
    /// within its time to live: etcd has dropped it otherwise, whether or
    /// not a renewal failed here yet.
    pub(crate) fn lease_current(&self) -> bool {
        let renewed = self.last_alive_ms.load(Ordering::Acquire);
        let ttl = crate::membership::granted_ttl(&self.config).as_millis() as i64;
        self.registrations.load(Ordering::Acquire) > 0 && now_ms() - renewed < ttl
    }

    /// A graceful leave (scaling down): the node stops taking new writes
    /// (its share goes to the next owners), waits until the other nodes
    /// have read the changed ring, and hands what it stores to the new
    /// owners, answering reads all the while.
    pub fn leave(self: &Arc<Self>) {
        self.leaving.store(true, Ordering::Release);
        self.membership_changed.notify_one();
        // Until etcd holds the new state, this node would hand its share to itself.
        let deadline = std::time::Instant::now() + self.config.lease_ttl * 3;
        while !self
            .ring()
            .members()
            .iter()
            .any(|m| self.is_me(m) && m.state == NodeState::Leaving)
        {
            if std::time::Instant::now() > deadline {
                tracing::error!("cannot publish this node's leave in etcd; it stays a member and keeps its data");
                return;
            }
            std::thread::sleep(self.config.ring_propagation / 4);
        }
        // Peers see the ring within `ring_propagation`; writes they routed
        // before that still arrive and are stored (and handed off below).
        std::thread::sleep(self.config.ring_propagation * 2);
        match crate::handoff::hand_off(self) {
            Ok(samples) => {
                tracing::info!(samples, "handed this node's series to their new owners");
                self.handed_off.store(true, Ordering::Release);
            }
            Err(e) => {
                tracing::error!(error = %e, "handoff failed: this node stays a member (leaving) so its data is still read")
            }
        }
    }

    /// Stops membership: the alive key goes at once (peers count this node
    /// down without waiting for its lease to expire). After a graceful
    /// leave whose handoff succeeded the member key goes too;
    /// otherwise (a restart) the node keeps its share and takes it back
    /// when it returns.
    pub fn stop(&self) {
        self.deregistered.store(true, Ordering::Release);
        self.membership_changed.notify_one();
        let lease = *self.lease.lock();
        let handed_off = self.handed_off.load(Ordering::Acquire);
        let config = self.config.clone();
        let stopped = self.block_on(async move {
            let mut client = crate::membership::connect(&config.etcd_endpoints).await?;
            if let Some(lease) = lease {
                // The renewal loop may have revoked it already.
                let _ = client.lease_revoke(lease).await;
            }
            if handed_off {
                crate::membership::forget(&config, &config.node_id).await?;
            }
            Ok::<(), etcd_client::Error>(())
        });
        if let Err(e) = stopped {
            tracing::warn!(error = %e, "cannot update the membership in etcd on the way out");
        }
    }

    /// Runs `f` on the cluster's runtime and waits for it (from any thread).
    pub(crate) fn block_on<T: Send + 'static>(&self, f: impl Future<Output = T> + Send + 'static) -> T {
        wait(self.begin(f))
    }

    /// Begins `f` on the cluster's runtime; [`wait`] for its outcome, after
    /// doing on this thread what can run meanwhile.
    pub(crate) fn begin<T: Send + 'static>(
        &self,
        f: impl Future<Output = T> + Send + 'static,
    ) -> std::sync::mpsc::Receiver<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.runtime().spawn(async move {
            let _ = tx.send(f.await);
        });
        rx
    }

    /// POSTs `body` to a peer's internal route and returns its answer's bytes.
    pub(crate) fn post(
        self: &Arc<Self>,
        member: &Member,
        route: &str,
        tenant: &TenantId,
        body: Vec<u8>,
    ) -> impl Future<Output = Result<Bytes, PeerError>> + Send + 'static {
        let request = self
            .http
            .post(format!("{}{}", self.base_url(member), path(route)))
            .header("X-Scope-OrgID", tenant.as_str())
            .body(body);
        self.send_internal(member, request)
    }

    /// GETs a peer's internal route and returns its answer's bytes.
    pub(crate) fn get_internal(
        &self,
        member: &Member,
        route: &str,
    ) -> impl Future<Output = Result<Bytes, PeerError>> + Send + 'static {
        let request = self.http.get(format!("{}{}", self.base_url(member), path(route)));
        self.send_internal(member, request)
    }

    /// Sends a request to a peer's internal route, with the cluster's secret.
    fn send_internal(
        &self,
        member: &Member,
        mut request: reqwest::RequestBuilder,
    ) -> impl Future<Output = Result<Bytes, PeerError>> + Send + 'static {
        if let Some(secret) = &self.config.secret {
            request = request.header(SECRET_HEADER, secret);
        }
        let node = member.id.clone();
        async move {
            // Whatever a peer answers, it is one owner failing: the request
            // was checked here, and the quorum decides.
            let fail = |reason: String| PeerError {
                node: node.clone(),
                reason,
                permanent: false,
            };
            let answer = request.send().await.map_err(|e| fail(error_chain(&e)))?;
            let status = answer.status();
            let bytes = answer.bytes().await.map_err(|e| fail(error_chain(&e)))?;
            if !status.is_success() {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                return Err(fail(format!("{status}: {text}")));
            }
            Ok(bytes)
        }
    }

    /// Requests of peers this node refused, `(reason, count)` by reason.
    pub fn refused_peer_requests(&self) -> [(&'static str, u64); 3] {
        self.refused_peer_requests.counts()
    }

    /// Series frames this node took in peers' writes and sent in answers to
    /// their selects: `(route, bytes, samples)`.
    pub fn frame_traffic(&self) -> [(&'static str, u64, u64); 2] {
        self.frame_traffic.counts()
    }

    /// Reads this node fanned out to the ingesters, and the ingesters they
    /// asked in all.
    pub fn read_fan_outs(&self) -> (u64, u64) {
        self.read_fan_out.counts()
    }

    /// CPU seconds this node spent storing peers' writes.
    pub fn peer_write_cpu_seconds(&self) -> f64 {
        self.frame_traffic.store_cpu_seconds()
    }

    /// Where `member`'s HTTP API is: HTTPS when the nodes speak TLS.
    fn base_url(&self, member: &Member) -> String {
        let scheme = if self.config.peer_tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", member.addr)
    }

    /// The other nodes that are up now: only those that answer queries
    /// when `querying`.
    pub fn peers(&self, querying: bool) -> Vec<Member> {
        let ring = self.ring();
        let members = ring.members().iter().enumerate();
        members
            .filter(|&(i, m)| (m.queries || !querying) && ring.is_alive(i) && !self.is_me(m))
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// A GET of `path` on `member`'s public API, with `params` and
    /// `headers`: its status and body, given up after `timeout`.
    pub fn get(
        &self,
        member: &Member,
        path: &str,
        params: &[(String, String)],
        headers: &[(String, String)],
        timeout: std::time::Duration,
    ) -> impl Future<Output = Result<(u16, Vec<u8>), String>> + Send + 'static {
        let url = reqwest::Url::parse_with_params(&format!("{}{path}", self.base_url(member)), params);
        let request = url.map(|url| {
            let mut request = self.http.get(url).timeout(timeout);
            for (name, value) in headers {
                request = request.header(name, value);
            }
            request
        });
        let asked = self.runtime().spawn(async move {
            let answer = request
                .map_err(|e| e.to_string())?
                .send()
                .await
                .map_err(|e| error_chain(&e))?;
            let status = answer.status().as_u16();
            let body = answer.bytes().await.map_err(|e| error_chain(&e))?;
            Ok((status, body.to_vec()))
        });
        async move { asked.await.map_err(|e| e.to_string())? }
    }

    /// Whether `member` is this node.
    pub(crate) fn is_me(&self, member: &Member) -> bool {
        member.id == self.config.node_id
    }
}

impl Drop for Cluster {
    /// Without blocking: the last reference may go on an async worker.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The outcome of what [`Cluster::begin`] began.
pub(crate) fn wait<T>(started: std::sync::mpsc::Receiver<T>) -> T {
    started
        .recv()
        .expect("the cluster's runtime runs for the life of the process")
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The failure of a member that holds no live lease: not asked at all.
pub(crate) fn down(node: String) -> PeerError {
    PeerError {
        node,
        reason: "down (no live lease in etcd)".into(),
        permanent: false,
    }
}

/// An error with its causes ("error sending request: connection refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}
