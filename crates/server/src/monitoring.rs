//! What `--config.file` adds to the server: Prometheus' scraping, recording
//! and alerting rules and Alertmanager notifications, configured from one
//! Prometheus configuration file and reloaded together (SIGHUP, or
//! `POST /-/reload` with `--web.enable-lifecycle`).
//!
//! A reload first loads the file and every rule file it names; anything
//! wrong refuses the whole reload and the running configuration stays.
//! Scraped samples and rule results go to the default tenant through the
//! same storage seam the API uses (in a cluster, the cluster's).

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use cairn_config::Config;
use cairn_http::{Exposition, Monitoring, ReloadStatus, RuleFilter};
use cairn_model::{Labels, Matcher};
use cairn_notifier::{Alert, Notifier, NotifierOptions};
use cairn_protocols::MetricMetadata;
use cairn_remote_write::RemoteWrite;
use cairn_rules::{AlertNotifier, GroupStatus, NotifyAlert, RuleManager, RuleManagerOptions, RulesConfig};
use cairn_scrape::discovery::{DiscoveryManager, DiscoveryOptions, TargetGroup};
use cairn_scrape::{GlobalUrlOptions, ScrapeManager, ScrapeOptions};
use cairn_storage::{Storage, TenantId, Tenants};

use crate::self_metrics;
use serde_json::{Value, json};

/// The flags of this part of the server.
#[derive(Debug, Clone)]
pub struct MonitoringConfig {
    /// `--config.file`: Prometheus' configuration file.
    pub config_file: PathBuf,
    /// `--agent`: scrape and forward only; rules and alerting are refused.
    pub agent: bool,
    /// `--web.external-url`: where users reach this server (alerts link to it).
    pub external_url: String,
    /// `--rules.alert.resend-delay`.
    pub resend_delay: Duration,
    /// `--rules.alert.for-outage-tolerance`.
    pub outage_tolerance: Duration,
    /// `--rules.alert.for-grace-period`.
    pub for_grace_period: Duration,
    pub notifier: NotifierOptions,
}

impl MonitoringConfig {
    pub fn new(config_file: PathBuf) -> Self {
        Self {
            config_file,
            agent: false,
            external_url: String::new(),
            resend_delay: Duration::from_secs(60),
            outage_tolerance: Duration::from_secs(3600),
            for_grace_period: Duration::from_secs(600),
            notifier: NotifierOptions::default(),
        }
    }
}

/// A configuration file and its rule files, loaded and checked.
struct Loaded {
    config: Config,
    rule_files: Vec<PathBuf>,
}

/// Settings cairn-config reads (they are Prometheus') that the server does
/// not carry out yet: refused by name rather than ignored.
fn unimplemented_settings(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    if !config.global.query_log_file.is_empty() {
        out.push("global: query_log_file".to_string());
    }
    if !config.global.scrape_failure_log_file.is_empty() {
        out.push("global: scrape_failure_log_file".to_string());
    }
    let proxy_headers = |h: &cairn_config::HttpClientConfig| !h.proxy_connect_header.is_empty();
    for s in &config.scrape_configs {
        if !s.scrape_failure_log_file.is_empty() {
            out.push(format!(
                "scrape_configs (job {:?}): scrape_failure_log_file",
                s.job_name
            ));
        }
        if proxy_headers(&s.http_client) {
            out.push(format!("scrape_configs (job {:?}): proxy_connect_header", s.job_name));
        }
    }
    for (i, am) in config.alerting.alertmanagers.iter().enumerate() {
        if proxy_headers(&am.http_client) {
            out.push(format!("alerting: alertmanagers[{i}]: proxy_connect_header"));
        }
    }
    out
}

/// Loads `path` and checks every rule file it names, without applying anything.
fn load(path: &Path) -> Result<Loaded, String> {
    let config = Config::load(path).map_err(|e| e.to_string())?;
    let unimplemented = unimplemented_settings(&config);
    if !unimplemented.is_empty() {
        return Err(format!("not supported by Cairn yet: {}", unimplemented.join(", ")));
    }
    let rule_files = config.rule_file_paths().map_err(|e| e.to_string())?;
    let mut errors = Vec::new();
    for file in &rule_files {
        if let Err(es) = cairn_rules::load_rule_file(file) {
            errors.extend(es);
        }
    }
    if !errors.is_empty() {
        return Err(format!("error loading rules: {}", errors.join("; ")));
    }
    Ok(Loaded { config, rule_files })
}

/// Loads the configuration file for `options`: in agent mode, as
/// Prometheus' agent does, rule files and Alertmanagers are refused.
fn load_for(options: &MonitoringConfig) -> Result<Loaded, String> {
    let loaded = load(&options.config_file)?;
    if options.agent {
        if !loaded.config.rule_files.is_empty() {
            return Err("field rule_files is not allowed in agent mode".into());
        }
        if !loaded.config.alerting.alertmanagers.is_empty() {
            return Err("field alerting.alertmanagers is not allowed in agent mode".into());
        }
    }
    Ok(loaded)
}

/// Checks a configuration file as a start or reload would (`cairn check config`).
pub fn check_config(path: &Path) -> Result<(Config, Vec<PathBuf>), String> {
    load(path).map(|l| (l.config, l.rule_files))
}

/// The running scrape, rule and notification managers.
pub struct Running {
    options: MonitoringConfig,
    scrape: ScrapeManager,
    rules: RuleManager,
    notifier: Notifier,
    /// Forwarding to `remote_write` receivers; none without local storage.
    remote_write: Option<RemoteWrite>,
    alertmanager_discovery: parking_lot::Mutex<Vec<(DiscoveryManager, tokio::task::JoinHandle<()>)>>,
    config_yaml: parking_lot::RwLock<String>,
    reloading: tokio::sync::Mutex<()>,
    global_url: GlobalUrlOptions,
    reload_status: parking_lot::Mutex<ReloadStatus>,
    /// Alertmanagers each set's discovery found last, by set name.
    alertmanagers_discovered: Arc<parking_lot::Mutex<BTreeMap<String, usize>>>,
    discovery: DiscoveryOptions,
    /// In a cluster: takes up and leaves targets and groups as the nodes
    /// sharing them change.
    follow_share: parking_lot::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Running {
    /// Loads the configuration and starts everything it configures.
    pub async fn start(
        options: MonitoringConfig,
        tenants: Arc<dyn Tenants>,
        engine: cairn_promql::EngineOptions,
        listen_addr: std::net::SocketAddr,
        wal: Option<Arc<cairn_tsdb::Tsdb>>,
        cluster: Option<&Arc<cairn_cluster::Cluster>>,
    ) -> anyhow::Result<Arc<Self>> {
        let loaded = load_for(&options)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("cannot load --config.file {}", options.config_file.display()))?;
        let tenants2 = tenants.clone();
        let storage: Arc<dyn Storage> =
            tokio::task::spawn_blocking(move || tenants2.get_or_create(&TenantId::default_tenant()))
                .await
                .context("storage task failed")?
                .context("cannot open the default tenant's storage")?;
        // Scrape jobs and Alertmanager sets count discovery failures together.
        let discovery = DiscoveryOptions::default();
        // In a cluster a target keeps its place in the interval whichever
        // node scrapes it, so a hand-over neither skips nor doubles a scrape.
        let seed_host = match cluster {
            Some(c) => format!("cairn cluster {}", c.config().name),
            None => hostname(),
        };
        let share = cluster.map(|c| c.work_share());
        let remote_write = wal.map(RemoteWrite::new);
        // Agent mode's scrapes are written as remote write sends them.
        let scraped_into: Arc<dyn cairn_storage::Appendable> = match &remote_write {
            Some(rw) if options.agent => rw.scrape_appendable(),
            _ => storage.clone(),
        };
        let scrape = ScrapeManager::new(
            scraped_into,
            ScrapeOptions {
                offset_seed: cairn_scrape::offset_seed(&seed_host, &loaded.config.global.external_labels),
                discovery: discovery.clone(),
                share: share.clone(),
                inherit_from: cluster.map(|_| storage.clone() as Arc<dyn cairn_storage::Queryable>),
                lean_caches: options.agent,
                ..ScrapeOptions::default()
            },
        );
        let notifier = Notifier::new(options.notifier.clone());
        let mut rule_options =
            RuleManagerOptions::new(Arc::new(cairn_promql::Engine::new(engine)), storage.clone(), storage);
        rule_options.notifier = Some(Arc::new(ToAlertmanager(notifier.clone())));
        rule_options.resend_delay = options.resend_delay;
        rule_options.outage_tolerance = options.outage_tolerance;
        rule_options.for_grace_period = options.for_grace_period;
        rule_options.share = share;
        let (host, scheme) = external_host_and_scheme(&options.external_url);
        let running = Arc::new(Self {
            global_url: GlobalUrlOptions {
                listen_address: listen_addr.to_string(),
                host,
                scheme,
            },
            options,
            scrape,
            rules: RuleManager::new(rule_options),
            notifier,
            remote_write,
            alertmanager_discovery: parking_lot::Mutex::default(),
            config_yaml: parking_lot::RwLock::default(),
            reloading: tokio::sync::Mutex::new(()),
            reload_status: parking_lot::Mutex::new(ReloadStatus {
                successful: true,
                last_success: std::time::SystemTime::now(),
            }),
            alertmanagers_discovered: Arc::default(),
            discovery,
            follow_share: parking_lot::Mutex::default(),
        });
        if let Some(remote_write) = &running.remote_write {
            // Weak: the source must not keep the managers alive.
            let running = Arc::downgrade(&running);
            remote_write.set_metadata_source(Arc::new(move || {
                running
                    .upgrade()
                    .map(|r| Shown(r).scraped_metadata())
                    .unwrap_or_default()
            }));
        }
        running.apply(loaded).await.map_err(anyhow::Error::msg)?;
        if let Some(cluster) = cluster {
            let task = tokio::spawn(follow_share(Arc::downgrade(&running), cluster.work_changes()));
            *running.follow_share.lock() = Some(task);
        }
        *running.reload_status.lock() = ReloadStatus {
            successful: true,
            last_success: std::time::SystemTime::now(),
        };
        Ok(running)
    }

    /// How the last (re)load went.
    pub fn reload_status(&self) -> ReloadStatus {
        *self.reload_status.lock()
    }

    /// Reads the configuration file again and applies it; on any error the
    /// running configuration stays.
    pub async fn reload(&self) -> Result<(), String> {
        let _one_at_a_time = self.reloading.lock().await;
        let result = match load_for(&self.options) {
            Ok(loaded) => self.apply(loaded).await,
            Err(e) => Err(e),
        };
        let mut status = self.reload_status.lock();
        status.successful = result.is_ok();
        if result.is_ok() {
            status.last_success = std::time::SystemTime::now();
            tracing::info!(file = %self.options.config_file.display(), "completed loading of configuration file");
        }
        result
    }

    async fn apply(&self, loaded: Loaded) -> Result<(), String> {
        let Loaded { config, rule_files } = loaded;
        self.notifier.apply_config(&config, &|http| {
            cairn_scrape::client::build_client(&cairn_scrape::http_settings(http))
        })?;
        self.rules
            .update(RulesConfig {
                files: rule_files,
                evaluation_interval: config.global.evaluation_interval.as_std(),
                query_offset: config.global.rule_query_offset.as_std(),
                external_labels: config
                    .global
                    .external_labels
                    .iter()
                    .map(|l| (l.name.to_string(), l.value.to_string()))
                    .collect(),
                external_url: self.options.external_url.clone(),
            })
            .map_err(|e| e.join("; "))?;
        self.discover_alertmanagers(&config);
        match &self.remote_write {
            Some(remote_write) => remote_write.apply(&config).await?,
            None if !config.remote_write.is_empty() => {
                return Err("remote_write needs this process's own storage, whose WAL it forwards".into());
            }
            None => {}
        }
        self.scrape.apply_config(&config).await?;
        *self.config_yaml.write() = config.to_yaml();
        Ok(())
    }

    /// Restarts discovery of every Alertmanager set; each feeds its set.
    fn discover_alertmanagers(&self, config: &Config) {
        let mut running = self.alertmanager_discovery.lock();
        for (_, task) in running.drain(..) {
            task.abort();
        }
        self.alertmanagers_discovered.lock().clear();
        for (name, am) in cairn_notifier::alertmanager_set_names(&config.alerting.alertmanagers) {
            let discovery = DiscoveryManager::start(&cairn_scrape::sd_configs(&am.service_discovery), &self.discovery);
            let mut updates = discovery.subscribe();
            let notifier = self.notifier.clone();
            let discovered = self.alertmanagers_discovered.clone();
            let task = tokio::spawn(async move {
                loop {
                    let groups = updates.borrow_and_update().clone();
                    let targets = targets_of(&groups);
                    discovered.lock().insert(name.clone(), targets.len());
                    notifier.sync(&name, targets);
                    if updates.changed().await.is_err() {
                        return;
                    }
                }
            });
            running.push((discovery, task));
        }
    }

    /// Stops scraping (no staleness markers: the process is stopping),
    /// rule evaluation, and sends what is queued for Alertmanager.
    pub async fn stop(&self) {
        if let Some(task) = self.follow_share.lock().take() {
            task.abort();
        }
        self.scrape.shutdown().await;
        self.rules.stop();
        for (_, task) in self.alertmanager_discovery.lock().drain(..) {
            task.abort();
        }
        self.notifier.stop().await;
        if let Some(remote_write) = &self.remote_write {
            remote_write.stop().await;
        }
    }
}

/// Takes up and leaves targets and rule groups each time the nodes sharing
/// them change.
async fn follow_share(
    running: std::sync::Weak<Running>,
    mut owners: tokio::sync::watch::Receiver<cairn_cluster::WorkOwners>,
) {
    loop {
        // A node that joined takes its share at the time it published.
        let next = owners.borrow().next_change(cairn_http::now_ms());
        let at_next = async {
            match next {
                Some(at) => tokio::time::sleep(Duration::from_millis((at - cairn_http::now_ms()).max(0) as u64)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            changed = owners.changed() => if changed.is_err() { return },
            _ = at_next => {}
        }
        let Some(running) = running.upgrade() else {
            return;
        };
        let ids: Vec<String> = owners
            .borrow_and_update()
            .ids(cairn_http::now_ms())
            .into_iter()
            .map(str::to_string)
            .collect();
        tracing::info!(nodes = ?ids, "the nodes sharing scraping and rules changed");
        // One reload or reassignment at a time, on the configuration loaded last.
        let _one_at_a_time = running.reloading.lock().await;
        running.scrape.reassign().await;
        running.rules.reassign();
    }
}

/// The groups and rules `/api/v1/rules` asks for.
fn filter_groups(groups: Vec<GroupStatus>, filter: &RuleFilter) -> Vec<GroupStatus> {
    let wanted = |list: &[String], v: &str| list.is_empty() || list.iter().any(|w| w == v);
    let rule_filters = filter.alerting.is_some() || !filter.rule_names.is_empty() || !filter.matchers.is_empty();
    groups
        .into_iter()
        .filter(|g| wanted(&filter.rule_groups, &g.name) && wanted(&filter.files, &g.file))
        .map(|mut g| {
            g.rules.retain(|r| {
                filter.alerting.is_none_or(|a| a == r.alerting)
                    && wanted(&filter.rule_names, &r.name)
                    && (filter.matchers.is_empty() || filter.matchers.iter().any(|set| matches_all(set, &r.labels)))
            });
            if filter.exclude_alerts {
                for r in &mut g.rules {
                    r.alerts.clear();
                }
            }
            g
        })
        .filter(|g| !rule_filters || !g.rules.is_empty())
        .collect()
}

fn matches_all(set: &[Matcher], labels: &BTreeMap<String, String>) -> bool {
    set.iter()
        .all(|m| m.matches(labels.get(m.name.as_str()).map_or("", String::as_str)))
}

/// Each discovered Alertmanager as one label set: its own labels over its group's.
fn targets_of(groups: &[TargetGroup]) -> Vec<Labels> {
    let mut out = Vec::new();
    for g in groups {
        for t in &g.targets {
            let mut pairs = g.labels.clone();
            pairs.extend(t.iter().map(|(k, v)| (k.clone(), v.clone())));
            out.push(Labels::from_pairs(pairs));
        }
    }
    out
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// The host (`host[:port]`) and scheme of the external URL.
fn external_host_and_scheme(url: &str) -> (String, String) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let host = rest.split('/').next().unwrap_or("");
    (host.to_string(), scheme.to_string())
}

/// Rule evaluation's alerts, handed to the Alertmanager notifier.
struct ToAlertmanager(Notifier);

impl AlertNotifier for ToAlertmanager {
    fn send(&self, alerts: Vec<NotifyAlert>) {
        self.0.send(
            alerts
                .into_iter()
                .map(|a| Alert {
                    labels: a.labels,
                    annotations: Labels::from_pairs(a.annotations),
                    starts_at: a.starts_at,
                    ends_at: Some(a.ends_at),
                    generator_url: a.generator_url,
                })
                .collect(),
        );
    }
}

/// What the API shows of it.
pub struct Shown(pub Arc<Running>);

impl Monitoring for Shown {
    fn targets(&self, state: Option<&str>, scrape_pool: Option<&str>) -> Value {
        self.0.scrape.targets_json(state, scrape_pool, &self.0.global_url)
    }

    fn scrape_pools(&self) -> Vec<String> {
        self.0.scrape.active_targets().into_keys().collect()
    }

    fn targets_metadata(&self, match_target: &[Matcher], metric: Option<&str>, limit: Option<usize>) -> Value {
        self.0.scrape.targets_metadata_json(match_target, metric, limit)
    }

    fn scraped_metadata(&self) -> Vec<MetricMetadata> {
        let mut out = Vec::new();
        for targets in self.0.scrape.active_targets().into_values() {
            for t in targets {
                out.extend(t.metadata().into_iter().map(|m| MetricMetadata {
                    metric_family_name: m.family,
                    metric_type: m.metric_type,
                    help: m.help,
                    unit: m.unit,
                }));
            }
        }
        out
    }

    fn rules(&self, filter: &RuleFilter) -> Value {
        cairn_rules::rules_json(&filter_groups(self.0.rules.groups(), filter))
    }

    fn alerts(&self) -> Value {
        cairn_rules::alerts_json(&self.0.rules.alerts())
    }

    fn alertmanagers(&self) -> Value {
        let (active, dropped) = self.0.notifier.alertmanagers();
        let urls = |v: Vec<String>| v.into_iter().map(|url| json!({ "url": url })).collect::<Vec<_>>();
        json!({ "activeAlertmanagers": urls(active), "droppedAlertmanagers": urls(dropped) })
    }

    fn config_yaml(&self) -> String {
        self.0.config_yaml.read().clone()
    }

    fn reload(&self) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'static>> {
        let running = self.0.clone();
        Box::pin(async move { running.reload().await })
    }

    fn reload_status(&self) -> ReloadStatus {
        self.0.reload_status()
    }

    fn render_metrics(&self, e: &mut Exposition) {
        let r = &self.0;
        self_metrics::render_reload(e, &r.reload_status());
        let scrape = r.scrape.metrics();
        self_metrics::render_scrape(e, &scrape);
        self_metrics::render_discovery(
            e,
            &self_metrics::DiscoveryFigures {
                scrape: scrape
                    .pools
                    .iter()
                    .map(|p| (p.job.clone(), p.discovered_targets))
                    .collect(),
                notify: r
                    .alertmanagers_discovered
                    .lock()
                    .iter()
                    .map(|(set, n)| (set.clone(), *n as u64))
                    .collect(),
            },
        );
        self_metrics::render_rules(e, &r.rules.metrics());
        self_metrics::render_notifier(
            e,
            &self_metrics::NotifierFigures {
                alertmanagers: r.notifier.stats(),
                queue_capacity: r.notifier.queue_capacity(),
                discovered: r.notifier.alertmanagers().0.len(),
            },
        );
        if let Some(remote_write) = &r.remote_write {
            self_metrics::render_remote_write(e, &remote_write.figures());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_not_carried_out_are_refused_by_name() {
        let config = Config::parse(
            "global:\n  query_log_file: q.log\n\
             scrape_configs:\n  - job_name: a\n    scrape_failure_log_file: f.log\n",
            Path::new("/"),
        )
        .unwrap();
        assert_eq!(
            unimplemented_settings(&config),
            vec![
                "global: query_log_file".to_string(),
                "scrape_configs (job \"a\"): scrape_failure_log_file".to_string(),
            ]
        );
        assert!(unimplemented_settings(&Config::parse("scrape_configs: []\n", Path::new("/")).unwrap()).is_empty());
    }

    /// A rule's name, whether it alerts, and its labels.
    type TestRule<'a> = (&'a str, bool, &'a [(&'a str, &'a str)]);

    fn group(file: &str, name: &str, rules: &[TestRule<'_>]) -> GroupStatus {
        GroupStatus {
            name: name.into(),
            file: file.into(),
            interval: Duration::from_secs(60),
            query_offset: Duration::ZERO,
            limit: 0,
            rules: rules
                .iter()
                .map(|(rule, alerting, labels)| cairn_rules::RuleStatus {
                    name: rule.to_string(),
                    alerting: *alerting,
                    query: "up".into(),
                    duration: Duration::ZERO,
                    keep_firing_for: Duration::ZERO,
                    labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
                    annotations: BTreeMap::new(),
                    health: cairn_rules::RuleHealth::Good,
                    last_error: None,
                    evaluation_time: Duration::ZERO,
                    last_evaluation: None,
                    state: cairn_rules::AlertState::Inactive,
                    alerts: Vec::new(),
                })
                .collect(),
            evaluation_time: Duration::ZERO,
            last_evaluation: None,
        }
    }

    fn names(groups: &[GroupStatus]) -> Vec<String> {
        groups
            .iter()
            .map(|g| {
                format!(
                    "{}:{}",
                    g.name,
                    g.rules.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(",")
                )
            })
            .collect()
    }

    #[test]
    fn rules_are_filtered_as_prometheus_does() {
        let groups = vec![
            group(
                "a.yml",
                "g1",
                &[("r1", false, &[]), ("A1", true, &[("severity", "page")])],
            ),
            group("a.yml", "g2", &[("A2", true, &[("severity", "ticket")])]),
            group("b.yml", "g3", &[("r3", false, &[])]),
        ];
        let run = |f: RuleFilter| filter_groups(groups.clone(), &f);
        assert_eq!(names(&run(RuleFilter::default())), ["g1:r1,A1", "g2:A2", "g3:r3"]);
        let alerts = run(RuleFilter {
            alerting: Some(true),
            ..RuleFilter::default()
        });
        assert_eq!(
            names(&alerts),
            ["g1:A1", "g2:A2"],
            "groups left empty by a rule filter go"
        );
        let by_file = run(RuleFilter {
            files: vec!["b.yml".into()],
            ..RuleFilter::default()
        });
        assert_eq!(names(&by_file), ["g3:r3"]);
        let matched = run(RuleFilter {
            matchers: vec![vec![Matcher::equal("severity", "page")]],
            ..RuleFilter::default()
        });
        assert_eq!(names(&matched), ["g1:A1"]);
    }

    #[tokio::test]
    async fn a_refused_reload_is_reported_until_a_good_one() {
        let dir = std::env::temp_dir().join(format!(
            "cairn-reload-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("prometheus.yml");
        std::fs::write(&file, "global:\n  evaluation_interval: 1m\n").unwrap();
        let tenants: Arc<dyn Tenants> = Arc::new(cairn_storage::MemTenants::new());
        let running = Running::start(
            MonitoringConfig::new(file.clone()),
            tenants,
            cairn_promql::EngineOptions::default(),
            "127.0.0.1:9090".parse().unwrap(),
            None,
            None,
        )
        .await
        .unwrap();
        let rendered = |r: &Arc<Running>| {
            let mut e = Exposition::new();
            Shown(r.clone()).render_metrics(&mut e);
            e.finish()
        };
        let started = running.reload_status();
        assert!(started.successful);
        assert!(rendered(&running).contains("\nprometheus_config_last_reload_successful 1\n"));

        std::fs::write(&file, "global:\n  no_such_key: 1\n").unwrap();
        assert!(running.reload().await.is_err());
        let refused = running.reload_status();
        assert!(!refused.successful);
        assert_eq!(refused.last_success, started.last_success, "the last success stays");
        assert!(rendered(&running).contains("\nprometheus_config_last_reload_successful 0\n"));

        std::fs::write(&file, "global:\n  evaluation_interval: 30s\n").unwrap();
        running.reload().await.unwrap();
        let good = running.reload_status();
        assert!(good.successful);
        assert!(good.last_success > started.last_success);
        let text = rendered(&running);
        assert!(text.contains("\nprometheus_config_last_reload_successful 1\n"));
        assert!(text.contains("# TYPE prometheus_notifications_queue_capacity gauge\n"));
        running.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn external_url_host_and_scheme() {
        assert_eq!(
            external_host_and_scheme("https://prom.example.com:8443/cairn/"),
            ("prom.example.com:8443".into(), "https".into())
        );
        assert_eq!(
            external_host_and_scheme("http://h:9090"),
            ("h:9090".into(), "http".into())
        );
    }

    #[test]
    fn discovered_alertmanagers_take_their_groups_labels_below_their_own() {
        let group = TargetGroup {
            source: "s".into(),
            targets: vec![
                BTreeMap::from([("__address__".to_string(), "a:9093".to_string())]),
                BTreeMap::from([
                    ("__address__".to_string(), "b:9093".to_string()),
                    ("zone".to_string(), "own".to_string()),
                ]),
            ],
            labels: BTreeMap::from([("zone".to_string(), "group".to_string())]),
        };
        let targets = targets_of(&[group]);
        assert_eq!(
            targets[0],
            Labels::from_pairs([("__address__", "a:9093"), ("zone", "group")])
        );
        assert_eq!(
            targets[1],
            Labels::from_pairs([("__address__", "b:9093"), ("zone", "own")])
        );
    }
}
