//! `cairn`: a Prometheus-compatible time series database in one binary.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser};

mod subcommand;

use subcommand::Subcommand;

/// Cairn: a Prometheus-compatible time series database.
///
/// Starts with embedded storage in a local directory. Point Prometheus or
/// vmagent remote_write at /api/v1/write and Grafana at this address.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    /// Directory for all data (WAL, partitions). Created if missing.
    #[arg(long = "storage.path", default_value = "cairn-data")]
    storage_path: PathBuf,

    /// How long samples are kept, e.g. 15d, 4w, 1y (units: ms s m h d w y).
    /// Whole days are dropped once they fall out of this window.
    #[arg(long = "storage.retention", default_value = "31d", value_parser = duration)]
    retention: Duration,

    /// How often the WAL is fsynced. Every acknowledged write is in the OS
    /// before the response (survives kill -9); this bounds loss on power
    /// failure. 0 fsyncs before every acknowledgement.
    #[arg(long = "storage.wal-fsync-interval", default_value = "1s", value_parser = duration)]
    wal_fsync_interval: Duration,

    /// How often in-memory data is written to disk as parts (the WAL is
    /// truncated after each flush; shorter means faster restarts).
    #[arg(long = "storage.flush-interval", default_value = "60s", value_parser = duration)]
    flush_interval: Duration,

    /// Bound of in-memory data (unsorted rows and compressed in-memory
    /// parts): a flush to disk starts at half of it, an eighth of it bounds
    /// one row buffer, and past all of it writes wait briefly for a flush,
    /// then get 503 with Retry-After (ingestion faster than the disk takes
    /// it, or flushes failing).
    #[arg(long = "storage.max-in-memory-bytes", default_value_t = 512 << 20)]
    max_in_memory_bytes: usize,

    /// Writes are refused (503 with Retry-After; /-/ready says why) while
    /// fewer bytes than this are free on the data directory's filesystem,
    /// so flushes and merges keep room to finish; they resume once space
    /// is freed. 0: only a full disk refuses them.
    #[arg(long = "storage.min-free-disk-bytes", default_value_t = 64 << 20)]
    min_free_disk_bytes: u64,

    /// WAL segments that a remote_write receiver has not received yet are
    /// kept after their flush, up to this many bytes; past it the oldest
    /// are deleted and their samples are not forwarded (counted in
    /// cairn_remote_write_wal_gaps_total and logged).
    #[arg(long = "storage.wal-max-retained-bytes", default_value_t = 4 << 30)]
    wal_max_retained_bytes: u64,

    /// A day partition without writes for this long is merged into one part
    /// (best compression) and, with an object store, uploaded once the day
    /// is over. Late samples for an old day start the wait again.
    #[arg(long = "storage.settle-time", default_value = "60s", value_parser = duration)]
    settle_time: Duration,

    /// Bucket that finished days are uploaded to and read back from by
    /// range (bottomless storage): s3://bucket/prefix, or file:///dir. The
    /// local disk keeps the WAL, the days not yet settled and a cache.
    /// Endpoint, region and credentials not given below are taken from the
    /// usual AWS_* environment variables.
    #[arg(long = "storage.object-store.url")]
    object_store_url: Option<String>,

    /// Address of an S3-compatible server (http://host:port) instead of AWS.
    #[arg(long = "storage.object-store.endpoint")]
    object_store_endpoint: Option<String>,

    /// The bucket's region.
    #[arg(long = "storage.object-store.region")]
    object_store_region: Option<String>,

    /// Access key id for the bucket.
    #[arg(long = "storage.object-store.access-key-id")]
    object_store_access_key_id: Option<String>,

    /// Secret access key for the bucket (prefer AWS_SECRET_ACCESS_KEY: a flag
    /// shows in the process list; it is masked in /api/v1/status/flags).
    #[arg(long = "storage.object-store.secret-access-key")]
    object_store_secret_access_key: Option<String>,

    /// One attempt of a bucket request gives up after this long; failed
    /// requests are retried 3 times with backoff, failed uploads later.
    #[arg(long = "storage.object-store.timeout", default_value = "30s", value_parser = duration)]
    object_store_timeout: Duration,

    /// Bytes of local disk for the cache of index and block ranges read from
    /// the bucket (least recently used dropped first). 0 turns it off.
    #[arg(long = "storage.cache.max-bytes", default_value_t = 1 << 30)]
    cache_max_bytes: u64,

    /// Serve an object store's data without writing: writes and deletes are
    /// refused (503), nothing is uploaded, merged or deleted, and the bucket
    /// is listed every --storage.object-store.refresh-interval for what the
    /// writing instance uploaded. Needs --storage.object-store.url and a
    /// --storage.path of its own.
    #[arg(long = "storage.read-only")]
    read_only: bool,

    /// How often a read-only instance lists the bucket for new data.
    #[arg(long = "storage.object-store.refresh-interval", default_value = "30s", value_parser = duration)]
    object_store_refresh_interval: Duration,

    /// YAML file of per-tenant limits and settings (max active series,
    /// ingestion rate and burst, query samples and series, retention),
    /// read again whenever it changes; docs/tenants.md has its form. Tenants
    /// are named by the X-Scope-OrgID header of each request.
    #[arg(long = "tenants.limits-file")]
    tenants_limits_file: Option<PathBuf>,

    /// TLS and access control, in Prometheus' web configuration format
    /// (tls_server_config, basic_auth_users with bcrypt hashes) plus Cairn's
    /// bearer_tokens and access (which tenants each credential may read or
    /// write, and who is an admin): docs/auth.md. Health and readiness stay open.
    #[arg(long = "web.config.file")]
    web_config_file: Option<PathBuf>,

    /// Tenants this process holds at most, the default one included: each
    /// has an engine with threads and a memory budget of its own. A write
    /// that would create one more is refused (422).
    #[arg(long = "tenants.max", default_value_t = 100)]
    tenants_max: usize,

    /// Cluster mode: etcd's client URLs, comma-separated (e.g.
    /// http://10.0.0.1:2379). Every node of a cluster names the same etcd
    /// and `--cluster.name`; any node then takes writes and answers queries
    /// for the whole cluster (docs/cluster.md). Off unless set.
    #[arg(long = "cluster.etcd-endpoints")]
    cluster_etcd_endpoints: Option<String>,

    /// Names the cluster in etcd, so several can share one etcd.
    #[arg(long = "cluster.name", default_value = "cairn")]
    cluster_name: String,

    /// This node's id, unique in the cluster and the same across restarts
    /// (its share of the ring derives from it). Default: its advertised address.
    #[arg(long = "cluster.node-id")]
    cluster_node_id: Option<String>,

    /// host:port where the other nodes reach this one's HTTP listener.
    /// Default: --http.listen-addr, with this host's name for 0.0.0.0.
    #[arg(long = "cluster.advertise-addr")]
    cluster_advertise_addr: Option<String>,

    /// What this node does: all (stores series, routes writes, answers
    /// queries), ingest (stores), write (routes writes only), query
    /// (answers queries only), compact (merges the replicas the ingesters
    /// uploaded to the shared bucket into one copy; needs
    /// --storage.object-store.url).
    #[arg(long = "cluster.role", default_value = "all", value_parser = cairn_cluster::Role::parse)]
    cluster_role: cairn_cluster::Role,

    /// How many ingesters store each series; a write is acknowledged once
    /// a majority of them stored it, and reads stay complete with a
    /// minority down.
    #[arg(long = "cluster.replication-factor", default_value_t = 3)]
    cluster_replication_factor: usize,

    /// Shuffle sharding: how many ingesters hold each tenant's series (a
    /// tenant's `shard_size` limit overrides it), so that a tenant's reads
    /// ask those and not every ingester. 0: every ingester holds every
    /// tenant's series.
    #[arg(long = "cluster.shard-size", default_value_t = 0)]
    cluster_shard_size: usize,

    /// This node's failure domain (rack, availability zone).
    #[arg(long = "cluster.zone", default_value = "")]
    cluster_zone: String,

    /// Place each series' replicas in distinct zones (--cluster.zone).
    #[arg(long = "cluster.zone-awareness")]
    cluster_zone_awareness: bool,

    /// A node that stops renewing its etcd lease (killed, cut off) leaves
    /// the ring after this long.
    #[arg(long = "cluster.lease-ttl", default_value = "10s", value_parser = duration)]
    cluster_lease_ttl: Duration,

    /// One request to another node gives up after this long.
    #[arg(long = "cluster.peer-timeout", default_value = "10s", value_parser = duration)]
    cluster_peer_timeout: Duration,

    /// On shutdown, leave the ring for good (scaling down): stop taking
    /// writes and hand what this node stores to the new owners. Without it
    /// a stopped node keeps its share and takes it back when it returns.
    #[arg(long = "cluster.leave-on-shutdown")]
    cluster_leave_on_shutdown: bool,
    /// How often the compactor looks for days the ingesters uploaded, and
    /// each ingester for days the compactor holds (whose copies it then
    /// drops, twice --storage.object-store.refresh-interval after the
    /// compactor wrote them: by then every node reads them) and for tenants
    /// it holds no series of any more (whose holder keys it drops).
    #[arg(long = "cluster.compaction-interval", default_value = "1m", value_parser = duration)]
    cluster_compaction_interval: Duration,

    /// Deduplicate HA pairs of Prometheus on the way in, as Mimir's HA
    /// tracker does: of the series carrying both --cluster.ha-cluster-label
    /// and --cluster.ha-replica-label, only the elected replica's are stored
    /// (without the replica label); the election is kept in etcd and moves
    /// when the elected replica is silent for --cluster.ha-failover-timeout.
    #[arg(long = "cluster.ha-tracker")]
    cluster_ha_tracker: bool,

    #[arg(long = "cluster.ha-cluster-label", default_value = "cluster")]
    cluster_ha_cluster_label: String,

    #[arg(long = "cluster.ha-replica-label", default_value = "__replica__")]
    cluster_ha_replica_label: String,

    #[arg(long = "cluster.ha-failover-timeout", default_value = "30s", value_parser = duration)]
    cluster_ha_failover_timeout: Duration,

    /// A file holding a secret all nodes share; requests between nodes
    /// carry it and are refused without it. Required with --web.config.file.
    #[arg(long = "cluster.secret-file")]
    cluster_secret_file: Option<PathBuf>,

    /// With TLS on (--web.config.file's tls_server_config) nodes speak
    /// HTTPS to each other: the CA that signed their certificates, which
    /// must name each node's --cluster.advertise-addr host. Default: the
    /// web configuration's client_ca_file.
    #[arg(long = "cluster.tls-ca-file")]
    cluster_tls_ca_file: Option<PathBuf>,

    /// Address to serve the HTTP API on.
    #[arg(long = "http.listen-addr", default_value = "0.0.0.0:9090")]
    listen_addr: SocketAddr,

    /// TCP address for Graphite plaintext (`path;tag=value value timestamp`
    /// lines, Carbon's port is 2003). Off unless set.
    #[arg(long = "graphite.listen-addr")]
    graphite_listen_addr: Option<SocketAddr>,

    /// TCP address for OpenTSDB telnet `put` lines (OpenTSDB's port is
    /// 4242). Off unless set; `/api/put` is always served on the HTTP port.
    #[arg(long = "opentsdb.listen-addr")]
    opentsdb_listen_addr: Option<SocketAddr>,

    /// Store OTLP explicit-bucket histograms as native histograms with
    /// custom buckets (one series per histogram) rather than classic
    /// `_bucket`/`_sum`/`_count` series, as Prometheus' `otlp:
    /// convert_histograms_to_nhcb: true` does. Off by default, as there.
    #[arg(long = "otlp.convert-histograms-to-nhcb")]
    otlp_convert_histograms_to_nhcb: bool,

    /// Largest accepted request body in bytes (413 beyond it).
    #[arg(long = "http.max-request-body-bytes", default_value_t = 64 << 20)]
    max_request_body_bytes: usize,

    /// Longest a client may take to send a request's headers and body,
    /// counted from the end of the previous response (or the connection's
    /// start): a keep-alive connection idle this long is closed, and a
    /// client that trickles a request (slowloris) is cut off. Duration;
    /// default 5m, as Prometheus' --web.read-timeout; 0 disables it.
    #[arg(long = "http.read-timeout", default_value = "5m", value_parser = duration)]
    http_read_timeout: Duration,

    /// Longest a response write may wait for a client that does not read
    /// (its socket buffer full) before the connection is cut off. Duration;
    /// default 1m; 0 disables it.
    #[arg(long = "http.write-timeout", default_value = "1m", value_parser = duration)]
    http_write_timeout: Duration,

    /// Most samples one remote read (`/api/v1/read`) answered with raw
    /// samples may return; past it the read fails with 400. Streamed reads
    /// (chunks, bounded by frame) are not limited. 0 disables the limit.
    #[arg(long = "storage.remote.read-sample-limit", default_value_t = 50_000_000)]
    remote_read_sample_limit: usize,

    /// Remote reads served at once; more wait for a slot. 0 disables the limit.
    #[arg(long = "storage.remote.read-concurrent-limit", default_value_t = 10)]
    remote_read_concurrent_limit: usize,

    /// Bytes past which a streamed remote read cuts a series' chunks into
    /// another frame (a frame may pass it by one chunk).
    #[arg(long = "storage.remote.read-max-bytes-in-frame", default_value_t = 1 << 20)]
    remote_read_max_bytes_in_frame: usize,

    /// Maximum wall-clock time a query may run before it is aborted with a 503
    /// `timeout` error (a request's `timeout` parameter can only shorten it).
    /// Duration, units ms s m h d w y; default 2m.
    #[arg(long = "query.timeout", default_value = "2m", value_parser = duration)]
    query_timeout: Duration,

    /// Maximum number of samples a single query may hold in memory at once,
    /// loaded or produced; beyond it the query fails with a 422 `execution`
    /// error. Count of samples; default 50000000.
    #[arg(long = "query.max-samples", default_value_t = 50_000_000)]
    query_max_samples: usize,

    /// Maximum number of series a single query may select from storage,
    /// summed over its selectors; beyond it the query fails with a 422
    /// `execution` error. Count of series; default 1000000; 0 disables the limit.
    #[arg(long = "query.max-series", default_value_t = 1_000_000)]
    query_max_series: usize,

    /// How far back an instant selector looks for the latest sample (staleness
    /// window). Duration, units ms s m h d w y; default 5m.
    #[arg(long = "query.lookback-delta", default_value = "5m", value_parser = duration)]
    query_lookback_delta: Duration,

    /// When a range query is split by steps over the cores, each core
    /// evaluating the whole query over its own run of steps: auto (parts of
    /// at least 12 h and 32 times the query's longest look-back window),
    /// always (every range query of at least two steps per core), or never.
    /// The answers are the same either way.
    #[arg(long = "query.step-split", default_value = "auto", value_parser = step_split)]
    query_step_split: cairn_server::StepSplit,

    /// Remove `__name__` when a query ends rather than where a function or
    /// operator drops it, as Prometheus' `promql-delayed-name-removal`
    /// feature does (off in a Prometheus 3.14 server, and here).
    #[arg(long = "query.delayed-name-removal")]
    query_delayed_name_removal: bool,

    /// Judge whether `rate` and `increase` are given counters by the
    /// `__type__` label rather than the metric name's suffix, as
    /// Prometheus' `type-and-unit-labels` feature does (off in a Prometheus
    /// 3.14 server, and here).
    #[arg(long = "query.type-and-unit-labels")]
    query_type_and_unit_labels: bool,

    /// Queries (instant, range, and series, label lookups with match[],
    /// federate, export) run at once at most; more wait in a queue. 0
    /// disables the limit. Default 20, as Prometheus. Rule evaluation does
    /// not count against it.
    #[arg(long = "query.max-concurrency", default_value_t = 20)]
    query_max_concurrency: usize,

    /// Queries waiting for a slot at most; one more is refused at once with
    /// a 503 `unavailable` (and Retry-After). Default 100.
    #[arg(long = "query.max-queue-length", default_value_t = 100)]
    query_max_queue_length: usize,

    /// Longest a query waits in the queue for a slot before it is refused
    /// with a 503 `unavailable`. Duration; default 10s.
    #[arg(long = "query.max-queue-wait", default_value = "10s", value_parser = duration)]
    query_max_queue_wait: Duration,

    /// Most bytes a single query may hold (samples loaded and produced,
    /// series labels); beyond it the query fails with a 422 `execution`
    /// error. Default 0: half the memory of the machine (or its cgroup)
    /// shared by --query.max-concurrency queries, so that the queries
    /// allowed to run at once stay within half the memory.
    #[arg(long = "query.max-memory-bytes", default_value_t = 0)]
    query_max_memory_bytes: usize,

    /// Bound of the range query results cache, which keeps the settled
    /// steps of range queries for the same query over a later window (a
    /// dashboard refreshing); 0 turns it off. A request with `nocache=1`
    /// bypasses it.
    #[arg(long = "query.results-cache.max-bytes", default_value_t = 64 << 20)]
    query_results_cache_max_bytes: usize,

    /// How much lower than ingestion the API's queries run, as a Linux nice
    /// increment (0-19; 0: the same priority): a storm of heavy queries then
    /// takes the CPU that ingestion and rule evaluation leave, not theirs.
    #[arg(long = "query.nice", default_value_t = 10, value_parser = clap::value_parser!(i32).range(0..=19))]
    query_nice: i32,

    /// Log filter, e.g. info, debug, cairn_tsdb=debug.
    #[arg(long = "log.level", default_value = "info")]
    log_level: String,

    /// Prometheus' configuration file: Cairn scrapes its `scrape_configs`,
    /// evaluates its `rule_files` and notifies its `alerting.alertmanagers`,
    /// as a Prometheus server would. Reloaded on SIGHUP (and on
    /// `POST /-/reload` with --web.enable-lifecycle). Keys Cairn does not
    /// support stop the start, by name.
    #[arg(long = "config.file")]
    config_file: Option<PathBuf>,

    /// Agent mode, as Prometheus' --agent and vmagent: scrape (and take
    /// pushes) and forward everything with the configuration's remote_write,
    /// keeping only the WAL until it is forwarded and two days of series
    /// labels; reads answer 503. Needs --config.file; its rule_files and
    /// alerting are refused.
    #[arg(long = "agent", requires = "config_file")]
    agent: bool,

    /// The URL under which users reach Cairn (alerts link to it).
    /// Default: http://<hostname>:<port>/.
    #[arg(long = "web.external-url")]
    web_external_url: Option<String>,

    /// Also serve the API and the web UI under this path, e.g. `/cairn`
    /// (they are always at `/` and `/prometheus`). Default: the path of
    /// --web.external-url.
    #[arg(long = "web.route-prefix")]
    web_route_prefix: Option<String>,

    /// Allow reloading the configuration over HTTP (`POST /-/reload`).
    #[arg(long = "web.enable-lifecycle")]
    web_enable_lifecycle: bool,

    /// Wait at least this long before resending an alert to Alertmanager.
    #[arg(long = "rules.alert.resend-delay", default_value = "1m", value_parser = duration)]
    rules_alert_resend_delay: Duration,

    /// Longest outage after which an alert's `for` state is still restored.
    #[arg(long = "rules.alert.for-outage-tolerance", default_value = "1h", value_parser = duration)]
    rules_alert_for_outage_tolerance: Duration,

    /// Least time an alert waits after a restart before firing, when its
    /// `for` is at least this long.
    #[arg(long = "rules.alert.for-grace-period", default_value = "10m", value_parser = duration)]
    rules_alert_for_grace_period: Duration,

    /// Alerts each Alertmanager's queue holds; the oldest are dropped past it.
    #[arg(long = "alertmanager.notification-queue-capacity", default_value_t = 10_000)]
    alertmanager_notification_queue_capacity: usize,
}

fn step_split(s: &str) -> Result<cairn_server::StepSplit, String> {
    match s {
        "auto" => Ok(cairn_server::StepSplit::default()),
        "always" => Ok(cairn_server::StepSplit::Always),
        "never" => Ok(cairn_server::StepSplit::Never),
        _ => Err(format!("{s:?} is not one of auto, always, never")),
    }
}

fn duration(s: &str) -> Result<Duration, String> {
    let ms = cairn_server::parse_duration(s)?;
    u64::try_from(ms)
        .map(Duration::from_millis)
        .map_err(|_| format!("duration {s:?} must not be negative"))
}

/// Flags whose values `/api/v1/status/flags` masks.
const SECRET_FLAGS: &[&str] = &["storage.object-store.secret-access-key"];

/// Every flag (name without `--`) with its effective value, given or default,
/// for `/api/v1/status/flags`; secrets masked.
fn effective_flags(command: &clap::Command, matches: &clap::ArgMatches) -> BTreeMap<String, String> {
    command
        .get_arguments()
        .filter_map(|arg| {
            let name = arg.get_long()?;
            let values = matches.get_raw(arg.get_id().as_str())?;
            let values: Vec<String> = values.map(|v| v.to_string_lossy().into_owned()).collect();
            let value = if SECRET_FLAGS.contains(&name) {
                "<secret>".to_string()
            } else {
                values.join(",")
            };
            Some((name.to_string(), value))
        })
        .collect()
}

/// The `--cluster.*` flags, when cluster mode is on.
fn cluster_config(cli: &Cli) -> anyhow::Result<Option<cairn_cluster::ClusterConfig>> {
    let Some(etcd) = &cli.cluster_etcd_endpoints else {
        return Ok(None);
    };
    let advertise = match &cli.cluster_advertise_addr {
        Some(a) => a.clone(),
        None if cli.listen_addr.ip().is_unspecified() => format!("{}:{}", hostname(), cli.listen_addr.port()),
        None => cli.listen_addr.to_string(),
    };
    let secret = match &cli.cluster_secret_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --cluster.secret-file {}", path.display()))?
                .trim()
                .to_string(),
        ),
        None => None,
    };
    let node_id = cli.cluster_node_id.clone().unwrap_or_else(|| advertise.clone());
    Ok(Some(cairn_cluster::ClusterConfig {
        name: cli.cluster_name.clone(),
        zone: cli.cluster_zone.clone(),
        zone_aware: cli.cluster_zone_awareness,
        role: cli.cluster_role,
        replication_factor: cli.cluster_replication_factor,
        shard_size: cli.cluster_shard_size,
        compaction_interval: cli.cluster_compaction_interval,
        lease_ttl: cli.cluster_lease_ttl,
        peer_timeout: cli.cluster_peer_timeout,
        secret,
        leave_on_shutdown: cli.cluster_leave_on_shutdown,
        monitors: cli.config_file.is_some(),
        tls_ca_file: cli.cluster_tls_ca_file.clone(),
        state_dir: Some(cli.storage_path.clone()),
        ha: cli.cluster_ha_tracker.then(|| cairn_cluster::HaConfig {
            cluster_label: cli.cluster_ha_cluster_label.clone(),
            replica_label: cli.cluster_ha_replica_label.clone(),
            failover_timeout: cli.cluster_ha_failover_timeout,
        }),
        ..cairn_cluster::ClusterConfig::new(etcd, &node_id, &advertise)
    }))
}

/// This machine's host name (`localhost` if unknown).
/// The path of a URL as a prefix: `https://x/cairn/` → `/cairn`, `http://x` → "".
fn url_path(url: &str) -> String {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = after_scheme.find('/').map_or("", |i| &after_scheme[i..]);
    normalize_prefix(path.split(['?', '#']).next().unwrap_or(""))
}

/// A path prefix with one leading slash and none at the end ("" for the root).
fn normalize_prefix(prefix: &str) -> String {
    let trimmed = prefix.trim_matches('/');
    if trimmed.is_empty() {
        String::new()
    } else {
        format!("/{trimmed}")
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

fn main() -> anyhow::Result<()> {
    if let Some(subcommand) = std::env::args().nth(1).as_deref().and_then(Subcommand::from_name) {
        let args = std::env::args().skip(1);
        match subcommand {
            // The load generator.
            Subcommand::Bench => return cairn_bench::cli::main(args),
            // Backups of a data directory.
            Subcommand::Backup | Subcommand::Restore => std::process::exit(cairn_backup::cli::main(args.collect())),
            // promtool's checks, and the offline verification of a data directory.
            Subcommand::Check | Subcommand::Test => {
                std::process::exit(cairn_server::check::main(&args.collect::<Vec<_>>()))
            }
        }
    }
    let command = Cli::command().after_help(subcommand::help_section());
    let matches = command.clone().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let flags = effective_flags(&command, &matches);
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_new(&cli.log_level).context("invalid --log.level")?)
        .init();

    let mut storage = cairn_tsdb::Config::new(&cli.storage_path);
    storage.retention = cli.retention;
    storage.wal_sync = if cli.wal_fsync_interval.is_zero() {
        cairn_tsdb::WalSync::EveryCommit
    } else {
        cairn_tsdb::WalSync::Interval(cli.wal_fsync_interval)
    };
    storage.flush_interval = cli.flush_interval;
    storage.max_in_memory_bytes = cli.max_in_memory_bytes;
    storage.min_free_disk_bytes = cli.min_free_disk_bytes;
    storage.wal_max_retained_bytes = cli.wal_max_retained_bytes;
    storage.idle_merge_after = cli.settle_time;
    let mut cluster = cluster_config(&cli)?;
    let bucket = cli.object_store_url.as_ref().map(|url| cairn_tsdb::BucketConfig {
        endpoint: cli.object_store_endpoint.clone(),
        region: cli.object_store_region.clone(),
        access_key_id: cli.object_store_access_key_id.clone(),
        secret_access_key: cli.object_store_secret_access_key.clone(),
        request_timeout: cli.object_store_timeout,
        ..cairn_tsdb::BucketConfig::new(url.clone())
    });
    storage.object_store = match (&mut cluster, &bucket) {
        // The nodes of a cluster share a bucket, each under a prefix of its
        // own, the compactor under its own too.
        (Some(c), Some(b)) => {
            use cairn_cluster::layout;
            c.bucket = Some(b.clone());
            c.retire_delay = cli.object_store_refresh_interval * 2;
            Some(layout::with_url(
                b,
                match c.role {
                    cairn_cluster::Role::Compact => layout::compactor_bucket_url(&b.url, &c.node_id),
                    _ => layout::node_bucket_url(&b.url, &c.node_id),
                },
            ))
        }
        (_, b) => b.clone(),
    };
    storage.cache_max_bytes = cli.cache_max_bytes;
    storage.max_tenants = cli.tenants_max;
    storage.read_only = cli.read_only;
    storage.bucket_refresh_interval = cli.object_store_refresh_interval;
    let mut api = cairn_http::ApiConfig {
        max_request_body_bytes: cli.max_request_body_bytes,
        remote_read_sample_limit: cli.remote_read_sample_limit,
        remote_read_concurrency: cli.remote_read_concurrent_limit,
        remote_read_max_bytes_in_frame: cli.remote_read_max_bytes_in_frame,
        results_cache_max_bytes: cli.query_results_cache_max_bytes,
        query_admission: cairn_http::AdmissionConfig {
            max_concurrency: cli.query_max_concurrency,
            max_queue_length: cli.query_max_queue_length,
            max_queue_wait: cli.query_max_queue_wait,
        },
        otlp: cairn_http::OtlpOptions {
            convert_histograms_to_nhcb: cli.otlp_convert_histograms_to_nhcb,
        },
        ..cairn_http::ApiConfig::default()
    };
    if storage.wal_sync == cairn_tsdb::WalSync::EveryCommit {
        api.inline_write_max_body_bytes = 0;
    }
    api.status.flags = flags;
    api.status.build = cairn_http::BuildInfo {
        version: env!("CARGO_PKG_VERSION").into(),
        revision: env!("CAIRN_BUILD_REVISION").into(),
        branch: env!("CAIRN_BUILD_BRANCH").into(),
        build_user: env!("CAIRN_BUILD_USER").into(),
        build_date: cairn_http::format_build_date(env!("CAIRN_BUILD_EPOCH").parse().unwrap_or(0)),
        rustc: env!("CAIRN_BUILD_RUSTC").into(),
    };
    if cli.query_lookback_delta.is_zero() {
        anyhow::bail!("--query.lookback-delta must be positive");
    }
    let engine = cairn_server::EngineOptions {
        timeout: cli.query_timeout,
        max_samples: cli.query_max_samples,
        max_series: cli.query_max_series,
        lookback_delta: cli.query_lookback_delta,
        step_split: cli.query_step_split,
        delayed_name_removal: cli.query_delayed_name_removal,
        type_and_unit_labels: cli.query_type_and_unit_labels,
        max_memory_bytes: match cli.query_max_memory_bytes {
            0 => default_query_memory_bytes(cli.query_max_concurrency),
            n => n,
        },
        ..cairn_server::EngineOptions::default()
    };
    let web = match &cli.web_config_file {
        Some(path) => cairn_http::WebConfig::load(path).map_err(anyhow::Error::msg)?,
        None => cairn_http::WebConfig::default(),
    };
    let monitoring = cli.config_file.as_ref().map(|file| cairn_server::MonitoringConfig {
        external_url: cli
            .web_external_url
            .clone()
            .unwrap_or_else(|| format!("http://{}:{}/", hostname(), cli.listen_addr.port())),
        resend_delay: cli.rules_alert_resend_delay,
        outage_tolerance: cli.rules_alert_for_outage_tolerance,
        for_grace_period: cli.rules_alert_for_grace_period,
        notifier: cairn_server::NotifierOptions {
            queue_capacity: cli.alertmanager_notification_queue_capacity,
            ..cairn_server::NotifierOptions::default()
        },
        agent: cli.agent,
        ..cairn_server::MonitoringConfig::new(file.clone())
    });
    if cli.agent {
        storage.keep_samples = false;
        // Records written before agent mode wrote labelled ones name series
        // by id: their index is kept that long for a backlog to resolve them.
        storage.retention = storage.retention.min(Duration::from_secs(2 * 86_400));
        api.agent = true;
    }
    api.enable_lifecycle = cli.web_enable_lifecycle;
    let external_path = cli.web_external_url.as_deref().map(url_path).unwrap_or_default();
    api.route_prefix = match &cli.web_route_prefix {
        Some(prefix) => normalize_prefix(prefix),
        None => external_path.clone(),
    };
    api.external_path = (!external_path.is_empty()).then_some(external_path);
    let config = cairn_server::ServerConfig {
        monitoring,
        listen_addr: cli.listen_addr,
        storage,
        api,
        engine,
        graphite_listen_addr: cli.graphite_listen_addr,
        opentsdb_listen_addr: cli.opentsdb_listen_addr,
        limits_file: cli.tenants_limits_file,
        web,
        cluster,
        http_timeouts: cairn_server::HttpTimeouts {
            read: cli.http_read_timeout,
            write: cli.http_write_timeout,
        },
        query_nice: cli.query_nice,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(cairn_server::run(config, cairn_server::shutdown_signal()))
}

/// The default per-query memory budget: half the memory (the cgroup's
/// limit when lower than the machine's) shared by the queries that may run
/// at once.
fn default_query_memory_bytes(max_concurrency: usize) -> usize {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let machine = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(8 << 30, |kb| kb * 1024);
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok());
    let memory = cgroup.map_or(machine, |c| c.min(machine));
    usize::try_from(memory / 2 / max_concurrency.max(1) as u64).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_query_memory_budget_shares_half_the_memory() {
        let one = default_query_memory_bytes(1);
        assert!(one >= 64 << 20, "{one}");
        let twenty = default_query_memory_bytes(20);
        assert_eq!(twenty, one / 20);
        assert_eq!(default_query_memory_bytes(0), one);
    }

    #[test]
    fn external_url_paths_become_prefixes() {
        for (url, path) in [
            ("http://host:9090", ""),
            ("http://host:9090/", ""),
            ("https://host/cairn/", "/cairn"),
            ("https://host/a/b?x=1", "/a/b"),
            ("/relative/", "/relative"),
        ] {
            assert_eq!(url_path(url), path, "{url}");
        }
        assert_eq!(normalize_prefix("cairn/"), "/cairn");
        assert_eq!(normalize_prefix("/"), "");
    }
}
