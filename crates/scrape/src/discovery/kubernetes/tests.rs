//! Label building per role, from JSON objects as the API server sends them.

use serde::de::DeserializeOwned;

use super::objects::*;
use super::store::{Attach, Stores};
use super::{endpoints, endpointslice, ingress, node, pod, service};
use crate::discovery::{LabelSet, TargetGroup};

fn parse<T: DeserializeOwned>(json: &str) -> T {
    serde_json::from_str(json).unwrap()
}

fn labels(pairs: &[(&str, &str)]) -> LabelSet {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The group's targets with the group's labels merged in, sorted by address.
fn merged(g: &TargetGroup) -> Vec<LabelSet> {
    let mut out: Vec<LabelSet> = g
        .targets
        .iter()
        .map(|t| {
            let mut l = g.labels.clone();
            l.extend(t.clone());
            l
        })
        .collect();
    out.sort_by(|a, b| a["__address__"].cmp(&b["__address__"]));
    out
}

const POD: &str = r#"{
  "metadata": {"name": "web-1", "namespace": "prod", "uid": "u-1",
    "labels": {"app.kubernetes.io/name": "web"}, "annotations": {"prometheus.io/scrape": "true"},
    "ownerReferences": [{"kind": "ReplicaSet", "name": "web-abc", "controller": true}]},
  "spec": {"nodeName": "n1",
    "containers": [
      {"name": "app", "image": "app:1", "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}, {"containerPort": 9090, "protocol": "UDP"}]},
      {"name": "sidecar", "image": "side:2"}],
    "initContainers": [{"name": "init", "image": "init:3", "ports": [{"name": "i", "containerPort": 7000, "protocol": "TCP"}]}]},
  "status": {"phase": "Running", "podIP": "10.1.0.5", "hostIP": "192.168.0.1",
    "conditions": [{"type": "Ready", "status": "True"}],
    "containerStatuses": [{"name": "app", "containerID": "containerd://a"}],
    "initContainerStatuses": [{"name": "init", "containerID": "containerd://i"}]}
}"#;

const NODE: &str = r#"{
  "metadata": {"name": "n1", "labels": {"zone": "z1"}, "annotations": {"a/b": "c"}},
  "spec": {"providerID": "aws:///i-1"},
  "status": {"addresses": [{"type": "Hostname", "address": "n1.local"}, {"type": "InternalIP", "address": "192.168.0.1"}, {"type": "InternalIP", "address": "192.168.0.9"}],
    "conditions": [{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}],
    "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}
}"#;

#[test]
fn pod_targets_per_container_port_with_init_containers() {
    let p: Pod = parse(POD);
    let g = pod::build(&p, &Stores::default(), Attach::default());
    assert_eq!(g.source, "pod/prod/web-1");
    let common = [
        ("__meta_kubernetes_namespace", "prod"),
        ("__meta_kubernetes_pod_name", "web-1"),
        ("__meta_kubernetes_pod_uid", "u-1"),
        ("__meta_kubernetes_pod_ip", "10.1.0.5"),
        ("__meta_kubernetes_pod_host_ip", "192.168.0.1"),
        ("__meta_kubernetes_pod_node_name", "n1"),
        ("__meta_kubernetes_pod_phase", "Running"),
        ("__meta_kubernetes_pod_ready", "true"),
        ("__meta_kubernetes_pod_controller_kind", "ReplicaSet"),
        ("__meta_kubernetes_pod_controller_name", "web-abc"),
        ("__meta_kubernetes_pod_label_app_kubernetes_io_name", "web"),
        ("__meta_kubernetes_pod_labelpresent_app_kubernetes_io_name", "true"),
        ("__meta_kubernetes_pod_annotation_prometheus_io_scrape", "true"),
        ("__meta_kubernetes_pod_annotationpresent_prometheus_io_scrape", "true"),
    ];
    let with = |extra: &[(&str, &str)]| {
        let mut l = labels(&common);
        l.extend(labels(extra));
        l
    };
    let want = vec![
        with(&[
            ("__address__", "10.1.0.5"),
            ("__meta_kubernetes_pod_container_name", "sidecar"),
            ("__meta_kubernetes_pod_container_id", ""),
            ("__meta_kubernetes_pod_container_image", "side:2"),
            ("__meta_kubernetes_pod_container_init", "false"),
        ]),
        with(&[
            ("__address__", "10.1.0.5:7000"),
            ("__meta_kubernetes_pod_container_name", "init"),
            ("__meta_kubernetes_pod_container_id", "containerd://i"),
            ("__meta_kubernetes_pod_container_image", "init:3"),
            ("__meta_kubernetes_pod_container_init", "true"),
            ("__meta_kubernetes_pod_container_port_name", "i"),
            ("__meta_kubernetes_pod_container_port_number", "7000"),
            ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
        ]),
        with(&[
            ("__address__", "10.1.0.5:8080"),
            ("__meta_kubernetes_pod_container_name", "app"),
            ("__meta_kubernetes_pod_container_id", "containerd://a"),
            ("__meta_kubernetes_pod_container_image", "app:1"),
            ("__meta_kubernetes_pod_container_init", "false"),
            ("__meta_kubernetes_pod_container_port_name", "http"),
            ("__meta_kubernetes_pod_container_port_number", "8080"),
            ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
        ]),
        with(&[
            ("__address__", "10.1.0.5:9090"),
            ("__meta_kubernetes_pod_container_name", "app"),
            ("__meta_kubernetes_pod_container_id", "containerd://a"),
            ("__meta_kubernetes_pod_container_image", "app:1"),
            ("__meta_kubernetes_pod_container_init", "false"),
            ("__meta_kubernetes_pod_container_port_name", ""),
            ("__meta_kubernetes_pod_container_port_number", "9090"),
            ("__meta_kubernetes_pod_container_port_protocol", "UDP"),
        ]),
    ];
    assert_eq!(merged(&g), want);
}

#[test]
fn pod_without_ip_or_unknown_node_gives_an_empty_group() {
    let mut p: Pod = parse(POD);
    let mut stores = Stores::default();
    let attach = Attach {
        node: true,
        namespace: true,
    };
    // Its node filtered out by a node selector.
    assert!(pod::build(&p, &stores, attach).targets.is_empty());
    stores.nodes.insert("n1".into(), parse(NODE));
    stores.namespaces.insert(
        "prod".into(),
        parse(r#"{"metadata": {"name": "prod", "labels": {"team": "a"}, "annotations": null}}"#),
    );
    let g = pod::build(&p, &stores, attach);
    assert_eq!(g.targets.len(), 4);
    assert_eq!(g.labels["__meta_kubernetes_node_name"], "n1");
    assert_eq!(g.labels["__meta_kubernetes_node_label_zone"], "z1");
    assert_eq!(g.labels["__meta_kubernetes_node_annotation_a_b"], "c");
    assert_eq!(g.labels["__meta_kubernetes_namespace_label_team"], "a");
    assert_eq!(g.labels["__meta_kubernetes_namespace_labelpresent_team"], "true");
    assert!(!g.labels.contains_key("__meta_kubernetes_namespace_name"));
    p.status.pod_ip.clear();
    p.status.conditions.clear();
    let g = pod::build(&p, &stores, attach);
    assert_eq!(
        (g.source.as_str(), g.targets.len(), g.labels.len()),
        ("pod/prod/web-1", 0, 0)
    );
}

#[test]
fn node_target_at_the_kubelet_port_of_its_preferred_address() {
    let n: Node = parse(NODE);
    let g = node::build(&n).unwrap();
    assert_eq!(g.source, "node/n1");
    assert_eq!(
        merged(&g),
        vec![labels(&[
            ("__address__", "192.168.0.1:10250"),
            ("instance", "n1"),
            ("__meta_kubernetes_node_name", "n1"),
            ("__meta_kubernetes_node_provider_id", "aws:///i-1"),
            ("__meta_kubernetes_node_label_zone", "z1"),
            ("__meta_kubernetes_node_labelpresent_zone", "true"),
            ("__meta_kubernetes_node_annotation_a_b", "c"),
            ("__meta_kubernetes_node_annotationpresent_a_b", "true"),
            ("__meta_kubernetes_node_condition_ready", "true"),
            ("__meta_kubernetes_node_condition_diskpressure", "false"),
            ("__meta_kubernetes_node_address_InternalIP", "192.168.0.1"),
            ("__meta_kubernetes_node_address_Hostname", "n1.local"),
        ])]
    );
    let bare: Node =
        parse(r#"{"metadata": {"name": "n2"}, "status": {"addresses": [{"type": "Hostname", "address": "fe80::1"}]}}"#);
    assert_eq!(merged(&node::build(&bare).unwrap())[0]["__address__"], "[fe80::1]:0");
    assert!(node::build(&parse(r#"{"metadata": {"name": "n3"}}"#)).is_none());
}

#[test]
fn service_targets_per_port_by_type() {
    let svc: Service = parse(
        r#"{"metadata": {"name": "api", "namespace": "prod", "labels": {"k8s-app": "api"}},
            "spec": {"type": "LoadBalancer", "clusterIP": "10.96.0.10", "loadBalancerIP": "1.2.3.4",
              "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}}"#,
    );
    let g = service::build(&svc, &Stores::default(), Attach::default());
    assert_eq!(g.source, "svc/prod/api");
    assert_eq!(
        merged(&g),
        vec![labels(&[
            ("__address__", "api.prod.svc:443"),
            ("__meta_kubernetes_namespace", "prod"),
            ("__meta_kubernetes_service_name", "api"),
            ("__meta_kubernetes_service_label_k8s_app", "api"),
            ("__meta_kubernetes_service_labelpresent_k8s_app", "true"),
            ("__meta_kubernetes_service_port_name", "https"),
            ("__meta_kubernetes_service_port_number", "443"),
            ("__meta_kubernetes_service_port_protocol", "TCP"),
            ("__meta_kubernetes_service_type", "LoadBalancer"),
            ("__meta_kubernetes_service_cluster_ip", "10.96.0.10"),
            ("__meta_kubernetes_service_loadbalancer_ip", "1.2.3.4"),
        ])]
    );
    let ext: Service = parse(
        r#"{"metadata": {"name": "x", "namespace": "n"}, "spec": {"type": "ExternalName", "externalName": "db.example.com", "ports": [{"port": 5432}]}}"#,
    );
    let t = &merged(&service::build(&ext, &Stores::default(), Attach::default()))[0];
    assert_eq!(t["__meta_kubernetes_service_external_name"], "db.example.com");
    assert!(!t.contains_key("__meta_kubernetes_service_cluster_ip"));
    assert_eq!(t["__meta_kubernetes_service_port_protocol"], "");
}

#[test]
fn ingress_targets_per_rule_and_path_with_tls_scheme() {
    let ing: Ingress = parse(
        r#"{"metadata": {"name": "web", "namespace": "prod"},
            "spec": {"ingressClassName": "nginx",
              "tls": [{"hosts": ["*.example.com"]}],
              "rules": [
                {"host": "a.example.com", "http": {"paths": [{"path": "/x"}, {"path": ""}]}},
                {"host": "plain.org"},
                {"host": "b.plain.org", "http": {"paths": null}}]}}"#,
    );
    let g = ingress::build(&ing, &Stores::default(), Attach::default());
    assert_eq!(g.source, "ingress/prod/web");
    assert_eq!(g.labels["__meta_kubernetes_ingress_class_name"], "nginx");
    assert_eq!(g.labels["__meta_kubernetes_ingress_name"], "web");
    let got: Vec<(String, String, String)> = g
        .targets
        .iter()
        .map(|t| {
            (
                t["__address__"].clone(),
                t["__meta_kubernetes_ingress_scheme"].clone(),
                t["__meta_kubernetes_ingress_path"].clone(),
            )
        })
        .collect();
    let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    assert_eq!(
        got,
        vec![
            s("a.example.com", "https", "/x"),
            s("a.example.com", "https", "/"),
            s("plain.org", "http", "/"),
        ]
    );
}

fn pod_store() -> Stores {
    let mut stores = Stores::default();
    stores.pods.insert("prod/web-1".into(), parse(POD));
    stores.nodes.insert("n1".into(), parse(NODE));
    stores.services.insert(
        "prod/web".into(),
        parse(r#"{"metadata": {"name": "web", "namespace": "prod", "labels": {"svc": "yes"}}, "spec": {"ports": [{"port": 80}]}}"#),
    );
    stores
}

#[test]
fn endpoints_targets_carry_service_pod_and_container_labels() {
    let eps: Endpoints = parse(
        r#"{"metadata": {"name": "web", "namespace": "prod", "labels": {"e": "1"}},
            "subsets": [{
              "addresses": [{"ip": "10.1.0.5", "nodeName": "n1", "targetRef": {"kind": "Pod", "namespace": "prod", "name": "web-1"}}],
              "notReadyAddresses": [{"ip": "10.1.0.6", "hostname": "h6"}],
              "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]}"#,
    );
    let stores = pod_store();
    let attach = Attach {
        node: true,
        namespace: false,
    };
    let g = endpoints::build(&eps, &stores, attach);
    assert_eq!(g.source, "endpoints/prod/web");
    assert_eq!(g.labels["__meta_kubernetes_endpoints_name"], "web");
    assert_eq!(g.labels["__meta_kubernetes_endpoints_label_e"], "1");
    assert_eq!(g.labels["__meta_kubernetes_service_name"], "web");
    assert_eq!(g.labels["__meta_kubernetes_service_label_svc"], "yes");
    let t = merged(&g);
    let addresses: Vec<&str> = t.iter().map(|l| l["__address__"].as_str()).collect();
    // The pod's other declared ports become targets of their own.
    assert_eq!(
        addresses,
        ["10.1.0.5:7000", "10.1.0.5:8080", "10.1.0.5:9090", "10.1.0.6:8080"]
    );
    let ready = &t[1];
    assert_eq!(ready["__meta_kubernetes_endpoint_ready"], "true");
    assert_eq!(ready["__meta_kubernetes_endpoint_port_name"], "http");
    assert_eq!(ready["__meta_kubernetes_endpoint_address_target_kind"], "Pod");
    assert_eq!(ready["__meta_kubernetes_endpoint_address_target_name"], "web-1");
    assert_eq!(ready["__meta_kubernetes_endpoint_node_name"], "n1");
    assert_eq!(ready["__meta_kubernetes_node_label_zone"], "z1");
    assert_eq!(ready["__meta_kubernetes_pod_name"], "web-1");
    assert_eq!(ready["__meta_kubernetes_pod_container_name"], "app");
    assert_eq!(ready["__meta_kubernetes_pod_container_port_name"], "http");
    assert!(!ready.contains_key("__meta_kubernetes_pod_container_id"));
    let init = &t[0];
    assert_eq!(init["__meta_kubernetes_pod_container_init"], "true");
    assert!(!init.contains_key("__meta_kubernetes_endpoint_ready"));
    let not_ready = &t[3];
    assert_eq!(not_ready["__meta_kubernetes_endpoint_ready"], "false");
    assert_eq!(not_ready["__meta_kubernetes_endpoint_hostname"], "h6");
    assert!(!not_ready.contains_key("__meta_kubernetes_pod_name"));
    assert!(!not_ready.contains_key("__meta_kubernetes_endpoint_address_target_kind"));
}

#[test]
fn endpointslice_targets_carry_conditions_and_optional_fields() {
    let slice: EndpointSlice = parse(
        r#"{"metadata": {"name": "web-xyz", "namespace": "prod", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [
              {"addresses": ["10.1.0.5"], "conditions": {"ready": true, "serving": true, "terminating": false},
               "nodeName": "n1", "zone": "z1", "targetRef": {"kind": "Pod", "namespace": "prod", "name": "web-1"}},
              {"addresses": ["10.1.0.7"], "conditions": {}, "hostname": "h7", "deprecatedTopology": {"topology.kubernetes.io/zone": "z2"}}],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP", "appProtocol": "http"}]}"#,
    );
    let stores = pod_store();
    let g = endpointslice::build(&slice, &stores, Attach::default());
    assert_eq!(g.source, "endpointslice/prod/web-xyz");
    assert_eq!(g.labels["__meta_kubernetes_endpointslice_address_type"], "IPv4");
    assert_eq!(g.labels["__meta_kubernetes_endpointslice_name"], "web-xyz");
    assert_eq!(g.labels["__meta_kubernetes_service_label_svc"], "yes");
    let t = merged(&g);
    let addresses: Vec<&str> = t.iter().map(|l| l["__address__"].as_str()).collect();
    assert_eq!(
        addresses,
        ["10.1.0.5:7000", "10.1.0.5:8080", "10.1.0.5:9090", "10.1.0.7:8080"]
    );
    let p = "__meta_kubernetes_endpointslice_";
    let first = &t[1];
    for (k, v) in [
        ("port", "8080"),
        ("port_name", "http"),
        ("port_protocol", "TCP"),
        ("port_app_protocol", "http"),
        ("endpoint_conditions_ready", "true"),
        ("endpoint_conditions_serving", "true"),
        ("endpoint_conditions_terminating", "false"),
        ("endpoint_node_name", "n1"),
        ("endpoint_zone", "z1"),
        ("address_target_kind", "Pod"),
        ("address_target_name", "web-1"),
    ] {
        assert_eq!(first[&format!("{p}{k}")], v, "{k}");
    }
    assert_eq!(first["__meta_kubernetes_pod_container_port_protocol"], "TCP");
    let second = &t[3];
    assert!(!second.contains_key(&format!("{p}endpoint_conditions_ready")));
    assert_eq!(second[&format!("{p}endpoint_hostname")], "h7");
    assert_eq!(
        second[&format!("{p}endpoint_topology_topology_kubernetes_io_zone")],
        "z2"
    );
    assert_eq!(
        second[&format!("{p}endpoint_topology_present_topology_kubernetes_io_zone")],
        "true"
    );

    // A dual-stack service's slice of its second family: labels, no targets.
    let mut stores = pod_store();
    stores.services.insert(
        "prod/web".into(),
        parse(r#"{"metadata": {"name": "web", "namespace": "prod"}, "spec": {"ipFamilyPolicy": "PreferDualStack", "ipFamilies": ["IPv6", "IPv4"]}}"#),
    );
    let g = endpointslice::build(&slice, &stores, Attach::default());
    assert!(g.targets.is_empty());
    assert_eq!(g.labels["__meta_kubernetes_service_name"], "web");
    // A port without a number: the bare address.
    let bare: EndpointSlice = parse(
        r#"{"metadata": {"name": "s", "namespace": "n"}, "addressType": "FQDN", "endpoints": [{"addresses": ["a.example"]}], "ports": [{}]}"#,
    );
    assert_eq!(
        merged(&endpointslice::build(&bare, &Stores::default(), Attach::default()))[0]["__address__"],
        "a.example"
    );
}
