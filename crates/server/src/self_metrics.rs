//! Prometheus' own metrics of what `--config.file` runs, under Prometheus
//! 3.14's names, types and labels (the mixin's alerts and dashboards query
//! them): configuration reloads, scraping and service discovery, rules,
//! notifications. The crates keep the figures; this renders their snapshots.
//!
//! Deliberately absent (they describe Go internals or things Cairn does not
//! have): the `*_histogram_seconds` native-histogram twins of the summaries,
//! `prometheus_target_scrape_duration_seconds` (native histogram only),
//! `prometheus_target_scrape_pool_symboltable_items` (Go's label symbol
//! table), `prometheus_target_metadata_cache_{entries,bytes}`,
//! `prometheus_target_scrapes_sample_out_of_order_total` (storage takes any
//! order), `prometheus_target_scrapes_exemplar_out_of_order_total` (no
//! exemplars), `prometheus_sd_{received_updates,updates_delayed,updates}_total`,
//! `prometheus_sd_last_update_timestamp_seconds`, the file SD's
//! `_scan_duration_seconds`, `_watcher_errors_total` (it polls; no watcher)
//! and `_mtime_seconds`, `prometheus_sd_refresh_{failures_total,duration_seconds}`,
//! and every other discovery mechanism's families.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use cairn_http::{Exposition, ReloadStatus};
use cairn_model::summary::SummarySnapshot;
use cairn_notifier::AlertmanagerStats;
use cairn_rules::RuleMetrics;
use cairn_scrape::ScrapeMetricsSnapshot;

/// The notifier's figures at one moment.
pub struct NotifierFigures {
    /// Per active Alertmanager URL: its counters and queue length.
    pub alertmanagers: BTreeMap<String, (AlertmanagerStats, usize)>,
    pub queue_capacity: usize,
    /// Active Alertmanagers of every set.
    pub discovered: usize,
}

/// Discovery's figures: targets per scrape job or Alertmanager set.
pub struct DiscoveryFigures {
    pub scrape: Vec<(String, u64)>,
    pub notify: Vec<(String, u64)>,
}

fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

pub fn render_reload(e: &mut Exposition, r: &ReloadStatus) {
    e.single(
        "prometheus_config_last_reload_successful",
        "Whether the last configuration reload succeeded (1) or was refused (0).",
        "gauge",
        if r.successful { 1.0 } else { 0.0 },
    );
    e.single(
        "prometheus_config_last_reload_success_timestamp_seconds",
        "When the configuration was last loaded successfully (Unix seconds).",
        "gauge",
        unix_seconds(r.last_success),
    );
}

/// A family of one summary series per label value.
fn summaries<'a>(
    e: &mut Exposition,
    name: &str,
    help: &str,
    label: &str,
    series: impl IntoIterator<Item = (&'a str, &'a SummarySnapshot)>,
) {
    e.family(name, help, "summary");
    for (value, s) in series {
        e.summary(name, &[(label, value)], s);
    }
}

/// A family of one series per label value.
fn by_label<'a>(
    e: &mut Exposition,
    name: &str,
    help: &str,
    kind: &str,
    label: &str,
    series: impl IntoIterator<Item = (&'a str, f64)>,
) {
    e.family(name, help, kind);
    for (value, v) in series {
        e.sample(name, &[(label, value)], v);
    }
}

pub fn render_scrape(e: &mut Exposition, m: &ScrapeMetricsSnapshot) {
    let counters: [(&str, &str, u64); 12] = [
        (
            "prometheus_target_scrape_pools_total",
            "Scrape pools created (attempts).",
            m.scrape_pools_total,
        ),
        (
            "prometheus_target_scrape_pools_failed_total",
            "Scrape pools whose creation failed.",
            m.scrape_pools_failed_total,
        ),
        (
            "prometheus_target_scrape_pool_reloads_total",
            "Reloads of scrape pools whose job changed.",
            m.scrape_pool_reloads_total,
        ),
        (
            "prometheus_target_scrape_pool_reloads_failed_total",
            "Scrape pool reloads that failed.",
            m.scrape_pool_reloads_failed_total,
        ),
        (
            "prometheus_target_scrape_pool_exceeded_target_limit_total",
            "Times a scrape pool had more targets than its target_limit.",
            m.scrape_pool_exceeded_target_limit_total,
        ),
        (
            "prometheus_target_scrape_pool_exceeded_label_limits_total",
            "Scrapes refused for a series over a label limit.",
            m.scrape_pool_exceeded_label_limits_total,
        ),
        (
            "prometheus_target_scrapes_exceeded_body_size_limit_total",
            "Scrapes whose body was larger than body_size_limit.",
            m.scrapes_exceeded_body_size_limit_total,
        ),
        (
            "prometheus_target_scrapes_exceeded_sample_limit_total",
            "Scrapes refused for having more samples than sample_limit.",
            m.scrapes_exceeded_sample_limit_total,
        ),
        (
            "prometheus_target_scrapes_exceeded_native_histogram_bucket_limit_total",
            "Scrapes refused for a native histogram over the bucket limit.",
            m.scrapes_exceeded_native_histogram_bucket_limit_total,
        ),
        (
            "prometheus_target_scrapes_sample_duplicate_timestamp_total",
            "Scraped samples refused as a second value of a series at one time.",
            m.scrapes_sample_duplicate_timestamp_total,
        ),
        (
            "prometheus_target_scrapes_sample_out_of_bounds_total",
            "Scraped samples refused for a time storage does not accept.",
            m.scrapes_sample_out_of_bounds_total,
        ),
        (
            "prometheus_target_scrapes_cache_flush_forced_total",
            "Scrape caches flushed because they grew while scrapes failed.",
            m.scrapes_cache_flush_forced_total,
        ),
    ];
    for (name, help, v) in counters {
        e.single(name, help, "counter", v as f64);
    }
    summaries(
        e,
        "prometheus_target_interval_length_seconds",
        "Actual time between the starts of consecutive scrapes, by configured interval.",
        "interval",
        m.interval_length.iter().map(|(i, s)| (i.as_str(), s)),
    );
    summaries(
        e,
        "prometheus_target_reload_length_seconds",
        "Time a scrape pool reload took, by configured interval.",
        "interval",
        m.reload_length.iter().map(|(i, s)| (i.as_str(), s)),
    );
    summaries(
        e,
        "prometheus_target_sync_length_seconds",
        "Time a scrape pool took to apply discovered targets.",
        "scrape_job",
        m.pools.iter().map(|p| (p.job.as_str(), &p.sync_length)),
    );
    type PoolFamily = (
        &'static str,
        &'static str,
        &'static str,
        fn(&cairn_scrape::PoolMetrics) -> u64,
    );
    let per_pool: [PoolFamily; 4] = [
        (
            "prometheus_target_scrape_pool_sync_total",
            "Syncs of a scrape pool with discovered targets.",
            "counter",
            |p| p.syncs_total,
        ),
        (
            "prometheus_target_sync_failed_total",
            "Discovered targets whose labels could not be built.",
            "counter",
            |p| p.sync_failed_total,
        ),
        (
            "prometheus_target_scrape_pool_targets",
            "Targets a scrape pool scrapes.",
            "gauge",
            |p| p.targets,
        ),
        (
            "prometheus_target_scrape_pool_target_limit",
            "A scrape pool's target_limit (0: none).",
            "gauge",
            |p| p.target_limit,
        ),
    ];
    for (name, help, kind, value) in per_pool {
        by_label(
            e,
            name,
            help,
            kind,
            "scrape_job",
            m.pools.iter().map(|p| (p.job.as_str(), value(p) as f64)),
        );
    }
    e.single(
        "prometheus_sd_file_read_errors_total",
        "File service discovery files that could not be read or parsed.",
        "counter",
        m.sd_file_read_errors_total as f64,
    );
    e.single(
        "prometheus_sd_http_failures_total",
        "HTTP service discovery refreshes that failed.",
        "counter",
        m.sd_http_failures_total as f64,
    );
    e.single(
        "prometheus_sd_dns_lookups_total",
        "The number of DNS-SD lookups.",
        "counter",
        m.sd_dns_lookups_total as f64,
    );
    e.single(
        "prometheus_sd_dns_lookup_failures_total",
        "The number of DNS-SD lookup failures.",
        "counter",
        m.sd_dns_lookup_failures_total as f64,
    );
    e.single(
        "prometheus_sd_kubernetes_failures_total",
        "The number of failed WATCH/LIST requests.",
        "counter",
        m.sd_kubernetes_failures_total as f64,
    );
    let name = "prometheus_sd_kubernetes_events_total";
    e.family(name, "The number of Kubernetes events handled.", "counter");
    for (role, event, n) in &m.sd_kubernetes_events_total {
        e.sample(name, &[("event", event), ("role", role)], *n as f64);
    }
}

pub fn render_discovery(e: &mut Exposition, d: &DiscoveryFigures) {
    // A configuration whose discovery cannot start refuses the whole
    // (re)load, so no running configuration has failed.
    let name = "prometheus_sd_failed_configs";
    e.family(name, "Discovery configurations that failed to start.", "gauge");
    for manager in ["notify", "scrape"] {
        e.sample(name, &[("name", manager)], 0.0);
    }
    let name = "prometheus_sd_discovered_targets";
    e.family(name, "Targets discovered, by configuration.", "gauge");
    for (manager, configs) in [("notify", &d.notify), ("scrape", &d.scrape)] {
        for (config, n) in configs {
            e.sample(name, &[("config", config), ("name", manager)], *n as f64);
        }
    }
}

pub fn render_rules(e: &mut Exposition, m: &RuleMetrics) {
    e.family(
        "prometheus_rule_evaluation_duration_seconds",
        "How long rule evaluations took.",
        "summary",
    )
    .summary(
        "prometheus_rule_evaluation_duration_seconds",
        &[],
        &m.evaluation_duration,
    );
    e.family(
        "prometheus_rule_group_duration_seconds",
        "How long rule group iterations took.",
        "summary",
    )
    .summary("prometheus_rule_group_duration_seconds", &[], &m.group_duration);
    let keys: Vec<String> = m.groups.iter().map(|g| g.key()).collect();
    type GroupFamily = (
        &'static str,
        &'static str,
        &'static str,
        fn(&cairn_rules::GroupMetrics) -> f64,
    );
    let families: [GroupFamily; 11] = [
        (
            "prometheus_rule_evaluations_total",
            "Rule evaluations.",
            "counter",
            |g| g.evaluations_total as f64,
        ),
        (
            "prometheus_rule_evaluation_failures_total",
            "Rule evaluations that failed (query or write).",
            "counter",
            |g| g.evaluation_failures_total as f64,
        ),
        (
            "prometheus_rule_group_iterations_total",
            "Scheduled iterations of a rule group (run or missed).",
            "counter",
            |g| g.iterations_total as f64,
        ),
        (
            "prometheus_rule_group_iterations_missed_total",
            "Scheduled iterations skipped because the previous one overran.",
            "counter",
            |g| g.iterations_missed_total as f64,
        ),
        (
            "prometheus_rule_group_interval_seconds",
            "A rule group's evaluation interval.",
            "gauge",
            |g| g.interval_seconds,
        ),
        (
            "prometheus_rule_group_last_duration_seconds",
            "How long the group's last iteration took.",
            "gauge",
            |g| g.last_duration_seconds,
        ),
        (
            "prometheus_rule_group_last_evaluation_timestamp_seconds",
            "When the group's last iteration started (Unix seconds).",
            "gauge",
            |g| g.last_evaluation_timestamp_seconds,
        ),
        (
            "prometheus_rule_group_last_evaluation_samples",
            "Samples the group's rules returned in its last iteration.",
            "gauge",
            |g| g.last_evaluation_samples as f64,
        ),
        (
            "prometheus_rule_group_last_rule_duration_sum_seconds",
            "The sum of the group's rule durations in its last iteration.",
            "gauge",
            |g| g.last_rule_duration_sum_seconds,
        ),
        ("prometheus_rule_group_rules", "Rules in the group.", "gauge", |g| {
            g.rules as f64
        }),
        (
            "prometheus_rule_group_last_restore_duration_seconds",
            "How long the group's restore of alert state took.",
            "gauge",
            |g| g.last_restore_duration_seconds.unwrap_or(f64::NAN),
        ),
    ];
    for (name, help, kind, value) in families {
        let restore = name == "prometheus_rule_group_last_restore_duration_seconds";
        by_label(
            e,
            name,
            help,
            kind,
            "rule_group",
            m.groups
                .iter()
                .zip(&keys)
                // Only groups that restored state have a restore duration.
                .filter(|(g, _)| !restore || g.last_restore_duration_seconds.is_some())
                .map(|(g, k)| (k.as_str(), value(g))),
        );
    }
}

pub fn render_notifier(e: &mut Exposition, n: &NotifierFigures) {
    let ams = &n.alertmanagers;
    summaries(
        e,
        "prometheus_notifications_latency_seconds",
        "How long successful sends to an Alertmanager took.",
        "alertmanager",
        ams.iter()
            .filter_map(|(url, (s, _))| s.latency.as_ref().map(|l| (url.as_str(), l))),
    );
    type AmFamily = (
        &'static str,
        &'static str,
        &'static str,
        fn(&AlertmanagerStats, usize) -> f64,
    );
    let families: [AmFamily; 4] = [
        (
            "prometheus_notifications_errors_total",
            "Alerts whose send to an Alertmanager failed.",
            "counter",
            |s, _| s.errors as f64,
        ),
        (
            "prometheus_notifications_sent_total",
            "Alerts sent to an Alertmanager.",
            "counter",
            |s, _| s.sent as f64,
        ),
        (
            "prometheus_notifications_dropped_total",
            "Alerts dropped: failed sends and full queues.",
            "counter",
            |s, _| s.dropped as f64,
        ),
        (
            "prometheus_notifications_queue_length",
            "Alerts waiting in an Alertmanager's queue.",
            "gauge",
            |_, queued| queued as f64,
        ),
    ];
    for (name, help, kind, value) in families {
        by_label(
            e,
            name,
            help,
            kind,
            "alertmanager",
            ams.iter().map(|(url, (s, q))| (url.as_str(), value(s, *q))),
        );
    }
    e.single(
        "prometheus_notifications_queue_capacity",
        "How many alerts each Alertmanager's queue holds.",
        "gauge",
        n.queue_capacity as f64,
    );
    e.single(
        "prometheus_notifications_alertmanagers_discovered",
        "Alertmanagers discovered and active.",
        "gauge",
        n.discovered as f64,
    );
}

/// The `prometheus_remote_storage_*` families: one series per queue,
/// labelled with its name and URL as Prometheus labels them.
pub fn render_remote_write(e: &mut Exposition, queues: &[cairn_remote_write::QueueFigures]) {
    use cairn_remote_write::QueueFigures as Q;
    type Family = (&'static str, &'static str, &'static str, fn(&Q) -> f64);
    let families: [Family; 22] = [
        (
            "prometheus_remote_storage_samples_total",
            "Samples sent to remote storage.",
            "counter",
            |q| q.samples as f64,
        ),
        (
            "prometheus_remote_storage_histograms_total",
            "Native histograms sent to remote storage.",
            "counter",
            |q| q.histograms as f64,
        ),
        (
            "prometheus_remote_storage_samples_failed_total",
            "Samples refused by remote storage for good, and dropped.",
            "counter",
            |q| q.samples_failed as f64,
        ),
        (
            "prometheus_remote_storage_histograms_failed_total",
            "Native histograms refused by remote storage for good, and dropped.",
            "counter",
            |q| q.histograms_failed as f64,
        ),
        (
            "prometheus_remote_storage_samples_retried_total",
            "Samples whose send failed recoverably and was tried again.",
            "counter",
            |q| q.samples_retried as f64,
        ),
        (
            "prometheus_remote_storage_histograms_retried_total",
            "Native histograms whose send failed recoverably and was tried again.",
            "counter",
            |q| q.histograms_retried as f64,
        ),
        (
            "prometheus_remote_storage_samples_dropped_total",
            "Samples read from the WAL and not sent: dropped by relabelling, older than sample_age_limit, or of a series whose labels were gone.",
            "counter",
            |q| q.samples_dropped as f64,
        ),
        (
            "prometheus_remote_storage_histograms_dropped_total",
            "Native histograms read from the WAL and not sent.",
            "counter",
            |q| q.histograms_dropped as f64,
        ),
        (
            "prometheus_remote_storage_samples_pending",
            "Samples read from the WAL and waiting to be sent.",
            "gauge",
            |q| q.pending as f64,
        ),
        (
            "prometheus_remote_storage_bytes_total",
            "Bytes of requests sent to remote storage, compressed.",
            "counter",
            |q| q.bytes as f64,
        ),
        (
            "prometheus_remote_storage_metadata_total",
            "Metadata entries sent to remote storage.",
            "counter",
            |q| q.metadata as f64,
        ),
        (
            "prometheus_remote_storage_metadata_failed_total",
            "Metadata entries refused by remote storage for good.",
            "counter",
            |q| q.metadata_failed as f64,
        ),
        (
            "prometheus_remote_storage_metadata_retried_total",
            "Metadata entries whose send failed recoverably and was tried again.",
            "counter",
            |q| q.metadata_retried as f64,
        ),
        (
            "prometheus_remote_storage_metadata_bytes_total",
            "Bytes of metadata requests sent to remote storage, compressed.",
            "counter",
            |q| q.metadata_bytes as f64,
        ),
        (
            "prometheus_remote_storage_shards",
            "Shards sending in parallel.",
            "gauge",
            |q| q.shards as f64,
        ),
        (
            "prometheus_remote_storage_shards_desired",
            "Shards the queue's backlog and send time call for.",
            "gauge",
            |q| q.shards_desired as f64,
        ),
        (
            "prometheus_remote_storage_shards_min",
            "The least shards the queue runs.",
            "gauge",
            |q| q.shards_min as f64,
        ),
        (
            "prometheus_remote_storage_shards_max",
            "The most shards the queue runs.",
            "gauge",
            |q| q.shards_max as f64,
        ),
        (
            "prometheus_remote_storage_shard_capacity",
            "Samples the queue holds per shard.",
            "gauge",
            |q| q.shard_capacity as f64,
        ),
        (
            "prometheus_remote_storage_queue_highest_sent_timestamp_seconds",
            "Timestamp of the newest sample delivered (Unix seconds).",
            "gauge",
            |q| q.highest_sent_seconds,
        ),
        (
            "prometheus_remote_storage_queue_highest_timestamp_seconds",
            "Timestamp of the newest sample read from the WAL (Unix seconds).",
            "gauge",
            |q| q.highest_read_seconds,
        ),
        (
            "cairn_remote_write_wal_gaps_total",
            "Stretches of the WAL lost before remote write read them (deleted past --storage.wal-max-retained-bytes, or damaged): their samples were not forwarded.",
            "counter",
            |q| q.wal_gaps as f64,
        ),
    ];
    let labels = |q: &Q| [("remote_name", q.remote_name.clone()), ("url", q.url.clone())];
    for (name, help, kind, value) in families {
        e.family(name, help, kind);
        for q in queues {
            let l = labels(q);
            e.sample(name, &[(l[0].0, &l[0].1), (l[1].0, &l[1].1)], value(q));
        }
    }
    let name = "prometheus_remote_storage_sent_batch_duration_seconds";
    e.family(name, "How long sending a batch to remote storage took.", "histogram");
    for q in queues {
        let l = labels(q);
        let (rn, url) = (l[0].1.as_str(), l[1].1.as_str());
        for (bound, count) in cairn_remote_write::BATCH_DURATION_BUCKETS
            .iter()
            .zip(&q.batch_duration_buckets)
        {
            let le = bound.to_string();
            e.sample(
                &format!("{name}_bucket"),
                &[("remote_name", rn), ("url", url), ("le", &le)],
                *count as f64,
            );
        }
        e.sample(
            &format!("{name}_bucket"),
            &[("remote_name", rn), ("url", url), ("le", "+Inf")],
            q.batch_duration_count as f64,
        );
        e.sample(
            &format!("{name}_sum"),
            &[("remote_name", rn), ("url", url)],
            q.batch_duration_sum,
        );
        e.sample(
            &format!("{name}_count"),
            &[("remote_name", rn), ("url", url)],
            q.batch_duration_count as f64,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reload_status_renders_as_prometheus_gauges() {
        let mut e = Exposition::new();
        render_reload(
            &mut e,
            &ReloadStatus {
                successful: false,
                last_success: UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000),
            },
        );
        let text = e.finish();
        let value = |name: &str| -> f64 {
            let line = text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap();
            line.split(' ').nth(1).unwrap().parse().unwrap()
        };
        assert_eq!(value("prometheus_config_last_reload_successful"), 0.0);
        assert_eq!(value("prometheus_config_last_reload_success_timestamp_seconds"), 1.7e9);
    }
}
