//! Kubernetes service discovery against Prometheus 3.14: a real
//! `kube-apiserver` (built from the Kubernetes source, over Debian's etcd,
//! no controllers) holds namespaces, nodes, pods, services, endpoints,
//! endpoint slices and ingresses the test creates by REST. Cairn and
//! Prometheus run with the same configuration (every role, namespaces,
//! selectors, attach_metadata, an API server with TLS and a token, a
//! kubeconfig file; relabelling keep/replace on `__meta_kubernetes_*`).
//! Both must discover the same targets with the same labels before and
//! after relabelling, follow creates, updates and deletes, keep their
//! targets while the API server is down (Cairn counting the failed
//! requests), pick up changes once it is back, and refuse a bad
//! `kubernetes_sd_configs` on reload by name. Where mount namespaces can be
//! made (root; CI runs as root) both also run in-cluster jobs: each process
//! sees the service account's token, CA and namespace under
//! /var/run/secrets/kubernetes.io/serviceaccount of its own namespace and
//! `KUBERNETES_SERVICE_HOST`/`_PORT` naming the API server.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::etcd::Etcd;
use crate::common::kube::{self, KubeApiServer};
use crate::common::peers::{self, Prometheus};
use crate::common::{Client, Server};
use serde_json::{Value, json};

fn config(api: &KubeApiServer, kubeconfig: &str, bad: bool, in_cluster: bool) -> String {
    let url = api.url();
    let ca = api.file("ca.crt").display().to_string();
    let token = api.file("token").display().to_string();
    let client = format!(
        "api_server: {url}\n        tls_config: {{ca_file: {ca}}}\n        authorization: {{credentials_file: {token}}}"
    );
    let bad_entry = if bad {
        format!("\n      - {{role: pod, api_server: {url}, kubeconfig_file: {kubeconfig}}}")
    } else {
        String::new()
    };
    format!(
        r#"global:
  scrape_interval: 1m
scrape_configs:
  - job_name: pods
    kubernetes_sd_configs:
      - role: pod
        {client}
        namespaces: {{names: [cairn-a, cairn-b]}}
        selectors:
          - {{role: pod, label: 'app in (web, db)', field: 'metadata.name!=excluded'}}
          - {{role: node, label: 'cairn-node'}}
        attach_metadata: {{node: true, namespace: true}}{bad_entry}
    relabel_configs:
      - {{source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape], regex: 'false', action: drop}}
      - {{source_labels: [__meta_kubernetes_pod_label_app], target_label: app}}
      - {{source_labels: [__meta_kubernetes_namespace], target_label: namespace}}
      - {{source_labels: [__meta_kubernetes_node_label_zone], target_label: zone}}
  - job_name: nodes
    kubernetes_sd_configs:
      - role: node
        api_server: {url}
        tls_config: {{ca_file: {ca}}}
        bearer_token: {tok}
    relabel_configs:
      - {{action: labelmap, regex: __meta_kubernetes_node_label_(.+)}}
  - job_name: services
    kubernetes_sd_configs:
      - role: service
        {client}
        namespaces: {{names: [cairn-a]}}
        attach_metadata: {{namespace: true}}
    relabel_configs:
      - {{source_labels: [__meta_kubernetes_service_type], regex: ExternalName, action: drop}}
      - {{source_labels: [__meta_kubernetes_service_port_name], target_label: port}}
  - job_name: endpoints
    kubernetes_sd_configs:
      - role: endpoints
        {client}
        namespaces: {{names: [cairn-a, cairn-b]}}
        selectors: [{{role: service, label: 'monitored=yes'}}]
        attach_metadata: {{node: true}}
    relabel_configs:
      - {{source_labels: [__meta_kubernetes_service_label_monitored], regex: 'yes', action: keep}}
      - {{source_labels: [__meta_kubernetes_endpoint_port_name], regex: http, action: keep}}
      - {{source_labels: [__meta_kubernetes_pod_name], target_label: pod}}
  - job_name: endpointslices
    kubernetes_sd_configs:
      - role: endpointslice
        {client}
        attach_metadata: {{namespace: true, node: true}}
        namespaces: {{names: [cairn-a, cairn-b]}}
    relabel_configs:
      - {{source_labels: [__meta_kubernetes_endpointslice_endpoint_conditions_ready], regex: 'true', action: keep}}
      - {{source_labels: [__meta_kubernetes_service_name, __meta_kubernetes_endpointslice_port_name], separator: ':', target_label: svc_port}}
  - job_name: ingresses
    kubernetes_sd_configs:
      - role: ingress
        {client}
    relabel_configs:
      - {{source_labels: [__meta_kubernetes_namespace], regex: 'cairn-.*', action: keep}}
      - {{source_labels: [__meta_kubernetes_ingress_scheme, __address__, __meta_kubernetes_ingress_path], regex: '(.+);(.+);(.+)', replacement: '$1://$2$3', target_label: url}}
  - job_name: kubeconfig
    kubernetes_sd_configs:
      - role: pod
        kubeconfig_file: {kubeconfig}
        namespaces: {{names: [cairn-b]}}
{in_cluster_jobs}"#,
        tok = kube::TOKEN,
        in_cluster_jobs = if in_cluster { IN_CLUSTER_JOBS } else { "" },
    )
}

/// Jobs that find the API server as a pod does (the namespace file says cairn-b).
const IN_CLUSTER_JOBS: &str = r#"  - job_name: in-cluster
    kubernetes_sd_configs:
      - role: pod
        namespaces: {own_namespace: true}
      - role: service
        namespaces: {own_namespace: true, names: [cairn-a]}
"#;

/// Whether this process may make mount namespaces (root).
fn can_unshare() -> bool {
    Command::new("unshare")
        .args(["--mount", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The command prefix that runs a program as if in a pod: a tmpfs over
/// /var/run holding the service account's files from `account`, and the
/// API server's address in the environment.
fn in_cluster_prefix(account: &Path, port: u16) -> Vec<String> {
    let script = r#"mount -t tmpfs tmpfs /var/run && d=/var/run/secrets/kubernetes.io/serviceaccount && mkdir -p $d && cp "$0"/* $d/ && export KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$1" && shift && exec "$@""#;
    ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
        .iter()
        .map(|s| s.to_string())
        .chain([account.display().to_string(), port.to_string()])
        .collect()
}

fn kubeconfig(api: &KubeApiServer) -> String {
    format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: test\nclusters:\n- name: test\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: test\n  user:\n    tokenFile: {}\ncontexts:\n- name: test\n  context: {{cluster: test, user: test}}\n",
        api.url(),
        api.file("ca.crt").display(),
        api.file("token").display()
    )
}

fn pod(name: &str, app: &str, node: &str, containers: Value, init: Value) -> Value {
    json!({
        "metadata": {"name": name, "labels": {"app": app, "tier.k8s.io/level": "1"},
                     "annotations": {"prometheus.io/scrape": "true"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-rs"), "uid": "00000000-0000-0000-0000-000000000001", "controller": true}]},
        "spec": {"nodeName": node, "containers": containers, "initContainers": init}
    })
}

fn running(ip: &str, ready: &str) -> Value {
    json!({"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "hostIP": "10.0.0.1",
        "conditions": [{"type": "Ready", "status": ready}],
        "containerStatuses": [{"name": "app", "containerID": "containerd://abc", "image": "app:1", "imageID": "", "ready": true, "restartCount": 0}]}})
}

/// Namespaces, nodes and objects of every role.
fn populate(api: &KubeApiServer) {
    for (ns, team) in [("cairn-a", "alpha"), ("cairn-b", "beta")] {
        api.create(
            "/api/v1/namespaces",
            json!({"metadata": {"name": ns, "labels": {"team": team}, "annotations": {"owner": "cairn"}}}),
        );
    }
    for (name, zone, ip, selected) in [
        ("n1", "z1", "10.0.0.1", true),
        ("n2", "z2", "10.0.0.2", true),
        ("n3", "z3", "10.0.0.3", false),
    ] {
        let mut labels = json!({"zone": zone, "kubernetes.io/hostname": name});
        if selected {
            labels["cairn-node"] = json!("true");
        }
        api.create("/api/v1/nodes", json!({"metadata": {"name": name, "labels": labels}}));
        api.patch(
            &format!("/api/v1/nodes/{name}/status"),
            json!({"status": {"addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "conditions": [{"type": "Ready", "status": "True"}, {"type": "MemoryPressure", "status": "False"}]}}),
        );
    }
    let app_containers = json!([
        {"name": "app", "image": "app:1", "ports": [{"name": "http", "containerPort": 8080}, {"name": "metrics", "containerPort": 9090}]},
        {"name": "sidecar", "image": "side:1"}
    ]);
    let init = json!([{"name": "init", "image": "init:1", "ports": [{"name": "init-http", "containerPort": 7070}]}]);
    for (ns, name, app, node, ip) in [
        ("cairn-a", "web-1", "web", "n1", "10.1.0.1"),
        ("cairn-a", "web-2", "web", "n2", "10.1.0.2"),
        ("cairn-a", "db-1", "db", "n3", "10.1.0.3"),
        ("cairn-a", "other-1", "other", "n1", "10.1.0.4"),
        ("cairn-a", "excluded", "web", "n1", "10.1.0.5"),
        ("cairn-b", "web-3", "web", "n2", "10.2.0.1"),
    ] {
        api.create(
            &format!("/api/v1/namespaces/{ns}/pods"),
            pod(name, app, node, app_containers.clone(), init.clone()),
        );
        api.patch(
            &format!("/api/v1/namespaces/{ns}/pods/{name}/status"),
            running(ip, "True"),
        );
    }
    // Pending, no IP yet.
    api.create(
        "/api/v1/namespaces/cairn-b/pods",
        pod("web-4", "web", "n1", app_containers, json!([])),
    );

    for (ns, name, spec, labels) in [
        (
            "cairn-a",
            "web",
            json!({"ports": [{"name": "http", "port": 80, "targetPort": 8080}, {"name": "metrics", "port": 9090}]}),
            json!({"monitored": "yes"}),
        ),
        (
            "cairn-a",
            "ext",
            json!({"type": "ExternalName", "externalName": "db.example.com", "ports": [{"port": 5432}]}),
            json!({}),
        ),
        (
            "cairn-a",
            "lb",
            json!({"type": "LoadBalancer", "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}),
            json!({"monitored": "no"}),
        ),
        (
            "cairn-b",
            "web",
            json!({"ports": [{"name": "http", "port": 80}]}),
            json!({"monitored": "yes"}),
        ),
    ] {
        api.create(
            &format!("/api/v1/namespaces/{ns}/services"),
            json!({"metadata": {"name": name, "labels": labels}, "spec": spec}),
        );
    }
    let pod_ref = |ns: &str, name: &str| json!({"kind": "Pod", "namespace": ns, "name": name});
    api.create(
        "/api/v1/namespaces/cairn-a/endpoints",
        json!({"metadata": {"name": "web", "labels": {"e": "1"}},
            "subsets": [{
                "addresses": [{"ip": "10.1.0.1", "nodeName": "n1", "targetRef": pod_ref("cairn-a", "web-1")},
                              {"ip": "10.9.0.9", "hostname": "external"}],
                "notReadyAddresses": [{"ip": "10.1.0.2", "nodeName": "n2", "targetRef": pod_ref("cairn-a", "web-2")}],
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "metrics", "port": 9090}]}]}),
    );
    api.create(
        "/api/v1/namespaces/cairn-a/endpoints",
        json!({"metadata": {"name": "lb"}, "subsets": [{"addresses": [{"ip": "10.1.0.4"}], "ports": [{"name": "http", "port": 443}]}]}),
    );
    api.create(
        "/api/v1/namespaces/cairn-b/endpoints",
        json!({"metadata": {"name": "web"}, "subsets": [{"addresses": [{"ip": "10.2.0.1", "nodeName": "n2", "targetRef": pod_ref("cairn-b", "web-3")}], "ports": [{"name": "http", "port": 8080}]}]}),
    );
    api.create(
        "/apis/discovery.k8s.io/v1/namespaces/cairn-a/endpointslices",
        json!({"metadata": {"name": "web-abc", "labels": {"kubernetes.io/service-name": "web", "endpointslice.kubernetes.io/managed-by": "cairn-test"}},
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": ["10.1.0.1"], "conditions": {"ready": true, "serving": true, "terminating": false}, "nodeName": "n1", "zone": "z1", "targetRef": pod_ref("cairn-a", "web-1")},
                {"addresses": ["10.1.0.2"], "conditions": {"ready": false}, "nodeName": "n2", "targetRef": pod_ref("cairn-a", "web-2")},
                {"addresses": ["10.9.0.9"], "conditions": {"ready": true}, "hostname": "external"}],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP", "appProtocol": "http"}, {"name": "metrics", "port": 9090}]}),
    );
    api.create(
        "/apis/networking.k8s.io/v1/namespaces/cairn-a/ingresses",
        json!({"metadata": {"name": "web", "annotations": {"a": "b"}},
            "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["*.example.com"]}],
                "rules": [
                    {"host": "a.example.com", "http": {"paths": [
                        {"path": "/x", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}},
                        {"path": "/y", "pathType": "Exact", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}},
                    {"host": "plain.org", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}),
    );
}

type Labels = BTreeMap<String, String>;

fn label_map(v: &Value) -> Labels {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Active targets as (pool, discovered labels, labels), and dropped ones'
/// (pool, discovered labels), sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Targets {
    active: Vec<(String, Labels, Labels)>,
    dropped: Vec<(String, Labels)>,
}

fn targets(c: &Client) -> Targets {
    let r = c.get("/api/v1/targets");
    assert_eq!(r.status, 200, "{}", r.body);
    let data = r.json()["data"].clone();
    let list = |key: &str| data[key].as_array().cloned().unwrap_or_default();
    let mut active: Vec<_> = list("activeTargets")
        .iter()
        .map(|t| {
            (
                t["scrapePool"].as_str().unwrap_or_default().to_string(),
                label_map(&t["discoveredLabels"]),
                label_map(&t["labels"]),
            )
        })
        .collect();
    active.sort();
    let mut dropped: Vec<_> = list("droppedTargets")
        .iter()
        .map(|t| {
            let d = label_map(&t["discoveredLabels"]);
            (d.get("job").cloned().unwrap_or_default(), d)
        })
        .collect();
    dropped.sort();
    Targets { active, dropped }
}

fn counter(c: &Client, name: &str) -> f64 {
    let body = c.get("/metrics").body;
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from /metrics"))
}

fn count(t: &Targets, pool: &str) -> usize {
    t.active.iter().filter(|(p, _, _)| p == pool).count()
}

fn has(t: &Targets, pool: &str, label: &str, value: &str) -> bool {
    t.active
        .iter()
        .any(|(p, d, _)| p == pool && d.get(label).is_some_and(|v| v == value))
}

/// The first differing entries, to make a failure readable.
fn difference(c: &Targets, p: &Targets) -> String {
    let mut out = String::new();
    for (what, a, b) in [("only in Cairn", c, p), ("only in Prometheus", p, c)] {
        for t in &a.active {
            if !b.active.contains(t) {
                out.push_str(&format!("{what} (active): {t:#?}\n"));
            }
        }
        for t in &a.dropped {
            if !b.dropped.contains(t) {
                out.push_str(&format!("{what} (dropped): {t:#?}\n"));
            }
        }
    }
    out
}

/// Waits (bounded) until both agree and `done` holds for them; returns them.
fn converge(cairn: &Client, prom: &Client, what: &str, done: impl Fn(&Targets) -> bool) -> Targets {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let (c, p) = (targets(cairn), targets(prom));
        if c == p && done(&c) {
            return c;
        }
        if Instant::now() > deadline {
            assert!(c == p, "{what}: Cairn and Prometheus differ:\n{}", difference(&c, &p));
            let mut pools: BTreeMap<&str, usize> = BTreeMap::new();
            for (pool, _, _) in &c.active {
                *pools.entry(pool.as_str()).or_default() += 1;
            }
            panic!("{what}: not reached; active targets by pool {pools:?}:\n{c:#?}");
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn kubernetes_sd_matches_prometheus() {
    let Some(apiserver_bin) = kube::binary() else {
        return;
    };
    let Some(prometheus_bin) = peers::prometheus_3() else {
        return;
    };
    let Some(etcd) = Etcd::start() else {
        return;
    };
    let started = Instant::now();
    let mut api = KubeApiServer::start(apiserver_bin, &etcd);
    populate(&api);

    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig_path = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig_path, kubeconfig(&api)).expect("write kubeconfig");
    let kubeconfig_arg = kubeconfig_path.display().to_string();
    let in_cluster = can_unshare();
    if !in_cluster {
        assert!(!peers::in_ci(), "unshare --mount fails under CI");
        println!("SKIPPED: the in-cluster jobs (unshare --mount needs root)");
    }
    let good = config(&api, &kubeconfig_arg, false, in_cluster);
    let config_path = dir.path().join("prometheus.yml");
    std::fs::write(&config_path, &good).expect("write config");

    let account = dir.path().join("serviceaccount");
    std::fs::create_dir(&account).expect("mkdir");
    std::fs::copy(api.file("ca.crt"), account.join("ca.crt")).expect("copy CA");
    std::fs::write(account.join("token"), kube::TOKEN).expect("write token");
    std::fs::write(account.join("namespace"), "cairn-b").expect("write namespace");
    let prefix = if in_cluster {
        in_cluster_prefix(&account, api.port)
    } else {
        Vec::new()
    };
    // Prometheus through a wrapper that enters the namespace first.
    let wrapper = dir.path().join("prometheus-in-pod.sh");
    let quoted: Vec<String> = prefix
        .iter()
        .chain([&prometheus_bin.display().to_string()])
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    std::fs::write(&wrapper, format!("#!/bin/sh\nexec {} \"$@\"\n", quoted.join(" "))).expect("write wrapper");
    Command::new("chmod").arg("+x").arg(&wrapper).status().expect("chmod");
    let prometheus = Prometheus::start(&wrapper, &good, &["--web.enable-lifecycle"]);
    let prom = Client::new(prometheus.url());
    let config_arg = config_path.display().to_string();
    let data_dir = tempfile::tempdir().expect("tempdir");
    let mut server = Server::new(
        data_dir.path(),
        &["--config.file", &config_arg, "--web.enable-lifecycle"],
    );
    server.command_prefix = prefix;
    server.restart();
    let cairn = server.client();

    let first = converge(&cairn, &prom, "the first discovery", |t| {
        count(t, "nodes") == 3
            && count(t, "ingresses") == 3
            && count(t, "kubeconfig") >= 4
            && count(t, "endpointslices") > 0
            && (!in_cluster || count(t, "in-cluster") > 0)
    });
    if in_cluster {
        assert!(
            has(&first, "in-cluster", "__meta_kubernetes_pod_name", "web-3"),
            "{first:#?}"
        );
        assert!(
            has(&first, "in-cluster", "__meta_kubernetes_service_name", "lb"),
            "{first:#?}"
        );
    }
    for (pool, label, value) in [
        ("pods", "__meta_kubernetes_pod_container_init", "true"),
        ("pods", "__meta_kubernetes_node_label_zone", "z2"),
        ("pods", "__meta_kubernetes_namespace_label_team", "beta"),
        ("pods", "__meta_kubernetes_pod_controller_kind", "ReplicaSet"),
        ("pods", "__meta_kubernetes_pod_label_tier_k8s_io_level", "1"),
        ("nodes", "__meta_kubernetes_node_address_InternalIP", "10.0.0.2"),
        ("services", "__meta_kubernetes_service_type", "LoadBalancer"),
        ("services", "__meta_kubernetes_namespace_annotation_owner", "cairn"),
        ("endpoints", "__meta_kubernetes_endpoint_hostname", "external"),
        ("endpoints", "__meta_kubernetes_pod_container_name", "app"),
        ("endpoints", "__meta_kubernetes_node_label_zone", "z1"),
        (
            "endpointslices",
            "__meta_kubernetes_endpointslice_port_app_protocol",
            "http",
        ),
        ("endpointslices", "__meta_kubernetes_endpointslice_endpoint_zone", "z1"),
        ("ingresses", "__meta_kubernetes_ingress_scheme", "https"),
        ("kubeconfig", "__meta_kubernetes_pod_name", "web-3"),
    ] {
        assert!(has(&first, pool, label, value), "{pool} {label}={value}:\n{first:#?}");
    }
    // Pods on the unselected node, of other apps or excluded by name are not discovered.
    assert!(!has(&first, "pods", "__meta_kubernetes_pod_name", "db-1"));
    assert!(!has(&first, "pods", "__meta_kubernetes_pod_name", "other-1"));
    assert!(!has(&first, "pods", "__meta_kubernetes_pod_name", "excluded"));
    assert!(!first.dropped.is_empty(), "the relabelling drops some targets");

    // Creates, updates and deletes.
    api.patch(
        "/api/v1/namespaces/cairn-b/pods/web-4/status",
        running("10.2.0.4", "False"),
    );
    api.patch(
        "/api/v1/namespaces/cairn-a/pods/web-2",
        json!({"metadata": {"annotations": {"prometheus.io/scrape": "false"}}}),
    );
    // No kubelet confirms a graceful deletion.
    api.delete("/api/v1/namespaces/cairn-a/pods/web-1?gracePeriodSeconds=0");
    api.patch("/api/v1/nodes/n2", json!({"metadata": {"labels": {"zone": "z2b"}}}));
    api.patch(
        "/api/v1/namespaces/cairn-a",
        json!({"metadata": {"labels": {"team": "alpha2"}}}),
    );
    api.patch(
        "/api/v1/namespaces/cairn-a/services/lb",
        json!({"metadata": {"labels": {"monitored": "yes"}}}),
    );
    api.delete("/apis/networking.k8s.io/v1/namespaces/cairn-a/ingresses/web");
    api.create(
        "/apis/discovery.k8s.io/v1/namespaces/cairn-b/endpointslices",
        json!({"metadata": {"name": "web-b", "labels": {"kubernetes.io/service-name": "web"}}, "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.2.0.1"], "conditions": {"ready": true}, "nodeName": "n2", "targetRef": {"kind": "Pod", "namespace": "cairn-b", "name": "web-3"}}],
            "ports": [{"name": "http", "port": 8080}]}),
    );
    let changed = Instant::now();
    let second = converge(&cairn, &prom, "the changes", |t| {
        has(t, "pods", "__meta_kubernetes_pod_ip", "10.2.0.4")
            && !has(t, "pods", "__meta_kubernetes_pod_name", "web-1")
            && has(t, "nodes", "__meta_kubernetes_node_label_zone", "z2b")
            && has(t, "services", "__meta_kubernetes_namespace_label_team", "alpha2")
            && has(t, "endpoints", "__meta_kubernetes_endpoints_name", "lb")
            && count(t, "ingresses") == 0
            && has(t, "endpointslices", "__meta_kubernetes_endpointslice_name", "web-b")
    });
    assert!(
        changed.elapsed() < Duration::from_secs(20),
        "changes followed in {:?}",
        changed.elapsed()
    );
    assert!(has(&second, "pods", "__meta_kubernetes_pod_ready", "false"));

    // The API server down: the targets stay, and Cairn counts failed requests.
    let failures = "prometheus_sd_kubernetes_failures_total";
    let cairn_failed = counter(&cairn, failures);
    api.stop();
    let deadline = Instant::now() + Duration::from_secs(20);
    while counter(&cairn, failures) < cairn_failed + 3.0 {
        assert!(Instant::now() < deadline, "failed requests not counted");
        std::thread::sleep(Duration::from_millis(250));
    }
    counter(&prom, failures);
    // Past Prometheus' five-second batching of discovery updates.
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(targets(&cairn), second, "Cairn kept its targets");
    assert_eq!(targets(&prom), second, "Prometheus kept its targets");

    // Back: a change made while watches resume reaches both.
    api.restart();
    api.create(
        "/api/v1/namespaces/cairn-b/pods",
        pod(
            "db-2",
            "db",
            "n1",
            json!([{"name": "db", "image": "db:1", "ports": [{"containerPort": 5432}]}]),
            json!([]),
        ),
    );
    api.patch(
        "/api/v1/namespaces/cairn-b/pods/db-2/status",
        running("10.2.0.9", "True"),
    );
    converge(&cairn, &prom, "a change after the restart", |t| {
        has(t, "pods", "__meta_kubernetes_pod_name", "db-2")
            && has(t, "kubeconfig", "__meta_kubernetes_pod_name", "db-2")
    });

    // A bad kubernetes_sd_configs is refused on reload by both; the targets stay.
    let bad = config(&api, &kubeconfig_arg, true, in_cluster);
    std::fs::write(&config_path, &bad).expect("write config");
    std::fs::write(prometheus.config_path(), &bad).expect("write config");
    let before_reload = targets(&cairn);
    for (who, c) in [("cairn", &cairn), ("prometheus", &prom)] {
        let r = c.post_form("/-/reload", &[]);
        assert_eq!(r.status, 500, "{who}: {}", r.body);
        assert!(
            r.body
                .contains("cannot use 'kubeconfig_file' and 'api_server' simultaneously"),
            "{who}: {}",
            r.body
        );
    }
    assert_eq!(targets(&cairn), before_reload);
    println!("kubernetes_sd_matches_prometheus: {:?}", started.elapsed());
}
