//! End to end, `cairn --config.file prometheus.yml` as a Prometheus server:
//! scraping shows in the targets, scrape pools and metadata endpoints;
//! recording and alerting rules run and show in the rules and alerts
//! endpoints; a reload (SIGHUP, or `POST /-/reload` with
//! `--web.enable-lifecycle`) applies a good file and refuses a bad one while
//! the running configuration stays; a configuration with a key Cairn does
//! not support stops the start, naming the key; and `cairn check` /
//! `cairn test rules` answer as promtool does.

use crate::scrape::exporter;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use exporter::Exporter;
use serde_json::Value;

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write file");
}

fn config(target: &str, rules: &Path, extra_job: bool) -> String {
    let mut y = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n  external_labels:\n    site: test\n\
         rule_files:\n  - {}\n\
         scrape_configs:\n  - job_name: synthetic\n    static_configs:\n      - targets: ['{target}']\n",
        rules.display()
    );
    if extra_job {
        y.push_str(&format!(
            "  - job_name: second\n    scrape_interval: 2s\n    static_configs:\n      - targets: ['{target}']\n"
        ));
    }
    y
}

const RULES: &str = r#"groups:
  - name: synthetic
    rules:
      - record: job:test_requests:sum
        expr: sum by (job) (test_requests_total)
      - alert: ServerErrors
        expr: test_requests_total{code="500"} > 0
        labels:
          severity: page
        annotations:
          summary: "{{ $labels.instance }} answered {{ $value }} errors"
"#;

/// Polls `f` until it returns `Some`, for up to 30 s.
fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn data(c: &Client, path: &str) -> Value {
    let r = c.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    r.json()["data"].clone()
}

#[test]
fn a_prometheus_configuration_runs_scrapes_rules_and_reloads() {
    let ex = Exporter::start(1);
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = dir.path().join("rules.yml");
    write(&rules, RULES);
    let config_path = dir.path().join("prometheus.yml");
    write(&config_path, &config(&ex.addrs[0], &rules, false));
    let server = Server::start_with(&[
        "--config.file",
        config_path.to_str().expect("utf-8"),
        "--web.enable-lifecycle",
    ]);
    let c = server.client();

    // Scraping: the target is up, with Prometheus' fields.
    let target = eventually("the target to be scraped", || {
        let t = data(&c, "/api/v1/targets?state=active")["activeTargets"][0].clone();
        (t["health"] == "up").then_some(t)
    });
    assert_eq!(t_str(&target, "scrapePool"), "synthetic");
    assert_eq!(target["labels"]["instance"], ex.addrs[0].as_str());
    assert_eq!(target["scrapeUrl"], format!("http://{}/metrics", ex.addrs[0]));
    assert_eq!(target["lastError"], "");
    assert_eq!(
        data(&c, "/api/v1/scrape_pools")["scrapePools"],
        serde_json::json!(["synthetic"])
    );
    let metadata = data(&c, "/api/v1/targets/metadata?metric=test_requests_total");
    assert_eq!(metadata[0]["type"], "counter");
    assert_eq!(metadata[0]["help"], "Requests served.");
    let families = data(&c, "/api/v1/metadata?metric=test_temperature_celsius");
    assert_eq!(families["test_temperature_celsius"][0]["type"], "gauge");
    let up = data(&c, "/api/v1/query?query=up");
    assert_eq!(up["result"][0]["metric"]["job"], "synthetic");
    assert_eq!(up["result"][0]["value"][1], "1");

    // Rules: the recording rule's output is queryable, the alert fires with
    // its templated annotation, and both show in the rules endpoint.
    eventually("the recording rule's output", || {
        let r = data(&c, "/api/v1/query?query=job:test_requests:sum");
        (r["result"][0]["value"][1] == "11").then_some(())
    });
    let alert = eventually("the alert", || {
        data(&c, "/api/v1/alerts")["alerts"].as_array()?.first().cloned()
    });
    assert_eq!(alert["labels"]["alertname"], "ServerErrors");
    assert_eq!(alert["labels"]["severity"], "page");
    assert_eq!(alert["state"], "firing");
    assert_eq!(
        alert["annotations"]["summary"],
        format!("{} answered 1 errors", ex.addrs[0])
    );
    let groups = data(&c, "/api/v1/rules")["groups"].clone();
    assert_eq!(groups[0]["name"], "synthetic");
    assert_eq!(groups[0]["rules"].as_array().map(Vec::len), Some(2));
    let only_alerts = data(&c, "/api/v1/rules?type=alert")["groups"][0]["rules"].clone();
    assert_eq!(only_alerts.as_array().map(Vec::len), Some(1));
    assert_eq!(only_alerts[0]["name"], "ServerErrors");
    let alerts_series = eventually("the ALERTS series", || {
        let r = data(&c, "/api/v1/query?query=ALERTS");
        r["result"].as_array().is_some_and(|a| !a.is_empty()).then_some(r)
    });
    assert_eq!(
        alerts_series["result"][0]["metric"]["alertstate"], "firing",
        "{alerts_series}"
    );
    let status_config = data(&c, "/api/v1/status/config")["yaml"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(status_config.contains("job_name: synthetic"), "{status_config}");

    // A bad file is refused; the running configuration stays.
    write(
        &config_path,
        "scrape_configs:\n  - job_name: x\n    scrape_intervall: 1s\n",
    );
    let r = Client::new(server.url()).post_form("/-/reload", &[]);
    assert_eq!(r.status, 500, "{}", r.body);
    assert!(
        r.body.contains("scrape_intervall"),
        "the error names the key: {}",
        r.body
    );
    assert_eq!(
        data(&c, "/api/v1/scrape_pools")["scrapePools"],
        serde_json::json!(["synthetic"])
    );
    // A bad rule file is refused too.
    write(&config_path, &config(&ex.addrs[0], &rules, true));
    write(
        &rules,
        "groups:\n  - name: g\n    rules:\n      - record: x\n        expr: sum(\n",
    );
    let r = Client::new(server.url()).post_form("/-/reload", &[]);
    assert_eq!(r.status, 500, "{}", r.body);
    assert_eq!(
        data(&c, "/api/v1/scrape_pools")["scrapePools"],
        serde_json::json!(["synthetic"])
    );

    // A good one applies, by HTTP ...
    write(&rules, RULES);
    let r = Client::new(server.url()).post_form("/-/reload", &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        data(&c, "/api/v1/scrape_pools")["scrapePools"],
        serde_json::json!(["second", "synthetic"])
    );
    // ... and on SIGHUP.
    write(&config_path, &config(&ex.addrs[0], &rules, false));
    let hup = Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .expect("kill -HUP");
    assert!(hup.success());
    eventually("the SIGHUP reload", || {
        (data(&c, "/api/v1/scrape_pools")["scrapePools"] == serde_json::json!(["synthetic"])).then_some(())
    });
}

fn t_str<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

#[test]
fn reload_over_http_needs_the_lifecycle_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config_path = dir.path().join("prometheus.yml");
    write(&config_path, "global:\n  scrape_interval: 1m\n");
    let server = Server::start_with(&["--config.file", config_path.to_str().expect("utf-8")]);
    let r = server.client().post_form("/-/reload", &[]);
    assert_eq!(r.status, 403);
    assert_eq!(r.body, "Lifecycle API is not enabled.");
}

#[test]
fn an_unsupported_key_stops_the_start_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config_path = dir.path().join("prometheus.yml");
    write(
        &config_path,
        "scrape_configs:\n  - job_name: consul\n    consul_sd_configs:\n      - server: localhost:8500\n",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(["--storage.path", dir.path().join("data").to_str().expect("utf-8")])
        .args(["--http.listen-addr", &format!("127.0.0.1:{}", free_port())])
        .args(["--config.file", config_path.to_str().expect("utf-8")])
        .output()
        .expect("run cairn");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("consul_sd_configs") && err.contains("not supported"),
        "{err}"
    );
}

#[test]
fn check_and_test_commands_answer_as_promtool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = dir.path().join("rules.yml");
    write(&rules, RULES);
    let good = dir.path().join("good.yml");
    write(&good, &config("localhost:9100", &rules, false));
    let bad = dir.path().join("bad.yml");
    write(&bad, "global:\n  scrape_interval: soon\n");
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
            .args(args)
            .output()
            .expect("run cairn");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, _) = run(&["check", "config", good.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("SUCCESS") && out.contains("2 rules found"), "{out}");
    let (code, _, err) = run(&["check", "config", bad.to_str().expect("utf-8")]);
    assert_eq!(code, Some(1));
    assert!(err.contains("FAILED") && err.contains("soon"), "{err}");
    let (code, out, _) = run(&["check", "rules", rules.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0));
    assert!(out.contains("SUCCESS: 2 rules found"), "{out}");

    let tests = dir.path().join("tests.yml");
    write(
        &tests,
        r#"rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'test_requests_total{code="500", instance="a", job="j"}'
        values: '0 1 2'
    alert_rule_test:
      - eval_time: 2m
        alertname: ServerErrors
        exp_alerts:
          - exp_labels: {severity: page, code: "500", instance: a, job: j}
            exp_annotations: {summary: "a answered 2 errors"}
    promql_expr_test:
      - expr: job:test_requests:sum
        eval_time: 2m
        exp_samples:
          - labels: 'job:test_requests:sum{job="j"}'
            value: 2
"#,
    );
    let (code, out, err) = run(&["test", "rules", tests.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("SUCCESS"), "{out}");
    write(
        &tests,
        &std::fs::read_to_string(&tests)
            .expect("read")
            .replace("value: 2", "value: 3"),
    );
    let (code, _, err) = run(&["test", "rules", tests.to_str().expect("utf-8")]);
    assert_eq!(code, Some(1));
    assert!(err.contains("FAILED"), "{err}");
}

/// A configuration with DNS discovery and remote_write in every form a
/// user writes them: `cairn check config` passes it and Prometheus 3.14
/// starts with it; broken variants are refused by both.
#[test]
fn dns_discovery_and_remote_write_check_as_prometheus_takes_them() {
    let Some(prom_bin) = crate::common::peers::prometheus_3() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    write(&dir.path().join("password"), "secret\n");
    let good = format!(
        r#"global:
  scrape_interval: 15s
  external_labels: {{cluster: eu-1}}
scrape_configs:
  - job_name: dns
    dns_sd_configs:
      - names: [_node._tcp.example.internal]
      - names: [api.example.internal]
        type: A
        port: 9100
        refresh_interval: 1m
remote_write:
  - url: http://127.0.0.1:1/api/v1/write
    name: long-term
    remote_timeout: 10s
    headers: {{X-Scope-OrgID: team-a}}
    basic_auth: {{username: cairn, password_file: {password}}}
    tls_config: {{insecure_skip_verify: true}}
    write_relabel_configs:
      - source_labels: [__name__]
        regex: go_.*
        action: drop
    queue_config: {{capacity: 5000, max_shards: 8, min_shards: 2, max_samples_per_send: 1000, batch_send_deadline: 2s, min_backoff: 100ms, max_backoff: 10s, retry_on_http_429: true, sample_age_limit: 1h}}
    metadata_config: {{send: true, send_interval: 30s, max_samples_per_send: 500}}
  - url: http://127.0.0.1:2/api/v1/write
    protobuf_message: io.prometheus.write.v2.Request
    authorization: {{credentials: token}}
"#,
        password = dir.path().join("password").display()
    );
    let good_path = dir.path().join("good.yml");
    write(&good_path, &good);
    let check = |path: &Path| {
        Command::new(env!("CARGO_BIN_EXE_cairn"))
            .args(["check", "config", path.to_str().expect("utf-8")])
            .output()
            .expect("run cairn check")
    };
    let out = check(&good_path);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let _prometheus = crate::common::peers::Prometheus::start(&prom_bin, &good, &[]);

    for (broken, message) in [
        (
            good.replace("        type: A\n        port: 9100\n", "        type: A\n"),
            "a port is required in DNS-SD configs",
        ),
        (good.replace("remote_timeout: 10s", "remote_timeout: soon"), "soon"),
        (
            good.replace("name: long-term", "name: long-term\n    queue: 1"),
            "queue",
        ),
    ] {
        let path = dir.path().join("broken.yml");
        write(&path, &broken);
        let out = check(&path);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(message), "cairn: {err}");
        let out = Command::new(&prom_bin)
            .arg(format!("--config.file={}", path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("prom-data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{}", free_port()))
            .output()
            .expect("run prometheus");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(message), "prometheus: {err}");
    }
}

/// kube-prometheus' configuration (Kubernetes discovery of endpoints, pods,
/// endpoint slices, nodes, services and ingresses, with its relabelling and
/// rules): `cairn check config` passes it and Prometheus 3.14 starts with
/// it; a broken Kubernetes entry is refused by both, by name.
#[test]
fn kube_prometheus_configuration_checks_as_prometheus_takes_it() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kube_prometheus");
    let check = |path: &Path| {
        Command::new(env!("CARGO_BIN_EXE_cairn"))
            .args(["check", "config", path.to_str().expect("utf-8")])
            .output()
            .expect("run cairn check")
    };
    let out = check(&fixture.join("prometheus.yml"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("prometheus-k8s-rulefiles-0.yaml"), "{stdout}");
    let Some(prom_bin) = crate::common::peers::prometheus_3() else {
        return;
    };
    let text = std::fs::read_to_string(fixture.join("prometheus.yml")).expect("read fixture");
    let rules = format!("{}/rules/*.yaml", fixture.display());
    let good = text.replace("  - rules/*.yaml", &format!("  - {rules}"));
    let _prometheus = crate::common::peers::Prometheus::start(&prom_bin, &good, &[]);

    let dir = tempfile::tempdir().expect("tempdir");
    for (broken, message) in [
        (
            good.replace("      - role: node\n", "      - role: nodes\n"),
            "unknown Kubernetes SD role",
        ),
        (
            good.replace(
                "          - role: pod\n            label: app.kubernetes.io/name=prometheus-operator",
                "          - role: service\n            label: app.kubernetes.io/name=prometheus-operator",
            ),
            "pod role supports only pod, node selectors",
        ),
        (
            good.replace(
                "        namespaces:\n          own_namespace: true\n",
                "        api_server: https://k8s:6443\n        namespaces:\n          own_namespace: true\n",
            ),
            "cannot use 'api_server' and 'namespaces.own_namespace' simultaneously",
        ),
    ] {
        assert_ne!(broken, good, "{message}");
        let path = dir.path().join("broken.yml");
        write(&path, &broken);
        let out = check(&path);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(message), "cairn: {err}");
        let out = Command::new(&prom_bin)
            .arg(format!("--config.file={}", path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("prom-data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{}", free_port()))
            .output()
            .expect("run prometheus");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(message), "prometheus: {err}");
    }
}
