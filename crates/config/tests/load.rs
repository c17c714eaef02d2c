//! Loading `prometheus.yml`: every supported key, defaults, paths and the effective configuration.

use std::path::{Path, PathBuf};

use cairn_config::{
    ByteSize, Config, Duration, NameValidationScheme, RelabelAction, ScrapeProtocol, Secret, TlsVersion,
};
use cairn_model::Labels;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testdata")
}

fn parse(yaml: &str) -> Config {
    Config::parse(yaml, Path::new("/etc/prometheus")).unwrap_or_else(|e| panic!("{e}\n{yaml}"))
}

fn full() -> Config {
    Config::load(testdata().join("full.yml")).unwrap_or_else(|e| panic!("{e}"))
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn load_empty_config_is_all_defaults() {
    for yaml in ["", "# nothing\n", "global:\n", "global: {}\nscrape_configs:\n"] {
        let c = parse(yaml);
        assert_eq!(c.global.scrape_interval, secs(60), "{yaml:?}");
        assert_eq!(c.global.scrape_timeout, secs(10));
        assert_eq!(c.global.evaluation_interval, secs(60));
        assert_eq!(c.global.rule_query_offset, Duration::ZERO);
        assert_eq!(c.global.metric_name_validation_scheme, NameValidationScheme::Utf8);
        assert!(c.scrape_configs.is_empty());
        assert!(c.alerting.alertmanagers.is_empty());
        assert!(c.remote_write.is_empty());
    }
}

#[test]
fn load_minimal_job_gets_prometheus_defaults() {
    let c = parse("scrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: ['localhost:9100']\n");
    let s = &c.scrape_configs[0];
    assert_eq!(s.scrape_interval, secs(60));
    assert_eq!(s.scrape_timeout, secs(10));
    assert_eq!(s.metrics_path, "/metrics");
    assert_eq!(s.scheme, "http");
    assert!(!s.honor_labels);
    assert!(s.honor_timestamps);
    assert!(!s.track_timestamps_staleness);
    assert!(s.enable_compression);
    assert_eq!(s.scrape_protocols, ScrapeProtocol::DEFAULT.to_vec());
    assert_eq!(s.fallback_scrape_protocol, None);
    assert!(!s.scrape_native_histograms_enabled());
    assert!(!s.always_scrape_classic_histograms_enabled());
    assert!(!s.convert_classic_histograms_to_nhcb_enabled());
    assert_eq!(s.body_size_limit, ByteSize::from_bytes(0));
    assert_eq!(s.sample_limit, 0);
    assert!(s.http_client.follow_redirects);
    assert!(s.http_client.enable_http2);
    assert_eq!(s.name_validation(), NameValidationScheme::Utf8);
    assert_eq!(s.metric_name_escaping_scheme, "allow-utf-8");
    assert_eq!(s.service_discovery.static_configs[0].targets, ["localhost:9100"]);
}

#[test]
fn load_short_global_interval_caps_default_timeout() {
    let c = parse(
        "global: {scrape_interval: 5s}\nscrape_configs:\n  - job_name: a\n  - job_name: b\n    scrape_interval: 2s\n",
    );
    assert_eq!(c.global.scrape_timeout, secs(5));
    assert_eq!(c.scrape_configs[0].scrape_interval, secs(5));
    assert_eq!(c.scrape_configs[0].scrape_timeout, secs(5));
    assert_eq!(c.scrape_configs[1].scrape_timeout, secs(2));
}

#[test]
fn load_native_histograms_choose_protobuf_first() {
    let c = parse(
        "global: {scrape_native_histograms: true}\nscrape_configs:\n  - job_name: a\n  - job_name: b\n    scrape_native_histograms: false\n",
    );
    assert_eq!(
        c.scrape_configs[0].scrape_protocols,
        ScrapeProtocol::PROTO_FIRST.to_vec()
    );
    assert_eq!(c.scrape_configs[1].scrape_protocols, ScrapeProtocol::DEFAULT.to_vec());
    let c = parse(
        "global: {scrape_protocols: [PrometheusText0.0.4]}\nscrape_configs:\n  - job_name: a\n    scrape_native_histograms: true\n",
    );
    assert_eq!(
        c.scrape_configs[0].scrape_protocols,
        [ScrapeProtocol::PrometheusText0_0_4]
    );
}

#[test]
fn load_full_config_global() {
    let c = full();
    let g = &c.global;
    assert_eq!(g.scrape_interval, secs(15));
    assert_eq!(g.scrape_timeout, secs(5));
    assert_eq!(g.evaluation_interval, secs(30));
    assert_eq!(g.rule_query_offset, secs(60));
    assert_eq!(
        g.external_labels,
        Labels::from_pairs([("region", "eu-west"), ("replica", "1")])
    );
    assert_eq!(g.body_size_limit, ByteSize::from_bytes(100 << 20));
    assert_eq!((g.sample_limit, g.target_limit, g.label_limit), (50_000, 1000, 64));
    assert_eq!(
        (
            g.label_name_length_limit,
            g.label_value_length_limit,
            g.keep_dropped_targets
        ),
        (128, 2048, 10)
    );
    assert!(g.always_scrape_classic_histograms && g.extra_scrape_metrics && !g.scrape_native_histograms);
    let dir = testdata();
    assert_eq!(g.query_log_file, dir.join("logs/queries.log").to_string_lossy());
    assert_eq!(
        c.rule_files,
        [
            dir.join("rules/*.yml").to_string_lossy().as_ref(),
            "/etc/prometheus/alerts.yml"
        ]
    );
    assert_eq!(c.scrape_config_files, [dir.join("jobs/*.yml").to_string_lossy()]);
}

#[test]
fn load_full_config_inherits_global_limits() {
    let c = full();
    let p = &c.scrape_configs[0];
    assert_eq!(p.job_name, "prometheus");
    assert_eq!((p.scrape_interval, p.scrape_timeout), (secs(15), secs(5)));
    assert_eq!(p.body_size_limit, ByteSize::from_bytes(100 << 20));
    assert_eq!((p.sample_limit, p.target_limit, p.label_limit), (50_000, 1000, 64));
    assert_eq!(
        (
            p.label_name_length_limit,
            p.label_value_length_limit,
            p.keep_dropped_targets
        ),
        (128, 2048, 10)
    );
    assert!(p.always_scrape_classic_histograms_enabled());
    assert!(p.extra_scrape_metrics_enabled());
    assert_eq!(
        p.scrape_failure_log_file,
        testdata().join("logs/scrape_failures.log").to_string_lossy()
    );
}

#[test]
fn load_full_config_node_job() {
    let c = full();
    let dir = testdata();
    let path = |p: &str| dir.join(p).to_string_lossy().into_owned();
    let n = &c.scrape_configs[1];
    assert_eq!(n.job_name, "node");
    assert_eq!((n.scrape_interval, n.scrape_timeout), (secs(10), secs(8)));
    assert!(n.honor_labels && !n.honor_timestamps && n.track_timestamps_staleness);
    assert_eq!(
        n.scrape_protocols,
        [
            ScrapeProtocol::PrometheusProto,
            ScrapeProtocol::OpenMetricsText1_0_0,
            ScrapeProtocol::PrometheusText0_0_4
        ]
    );
    assert_eq!(n.fallback_scrape_protocol, Some(ScrapeProtocol::PrometheusText0_0_4));
    assert!(n.scrape_native_histograms_enabled());
    assert!(!n.always_scrape_classic_histograms_enabled());
    assert!(n.convert_classic_histograms_to_nhcb_enabled());
    assert_eq!(n.native_histogram_bucket_limit, 160);
    assert_eq!(n.native_histogram_min_bucket_factor, 1.1);
    assert_eq!(n.metrics_path, "/custom/metrics");
    assert_eq!(n.scheme, "https");
    assert_eq!(n.params["module"], ["http_2xx"]);
    assert_eq!(n.params["collect[]"], ["cpu", "meminfo"]);
    assert!(!n.enable_compression);
    assert_eq!(n.body_size_limit, ByteSize::from_bytes(10 << 20));
    assert_eq!((n.sample_limit, n.target_limit, n.label_limit), (1000, 50, 30));
    assert_eq!(
        (
            n.label_name_length_limit,
            n.label_value_length_limit,
            n.keep_dropped_targets
        ),
        (100, 200, 5)
    );
    assert_eq!(n.name_validation(), NameValidationScheme::Legacy);
    assert_eq!(n.metric_name_escaping_scheme, "underscores");

    let h = &n.http_client;
    let basic = h.basic_auth.as_ref().unwrap();
    assert_eq!(basic.username, "admin");
    assert_eq!(basic.password_file, path("secrets/node_password"));
    assert_eq!(h.tls_config.ca_file, path("tls/ca.pem"));
    assert_eq!(h.tls_config.cert_file, path("tls/client.pem"));
    assert_eq!(h.tls_config.key_file, path("tls/client.key"));
    assert_eq!(h.tls_config.server_name, "node.internal");
    assert_eq!(h.tls_config.min_version, Some(TlsVersion::Tls12));
    assert_eq!(h.tls_config.max_version, Some(TlsVersion::Tls13));
    assert!(!h.follow_redirects && !h.enable_http2);
    assert_eq!(h.proxy_url.as_deref(), Some("http://proxy.internal:3128"));
    assert_eq!(h.no_proxy, "localhost,127.0.0.1");
    assert_eq!(h.proxy_connect_header["Proxy-Token"], [Secret::new("abc")]);
    assert_eq!(h.http_headers["X-Scope-OrgID"].values, ["tenant-1"]);
    assert_eq!(h.http_headers["X-Api-Key"].secrets[0].expose(), "very-secret");
    assert_eq!(h.http_headers["X-Api-Key"].files, [path("secrets/api_key")]);

    let sd = &n.service_discovery;
    assert_eq!(sd.static_configs[0].targets, ["node1:9100", "node2:9100"]);
    assert_eq!(
        sd.static_configs[0].labels,
        Labels::from_pairs([("env", "prod"), ("team", "infra")])
    );
    assert_eq!(
        sd.file_sd_configs[0].files,
        [path("targets/*.json"), path("targets/extra.yml")]
    );
    assert_eq!(sd.file_sd_configs[0].refresh_interval, secs(60));
    assert_eq!(sd.file_sd_configs[1].files, ["/abs/targets.yaml"]);
    assert_eq!(sd.file_sd_configs[1].refresh_interval, secs(300));
    let http_sd = &sd.http_sd_configs[0];
    assert_eq!(http_sd.url, "http://sd.internal/targets");
    assert_eq!(http_sd.refresh_interval, secs(120));
    let auth = http_sd.http_client.authorization.as_ref().unwrap();
    assert_eq!(auth.auth_type, "Bearer");
    assert_eq!(auth.credentials_file, path("secrets/sd_token"));
    assert!(http_sd.http_client.tls_config.insecure_skip_verify);

    let actions: Vec<_> = n.relabel_configs.iter().map(|r| r.action).collect();
    use RelabelAction::*;
    assert_eq!(
        actions,
        [Replace, Keep, LabelMap, HashMod, Keep, LabelDrop, Uppercase, KeepEqual]
    );
    assert_eq!(n.relabel_configs[0].regex.as_str(), r"([^:]+):\d+");
    assert_eq!(n.relabel_configs[3].modulus, 4);
    assert!(
        n.relabel_configs
            .iter()
            .all(|r| r.name_validation == NameValidationScheme::Legacy)
    );
    let metric_actions: Vec<_> = n.metric_relabel_configs.iter().map(|r| r.action).collect();
    assert_eq!(metric_actions, [Drop, LabelKeep, Lowercase, DropEqual, LabelMap]);
}

#[test]
fn load_full_config_authorization_and_bearer_token() {
    let c = full();
    let blackbox = &c.scrape_configs[2];
    let auth = blackbox.http_client.authorization.as_ref().unwrap();
    assert_eq!(auth.auth_type, "Token");
    assert_eq!(auth.credentials.expose(), "s3cr3t");
    // The deprecated bearer_token becomes a Bearer authorization.
    let legacy = &c.scrape_configs[3];
    let auth = legacy.http_client.authorization.as_ref().unwrap();
    assert_eq!(auth.auth_type, "Bearer");
    assert_eq!(auth.credentials.expose(), "tok");
    assert!(legacy.http_client.bearer_token.is_empty());
}

#[test]
fn load_full_config_alerting() {
    let c = full();
    let path = |p: &str| testdata().join(p).to_string_lossy().into_owned();
    assert_eq!(c.alerting.alert_relabel_configs[0].action, RelabelAction::LabelDrop);
    let am = &c.alerting.alertmanagers[0];
    assert_eq!(am.scheme, "https");
    assert_eq!(am.path_prefix, "/alertmanager");
    assert_eq!(am.timeout, secs(5));
    let basic = am.http_client.basic_auth.as_ref().unwrap();
    assert_eq!(basic.username_file, path("secrets/am_user"));
    assert_eq!(basic.password.expose(), "am-pass");
    assert_eq!(am.service_discovery.static_configs[0].targets, ["am1:9093", "am2:9093"]);
    assert_eq!(am.service_discovery.file_sd_configs[0].files, [path("am/*.yml")]);
    assert_eq!(am.relabel_configs[0].action, RelabelAction::Drop);
    assert_eq!(am.alert_relabel_configs[0].regex.as_str(), "debug");
    let second = &c.alerting.alertmanagers[1];
    assert_eq!(second.timeout, secs(10));
    assert_eq!(second.scheme, "http");
    assert_eq!(
        second.service_discovery.http_sd_configs[0].url,
        "https://sd.internal/alertmanagers"
    );
}

#[test]
fn load_full_config_remote_write() {
    let c = full();
    let rw = &c.remote_write[0];
    assert_eq!(rw.url, "https://remote.example.com/api/v1/write");
    assert_eq!(rw.name, "primary");
    assert_eq!(rw.remote_timeout, secs(10));
    assert_eq!(rw.headers["X-Tenant"], "team-a");
    assert_eq!(rw.write_relabel_configs[0].action, RelabelAction::Drop);
    assert!(rw.send_exemplars && rw.send_native_histograms && rw.round_robin_dns);
    assert_eq!(rw.protobuf_message, "io.prometheus.write.v2.Request");
    let q = &rw.queue_config;
    assert_eq!(
        (q.capacity, q.max_shards, q.min_shards, q.max_samples_per_send),
        (20_000, 10, 2, 5000)
    );
    assert_eq!(
        (q.batch_send_deadline, q.min_backoff, q.max_backoff),
        (secs(10), Duration::from_millis(100), secs(10))
    );
    assert!(q.retry_on_http_429);
    assert_eq!(q.sample_age_limit, secs(3600));
    assert!(!rw.metadata_config.send);
    assert_eq!(rw.metadata_config.send_interval, secs(120));
    assert!(rw.http_client.enable_http2);
    assert!(rw.http_client.tls_config.ca.contains("BEGIN CERTIFICATE"));

    let backup = &c.remote_write[1];
    assert_eq!(backup.remote_timeout, secs(30));
    assert_eq!(backup.protobuf_message, "prometheus.WriteRequest");
    assert!(
        !backup.http_client.enable_http2,
        "remote write leaves HTTP/2 off by default"
    );
    assert_eq!(backup.queue_config.capacity, 10_000);
    assert_eq!(backup.queue_config.max_shards, 50);
    assert_eq!(backup.queue_config.max_samples_per_send, 2000);
    assert!(backup.metadata_config.send);
}

#[test]
fn load_scrape_config_files_are_merged() {
    let c = full();
    let all = c.all_scrape_configs().unwrap();
    assert_eq!(all.len(), c.scrape_configs.len() + 1);
    let extra = all.last().unwrap();
    assert_eq!(extra.job_name, "from-file");
    assert_eq!(extra.scrape_interval, secs(5));
    assert_eq!(extra.scrape_timeout, secs(5));
    assert_eq!(extra.sample_limit, 50_000, "inherits the main file's global section");
    // Paths in an included file are relative to that file.
    let expected = testdata().join("jobs/more/*.json");
    assert_eq!(
        extra.service_discovery.file_sd_configs[0].files,
        [expected.to_string_lossy()]
    );
}

#[test]
fn load_scrape_config_files_reject_duplicate_jobs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.yml"),
        "scrape_config_files: [jobs/*.yml]\nscrape_configs:\n  - job_name: node\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("jobs")).unwrap();
    std::fs::write(dir.path().join("jobs/a.yml"), "scrape_configs:\n  - job_name: node\n").unwrap();
    let c = Config::load(dir.path().join("main.yml")).unwrap();
    let err = c.all_scrape_configs().unwrap_err().to_string();
    assert!(
        err.contains("found multiple scrape configs with job name \"node\", first found in main config file"),
        "{err}"
    );
    std::fs::write(
        dir.path().join("jobs/a.yml"),
        "scrape_configs:\n  - job_name: other\n    bogus: 1\n",
    )
    .unwrap();
    let err = c.all_scrape_configs().unwrap_err().to_string();
    assert!(
        err.contains("a.yml") && err.contains("unknown field \"bogus\""),
        "{err}"
    );
}

#[test]
fn load_relative_paths_follow_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "rule_files: [rules/*.yml, /abs/r.yml]
scrape_configs:
  - job_name: a
    bearer_token_file: token
    file_sd_configs: [{files: [sd/../targets/*.json]}]
    tls_config: {ca_file: ca.pem, cert_file: ./c.pem, key_file: k.pem}
remote_write:
  - url: http://x/write
    basic_auth: {username: u, password_file: pw}
";
    std::fs::write(dir.path().join("prometheus.yml"), yaml).unwrap();
    let c = Config::load(dir.path().join("prometheus.yml")).unwrap();
    let p = |s: &str| dir.path().join(s).to_string_lossy().into_owned();
    assert_eq!(c.rule_files, [p("rules/*.yml"), "/abs/r.yml".to_string()]);
    let s = &c.scrape_configs[0];
    assert_eq!(
        s.http_client.authorization.as_ref().unwrap().credentials_file,
        p("token")
    );
    assert_eq!(s.service_discovery.file_sd_configs[0].files, [p("targets/*.json")]);
    assert_eq!(s.http_client.tls_config.ca_file, p("ca.pem"));
    assert_eq!(s.http_client.tls_config.cert_file, p("c.pem"));
    assert_eq!(
        c.remote_write[0].http_client.basic_auth.as_ref().unwrap().password_file,
        p("pw")
    );
}

#[test]
fn load_accepts_scalars_where_go_reads_strings() {
    let c = parse(
        "global: {external_labels: {replica: 1}}\nscrape_configs:\n  - job_name: 123\n    static_configs: [{targets: ['a:1'], labels: {port: 9100, on: true}}]\n",
    );
    assert_eq!(c.global.external_labels.get("replica"), Some("1"));
    assert_eq!(c.scrape_configs[0].job_name, "123");
    assert_eq!(
        c.scrape_configs[0].service_discovery.static_configs[0]
            .labels
            .get("port"),
        Some("9100")
    );
}

#[test]
fn load_missing_file_is_a_read_error() {
    let err = Config::load("/nonexistent/prometheus.yml").unwrap_err();
    assert!(matches!(err, cairn_config::ConfigError::Read { .. }), "{err}");
}

#[test]
fn to_yaml_round_trips_with_defaults_filled_in() {
    let c = full();
    let yaml = c.to_yaml();
    let again = Config::parse(&yaml, &testdata()).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    // Secrets print as `<secret>`; everything else must survive.
    assert_eq!(without_secrets(again), without_secrets(c));
}

#[test]
fn to_yaml_shows_effective_values_and_hides_secrets() {
    let c = full();
    let yaml = c.to_yaml();
    for secret in ["s3cr3t", "am-pass", "very-secret", "tok\n"] {
        assert!(!yaml.contains(secret), "{secret} leaked:\n{yaml}");
    }
    assert!(yaml.contains("<secret>"));
    let minimal = parse("scrape_configs:\n  - job_name: node\n");
    let yaml = minimal.to_yaml();
    for expected in [
        "scrape_interval: 1m",
        "scrape_timeout: 10s",
        "evaluation_interval: 1m",
        "metrics_path: /metrics",
        "scheme: http",
        "honor_timestamps: true",
        "enable_compression: true",
        "follow_redirects: true",
        "enable_http2: true",
        "- OpenMetricsText1.0.0",
    ] {
        assert!(yaml.contains(expected), "missing {expected:?} in:\n{yaml}");
    }
}

/// Replaces every secret with the placeholder that a reparsed `to_yaml` holds.
fn without_secrets(c: Config) -> Config {
    let yaml = c.to_yaml();
    let mut c = c;
    let placeholder = || Secret::new("<secret>");
    let fix = |h: &mut cairn_config::HttpClientConfig| {
        if let Some(b) = &mut h.basic_auth
            && !b.password.is_empty()
        {
            b.password = placeholder();
        }
        if let Some(a) = &mut h.authorization
            && !a.credentials.is_empty()
        {
            a.credentials = placeholder();
        }
        if !h.tls_config.key.is_empty() {
            h.tls_config.key = placeholder();
        }
        for header in h.http_headers.values_mut() {
            header.secrets.iter_mut().for_each(|s| *s = placeholder());
        }
        for values in h.proxy_connect_header.values_mut() {
            values.iter_mut().for_each(|s| *s = placeholder());
        }
    };
    for s in &mut c.scrape_configs {
        fix(&mut s.http_client);
        s.service_discovery
            .http_sd_configs
            .iter_mut()
            .for_each(|h| fix(&mut h.http_client));
    }
    for am in &mut c.alerting.alertmanagers {
        fix(&mut am.http_client);
        am.service_discovery
            .http_sd_configs
            .iter_mut()
            .for_each(|h| fix(&mut h.http_client));
    }
    c.remote_write.iter_mut().for_each(|rw| fix(&mut rw.http_client));
    assert!(!yaml.is_empty());
    c
}

#[test]
#[ignore = "prints the effective configuration for inspection"]
fn dump_full_to_yaml() {
    println!("{}", full().to_yaml());
}

#[test]
fn load_applies_yaml_merge_keys() {
    let c = parse(
        "scrape_configs:\n  - &defaults\n    job_name: a\n    scrape_interval: 30s\n    metrics_path: /m\n  - <<: *defaults\n    job_name: b\n",
    );
    assert_eq!(c.scrape_configs[1].job_name, "b");
    assert_eq!(c.scrape_configs[1].scrape_interval, secs(30));
    assert_eq!(c.scrape_configs[1].metrics_path, "/m");
}

#[test]
fn load_reads_yaml_1_1_booleans_as_go_does() {
    let c = parse(
        "scrape_configs:\n  - {job_name: a, honor_labels: yes, honor_timestamps: off, scrape_native_histograms: On, tls_config: {insecure_skip_verify: Y}}\n",
    );
    let s = &c.scrape_configs[0];
    assert!(s.honor_labels && !s.honor_timestamps && s.scrape_native_histograms_enabled());
    assert!(s.http_client.tls_config.insecure_skip_verify);
}

#[test]
fn load_rule_file_globs_expand_relative_to_the_config() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("rules")).unwrap();
    for f in ["b.yml", "a.yml", "c.txt"] {
        std::fs::write(dir.path().join("rules").join(f), "groups: []\n").unwrap();
    }
    std::fs::write(
        dir.path().join("prometheus.yml"),
        "rule_files: ['rules/*.yml', 'rules/a.yml', 'missing.yml']\n",
    )
    .unwrap();
    let c = Config::load(dir.path().join("prometheus.yml")).unwrap();
    let paths = c.rule_file_paths().unwrap();
    assert_eq!(paths, [dir.path().join("rules/a.yml"), dir.path().join("rules/b.yml")]);
}

#[test]
fn load_null_values_are_zero_values_as_in_go() {
    let c = parse(
        "global: {scrape_interval: 20s}\nscrape_configs:\n  - job_name: a\n    scrape_interval:\n    honor_timestamps:\n    body_size_limit:\n    fallback_scrape_protocol: ''\n",
    );
    let s = &c.scrape_configs[0];
    assert_eq!(s.scrape_interval, secs(20));
    assert!(!s.honor_timestamps);
    assert_eq!(s.body_size_limit, ByteSize::from_bytes(0));
    assert_eq!(s.fallback_scrape_protocol, None);
}

#[test]
fn load_integers_written_as_floats_as_in_go() {
    let c = parse("scrape_configs:\n  - {job_name: a, sample_limit: 1e3, label_limit: null, target_limit: 2.0}\n");
    let s = &c.scrape_configs[0];
    assert_eq!((s.sample_limit, s.label_limit, s.target_limit), (1000, 0, 2));
    assert!(
        Config::parse(
            "scrape_configs:\n  - {job_name: a, sample_limit: 1.5}\n",
            Path::new("/")
        )
        .is_err()
    );
}
