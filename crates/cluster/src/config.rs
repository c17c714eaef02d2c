use std::time::Duration;

/// What a node does in a cluster (`--cluster.role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Stores series, and routes writes and reads: a small cluster is
    /// several of these.
    All,
    /// Stores the series the ring gives it; answers its peers.
    Ingest,
    /// Routes writes to their owners; stores nothing.
    Write,
    /// Answers queries from the ingesters; stores nothing.
    Query,
    /// Merges the days the ingesters uploaded to the shared bucket, one
    /// copy per replica, into one copy ([`crate::compactor`]); owns no
    /// series on the ring.
    Compact,
}

impl Role {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "all" => Ok(Self::All),
            "ingest" => Ok(Self::Ingest),
            "write" => Ok(Self::Write),
            "query" => Ok(Self::Query),
            "compact" => Ok(Self::Compact),
            other => Err(format!(
                "unknown cluster role {other:?} (all, ingest, write, query, compact)"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Ingest => "ingest",
            Self::Write => "write",
            Self::Query => "query",
            Self::Compact => "compact",
        }
    }

    /// Whether the node holds data (an embedded engine and tokens on the ring).
    pub fn stores(self) -> bool {
        matches!(self, Self::All | Self::Ingest)
    }

    /// Whether the node is there to answer queries (and parts of its
    /// peers' long ones).
    pub fn queries(self) -> bool {
        matches!(self, Self::All | Self::Query)
    }
}

/// A node's cluster settings (the `--cluster.*` flags).
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// etcd's client URLs.
    pub etcd_endpoints: Vec<String>,
    /// Names the cluster: its members live under `/cairn/<name>/` in etcd.
    pub name: String,
    /// Unique, stable across restarts (its ring tokens derive from it).
    pub node_id: String,
    /// `host:port` where peers reach this node's HTTP listener.
    pub advertise_addr: String,
    /// Failure domain; with `zone_aware`, a series' replicas go to distinct zones.
    pub zone: String,
    pub zone_aware: bool,
    pub role: Role,
    /// How many ingesters hold each series.
    pub replication_factor: usize,
    /// How many ingesters hold a tenant's series (shuffle sharding), unless
    /// the tenant's limits say otherwise; 0: all of them.
    pub shard_size: usize,
    /// A node that stops renewing its etcd lease leaves the ring after this long.
    pub lease_ttl: Duration,
    /// The longest a change of the ring takes to reach every node that
    /// reaches etcd (its watch's delay, with room): nodes joining wait
    /// this long before they take a share.
    pub ring_propagation: Duration,
    /// One request to a peer gives up after this long.
    pub peer_timeout: Duration,
    /// Shared by the nodes; peers' requests must carry it.
    pub secret: Option<String>,
    /// On shutdown, hand the node's share to the others and leave the ring
    /// for good (scaling down), rather than keep it for a restart.
    pub leave_on_shutdown: bool,
    /// Where the node keeps its small cluster state (the data directory).
    pub state_dir: Option<std::path::PathBuf>,
    /// Deduplicate HA pairs of Prometheus on the way in; off when `None`.
    pub ha: Option<crate::HaConfig>,
    /// The bucket the nodes share, at its base URL (`crate::layout` says
    /// what lies where below it); `None` when days stay on the nodes' disks.
    pub bucket: Option<cairn_bucket::BucketConfig>,
    /// How often the compactor looks for uploaded days to merge, and each
    /// ingester for days the compactor has merged and for tenants it holds
    /// no series of any more.
    pub compaction_interval: Duration,
    /// How long an ingester keeps its copy of a day after the compactor
    /// noted that it holds it: long enough for every node reading the
    /// bucket to have listed the compacted copy.
    pub retire_delay: Duration,
    /// Whether this node runs `--config.file` and takes a share of its
    /// scrape targets and rule groups.
    pub monitors: bool,
    /// How this node speaks HTTPS to its peers (which serve HTTPS too);
    /// plain HTTP when `None`.
    pub peer_tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    /// `--cluster.tls-ca-file`: the CA that signed the nodes' certificates.
    pub tls_ca_file: Option<std::path::PathBuf>,
}

impl ClusterConfig {
    pub fn new(etcd: &str, node_id: &str, advertise_addr: &str) -> Self {
        Self {
            etcd_endpoints: etcd.split(',').map(str::to_string).collect(),
            name: "cairn".into(),
            node_id: node_id.into(),
            advertise_addr: advertise_addr.into(),
            zone: String::new(),
            zone_aware: false,
            role: Role::All,
            replication_factor: 3,
            shard_size: 0,
            lease_ttl: Duration::from_secs(10),
            ring_propagation: Duration::from_secs(1),
            peer_timeout: Duration::from_secs(10),
            secret: None,
            leave_on_shutdown: false,
            state_dir: None,
            ha: None,
            bucket: None,
            compaction_interval: Duration::from_secs(60),
            retire_delay: Duration::from_secs(60),
            monitors: false,
            peer_tls: None,
            tls_ca_file: None,
        }
    }

    /// The etcd key prefix of this cluster's members: one key per node,
    /// kept until the node leaves gracefully (or is forgotten), so a node
    /// that died still owns its share and reads count it as missing.
    pub fn members_prefix(&self) -> String {
        format!("/cairn/{}/members/", self.name)
    }

    /// The etcd key prefix of the members alive now: one key per node
    /// under its lease, gone when the node stops renewing it.
    pub fn alive_prefix(&self) -> String {
        format!("/cairn/{}/alive/", self.name)
    }

    /// The etcd key prefix saying which nodes hold which tenants' series:
    /// `<node>/<tenant>`, written before the node stores the first of them
    /// and kept until it leaves, so reads that ask only a tenant's shard
    /// still find what went elsewhere before the shard changed.
    pub fn holders_prefix(&self) -> String {
        format!("/cairn/{}/holders/", self.name)
    }

    /// Where the compactors keep their leases on tenants' days and the
    /// records of their jobs (jobs.rs).
    pub fn compaction_prefix(&self) -> String {
        format!("/cairn/{}/compaction/", self.name)
    }
}
