//! Configurations shared by the error tests and the Prometheus oracle.

/// Configurations Prometheus and Cairn both refuse, with what Cairn's error says.
pub const REJECTED: &[(&str, &str)] = &[
    // Unknown keys, named with where they are.
    ("foo: 1\n", r#"unknown field "foo""#),
    (
        "global:\n  scrape_intervall: 5s\n",
        r#"global: unknown field "scrape_intervall""#,
    ),
    (
        "scrape_configs:\n  - job_name: a\n  - job_name: node\n    scrape_intervall: 5s\n",
        r#"scrape_configs[1] (job "node"): unknown field "scrape_intervall""#,
    ),
    (
        "scrape_configs:\n  - job_name: n\n    tls_config: {ca_fil: x}\n",
        r#"scrape_configs[0] (job "n"): tls_config: unknown field "ca_fil""#,
    ),
    (
        "scrape_configs:\n  - job_name: n\n    relabel_configs:\n      - {target_label: a}\n      - {action: drop, regexp: x}\n",
        r#"scrape_configs[0] (job "n"): relabel_configs[1]: unknown field "regexp""#,
    ),
    (
        "scrape_configs:\n  - job_name: n\n    static_configs: [{targets: ['a:1'], label: {a: b}}]\n",
        r#"scrape_configs[0] (job "n"): static_configs[0]: unknown field "label""#,
    ),
    (
        "scrape_configs:\n  - job_name: n\n    file_sd_configs: [{files: [a.json], refresh: 1m}]\n",
        r#"unknown field "refresh""#,
    ),
    (
        "scrape_configs:\n  - job_name: n\n    http_sd_configs: [{url: 'http://a/b', refresh: 1m}]\n",
        r#"scrape_configs[0] (job "n"): http_sd_configs[0]: unknown field "refresh""#,
    ),
    (
        "alerting:\n  alertmanager: []\n",
        r#"alerting: unknown field "alertmanager""#,
    ),
    (
        "alerting:\n  alertmanagers:\n    - {static_configs: [{targets: ['a:1']}], path: /x}\n",
        r#"alerting.alertmanagers[0]: unknown field "path""#,
    ),
    (
        "remote_write:\n  - {url: 'http://a/w', queue_config: {shards: 1}}\n",
        r#"remote_write[0]: queue_config: unknown field "shards""#,
    ),
    // Keys Prometheus has and Cairn does not implement.
    (
        "remote_read:\n  - url: http://a/read\n",
        "remote_read is not supported by Cairn",
    ),
    (
        "storage:\n  tsdb: {out_of_order_time_window: 1h}\n",
        "storage is not supported by Cairn",
    ),
    ("tracing:\n  endpoint: a:4317\n", "tracing is not supported by Cairn"),
    (
        "otlp:\n  promote_resource_attributes: [a]\n",
        "otlp is not supported by Cairn",
    ),
    ("runtime:\n  gogc: 50\n", "runtime is not supported by Cairn"),
    (
        "scrape_configs:\n  - job_name: k\n    kubernetes_sd_configs: [{role: pod, attach_metadata: {deployment: true}}]\n",
        r#"scrape_configs[0] (job "k"): kubernetes_sd_configs[0]: attach_metadata.deployment is not supported by Cairn"#,
    ),
    (
        "scrape_configs:\n  - job_name: k\n    kubernetes_sd_configs: [{role: pods}]\n",
        r#"unknown Kubernetes SD role "pods""#,
    ),
    (
        "scrape_configs:\n  - job_name: k\n    kubernetes_sd_configs: [{role: pod, api_server: 'https://k:6443', kubeconfig_file: k}]\n",
        r#"scrape_configs[0] (job "k"): kubernetes_sd_configs[0]: cannot use 'kubeconfig_file' and 'api_server' simultaneously"#,
    ),
    (
        "scrape_configs:\n  - job_name: k\n    kubernetes_sd_configs: [{role: service, selectors: [{role: pod}]}]\n",
        r#"scrape_configs[0] (job "k"): kubernetes_sd_configs[0]: service role supports only service selectors"#,
    ),
    (
        "scrape_configs:\n  - job_name: k\n    kubernetes_sd_configs: [{role: pod, tls_config: {insecure_skip_verify: true}}]\n",
        "to use custom HTTP client configuration please provide the 'api_server' URL explicitly",
    ),
    (
        "scrape_configs:\n  - job_name: c\n    consul_sd_configs: [{server: 'a:8500'}]\n",
        "consul_sd_configs is not supported by Cairn",
    ),
    (
        "scrape_configs:\n  - job_name: d\n    dns_sd_configs: [{names: []}]\n",
        r#"scrape_configs[0] (job "d"): dns_sd_configs[0]: DNS-SD config must contain at least one SRV record name"#,
    ),
    (
        "scrape_configs:\n  - job_name: d\n    dns_sd_configs: [{names: [a.b], type: A}]\n",
        "dns_sd_configs[0]: a port is required in DNS-SD configs for all record types except SRV",
    ),
    (
        "scrape_configs:\n  - job_name: d\n    dns_sd_configs: [{names: [a.b], type: mx}]\n",
        "a port is required in DNS-SD configs for all record types except SRV",
    ),
    (
        "scrape_configs:\n  - job_name: d\n    dns_sd_configs: [{names: [a.b], type: TXT, port: 1}]\n",
        "invalid DNS-SD records type TXT",
    ),
    (
        "scrape_configs:\n  - job_name: d\n    dns_sd_configs: [{names: [a.b], typ: A}]\n",
        r#"dns_sd_configs[0]: unknown field "typ""#,
    ),
    (
        "scrape_configs:\n  - job_name: d\n    dns_sd_configs: [null]\n",
        "empty or null section in dns_sd_configs",
    ),
    (
        "alerting:\n  alertmanagers: [{dns_sd_configs: [{names: [a.b], type: NS}]}]\n",
        "alerting.alertmanagers[0]: dns_sd_configs[0]: a port is required",
    ),
    (
        "scrape_configs:\n  - job_name: d\n    dns_sd_configs: [{names: [a.b], refresh_interval: 1x}]\n",
        "dns_sd_configs[0]",
    ),
    (
        "scrape_configs:\n  - job_name: o\n    oauth2: {client_id: a, client_secret: b, token_url: 'http://t/'}\n",
        r#"scrape_configs[0] (job "o"): oauth2 is not supported by Cairn"#,
    ),
    (
        "scrape_configs:\n  - job_name: o\n    http_sd_configs: [{url: 'http://a/b', oauth2: {client_id: a, client_secret: b, token_url: 'http://t/'}}]\n",
        "http_sd_configs[0]: oauth2 is not supported by Cairn",
    ),
    (
        "alerting:\n  alertmanagers:\n    - sigv4: {region: us-east-1}\n",
        "alerting.alertmanagers[0]: sigv4 is not supported by Cairn",
    ),
    (
        "alerting:\n  alertmanagers:\n    - ec2_sd_configs: [{region: us-east-1}]\n",
        "ec2_sd_configs is not supported by Cairn",
    ),
    (
        "remote_write:\n  - {url: 'http://a/w', sigv4: {region: us-east-1}}\n",
        "remote_write[0]: sigv4 is not supported by Cairn",
    ),
    (
        "remote_write:\n  - {url: 'http://a/w', azuread: {cloud: AzurePublic, managed_identity: {client_id: 00000000-0000-0000-0000-000000000000}}}\n",
        "remote_write[0]: azuread is not supported by Cairn",
    ),
    (
        "remote_write:\n  - {url: 'http://a/w', google_iam: {credentials_file: x}}\n",
        "remote_write[0]: google_iam is not supported by Cairn",
    ),
    // Jobs.
    (
        "scrape_configs:\n  - job_name: a\n  - job_name: a\n",
        r#"found multiple scrape configs with job name "a""#,
    ),
    ("scrape_configs:\n  - job_name: ''\n", "job_name is empty"),
    ("scrape_configs:\n  - scrape_interval: 5s\n", "job_name is empty"),
    ("scrape_configs:\n  -\n", "empty or null scrape config section"),
    (
        "scrape_configs:\n  - job_name: a\n    scrape_interval: 5s\n    scrape_timeout: 6s\n",
        r#"scrape timeout greater than scrape interval for scrape config with job name "a""#,
    ),
    (
        "global:\n  scrape_interval: 5s\n  scrape_timeout: 6s\n",
        "global: global scrape timeout greater than scrape interval",
    ),
    (
        "scrape_configs:\n  - {job_name: a, scrape_interval: 5x}\n",
        r#"not a valid duration string: "5x""#,
    ),
    (
        "scrape_configs:\n  - {job_name: a, scrape_interval: 1.5s}\n",
        "not a valid duration string",
    ),
    (
        "scrape_configs:\n  - {job_name: a, body_size_limit: 10}\n",
        "unknown unit",
    ),
    (
        "scrape_configs:\n  - {job_name: a, honor_labels: maybe}\n",
        "expected a boolean",
    ),
    ("scrape_configs:\n  - {job_name: a, sample_limit: -1}\n", "sample_limit"),
    (
        "scrape_configs:\n  - {job_name: a, scrape_protocols: [PrometheusText0.0.5]}\n",
        "unknown scrape protocol PrometheusText0.0.5",
    ),
    (
        "scrape_configs:\n  - {job_name: a, scrape_protocols: [PrometheusProto, PrometheusProto]}\n",
        r#"duplicated protocol in scrape_protocols, got [PrometheusProto PrometheusProto] for scrape config with job name "a""#,
    ),
    (
        "global:\n  scrape_protocols: [OpenMetricsText1.0.0, OpenMetricsText1.0.0]\n",
        "for global config",
    ),
    (
        "scrape_configs:\n  - {job_name: a, fallback_scrape_protocol: text}\n",
        "unknown scrape protocol text",
    ),
    (
        "scrape_configs:\n  - {job_name: a, metric_name_validation_scheme: legacy, metric_name_escaping_scheme: allow-utf-8}\n",
        "utf8 metric names requested but validation scheme is not set to UTF8",
    ),
    (
        "scrape_configs:\n  - {job_name: a, metric_name_escaping_scheme: bogus}\n",
        "unknown scrape config name escaping method",
    ),
    (
        "scrape_configs:\n  - {job_name: a, metric_name_validation_scheme: strict}\n",
        "must be either '', 'legacy' or 'utf8'",
    ),
    // Labels and targets.
    (
        "global:\n  external_labels: {'': x}\n",
        r#""" is not a valid label name"#,
    ),
    (
        "global:\n  metric_name_validation_scheme: legacy\n  external_labels: {'foo-bar': x}\n",
        r#"global.external_labels: "foo-bar" is not a valid label name"#,
    ),
    (
        "scrape_configs:\n  - job_name: a\n    static_configs: [{targets: ['a:1'], labels: {'': x}}]\n",
        r#""" is not a valid label name"#,
    ),
    (
        "scrape_configs:\n  - job_name: a\n    static_configs: [{targets: ['http://a:1/metrics']}]\n",
        r#"scrape_configs[0] (job "a"): "http://a:1/metrics" is not a valid hostname"#,
    ),
    (
        "alerting:\n  alertmanagers: [{static_configs: [{targets: ['http://am:9093']}]}]\n",
        r#""http://am:9093" is not a valid hostname"#,
    ),
    // Relabelling rules, in every section that has them.
    (
        "scrape_configs:\n  - job_name: a\n    relabel_configs: [{action: hashmod, target_label: x}]\n",
        r#"scrape_configs[0] (job "a"): relabel_configs[0]: relabel configuration for hashmod requires non-zero modulus"#,
    ),
    (
        "scrape_configs:\n  - job_name: a\n    metric_relabel_configs: [{source_labels: [a]}]\n",
        "metric_relabel_configs[0]: relabel configuration for replace action requires 'target_label' value",
    ),
    (
        "scrape_configs:\n  - job_name: a\n    relabel_configs: [{action: labeldrop, source_labels: [a]}]\n",
        "labeldrop action requires only 'regex', and no other fields",
    ),
    (
        "scrape_configs:\n  - job_name: a\n    relabel_configs: [{action: keepequal, target_label: a, regex: x}]\n",
        "keepequal action requires only 'source_labels' and `target_label`, and no other fields",
    ),
    (
        "scrape_configs:\n  - job_name: a\n    relabel_configs: [{action: lowercase, target_label: a, replacement: x}]\n",
        "'replacement' can not be set for lowercase action",
    ),
    (
        "scrape_configs:\n  - job_name: a\n    relabel_configs: [{action: drop, regex: '(a'}]\n",
        r#"invalid regex "(a""#,
    ),
    (
        "scrape_configs:\n  - job_name: a\n    relabel_configs: [{action: delete}]\n",
        r#"unknown relabel action "delete""#,
    ),
    (
        "scrape_configs:\n  - job_name: a\n    metric_name_validation_scheme: legacy\n    relabel_configs: [{target_label: 'a.b'}]\n",
        r#""a.b" is invalid 'target_label' for replace action"#,
    ),
    (
        "alerting:\n  alert_relabel_configs: [{action: uppercase}]\n",
        "alerting.alert_relabel_configs[0]: relabel configuration for uppercase action requires 'target_label' value",
    ),
    (
        "alerting:\n  alertmanagers: [{relabel_configs: [{action: hashmod}]}]\n",
        "alerting.alertmanagers[0]: relabel_configs[0]",
    ),
    (
        "remote_write:\n  - {url: 'http://a/w', write_relabel_configs: [{action: labelmap, replacement: ''}]}\n",
        "remote_write[0]: write_relabel_configs[0]",
    ),
    (
        "scrape_configs:\n  - job_name: a\n    metric_relabel_configs: [{action: LabelKeep, source_labels: []}]\n",
        r#"scrape_configs[0]: metric_relabel_configs[0]: labelkeep action requires only 'regex', and no other fields"#,
    ),
    // Service discovery.
    (
        "scrape_configs:\n  - job_name: a\n    file_sd_configs: [{files: []}]\n",
        "file service discovery config must contain at least one path name",
    ),
    (
        "scrape_configs:\n  - job_name: a\n    file_sd_configs: [{files: [targets.txt]}]\n",
        r#"path name "targets.txt" is not valid for file discovery"#,
    ),
    (
        "scrape_configs:\n  - job_name: a\n    file_sd_configs: [{files: ['a/*/b.json']}]\n",
        "is not valid for file discovery",
    ),
    (
        "scrape_configs:\n  - job_name: a\n    http_sd_configs: [{refresh_interval: 1m}]\n",
        "URL is missing",
    ),
    (
        "scrape_configs:\n  - job_name: a\n    http_sd_configs: [{url: 'ftp://a/b'}]\n",
        "URL scheme must be 'http' or 'https'",
    ),
    // Alertmanager.
    (
        "alerting:\n  alertmanagers: [{api_version: v1}]\n",
        "alertmanager api v1 is no longer supported",
    ),
    (
        "alerting:\n  alertmanagers: [{api_version: v3}]\n",
        r#"expected Alertmanager api version to be one of [v2] but got "v3""#,
    ),
    // Remote write.
    ("remote_write:\n  - name: a\n", "url for remote_write is empty"),
    ("remote_write:\n  -\n", "empty or null remote write config section"),
    (
        "remote_write:\n  - {url: 'http://a/w', name: x}\n  - {url: 'http://b/w', name: x}\n",
        r#"found multiple remote write configs with job name "x""#,
    ),
    (
        "remote_write:\n  - {url: 'http://a/w', headers: {Authorization: x}}\n",
        "authorization header must be changed via the basic_auth, authorization, oauth2, sigv4, azuread or google_iam parameter",
    ),
    (
        "remote_write:\n  - {url: 'http://a/w', headers: {Content-Type: x}}\n",
        "Content-Type is a reserved header. It must not be changed",
    ),
    (
        "remote_write:\n  - {url: 'http://a/w', protobuf_message: v3}\n",
        "unknown remote write protobuf message",
    ),
    (
        "remote_write:\n  - {url: 'http://a/w', headers: {Content-Length: '1'}}\n",
        "Content-Length is a reserved header. It must not be changed",
    ),
    (
        "remote_write:\n  - {url: 'http://a/w', queue_config: {min_shards: 5, max_shards: 2}}\n",
        "remote write queue min_shards must not be greater than max_shards",
    ),
    (
        "remote_write:\n  - {url: 'http://a/w', queue_config: {capacity: 0}}\n",
        "remote write queue capacity must be positive",
    ),
    (
        "remote_write:\n  - {url: 'http://a/w', queue_config: {min_backoff: 1s, max_backoff: 10ms}}\n",
        "remote write queue max_backoff must not be less than min_backoff",
    ),
    // HTTP client settings.
    (
        "scrape_configs:\n  - {job_name: a, http_headers: {Proxy-Authorization: {values: [x]}}}\n",
        r#"setting header "Proxy-Authorization" is not allowed"#,
    ),
    (
        "scrape_configs:\n  - {job_name: a, http_headers: {X-Prometheus-Scrape-Timeout-Seconds: {values: [x]}}}\n",
        "is not allowed",
    ),
    (
        "scrape_configs:\n  - job_name: a\n    basic_auth: {username: u, password: p}\n    authorization: {credentials: c}\n",
        "at most one of basic_auth, oauth2 & authorization must be configured",
    ),
    (
        "scrape_configs:\n  - {job_name: a, bearer_token: t, bearer_token_file: f}\n",
        "at most one of bearer_token & bearer_token_file must be configured",
    ),
    (
        "scrape_configs:\n  - {job_name: a, bearer_token: t, basic_auth: {username: u}}\n",
        "at most one of basic_auth, oauth2, bearer_token & bearer_token_file must be configured",
    ),
    (
        "scrape_configs:\n  - {job_name: a, basic_auth: {password: p, password_file: f}}\n",
        "at most one of basic_auth password & password_file must be configured",
    ),
    (
        "scrape_configs:\n  - {job_name: a, basic_auth: {username: u, username_file: f}}\n",
        "at most one of basic_auth username & username_file must be configured",
    ),
    (
        "scrape_configs:\n  - {job_name: a, authorization: {type: Basic, credentials: c}}\n",
        r#"authorization type cannot be set to "basic", use "basic_auth" instead"#,
    ),
    (
        "scrape_configs:\n  - {job_name: a, authorization: {credentials: c, credentials_file: f}}\n",
        "at most one of authorization credentials & credentials_file must be configured",
    ),
    (
        "scrape_configs:\n  - {job_name: a, tls_config: {ca: x, ca_file: y}}\n",
        "at most one of ca and ca_file must be configured",
    ),
    (
        "scrape_configs:\n  - {job_name: a, tls_config: {cert_file: c}}\n",
        "exactly one of key or key_file must be configured when a client certificate is configured",
    ),
    (
        "scrape_configs:\n  - {job_name: a, tls_config: {key_file: k}}\n",
        "exactly one of cert or cert_file must be configured when a client key is configured",
    ),
    (
        "scrape_configs:\n  - {job_name: a, tls_config: {min_version: TLS14}}\n",
        "TLS14",
    ),
    (
        "scrape_configs:\n  - {job_name: a, no_proxy: localhost}\n",
        "if no_proxy is configured, proxy_url must also be configured",
    ),
    (
        "scrape_configs:\n  - {job_name: a, proxy_url: 'http://p:1', proxy_from_environment: true}\n",
        "if proxy_from_environment is configured, proxy_url must not be configured",
    ),
    (
        "scrape_configs:\n  - {job_name: a, http_headers: {User-Agent: {values: [x]}}}\n",
        r#"setting header "User-Agent" is not allowed"#,
    ),
    // Files.
    (
        "rule_files: ['rules/*/a.yml']\n",
        r#"invalid rule file path "rules/*/a.yml""#,
    ),
    (
        "scrape_config_files: ['jobs/*/a.yml']\n",
        r#"invalid scrape config file path "jobs/*/a.yml""#,
    ),
    // YAML itself.
    ("global: [\n", "invalid YAML"),
    (
        "global: {}\nglobal: {}\n",
        "invalid YAML: duplicate entry with key \"global\"",
    ),
    ("- a\n- b\n", "expected a mapping, found a list"),
    (
        "scrape_configs: {job_name: a}\n",
        "scrape_configs: expected a list, found a mapping",
    ),
];
